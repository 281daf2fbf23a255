"""Aircraft nose landing gear of paper 000, dynamic variant with assumed masses.

Same constraints as ``landing_gear`` (paper 000 eqs. 16–19, the paper's exact
coefficients) rewritten in metres: every length is the paper's value / 100
(read as cm), and ``p_BC`` is in m.  Joint positions (A at the origin,
R(·) a planar rotation, see ``landing_gear`` for the derivation):

    B = R(θA)(−0.42, −0.62)     F = R(θA)(−0.25, 2.12)      main strut BAF
    D = (−2.31, −0.62)           C = D + R(−θD)(−0.0608, −0.1697)
    E = D + R(−θD)(1.644, 0)     drag strut CDE about D
    E = F + R(θA+θF)(−1.784, 0)  lower link FE
    C = B + R(θA+θB)(−p_BC, 0)   hydraulic piston BC

Assumed masses (not in the paper): main strut 60 kg, drag strut 20 kg, lower
link 10 kg, each a uniform bar between its end joints (centre at the
midpoint of its joints, I = m L²/12); the piston is massless and carries the
actuator force ``piston_force`` (input, N, positive extends) plus a constant
``holding_force`` (tunable, N).  Gravity ``g`` along −y (tunable).  Start at
p_BC = 2.0 m on the branch of Fig. 7, at rest.
"""
import sympy as sp
from sympy import cos, sin

from fmigen.model import Mechanism
from mechanisms.landing_gear import GUESSES, constraints

P_START = 2.0


def rot(angle, x, y):
    return (cos(angle) * x - sin(angle) * y, sin(angle) * x + cos(angle) * y)


def build() -> Mechanism:
    m = Mechanism("landing_gear_dynamic", description=__doc__.splitlines()[0])
    thA = m.coordinate("theta_A", GUESSES["theta_A"], "rad", description="main strut angle")
    thB = m.coordinate("theta_B", GUESSES["theta_B"], "rad", description="piston angle relative to the main strut")
    thD = m.coordinate("theta_D", GUESSES["theta_D"], "rad", description="drag strut angle (clockwise)")
    thF = m.coordinate("theta_F", GUESSES["theta_F"], "rad", description="lower link angle relative to the main strut")
    p = m.coordinate("p_BC", P_START, "m", description="piston length BC")
    for name, expr in constraints(thA, thB, thD, thF, 100 * p).items():
        m.constraint(name, sp.expand(expr / 100))

    g = m.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    m_main = m.parameter("m_main_strut", 60.0, "kg", tunable=True, description="assumed")
    m_drag = m.parameter("m_drag_strut", 20.0, "kg", tunable=True, description="assumed")
    m_link = m.parameter("m_lower_link", 10.0, "kg", tunable=True, description="assumed")
    hold = m.parameter("holding_force", 0.0, "N", tunable=True, description="constant piston force")
    force = m.input("piston_force", 0.0, "N", description="actuator force along BC, positive extends")

    R = sp.Rational
    B = rot(thA, R(-42, 100), R(-62, 100))
    F = rot(thA, R(-25, 100), R(212, 100))
    D = (R(-231, 100), R(-62, 100))
    C = tuple(d + c for d, c in zip(D, rot(-thD, R(-608, 10000), R(-1697, 10000))))
    E = tuple(d + e for d, e in zip(D, rot(-thD, R(1644, 1000), 0)))

    def mid(P, Q):
        return ((P[0] + Q[0]) / 2, (P[1] + Q[1]) / 2)

    def length(dx, dy):
        return sp.sqrt(sp.Rational(dx) ** 2 + sp.Rational(dy) ** 2)

    L_main = length(R(17, 100), R(274, 100))
    L_drag = length(R(17048, 10000), R(1697, 10000))
    L_link = R(1784, 1000)
    m.planar_body("main_strut", m_main, m_main * L_main**2 / 12, mid(B, F), thA)
    m.planar_body("drag_strut", m_drag, m_drag * L_drag**2 / 12, mid(C, E), -thD)
    link_mid = tuple(f + d for f, d in zip(F, rot(thA + thF, -L_link / 2, 0)))
    m.planar_body("lower_link", m_link, m_link * L_link**2 / 12, link_mid, thA + thF)
    m.gravity = (0, -g, 0)
    m.generalized_force("p_BC", hold + force)
    m.independent = ["p_BC"]
    m.dof = 1
    m.groebner_order = ["c_theta_F", "s_theta_F", "c_theta_A", "s_theta_A", "c_theta_D", "s_theta_D",
                        "c_theta_B", "s_theta_B", "p_BC"]
    return m
