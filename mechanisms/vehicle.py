"""A full vehicle: a 6-DOF chassis on steerable double-wishbone front and five-link rear corners.

The chassis is a free body (``xc yc zc`` in the world, 3-2-1 angles
``yawc pitchc rollc``; a floating base, so its equations of motion are
derived in its body-frame speeds, ``fmigen/model.py``).  Each corner is
``five_link_joints.add_corner`` hung from the chassis (left corners as
designed, right corners mirrored in the x-z plane) with
``quarter_car_joints``' wheel (drive torque input ``*_T_drive``), coil-over
and tire-load inputs ``*_Fx … *_Mz`` at the wheel centre.  Corners are
prefixed ``fl_ fr_ rl_ rr_``:

* rear: ``five_link``'s five-link geometry;
* front: ``front_corner``'s double wishbone (two A-arms, each two rods to its
  ball joint, and a tie rod), both tie rods on one steering rack (``rack``,
  a body sliding along the chassis y on the front axle line) prescribed to
  follow the input ``rack_demand`` (``s.prescribe``: the critically damped
  filter with ``RACK_TIME_CONSTANT``; positive: to the left, steering right;
  30 mm give about 12° at the wheels); the force on it is the output
  ``drive_rack``.  The hard
  points and their rationale are in ``mechanisms/front_corner.py``.

The tire loads are inputs only: a simulator's tire model closes the loop
through the wheel outputs.

The design pose at rest is a static equilibrium: each corner's tire load
``*_Fz`` starts at its share of the car's weight from the whole car's
vertical and pitch balance (``axle_loads``: the links' weights act off the
axle, and the rack rides on the front axle line), and its coil-over preload
is the static trim along its travel (``s.trim``: the FMU solves it from
the model's own equations at initialization, at the start it assembled, the
output ``trim_*_coilover``; at the design pose it equals ``quarter_car_joints.static_preload``'s
hand-made virtual-work balance to 2e-14).  Started at rest
(``build(bump=False)``, or the shipped FMU with ``der(fl_z)`` and the
spins' rates set to 0) the chassis stays at its ride height: within
9.6e-16 rad and 0 m of it over 1 s (the FMU, RK4 at 1 ms).  With the
chassis' weight split by the axle positions alone it had pitched 5.8 mrad
and sunk 83 µm in 1 s (five-link corners all round, then).

Stops (``add_stops``), on each corner's travel ``*_z`` (the carrier's
height over its design position, in the chassis frame): a jounce bumper
(``s.bump_stop``, ``BUMP_STOP_TABLE``: contact 60 mm above the design pose,
a progressive force–deflection curve reaching 10 kN 30 mm into it) and a
rebound stop (``s.limit``: 70 mm below, 500 kN/m with 1 kN·s/m while
pressed).  Round numbers of a mid-size car, not a measured one, inside the
±80 mm the corners' hard points were fitted for; a microcellular
elastomer bumper that acts as a progressive spring over the last part of
the jounce travel, and a stiffer, shorter rebound stop, are the usual
arrangement (W. F. Milliken and D. L. Milliken, *Race Car Vehicle
Dynamics*, SAE 1995; T. D. Gillespie, *Fundamentals of Vehicle Dynamics*,
SAE 1992, ch. 5 on the suspension's limited travel).  Model Exchange
reports each contact and table point as a state event.

Joint loads (``s.reaction``, outputs ``reaction_<joint>_fx … _mz``, the
force and moment the chassis (or the rack) exerts on the corner through the
joint, about its child marker, world axes): every chassis mount of every
corner (``chassis_mounts``: the carrier's free joint, which carries the
stops' force, and the five rods' universal joints ``*_U1 … *_U5``, a front
tie rod's on the rack) and the rack's own joint ``rack`` (its drive
included).  At rest they balance the weights to 1e-9
(``tests/test_vehicle.py``).

Hard points (``HARD_POINTS``; docs/writing-mechanisms.md, "Hard points"):
the front-left corner's whole hard-point table is tunable, 35 parameters:
every coordinate of each rod's chassis point ``fl_C1x … fl_C5z`` (the
tie rod's, ``fl_C5*``, on the rack) and knuckle point ``fl_W1x …
fl_W5z`` within ±5 mm (``POINT_RANGE``), and each rod's length ``fl_L1 …
fl_L5`` within ±10 mm (``LENGTH_RANGE``).  The FMU takes new values before
initialization without a rebuild and assembles the start there, exact (the
knuckle's pose block is solved by Newton, each rod's angles by sequences
whose coefficients hold the points).  The lengths are hard points of their
own, not functions of the points: a rod is a part, and a mount moved with
the same rod moves the knuckle (the tie rod's inner point 4 mm lower, its
length kept, yaws the knuckle by 2.2 mrad at the design pose: the bump
steer adjustment of a rack-height spacer); setting ``fl_Lk`` to |W_k − C_k|
at the new points keeps the design pose instead (what a hard-point table
with derived lengths means).  ±10 mm on a length holds that value for any
move of up to 5 mm of two of its rod's end coordinates.  The ranges are
ones the geometry admits: at the box's extreme corners and at random
vertices of it the knuckle's five rod equations solve, well conditioned,
from the rebound stop to 30 mm into the bump stop with the rack at ±30 mm
(``tests/test_vehicle.py``), and the build assembles the start on its
branch at all 142 of its samples of the ranges.  The other corners' hard
points are structural (numbers in the Gröbner bases).  The trim is solved
at initialization at the start the FMU assembled for the hard points set
(``s.trim``; the coil-over sits on rod 4, so ``fl_C4*`` move it).

Every corner's loops close in the chassis frame (``joint_model``): four
five-rod blocks (a 5×5 Newton block in the carrier pose, triangular rod
angles), whatever the chassis does; the front blocks take the rack
displacement as one more known.  Independent coordinates: the chassis' six,
the rack, each corner's travel ``*_z`` and wheel ``*_spin`` (15 of 75
coordinates, 60 constraints).  The start is the design pose at rest with
every wheel turning at 30 rad/s and the front-left wheel moving up at
0.5 m/s relative to the chassis, as after a bump (``build(bump=False)``:
everything at rest).

Outputs per corner: the wheel centre's world position ``*_wheel_x/y/z`` and
velocity ``*_wheel_vx/vy/vz`` (``s.position``/``s.velocity`` of the carrier's
origin), the carrier's world orientation ``*_wheel_yaw/pitch/roll`` (3-2-1,
from ``s.orientation``; the wheel's, apart from its spin ``*_spin``), the
suspension travel ``*_travel``, the trimmed preload and the mounts'
reactions; the chassis pose and velocities, and the rack displacement, are
coordinates with their ``der()``.
"""
import math

