"""A chain of L four-bars, each driven by the previous one's rocker: one DOF for any L.

The constant-DOF companion of ``ladder``: the loops grow with L, the
reduced mass matrix stays 1×1, so the two families separate the growth of
the kinematics and the embedding from the growth of the f × f solve.

Bars P_0 .. P_L (2.5 m, 1 kg) pivot on ground at (3k, 0) (joints ``theta{k}``,
absolute angles).  Cell k (k = 1..L) is ``fourbar``'s crank-rocker: ground
3 m, crank 1 m = the point 1 m along P_{k−1}, coupler C_k 4 m (1 kg; joint
``A{k}`` at the crank, relative to P_{k−1}), rocker 2.5 m = P_k, closing at
P_k's tip (``B{k}``, the cut joint).  So P_k is cell k's rocker and cell
k+1's crank; only theta0 is independent.  Each cell is a Grashof crank-rocker
driven by its crank, so no cell has a singular position for any crank angle.
Loads: gravity (9.8 m/s² along −y) and the input torque ``tau`` (default
6 N·m, as ``fourbar``) on P_0.  The start: P_0 at π/2, at rest, every cell
assembled by the circle intersection on the branch with the coupler's far
end above the ground line (the branch hints).

``build(cells=L)`` makes any L ≥ 1; ``fmigen build fourbar_chain`` builds
the default L = 4.  Measured by ``scripts/bench_ladder.py``.
"""
import math

from fmigen.joints import JointSystem
from fmigen.model import ModelError

from mechanisms.ladder import circle_intersections

DEFAULT_CELLS = 4
GROUND, CRANK, COUPLER, ROCKER = 3.0, 1.0, 4.0, 2.5
MASS = 1.0
TAU = 6.0
THETA0 = math.pi / 2


def assemble_start(cells):
    """[(θ_0), (coupler angle, θ_1), …]: absolute angles, B above the ground line."""
    thetas, couplers = [THETA0], []
    for k in range(1, cells + 1):
        th = thetas[-1]
        a = (GROUND * (k - 1) + CRANK * math.cos(th), CRANK * math.sin(th))
        d_piv = (GROUND * k, 0.0)
        b = max(circle_intersections(a, COUPLER, d_piv, ROCKER, f"fourbar_chain cell {k}"), key=lambda c: c[1])
        couplers.append(math.atan2(b[1] - a[1], b[0] - a[0]))
        thetas.append(math.atan2(b[1] - d_piv[1], b[0] - d_piv[0]))
    return thetas, couplers


def build(cells: int = DEFAULT_CELLS) -> JointSystem:
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise ModelError(f"fourbar_chain: cells must be an integer >= 1, got {cells!r}")
    s = JointSystem(f"fourbar_chain_{cells}", description=f"chain of {cells} four-bars, one DOF")
    g = s.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    tau = s.input("tau", TAU, "N.m", description="torque on the first crank P_0")
    thetas, couplers = assemble_start(cells)
    bars = []
    for k in range(cells + 1):
        p = s.body(f"P{k}", MASS, (0, 0, MASS * ROCKER**2 / 12), com=(ROCKER / 2, 0))
        s.revolute(f"theta{k}", s.ground.marker(f"O{k}", (GROUND * k, 0)), p.origin, start=thetas[k])
        p.marker("tip", (ROCKER, 0))
        bars.append(p)
    for k in range(1, cells + 1):
        c = s.body(f"C{k}", MASS, (0, 0, MASS * COUPLER**2 / 12), com=(COUPLER / 2, 0))
        s.revolute(f"A{k}", bars[k - 1].marker("crank", (CRANK, 0)), c.origin,
                   start=couplers[k - 1] - thetas[k - 1])
        s.revolute(f"B{k}", c.marker("B", (COUPLER, 0)), bars[k].markers["tip"])
        s.branch_hint(bars[k].markers["tip"], s.ground.markers[f"O{k}"], (0, 1, 0), +1)
    s.gravity = (0, -g, 0)
    s.joint_force("theta0", tau)
    s.cut = [f"B{k}" for k in range(1, cells + 1)]
    s.independent = ["theta0"]
    s.dof = 1
    return s
