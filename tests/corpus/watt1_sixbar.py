"""Watt I six-bar: a crank-rocker with a dyad from its crank to its coupler (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, Watt's sixbar chain; dimensions chosen for this corpus).

Watt's chain has its two ternary links jointed to each other; grounding a
binary link (the Watt I inversion) leaves both ternaries moving: here the
ternary crank O2 A C and the ternary coupler A B D of the four-bar O2 A B
O4, with a dyad C E D (two binary links) joining the crank to the coupler.
Dimensions chosen for this corpus, layout after Norton's sixbar chains: O2
= (0, 0), O4 = (0.35, 0); crank O2A 0.10 and O2C 0.08 at −120° from O2A;
coupler AB 0.35 with D at 0.20 from A, 30° above AB; rocker O4B 0.25; dyad
CE 0.25, ED 0.25 (m). Four-bar: s + l = 0.45 < p + q = 0.60, a Grashof
crank-rocker; the dyad stays assembled over the whole crank turn (a Newton
sweep of the drawn linkage: smallest scaled singular value of the loop
Jacobian 0.11, closes after one turn). Bars and ternary plates of 1 kg per
metre of perimeter, gravity along −y, a crank torque of 0.5 N·m and a
viscous bearing of 0.3 N·m·s on the crank; start θ = 60°, B above the line
A–O4, E left of C→D.
"""
import math

from corpus._planar import dyad, linkage, polar

THETA = math.radians(60)
O2, O4 = (0.0, 0.0), (0.35, 0.0)
A = polar(O2, 0.10, THETA)
C = polar(O2, 0.08, THETA - math.radians(120))
B = dyad(A, 0.35, O4, 0.25, left=True)
D = polar(A, 0.20, math.atan2(B[1] - A[1], B[0] - A[0]) + math.radians(30))
E = dyad(C, 0.25, D, 0.25, left=True)
POINTS = {"O2": O2, "A": A, "C": C, "B": B, "O4": O4, "D": D, "E": E}
LINKS = {"crank": ["O2", "A", "C"], "coupler": ["A", "B", "D"], "rocker": ["O4", "B"],
         "link5": ["C", "E"], "link6": ["E", "D"]}
GROUND = ["O2", "O4"]
DRIVERS = [("crank", "O2")]


def build():
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "coupler"),
              ("B", "B", "coupler", "rocker"), ("phi", "O4", "ground", "rocker"),
              ("C", "C", "crank", "link5"), ("E", "E", "link5", "link6"), ("D", "D", "coupler", "link6")]
    return linkage("watt1_sixbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("B", "A", "O4", "coupler"), ("E", "C", "D", "link5")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.3})
