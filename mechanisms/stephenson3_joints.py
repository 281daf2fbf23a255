"""The Stephenson III six-bar of ``stephenson3`` written as bodies and joints.

Six links (ground included) and seven revolute joints: ground pivots O2
(hanger O2A, joint ``psi``), O4 (hanger O4B, ``phi``) and O6 (input crank
O6C, ``theta``); the ternary coupler plate ABP carries the joints A (to the
hanger O2A, ``A``), B (to the hanger O4B) and P (to the dyad rod CP); the rod
CP is jointed to the crank at C (``C``).  The geometry, masses, loads and
start are those of ``mechanisms/stephenson3.py`` (its module docstring
discusses the assemblies and the motion).

The joint coordinates are relative angles: ``theta``, ``psi`` and ``phi``
are absolute (their parents are ground), the plate's ``A`` = β − ψ and the
rod's ``C`` = α − θ in ``stephenson3``'s absolute angles.  The front end
cuts B and P (their two in-plane position equations are the four loop
constraints, one 4×4 block as in ``stephenson3``).  The branch hints pick
the hanging assembly (A below O2 and B below O4).
"""
from fmigen.joints import JointSystem

from mechanisms.stephenson3 import (A, B, D4, GUESS, LAB, LC, LR, P_ACROSS, P_ALONG, TAU, THETA0, X6,
                                    Y6)


def build() -> JointSystem:
    s = JointSystem("stephenson3_joints", description=__doc__.splitlines()[0])
    d4 = s.parameter("d4", D4, "m", description="x of the pivot O4")
    lc = s.parameter("lc", LC, "m", description="hanger O2A length")
    lr = s.parameter("lr", LR, "m", description="hanger O4B length")
    lab = s.parameter("lab", LAB, "m", description="plate side AB")
    pu = s.parameter("p", P_ALONG, "m", description="P along AB from A")
    pv = s.parameter("q", P_ACROSS, "m", description="P across AB (left of A->B positive)")
    x6 = s.parameter("x6", X6, "m", description="x of the crank pivot O6")
    y6 = s.parameter("y6", Y6, "m", description="y of the crank pivot O6")
    a = s.parameter("a", A, "m", description="input crank length")
    b = s.parameter("b", B, "m", description="dyad rod length")
    g = s.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    names = ["crank", "rod", "plate", "hanger2", "hanger4"]
    m_crank, m_rod, m_plate, m_h2, m_h4 = [
        s.parameter(f"m_{n}", 1.0, "kg", tunable=True, description=f"mass of the {n}") for n in names]
    tau = s.input("tau", TAU, "N.m", description="torque on the input crank")

    # every link's frame at its first joint, its x axis along the link
    crank = s.body("crank", m_crank, (0, 0, m_crank * a**2 / 12), com=(a / 2, 0))
    rod = s.body("rod", m_rod, (0, 0, m_rod * b**2 / 12), com=(b / 2, 0))
    bp2, pa2 = (lab - pu)**2 + pv**2, pu**2 + pv**2
    plate = s.body("plate", m_plate, (0, 0, m_plate * (lab**2 + bp2 + pa2) / 36),
                   com=((lab + pu) / 3, pv / 3))
    hanger2 = s.body("hanger2", m_h2, (0, 0, m_h2 * lc**2 / 12), com=(lc / 2, 0))
    hanger4 = s.body("hanger4", m_h4, (0, 0, m_h4 * lr**2 / 12), com=(lr / 2, 0))

    s.revolute("theta", s.ground.marker("O6", (x6, y6)), crank.origin, start=THETA0)
    s.revolute("psi", s.ground.origin, hanger2.origin, start=GUESS["psi"])
    s.revolute("phi", s.ground.marker("O4", (d4, 0)), hanger4.origin, start=GUESS["phi"])
    s.revolute("A", hanger2.marker("A", (lc, 0)), plate.origin, start=GUESS["beta"] - GUESS["psi"])
    s.revolute("B", plate.marker("B", (lab, 0)), hanger4.marker("B", (lr, 0)))
    s.revolute("C", crank.marker("C", (a, 0)), rod.origin, start=GUESS["alpha"] - THETA0)
    s.revolute("P", rod.marker("P", (b, 0)), plate.marker("P", (pu, pv)))
    s.branch_hint(hanger2.markers["A"], s.ground.origin, (0, 1, 0), -1)
    s.branch_hint(hanger4.markers["B"], s.ground.markers["O4"], (0, 1, 0), -1)

    s.gravity = (0, -g, 0)
    s.joint_force("theta", tau)
    s.independent = ["theta"]
    s.dof = 1
    # A better conditioned lex order than the default (in the angle sums
    # psi + A and theta + C, ``polynomialize.angle_plan``): c_phi first,
    # round-off amplified 13-fold on the workspace sweep against 721 for the
    # default order (``fmigen check`` reports the amplification).  The build
    # computes the order it is given and searches no other.
    s.groebner_order = ["c_phi", "s_phi", "c_psi_A", "s_psi_A", "c_theta_C", "s_theta_C", "s_psi", "c_psi"]
    return s
