"""Stephenson III six-bar driven at the dyad's crank: one 4×4 loop block.

Topology (Stephenson chain: the two ternary links, ground and the coupler
plate, are not jointed to each other).  A four-bar "swing" hangs from the
ground pivots O2 = (0, 0) and O4 = (d4, 0): hanger O2A (``psi``, length lc),
coupler plate ABP (``beta`` = angle of AB, |AB| = lab, a ternary link) and
hanger O4B (``phi``, length lr).  A dyad drives the plate's third joint P:
the input crank O6C about O6 = (x6, y6) (``theta``, length a, the independent
coordinate) and the rod CP (``alpha``, length b).  The input crank lies in
the five-bar loop O6-C-P(A)-O2, the hangers in the four-bar loop: the
Stephenson inversion with a ternary ground driven at the dyad's crank, called
Stephenson III here (textbooks number the Stephenson inversions
differently).

Coordinates are absolute angles from the x axis.  With θ given, the swing
loop (2 equations in β, ψ, φ) and the dyad loop (2 equations in α, β, ψ) both
have more unknowns than equations: the four constraints form ONE 4×4 block in
(α, β, ψ, φ) — P has to lie on the swing's coupler curve (a sextic) and on
the circle of radius b about C, up to 6 assemblies.

Geometry (m): d4 = 2, lc = 3, lr = 3.2, lab = 2.3, P at p = 1.1 along AB and
q = −0.6 across it (below AB when β ≈ 0), O6 = (−3, −3.6), a = 0.5, b = 4.1.
The swing hangs (ψ, φ ≈ −π/2) and the dyad pushes P sideways like the rod of a
slider-crank with b / a = 8.2, so the crank turns fully; the swing rocks
through ψ ∈ [−1.717, −1.390] rad while β stays within [−0.100, −0.060] rad.
(Swing loop: s + l = 2 + 3.2 = 5.2 < p + q = 3 + 2.3 = 5.3, Grashof, kept away
from the change-point case lab = 2.2.)  Φ_d is singular only when the lines
O2A, O4B and CP meet in one point (the plate's instantaneous centre lies on
CP); they never do: Newton along a full crank turn (20 000 steps) gives
det Φ_d / (b·lab·lc·lr) ∈ [−1.023, −0.951] and a smallest singular value of
Φ_d ≥ 1.84, and the assembly closes after one turn (the motion is 2π-periodic
in θ).

The default lex order gives a sextic in s_phi followed by 7 linear steps
(shape form) whose leading coefficients are polynomials in the abstracted
knowns (the centred parts of 3 − cos θ / 2 and 18/5 − sin θ / 2); over a
full turn on the hanging branch none changes sign.  But φ passes −π/2,
where sin φ barely moves, so every later step loses digits; the order
recorded below as ``groebner_order`` solves c_psi first and keeps the
constraint residual near 4e-15 along the run (8e-13 with the default
order).

Every binary link is a uniform bar of 1 kg (centre of mass at mid-link,
I = m l²/12); the plate ABP is a uniform triangular plate of 1 kg (centre of
mass at the centroid, I = m (|AB|² + |BP|² + |PA|²) / 36).  Gravity 9.8 m/s²
along −y; the crank is driven by the input torque ``tau`` (default 4 N·m).

Start: θ = 0.5 rad at rest; the other angles are guesses for the hanging
assembly, assembled exactly by the build.  ``fmigen assemble stephenson3``
lists 6 assemblies at θ = 0.5 (4 real): the hanging one (α, β, ψ, φ) ≈
(−0.0660, −0.0627, −1.4136, −1.3294); each of the other three real ones
differs from it by more than 2.3 rad (mod 2π) in some angle.  With ``tau``
= 4 N·m the DAE reference turns the crank once by t ≈ 1.4 s and 2.19 times in
2 s (12.4 rad/s at 2 s); 3 N·m would need ~2.9 s for the first turn, and
2 N·m does not get over the top.
"""
from sympy import cos, sin

from fmigen.model import Mechanism

D4, LC, LR, LAB, P_ALONG, P_ACROSS = 2.0, 3.0, 3.2, 2.3, 1.1, -0.6
X6, Y6, A, B = -3.0, -3.6, 0.5, 4.1
THETA0 = 0.5
#: hanging assembly at θ = THETA0 (Newton, only guesses for the build)
GUESS = {"alpha": -0.066023, "beta": -0.062725, "psi": -1.413606, "phi": -1.329361}
TAU = 4.0


