"""Offset slider-crank (Norton, "Design of Machinery", 5th ed., 2012, §4.6–4.7, Fig. 4-9 the offset fourbar slider-crank).

Crank O2A (r = 0.05 m) about the origin, connecting rod AC (l = 0.15 m),
the slider C on a guide offset by e = 0.02 m from the crank centre.
Dimensions illustrative of an engine-sized offset slider-crank of Norton's
chapter, not data from it.  Uniform bars of 1 kg/m (crank 0.05 kg, rod
0.15 kg), slider 0.5 kg with viscous friction 2 N·s/m, gravity along −y,
crank torque 0.5 N·m; start θ = 30°, slider right of the crank pin.
"""
from corpus._families import slider_crank


def build():
    return slider_crank("slider_crank_offset", __doc__.splitlines()[0], r=0.05, l=0.15, e=0.02,
                        theta=0.5235987755982988, right=True, tau=0.5, c=2.0)
