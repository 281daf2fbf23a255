"""3-RPS parallel manipulator (layout after Lee & Shah, "Kinematic analysis of a three-degrees-of-freedom in-parallel actuated manipulator", IEEE J. Robotics and Automation 4(3), 1988, pp. 354-360).

Lee & Shah's manipulator: a base and a moving platform joined by three
legs; each leg turns about a revolute joint on the base whose axis is
tangent to the base circle, is extended by a prismatic actuator, and meets
the platform at a spherical joint.  The platform has three degrees of
freedom (heave and two tilts; its x, y and turn about z follow).  Here the
actuator strokes s1..s3 are the independent coordinates (the forward
problem Lee & Shah solve).

Dimensions chosen for this corpus: base joints at 0.65 m, platform joints
at 0.39 m from the centres, along the exact unit directions (1, 0, 0) and
(−33/65, ±56/65, 0) (0° and ±120.5°; exact rationals, so the joint axes are
exact unit vectors); each leg's cylinder 0.4 m from the revolute axis to
the piston's end at zero stroke.  Start: the platform level and centred
0.6 m above the base (strokes 0.254 m, legs leaning inward by
atan(0.26/0.6)).

Drive: gravity along −z, constant actuator forces of 60 N (inputs F1..F3;
the 15 kg platform needs about 53 N per leg when level) and viscous
dampers of 40 N·s/m on the actuators.  Cylinders 2 kg, pistons 1 kg, slim
rods; the platform a disc of 0.39 m radius.

# known: passes, but not on the triangular path: the partition makes one
# block of all nine dependent coordinates (x, y, z, rx, ry, rz, r1, r2,
# r3: every leg's three closure rows hold the platform's whole pose), 15
# polynomial variables, over the lex-basis limit of 10, so the build
# solves it by Newton iteration; the start assembly check is skipped too
# (15 > 12 variables).  Choosing the platform's z, rx, ry as independent
# instead leaves x, y, rz coupled to all six leg coordinates, the same
# nine-row block.
"""
import math

from fmigen.joints import JointSystem, Z

from corpus._spatial import rod_inertia, tripod_directions

RB, RP, L0, Z0 = 0.65, 0.39, 0.4, 0.6


def build():
    s = JointSystem("three_rps", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -z")
    radial, tangent = tripod_directions()
    mp = 15.0
    platform = s.body("platform", mp, (mp * RP**2 / 4, mp * RP**2 / 4, mp * RP**2 / 2))
    s.free("pose", s.ground.origin, platform.origin, coordinates=["x", "y", "z", "rx", "ry", "rz"],
           start=[0, 0, Z0, 0, 0, 0])
    # the leg in the plane of n and z: Rot(t, r) z = cos r z + sin r n, and it
    # runs from the base joint (RB n) to the platform joint (RP n + Z0 z)
    lean = -math.atan2(RB - RP, Z0)
    stroke = math.hypot(RB - RP, Z0) - L0
    strokes = []
    for k, (n, t) in enumerate(zip(radial, tangent), start=1):
        cyl = s.body(f"cylinder{k}", 2.0, rod_inertia(2.0, L0), com=(0, 0, L0 / 2))
        piston = s.body(f"piston{k}", 1.0, rod_inertia(1.0, 0.4), com=(0, 0, -0.2))
        s.revolute(f"R{k}", s.ground.marker(f"B{k}", tuple(RB * c for c in n)), cyl.origin, axis=t,
                   coordinates=[f"r{k}"], start=lean)
        leg = s.prismatic(f"leg{k}", cyl.marker("end", (0, 0, L0)), piston.origin, axis=Z,
                          coordinates=[f"s{k}"], start=stroke)
        s.spherical(f"S{k}", platform.marker(f"P{k}", tuple(RP * c for c in n)), piston.origin)
        F = s.input(f"F{k}", 60.0, "N", description=f"actuator force extending leg {k}")
        s.joint_force(f"leg{k}", F - 40.0 * leg.diff())
        strokes.append(f"s{k}")
    s.gravity = (0, 0, -g)
    s.independent = strokes
    s.dof = 3
    return s
