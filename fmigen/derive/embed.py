"""Stage 4 — embed: one second-order ODE per independent coordinate.

With q̇ = B q̇_i + C, B = [−Φ_d⁻¹ Φ_i ; I] and C = [−Φ_d⁻¹ Φ_t ; 0], the
Lagrange multipliers and q̈_d drop out of M q̈ + Φ_qᵀλ = F (paper 000,
eqs. 10–11):

    (Bᵀ M B) q̈_i = Bᵀ (F − M a_c),     a_c = [Φ_d⁻¹ γ ; 0],

where Φ_q q̈ = γ is the acceleration constraint.  This stage fixes the symbolic
pieces (Φ_d, Φ_i, Φ_t, γ, M, F) and the index maps; the small linear systems
are solved numerically in the generated C (codegen + runtime), never by
expanding symbolic inverses.  ``embedded_rhs`` is the same formula in numpy,
used by the Python runtime and by tests as an independent check of the C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from fmigen.derive.dae import DAE
from fmigen.derive.partition import Partition
from fmigen.model import ModelError


@dataclass
class Embedding:
    dae: DAE
    independent: list[int]
    dependent: list[int]
    Phi_q: sp.Matrix      # m x n (columns in model order)
    Phi_t: sp.Matrix      # m
    gamma: sp.Matrix      # m
    M: sp.Matrix          # n x n
    F: sp.Matrix          # n

    @property
    def f(self):
        return len(self.independent)

    def trim_coordinates(self) -> list[int]:
        """Per static trim (``model.Trim``) its coordinate's index in q,
        which must be independent in this partition: the runtime's trim
        balances the independent coordinates' rows.  The build's own check
        (``joint_trim.trim_solution``) is skipped where a start change
        replays the conversion, and a partition chosen numerically at the
        start can change with it, so the generators check here."""
        names = list(self.dae.names)
        mech = self.dae.mechanism
        independent = [names[k] for k in self.independent]
        for tr in mech.trims:
            if tr.coordinate not in independent:
                raise ModelError(f"'{mech.name}': trim of spring '{tr.spring}' along '{tr.coordinate}': "
                                 f"'{tr.coordinate}' is a dependent coordinate (the independent ones are "
                                 f"{', '.join(independent)}); trim along an independent coordinate, "
                                 "or declare s.independent")
        return [names.index(tr.coordinate) for tr in mech.trims]


def embed(dae: DAE, part: Partition) -> Embedding:
    return Embedding(dae, part.independent, part.dependent, dae.Phi_q, dae.Phi_t,
                     dae.gamma, dae.M, dae.F)


def embedded_rhs(emb: Embedding, tt, q, vi, solve_q):
    """Numpy version of the embedded ODE: returns (q, v, q̈_i).

    ``solve_q(qi, t)`` returns the full coordinate vector (the kinematic solver)."""
    num = emb.dae.numeric
    I, D = emb.independent, emb.dependent
    n = emb.dae.n
    q = solve_q(q[I] if len(q) == n else q, tt)
    J = num.Phi_q(tt, q)
    Jd, Ji = J[:, D], J[:, I]
    X = np.linalg.solve(Jd, Ji)
    y = np.linalg.solve(Jd, num.Phi_t(tt, q))
    v = np.zeros(n)
    v[I] = vi
    v[D] = -(X @ vi + y)
    B = np.zeros((n, len(I)))
    B[I, range(len(I))] = 1.0
    B[D, :] = -X
    ac = np.zeros(n)
    ac[D] = np.linalg.solve(Jd, num.gamma(tt, q, v))
    M = num.M(tt, q)
    F = num.F(tt, q, v)
    return q, v, np.linalg.solve(B.T @ M @ B, B.T @ (F - M @ ac))
