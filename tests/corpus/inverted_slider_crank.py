"""Inverted slider-crank: the block on the crank pin slides along a rocker pivoted to ground (Norton, "Design of Machinery", 5th ed., 2012, §4.7, the inverted slider-crank position solution; dimensions chosen for this corpus).

The fourbar slider-crank's inversion in which the slider block turns with
the crank pin and slides along link 4, itself pivoted to ground (the
oscillating-cylinder engine, or the quick-return's driver).  Crank O2A =
0.10 m about O2 = (0, 0), rocker pivoted at O4 = (0.25, 0) with the block
sliding along its axis through O4 (no offset), the block's slide s = |O4A|
between 0.15 and 0.35 m; the crank turns fully and the rocker oscillates.
Dimensions chosen for this corpus.  The crank a uniform bar of 0.1 kg, the
rocker a uniform bar of 0.45 kg and 0.45 m from O4, the block 0.2 kg
(a 0.05 m square); gravity along −y, a crank torque of 0.5 N·m and a
viscous bearing of 0.3 N·m·s on the crank; start θ = 60°.

Joints: ``theta`` (ground–crank, revolute at O2), ``A`` (crank–block,
revolute at the pin), ``s`` (rocker–block, prismatic along the rocker's
x axis), ``phi`` (ground–rocker, revolute at O4).
"""
import math

from fmigen.joints import X, JointSystem

A_CRANK, D_GROUND, L_ROCKER = 0.10, 0.25, 0.45
THETA = math.radians(60)


def build():
    s = JointSystem("inverted_slider_crank", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    tau = s.input("tau", 0.5, "N.m", description="crank torque")
    crank = s.body("crank", 0.1, (0, 0, 0.1 * A_CRANK**2 / 12), com=(A_CRANK / 2, 0))
    rocker = s.body("rocker", 0.45, (0, 0, 0.45 * L_ROCKER**2 / 12), com=(L_ROCKER / 2, 0))
    block = s.body("block", 0.2, (0, 0, 0.2 * 0.05**2 / 6))
    A = (A_CRANK * math.cos(THETA), A_CRANK * math.sin(THETA))
    phi0 = math.atan2(A[1], A[0] - D_GROUND)
    s0 = math.hypot(A[0] - D_GROUND, A[1])
    s.revolute("theta", s.ground.origin, crank.origin, start=THETA)
    s.revolute("phi", s.ground.marker("O4", (D_GROUND, 0)), rocker.origin, start=phi0)
    s.prismatic("s", rocker.origin, block.origin, axis=X, start=s0)
    s.revolute("A", crank.marker("A", (A_CRANK, 0)), block.origin, start=phi0 - THETA)
    s.gravity = (0, -g, 0)
    s.joint_force("theta", tau)
    s.rotational_spring_damper("bearing_theta", "theta", 0, 0.3)
    s.independent = ["theta"]
    s.dof = 1
    return s
