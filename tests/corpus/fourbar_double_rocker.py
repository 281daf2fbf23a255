"""Grashof double-rocker four-bar (Norton, "Design of Machinery", 5th ed., 2012, §2.12, Fig. 2-16d).

With the shortest link as the coupler, a Grashof four-bar is a double
rocker: the coupler can turn fully, neither grounded link can.  Dimensions
chosen for this corpus, layout after Norton's figure: ground 6, input rocker
5, coupler 2, output rocker 5.5 (m; s + l = 8 < p + q = 10.5).  The input
rocker's reach is bounded by toggle positions (coupler and output rocker
aligned); the run starts at θ = 60° and swings under gravity alone (no
torque), which keeps it between its toggles over the validation window.
"""
from corpus._planar import four_bar


def build():
    return four_bar("fourbar_double_rocker", __doc__.splitlines()[0], ground=6.0, crank=5.0, coupler=2.0,
                    rocker=5.5, theta=1.0471975511965976, open_=True, tau=0.0)
