"""3-UPU translational parallel manipulator (layout after Tsai, "Kinematics of a three-DOF platform with three extensible limbs", in Lenarčič & Parenti-Castelli (eds.), Recent Advances in Robot Kinematics, Kluwer 1996, pp. 401-410).

Tsai's manipulator: three limbs, each a universal joint on the base, a
prismatic actuator and a universal joint on the platform, arranged so the
platform can only translate: in each limb the base joint's first axis and
the platform joint's second axis are parallel (tangent to the base and
platform circles), and the two intermediate axes are parallel to each other
and perpendicular to the limb.  Here each limb's base universal joint turns
about the tangent t, then about the radial direction n; the platform
universal joint about n (on the piston), then about t (on the platform).
The platform is on a free joint; its rotations are dependent coordinates
that stay 0 by the limbs' geometry.  The actuator strokes s1..s3 are the
independent coordinates (Tsai's forward problem).

Dimensions chosen for this corpus: base joints at 0.65 m, platform joints
at 0.39 m from the centres, along (1, 0, 0) and (−33/65, ±56/65, 0)
(exact rational unit vectors, so every joint axis is exact); cylinders
0.4 m from the base joint to the piston's end at zero stroke.  Start: the
platform centred 0.6 m above the base.

Drive: gravity along −z, constant actuator forces of 60 N (inputs F1..F3)
and dampers of 40 N·s/m on the actuators.  Cylinders 2 kg, pistons 1 kg,
slim rods; the platform 15 kg, a disc of 0.39 m radius.

# known: passes IDA and Cartesian, but not on the triangular path: the
# partition makes one block of all twelve dependent coordinates (the
# platform's pose and the six base-joint angles), 21 polynomial variables,
# over the lex-basis limit of 10: Newton iteration (and no start assembly
# check, 21 > 12 variables).  The MuJoCo peer runs it and agrees over 1 s
# (docs/corpus.md, the corpus run's table); over 2 s it is 2.8e-4 off near
# the first singularity of the full constraints (t = 1.7053 s).
"""
import math

from fmigen.joints import JointSystem, Z

from corpus._spatial import rod_inertia, tripod_directions

RB, RP, L0, Z0 = 0.65, 0.39, 0.4, 0.6


def build():
    s = JointSystem("three_upu", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -z")
    radial, tangent = tripod_directions()
    mp = 15.0
    platform = s.body("platform", mp, (mp * RP**2 / 4, mp * RP**2 / 4, mp * RP**2 / 2))
    s.free("pose", s.ground.origin, platform.origin, coordinates=["x", "y", "z", "rx", "ry", "rz"],
           start=[0, 0, Z0, 0, 0, 0])
    # Rot(t, q1) z = cos q1 z + sin q1 n: the limb from RB n to RP n + Z0 z
    lean = -math.atan2(RB - RP, Z0)
    stroke = math.hypot(RB - RP, Z0) - L0
    strokes = []
    for k, (n, t) in enumerate(zip(radial, tangent), start=1):
        cyl = s.body(f"cylinder{k}", 2.0, rod_inertia(2.0, L0), com=(0, 0, L0 / 2))
        piston = s.body(f"piston{k}", 1.0, rod_inertia(1.0, 0.4), com=(0, 0, -0.2))
        s.universal(f"U{k}", s.ground.marker(f"B{k}", tuple(RB * c for c in n)), cyl.origin, axis=t, axis2=n,
                    coordinates=[f"u{k}a", f"u{k}b"], start=[lean, 0.0])
        leg = s.prismatic(f"leg{k}", cyl.marker("end", (0, 0, L0)), piston.origin, axis=Z,
                          coordinates=[f"s{k}"], start=stroke)
        # the platform joint: about n on the piston (parallel to the base
        # joint's second axis), then about t on the platform (parallel to
        # its first): closed at the start by Rot(n, 0) Rot(t, −lean)
        s.universal(f"T{k}", piston.origin, platform.marker(f"P{k}", tuple(RP * c for c in n)), axis=n, axis2=t)
        F = s.input(f"F{k}", 60.0, "N", description=f"actuator force extending leg {k}")
        s.joint_force(f"leg{k}", F - 40.0 * leg.diff())
        strokes.append(f"s{k}")
    s.cut = [f"T{k}" for k in (1, 2, 3)]
    s.gravity = (0, 0, -g)
    s.independent = strokes
    s.dof = 3
    return s
