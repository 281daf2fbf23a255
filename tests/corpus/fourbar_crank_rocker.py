"""Grashof crank-rocker four-bar (Norton, "Design of Machinery", 5th ed., 2012, §2.12, Fig. 2-16a).

Grashof's condition s + l ≤ p + q with the shortest link the crank gives a
crank-rocker: the crank turns fully, the rocker oscillates.  The dimensions
are illustrative of Norton's figure, not data from it: ground O2O4 = 7,
crank 2.5, coupler 6, rocker 5 (m; s + l = 9.5 < p + q = 11).  Uniform bars
of 1 kg/m, gravity along −y, a constant crank torque ``tau`` of 20 N·m
drives the crank round; start at θ = 90° on the open (uncrossed) branch.
"""
from corpus._planar import four_bar


def build():
    return four_bar("fourbar_crank_rocker", __doc__.splitlines()[0], ground=7.0, crank=2.5, coupler=6.0,
                    rocker=5.0, theta=1.5707963267948966, open_=True, tau=20.0)
