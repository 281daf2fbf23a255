"""Five-link rear suspension of paper 000 (section 4.2), one degree of freedom.

Coordinates follow the paper: the wheel-carrier centre ``x, y, z`` (world) and
its 3-2-1 Euler angles ``phi`` (yaw, about Z), ``theta`` (pitch, about the
rotated Y') and ``psi`` (roll, about X''), i.e. R = Rz(φ) Ry(θ) Rx(ψ) as in
paper eq. 14; and per link k the chassis U-joint angles ``alpha_k`` (about the
global X) and ``beta_k`` (about the rotated Y'), the link lying along the
joint's X'' axis:

    u_k = Rx(α_k) Ry(β_k) e_x = (cos β_k, sin α_k sin β_k, −cos α_k sin β_k).

16 coordinates, 15 constraints, independent coordinate ``z`` (carrier height).

Geometry
--------
The source geometry (Knapczyk's "S1", a 1980s Mercedes-Benz rear axle) is not
in the paper, so this is our own plausible Mercedes-style (W201-like) left rear
wheel: X forward, Y to the left (outboard), Z up, origin at the carrier centre
in the design position z = 0.  W_k is the S-joint on the carrier in the carrier
frame, C_k the U-joint on the chassis (world), L_k the link length [m]:

    ===  ==============  ===========================  ===============================  ========
     k   link            W_k (carrier frame)          C_k (chassis, world)             L_k
    ===  ==============  ===========================  ===============================  ========
     1   camber strut    (-0.030, -0.040,  0.130)     (-0.045010, -0.563361, 0.117992)  0.523714
     2   traction strut  ( 0.060, -0.040,  0.110)     ( 0.455,    -0.351,    0.107)     0.502747
     3   thrust strut    ( 0.080, -0.050, -0.110)     ( 0.473,    -0.420,   -0.087)     0.540257
     4   spring link     (-0.060, -0.050, -0.120)     (-0.137,    -0.593,   -0.089)     0.549308
     5   track rod       (-0.140, -0.060, -0.010)     (-0.210,    -0.599,    0.002)     0.543659
    ===  ==============  ===========================  ===============================  ========

Links 1–2 are the upper links, 3–4 the lower ones, 5 the toe (track) rod.
The chassis points were fitted (scipy least squares, then rounded to 1 mm) for
a small bump steer (|toe| < 0.01° over ±80 mm), a camber gain of about −1.5°
per 80 mm of bump, a few mm of track and wheelbase change, links of
0.50–0.55 m, and the static balance below.  L_k = |W_k − C_k| rounded to 1 µm,
so at z = 0 the carrier is in its design pose to about 1e-5 (m, rad).

Static balance: there is no spring, so the constant part F0 = 183.6 N of the
paper's vertical force must carry the suspension's weight.  The camber strut
was lengthened along its own axis (C_1 to 1 µm, L_1 to 1 µm) until the
generalized gravity force on z at z = 0 is −183.600008 N: the residual
imbalance F0 + Q_g(0) is −7.8e-6 N (downwards).  Q_g(z) is −183.51 N at
z = −0.05 and −183.67 N at z = +0.05, a weak restoring stiffness of about
1.6 N/m, so the carrier does not run away by itself; but with no spring the
impulse of the piecewise force moves it a lot (z from −0.29 to +0.08 m in
6 s, where F0 + Q_g = +0.92 N at z = −0.29).

Bodies (density 8000 kg/m³): links are solid cylinders of radius 0.015 m with
their centre at mid-link, central inertia m r²/2 about the link axis and
m (3r² + L²)/12 transverse; the wheel carrier is a cylinder of radius 0.15 m
and thickness 0.02 m with its axis along the carrier y axis (11.31 kg).

Loads: gravity g = 9.81 m/s² along −Z (tunable ``g``) and the paper's vertical
force on the carrier centre, whose generalized force on ``z`` is exactly F_z:

    F_z(t) = F0 + F_scale * (1.84 sin πt            t < 1
                             −2.38 sin(π(t−1)/3)    1 ≤ t < 4
                              4.62 sin(πt/2)        4 ≤ t < 5
                             −4.62 cos πt           5 ≤ t < 5.5
                              6.50 sin 2πt          t ≥ 5.5)

with tunable F0 = 183.6 N and F_scale = 1.

Constraints, per link k, with X_k = (x, y, z) + R W_k − C_k:

    dist_k:  X_k · X_k − L_k² = 0                (paper eq. 15: carrier pose only)
    dir_ka:  L_k cos β_k − X_k,x = 0
    dir_kb:  u_k,y X_k,z − u_k,z X_k,y = 0       (X_k parallel to u_k in the y-z plane)

The three together are equivalent to X_k = L_k u_k on the branch sin β_k ≠ 0
continued from the start (the cross product alone also admits X_k = −L_k u_k
in the y-z components, the U-joint's α + π image); the distance equations form
one 5×5 block in (x, y, φ, θ, ψ) solved by Newton, each (α_k, β_k) pair its
own triangular block.  The start assembles the pose at z = 0 from the design
pose and picks sin β_k > 0.
"""
import math

