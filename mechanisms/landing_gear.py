"""Aircraft nose landing gear of paper 000 (Uchida & McPhee, eqs. 16–19),
kinematic form: the piston length ``p_BC`` drives the main strut ``theta_A``,
the piston angle ``theta_B`` (relative to the main strut), the drag strut
``theta_D`` (measured clockwise) and the lower link ``theta_F`` (relative to
the main strut).

The four constraints are the paper's polynomials with its exact rational
coefficients (lengths in the paper's unit, taken here as cm).  Reading them as
vector loops with A at the origin and D = (−231, −62):

* upper loop A→B→C→D→A: B = R(θA)(−42, −62), C = B + R(θA+θB)(−p_BC, 0),
  C = D + R(−θD)(−6.08, −16.97);
* lower loop A→F→E→D→A: F = R(θA)(−25, 212), E = F + R(θA+θF)(−178.4, 0),
  E = D + R(−θD)(164.4, 0).

Eqs. (16) and (18) are the x components, (17) and (19) minus the y components.

This is the kinematic FMU: ``p_BC`` and ``der(p_BC)`` are inputs, and each
step re-solves the angles (and their rates) from the triangular sequence
(sextic in s_theta_B, then seven linear steps).  The dynamic variant with
assumed masses is ``landing_gear_dynamic``.
"""
import sympy as sp
from sympy import cos, sin

from fmigen.model import Mechanism

#: the start piston length and the branch of Fig. 7 (drag strut clockwise)
P_START = 200.0


def constraints(thA, thB, thD, thF, p):
    sA, cA, sB, cB = sin(thA), cos(thA), sin(thB), cos(thB)
    sD, cD, sF, cF = sin(thD), cos(thD), sin(thF), cos(thF)
    R = sp.Rational
    return {
        "upper_x": sA * sB * p - cA * cB * p + 62 * sA - 42 * cA + R(1697, 100) * sD + R(152, 25) * cD + 231,
        "upper_y": sA * cB * p + cA * sB * p + 42 * sA + 62 * cA + R(152, 25) * sD - R(1697, 100) * cD - 62,
        "lower_x": R(892, 5) * sA * sF - R(892, 5) * cA * cF - 212 * sA - 25 * cA - R(822, 5) * cD + 231,
        "lower_y": R(892, 5) * sA * cF + R(892, 5) * cA * sF + 25 * sA - 212 * cA - R(822, 5) * sD - 62,
    }


def add_coordinates(m, guesses, unit="cm"):
    thA = m.coordinate("theta_A", guesses["theta_A"], "rad", description="main strut angle")
    thB = m.coordinate("theta_B", guesses["theta_B"], "rad", description="piston angle relative to the main strut")
    thD = m.coordinate("theta_D", guesses["theta_D"], "rad", description="drag strut angle (clockwise)")
    thF = m.coordinate("theta_F", guesses["theta_F"], "rad", description="lower link angle relative to the main strut")
    p = m.coordinate("p_BC", P_START, unit, description="piston length BC")
    return thA, thB, thD, thF, p


#: assembly at p_BC = 200 on the branch of Fig. 7 (guesses; the build
#: assembles them exactly from the sextic)
GUESSES = {"theta_A": 0.219131, "theta_B": -0.169168, "theta_D": -0.552547, "theta_F": 1.236065}


def build() -> Mechanism:
    m = Mechanism("landing_gear", description=__doc__.splitlines()[0])
    thA, thB, thD, thF, p = add_coordinates(m, GUESSES)
    for name, expr in constraints(thA, thB, thD, thF, p).items():
        m.constraint(name, expr)
    m.kinematic = True
    m.independent = ["p_BC"]
    m.dof = 1
    m.groebner_order = ["c_theta_F", "s_theta_F", "c_theta_A", "s_theta_A", "c_theta_D", "s_theta_D",
                        "c_theta_B", "s_theta_B", "p_BC"]
    return m
