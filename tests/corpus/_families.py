"""Parametric families of the corpus (helpers, no build()): the corpus
modules call them with a source's dimensions, ``scripts/corpus.py --fuzz``
with random ones.  A geometry that does not assemble still gives a system
(with guesses as good as can be had): refusing it is the build's job, and
the fuzzer checks that it does so with a clear error.

The link lengths are the ones given, exactly, whether they close or not.
That is why the four-bar and the five-bar here are not
``_planar.linkage``'s: a drawn pose takes every length from its points,
and a drawing of lengths that do not close (the coupler's end clamped onto
the line to the rocker's pivot) would be another, flattened linkage that
closes at a singular configuration.
"""
import math

import numpy as np

from fmigen.joints import X, Y, Z, JointSystem



def slider_crank(name, description, r, l, e, theta, right=True, tau=0.0, c=0.0, g=9.81,
                 m_crank=None, m_rod=None, m_slider=0.5):
    """Crank O A (``r``) about the origin, rod A C (``l``), slider C on the
    line y = ``e`` along x; ``right``: C to the right of the crank pin (the
    branch).  Bars of 1 kg/m unless given."""
    s = JointSystem(name, description=description)
    gs = s.parameter("g", g, "m/s2", tunable=True, description="gravity along -y")
    m1 = m_crank if m_crank is not None else round(r, 6)
    m2 = m_rod if m_rod is not None else round(l, 6)
    crank = s.body("crank", m1, (0, 0, m1 * r**2 / 12), com=(r / 2, 0))
    rod = s.body("rod", m2, (0, 0, m2 * l**2 / 12), com=(l / 2, 0))
    slider = s.body("slider", m_slider, (0, 0, m_slider * 0.05**2 / 6))
    A = (r * math.cos(theta), r * math.sin(theta))
    dy = e - A[1]
    dx = math.sqrt(max(l * l - dy * dy, 0.0)) * (1 if right else -1)
    x0 = A[0] + dx
    s.revolute("theta", s.ground.origin, crank.origin, start=theta)
    s.revolute("B", crank.marker("A", (r, 0)), rod.origin, start=math.atan2(dy, dx) - theta)
    x = s.prismatic("x", s.ground.marker("guide", (0, e)), slider.origin, axis=X, start=x0)
    s.revolute("C", rod.marker("C", (l, 0)), slider.origin)
    # the two assemblies put C either side of the pin A along the guide
    s.branch_hint(slider.origin, crank.markers["A"], X, +1 if right else -1)
    s.gravity = (0, -gs, 0)
    s.joint_force("theta", s.input("tau", tau, "N.m", description="crank torque"))
    if c:
        s.joint_force("x", -c * x.diff())
    s.independent = ["theta"]
    s.dof = 1
    return s


def _rocker_angles(A, B0, arm, L):
    """The rocker angles φ about x at which |A − (B0 + Rx(φ) arm)| = L
    (0, 1 or 2 of them), by the half-angle-free form P cos φ + Q sin φ = R."""
    d = np.asarray(A, float) - np.asarray(B0, float)
    ex, cy, cz = arm
    # |d − (ex, cy cosφ − cz sinφ, cy sinφ + cz cosφ)|² = L²
    P = 2 * (d[1] * cy + d[2] * cz)
    Q = 2 * (d[2] * cy - d[1] * cz)
    R = d @ d + ex * ex + cy * cy + cz * cz - 2 * d[0] * ex - L * L
    rho = math.hypot(P, Q)
    if rho == 0 or abs(R) > rho:
        return []
    base, half = math.atan2(Q, P), math.acos(R / rho)
    return [base + half, base - half]


