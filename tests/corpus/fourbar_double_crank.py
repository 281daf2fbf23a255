"""Grashof double-crank (drag-link) four-bar (Norton, "Design of Machinery", 5th ed., 2012, §2.12, Fig. 2-16c).

With the shortest link grounded both links pivoted to ground turn fully.
Dimensions chosen for this corpus, layout after Norton's figure: ground 2,
crank 5, coupler 6, follower 5.5 (m; s + l = 8 < p + q = 10.5).  Uniform
bars of 1 kg/m, gravity along −y, crank torque ``tau`` 10 N·m; start at
θ = 90° with the coupler–follower joint left of the line A–O4.
"""
from corpus._planar import four_bar


def build():
    return four_bar("fourbar_double_crank", __doc__.splitlines()[0], ground=2.0, crank=5.0, coupler=6.0,
                    rocker=5.5, theta=1.5707963267948966, open_=True, tau=10.0)