import numpy as np
import sympy as sp
from sympy import cos, sin

from fmigen.model import Mechanism, t

from mechanisms.corner_geometry import DENSITY, LINK_RADIUS, LinkCorner, rotation

NAMES = ["camber strut", "traction strut", "thrust strut", "spring link", "track rod"]
#: S-joints on the carrier, carrier frame [m]
W = [(-0.030, -0.040, 0.130),
     (0.060, -0.040, 0.110),
     (0.080, -0.050, -0.110),
     (-0.060, -0.050, -0.120),
     (-0.140, -0.060, -0.010)]
#: U-joints on the chassis, world [m]
C = [(-0.045010, -0.563361, 0.117992),
     (0.455, -0.351, 0.107),
     (0.473, -0.420, -0.087),
     (-0.137, -0.593, -0.089),
     (-0.210, -0.599, 0.002)]
#: link lengths [m]
L = [0.523714, 0.502747, 0.540257, 0.549308, 0.543659]

CARRIER_RADIUS = 0.15     # m
CARRIER_THICKNESS = 0.02  # m
GRAVITY = 9.81            # m/s^2
F0 = 183.6                # N
PI = sp.pi
#: (amplitude [N], expression in t, upper end of its interval) of the piecewise term
FZ_PIECES = [(1.84, lambda tt: sp.sin(PI * tt), 1),
             (-2.38, lambda tt: sp.sin(PI * (tt - 1) / 3), 4),
             (4.62, lambda tt: sp.sin(PI * tt / 2), 5),
             (-4.62, lambda tt: sp.cos(PI * tt), sp.Rational(11, 2)),
             (6.50, lambda tt: sp.sin(2 * PI * tt), None)]

POSE = ["x", "y", "phi", "theta", "psi"]


# --- numpy geometry (start guesses, scripts and tests) ------------------------

FIVE_LINK = LinkCorner(tuple(NAMES), tuple(W), tuple(C), tuple(L))
link_vectors = FIVE_LINK.link_vectors
distance_residuals = FIVE_LINK.distance_residuals
solve_pose = FIVE_LINK.solve_pose
joint_angles = FIVE_LINK.joint_angles
start_configuration = FIVE_LINK.start_configuration
link_mass = FIVE_LINK.link_mass


def wheel_angles(phi, theta, psi):
    """(toe, camber, caster) in rad from the carrier rotation R = Rz(φ)Ry(θ)Rx(ψ).

    With a = R e_y the wheel's spin axis and c = R e_z the carrier's up axis
    (left wheel, Y outboard):

    * toe     δ = atan2(a_x, a_y): the spin axis turned about Z; positive is
      toe-in (front of the wheel towards the vehicle centre), ≈ −φ;
    * camber  γ = −asin(a_z): the spin axis tilted out of the horizontal;
      positive when the top of the wheel leans outboard, ≈ −ψ;
    * caster  τ = atan2(−c_x, c_z): the carrier's up axis tilted in the side
      view (X-Z plane); positive when its top leans rearward, ≈ −θ.
    """
    R = rotation(phi, theta, psi)
    a, c = R[:, 1], R[:, 2]
    return (math.atan2(a[0], a[1]), -math.asin(max(-1.0, min(1.0, a[2]))), math.atan2(-c[0], c[2]))



def carrier_mass():
    return DENSITY * math.pi * CARRIER_RADIUS**2 * CARRIER_THICKNESS


# --- the mechanism ------------------------------------------------------------

