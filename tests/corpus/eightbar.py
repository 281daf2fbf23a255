"""Eight-bar: a Stephenson six-bar with a further dyad, three loops solved in turn (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, eightbar chains by number synthesis; dimensions chosen for this corpus).

One degree of freedom with eight links and ten revolute joints (Gruebler:
3 · 7 − 2 · 10 = 1), four ternary links (ground, the coupler plate, the
rocker and the output) and four binary ones. The crank O2A drives the
four-bar O2 A B O4 whose ternary coupler A B P drives, through the link P
Q, the ternary output O6 Q R (a Stephenson six-bar: ground and plate, both
ternary, are not jointed); the dyad R S T then ties the output back to the
four-bar's ternary rocker O4 B T, closing a third loop. Given the crank,
the loops are three 2×2 blocks in turn. Dimensions chosen for this corpus:
O2 = (0, 0), O4 = (0.35, 0), O6 = (−0.10, 0.45); crank 0.10; coupler AB
0.35 with P at 0.20 from A, 40° above AB; rocker O4B 0.25 with T at 0.18,
60° from O4B; link PQ 0.30; output O6Q 0.15 with R at 0.15, 120° from O6Q;
dyad RS 0.30, ST 0.30 (m). The crank turns fully (a Newton sweep of the
drawn linkage: smallest scaled singular value of the loop Jacobian 0.23,
closes after one turn). Bars and ternary plates of 1 kg per metre of
perimeter, gravity along −y, a crank torque of 0.5 N·m and a viscous
bearing of 0.3 N·m·s on the crank; start θ = 60°.
"""
import math

from corpus._planar import dyad, linkage, polar

THETA = math.radians(60)
O2, O4, O6 = (0.0, 0.0), (0.35, 0.0), (-0.10, 0.45)


def _ang(P, Q):
    return math.atan2(Q[1] - P[1], Q[0] - P[0])


A = polar(O2, 0.10, THETA)
B = dyad(A, 0.35, O4, 0.25, left=True)
P = polar(A, 0.20, _ang(A, B) + math.radians(40))
T = polar(O4, 0.18, _ang(O4, B) + math.radians(60))
Q = dyad(P, 0.30, O6, 0.15, left=True)
R = polar(O6, 0.15, _ang(O6, Q) + math.radians(120))
S = dyad(R, 0.30, T, 0.30, left=True)
POINTS = {"O2": O2, "A": A, "B": B, "O4": O4, "P": P, "T": T, "Q": Q, "O6": O6, "R": R, "S": S}
LINKS = {"crank": ["O2", "A"], "plate": ["A", "B", "P"], "rocker": ["O4", "B", "T"], "link5": ["P", "Q"],
         "output": ["O6", "Q", "R"], "link7": ["R", "S"], "link8": ["S", "T"]}
GROUND = ["O2", "O4", "O6"]
DRIVERS = [("crank", "O2")]


def build():
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "plate"), ("B", "B", "plate", "rocker"),
              ("phi", "O4", "ground", "rocker"), ("P", "P", "plate", "link5"), ("Q", "Q", "link5", "output"),
              ("psi", "O6", "ground", "output"), ("R", "R", "output", "link7"), ("S", "S", "link7", "link8"),
              ("T", "T", "rocker", "link8")]
    return linkage("eightbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("B", "A", "O4", "plate"), ("Q", "P", "O6", "link5"), ("S", "R", "T", "link7")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.3})
