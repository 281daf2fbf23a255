"""Watt II six-bar: two four-bars in series (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, Watt's sixbar chain; dimensions chosen for this corpus).

Watt's chain has its two ternary links jointed to each other; grounding
one of them (the Watt II inversion: "two connected four-bar linkages" in
Plecnik and McCarthy, "Numerical Synthesis of Six-bar Linkages for
Mechanical Computation", Univ. of California, Irvine) gives a
crank-rocker O2 A B O4 whose ternary rocker O4 B C is the input of a
second four-bar O4 C D O6. Dimensions chosen for this corpus, layout after
Norton's sixbar chains: O2 = (0, 0), crank O2A 0.10, coupler AB 0.32,
ternary rocker O4 = (0.30, 0) with O4B 0.25 and O4C 0.20 at 100° from O4B,
coupler CD 0.30, output rocker O6D 0.24 about O6 = (0.50, 0.30) (m). First
loop: s + l = 0.42 < p + q = 0.55, a Grashof crank-rocker; the second
stays assembled over the whole crank turn (a Newton sweep of the drawn
linkage: smallest scaled singular value of the loop Jacobian 0.34, closes
after one turn). Bars and the ternary plate of 1 kg per metre of
perimeter, gravity along −y, a crank torque of 0.5 N·m and a viscous
bearing of 0.1 N·m·s on the crank; start θ = 60° with both couplers' far
joints above their base lines (the open assemblies).
"""
import math

from corpus._planar import dyad, linkage, polar

THETA = math.radians(60)
O2, O4, O6 = (0.0, 0.0), (0.30, 0.0), (0.50, 0.30)
A = polar(O2, 0.10, THETA)
B = dyad(A, 0.32, O4, 0.25, left=True)
C = polar(O4, 0.20, math.atan2(B[1] - O4[1], B[0] - O4[0]) - math.radians(100))
D = dyad(C, 0.30, O6, 0.24, left=True)
POINTS = {"O2": O2, "A": A, "B": B, "O4": O4, "C": C, "D": D, "O6": O6}
LINKS = {"crank": ["O2", "A"], "coupler": ["A", "B"], "rocker": ["O4", "B", "C"],
         "coupler2": ["C", "D"], "output": ["O6", "D"]}
GROUND = ["O2", "O4", "O6"]
DRIVERS = [("crank", "O2")]


def build():
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "coupler"),
              ("B", "B", "coupler", "rocker"), ("phi", "O4", "ground", "rocker"),
              ("C", "C", "rocker", "coupler2"), ("D", "D", "coupler2", "output"),
              ("psi", "O6", "ground", "output")]
    return linkage("watt2_sixbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("B", "A", "O4", "coupler"), ("D", "C", "O6", "coupler2")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.1})
