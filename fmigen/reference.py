"""The independent DAE reference solution.

It integrates the *full* augmented system — all n coordinates, n velocities
and m multipliers — with SUNDIALS IDA (via scikit-sundae), in the index-1
(acceleration-level) form with Baumgarte stabilization of the algebraic row:

    q' − v = 0
    M(q) v' + Φ_qᵀ λ − F(q, v, t) = 0
    Φ_q v' − γ + 2a (Φ_q v + Φ_t) + a² Φ = 0          (λ algebraic)

The stabilization terms vanish on the exact solution; they only damp the drift
that the plain index-1 form accumulates (measured here: 1e-7 by t = 2 s on the
four-bar).  λ is excluded from IDA's error test by a large absolute tolerance,
because scikit-sundae exposes no ``suppressalg``; with λ in the error test IDA
took 1.4 M residual evaluations at rtol 1e-11 instead of 4 k.

It uses only the DAE stage (M, F, Φ and its derivatives, lambdified with
numpy) — no partition, embedding, triangularization or generated C.  Its own
accuracy is checked by tolerance refinement (``validate --check-reference``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sksundae.ida import IDA

from .dae import DAE


class ReferenceSolverError(RuntimeError):
    pass


@dataclass
class ReferenceSolution:
    t: np.ndarray
    q: np.ndarray          # (len(t), n)
    v: np.ndarray
    rtol: float
    names: list[str]


def assemble_newton(dae: DAE, q_guess, hold: list[str], tt=0.0, tol=1e-14, max_iter=50):
    """Newton on Φ(q) = 0 for the coordinates not in ``hold``, from a guess."""
    num = dae.numeric
    q = np.asarray(q_guess, dtype=float).copy()
    free = [i for i, nm in enumerate(dae.names) if nm not in hold]
    if dae.m == 0:
        return q
    for _ in range(max_iter):
        phi = num.Phi(tt, q)
        if np.abs(phi).max() <= tol:
            return q
        J = num.Phi_q(tt, q)[:, free]
        q[free] -= np.linalg.lstsq(J, phi, rcond=None)[0]
    raise ReferenceSolverError(f"the reference could not assemble the start: |Φ| = {np.abs(phi).max():.3g}")


def consistent_accelerations(dae: DAE, tt, q, v):
    """Solve [[M, Φ_qᵀ], [Φ_q, 0]] [a; λ] = [F; γ]."""
    num = dae.numeric
    n, m = dae.n, dae.m
    M = num.M(tt, q)
    F = num.F(tt, q, v)
    if m == 0:
        return np.linalg.solve(M, F), np.zeros(0)
    J = num.Phi_q(tt, q)
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([F, num.gamma(tt, q, v)]))
    return sol[:n], sol[n:]


def consistent_velocities(dae: DAE, tt, q, v_guess, independent: list[str]):
    """The start velocity the FMU starts from: the independent velocities as
    given, the dependent ones solved from Φ_q v + Φ_t = 0.

    A minimum-norm correction of the whole ``v_guess`` would also change the
    independent velocities (a four-bar started at θ̇ = 2 became θ̇ = 1.62),
    and the reference would then integrate a different motion than the FMU."""
    v = np.asarray(v_guess, dtype=float).copy()
    if dae.m == 0:
        return v
    missing = [nm for nm in independent if nm not in dae.names]
    if missing:
        raise ReferenceSolverError(f"independent coordinates {missing} are not coordinates of the DAE")
    ind = [dae.names.index(nm) for nm in independent]
    dep = [i for i in range(dae.n) if i not in ind]
    J = dae.numeric.Phi_q(tt, q)
    Jd = J[:, dep]
    if len(dep) != dae.m or np.linalg.matrix_rank(Jd) < dae.m:
        raise ReferenceSolverError(
            f"Φ_q restricted to the dependent coordinates is singular at the start (independent: "
            f"{', '.join(independent)}): their velocities are not determined by the independent ones")
    v[dep] = np.linalg.solve(Jd, -(J[:, ind] @ v[ind] + dae.numeric.Phi_t(tt, q)))
    return v


def solve_reference(dae: DAE, q0, v0, output_times, independent: list[str], rtol=1e-12, atol=None,
                    baumgarte=10.0, max_num_steps=500000) -> ReferenceSolution:
    """Integrate from an assembled ``q0`` and values at ``output_times``.

    The velocities of the ``independent`` coordinates are taken from ``v0``
    exactly; the dependent ones are solved from the velocity constraint
    (``consistent_velocities``)."""
    n, m = dae.n, dae.m
    num = dae.numeric
    a = baumgarte
    times = np.asarray(output_times, dtype=float)
    q0 = np.asarray(q0, dtype=float)
    v0 = consistent_velocities(dae, times[0], q0, v0, independent)

    def resfn(tt, y, yp, res):
        q, v, lam = y[:n], y[n:2 * n], y[2 * n:]
        qp, vp = yp[:n], yp[n:2 * n]
        res[:n] = qp - v
        if m:
            J = num.Phi_q(tt, q)
            res[n:2 * n] = num.M(tt, q) @ vp + J.T @ lam - num.F(tt, q, v)
            res[2 * n:] = (J @ vp - num.gamma(tt, q, v)
                           + 2 * a * (J @ v + num.Phi_t(tt, q)) + a * a * num.Phi(tt, q))
        else:
            res[n:] = num.M(tt, q) @ vp - num.F(tt, q, v)

    atol = rtol / 10 if atol is None else atol
    atol_vec = np.r_[np.full(2 * n, atol), np.full(m, 1e3)]
    solver = IDA(resfn, rtol=rtol, atol=atol_vec, algebraic_idx=list(range(2 * n, 2 * n + m)),
                 max_num_steps=max_num_steps, calc_initcond=None)
    acc, lam = consistent_accelerations(dae, times[0], q0, v0)
    res = solver.solve(times, np.concatenate([q0, v0, lam]), np.concatenate([v0, acc, np.zeros(m)]))
    if not res.success:
        raise ReferenceSolverError(f"IDA failed: {res.message}")
    y = np.asarray(res.y)
    return ReferenceSolution(times, y[:, :n], y[:, n:2 * n], rtol, dae.names)