def build() -> Mechanism:
    m = Mechanism("five_link", description=__doc__.splitlines()[0])
    start = start_configuration(0.0)
    x = m.coordinate("x", start["x"], "m", description="carrier centre, longitudinal")
    y = m.coordinate("y", start["y"], "m", description="carrier centre, lateral")
    z = m.coordinate("z", 0.0, "m", description="carrier centre, vertical")
    phi = m.coordinate("phi", start["phi"], "rad", description="carrier yaw (3-2-1 Euler, about Z)")
    theta = m.coordinate("theta", start["theta"], "rad", description="carrier pitch (about Y')")
    psi = m.coordinate("psi", start["psi"], "rad", description="carrier roll (about X'')")
    alpha = [m.coordinate(f"alpha{k}", start[f"alpha{k}"], "rad",
                          description=f"U-joint of link {k} ({NAMES[k - 1]}) about X") for k in range(1, 6)]
    beta = [m.coordinate(f"beta{k}", start[f"beta{k}"], "rad",
                         description=f"U-joint of link {k} ({NAMES[k - 1]}) about Y'") for k in range(1, 6)]

    g = m.parameter("g", GRAVITY, "m/s2", tunable=True, description="gravity along -z")
    f0 = m.parameter("F0", F0, "N", tunable=True, description="constant vertical force on the carrier")
    fs = m.parameter("F_scale", 1.0, "1", tunable=True,
                     description="scale of the piecewise part of the vertical force")
    mc = m.parameter("m_carrier", carrier_mass(), "kg", tunable=True, description="wheel-carrier mass")
    R0, T0 = CARRIER_RADIUS, CARRIER_THICKNESS
    carrier = m.body_fixed_frame("carrier", (phi, theta, psi), "321")
    m.body("carrier", mc, (mc * (3 * R0**2 + T0**2) / 12, mc * R0**2 / 2, mc * (3 * R0**2 + T0**2) / 12),
           (x, y, z), carrier)

    cf, sf, ct, st, cp, sp_ = cos(phi), sin(phi), cos(theta), sin(theta), cos(psi), sin(psi)
    R = sp.Matrix([[cf * ct, cf * st * sp_ - sf * cp, cf * st * cp + sf * sp_],
                   [sf * ct, sf * st * sp_ + cf * cp, sf * st * cp - cf * sp_],
                   [-st, ct * sp_, ct * cp]])
    r = LINK_RADIUS
    for k in range(5):
        i = k + 1
        a, b = alpha[k], beta[k]
        Lk = m.parameter(f"L{i}", L[k], "m", description=f"length of link {i} ({NAMES[k]})")
        Ck = sp.Matrix([m.parameter(f"C{i}{ax}", C[k][j], "m", description=f"chassis U-joint {i}, {ax}")
                        for j, ax in enumerate("xyz")])
        Wk = sp.Matrix([m.parameter(f"W{i}{ax}", W[k][j], "m", description=f"carrier S-joint {i}, {ax}")
                        for j, ax in enumerate("xyz")])
        mk = m.parameter(f"m_link{i}", link_mass(k), "kg", tunable=True,
                         description=f"mass of link {i} ({NAMES[k]})")
        u = sp.Matrix([cos(b), sin(a) * sin(b), -cos(a) * sin(b)])
        frame = m.body_fixed_frame(f"link{i}", (a, b, 0), "123")
        com = Ck + Lk / 2 * u
        m.body(f"link{i}", mk, (mk * r**2 / 2, mk * (3 * r**2 + Lk**2) / 12, mk * (3 * r**2 + Lk**2) / 12),
               tuple(com), frame)
        X = sp.Matrix([x, y, z]) + R * Wk - Ck
        m.constraint(f"dist{i}", X.dot(X) - Lk**2)
        m.constraint(f"dir{i}a", Lk * cos(b) - X[0])
        m.constraint(f"dir{i}b", u[1] * X[2] - u[2] * X[1])

    m.gravity = (0, 0, -g)
    pieces = []
    for amp, fn, upper in FZ_PIECES:
        pieces.append((amp * fn(t), t < upper if upper is not None else True))
    m.generalized_force("z", f0 + fs * sp.Piecewise(*pieces))
    m.independent = ["z"]
    m.dof = 1
    # paper 000's kinematic simulation (Table 3, Fig. 5a): the carrier height
    # through one sine period over the documented ±80 mm range in the 3 s run
    m.kinematic_drive = {"z": 0.08}
    m.kinematic_drive_period = 3.0
    m.newton_blocks = [POSE]
    # No Gröbner order is chosen here: the default (c ≻ s per angle) has
    # representation singularities (a square-root branch meeting its mirror
    # where a link passes through the horizontal), and the build's workspace
    # sweep finds them and adds the s ≻ c sequences that cover them; every
    # run-time solve takes the root nearest its prediction and is verified
    # (``fmigen check five_link``).
    return m