import sympy as sp

from fmigen.joints import JointSystem

from mechanisms.five_link import FIVE_LINK, GRAVITY, POSE, carrier_mass
from mechanisms.five_link_joints import add_corner
from mechanisms.front_corner import DOUBLE_WISHBONE, RACK_MASS, add_rack
from mechanisms.quarter_car_joints import WHEEL_MASS, add_wheel_and_suspension

CHASSIS_MASS = 1400.0                    # kg
CHASSIS_INERTIA = (500.0, 2000.0, 2200.0)   # kg m², roll, pitch, yaw
WHEELBASE = 2.80                         # m
TRACK = 1.50                             # m
CG_HEIGHT = 0.25                         # m above the wheel centres
#: corner prefix -> (x of the axle from the centre of mass, side)
CORNERS = {"fl_": (0.45 * WHEELBASE, +1), "fr_": (0.45 * WHEELBASE, -1),
           "rl_": (-0.55 * WHEELBASE, +1), "rr_": (-0.55 * WHEELBASE, -1)}
CHASSIS_POSE = ["xc", "yc", "zc", "rollc", "pitchc", "yawc"]
FRONT = ("fl_", "fr_")
#: the steering rack follows ``rack_demand`` through a critically damped
#: filter of this time constant [s] (``JointSystem.prescribe``): a ramp
#: lags 20 ms, a step settles in about 60 ms; RK4 at 1 ms follows it
RACK_TIME_CONSTANT = 0.01
#: the jounce bumper: contact at this travel [m] above the design pose
BUMP_STOP_AT = 0.060
#: its force–deflection curve, (deflection [m], force [N]): progressive, as
#: a microcellular elastomer's (continued past the last point at 650 kN/m)
BUMP_STOP_TABLE = ((0.0, 0.0), (0.010, 1.0e3), (0.020, 3.5e3), (0.030, 10.0e3))
#: the rebound stop: contact at this travel [m] (below the design pose), a
#: stiff linear stop [N/m] with a damper [N s/m] acting while it is pressed
REBOUND_STOP_AT = -0.070
REBOUND_STOP_STIFFNESS = 5.0e5
REBOUND_STOP_DAMPING = 1.0e3
#: half-widths [m] of the front-left corner's hard-point ranges: every
#: coordinate of a rod's chassis (or rack) point C_k and knuckle point W_k,
#: and each rod's length L_k (module docstring, "Hard points")
POINT_RANGE, LENGTH_RANGE = 0.005, 0.010
#: the front-left corner's tunable hard points (``Parameter.range``), each
#: ± its value [m] around its design value
HARD_POINTS = {**{f"fl_{k}{i}{ax}": POINT_RANGE for i in range(1, 6) for k in "CW" for ax in "xyz"},
               **{f"fl_L{i}": LENGTH_RANGE for i in range(1, 6)}}


