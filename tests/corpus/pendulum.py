"""Compound pendulum: a uniform rod swinging about one end (an open chain).

Halliday, Resnick & Walker, *Fundamentals of Physics*, 10th ed. (2014),
ch. 15, the physical pendulum: a uniform rod (a meter stick) of length L
pivoted at one end has I = m L²/3 about the pivot and its centre of mass
h = L/2 below it, so for small amplitudes T = 2π √(I / (m g h)) =
2π √(2L / (3g)) = 1.64 s for L = 1.00 m.  The exact period at amplitude θ0
is the plane pendulum's with the equivalent length l = I / (m h) = 2L/3
(Thornton & Marion, *Classical Dynamics of Particles and Systems*, 5th ed.
(2004), §4.4): T = 4 √(l / g) K(k), k = sin(θ0 / 2), K the complete
elliptic integral of the first kind.

The rod's frame is at the pivot with the rod along its x axis; ``theta`` is
its angle from the world x axis, so it hangs at θ = −π/2.  It starts at rest
θ0 = 2 rad from the bottom (far outside the small-angle range: the exact
period is 1.33 times the small-amplitude one).  No loop, no constraint.
"""
import math

from fmigen.joints import JointSystem


def build() -> JointSystem:
    s = JointSystem("pendulum", description=__doc__.splitlines()[0])
    L = s.parameter("L", 1.0, "m", description="rod length")
    m = s.parameter("m", 1.0, "kg", tunable=True, description="rod mass")
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    rod = s.body("rod", m, (0, 0, m * L**2 / 12), com=(L / 2, 0))   # inertia about the centre of mass
    s.revolute("theta", s.ground.origin, rod.origin, start=-math.pi / 2 + 2.0)
    s.gravity = (0, -g, 0)
    s.independent = ["theta"]
    s.dof = 1
    return s
