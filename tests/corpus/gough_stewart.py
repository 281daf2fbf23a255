"""Gough–Stewart platform, 6-UPS, written from scratch (layout after Dasgupta & Mruthyunjaya, "A Newton-Euler formulation for the inverse dynamics of the Stewart platform manipulator", Mech. Mach. Theory 33(8), 1998, pp. 1135-1152, and Merlet, "Parallel Robots", 2nd ed., Springer 2006, the 6-6 Gough platform).

The layout is those references' general 6-6 Gough platform: base joints in
three pairs on a circle, platform joints in three pairs on a smaller circle
turned by 60° against the base's, so each leg runs from a base pair to the
two neighbouring platform pairs; per leg a universal joint at the base, a
prismatic actuator along the leg and a spherical joint at the platform.

Dimensions chosen for this corpus: base circle 1.0 m, pairs ±12° about
0°, 120°, 240°; platform circle 0.6 m, pairs ±20° about 60°, 180°, 300°
(coordinates rounded to mm); each leg's cylinder 0.7 m from the universal
joint to the piston's end at zero stroke.  The platform (40 kg, a disc of
0.6 m radius) is on a free joint from the ground (x, y, z and 3-2-1 angles
rx, ry, rz) whose six coordinates are the independent ones; the start is
the home pose z = 0.9 m, level and centred, the legs solved from it.

Drive: gravity along −z, a constant force of 70 N extending each leg
(inputs F1..F6; the platform's weight needs about 72 N per leg at home, so
it sinks slowly) and a viscous damper of 50 N·s/m on each actuator.  Leg
bodies: cylinders of 3 kg and pistons of 1.5 kg (slim rods).
"""
import math

from fmigen.joints import JointSystem, X, Y, Z

from corpus._spatial import rod_inertia, universal_xy

RB, RP, L0, Z0 = 1.0, 0.6, 0.7, 0.9


def _ring(r, centres, half):
    pts = []
    for c in centres:
        for a in (c - half, c + half):
            t = math.radians(a)
            pts.append((round(r * math.cos(t), 3), round(r * math.sin(t), 3), 0.0))
    return pts


BASE = _ring(RB, (0, 120, 240), 12)
# platform pairs at 60°, 180°, 300°, ordered so leg k joins base joint k to
# the platform joint nearest it
_plat = _ring(RP, (300, 60, 180), 20)
PLATFORM = [_plat[(k + 1) % 6] for k in range(6)]


def build():
    s = JointSystem("gough_stewart", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -z")
    mp = 40.0
    platform = s.body("platform", mp, (mp * RP**2 / 4, mp * RP**2 / 4, mp * RP**2 / 2))
    names = ["x", "y", "z", "rx", "ry", "rz"]
    s.free("pose", s.ground.origin, platform.origin, coordinates=names, start=[0, 0, Z0, 0, 0, 0])
    for k, (b, p) in enumerate(zip(BASE, PLATFORM), start=1):
        d = (p[0] - b[0], p[1] - b[1], Z0 + p[2] - b[2])
        length = math.sqrt(sum(c * c for c in d))
        q1, q2 = universal_xy(d)
        cyl = s.body(f"cylinder{k}", 3.0, rod_inertia(3.0, L0), com=(0, 0, L0 / 2))
        piston = s.body(f"piston{k}", 1.5, rod_inertia(1.5, 0.6), com=(0, 0, -0.3))
        s.universal(f"U{k}", s.ground.marker(f"B{k}", b), cyl.origin, axis=X, axis2=Y,
                    coordinates=[f"a{k}", f"b{k}"], start=[q1, q2])
        leg = s.prismatic(f"leg{k}", cyl.marker("end", (0, 0, L0)), piston.origin, axis=Z,
                          coordinates=[f"s{k}"], start=length - L0)
        s.spherical(f"S{k}", platform.marker(f"P{k}", p), piston.origin)
        F = s.input(f"F{k}", 70.0, "N", description=f"actuator force extending leg {k}")
        s.joint_force(f"leg{k}", F - 50.0 * leg.diff())
    s.gravity = (0, 0, -g)
    s.independent = names
    s.dof = 6
    return s