def geometry_of(prefix):
    return DOUBLE_WISHBONE if prefix in FRONT else FIVE_LINK


def unsprung_moment(geometry):
    """(mass, Σ m·x) of one corner's unsprung bodies in the design pose, x
    along the car in the corner's frame: the carrier and the wheel at the
    carrier centre, each link's centre halfway along it (the same for a
    mirrored corner)."""
    start = geometry.start_configuration(0.0)
    X = geometry.link_vectors([start[n] for n in POSE], 0.0)
    bodies = [(carrier_mass(), start["x"]), (WHEEL_MASS, start["x"])]
    bodies += [(geometry.link_mass(k), geometry.C[k][0] + 0.5 * X[k][0]) for k in range(5)]
    return sum(m for m, _ in bodies), sum(m * x for m, x in bodies)


def axle_loads():
    """The sprung mass each corner carries at rest in the design pose (its
    tire then carries that and its unsprung bodies), {prefix: kg}: the whole
    car's vertical and pitch balance, per side F_f + F_r = (m_chassis/2 +
    m_rack/2 + m_u,f + m_u,r) g and F_f a_f + F_r a_r = g Σ m x (moments about
    the chassis' centre of mass; the tire forces at the wheel centres a_f,
    a_r, which are ~1e-5 m off the corners' origins; the rack on the front
    axle line).  The links' weights act off the axle (their centres are up
    to 0.24 m from it), so this is not the chassis' weight split by the axle
    positions alone (that left the chassis pitching 6 mrad in its first
    second at rest)."""
    xf, xr = CORNERS["fl_"][0], CORNERS["rl_"][0]
    (muf, muxf), (mur, muxr) = unsprung_moment(DOUBLE_WISHBONE), unsprung_moment(FIVE_LINK)
    af = xf + DOUBLE_WISHBONE.start_configuration(0.0)["x"]     # the wheel centres along the car
    ar = xr + FIVE_LINK.start_configuration(0.0)["x"]
    total = CHASSIS_MASS / 2 + RACK_MASS / 2 + muf + mur        # F_f + F_r, per side, / g
    moment = muf * xf + muxf + mur * xr + muxr + RACK_MASS / 2 * xf   # F_f a_f + F_r a_r, per side, / g
    front = (moment - total * ar) / (af - ar)
    loads = {"f": front - muf, "r": total - front - mur}
    return {p: float(loads[p[0]]) for p in CORNERS}


def _wheel_outputs(s, prefix, carrier):
    """What a tire model needs of a wheel: the wheel centre's (the carrier
    origin's) world position and velocity and the carrier's world
    orientation as 3-2-1 angles (the wheel's without its spin, whose rate is
    ``der({prefix}spin)``), and the suspension travel."""
    centre, velocity = s.position(carrier.origin), s.velocity(carrier.origin)
    R = s.orientation(carrier.origin)
    for i, ax in enumerate("xyz"):
        s.output(f"{prefix}wheel_{ax}", centre[i])
        s.output(f"{prefix}wheel_v{ax}", velocity[i])
    s.output(f"{prefix}wheel_yaw", sp.atan2(R[1, 0], R[0, 0]))
    s.output(f"{prefix}wheel_pitch", sp.asin(-R[2, 0]))
    s.output(f"{prefix}wheel_roll", sp.atan2(R[2, 1], R[2, 2]))
    s.output(f"{prefix}travel", s.coordinate_by_name(f"{prefix}z").symbol)


