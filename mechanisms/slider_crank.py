"""Offset slider-crank: crank ``theta`` about the origin, connecting rod at
absolute angle ``beta``, slider position ``x`` on the line y = e (prismatic
joint).

Crank r = 0.2 m (uniform bar, 1 kg), rod l = 0.6 m (uniform bar, 0.5 kg),
slider 0.3 kg with viscous friction c·ẋ in its guide, offset e = 0.05 m.
Gravity 9.81 m/s² along −y.  The crank is driven by the input torque ``tau``
(default 0.5 N·m).  Start: θ = π/3 at rest; β and x are assembled from θ (the
guesses pick the branch with the slider to the right of the crank).
"""
import math

from sympy import cos, sin

from fmigen.model import Mechanism


def add_linkage(m: Mechanism, starts, velocities=None):
    """The crank, rod and slider with their parameters, bodies, gravity, loop
    constraints and slider friction; ``starts`` and ``velocities`` (optional)
    by coordinate name.  Returns (theta, beta, x).  Shared with
    ``slider_crank_from_slider``, which drives the same linkage from the slider."""
    velocities = velocities or {}
    theta = m.coordinate("theta", starts["theta"], "rad", velocity_start=velocities.get("theta", 0.0),
                         description="crank angle")
    beta = m.coordinate("beta", starts["beta"], "rad", velocity_start=velocities.get("beta", 0.0),
                        description="connecting-rod angle")
    x = m.coordinate("x", starts["x"], "m", velocity_start=velocities.get("x", 0.0), description="slider position")

    r = m.parameter("r", 0.2, "m", description="crank length")
    l = m.parameter("l", 0.6, "m", description="rod length")
    e = m.parameter("e", 0.05, "m", description="slider line offset")
    g = m.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    m1 = m.parameter("m_crank", 1.0, "kg", tunable=True)
    m2 = m.parameter("m_rod", 0.5, "kg", tunable=True)
    m3 = m.parameter("m_slider", 0.3, "kg", tunable=True)
    c = m.parameter("c_slider", 0.5, "N.s/m", tunable=True, description="slider viscous friction")

    ax, ay = r * cos(theta), r * sin(theta)
    m.planar_body("crank", m1, m1 * r**2 / 12, (ax / 2, ay / 2), theta)
    m.planar_body("rod", m2, m2 * l**2 / 12, (ax + l / 2 * cos(beta), ay + l / 2 * sin(beta)), beta)
    m.planar_body("slider", m3, 0, (x, e), 0)
    m.gravity = (0, -g, 0)

    m.constraint("rod_x", ax + l * cos(beta) - x)
    m.constraint("rod_y", ay + l * sin(beta) - e)
    m.generalized_force("x", -c * x.diff())
    return theta, beta, x


def build() -> Mechanism:
    m = Mechanism("slider_crank", description=__doc__.splitlines()[0])
    add_linkage(m, {"theta": math.pi / 3, "beta": -0.1, "x": 0.7})
    tau = m.input("tau", 0.5, "N.m", description="crank torque")
    m.generalized_force("theta", tau)
    m.independent = ["theta"]
    m.dof = 1
    return m
