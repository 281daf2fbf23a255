"""The four-bar of ``mechanisms/fourbar.py`` with its rocker length ``l3`` a
hard point: a tunable parameter with a declared range that enters the loop
constraints, so the FMU takes a new rocker length without a rebuild.

``build(l3=None)``: with a number, ``l3`` is structural at that value (the
independent reference the tests compare a re-tuned FMU with).
``l3_range``: the declared range (one that holds rocker lengths at which
the start cannot be assembled, for the refusal test)."""
import math

from sympy import cos, sin

from fmigen.model import Mechanism

L3_RANGE = (2.3, 2.7)


def build(l3=None, l3_range=L3_RANGE) -> Mechanism:
    m = Mechanism("fourbar_hard_point" if l3 is None else "fourbar_l3_fixed",
                  description=__doc__.splitlines()[0])
    theta = m.coordinate("theta", math.pi / 2, "rad", description="crank angle")
    alpha = m.coordinate("alpha", 0.353281, "rad", description="coupler angle")
    phi = m.coordinate("phi", 1.26486, "rad", description="rocker angle")

    l1 = m.parameter("l1", 1.0, "m", description="crank length")
    l2 = m.parameter("l2", 4.0, "m", description="coupler length")
    if l3 is None:
        l3 = m.parameter("l3", 2.5, "m", tunable=True, range=l3_range, description="rocker length")
    else:
        l3 = m.parameter("l3", l3, "m", description="rocker length")
    d = m.parameter("d", 3.0, "m", description="x of the rocker pivot")
    g = m.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    m1, m2, m3 = (m.parameter(f"m{i}", 1.0, "kg", tunable=True, description=f"mass of link {i}")
                  for i in (1, 2, 3))
    tau = m.input("tau", 6.0, "N.m", description="crank torque")

    ax, ay = l1 * cos(theta), l1 * sin(theta)
    m.planar_body("crank", m1, m1 * l1**2 / 12, (ax / 2, ay / 2), theta)
    m.planar_body("coupler", m2, m2 * l2**2 / 12,
                  (ax + l2 / 2 * cos(alpha), ay + l2 / 2 * sin(alpha)), alpha)
    m.planar_body("rocker", m3, m3 * l3**2 / 12,
                  (d + l3 / 2 * cos(phi), l3 / 2 * sin(phi)), phi)
    m.gravity = (0, -g, 0)

    m.constraint("loop_x", ax + l2 * cos(alpha) - d - l3 * cos(phi))
    m.constraint("loop_y", ay + l2 * sin(alpha) - l3 * sin(phi))
    m.generalized_force("theta", tau)
    m.independent = ["theta"]
    m.dof = 1
    return m
