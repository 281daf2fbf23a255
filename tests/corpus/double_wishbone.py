"""A spatial double-wishbone (short-long-arm) quarter car in the joint API.

The layout is the textbook one (Milliken & Milliken, "Race Car Vehicle
Dynamics", SAE 1995, ch. 17, "Suspension geometry"; Reimpell, Stoll &
Betzler, "The Automotive Chassis", 2nd ed. 2001, §1.3): a chassis on a
vertical slide (``zc``); an upper and a lower A-arm, each on a revolute
joint to the chassis about a fore-aft axis, with a ball joint to the
upright; a tie rod with a universal joint at the chassis and a ball joint
at the upright, which fixes the upright's steer; a wheel on the upright; a
coil-over from the chassis to the lower arm; a tyre-force input at the
wheel centre.

The hard points are illustrative (round numbers of a mid-size car's front
axle in the books' proportions: a short upper arm, a long lower arm, the
tie rod behind the axle), not a measured car.  Left corner; X forward, Y
outboard, Z up, metres, origin at the wheel centre in the design pose:

    =================  ======================  ==========================
    point              chassis side            upright side
    =================  ======================  ==========================
    upper arm          axis −X through          ball (-0.010, -0.090,  0.190)
                       (0, -0.370, 0.220)
    lower arm          axis −X through          ball ( 0.010, -0.040, -0.150)
                       (0, -0.420, -0.120)
    tie rod            U (-0.140, -0.378, -0.024)  ball (-0.140, -0.070, -0.050)
    coil-over          top (0, -0.300, 0.250)   lower arm at (0, -0.250, -0.130)
    =================  ======================  ==========================

Every marker is written at its design-pose position, so the description is
closed exactly when every joint coordinate is 0: the design pose is the
start (``DESIGN_POSE``).  The coil-over's preload is a round number, not
the static balance: the mechanism serves the start-assembly tests, which
compare poses at t = 0.

The arms' pivot axes and the tie rod's first U-joint axis are written
along −X (``fore_aft``, pointing rearward); ``build(fore_aft=X)`` writes
them forward (the same car, each of those angles' sign reversed).

``build(mirror_tie_rod=True)`` describes the same car with the tie rod's
universal joint started at (π, 0): that pose puts the rod on the mirror
side of its first axis (the rod pointing inboard), not closed at the upright
ball; a correct build refuses it.
"""
import math

from fmigen.joints import JointSystem, Y, Z

UPPER_PIVOT = (0.0, -0.370, 0.220)
UPPER_BALL = (-0.010, -0.090, 0.190)
LOWER_PIVOT = (0.0, -0.420, -0.120)
LOWER_BALL = (0.010, -0.040, -0.150)
TIE_INNER = (-0.140, -0.378, -0.024)
TIE_OUTER = (-0.140, -0.070, -0.050)
SPRING_TOP = (0.0, -0.300, 0.250)
SPRING_BOTTOM = (0.0, -0.250, -0.130)

#: the described start: every joint coordinate 0 (the design pose)
DESIGN_POSE = {"zc": 0.0, "lower": 0.0, "upper": 0.0, "ball_l_z": 0.0, "ball_l_y": 0.0, "ball_l_x": 0.0,
               "tie_u_a": 0.0, "tie_u_b": 0.0, "spin": 0.0}


def _minus(a, b):
    return tuple(x - y for x, y in zip(a, b))


def _rod_inertia(m, length):
    """A slim rod about its centre (axes in the body frame: any transverse
    direction gets m L²/12; a small polar moment)."""
    i = m * length ** 2 / 12
    return (i, i, i)


REARWARD = (-1, 0, 0)


def build(mirror_tie_rod: bool = False, fore_aft=REARWARD) -> JointSystem:
    s = JointSystem("double_wishbone", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -z")
    s.gravity = (0, 0, -g)

    chassis = s.body("chassis", 400.0, (80.0, 80.0, 80.0))
    s.prismatic("zc", s.ground.origin, chassis.origin, axis=Z, start=0.0)

    # arms: body frames at their inner pivots, parallel to the chassis'
    upper_arm_vec = _minus(UPPER_BALL, UPPER_PIVOT)
    upper = s.body("upper_arm", 1.5, _rod_inertia(1.5, 0.28), com=tuple(0.5 * v for v in upper_arm_vec))
    s.revolute("upper", chassis.marker("upper_pivot", UPPER_PIVOT), upper.origin, axis=fore_aft, start=0.0)
    lower_arm_vec = _minus(LOWER_BALL, LOWER_PIVOT)
    lower = s.body("lower_arm", 3.0, _rod_inertia(3.0, 0.38), com=tuple(0.5 * v for v in lower_arm_vec))
    s.revolute("lower", chassis.marker("lower_pivot", LOWER_PIVOT), lower.origin, axis=fore_aft, start=0.0)

    # the upright (body frame at the wheel centre) on the lower ball joint
    upright = s.body("upright", 8.0, (0.05, 0.04, 0.05))
    s.spherical("ball_l", lower.marker("ball", lower_arm_vec), upright.marker("lower_ball", LOWER_BALL),
                coordinates=["ball_l_z", "ball_l_y", "ball_l_x"], start=(0.0, 0.0, 0.0))
    s.spherical("ball_u", upper.marker("ball", upper_arm_vec), upright.marker("upper_ball", UPPER_BALL))

    # the tie rod: universal joint at the chassis (first axis fore-aft, the
    # second vertical), ball joint at the upright's steering arm
    rod = _minus(TIE_OUTER, TIE_INNER)
    tie = s.body("tie_rod", 0.8, _rod_inertia(0.8, 0.31), com=tuple(0.5 * v for v in rod))
    s.universal("tie_u", chassis.marker("tie_inner", TIE_INNER), tie.origin, axis=fore_aft, axis2=Z,
                coordinates=["tie_u_a", "tie_u_b"], start=(math.pi if mirror_tie_rod else 0.0, 0.0))
    s.spherical("tie_ball", tie.marker("outer", rod), upright.marker("tie", TIE_OUTER))

    wheel = s.body("wheel", 18.0, (0.9, 1.2, 0.9))
    s.revolute("spin", upright.origin, wheel.origin, axis=Y, start=0.0, velocity_start=30.0)

    k = s.parameter("k_spring", 30e3, "N/m", tunable=True, description="coil-over rate")
    d = s.parameter("d_spring", 2.5e3, "N.s/m", tunable=True, description="coil-over damping")
    s.spring_damper("coilover", chassis.marker("spring_top", SPRING_TOP),
                    lower.marker("spring", _minus(SPRING_BOTTOM, LOWER_PIVOT)),
                    stiffness=k, damping=d, free_length=0.45, preload=-3000.0)
    fz = s.input("Fz", 4200.0, "N", description="tyre vertical force on the wheel centre")
    s.force("tyre", wheel.origin, force=(0, 0, fz))

    s.cut = ["ball_u", "tie_ball"]
    s.independent = ["zc", "lower", "spin"]
    s.dof = 3
    return s
