"""Four-bar crank-rocker of Wang, Gosselin & Cheng (paper 003).

Crank OA (l1) about the origin, coupler AB (l2), rocker DB (l3) about
D = (d, 0).  Coordinates are absolute link angles from the x axis: crank
``theta`` (independent), coupler ``alpha`` and rocker ``phi``.  Every link is a
uniform bar: centre of mass at mid-link, I = m l²/12.  Gravity 9.8 m/s² along
−y; the crank is driven by the input torque ``tau`` (default 6 N·m).

Start: θ = π/2 at rest.  α ≈ 0.353281 and φ ≈ 1.26486 are only guesses that
pick the assembly branch; the build assembles them exactly from θ.
"""
import math

from sympy import cos, sin

from fmigen.model import Mechanism


def build(l3_range=None, l3=2.5, name="fourbar") -> Mechanism:
    """The four-bar; ``l3_range`` makes the rocker length ``l3`` a hard point:
    a tunable parameter with that declared range, which enters the loop
    constraints, so the FMU takes a new rocker length without a rebuild."""
    m = Mechanism(name, description=__doc__.splitlines()[0])
    theta = m.coordinate("theta", math.pi / 2, "rad", description="crank angle")
    alpha = m.coordinate("alpha", 0.353281, "rad", description="coupler angle")
    phi = m.coordinate("phi", 1.26486, "rad", description="rocker angle")

    l1 = m.parameter("l1", 1.0, "m", description="crank length")
    l2 = m.parameter("l2", 4.0, "m", description="coupler length")
    l3 = m.parameter("l3", l3, "m", tunable=l3_range is not None, range=l3_range, description="rocker length")
    d = m.parameter("d", 3.0, "m", description="x of the rocker pivot")
    g = m.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    masses = [m.parameter(f"m{i}", 1.0, "kg", tunable=True, description=f"mass of link {i}")
              for i in (1, 2, 3)]
    m1, m2, m3 = masses
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
