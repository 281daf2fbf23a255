"""Offset slider-crank (Norton, "Design of Machinery", 5th ed., 2012, §4.6–4.7, Fig. 4-9 the offset fourbar slider-crank).

Crank O2A (r = 0.05 m) about the origin, connecting rod AC (l = 0.15 m),
the slider C on a guide offset by e = 0.02 m from the crank centre.
Dimensions chosen for this corpus (engine-sized), layout after Norton's
figure.  Uniform bars of 1 kg/m (crank 0.05 kg, rod 0.15 kg), slider
0.5 kg with viscous friction 2 N·s/m, gravity along −y, crank torque
0.02 N·m; start θ = 30°, slider right of the crank pin: the linkage falls
back through the inner dead centre (θ = 0) and swings.

The torque was 0.5 N·m: with the slider's friction the only loss it
balances only near 200 rad/s; the crank passed 46 rad/s within 0.1 s and
the run was beyond a 1 ms fixed step and the references' tolerances (the
case timed out at 900 s).  A viscous crank bearing instead (0.1 N·m·s)
made the light crank's motion stiff near the dead centres, where its
effective inertia is smallest: the FMU's 1 ms RK4 missed all three
references alike by 1.6e-5 rad/s (energy drift 3.2e-5).
"""
from corpus._families import slider_crank


def build():
    return slider_crank("slider_crank_offset", __doc__.splitlines()[0], r=0.05, l=0.15, e=0.02,
                        theta=0.5235987755982988, right=True, tau=0.02, c=2.0)
