"""A full vehicle: a 6-DOF chassis on four five-link corners, tire loads and wheel torques as inputs.

The chassis is a free body (``xc yc zc`` in the world, 3-2-1 angles
``yawc pitchc rollc``; a floating base, so its equations of motion are
derived in its body-frame speeds, ``fmigen/model.py``); each corner is
``five_link_joints.add_corner`` hung from the chassis (left corners as in
``five_link``, right corners mirrored in the x-z plane) with
``quarter_car_joints``' wheel (drive torque input ``*_T_drive``), coil-over
and tire-load inputs ``*_Fx … *_Mz`` at the wheel centre.  Corners are
prefixed ``fl_ fr_ rl_ rr_``.

The design pose at rest is a static equilibrium: each corner's tire load
``*_Fz`` starts at its share of the car's weight from the whole car's
vertical and pitch balance (``axle_loads``: the links' weights act ahead of
the axle), and its coil-over preload balances that load along the travel
(``quarter_car_joints.static_preload``).  Started at rest (``build(bump=False)``)
the chassis stays at its ride height: 1.1e-13 m and 2.1e-14 rad from it
after 1 s (the FMU, RK4 at 1 ms); with the chassis' weight split by the
axle positions alone it had pitched 5.8 mrad and sunk 83 µm.

Limits of this model: the front corners use the rear five-link geometry (no
better front-axle data is at hand) with their track rods fixed to the
chassis, so there is **no steering input**; and the tire loads are inputs
only (a simulator's tire model closes the loop through the wheel outputs).

Every corner's loops close in the chassis frame (``joint_model``): four
copies of ``five_link``'s blocks (a 5×5 Newton block in the carrier pose,
triangular link angles), whatever the chassis does.  Independent
coordinates: the chassis' six, each corner's travel ``*_z`` and wheel
``*_spin`` (14 of 74 coordinates, 60 constraints).  The start is the design
pose at rest with every wheel turning at 30 rad/s and the front-left wheel
moving up at 0.5 m/s relative to the chassis, as after a bump
(``build(bump=False)``: everything at rest).

Outputs per corner: the wheel centre's world position ``*_wheel_x/y/z`` and
velocity ``*_wheel_vx/vy/vz``, the carrier's world orientation
``*_wheel_yaw/pitch/roll`` (3-2-1; the wheel's, apart from its spin
``*_spin``) and the suspension travel ``*_travel``; the chassis pose and
velocities are its coordinates and their ``der()``.
"""
import sympy as sp

from fmigen.joint_model import rot, rz
from fmigen.joints import JointSystem, X, Y
from fmigen.model import t

from mechanisms.five_link import C, GRAVITY, POSE, carrier_mass, link_mass, link_vectors, start_configuration
from mechanisms.five_link_joints import add_corner
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


def unsprung_moment():
    """(mass, Σ m·x) of one corner's unsprung bodies in the design pose, x
    along the car in the corner's frame: the carrier and the wheel at the
    carrier centre, each link's centre halfway along it (the same for a
    mirrored corner)."""
    start = start_configuration(0.0)
    X = link_vectors([start[n] for n in POSE], 0.0)
    bodies = [(carrier_mass(), start["x"]), (WHEEL_MASS, start["x"])]
    bodies += [(link_mass(k), C[k][0] + 0.5 * X[k][0]) for k in range(5)]
    return sum(m for m, _ in bodies), sum(m * x for m, x in bodies)


def axle_loads():
    """The sprung mass each corner carries at rest in the design pose (its
    tire then carries that and its unsprung bodies), {prefix: kg}: the whole
    car's vertical and pitch balance, Σ F_z = (m_chassis + 4 m_u) g and
    Σ F_z x = g Σ m x (moments about the chassis' centre of mass, the tire
    forces at the wheel centres, which are x0 ~ 1e-5 m off the corners'
    origins), split equally left and right.  The links'
    weights act off the axle (their centres are up to 0.24 m ahead of it),
    so this is not the chassis' weight split by the axle positions alone (that
    left the chassis pitching 6 mrad in its first second at rest)."""
    mu, mux = unsprung_moment()
    xf, xr = CORNERS["fl_"][0], CORNERS["rl_"][0]
    x0 = start_configuration(0.0)["x"]               # the wheel centre in its corner (~1e-5 m)
    a = CHASSIS_MASS / 2 + 2 * mu                    # F_f + F_r, per side, / g
    b = mu * (xf + xr) + 2 * mux - x0 * a            # F_f x_f + F_r x_r, per side, / g
    front = (b - a * xr) / (xf - xr)
    loads = {"f": front - mu, "r": a - front - mu}
    return {p: float(loads[p[0]]) for p in CORNERS}


def _wheel_outputs(s, prefix, offset, r_chassis, R_chassis):
    """What a tire model needs of a wheel: the wheel centre's world position
    and velocity and the carrier's world orientation as 3-2-1 angles (the
    wheel's without its spin, whose rate is ``der({prefix}spin)``), and the
    suspension travel."""
    q = {n: s.coordinate_by_name(prefix + n).symbol for n in ("x", "y", "z", "psi", "theta", "phi")}
    centre = r_chassis + R_chassis * (sp.Matrix(offset) + sp.Matrix([q["x"], q["y"], q["z"]]))
    R = R_chassis * rz(q["phi"]) * rot(Y, q["theta"]) * rot(X, q["psi"])
    for i, ax in enumerate("xyz"):
        s.output(f"{prefix}wheel_{ax}", centre[i])
        s.output(f"{prefix}wheel_v{ax}", centre[i].diff(t))
    s.output(f"{prefix}wheel_yaw", sp.atan2(R[1, 0], R[0, 0]))
    s.output(f"{prefix}wheel_pitch", sp.asin(-R[2, 0]))
    s.output(f"{prefix}wheel_roll", sp.atan2(R[2, 1], R[2, 2]))
    s.output(f"{prefix}travel", q["z"])


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
    q = {n: s.coordinate_by_name(n).symbol for n in CHASSIS_POSE}
    r_chassis = sp.Matrix([q["xc"], q["yc"], q["zc"]])
    R_chassis = rz(q["yawc"]) * rot(Y, q["pitchc"]) * rot(X, q["rollc"])
    loads = axle_loads()
    for prefix, (ax, side) in CORNERS.items():
        offset = (ax, side * TRACK / 2, -CG_HEIGHT)
        # the static load of each corner (the design pose at rest is an equilibrium)
        share = loads[prefix]
        carrier, _ = add_corner(s, chassis, prefix=prefix, offset=offset, side=side)
        add_wheel_and_suspension(s, chassis, carrier, share, prefix=prefix, offset=offset, side=side)
        independent += [f"{prefix}z", f"{prefix}spin"]
        if prefix == "fl_" and bump:
            s.coordinate_by_name("fl_z").velocity_start = 0.5      # the bump
        if not bump:
            s.coordinate_by_name(f"{prefix}spin").velocity_start = 0.0
        _wheel_outputs(s, prefix, offset, r_chassis, R_chassis)
    s.gravity = (0, 0, -g)
    s.cut = [f"{p}S{i}" for p in CORNERS for i in range(1, 6)]
    s.independent = independent
    s.dof = len(independent)
    s.newton_blocks = [[p + n for n in POSE] for p in CORNERS]
    return s
