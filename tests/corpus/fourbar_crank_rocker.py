"""Grashof crank-rocker four-bar of Norton's Example 4-1 (Norton, "Design of Machinery", 5th ed., 2012, ch. 4, Example 4-1; link types after §2.12, Fig. 2-16a).

The example's linkage: crank a = 40 mm, coupler b = 120 mm, rocker
c = 80 mm, ground d = 100 mm, at θ2 = 40° (Example 4-1 solves θ3 and θ4
for the open and crossed configurations at that crank angle).  Grashof's
condition with the shortest link the crank, s + l = 160 < p + q = 180 mm,
gives a crank-rocker.  The start is the example's: θ2 = 40° on the open
(uncrossed) branch, B above the line A–O4; ``tests/test_corpus_planar.py``
checks the FMU's start against the closed-form (Freudenstein) solution of
the example.  The example gives no masses: uniform bars of 1 kg/m,
gravity along −y, a crank torque of 0.05 N·m and a viscous bearing of
0.02 N·m·s on the crank (dynamics chosen for this corpus).
"""
import math

from corpus._planar import four_bar

A, B, C, D = 0.040, 0.120, 0.080, 0.100
THETA2 = math.radians(40)


def build():
    return four_bar("fourbar_crank_rocker", __doc__.splitlines()[0], ground=D, crank=A, coupler=B,
                    rocker=C, theta=THETA2, open_=True, tau=0.05, damping={"theta": 0.02})
