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

An overconstrained loop (a Bennett linkage: a cut revolute's five closure
rows, two of them independent) keeps m rows in the model, chosen at the
start, and the others as ``DAE.Phi_redundant``.  The chosen rows can lose
rank along the motion where the full closure does not (the Bennett linkage
folded flat), and a DAE on them alone can leave the motion there for another
solution of the m rows.  So the reference integrates all r ≥ m rows Φ,
combined by W(q) = Φ_dᵀ (m × r, Φ_d the full Jacobian's dependent columns):

    M v' + Φ_qᵀ Wᵀ λ − F = 0,     W (Φ_q v' − γ + 2a (Φ_q v + Φ_t) + a² Φ) = 0

W Φ_q has rank m wherever the full closure determines the dependent
velocities (Φ_d of full column rank), which is where the model is regular;
the constraint forces Φ_qᵀ Wᵀ λ span the same space as Φ_qᵀ λ of any m
independent rows.  Without redundant rows the plain form above is used.

A prescribed coordinate (``JointSystem.prescribe``) adds its drive d, the
generalized force on it, as one more algebraic unknown, and the filter's
acceleration as one more row (``prescribed.py``):

    M v' + Φ_qᵀ λ − F − Bᵀ d = 0,     v'_k − ω²(u(t) − q_k) + 2ω v_k = 0

(B = ∂F/∂d; F at d = 0).  The drive at each output point is solved from
the output state (the consistent accelerations, exact there), not read
from IDA's interpolant of an algebraic unknown.

