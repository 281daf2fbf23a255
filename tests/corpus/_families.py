"""Parametric families of the corpus (helpers, no build()): the corpus
modules call them with a source's dimensions, ``scripts/corpus.py --fuzz``
with random ones.  A geometry that does not assemble still gives a system
(with guesses as good as can be had): refusing it is the build's job, and
the fuzzer checks that it does so with a clear error.
"""
import math

import numpy as np

from fmigen.joints import X, Y, Z, JointSystem

from corpus._planar import four_bar  # noqa: F401  (re-exported family)


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


def five_bar(name, description, ground, crank1, coupler1, coupler2, crank2, theta1, theta2, up=True,
             tau1=0.0, tau2=0.0, **kw):
    """The two-DOF five-bar O1 A C B O5: O1 at the origin, O5 at
    (``ground``, 0), the cranks O1A (``crank1``, at ``theta1``) and O5B
    (``crank2``, at ``theta2``) both driven and independent, the couplers
    AC and BC meeting at C on the side of the line A→B that ``up`` names
    (True: left).  As in ``four_bar``, lengths that do not close give a
    system with C guessed on the line A–B, for the build to refuse."""
    from corpus._planar import linkage
    A = (crank1 * math.cos(theta1), crank1 * math.sin(theta1))
    B = (ground + crank2 * math.cos(theta2), crank2 * math.sin(theta2))
    d = math.dist(A, B) or 1e-9
    a = min(max((coupler1**2 - coupler2**2 + d * d) / (2 * d), -coupler1), coupler1)
    h = math.sqrt(max(coupler1**2 - a * a, 0.0))
    ux, uy = (B[0] - A[0]) / d, (B[1] - A[1]) / d
    sgn = 1 if up else -1
    C = (A[0] + a * ux - sgn * h * uy, A[1] + a * uy + sgn * h * ux)
    points = {"O1": (0.0, 0.0), "A": A, "C": C, "B": B, "O5": (ground, 0.0)}
    links = {"crank1": ["O1", "A"], "coupler1": ["A", "C"], "coupler2": ["B", "C"], "crank2": ["O5", "B"]}
    joints = [("theta1", "O1", "ground", "crank1"), ("A", "A", "crank1", "coupler1"),
              ("C", "C", "coupler1", "coupler2"), ("B", "B", "crank2", "coupler2"),
              ("theta2", "O5", "ground", "crank2")]
    return linkage(name, description, points, links, joints, ["theta1", "theta2"], [("C", "A", "B", "coupler1")],
                   torques={"theta1": ("tau1", tau1), "theta2": ("tau2", tau2)}, **kw)
