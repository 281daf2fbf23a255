"""Gough–Stewart platform with Tsai's geometry (papers 000 and 003).

Independent: platform centre ``x``, ``y``, ``z`` and 3-2-1 Euler angles
``phi``, ``theta``, ``psi`` (R = Rz(psi)·Ry(theta)·Rx(phi)).  Dependent, per
leg k = 1..6: the U-joint angles ``alphak`` (about the base X axis) and
``betak`` (about the rotated Y′ axis), and the prismatic extension ``sk``; the
leg length is L_k = 2 + s_k and the leg runs along the U-joint frame's z axis,
u = Rx(α)·Ry(β)·ẑ.  Loop k closes B_k + L_k u_k = P + R a_k (3 equations).

Masses (paper 003): platform 1.5 kg, I = diag(0.08, 0.08, 0.08) kg·m²; each
leg has two segments of 0.1 kg (cylinder base side and piston platform side),
each with its centre 0.5 m from its end joint and central inertia
diag(t, t, t/10), t = 0.00625 kg·m², the small value about the leg axis.

Actuator forces on the prismatic joints (paper 000): F1 = F3 = F5 =
−A sin(2πt/3), F2 = F4 = F6 = +A sin(2πt/3), A = ``force_amplitude`` = 0.1 N,
plus the inputs ``F1..F6`` (default 0) so a HIL rig can drive the legs.  A
positive force extends the leg.  Gravity ``g`` is 0 by default, as in the
paper's run (set it to 9.81 to load the platform).  Start at the home pose
(−1.5, 0, 1.5, 0, 0, 0) at rest.
"""
import math

import numpy as np
import sympy as sp
from sympy import cos, sin

from fmigen.model import Mechanism, t

#: (x_o, y_o, a, b, c) per leg: base U-joint (x_o, y_o, 0), platform S-joint
#: (a, b, c) in the platform frame
LEGS = [(-2.120, 1.374, 0.170, 0.595, -0.4),
        (-2.380, 1.224, -0.6, 0.15, -0.4),
        (-2.380, -1.224, -0.6, -0.15, -0.4),
        (-2.120, -1.374, 0.170, -0.595, -0.4),
        (0.0, -0.15, 0.430, -0.445, -0.4),
        (0.0, 0.15, 0.430, 0.445, -0.4)]
HOME = (-1.5, 0.0, 1.5, 0.0, 0.0, 0.0)
L0 = 2.0


def leg_guesses(pose=HOME):
    """(alpha, beta, s) of every leg at a pose, by plain geometry."""
    x, y, z, phi, theta, psi = pose
    cz, sz, cy, sy, cx, sx = math.cos(psi), math.sin(psi), math.cos(theta), math.sin(theta), math.cos(phi), math.sin(phi)
    R = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]]) @ np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]]) \
        @ np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    out = []
    for xo, yo, a, b, c in LEGS:
        X = np.array([x, y, z]) + R @ np.array([a, b, c]) - np.array([xo, yo, 0.0])
        L = np.linalg.norm(X)
        out.append((math.atan2(-X[1], X[2]), math.asin(X[0] / L), L - L0))
    return out


def build() -> Mechanism:
    m = Mechanism("stewart", description=__doc__.splitlines()[0])
    names = ["x", "y", "z", "phi", "theta", "psi"]
    units = ["m", "m", "m", "rad", "rad", "rad"]
    x, y, z, phi, theta, psi = [m.coordinate(n, v, u, description="platform pose")
                                for n, v, u in zip(names, HOME, units)]
    legs = []
    for k, (alpha0, beta0, s0) in enumerate(leg_guesses(), start=1):
        legs.append((m.coordinate(f"alpha{k}", alpha0, "rad", description=f"leg {k} U-joint angle about X"),
                     m.coordinate(f"beta{k}", beta0, "rad", description=f"leg {k} U-joint angle about Y'"),
                     m.coordinate(f"s{k}", s0, "m", description=f"leg {k} extension (length 2 + s)")))

    g = m.parameter("g", 0.0, "m/s2", tunable=True, description="gravity along -z (0 in the paper's run)")
    m_p = m.parameter("m_platform", 1.5, "kg", tunable=True)
    I_p = m.parameter("I_platform", 0.08, "kg.m2", tunable=True, description="platform principal inertia")
    m_l = m.parameter("m_segment", 0.1, "kg", tunable=True, description="mass of each leg segment")
    I_l = m.parameter("I_segment", 0.00625, "kg.m2", tunable=True,
                      description="transverse inertia of a leg segment (axial: one tenth)")
    d_l = m.parameter("d_segment", 0.5, "m", description="segment centre from its end joint")
    amp = m.parameter("force_amplitude", 0.1, "N", tunable=True, description="A in ±A sin(2πt/3)")
    inputs = [m.input(f"F{k}", 0.0, "N", description=f"extra force extending leg {k}") for k in range(1, 7)]

    platform = m.body_fixed_frame("platform", (psi, theta, phi), "321")
    P = sp.Matrix([x, y, z])
    m.body("platform", m_p, (I_p, I_p, I_p), tuple(P), platform)
    R = platform.dcm(m.world).T  # platform -> world
    drive = amp * sp.sin(2 * sp.pi * t / 3)
    for k, ((xo, yo, a, b, c), (alpha, beta, s), F) in enumerate(zip(LEGS, legs, inputs), start=1):
        leg = m.body_fixed_frame(f"leg{k}", (alpha, beta, 0), "123")
        u = leg.dcm(m.world).T * sp.Matrix([0, 0, 1])
        base = sp.Matrix([xo, yo, 0])
        length = L0 + s
        m.body(f"cylinder{k}", m_l, (I_l, I_l, I_l / 10), tuple(base + d_l * u), leg)
        m.body(f"piston{k}", m_l, (I_l, I_l, I_l / 10), tuple(base + (length - d_l) * u), leg)
        closure = base + length * u - (P + R * sp.Matrix([a, b, c]))
        for comp, e in zip("xyz", closure):
            m.constraint(f"leg{k}_{comp}", e)
        sign = -1 if k % 2 else 1
        m.generalized_force(f"s{k}", sign * drive + F)
    m.gravity = (0, 0, -g)
    m.independent = names
    m.dof = 6
    return m
