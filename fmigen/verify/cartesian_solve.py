"""The Cartesian reference's linear algebra (``cartesian.py``): its
constraint rows as a matrix, and the accelerations of Newton–Euler bordered
by them.

Two solves of the same equations, M v̇ + Jᵀλ = Q, J v̇ = γ̃ (γ̃ with the
Baumgarte terms), bordered by the drives of prescribed coordinates
(``prescribed.py``) when there are any:

* **SVD** (any J): the redundant rows out by the SVD of J, J = U S Vᵀ, and
  the rank-r rows Vᵣᵀ v̇ = Sᵣ⁻¹ Uᵣᵀ γ̃ in their place (``cartesian.py``'s
  module docstring says why).  A planar mechanism written in 3D, or an
  overconstrained loop, has redundant rows everywhere.
* **sparse** (J of full row rank): the system as it stands, each row of J
  touching two bodies' velocities and M block diagonal, factored by
  SuperLU.  Its accelerations are the SVD path's (the same unique v̇ where
  J has full rank) at a fraction of its cost: a dense SVD of J and a dense
  LU of the bordered system grow as the cube of the bodies' count.

``AccelerationSolver.decide`` picks the sparse path for a run when J at its
start has full row rank by a clear margin (``FULL_RANK_MARGIN``).  Every
evaluation on it then asks whether the SVD path would keep all of J's rows,
by that path's own cut (``RankWatch``): where it would drop one (J at or
near a loss of rank mid-run), the SVD path solves that evaluation, so the
two paths never differ by which rows count.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sps
from scipy.sparse.linalg import norm as sparse_norm, splu

from fmigen.verify.prescribed import solve_bordered

#: the smallest singular value of J at the start, relative to its largest,
#: above which J counts as of full row rank for the run: far above the SVD
#: path's rank cut (1e-8), so a J that takes the sparse path is not near a
#: redundancy the cut would see
FULL_RANK_MARGIN = 1e-6
#: the SVD path's rank cut, relative to J's largest singular value: between
#: the redundant rows' singular values off the constraint manifold (of the
#: order of the drift) and a regular configuration's
RANK_CUT = 1e-8


def body_columns(b):
    """The six columns of V that body b's velocity takes (−1: ground's, none)."""
    return 6 * b + np.arange(6) if b >= 0 else np.full(6, -1)


def joint_rows_matrix(rows, cols, n6, sparse=False):
    """(Φ, J, γ) from constraint rows (value, Jacobian over one joint's 12
    columns, quadratic term) and per row its joint's columns
    (``body_columns`` of parent and child); J dense (rows × n6) or CSR."""
    if not rows:
        return np.zeros(0), (sps.csr_matrix((0, n6)) if sparse else np.zeros((0, n6))), np.zeros(0)
    local = np.array([r[1] for r in rows])
    cmap = np.array(cols)
    keep = cmap >= 0
    ri = np.broadcast_to(np.arange(len(rows))[:, None], cmap.shape)
    if sparse:
        J = sps.csr_matrix((local[keep], (ri[keep], cmap[keep])), shape=(len(rows), n6))
    else:
        J = np.zeros((len(rows), n6))
        J[ri[keep], cmap[keep]] = local[keep]
    return np.array([r[0] for r in rows]), J, -np.array([r[2] for r in rows])


def svd_rows(J):
    """(u, sv, vt, r): the SVD of a dense J and its rank by ``RANK_CUT``."""
    u, sv, vt = np.linalg.svd(J, full_matrices=False)
    return u, sv, vt, svd_rows_rank(sv)


class RankWatch:
    """Whether J has full row rank by ``RANK_CUT`` (``svd_rows`` keeps all
    its rows), decided exactly without an SVD per evaluation: singular
    values move by at most the change of the matrix (H. Weyl, 1912:
    |σᵢ(J) − σᵢ(J₀)| ≤ ‖J − J₀‖₂ ≤ ‖J − J₀‖_F), so with the singular values
    of an earlier J₀, while σ_min(J₀) − d > RANK_CUT (σ_max(J₀) + d),
    d = ‖J − J₀‖_F, J keeps every row.  Otherwise J's own singular values
    decide, and J becomes J₀."""

    def __init__(self):
        self.J0 = None
        self.sv = None
        #: SVDs taken (the bound did not decide), for the log and the tests
        self.svds = 0

    def full_rank(self, J) -> bool:
        if self.J0 is not None and self.J0.shape == J.shape:
            d = sparse_norm(J - self.J0) if sps.issparse(J) else np.linalg.norm(J - self.J0)
            if self.sv[-1] - d > RANK_CUT * (self.sv[0] + d):
                return True
        self.svds += 1
        self.J0 = J.copy()
        self.sv = np.linalg.svd(J.toarray() if sps.issparse(J) else J, compute_uv=False)
        return svd_rows_rank(self.sv) == J.shape[0]


def svd_rows_rank(sv) -> int:
    """The rank of a matrix with singular values ``sv`` (descending) by ``RANK_CUT``."""
    return int((sv > RANK_CUT * sv[0]).sum()) if len(sv) and sv[0] > 0 else 0


class AccelerationSolver:
    """v̇ (and the drives) from M, the rows J, γ̃ and the loads Q."""

    def __init__(self, M):
        self.M = M
        self.M_sparse = sps.csr_matrix(M)
        #: the sparse path for this run (``decide``); False: the SVD path
        self.sparse = False
        #: evaluations by path in this run, for the log and the tests
        self.counts = {"sparse": 0, "svd": 0}
        self.rank = RankWatch()

    def decide(self, J):
        """For a run starting at the dense J: the sparse path when J has
        full row rank by ``FULL_RANK_MARGIN``; the counts start at 0."""
        sv = np.linalg.svd(J, compute_uv=False) if len(J) else np.zeros(0)
        self.sparse = bool(len(sv)) and len(sv) == J.shape[0] and sv.min() > FULL_RANK_MARGIN * sv.max()
        self.counts = {"sparse": 0, "svd": 0}
        self.rank = RankWatch()

    def solve(self, J, rhs, border=None):
        """(v̇, d): J (CSR) v̇ = rhs with M v̇ + Jᵀλ (− Bᵀd) = Q; ``border``:
        (Q, B, A, b) with the drive rows A v̇ = b, or (Q, None, None, None)."""
        Q, B, A, b = border
        n = len(Q)
        if self.sparse and self.rank.full_rank(J):
            out = self._sparse(J, rhs, Q, B, A, b)
            if out is not None:
                self.counts["sparse"] += 1
                return out
        self.counts["svd"] += 1
        return self._svd(J.toarray() if sps.issparse(J) else J, rhs, Q, B, A, b, n)

    def _sparse(self, J, rhs, Q, B, A, b):
        n, m = len(Q), J.shape[0]
        blocks = [[self.M_sparse, J.T], [J, None]]
        if B is not None:
            p = len(b)
            blocks[0].append(sps.csr_matrix(-np.asarray(B).T))
            blocks[1].append(None)
            blocks.append([sps.csr_matrix(A), None, sps.csr_matrix((p, p))])
            rhs = np.r_[rhs, b]
        K = sps.bmat(blocks, format="csc")
        try:
            lu = splu(K)
        except RuntimeError:      # exactly singular: M singular on a motion J allows
            return None
        sol = lu.solve(np.r_[Q, rhs])
        return sol[:n], (sol[n + m:] if B is not None else None)

    def _svd(self, J, rhs, Q, B, A, b, n):
        u, sv, vt, r = svd_rows(J)
        Jr = vt[:r]
        rhs_c = (u[:, :r].T @ rhs) / sv[:r]
        K = np.block([[self.M, Jr.T], [Jr, np.zeros((r, r))]])
        if B is None:
            return np.linalg.solve(K, np.r_[Q, rhs_c])[:n], None
        x, d = solve_bordered(K, np.r_[Q, rhs_c], n, B, A, b)
        return x[:n], d


def _no_jacobian(tt, y, yp, JJ):
    JJ[:] = 0.0


#: the state size from which Adams corrects by fixed-point iteration
#: (``newton_matrix``): CVODE's difference-quotient Jacobian costs one
#: right-hand side per state, most of the evaluations of a 30-body vehicle;
#: the small mechanisms keep Newton (docs/validation.md)
FIXED_POINT_STATES = 300


def newton_matrix(method, n):
    """CVODE's corrector options for ``method`` and a state of size ``n``:
    Adams on a large state with the identity as Newton's matrix, I − γJ ≈ I,
    the fixed-point (functional) iteration SUNDIALS recommends for non-stiff
    problems; otherwise CVODE's default, Newton with a dense
    difference-quotient Jacobian."""
    if method != "Adams" or n < FIXED_POINT_STATES:
        return {}
    return {"linsolver": "band", "lband": 0, "uband": 0, "jacfn": _no_jacobian}
