"""A hanging planar ladder of L four-bar cells: one DOF per closed cell.

Two side rails of bars hang from ground, one rung per cell: cell k (k = 1..L)
is the four-bar of the rung above it (ground for k = 1, the pivots at
(0, 0) and (``base``, 0)), its left rail, its rung and its right rail.  The
left rail of cell k hangs from the left end of rung k−1 (joint ``L{k}``),
the right rail from its right end (``R{k}``); rung k is jointed to the left
rail's lower end (``A{k}``) and closes the loop at the right rail's lower end
(``B{k}``, the cut joint).  Coordinates: the relative angles L_k, A_k, R_k;
independent: L_k, one per cell, so f = L and the reduced mass matrix is dense
(every rail carries all the cells below it).

Geometry: rails 1.0 and 1.2 m alternating sides from cell to cell (odd
cells: the right rail is longer, even cells the left), rungs 0.9 m, the
ground base 1.0 m, so no cell is a parallelogram and the rung tilts cancel
pairwise instead of accumulating down the ladder.  Uniform bars of 1 kg/m.
Loads: gravity (9.8 m/s² along −y) and an input torque ``tau`` (default
0.5 N·m) on the top left rail (joint L1).  The start: every left rail hangs
straight down (absolute angle −π/2), at rest; the right rails and rungs are
assembled per cell by the circle intersection on the branch with each
rung's right end to the right of its left end (the branch hints).

``rungs="planar"`` describes the same ladder with other coordinates: every
rung hangs from ground by a planar joint (``P{k}``: its left end's x, y and
its absolute angle), and both A_k and B_k are cut.  The joint coordinates
then nest at most two deep (a rail's angle is relative to the rung above,
whose pose is absolute), where the revolute rungs nest 2L deep: a cell's
pose is a sum of up to 2L − 1 relative angles.  Same bodies, loads, start
and independent coordinates L_k (both variants measure L_k relative to the
rung above), so the two give the same L_k(t).  The planar variant declares no
branch hints: its start is the exact assembly above, and fmigen's
all-assemblies solver (``assemble``, used with hints up to 12 dependent
coordinates) stalls on it at L = 2 ("back-substitution stalled").

``build(cells=L)`` makes any L ≥ 1; the CLI's ``fmigen build ladder``
builds the default L = 4.  The benchmark families of ``scripts/bench_ladder.py``.
"""
import math

from fmigen.joints import JointSystem
from fmigen.model import ModelError

DEFAULT_CELLS = 4
BASE = 1.0            # ground pivot distance
RUNG = 0.9            # rung length
SHORT, LONG = 1.0, 1.2  # rail lengths
DENSITY = 1.0         # kg/m
TAU = 0.5


def rails(k):
    """(left, right) rail lengths of cell k (1-based)."""
    return (SHORT, LONG) if k % 2 else (LONG, SHORT)


def circle_intersections(p, r_p, q, r_q, what):
    """The two points at distance r_p from p and r_q from q (plane), or a
    ModelError naming ``what`` when the circles do not cross."""
    dx, dy = q[0] - p[0], q[1] - p[1]
    d = math.hypot(dx, dy)
    if not abs(r_p - r_q) < d < r_p + r_q:
        raise ModelError(f"{what} does not assemble at the start")
    a = (r_p**2 - r_q**2 + d**2) / (2 * d)
    h = math.sqrt(r_p**2 - a**2)
    mx, my = p[0] + a * dx / d, p[1] + a * dy / d
    return [(mx + h * dy / d, my - h * dx / d), (mx - h * dy / d, my + h * dx / d)]


def assemble_start(cells):
    """Per cell the absolute angles (left rail, rung, right rail) of the start:
    left rails straight down, the right node by circle intersection."""
    out = []
    left, right = (0.0, 0.0), (BASE, 0.0)
    for k in range(1, cells + 1):
        bl, br = rails(k)
        th = -math.pi / 2
        p = (left[0] + bl * math.cos(th), left[1] + bl * math.sin(th))
        # the right node: |x − p| = RUNG, |x − right| = br; the lower one (the
        # open, hanging assembly, right of p)
        q = min(circle_intersections(p, RUNG, right, br, f"ladder cell {k}"), key=lambda c: c[1])
        psi = math.atan2(q[1] - p[1], q[0] - p[0])
        phi = math.atan2(q[1] - right[1], q[0] - right[0])
        out.append((th, psi, phi))
        left, right = p, q
    return out


def build(cells: int = DEFAULT_CELLS, rungs: str = "revolute") -> JointSystem:
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 1:
        raise ModelError(f"ladder: cells must be an integer >= 1, got {cells!r}")
    if rungs not in ("revolute", "planar"):
        raise ModelError(f"ladder: rungs must be 'revolute' or 'planar', got {rungs!r}")
    planar = rungs == "planar"
    s = JointSystem(f"ladder_planar_{cells}" if planar else f"ladder_{cells}",
                    description=f"hanging planar ladder of {cells} four-bar cells"
                                + (" (rungs in absolute coordinates)" if planar else ""))
    g = s.parameter("g", 9.8, "m/s2", tunable=True, description="gravity along -y")
    tau = s.input("tau", TAU, "N.m", description="torque on the top left rail (joint L1)")
    start = assemble_start(cells)

    def bar(name, length):
        m = DENSITY * length
        return s.body(name, m, (0, 0, m * length**2 / 12), com=(length / 2, 0))

    above_left, above_right = s.ground.origin, s.ground.marker("R0", (BASE, 0))
    above_angle = 0.0
    node = (0.0, 0.0)     # the left node above
    for k in range(1, cells + 1):
        bl, br = rails(k)
        th, psi, phi = start[k - 1]
        node = (node[0] + bl * math.cos(th), node[1] + bl * math.sin(th))
        left = bar(f"left{k}", bl)
        rung = bar(f"rung{k}", RUNG)
        right = bar(f"right{k}", br)
        s.revolute(f"L{k}", above_left, left.origin, start=th - above_angle)
        if planar:
            s.planar(f"P{k}", s.ground.origin, rung.origin, start=(node[0], node[1], psi))
        s.revolute(f"A{k}", left.marker("bottom", (bl, 0)), rung.origin,
                   start=None if planar else psi - th)
        s.revolute(f"R{k}", above_right, right.origin, start=phi - above_angle)
        s.revolute(f"B{k}", rung.marker("right", (RUNG, 0)), right.marker("bottom", (br, 0)))
        if not planar:
            s.branch_hint(rung.markers["right"], rung.origin, (1, 0, 0), +1)
        above_left, above_right, above_angle = rung.origin, rung.markers["right"], psi
    s.gravity = (0, -g, 0)
    s.joint_force("L1", tau)
    s.cut = [f"{j}{k}" for k in range(1, cells + 1) for j in (("A", "B") if planar else ("B",))]
    s.independent = [f"L{k}" for k in range(1, cells + 1)]
    s.dof = cells
    return s