def rssr(name, description, crank, B0, arm, L, theta, branch=0, tau=0.0, g=9.81, rod_mass=None):
    """The RSSR with perpendicular skew axes (Hartenberg & Denavit's standard
    spatial four-bar): the crank about z through the origin (radius
    ``crank``, pin A), the rocker about x through ``B0`` with its pin B at
    ``arm`` = (along the axis, y, z) in the rocker frame, the coupler A B of
    length ``L``.  The coupler hangs from the rocker by a universal joint
    (axes x, then y) instead of a second spherical joint: the same motion
    without the coupler's idle spin about its own axis, which two spherical
    joints leave undetermined.  ``branch`` (0/1) picks the rocker angle.
    Gravity along −z."""
    s = JointSystem(name, description=description)
    gs = s.parameter("g", g, "m/s2", tunable=True, description="gravity along -z")
    mc, mr = round(crank, 6), round(math.sqrt(sum(a * a for a in arm[1:])), 6)
    ml = rod_mass if rod_mass is not None else round(L, 6)
    cb = s.body("crank", mc, (mc * 0.01**2 / 2, mc * crank**2 / 12, mc * crank**2 / 12), com=(crank / 2, 0, 0))
    arm_len = math.hypot(arm[1], arm[2])
    rk = s.body("rocker", mr, (mr * arm_len**2 / 12, mr * arm_len**2 / 12, mr * 0.01**2 / 2),
                com=(arm[0], arm[1] / 2, arm[2] / 2))
    rod = s.body("coupler", ml, (ml * L**2 / 12, ml * L**2 / 12, ml * 0.01**2 / 2), com=(0, 0, L / 2))
    A = (crank * math.cos(theta), crank * math.sin(theta), 0.0)
    phis = _rocker_angles(A, B0, arm, L)
    phi = phis[branch] if phis else 0.0
    c, sn = math.cos(phi), math.sin(phi)
    B = np.array(B0, float) + np.array([arm[0], c * arm[1] - sn * arm[2], sn * arm[1] + c * arm[2]])
    d = (np.array(A) - B) / L
    # d in the rocker frame, then the universal joint's angles: Rx(q1) Ry(q2) z = d
    dl = np.array([[1, 0, 0], [0, c, sn], [0, -sn, c]]) @ d
    q2 = math.asin(max(-1.0, min(1.0, dl[0])))
    q1 = math.atan2(-dl[1], dl[2])
    s.revolute("theta", s.ground.origin, cb.origin, axis=Z, start=theta)
    s.revolute("phi", s.ground.marker("B0", tuple(B0)), rk.origin, axis=X, start=phi)
    s.universal("U", rk.marker("B", tuple(arm)), rod.origin, axis=X, axis2=Y,
                coordinates=["u1", "u2"], start=[q1, q2])
    s.spherical("S", cb.marker("A", (crank, 0, 0)), rod.marker("A", (0, 0, L)))
    if len(phis) == 2:
        # the two rocker angles put B on either side of their mid-point
        B1 = np.array(B0) + np.array([arm[0], math.cos(phis[0]) * arm[1] - math.sin(phis[0]) * arm[2],
                                      math.sin(phis[0]) * arm[1] + math.cos(phis[0]) * arm[2]])
        B2 = np.array(B0) + np.array([arm[0], math.cos(phis[1]) * arm[1] - math.sin(phis[1]) * arm[2],
                                      math.sin(phis[1]) * arm[1] + math.cos(phis[1]) * arm[2]])
        w = B1 - B2 if branch == 0 else B2 - B1
        if np.linalg.norm(w) > 1e-6:
            mid = (B1 + B2) / 2
            s.branch_hint(rk.markers["B"], s.ground.marker("mid", tuple(round(v, 9) for v in mid)),
                          tuple(round(v, 9) for v in w), +1)
    s.gravity = (0, 0, -gs)
    s.joint_force("theta", s.input("tau", tau, "N.m", description="crank torque"))
    s.independent = ["theta"]
    s.dof = 1
    return s



def _bar(s, name, length, density=1.0):
    """A uniform bar of ``density`` kg/m, its frame at one end, along x."""
    m = round(density * length, 6)
    return s.body(name, m, (0, 0, m * length**2 / 12), com=(length / 2, 0))


def _apex(P, Q, a, b, left):
    """The point at distance ``a`` from P and ``b`` from Q, left of P→Q if
    ``left`` (else right); where the two circles do not meet, the point of
    the line P–Q nearest both, a guess for the build to refuse."""
    d = math.dist(P, Q) or 1e-9
    x = min(max((a * a - b * b + d * d) / (2 * d), -a), a)
    h = math.sqrt(max(a * a - x * x, 0.0))
    ux, uy = (Q[0] - P[0]) / d, (Q[1] - P[1]) / d
    sg = 1 if left else -1
    return (P[0] + x * ux - sg * h * uy, P[1] + x * uy + sg * h * ux)


def _angle(P, Q):
    return math.atan2(Q[1] - P[1], Q[0] - P[0])


def _wrap(a):
    return math.atan2(math.sin(a), math.cos(a))


