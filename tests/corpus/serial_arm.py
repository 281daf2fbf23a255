"""Planar three-link serial arm driven by joint torques (an open chain).

Spong, Hutchinson & Vidyasagar, *Robot Modeling and Control* (2006), §7.3:
the Euler–Lagrange equations of an n-link arm in joint coordinates,

    Σ_j d_kj(q) q̈_j + Σ_ij c_ijk(q) q̇_i q̇_j + φ_k(q) = τ_k,
    D(q) = Σ_i [m_i J_vci(q)ᵀ J_vci(q) + J_ωiᵀ I_i J_ωi],
    c_ijk = ½ (∂d_kj/∂q_i + ∂d_ki/∂q_j − ∂d_ij/∂q_k),  φ_k = ∂P/∂q_k,

with J_vci the Jacobian of link i's centre of mass (planar revolute joints:
J_ωi has ones in its first i columns).  Links of uniform rods as in the
planar elbow manipulator of §7.4.2 (l_ci = l_i/2, I_i = m_i l_i²/12):
0.5 m / 4 kg, 0.4 m / 3 kg, 0.2 m / 1 kg, g = 9.81 m/s² along −y.  Each
joint angle is relative to the link before it (the first from the world x
axis), each driven by a torque input ``tau1``..``tau3``: the start values
hold the arm's start pose against gravity, so with the inputs left at their
starts the arm stays put (the statics φ(q0) = τ of the same equations).
"""
import math

from fmigen.joints import JointSystem

#: start pose: shoulder 30° up, elbow 45° down, wrist 15° down
Q0 = (math.pi / 6, -math.pi / 4, -math.pi / 12)
LINKS = ((0.5, 4.0), (0.4, 3.0), (0.2, 1.0))       # (length m, mass kg)
G = 9.81


def holding_torques(q=Q0, links=LINKS, g=G):
    """τ_k = φ_k = ∂P/∂q_k at rest: the moment of the weight of every link
    beyond joint k about joint k (Spong et al. §7.3's φ), independent of the
    joint description."""
    angles = [sum(q[:i + 1]) for i in range(len(q))]
    joints_x = [0.0]
    for (l, _), a in zip(links, angles):
        joints_x.append(joints_x[-1] + l * math.cos(a))
    com_x = [joints_x[i] + links[i][0] / 2 * math.cos(angles[i]) for i in range(len(links))]
    return [sum(links[i][1] * g * (com_x[i] - joints_x[k]) for i in range(k, len(links)))
            for k in range(len(links))]


def build() -> JointSystem:
    s = JointSystem("serial_arm", description=__doc__.splitlines()[0])
    g = s.parameter("g", G, "m/s2", tunable=True, description="gravity along -y")
    tau0 = holding_torques()
    parent = s.ground.origin
    for i, ((length, mass), q0) in enumerate(zip(LINKS, Q0), start=1):
        l = s.parameter(f"l{i}", length, "m", description=f"length of link {i}")
        m = s.parameter(f"m{i}", mass, "kg", tunable=True, description=f"mass of link {i}")
        link = s.body(f"link{i}", m, (0, 0, m * l**2 / 12), com=(l / 2, 0))
        s.revolute(f"q{i}", parent, link.origin, start=q0)
        s.joint_force(f"q{i}", s.input(f"tau{i}", tau0[i - 1], "N.m",
                                       description=f"torque of joint {i} on link {i}"))
        parent = link.marker("tip", (l, 0))
    s.gravity = (0, -g, 0)
    s.independent = ["q1", "q2", "q3"]
    s.dof = 3
    return s
