"""Scotch yoke: a crank pin in a slotted yoke that slides on a straight guide (Norton, "Design of Machinery", 5th ed., 2012, ch. 2, the Scotch yoke, a slider-crank with an infinitely long coupler; dimensions chosen for this corpus).

The crank O2A (0.10 m about the origin) carries a block on its pin; the
block slides in a vertical slot of the yoke, and the yoke slides along the
horizontal guide (the x axis): x_yoke = r cos θ exactly, simple harmonic
motion of the yoke at uniform crank speed.  Dimensions chosen for this
corpus.  The crank a uniform bar of 0.1 kg, the block 0.05 kg, the yoke
1 kg; gravity along −y, a crank torque of 0.5 N·m, viscous friction of
2 N·s/m on the yoke's guide and a viscous bearing of 0.2 N·m·s on the
crank; start θ = 30°.

Joints: ``theta`` (ground–crank, revolute), ``A`` (crank–block, revolute
at the pin), ``y`` (yoke–block, prismatic along the slot, the yoke's y
axis), ``x`` (ground–yoke, prismatic along x).
"""
import math

from fmigen.joints import X, Y, JointSystem

R = 0.10
THETA = math.radians(30)


def build():
    s = JointSystem("scotch_yoke", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    tau = s.input("tau", 0.5, "N.m", description="crank torque")
    crank = s.body("crank", 0.1, (0, 0, 0.1 * R**2 / 12), com=(R / 2, 0))
    block = s.body("block", 0.05, (0, 0, 0.05 * 0.03**2 / 6))
    yoke = s.body("yoke", 1.0, (0, 0, 1.0 * (0.3**2 + 0.05**2) / 12))
    s.revolute("theta", s.ground.origin, crank.origin, start=THETA)
    x = s.prismatic("x", s.ground.origin, yoke.origin, axis=X, start=R * math.cos(THETA))
    s.prismatic("y", yoke.origin, block.origin, axis=Y, start=R * math.sin(THETA))
    s.revolute("A", crank.marker("A", (R, 0)), block.origin, start=-THETA)
    s.gravity = (0, -g, 0)
    s.joint_force("theta", tau)
    s.joint_force("x", -2.0 * x.diff())
    s.rotational_spring_damper("bearing_theta", "theta", 0, 0.2)
    s.independent = ["theta"]
    s.dof = 1
    return s
