"""RSSP spatial slider-crank: a crank, a ball-jointed coupler and a slider on a guide skew to the crank axis (layout after the RSSP chain of Suh & Radcliffe, "Kinematics and Mechanisms Design", Wiley 1978, spatial linkages).

Dimensions chosen for this corpus, layout after that book's spatial
slider-crank: the crank turns about z through the origin (radius 0.15 m,
pin A); the slider runs along x on a guide through (0, 0.45, 0.3) m, skew
to the crank axis; the coupler A B is 0.8 m, long enough for the crank to
turn fully.  The coupler hangs from the slider by a universal joint (first
axis z, then x: its gimbal lock, the coupler along z, is far from every
pose here) instead of a second ball joint, which would leave the coupler's
spin about its own axis undetermined.  Of the two slider positions at each
crank angle the start takes the one to the right (+x) of the crank pin.

Drive: gravity along −z, a constant crank torque of 0.5 N·m and a viscous
damper of 2 N·s/m on the slider; start at θ = 0.7 rad.  Bars of 1 kg/m, a
0.5 kg slider.
"""
import math

from fmigen.joints import JointSystem, X, Z

from corpus._spatial import rod_inertia

R, GUIDE, L = 0.15, (0.0, 0.45, 0.3), 0.8
THETA0 = 0.7


def build():
    s = JointSystem("rssp", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -z")
    crank = s.body("crank", 0.15, (0.15 * 0.01**2 / 2, 0.15 * R**2 / 12, 0.15 * R**2 / 12), com=(R / 2, 0, 0))
    slider = s.body("slider", 0.5, (0.5 * 0.05**2 / 6,) * 3)
    rod = s.body("coupler", 0.8, rod_inertia(0.8, L), com=(0, 0, L / 2))
    # the described pose: the slider right of the crank pin
    A = (R * math.cos(THETA0), R * math.sin(THETA0), 0.0)
    dy, dz = GUIDE[1] - A[1], GUIDE[2] - A[2]
    x0 = A[0] + math.sqrt(L * L - dy * dy - dz * dz)
    d = [(A[0] - x0) / L, -dy / L, -dz / L]                  # coupler direction, B to A
    q2 = math.acos(d[2])                                      # Rot(z, q1) Rot(x, q2) z = d
    q1 = math.atan2(d[0], -d[1])
    s.revolute("theta", s.ground.origin, crank.origin, axis=Z, start=THETA0)
    x = s.prismatic("x", s.ground.marker("guide", GUIDE), slider.origin, axis=X, start=x0)
    s.universal("U", slider.origin, rod.origin, axis=Z, axis2=X, coordinates=["u1", "u2"], start=[q1, q2])
    s.spherical("S", crank.marker("A", (R, 0, 0)), rod.marker("A", (0, 0, L)))
    s.branch_hint(slider.origin, crank.markers["A"], X, +1)
    s.gravity = (0, 0, -g)
    s.joint_force("theta", s.input("tau", 0.5, "N.m", description="crank torque"))
    s.joint_force("x", -2.0 * x.diff())
    s.independent = ["theta"]
    s.dof = 1
    return s