def build() -> Mechanism:
    m = Mechanism("stephenson3", description=__doc__.splitlines()[0])
    theta = m.coordinate("theta", THETA0, "rad", description="input crank O6C (dyad crank)")
    alpha = m.coordinate("alpha", GUESS["alpha"], "rad", description="dyad rod CP")
    beta = m.coordinate("beta", GUESS["beta"], "rad", description="coupler plate ABP (direction AB)")
    psi = m.coordinate("psi", GUESS["psi"], "rad", description="hanger O2A")
    phi = m.coordinate("phi", GUESS["phi"], "rad", description="hanger O4B")

    d4 = m.parameter("d4", D4, "m", description="x of the pivot O4")
    lc = m.parameter("lc", LC, "m", description="hanger O2A length")
    lr = m.parameter("lr", LR, "m", description="hanger O4B length")
    lab = m.parameter("lab", LAB, "m", description="plate side AB")
    pu = m.parameter("p", P_ALONG, "m", description="P along AB from A")
    pv = m.parameter("q", P_ACROSS, "m", description="P across AB (left of A->B positive)")
    x6 = m.parameter("x6", X6, "m", description="x of the crank pivot O6")
    y6 = m.parameter("y6", Y6, "m", description="y of the crank pivot O6")
    a = m.parameter("a", A, "m", description="input crank length")
    b = m.parameter("b", B, "m", description="dyad rod length")
    g = m.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    names = ["crank", "rod", "plate", "hanger2", "hanger4"]
    m_crank, m_rod, m_plate, m_h2, m_h4 = [
        m.parameter(f"m_{n}", 1.0, "kg", tunable=True, description=f"mass of the {n}") for n in names]
    tau = m.input("tau", TAU, "N.m", description="torque on the input crank")

    cx, cy = x6 + a * cos(theta), y6 + a * sin(theta)              # C
    ax_, ay_ = lc * cos(psi), lc * sin(psi)                        # A
    bx, by = ax_ + lab * cos(beta), ay_ + lab * sin(beta)          # B
    px = ax_ + pu * cos(beta) - pv * sin(beta)                     # P
    py = ay_ + pu * sin(beta) + pv * cos(beta)

    m.planar_body("crank", m_crank, m_crank * a**2 / 12,
                  (x6 + a / 2 * cos(theta), y6 + a / 2 * sin(theta)), theta)
    m.planar_body("rod", m_rod, m_rod * b**2 / 12,
                  (cx + b / 2 * cos(alpha), cy + b / 2 * sin(alpha)), alpha)
    bp2 = (lab - pu)**2 + pv**2
    pa2 = pu**2 + pv**2
    m.planar_body("plate", m_plate, m_plate * (lab**2 + bp2 + pa2) / 36,
                  ((ax_ + bx + px) / 3, (ay_ + by + py) / 3), beta)
    m.planar_body("hanger2", m_h2, m_h2 * lc**2 / 12, (ax_ / 2, ay_ / 2), psi)
    m.planar_body("hanger4", m_h4, m_h4 * lr**2 / 12,
                  (d4 + lr / 2 * cos(phi), lr / 2 * sin(phi)), phi)
    m.gravity = (0, -g, 0)

    # swing loop O2-A-B-O4 and dyad loop O2-A-P-C-O6
    m.constraint("swing_x", ax_ + lab * cos(beta) - d4 - lr * cos(phi))
    m.constraint("swing_y", ay_ + lab * sin(beta) - lr * sin(phi))
    m.constraint("dyad_x", px - cx - b * cos(alpha))
    m.constraint("dyad_y", py - cy - b * sin(alpha))
    m.generalized_force("theta", tau)
    m.independent = ["theta"]
    m.dof = 1
    # The lex order that solves c_psi first: the constraint residual along a
    # validate run is 4e-15 with it (8e-13 with the default order); its
    # round-off amplification on the workspace sweep is 634 eps against
    # 3.2e3 for the default (tests/test_exact_kinematics.py).  The build
    # computes the order it is given and searches no other.
    m.groebner_order = ["c_alpha", "s_alpha", "c_beta", "s_beta", "c_phi", "s_phi", "s_psi", "c_psi"]
    return m
