"""Eight-link 1-DOF planar mechanism without a four-link loop (paper 001, example C).

Link 5 is the ground, with pivots O = (0, 0) and C = (r5, 0).  Coordinates are
absolute link angles; the input is ``theta3`` (independent coordinate, link 3
pivoted at O), the output is ``theta1`` (link 1 pivoted at C).  Ternary links
carry a second side at a fixed offset angle (α on link 3, β on link 1, γ on
link 4, δ on link 2; all π/2 in the paper's data).  The three loops (paper
eqs. 27–29, re-derived):

    OABC:    r3 e(θ3) + r6 e(θ6)                 = r5 + r1a e(θ1+β) + r2a e(θ2+δ)
    OEFGCD:  r3a e(θ3+α) + r4 e(θ4) + r8 e(θ8)   = r5 + r1a e(θ1+β) + r2 e(θ2)
    OEHID:   r3a e(θ3+α) + r4a e(θ4+γ) + r7 e(θ7) = r5 + r1 e(θ1)

with e(φ) = (cos φ, sin φ).  So link 3 carries A (r3) and E (r3a); link 1
carries J (r1a) and I (r1); link 2 is pivoted at J and carries B (r2a) and
G (r2); link 4 is pivoted at E and carries F (r4) and H (r4a); binary links
6 (A–B), 8 (F–G) and 7 (H–I).

Data (paper 001, section 6): r1 = 13, r2 = 6.9, r3 = 5.5, r4 = 7, r5 = 15,
r6 = 4.7, r7 = 23.5, r8 = 6, r1a = 3.5, r2a = 2.5, r3a = 10, r4a = 7.5,
α = β = γ = δ = π/2, θ3 = 21°.  The I/O polynomial in cos θ1 has degree 16:
16 assembly configurations, complex and real.

Dynamics (not in the paper; plausible values so the mechanism builds as an
FMU): every side of a link is a uniform bar of 1 kg/m (a ternary link is its
two sides rigidly joined at the pivot), gravity 9.81 m/s² along −y, input
torque ``tau`` on link 3.  The offsets are exact sympy π/2 (structural), so
cos(θ + π/2) = −sin θ exactly.  The start guesses pick the real assembly with
θ1 ≈ 1.2736 rad (the other one has θ1 ≈ 1.0632) (see ``fmigen assemble eight_link``).

Assembly hints: the paper's "dlex" order x1 < y1 < x8 < y8 < x7 < y7 < x6 <
y6 < x4 < y4 < x2 < y2 (x = cos, y = sin) as graded reverse lex, with
x1 = cos θ1 hidden in the Sylvester matrix.
"""
import math

import sympy as sp
from sympy import cos, sin

from fmigen.kinematics.assemble import AssemblyHints
from fmigen.model import Mechanism

DATA = {"r1": 13.0, "r2": 6.9, "r3": 5.5, "r4": 7.0, "r5": 15.0, "r6": 4.7, "r7": 23.5,
        "r8": 6.0, "r1a": 3.5, "r2a": 2.5, "r3a": 10.0, "r4a": 7.5}
OFFSET = sp.pi / 2          # α = β = γ = δ
RHO = 1.0                   # kg per m of link side


def build() -> Mechanism:
    m = Mechanism("eight_link", description=__doc__.splitlines()[0])
    # start: θ3 = 21°, dependents at one real assembly (guesses, refined by assembly)
    th3 = m.coordinate("theta3", math.radians(21.0), "rad", description="input link 3 angle")
    th1 = m.coordinate("theta1", 1.27356, "rad", description="output link 1 angle")
    th2 = m.coordinate("theta2", 2.00668, "rad", description="link 2 angle")
    th4 = m.coordinate("theta4", 0.09325, "rad", description="link 4 angle")
    th6 = m.coordinate("theta6", -0.43989, "rad", description="link 6 angle")
    th7 = m.coordinate("theta7", -0.18719, "rad", description="link 7 angle")
    th8 = m.coordinate("theta8", -0.46819, "rad", description="link 8 angle")
    p = {k: m.parameter(k, v, "m", description=f"length {k}") for k, v in DATA.items()}
    g = m.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    tau = m.input("tau", 0.0, "N.m", description="torque on link 3")
    a = b = c = d = OFFSET

    def e(phi):
        return sp.Matrix([cos(phi), sin(phi)])

    O = sp.Matrix([0, 0])
    C = sp.Matrix([p["r5"], 0])
    A = O + p["r3"] * e(th3)
    E = O + p["r3a"] * e(th3 + a)
    J = C + p["r1a"] * e(th1 + b)
    I = C + p["r1"] * e(th1)
    B = J + p["r2a"] * e(th2 + d)
    G = J + p["r2"] * e(th2)
    F = E + p["r4"] * e(th4)
    H = E + p["r4a"] * e(th4 + c)

    loop1 = A + p["r6"] * e(th6) - B
    loop2 = F + p["r8"] * e(th8) - G
    loop3 = H + p["r7"] * e(th7) - I
    for name, v in (("OABC", loop1), ("OEFGCD", loop2), ("OEHID", loop3)):
        m.constraint(f"{name}_x", v[0])
        m.constraint(f"{name}_y", v[1])

    def bar(name, start, length_sym, angle):
        mass = RHO * DATA[str(length_sym)]
        com = start + length_sym / 2 * e(angle)
        m.planar_body(name, mass, mass * DATA[str(length_sym)] ** 2 / 12, (com[0], com[1]), angle)

    # ternary links as two rigidly joined bars sharing the link's angle
    # (a bar at angle θ + π/2 rotates with θ: its frame is the link's frame
    # turned by a constant, so one angle coordinate drives both)
    bar("link3_side_r3", O, p["r3"], th3)
    bar("link3_side_r3a", O, p["r3a"], th3 + a)
    bar("link1_side_r1", C, p["r1"], th1)
    bar("link1_side_r1a", C, p["r1a"], th1 + b)
    bar("link2_side_r2", J, p["r2"], th2)
    bar("link2_side_r2a", J, p["r2a"], th2 + d)
    bar("link4_side_r4", E, p["r4"], th4)
    bar("link4_side_r4a", E, p["r4a"], th4 + c)
    bar("link6", A, p["r6"], th6)
    bar("link7", H, p["r7"], th7)
    bar("link8", F, p["r8"], th8)
    m.gravity = (0, -g, 0)
    m.generalized_force("theta3", tau)
    m.independent = ["theta3"]
    m.dof = 1
    order = []
    for j in (2, 4, 6, 7, 8, 1):
        order += [f"s_theta{j}", f"c_theta{j}"]
    m.assembly_hints = AssemblyHints(order=order, hidden="c_theta1")
    return m
