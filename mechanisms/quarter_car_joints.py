"""A quarter car: the five-link rear corner of ``five_link`` under a heaving chassis, tire loads as inputs.

The corner is ``five_link_joints.add_corner`` hung from a chassis body
instead of ground: the chassis (a quarter of a 1600 kg car) moves on a
prismatic joint along the world Z (``zc``, heave), the wheel carrier on a
free joint *relative to the chassis* (``x y z psi theta phi`` as in
``five_link``, now in the chassis frame), the five links on universal joints
at the chassis points C_k.  The loops close below the chassis, so their
closure equations are written in its frame (``joint_model``) and are exactly
``five_link_joints``' rows: the same 5×5 pose block (Newton) and triangular
(β_k, α_k) pairs, whatever the chassis does.

Added to the corner:

* the wheel, a body on a revolute joint about the carrier's y axis
  (``spin``), driven by the input ``T_drive`` (reaction on the carrier);
* a coil-over spring-damper from the chassis to the spring link (link 4) at
  60 % of its length, vertical in the design pose; its preload is the static
  balance of the design pose with the tire carrying the whole quarter car
  (``static_preload``: virtual work of the tire force, the unsprung weights
  and the coil-over along the travel, by central differences of the
  geometry), so the car rests there;
* the tire's loads as inputs, the interface a simulator's tire model fills:
  force ``Fx Fy Fz`` and moment ``Mx My Mz`` at the wheel centre (the carrier
  origin), world components, acting on the wheel.  ``Fz`` starts at the
  weight of the whole quarter car.

Coil-over data are round numbers of a mid-size car's rear axle (spring rate
60 kN/m at the link, motion ratio about 0.6, so a wheel rate of about
22 kN/m; damping 3 kN·s/m), not a measured vehicle.

Independent coordinates: ``zc`` (chassis heave), ``z`` (carrier height over
the chassis design position, i.e. suspension travel) and ``spin``.  The
start is the design pose, at rest but for the wheel: moving up at 0.5 m/s
relative to the chassis (as after a bump) and turning at 30 rad/s (about
35 km/h), so the run exercises the travel, the coil-over, the chassis'
heave and the wheel's gyroscopic coupling with the camber change.

``fmigen validate quarter_car_joints --stop-time 1`` (RK4, 1 ms) passes:
IDA 1.2e-10, the Cartesian reference 3.2e-10, energy balance 6.1e-10,
constraint residual 1.7e-16.
"""
import numpy as np

from fmigen.joints import JointSystem, Y, Z

from mechanisms.five_link import FIVE_LINK, GRAVITY, POSE, carrier_mass
from mechanisms.five_link_joints import add_corner

CHASSIS_MASS = 400.0          # kg, a quarter of a 1600 kg car
WHEEL_MASS = 18.0             # kg, wheel and tire
WHEEL_INERTIA = (0.9, 1.2, 0.9)   # kg m², spin axis y
SPRING_RATE = 60e3            # N/m at the link
DAMPING = 3e3                 # N s/m
SPRING_AT = 0.6               # fraction of the spring link's length
SPRING_HEIGHT = 0.30          # m, the coil-over's length in the design pose


def spring_link_point(geometry=FIVE_LINK):
    """The coil-over's lower end in the design pose (chassis frame = world at zc = 0)."""
    X4 = geometry.link_vectors([geometry.start_configuration(0.0)[n] for n in POSE], 0.0)[3]
    return np.array(geometry.C[3]) + SPRING_AT * X4


def unsprung_masses(geometry=FIVE_LINK):
    """(mass, d(height)/d(travel)) of each unsprung body at the design pose."""
    def heights(z):
        X = geometry.link_vectors([geometry.start_configuration(z)[n] for n in POSE], z)
        return [np.array(geometry.C[k])[2] + 0.5 * X[k][2] for k in range(5)]
    h = 1e-5
    dlinks = (np.array(heights(h)) - np.array(heights(-h))) / (2 * h)
    return [(carrier_mass(), 1.0), (WHEEL_MASS, 1.0)] + [(geometry.link_mass(k), dlinks[k]) for k in range(5)]


def static_preload(sprung_mass=CHASSIS_MASS, geometry=FIVE_LINK):
    """The coil-over tension at the design pose that balances it (negative:
    compression) when the tire carries the whole quarter car: the virtual
    work along the travel z, Fz·1 − Σ m_i g ∂h_i/∂z − T ∂ℓ/∂z = 0."""
    def length(z):
        X4 = geometry.link_vectors([geometry.start_configuration(z)[n] for n in POSE], z)[3]
        bottom = np.array(geometry.C[3]) + SPRING_AT * X4
        return np.linalg.norm(spring_link_point(geometry) + np.array([0, 0, SPRING_HEIGHT]) - bottom)
    h = 1e-5
    dl = (length(h) - length(-h)) / (2 * h)
    masses = unsprung_masses(geometry)
    fz = (sprung_mass + sum(m for m, _ in masses)) * GRAVITY
    return (fz - GRAVITY * sum(m * dh for m, dh in masses)) / dl


