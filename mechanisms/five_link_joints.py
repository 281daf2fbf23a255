"""The five-link rear suspension of ``five_link`` written as bodies and joints.

Same geometry (the tables W, C, L), bodies, loads and start as
``mechanisms/five_link.py``: the wheel carrier on a free joint from ground
(``x``, ``y``, ``z``, then the rotations ``psi`` about x, ``theta`` about y
and ``phi`` about z, so R = Rz(φ) Ry(θ) Rx(ψ) as there); per link k a
universal joint at the chassis point C_k (``alphak`` about X, ``betak``
about the rotated Y', the link along its x axis: u_k = Rx(α_k) Ry(β_k) e_x)
and a spherical joint ``Sk`` from the carrier point W_k to the link's end
(L_k, 0, 0).  The spherical joints are cut.

Each link is a *distance link* (``joint_model``): its cut spherical joint
closes through a universal joint on ground, so the front end writes the
closure as five_link's distance equation |X_k|² = L_k² (carrier pose only)
and its two direction equations instead of X_k = L_k u_k; the partition
then finds five_link's structure — one 5×5 block in the carrier pose given
``z`` (Newton, as there) and a triangular (β_k, α_k) pair per link.

Measured (RK4 at 1 ms; ``fmigen bench``, explicit Euler, 3 s): the FMU
equals ``five_link`` to 2.0e-15 in the coordinates and 8.9e-16 in the
velocities over 6 s, at 16 862 instructions per step (five_link: 16 957);
build 29 s.  The three position rows instead (``distance_links = False``)
make one 15×15 block with 28 polynomial variables, too many for a lex
basis (it did not finish in 60 s): a run-time Newton block, build 81 s, 61 690 instructions per step (3.6×),
equal to five_link to 7.1e-15.
"""
import sympy as sp

from fmigen.joints import JointSystem, X, Y
from fmigen.model import t

from mechanisms.five_link import (CARRIER_RADIUS, CARRIER_THICKNESS, F0, FIVE_LINK, FZ_PIECES, GRAVITY,
                                  LINK_RADIUS, POSE, carrier_mass)


def add_corner(s: JointSystem, base, prefix="", offset=(0, 0, 0), start_z=0.0, tunable_masses=True, side=+1,
               geometry=FIVE_LINK, rack=None):
    """The five-link corner of ``build`` hung from the body ``base`` (ground
    here; a chassis in a vehicle): the carrier on a free joint from a base
    marker at ``offset`` (its design position), the links on universal joints
    at the base points C_k + offset, the spherical joints cut.  Names get
    ``prefix`` (coordinates, bodies, joints, parameters).  The closure
    equations are written in ``base``'s frame (``joint_model``), so on a
    moving chassis the corner keeps the structure it has here.  Returns
    (carrier body, the carrier's pose coordinate names).

    ``side = -1`` mirrors the corner in the x-z plane (a right wheel from
    the left one): y components of C_k and W_k change sign, and the start
    pose with them (y, ψ, φ and each α_k: S Rz(φ) Ry(θ) Rx(ψ) S =
    Rz(−φ) Ry(θ) Rx(−ψ) and S u_k(α, β) = u_k(−α, β), S = diag(1, −1, 1)).

    ``geometry``: the hard points (``corner_geometry.LinkCorner``; default
    ``five_link``'s).  Its ``rack_links`` hang from the body ``rack`` (a
    steering rack sliding along ``base``'s y, its frame ``base``'s at zero
    displacement) instead of ``base``."""
    if geometry.rack_links and rack is None:
        raise ValueError(f"the corner's rods {[k + 1 for k in geometry.rack_links]} hang from a steering rack: "
                         "pass rack=<body>")
    start = dict(geometry.start_configuration(start_z))
    if side < 0:
        for n in ["y", "psi", "phi"] + [f"alpha{i}" for i in range(1, 6)]:
            start[n] = -start[n]
    mc = s.parameter(f"{prefix}m_carrier", carrier_mass(), "kg", tunable=tunable_masses,
                     description="wheel-carrier mass")
    R0, T0 = CARRIER_RADIUS, CARRIER_THICKNESS
    carrier = s.body(f"{prefix}carrier", mc, (mc * (3 * R0**2 + T0**2) / 12, mc * R0**2 / 2,
                                              mc * (3 * R0**2 + T0**2) / 12))
    pose = [f"{prefix}{n}" for n in ("x", "y", "z", "psi", "theta", "phi")]
    hub = base.origin if tuple(offset) == (0, 0, 0) else base.marker(f"{prefix}hub", offset)
    s.free(f"{prefix}carrier", hub, carrier.origin, coordinates=pose,
           start=[start[n] for n in ("x", "y", "z", "psi", "theta", "phi")])

    r = LINK_RADIUS
    for k in range(5):
        i = k + 1
        name = geometry.names[k]
        on = rack if k in geometry.rack_links else base
        Lk = s.parameter(f"{prefix}L{i}", geometry.L[k], "m", description=f"length of link {i} ({name})")
        Ck = [s.parameter(f"{prefix}C{i}{ax}", geometry.C[k][j] * (side if ax == "y" else 1), "m",
                          description=f"{'rack' if on is rack else 'chassis'} U-joint {i}, {ax}")
              for j, ax in enumerate("xyz")]
        Wk = [s.parameter(f"{prefix}W{i}{ax}", geometry.W[k][j] * (side if ax == "y" else 1), "m",
                          description=f"carrier S-joint {i}, {ax}")
              for j, ax in enumerate("xyz")]
        mk = s.parameter(f"{prefix}m_link{i}", geometry.link_mass(k), "kg", tunable=tunable_masses,
                         description=f"mass of link {i} ({name})")
        link = s.body(f"{prefix}link{i}", mk, (mk * r**2 / 2, mk * (3 * r**2 + Lk**2) / 12,
                                               mk * (3 * r**2 + Lk**2) / 12), com=(Lk / 2, 0, 0))
        at = [c + o for c, o in zip(Ck, offset)]
        s.universal(f"{prefix}U{i}", on.marker(f"{prefix}C{i}", at), link.origin, axis=X, axis2=Y,
                    coordinates=[f"{prefix}alpha{i}", f"{prefix}beta{i}"],
                    start=[start[f"alpha{i}"], start[f"beta{i}"]])
        s.spherical(f"{prefix}S{i}", carrier.marker(f"W{i}", Wk), link.marker("end", (Lk, 0, 0)))
    return carrier, pose


def build() -> JointSystem:
    s = JointSystem("five_link_joints", description=__doc__.splitlines()[0])
    g = s.parameter("g", GRAVITY, "m/s2", tunable=True, description="gravity along -z")
    f0 = s.parameter("F0", F0, "N", tunable=True, description="constant vertical force on the carrier")
    fs = s.parameter("F_scale", 1.0, "1", tunable=True,
                     description="scale of the piecewise part of the vertical force")
    add_corner(s, s.ground)
    s.gravity = (0, 0, -g)
    pieces = [(amp * fn(t), t < upper if upper is not None else True) for amp, fn, upper in FZ_PIECES]
    s.joint_force("carrier", f0 + fs * sp.Piecewise(*pieces), coordinate="z")
    s.cut = [f"S{i}" for i in range(1, 6)]
    s.independent = ["z"]
    s.dof = 1
    s.newton_blocks = [POSE]
    s.kinematic_drive = {"z": 0.08}
    s.kinematic_drive_period = 3.0
    return s
