"""Stephenson I six-bar: a ternary plate held by three binary links, two of them from a ternary crank (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, Stephenson's sixbar chain; dimensions chosen for this corpus).

Stephenson's chain keeps its two ternary links apart (three paths between
them: two single binary links and a pair of binaries).  Grounding a binary
link of the pair (numbered Stephenson I here; the numbering of the
Stephenson inversions differs between textbooks) leaves a floating
four-bar A C D B between the ternary crank O2 A B and the ternary plate C D
E, and the plate held to ground by the binary link O6 E: given the crank,
the plate is a platform on three legs (A C, B D, O6 E), one 4×4 loop block
(a sextic, up to 6 assemblies).

Drawn pose (m), the link lengths measured from it (dimensions chosen for
this corpus): O2 (0, 0), A (0.05, 0.09), B (−0.08, 0.04), C (0.18, 0.38),
D (0.02, 0.36), E (0.14, 0.52), O6 (0.42, 0.42). The crank turns fully (a
Newton sweep of the drawn linkage: smallest scaled singular value of the
loop Jacobian 0.14, closes after one turn). Bars and ternary plates of 1
kg per metre of perimeter, gravity along −y, a crank torque of 0.5 N·m and
a viscous bearing of 0.3 N·m·s on the crank; start at the drawn pose (θ =
atan2(0.09, 0.05)).

Build note: the two loops would close in different bodies (cut D, the
floating four-bar, in the crank's frame; cut E, the plate's leg to ground,
in the world frame), mixing relative and absolute angles in the block,
whose lex basis then did not finish within Singular's 600 s of CPU.  The
joint model closes a coupled block's loops in one frame
(``closure_rows._shared_frames``), here the crank's: the four-bar loop has
constant coefficients and θ only moves O6, a basis of about 13 s of
Singular CPU.  Its primary sequence is ill-conditioned on much of the turn
(docs/corpus.md): the exact completion from its sextic's root solves the
block there (``sequences.Completion``), without another lex order or
Newton.
"""
from corpus._planar import linkage

POINTS = {"O2": (0.0, 0.0), "A": (0.05, 0.09), "B": (-0.08, 0.04), "C": (0.18, 0.38), "D": (0.02, 0.36),
          "E": (0.14, 0.52), "O6": (0.42, 0.42)}
LINKS = {"crank": ["O2", "A", "B"], "link3": ["A", "C"], "link4": ["B", "D"], "plate": ["C", "D", "E"],
         "link6": ["O6", "E"]}
GROUND = ["O2", "O6"]
DRIVERS = [("crank", "O2")]


def build():
    joints = [("theta", "O2", "ground", "crank"), ("A", "A", "crank", "link3"), ("C", "C", "link3", "plate"),
              ("B", "B", "crank", "link4"), ("D", "D", "link4", "plate"), ("E", "E", "plate", "link6"),
              ("psi", "O6", "ground", "link6")]
    return linkage("stephenson1_sixbar", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta"],
                   [("E", "O6", "O2", "link6"), ("C", "A", "B", "link3")],
                   torques={"theta": ("tau", 0.5)}, damping={"theta": 0.3})
