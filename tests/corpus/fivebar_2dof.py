"""Two-degree-of-freedom five-bar: two cranks on ground driving a dyad (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, the fivebar linkage, two degrees of freedom by Gruebler's equation; dimensions chosen for this corpus).

Five links and five revolute joints: 3 · 4 − 2 · 5 = 2 degrees of freedom,
both crank angles independent (the FMU integrates both).  Cranks O1A and
O5B of 0.10 m about O1 = (0, 0) and O5 = (0.25, 0), couplers AP 0.30 and
BP 0.28 meeting at P.  Dimensions chosen for this corpus so that the dyad
is never singular: |AB| stays within [0.05, 0.45] m while the couplers
fold only at |AB| = 0.02 and stretch only at 0.58, so every pair of crank
angles assembles.  Bars of 1 kg per metre, gravity along −y; crank
torques of 0.3 and −0.2 N·m and viscous bearings of 0.3 N·m·s on both
cranks; start θ1 = 60°, θ2 = 120°, P below the line A–B (hanging).
"""
import math

from corpus._planar import dyad, linkage, polar

O1, O5 = (0.0, 0.0), (0.25, 0.0)
A = polar(O1, 0.10, math.radians(60))
B = polar(O5, 0.10, math.radians(120))
P = dyad(A, 0.30, B, 0.28, left=False)
POINTS = {"O1": O1, "A": A, "P": P, "B": B, "O5": O5}
LINKS = {"crank1": ["O1", "A"], "coupler1": ["A", "P"], "coupler2": ["B", "P"], "crank2": ["O5", "B"]}
GROUND = ["O1", "O5"]
DRIVERS = [("crank1", "O1"), ("crank2", "O5")]


def build():
    joints = [("theta1", "O1", "ground", "crank1"), ("A", "A", "crank1", "coupler1"),
              ("P", "P", "coupler1", "coupler2"), ("B", "B", "crank2", "coupler2"),
              ("theta2", "O5", "ground", "crank2")]
    return linkage("fivebar_2dof", __doc__.splitlines()[0], POINTS, LINKS, joints, ["theta1", "theta2"],
                   [("P", "A", "B", "coupler1")],
                   torques={"theta1": ("tau1", 0.3), "theta2": ("tau2", -0.2)},
                   damping={"theta1": 0.3, "theta2": 0.3})
