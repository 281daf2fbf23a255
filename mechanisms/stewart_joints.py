"""The Gough–Stewart platform of ``stewart`` written as bodies and joints.

Same geometry, masses, loads and start as ``mechanisms/stewart.py``: the
platform on a free joint (``x``, ``y``, ``z``, and ``phi``, ``theta``,
``psi`` with R = Rz(psi)·Ry(theta)·Rx(phi)); per leg k a universal joint at
the base (``alphak`` about X, ``betak`` about the rotated Y), the cylinder,
a prismatic joint along the leg (``sk``, leg length 2 + sk) to the piston,
and a spherical joint from the platform to the piston's end.  The spherical
joints are cut: their three position equations per leg are ``stewart``'s
loop constraints, with the same coordinates.
"""
import sympy as sp

from fmigen.joints import JointSystem, X, Y, Z
from fmigen.model import t

from mechanisms.stewart import HOME, L0, LEGS, leg_guesses


def build() -> JointSystem:
    s = JointSystem("stewart_joints", description=__doc__.splitlines()[0])
    g = s.parameter("g", 0.0, "m/s2", tunable=True, description="gravity along -z (0 in the paper's run)")
    m_p = s.parameter("m_platform", 1.5, "kg", tunable=True)
    I_p = s.parameter("I_platform", 0.08, "kg.m2", tunable=True, description="platform principal inertia")
    m_l = s.parameter("m_segment", 0.1, "kg", tunable=True, description="mass of each leg segment")
    I_l = s.parameter("I_segment", 0.00625, "kg.m2", tunable=True,
                      description="transverse inertia of a leg segment (axial: one tenth)")
    d_l = s.parameter("d_segment", 0.5, "m", description="segment centre from its end joint")
    amp = s.parameter("force_amplitude", 0.1, "N", tunable=True, description="A in ±A sin(2πt/3)")
    inputs = [s.input(f"F{k}", 0.0, "N", description=f"extra force extending leg {k}") for k in range(1, 7)]

    platform = s.body("platform", m_p, (I_p, I_p, I_p))
    names = ["x", "y", "z", "phi", "theta", "psi"]
    s.free("pose", s.ground.origin, platform.origin, coordinates=names, start=list(HOME))
    drive = amp * sp.sin(2 * sp.pi * t / 3)
    for k, ((xo, yo, a, b, c), (alpha0, beta0, s0), F) in enumerate(zip(LEGS, leg_guesses(), inputs), start=1):
        cyl = s.body(f"cylinder{k}", m_l, (I_l, I_l, I_l / 10), com=(0, 0, d_l))
        piston = s.body(f"piston{k}", m_l, (I_l, I_l, I_l / 10), com=(0, 0, -d_l))
        s.universal(f"U{k}", s.ground.marker(f"B{k}", (xo, yo, 0)), cyl.origin, axis=X, axis2=Y,
                    coordinates=[f"alpha{k}", f"beta{k}"], start=[alpha0, beta0])
        s.prismatic(f"leg{k}", cyl.marker("end", (0, 0, L0)), piston.origin, axis=Z,
                    coordinates=[f"s{k}"], start=s0)
        s.spherical(f"S{k}", platform.marker(f"P{k}", (a, b, c)), piston.origin)
        sign = -1 if k % 2 else 1
        s.joint_force(f"leg{k}", sign * drive + F)
    s.gravity = (0, 0, -g)
    s.independent = names
    s.dof = 6
    return s
