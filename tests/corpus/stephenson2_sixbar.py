"""Stephenson II six-bar: a crank-rocker with a dyad from its crank to its rocker (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, Stephenson's sixbar chain; dimensions chosen for this corpus).

Stephenson's chain keeps its two ternary links apart. Grounding one of the
single binary links between them (numbered Stephenson II here; the
numbering of the Stephenson inversions differs between textbooks) pivots
both ternaries on ground: the ternary crank O2 A C and the ternary rocker
O4 B D of the four-bar O2 A B O4, with a dyad C E D joining crank to
rocker. Dimensions chosen for this corpus: O2 = (0, 0), O4 = (0.35, 0);
crank O2A 0.10, O2C 0.08 at +150° from O2A; coupler AB 0.35; rocker O4B
0.25, O4D 0.22 at −70° from O4B; dyad CE 0.35, ED 0.30 (m). Four-bar: s +
l = 0.45 < p + q = 0.60, a Grashof crank-rocker. Bars and ternary plates
of 1 kg per metre of perimeter, gravity along −y, a crank torque of 0.5
N·m and a viscous bearing of 0.1 N·m·s on the crank; start θ = 60°, B
above the line A–O4, E left of C→D.
"""
import math

from corpus._planar import dyad, linkage, polar

THETA = math.radians(60)
O2, O4 = (0.0, 0.0), (0.35, 0.0)
A = polar(O2, 0.10, THETA)
C = polar(O2, 0.08, THETA + math.radians(150))
B = dyad(A, 0.35, O4, 0.25, left=True)
D = polar(O4, 0.22, math.atan2(B[1] - O4[1], B[0] - O4[0]) - math.radians(70))
E = dyad(C, 0.35, D, 0.30, left=True)
POINTS = {"O2": O2, "A": A, "C": C, "B": B, "O4": O4, "D": D, "E": E}
LINKS = {"crank": ["O2", "A", "C"], "coupler": ["A", "B"], "rocker": ["O4", "B", "D"],
         "link5": ["C", "E"], "link6": ["E", "D"]}
GROUND = ["O2", "O4"]
DRIVERS = [("crank", "O2")]


def build():
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "coupler"),
              ("B", "B", "coupler", "rocker"), ("phi", "O4", "ground", "rocker"),
              ("C", "C", "crank", "link5"), ("E", "E", "link5", "link6"), ("D", "D", "rocker", "link6")]
    return linkage("stephenson2_sixbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("B", "A", "O4", "coupler"), ("E", "C", "D", "link5")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.1})
