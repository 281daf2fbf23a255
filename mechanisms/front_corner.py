"""A steerable double-wishbone front corner under a heaving chassis, rack displacement as input.

The wheel carrier (knuckle) hangs from the chassis by two A-arms and a tie
rod.  An A-arm with a revolute inner axis and an outer ball joint moves its
ball joint exactly as two rods from its two inner pivots to that point, so
the corner is ``five_link_joints.add_corner`` with double-wishbone hard
points (``DOUBLE_WISHBONE``): rods 1–2 the upper arm, 3–4 the lower arm, 5
the tie rod, whose inner end sits on the steering rack.  The loops close in
the chassis frame with the rack displacement as one more known, so the
partition finds the five-link structure again: a 5×5 Newton block in the
knuckle pose given the travel and the rack, and triangular rod angles.

Steering: the rack is a body on a prismatic joint along the chassis y axis
(``rack``, positive to the left).  It is position-controlled: the input
``rack_demand`` drives it through a stiff servo (stiffness
``k_rack_servo`` = 1 MN/m, damping ``d_rack_servo`` = 20 kN·s/m, like an
electric power-steering position loop), so the rack displacement follows
the demand within a few milliseconds and every body keeps its inertia.  A
positive rack displacement steers the wheels to the right (left wheel
toe-in): 30 mm give 12.0° at the left wheel.

Geometry (left front corner; X forward, Y outboard, Z up; origin at the wheel
centre in the design pose; metres).  Not a measured car: round hard points
of a mid-size car's short-long-arm front axle, chosen for a kingpin
inclination of 8.4°, a caster of 3.4° and a steering arm of 0.14 m behind
the axle; the tie rod's inner point was then fitted (scipy least squares,
rounded to 1 mm) for the least bump steer over ±80 mm of travel:

    ==  ==================  ============================  ==========================
     k  rod                 W_k (knuckle frame)           C_k (chassis; rack at 0)
    ==  ==================  ============================  ==========================
     1  upper arm, front    (−0.010, −0.090,  0.190)      ( 0.110, −0.370,  0.215)
     2  upper arm, rear     (−0.010, −0.090,  0.190)      (−0.130, −0.370,  0.225)
     3  lower arm, front    ( 0.010, −0.040, −0.150)      ( 0.200, −0.420, −0.125)
     4  lower arm, rear     ( 0.010, −0.040, −0.150)      (−0.180, −0.420, −0.115)
     5  tie rod             (−0.140, −0.070, −0.050)      (−0.140, −0.378, −0.024)
    ==  ==================  ============================  ==========================

L_k = |W_k − C_k| rounded to 1 µm.  Over ±80 mm of travel: toe −0.53° …
0° … −0.55° (toe-out both ways), camber −1.03° (rebound) … −0.10° (bump),
track change −18 mm … +1 mm.  Rack ±30 mm: toe +12.0° / −12.3°.  The arms
are the five-link's rods (steel tubes of radius 15 mm, two per arm), the
knuckle the five-link's carrier; the wheel and the coil-over (on the lower
arm's rear rod) are ``quarter_car_joints``'.

The mechanism itself (``build``) is ``quarter_car_joints`` with this corner:
the chassis heaves on a prismatic joint (``zc``), independent coordinates
``zc``, ``z`` (travel), ``spin`` and ``rack``; tire loads ``Fx … Mz`` and
the drive torque ``T_drive`` are inputs.  The start is the design pose at
rest with the wheel turning at 30 rad/s.
"""
import numpy as np

from fmigen.joints import JointSystem, Y
from fmigen.model import t

from mechanisms.corner_geometry import LinkCorner
from mechanisms.five_link import POSE
from mechanisms.five_link_joints import add_corner
from mechanisms.quarter_car_joints import CHASSIS_MASS, add_wheel_and_suspension, heaving_chassis

_W = ((-0.010, -0.090, 0.190), (-0.010, -0.090, 0.190),
      (0.010, -0.040, -0.150), (0.010, -0.040, -0.150),
      (-0.140, -0.070, -0.050))
_C = ((0.110, -0.370, 0.215), (-0.130, -0.370, 0.225),
      (0.200, -0.420, -0.125), (-0.180, -0.420, -0.115),
      (-0.140, -0.378, -0.024))
DOUBLE_WISHBONE = LinkCorner(
    names=("upper arm, front", "upper arm, rear", "lower arm, front", "lower arm, rear", "tie rod"),
    W=_W, C=_C, L=tuple(round(float(np.linalg.norm(np.subtract(w, c))), 6) for w, c in zip(_W, _C)),
    rack_links=(4,))

RACK_MASS = 3.0               # kg
SERVO_STIFFNESS = 1.0e6       # N/m
SERVO_DAMPING = 2.0e4         # N s/m


def add_rack(s: JointSystem, chassis, at=(0.0, 0.0, 0.0), prefix="", time_constant=None):
    """The steering rack: a body on a prismatic joint ``{prefix}rack`` along
    ``chassis``' y from the chassis marker at ``at`` (its frame the
    chassis' at zero displacement), driven towards the input
    ``{prefix}rack_demand`` by a stiff servo — or, with ``time_constant``
    [s], prescribed (``s.prescribe``): the rack follows the demand through
    the critically damped filter, and the force that moves it is the
    output ``drive_{prefix}rack``.  Returns the rack body."""
    m = s.parameter(f"{prefix}m_rack", RACK_MASS, "kg", tunable=True, description="steering rack mass")
    # a bar about 0.35 m long along y (m L²/12 ≈ 0.01 m across it)
    rack = s.body(f"{prefix}rack", m, (m * 0.01, m * 0.001, m * 0.01), com=tuple(at))
    r = s.prismatic(f"{prefix}rack", chassis.origin, rack.origin, axis=Y, start=0.0)
    demand = s.input(f"{prefix}rack_demand", 0.0, "m",
                     description="steering rack displacement demand, positive to the left (steers right)")
    if time_constant is not None:
        s.prescribe(f"{prefix}rack", demand, time_constant=time_constant)
        return rack
    k = s.parameter(f"{prefix}k_rack_servo", SERVO_STIFFNESS, "N/m", tunable=True,
                    description="stiffness of the rack's position servo")
    d = s.parameter(f"{prefix}d_rack_servo", SERVO_DAMPING, "N.s/m", tunable=True,
                    description="damping of the rack's position servo")
    s.joint_force(f"{prefix}rack", k * (demand - r) - d * r.diff(t))
    return rack


def build() -> JointSystem:
    s = JointSystem("front_corner", description=__doc__.splitlines()[0])
    chassis = heaving_chassis(s)
    rack = add_rack(s, chassis)
    carrier, _ = add_corner(s, chassis, geometry=DOUBLE_WISHBONE, rack=rack)
    add_wheel_and_suspension(s, chassis, carrier, CHASSIS_MASS, geometry=DOUBLE_WISHBONE)
    s.output("travel", s.coordinate_by_name("z").symbol)
    s.cut = [f"S{i}" for i in range(1, 6)]
    s.independent = ["zc", "z", "spin", "rack"]
    s.dof = 4
    s.newton_blocks = [POSE]
    return s