def four_bar(name, description, ground, crank, coupler, rocker, theta, open_=True, tau=0.0, g=9.81):
    """The four-bar O2 A B O4: O2 at the origin, O4 at (``ground``, 0), the
    crank O2A (``crank``) at ``theta`` (independent, driven by ``tau``),
    the coupler AB, the rocker O4B; uniform bars of 1 kg/m, gravity along
    −y.  B starts on the side of the line A→O4 that ``open_`` names (True:
    left, the uncrossed drawing for B above the ground line), a branch hint
    keeps it there."""
    s = JointSystem(name, description=description)
    gs = s.parameter("g", g, "m/s2", tunable=True, description="gravity along -y")
    A = (crank * math.cos(theta), crank * math.sin(theta))
    O4 = (ground, 0.0)
    B = _apex(A, O4, coupler, rocker, open_)
    b_crank, b_coupler, b_rocker = _bar(s, "crank", crank), _bar(s, "coupler", coupler), _bar(s, "rocker", rocker)
    a_coupler, a_rocker = _angle(A, B), _angle(O4, B)
    s.revolute("theta", s.ground.origin, b_crank.origin, start=theta)
    s.revolute("A", b_crank.marker("A", (crank, 0)), b_coupler.origin, start=_wrap(a_coupler - theta))
    s.revolute("B", b_coupler.marker("B", (coupler, 0)), b_rocker.marker("B", (rocker, 0)),
               start=_wrap(a_rocker - a_coupler))
    s.revolute("phi", s.ground.marker("O4", O4), b_rocker.origin, start=_wrap(a_rocker))
    # B − A on the drawn side of the line A→O4 (its normal at the start)
    n = (-(O4[1] - A[1]), O4[0] - A[0], 0)
    s.branch_hint(b_rocker.markers["B"], b_crank.markers["A"], tuple(round(c, 6) for c in n), +1 if open_ else -1)
    s.gravity = (0, -gs, 0)
    s.joint_force("theta", s.input("tau", tau, "N.m", description="crank torque"))
    s.independent = ["theta"]
    s.dof = 1
    return s


def five_bar(name, description, ground, crank1, coupler1, coupler2, crank2, theta1, theta2, up=True,
             tau1=0.0, tau2=0.0, g=9.81):
    """The two-DOF five-bar O1 A C B O5: O1 at the origin, O5 at
    (``ground``, 0), the cranks O1A (``crank1`` at ``theta1``) and O5B
    (``crank2`` at ``theta2``) both independent and driven (``tau1``,
    ``tau2``), the couplers AC (``coupler1``) and BC (``coupler2``); C
    starts on the side of the line A→B that ``up`` names (True: left), a
    branch hint keeps it there.  Uniform bars of 1 kg/m, gravity along −y."""
    s = JointSystem(name, description=description)
    gs = s.parameter("g", g, "m/s2", tunable=True, description="gravity along -y")
    A = (crank1 * math.cos(theta1), crank1 * math.sin(theta1))
    B = (ground + crank2 * math.cos(theta2), crank2 * math.sin(theta2))
    C = _apex(A, B, coupler1, coupler2, up)
    k1, c1 = _bar(s, "crank1", crank1), _bar(s, "coupler1", coupler1)
    c2, k2 = _bar(s, "coupler2", coupler2), _bar(s, "crank2", crank2)
    a1, a2 = _angle(A, C), _angle(B, C)
    s.revolute("theta1", s.ground.origin, k1.origin, start=theta1)
    s.revolute("A", k1.marker("A", (crank1, 0)), c1.origin, start=_wrap(a1 - theta1))
    s.revolute("C", c1.marker("C", (coupler1, 0)), c2.marker("C", (coupler2, 0)), start=_wrap(a2 - a1))
    s.revolute("B", k2.marker("B", (crank2, 0)), c2.origin, start=_wrap(a2 - theta2))
    s.revolute("theta2", s.ground.marker("O5", (ground, 0)), k2.origin, start=theta2)
    n = (-(B[1] - A[1]), B[0] - A[0], 0)
    s.branch_hint(c1.markers["C"], k1.markers["A"], tuple(round(c, 6) for c in n), +1 if up else -1)
    s.gravity = (0, -gs, 0)
    s.joint_force("theta1", s.input("tau1", tau1, "N.m", description="torque on crank 1"))
    s.joint_force("theta2", s.input("tau2", tau2, "N.m", description="torque on crank 2"))
    s.independent = ["theta1", "theta2"]
    s.dof = 2
    return s
