"""Double compound pendulum: two uniform rods in series on revolute joints.

The equations of motion are those of Spong, Hutchinson & Vidyasagar,
*Robot Modeling and Control* (2006), §7.4.2, the planar elbow manipulator,
with no joint torque: q1 the first link's angle from the x axis, q2 the
second's relative to the first, link i of length l_i, mass m_i, centre of
mass at l_ci from its joint and central inertia I_i (here uniform rods:
l_ci = l_i/2, I_i = m_i l_i²/12),

    d11 = m1 lc1² + m2 (l1² + lc2² + 2 l1 lc2 cos q2) + I1 + I2
    d12 = m2 (lc2² + l1 lc2 cos q2) + I2,   d22 = m2 lc2² + I2
    h = −m2 l1 lc2 sin q2
    d11 q̈1 + d12 q̈2 + 2h q̇1 q̇2 + h q̇2² + φ1 = 0
    d12 q̈1 + d22 q̈2 − h q̇1² + φ2 = 0
    φ1 = (m1 lc1 + m2 l1) g cos q1 + m2 lc2 g cos(q1 + q2),  φ2 = m2 lc2 g cos(q1 + q2).

Rods of 1.0 m / 1.0 kg and 0.7 m / 0.5 kg, g = 9.81 m/s² along −y.  It
starts at rest with the first rod horizontal (q1 = 0) and the second bent
down by 0.5 rad: a large, chaotic swing.  No loop, no constraint.
"""
from fmigen.joints import JointSystem


def build() -> JointSystem:
    s = JointSystem("double_pendulum", description=__doc__.splitlines()[0])
    l1 = s.parameter("l1", 1.0, "m", description="length of rod 1")
    l2 = s.parameter("l2", 0.7, "m", description="length of rod 2")
    m1 = s.parameter("m1", 1.0, "kg", tunable=True, description="mass of rod 1")
    m2 = s.parameter("m2", 0.5, "kg", tunable=True, description="mass of rod 2")
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    rod1 = s.body("rod1", m1, (0, 0, m1 * l1**2 / 12), com=(l1 / 2, 0))
    rod2 = s.body("rod2", m2, (0, 0, m2 * l2**2 / 12), com=(l2 / 2, 0))
    s.revolute("q1", s.ground.origin, rod1.origin, start=0.0)
    s.revolute("q2", rod1.marker("elbow", (l1, 0)), rod2.origin, start=-0.5)
    s.gravity = (0, -g, 0)
    s.independent = ["q1", "q2"]
    s.dof = 2
    return s