def add_stops(s, prefix):
    """The corner's bump (jounce) and rebound stops on its travel
    ``{prefix}z`` (module docstring, "Stops"): the jounce bumper by its
    force–deflection table, the rebound stop a stiff linear one."""
    s.bump_stop(f"{prefix}carrier", BUMP_STOP_AT, BUMP_STOP_TABLE, side="upper", coordinate=f"{prefix}z")
    s.limit(f"{prefix}carrier", REBOUND_STOP_AT, math.inf, REBOUND_STOP_STIFFNESS, REBOUND_STOP_DAMPING,
            coordinate=f"{prefix}z")


def chassis_mounts(prefix):
    """The joints by which a corner hangs from the chassis: the carrier's
    free joint from its hub (it carries the stops' forces), the five rods'
    universal joints (a front tie rod's on the rack, which the rack's own
    joint ``rack`` hangs from the chassis)."""
    return [f"{prefix}carrier"] + [f"{prefix}U{k}" for k in range(1, 6)]


def build(bump: bool = True) -> JointSystem:
    s = JointSystem("vehicle", description=__doc__.splitlines()[0])
    g = s.parameter("g", GRAVITY, "m/s2", tunable=True, description="gravity along -z")
    mch = s.parameter("m_chassis", CHASSIS_MASS, "kg", tunable=True, description="chassis (sprung) mass")
    I = [s.parameter(f"I_chassis_{ax}", v, "kg.m2", tunable=True, description=f"chassis inertia about {ax}")
         for ax, v in zip("xyz", CHASSIS_INERTIA)]
    chassis = s.body("chassis", mch, I)
    s.free("chassis", s.ground.origin, chassis.origin, coordinates=CHASSIS_POSE,
           start=[0.0, 0.0, CG_HEIGHT, 0.0, 0.0, 0.0])
    independent = list(CHASSIS_POSE)
    # the steering rack on the front axle line, level with the wheel centres
    rack = add_rack(s, chassis, at=(CORNERS["fl_"][0], 0.0, -CG_HEIGHT), time_constant=RACK_TIME_CONSTANT)
    independent.append("rack")
    loads = axle_loads()
    for prefix, (ax, side) in CORNERS.items():
        offset = (ax, side * TRACK / 2, -CG_HEIGHT)
        # the static load of each corner (the design pose at rest is an equilibrium)
        share = loads[prefix]
        geometry = geometry_of(prefix)
        carrier, _ = add_corner(s, chassis, prefix=prefix, offset=offset, side=side, geometry=geometry,
                                rack=rack if prefix in FRONT else None)
        add_wheel_and_suspension(s, chassis, carrier, share, prefix=prefix, offset=offset, side=side,
                                 geometry=geometry, trim=True)
        add_stops(s, prefix)
        independent += [f"{prefix}z", f"{prefix}spin"]
        if prefix == "fl_" and bump:
            s.coordinate_by_name("fl_z").velocity_start = 0.5      # the bump
        if not bump:
            s.coordinate_by_name(f"{prefix}spin").velocity_start = 0.0
        _wheel_outputs(s, prefix, carrier)
        for joint in chassis_mounts(prefix):
            s.reaction(joint)
    s.reaction("rack")
    for name, half in HARD_POINTS.items():
        p = next(p for p in s.parameters if p.name == name)
        p.tunable, p.range = True, (float(p.value) - half, float(p.value) + half)
    s.gravity = (0, 0, -g)
    s.cut = [f"{p}S{i}" for p in CORNERS for i in range(1, 6)]
    s.independent = independent
    s.dof = len(independent)
    s.newton_blocks = [[p + n for n in POSE] for p in CORNERS]
    return s
