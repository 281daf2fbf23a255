"""Offset slider-crank of ``slider_crank`` with the slider position ``x`` independent.

Same links, masses, slider friction, offset and gravity as
``mechanisms/slider_crank.py`` (crank r = 0.2 m, rod l = 0.6 m, offset
e = 0.05 m); only the partition and the drive differ: ``x`` is the independent
coordinate, the crank angle ``theta`` and rod angle ``beta`` are dependent, and
the input is a force ``F`` on the slider along +x (default 0 N) instead of the
crank torque.

With x independent, Φ_d = ∂(rod_x, rod_y)/∂(θ, β) has
det Φ_d = r l sin(β − θ): it is singular at the two dead centres, where crank
and rod are aligned (θ − β = 0, slider furthest out, or π, furthest in) and
dθ/dx is infinite.  The mechanism itself is regular there (Φ_q has full rank;
with θ independent nothing happens), so a spinning crank passes them while any
run-time kinematics that solves θ, β from x alone cannot: at a dead centre x
turns back and the two assemblies at that x (crank pin mirrored about the
line from the crank pivot to the slider pin) meet.
Passing them needs switching the independent coordinate at run time:
``switch_independent`` lets the Co-Simulation FMU take the crank angle as
independent coordinate near them (paper 004).

Start: crank at θ0 = π/3 spinning at ω0 = 12 rad/s (counter-clockwise,
towards the inner dead centre), the slider at the exact x0 of that assembly and
moving at ẋ0 = (dx/dθ)(θ0)·ω0; β0 and the dependent velocity starts are the
exact values of that state (only x and ẋ are free FMU starts; the others are
set here so that the DAE reference starts from the same state).  The DAE
reference (IDA, rtol 1e-12) passes 7 dead centres in 2 s, listed in
``DEAD_CENTRES``: inner ones (x = √((l − r)² − e²) = 0.39686 m) at θ ≈ π + 0.125
+ 2πk, outer ones (x = √((l + r)² − e²) = 0.79844 m) at θ ≈ 0.0625 + 2πk, the
first at t = 0.1618 s; gravity on the crank makes its speed vary (12 rad/s at
0 and 11.9 rad/s at 2 s, 3.76 turns).
"""
import math

from fmigen.model import Mechanism
from mechanisms.slider_crank import add_linkage

R, L, E = 0.2, 0.6, 0.05          # as in mechanisms/slider_crank.py
THETA0 = math.pi / 3
OMEGA0 = 12.0
#: dead-centre crossings of the DAE reference (t in s, kind), measured
DEAD_CENTRES = ((0.1618, "inner"), (0.3413, "outer"), (0.6056, "inner"), (0.8035, "outer"),
                (1.1302, "inner"), (1.3497, "outer"), (1.7991, "inner"))


def start_state(theta0=THETA0, omega0=OMEGA0, r=R, l=L, e=E):
    """(x0, beta0, xdot0, betadot0) of the assembly with the slider to the
    right of the crank, for crank angle ``theta0`` and rate ``omega0``."""
    sb = (e - r * math.sin(theta0)) / l
    beta0 = math.asin(sb)
    x0 = r * math.cos(theta0) + l * math.cos(beta0)
    # d/dt of the loop: r cosθ θ' + l cosβ β' = 0, ẋ = −r sinθ θ' − l sinβ β'
    betadot0 = -r * math.cos(theta0) * omega0 / (l * math.cos(beta0))
    xdot0 = -r * math.sin(theta0) * omega0 - l * math.sin(beta0) * betadot0
    return x0, beta0, xdot0, betadot0


def build() -> Mechanism:
    x0, beta0, xdot0, betadot0 = start_state()
    m = Mechanism("slider_crank_from_slider", description=__doc__.splitlines()[0])
    add_linkage(m, {"theta": THETA0, "beta": beta0, "x": x0},
                {"theta": OMEGA0, "beta": betadot0, "x": xdot0})
    force = m.input("F", 0.0, "N", description="force on the slider along +x")
    m.generalized_force("x", force)
    m.independent = ["x"]
    m.dof = 1
    # paper 004's coordinate switching: the crank angle takes over near the
    # dead centres, where dθ/dx is infinite (``fmigen check`` names it)
    m.switch_independent = [["theta"]]
    return m
