"""General 6-6 Stewart mechanism (paper 001, example A); ``build_platform``
gives the planar 6-6 Stewart platform (example B, also the module
``stewart_66_platform``).

Forward displacement analysis: given the six leg lengths l1..l6 (independent
coordinates, so ``fmigen assemble stewart_66 --inputs l1=12,l2=...`` works),
find the pose of the moving platform.  Notation of paper 001 (section 4):

- x_j: ground spherical joint X_j (base frame); p_j: moving joint P_j in the
  platform frame, whose origin is P1; R = [[r1 r2 r3], [r4 r5 r6], [r7 r8 r9]]
  maps platform to base coordinates;
- coordinates: the leg-1 vector l⃗1 = (lx1, ly1, lz1) = P1 − X1 and the nine
  entries r1..r9 of R (dependent), the leg lengths l1..l6 (independent);
- loop closure (eq. 9, with x_1 = p_1 = 0): l⃗_j = l⃗1 + R p_j − x_j, so the
  constraints are |l⃗1|² = l1² and |l⃗1 + R p_j − x_j|² = l_j², j = 2..6,
  plus RᵀR = I (12 constraints, 18 coordinates, 6 DOF).

Assembly hints reproduce the paper's system: auxiliary variables
h_k = l⃗1 · (column k of R) (eq. 13), and the implied equations row-3 norm and
the cross products r7 = r2 r6 − r3 r5, r8 = r3 r4 − r1 r6, r9 = r1 r5 − r2 r4
(eqs. 14–16).  The cross products are not DAE constraints (locally they are
redundant) but they select det R = +1: without them the reflections (det R =
−1) would double the 40 solutions.  Grevlex order r5 < r4 < r2 < r9 < r8 <
r7 < r6 < r3 < r1 < lz1 < ly1 < lx1 < h3 < h2 < h1, r5 hidden: a 68-element
basis, degree-40 I/O polynomial (eq. 19).

Platform (example B): all joints in the base plane and the platform plane
(xz_j = pz_j = 0), so only the first two columns of R enter; coordinates
lx1, ly1, lz1, r1, r2, r4, r5, r7, r8, constraints the six legs plus the two
column norms and their dot product (eq. 23), auxiliaries h1, h2 (eq. 21).
Order r5 < r4 < r2 < r8 < r7 < r1 < h2 < h1 < lz1 < ly1 < lx1, r5 hidden: a
43-element basis; a 15x15 Sylvester matrix in r2, r4 gives a degree-20 I/O
polynomial (eq. 24), and each root gives two mirror poses (±lz1): 40.

Data (paper 001): example A
    j  p_j        x_j        l_j
    1  (0,0,0)    (0,0,0)    12
    2  (2,3,3)    (2,3,0)    12
    3  (3,5,0)    (3,4,4)    10
    4  (1,0,4)    (5,1,2)    14
    5  (4,2,1)    (0,2,3)    12
    6  (2,1,3)    (4,0,5)    10
example B: the same with every z set to 0.  For these leg lengths none of
the 40 configurations of either example is real (``assemble`` reports 0
real, as DESIGN.md says; the paper itself does not count them).

Dynamics (not in the paper, so the module is a complete ``Mechanism``): the
platform is a 1.5 kg rigid body with I = diag(0.08, 0.08, 0.08) kg m² about
P1, oriented by R; legs are massless; gravity 9.81 m/s² along −z.  The start
values are only guesses (there is no real assembly at the paper's lengths).
"""
import sympy as sp

from fmigen.kinematics.assemble import AssemblyHints
from fmigen.model import Mechanism

P_A = [(0, 0, 0), (2, 3, 3), (3, 5, 0), (1, 0, 4), (4, 2, 1), (2, 1, 3)]
X_A = [(0, 0, 0), (2, 3, 0), (3, 4, 4), (5, 1, 2), (0, 2, 3), (4, 0, 5)]
LEGS = [12, 12, 10, 14, 12, 10]
P_B = [(px, py, 0) for px, py, _ in P_A]
X_B = [(xx, xy, 0) for xx, xy, _ in X_A]

