"""The four-bar crank-rocker of ``fourbar`` written as bodies and joints.

Same geometry, masses, loads and start as ``mechanisms/fourbar.py``: crank
OA (l1 = 1) about the origin, coupler AB (l2 = 4), rocker DB (l3 = 2.5) about
D = (3, 0), uniform 1 kg bars, gravity 9.8 m/s² along −y, input torque
``tau`` (6 N·m) on the crank.  The coordinates are joint angles: ``theta``
(crank, absolute as in ``fourbar``), ``phi`` (rocker, relative to ground, so
absolute too) and the coupler's angle ``A`` relative to the crank, so
fourbar's α = θ + A.  The joint at B is cut; its two in-plane position
equations are the loop constraints.  The branch hint picks the assembly
with B above the ground line (the open four-bar that ``fourbar``'s guesses
pick; the other one at θ = π/2 has B at y ≈ −2.35).
"""
import math

from fmigen.joints import JointSystem


def build() -> JointSystem:
    s = JointSystem("fourbar_joints", description=__doc__.splitlines()[0])
    l1 = s.parameter("l1", 1.0, "m", description="crank length")
    l2 = s.parameter("l2", 4.0, "m", description="coupler length")
    l3 = s.parameter("l3", 2.5, "m", description="rocker length")
    d = s.parameter("d", 3.0, "m", description="x of the rocker pivot")
    g = s.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    m1, m2, m3 = (s.parameter(f"m{i}", 1.0, "kg", tunable=True, description=f"mass of link {i}")
                  for i in (1, 2, 3))
    tau = s.input("tau", 6.0, "N.m", description="crank torque")

    # each bar's frame at its first joint, the bar along its x axis
    crank = s.body("crank", m1, (0, 0, m1 * l1**2 / 12), com=(l1 / 2, 0))
    coupler = s.body("coupler", m2, (0, 0, m2 * l2**2 / 12), com=(l2 / 2, 0))
    rocker = s.body("rocker", m3, (0, 0, m3 * l3**2 / 12), com=(l3 / 2, 0))

    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 2)
    s.revolute("A", crank.marker("A", (l1, 0)), coupler.origin)
    s.revolute("B", coupler.marker("B", (l2, 0)), rocker.marker("B", (l3, 0)))
    s.revolute("phi", s.ground.marker("D", (d, 0)), rocker.origin)
    s.branch_hint(rocker.markers["B"], s.ground.markers["D"], (0, 1, 0), +1)
    s.gravity = (0, -g, 0)
    s.joint_force("theta", tau)
    s.independent = ["theta"]
    s.dof = 1
    return s