It uses only the DAE stage (M, F, Φ and its derivatives, lambdified with
numpy) — no partition, embedding, triangularization or generated C.  Its own
accuracy is checked by tolerance refinement (``validate --check-reference``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sksundae.ida import IDA

from fmigen.derive.dae import DAE
from fmigen.verify.prescribed import DAEDrives, solve_bordered


class ReferenceSolverError(RuntimeError):
    """``partial``: where IDA itself failed part way, the solution at the
    output times it reached (a ``ReferenceSolution``), else None."""

    def __init__(self, message, partial=None):
        super().__init__(message)
        self.partial = partial


@dataclass
class ReferenceSolution:
    t: np.ndarray
    q: np.ndarray          # (len(t), n)
    v: np.ndarray
    rtol: float
    names: list[str]
    #: {prescribed coordinate: its drive at every output time}
    drive: dict | None = None


def assemble_newton(dae: DAE, q_guess, hold: list[str], tt=0.0, tol=1e-14, max_iter=50):
    """Newton on Φ(q) = 0 (every closure row, redundant ones included) for
    the coordinates not in ``hold``, from a guess.

    Not derive.workspace.newton_steps, which the code under test assembles
    with: the reference stays independent of it, and it solves every row
    (redundant ones too) in least squares where newton_steps solves a
    square, regular block."""
    dae = dae.closure
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


def _weights(full: DAE, J, dep):
    """W = Φ_dᵀ of the full closure (module docstring), or None when the
    closure has no redundant row."""
    return None if full.m == len(dep) else J[:, dep].T


def consistent_accelerations(dae: DAE, tt, q, v, dependent=None, drives: DAEDrives | None = None):
    """Solve [[M, Φ_qᵀ], [Φ_q, 0]] [a; λ] = [F; γ]; with redundant rows
    (``dependent``: the dependent coordinates' indices) the rows are those
    of W Φ_q and W γ and the forces Φ_qᵀ Wᵀ λ (module docstring).  With
    ``drives`` the system is bordered by the prescribed coordinates'
    drives and filter rows, and the second result is λ followed by the
    drives."""
    full = dae.closure
    num = full.numeric
    n, m = dae.n, dae.m
    M = num.M(tt, q)
    F = num.F(tt, q, v)
    if drives is not None:
        q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
        bordered = (drives.B(tt, q, v), drives.A, drives.target(tt, q, v))
    if m == 0:
        if drives is None:
            return np.linalg.solve(M, F), np.zeros(0)
        return solve_bordered(M, F, n, *bordered)
    J = num.Phi_q(tt, q)
    gamma = num.gamma(tt, q, v)
    if full is not dae and dependent is None:
        raise ReferenceSolverError(f"'{dae.mechanism.name}' has redundant closure rows: the consistent "
                                   "accelerations need the dependent coordinates to combine them")
    W = _weights(full, J, dependent) if full is not dae else None
    if W is not None:
        J, gamma = W @ J, W @ gamma
    K = np.block([[M, J.T], [J, np.zeros((m, m))]])
    if drives is None:
        sol = np.linalg.solve(K, np.concatenate([F, gamma]))
        return sol[:n], sol[n:]
    sol, d = solve_bordered(K, np.concatenate([F, gamma]), n, *bordered)
    return sol[:n], np.r_[sol[n:], d]


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
    m = dae.m
    full = dae.closure       # every closure row: r x n, rank m on the motion
    J = full.numeric.Phi_q(tt, q)
    Jd = J[:, dep]
    if len(dep) != m or np.linalg.matrix_rank(Jd) < m:
        raise ReferenceSolverError(
            f"Φ_q restricted to the dependent coordinates is singular at the start (independent: "
            f"{', '.join(independent)}): their velocities are not determined by the independent ones")
    rhs = -(J[:, ind] @ v[ind] + full.numeric.Phi_t(tt, q))
    # r = m: the square solve; r > m: the rows are consistent on the motion,
    # so least squares on the full column rank Φ_d solves them all
    v[dep] = np.linalg.solve(Jd, rhs) if full is dae else np.linalg.lstsq(Jd, rhs, rcond=None)[0]
    return v


def solve_reference(dae: DAE, q0, v0, output_times, independent: list[str], rtol=1e-12, atol=None,
                    baumgarte=10.0, max_num_steps=500000, demands=None) -> ReferenceSolution:
    """Integrate from an assembled ``q0`` and values at ``output_times``.

    The velocities of the ``independent`` coordinates are taken from ``v0``
    exactly; the dependent ones are solved from the velocity constraint
    (``consistent_velocities``).  Prescribed coordinates follow their
    inputs: ``demands`` {input name: f(t)}, the others at their start."""
    n, m = dae.n, dae.m
    drives = DAEDrives(dae, demands) if dae.mechanism.prescribed else None
    p = 0 if drives is None else drives.p
    full = dae.closure
    num = full.numeric
    a = baumgarte
    times = np.asarray(output_times, dtype=float)
    q0 = np.asarray(q0, dtype=float)
    v0 = consistent_velocities(dae, times[0], q0, v0, independent)
    dep = [i for i, nm in enumerate(dae.names) if nm not in independent]

    def resfn(tt, y, yp, res):
        q, v, lam = y[:n], y[n:2 * n], y[2 * n:2 * n + m]
        qp, vp = yp[:n], yp[n:2 * n]
        res[:n] = qp - v
        F = num.F(tt, q, v)
        if p:
            # the drives, algebraic like λ, and the filters' accelerations
            F = F + drives.B(tt, q, v).T @ y[2 * n + m:]
            res[2 * n + m:] = vp[drives.index] - drives.target(tt, q, v)
        if m:
            J = num.Phi_q(tt, q)
            alg = (J @ vp - num.gamma(tt, q, v)
                   + 2 * a * (J @ v + num.Phi_t(tt, q)) + a * a * num.Phi(tt, q))
            if full is not dae:
                # redundant rows: m combinations of all of them (docstring)
                W = _weights(full, J, dep)
                J, alg = W @ J, W @ alg
            res[n:2 * n] = num.M(tt, q) @ vp + J.T @ lam - F
            res[2 * n:2 * n + m] = alg
        else:
            res[n:2 * n] = num.M(tt, q) @ vp - F

    atol = rtol / 10 if atol is None else atol
    atol_vec = np.r_[np.full(2 * n, atol), np.full(m + p, 1e3)]
    solver = IDA(resfn, rtol=rtol, atol=atol_vec, algebraic_idx=list(range(2 * n, 2 * n + m + p)),
                 max_num_steps=max_num_steps, calc_initcond=None)
    acc, lam = consistent_accelerations(dae, times[0], q0, v0, dep, drives)
    res = solver.solve(times, np.concatenate([q0, v0, lam]), np.concatenate([v0, acc, np.zeros(m + p)]))
    # on a failure IDA's last row is the time it got to, between two output
    # times: the solution is the rows before it
    k = len(res.t) - (not res.success)
    y = np.asarray(res.y)[:k]
    sol = ReferenceSolution(times[:k], y[:, :n], y[:, n:2 * n], rtol, dae.names)
    if p:
        sol.drive = drives_at(dae, times[:k], sol.q, sol.v, independent, drives=drives)
    if not res.success:
        raise ReferenceSolverError(f"IDA failed at t = {res.t[-1]:.6g}: {res.message}", partial=sol)
    return sol


def drives_at(dae: DAE, times, q, v, independent: list[str], demands=None, drives=None) -> dict:
    """{prescribed coordinate: its drive at each (t, q, v)} (rows of q, v
    in model order), from the bordered consistent accelerations: the
    generalized force the DAE's equations need for the filter's
    acceleration at that state (``demands`` as in ``solve_reference``)."""
    drives = drives or DAEDrives(dae, demands)
    dep = [i for i, nm in enumerate(dae.names) if nm not in independent]
    d = np.array([consistent_accelerations(dae, tt, qi, vi, dep, drives)[1][dae.m:]
                  for tt, qi, vi in zip(times, q, v)]).reshape(len(times), drives.p)
    return {nm: d[:, k] for k, nm in enumerate(drives.names)}