ORDER_A = ["h1", "h2", "h3", "lx1", "ly1", "lz1", "r1", "r3", "r6", "r7", "r8", "r9", "r2", "r4", "r5"]
ORDER_B = ["lx1", "ly1", "lz1", "h1", "h2", "r1", "r7", "r8", "r2", "r4", "r5"]


def _build(name, planar: bool) -> Mechanism:
    m = Mechanism(name, description=__doc__.splitlines()[0])
    P, X = (P_B, X_B) if planar else (P_A, X_A)
    # start guesses: platform above the base, R = I (no real assembly exists
    # at the paper's leg lengths; these only need a full-rank Jacobian)
    lx = m.coordinate("lx1", 1.0, "m", description="leg-1 vector x (P1 - X1)")
    ly = m.coordinate("ly1", 1.0, "m", description="leg-1 vector y")
    lz = m.coordinate("lz1", 11.9, "m", description="leg-1 vector z")
    start = {1: 1.0, 2: 0.01, 3: 0.02, 4: -0.01, 5: 1.0, 6: 0.03, 7: 0.02, 8: -0.03, 9: 1.0}
    used = (1, 2, 4, 5, 7, 8) if planar else range(1, 10)
    r = {k: m.coordinate(f"r{k}", start[k], "1", description=f"rotation matrix entry r{k}") for k in used}
    legs = [m.coordinate(f"l{j}", LEGS[j - 1], "m", description=f"length of leg {j}") for j in range(1, 7)]
    if planar:
        R = sp.Matrix([[r[1], r[2], 0], [r[4], r[5], 0], [r[7], r[8], 0]])   # third column never used
    else:
        R = sp.Matrix(3, 3, [r[k] for k in range(1, 10)])
    l1 = sp.Matrix([lx, ly, lz])
    m.constraint("leg1", l1.dot(l1) - legs[0] ** 2)
    for j in range(1, 6):
        v = l1 + R * sp.Matrix(P[j]) - sp.Matrix(X[j])
        m.constraint(f"leg{j + 1}", v.dot(v) - legs[j] ** 2)
    cols = [1, 2] if planar else [1, 2, 3]
    for a in cols:
        for b in cols:
            if b >= a:
                ca, cb = R[:, a - 1], R[:, b - 1]
                m.constraint(f"R_col{a}_col{b}", ca.dot(cb) - (1 if a == b else 0))

    # dynamics: the platform (massless legs)
    from sympy.physics import mechanics as me
    frame = me.ReferenceFrame(f"{name}_platform")
    if planar:
        c3 = R[:, 0].cross(R[:, 1])
        dcm = sp.Matrix.hstack(R[:, 0], R[:, 1], c3)
    else:
        dcm = R
    frame.orient_explicit(m.world, dcm.T)          # frame axes in world = columns of R
    m.body("platform", 1.5, (0.08, 0.08, 0.08), (lx, ly, lz), frame)
    m.gravity = (0, 0, -9.81)
    m.independent = [f"l{j}" for j in range(1, 7)]
    m.dof = 6
    h = {1: l1.dot(R[:, 0]), 2: l1.dot(R[:, 1])}
    if planar:
        m.assembly_hints = AssemblyHints(order=ORDER_B, hidden="r5", auxiliary={f"h{k}": e for k, e in h.items()})
    else:
        h[3] = l1.dot(R[:, 2])
        implied = [("R_row3", r[7] ** 2 + r[8] ** 2 + r[9] ** 2 - 1),
                   ("det_r7", r[7] - (r[2] * r[6] - r[3] * r[5])),
                   ("det_r8", r[8] - (r[3] * r[4] - r[1] * r[6])),
                   ("det_r9", r[9] - (r[1] * r[5] - r[2] * r[4]))]
        m.assembly_hints = AssemblyHints(order=ORDER_A, hidden="r5",
                                         auxiliary={f"h{k}": e for k, e in h.items()}, implied=implied)
    return m


def build(example: str = "A") -> Mechanism:
    """Example "A" (general 6-6 Stewart mechanism, the default) or "B" (planar platform)."""
    if example.upper() in ("A", "MECHANISM"):
        return _build("stewart_66", planar=False)
    if example.upper() in ("B", "PLATFORM"):
        return build_platform()
    raise ValueError(f"example must be 'A' or 'B', not {example!r}")


def build_platform() -> Mechanism:
    return _build("stewart_66_platform", planar=True)