def add_wheel_and_suspension(s: JointSystem, chassis, carrier, sprung_mass, prefix="", offset=(0, 0, 0), side=+1,
                             geometry=FIVE_LINK, trim=False):
    """The wheel on ``carrier`` (revolute ``{prefix}spin`` about the carrier's
    y, drive torque input ``{prefix}T_drive``), the coil-over from ``chassis``
    to the corner's spring link with the preload that balances the design
    pose for ``sprung_mass`` on this corner, and the tire-load inputs
    ``{prefix}Fx … {prefix}Mz`` on the wheel centre (``Fz`` starting at the
    corner's static load).  ``offset``/``side``/``geometry`` as
    ``add_corner``'s (the coil-over sits on the geometry's rod 4).

    ``trim``: the coil-over's preload is not ``static_preload``'s parameter
    but the static trim along the travel ``{prefix}z`` (``s.trim``): solved
    by the FMU at initialization from the model's own equations, at the
    start it assembled for the parameters set (masses, rates, g, hard
    points; output ``trim_{prefix}coilover``)."""
    mirror = np.array([1.0, side, 1.0])
    mw = s.parameter(f"{prefix}m_wheel", WHEEL_MASS, "kg", tunable=True, description="wheel and tire mass")
    Iw = [s.parameter(f"{prefix}I_wheel_{ax}", v, "kg.m2", tunable=True, description=f"wheel inertia about {ax}")
          for ax, v in zip("xyz", WHEEL_INERTIA)]
    wheel = s.body(f"{prefix}wheel", mw, Iw)
    s.revolute(f"{prefix}spin", carrier.origin, wheel.origin, axis=Y, start=0.0, velocity_start=30.0)

    # coil-over: vertical in the design pose, preloaded for the static balance
    bottom = spring_link_point(geometry) * mirror + np.array(offset, dtype=float)
    top = bottom + np.array([0.0, 0.0, SPRING_HEIGHT])
    k = s.parameter(f"{prefix}k_spring", SPRING_RATE, "N/m", tunable=True, description="coil-over spring rate")
    d = s.parameter(f"{prefix}d_spring", DAMPING, "N.s/m", tunable=True, description="coil-over damping")
    preload = 0 if trim else s.parameter(
        f"{prefix}coilover_preload", static_preload(sprung_mass, geometry), "N", tunable=True,
        description="coil-over tension at the design length (negative: compression), the design pose's static balance")
    s.spring_damper(f"{prefix}coilover", chassis.marker(f"{prefix}spring_top", tuple(float(v) for v in top)),
                    s.bodies[f"{prefix}link4"].marker("spring", (SPRING_AT * geometry.L[3], 0, 0)),
                    stiffness=k, damping=d, free_length=SPRING_HEIGHT, preload=preload)
    if trim:
        s.trim(f"{prefix}coilover", f"{prefix}z")

    weight = (sprung_mass + sum(m for m, _ in unsprung_masses(geometry))) * GRAVITY
    F = [s.input(f"{prefix}F{ax}", weight if ax == "z" else 0.0, "N",
                 description=f"tire force on the wheel centre, world {ax}") for ax in "xyz"]
    M = [s.input(f"{prefix}M{ax}", 0.0, "N.m", description=f"tire moment on the wheel, world {ax}") for ax in "xyz"]
    s.force(f"{prefix}tire", wheel.origin, force=F, torque=M)
    s.joint_force(f"{prefix}spin", s.input(f"{prefix}T_drive", 0.0, "N.m", description="drive/brake torque on the wheel"))
    return wheel


def heaving_chassis(s: JointSystem):
    """Gravity ``g`` along −z and a quarter car's chassis heaving on a
    vertical prismatic joint ``zc``; returns the chassis body."""
    g = s.parameter("g", GRAVITY, "m/s2", tunable=True, description="gravity along -z")
    mch = s.parameter("m_chassis", CHASSIS_MASS, "kg", tunable=True, description="sprung (chassis) mass")
    chassis = s.body("chassis", mch, (mch * 0.2, mch * 0.2, mch * 0.2))
    s.prismatic("zc", s.ground.origin, chassis.origin, axis=Z, start=0.0)
    s.gravity = (0, 0, -g)
    return chassis


def build() -> JointSystem:
    s = JointSystem("quarter_car_joints", description=__doc__.splitlines()[0])
    chassis = heaving_chassis(s)
    carrier, pose = add_corner(s, chassis)
    s.coordinate_by_name("z").velocity_start = 0.5
    add_wheel_and_suspension(s, chassis, carrier, CHASSIS_MASS)

    s.output("travel", s.coordinate_by_name("z").symbol)
    s.output("wheel_z", s.coordinate_by_name("zc").symbol + s.coordinate_by_name("z").symbol)
    s.cut = [f"S{i}" for i in range(1, 6)]
    s.independent = ["zc", "z", "spin"]
    s.dof = 3
    s.newton_blocks = [POSE]
    return s
