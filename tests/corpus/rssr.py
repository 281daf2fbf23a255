"""RSSR spatial four-bar: crank and rocker on skew perpendicular axes (layout after Hartenberg & Denavit, "Kinematic Synthesis of Linkages", McGraw-Hill 1964, and Suh & Radcliffe, "Kinematics and Mechanisms Design", Wiley 1978, their spatial RSSR four-bar).

Dimensions chosen for this corpus, layout after those books (the crank axis
and the rocker axis skew and perpendicular, a spherical-spherical coupler):
the crank turns about z through the origin with radius 0.2 m; the rocker
turns about x through B0 = (0.4, 0.8, 0.3) m with its pin 0.5 m from the
axis; the coupler is 0.9 m.  With these the crank turns fully (the rocker
circle meets the coupler sphere at every crank angle).  The coupler hangs
from the rocker by a universal joint rather than a second spherical joint
(the same motion without the idle spin of the coupler about its own axis),
see ``corpus._families.rssr``.

Drive: gravity along −z and a constant crank torque of 0.5 N·m; start at
θ = 0.5 rad on the rocker branch 0.  Bars of 1 kg/m.
"""
from corpus._families import rssr


def build():
    return rssr("rssr", __doc__.splitlines()[0], crank=0.2, B0=(0.4, 0.8, 0.3), arm=(0.0, 0.5, 0.0), L=0.9,
                theta=0.5, branch=0, tau=0.5)
