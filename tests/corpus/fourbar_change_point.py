"""Change-point (special-case Grashof) four-bar (Norton, "Design of Machinery", 5th ed., 2012, §2.12, Fig. 2-16e-g).

s + l = p + q: the links can all become collinear, where the linkage may
change between its open and crossed branches (a change point).  Dimensions
chosen for this corpus, layout after Norton's special-case figures: ground
4, crank 2, coupler 3, rocker 3 (m; s + l = 6 = p + q).  The change point
is θ = π (A at (−2, 0), coupler and rocker stretched along the ground
line).  The crank starts at θ = 90° with a torque of 2 N·m against gravity:
a run that reaches the change point must stop there with a clear message
(the direction of the dependent motion is not determined there).
"""
from corpus._planar import four_bar


def build():
    return four_bar("fourbar_change_point", __doc__.splitlines()[0], ground=4.0, crank=2.0, coupler=3.0,
                    rocker=3.0, theta=1.5707963267948966, open_=True, tau=2.0)
