"""Stephenson III six-bar driven at the dyad's crank (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, Stephenson's sixbar chain; dimensions chosen for this corpus).

Stephenson's chain keeps its two ternary links apart.  Grounding a ternary
link (numbered Stephenson III here, as in ``mechanisms/stephenson3.py``;
the numbering of the Stephenson inversions differs between textbooks)
gives a four-bar O2 A B O4 whose ternary coupler plate A B P is driven at P
by a dyad: the crank O6 C and the rod C P.  Driven at the dyad's crank,
as the issue's new user wrote it, the loops are one 4×4 block: P lies on
the four-bar's coupler curve (a sextic) and on the circle of radius |CP|
about C.

Drawn pose (m), the link lengths measured from it (dimensions chosen for
this corpus, an upright swing instead of ``stephenson3``'s hanging one):
O2 (0, 0), A (0.02, 0.25), B (0.31, 0.27), O4 (0.30, 0), P (0.17, 0.40),
O6 (−0.30, 0.45), C (−0.27, 0.49): crank 0.05, rod 0.449. The crank turns
fully (a Newton sweep of the drawn linkage: smallest scaled singular value
of the loop Jacobian 0.42, closes after one turn). Bars and the plate of 1
kg per metre of perimeter, gravity along −y, a crank torque of 0.5 N·m and
a viscous bearing of 0.1 N·m·s on the crank; start at the drawn pose (θ =
atan2(0.04, 0.03)).

Build note: the default lex sequence amplifies round-off 1.9e4-fold on the
sweep of 1,441 configurations and degenerates nowhere on it; the build
computes that one order (a cold build: 35 s of CPU, against 93 s when it
also searched seven other orders for a better conditioned one).  `fmigen
check`: no representation singularity, no Newton fallback, the generated C
within 3.3e-13 of the continuation.
"""
from corpus._planar import linkage

POINTS = {"O2": (0.0, 0.0), "A": (0.02, 0.25), "B": (0.31, 0.27), "O4": (0.30, 0.0), "P": (0.17, 0.40),
          "O6": (-0.30, 0.45), "C": (-0.27, 0.49)}
LINKS = {"hanger2": ["O2", "A"], "plate": ["A", "B", "P"], "hanger4": ["O4", "B"], "crank": ["O6", "C"],
         "rod": ["C", "P"]}
GROUND = ["O2", "O4", "O6"]
DRIVERS = [("crank", "O6")]


def build():
    joints = [("theta", "O6", "ground", "crank"), ("C", "C", "crank", "rod"), ("P", "P", "rod", "plate"),
              ("psi", "O2", "ground", "hanger2"), ("A", "A", "hanger2", "plate"), ("B", "B", "plate", "hanger4"),
              ("phi", "O4", "ground", "hanger4")]
    return linkage("stephenson3_sixbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("A", "O2", "O4", "hanger2"), ("B", "O2", "O4", "hanger4"), ("P", "A", "B", "plate")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.1})
