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

It uses only the DAE stage (M, F, Φ and its derivatives) — no partition,
embedding, triangularization or generated C of the model.  Its own accuracy
is checked by tolerance refinement (``validate --check-reference``).

The residual's numbers, M, F, Φ, Φ_q, Φ_t, γ and B at (t, q, v), are one
call of C (``CompiledDAE``): printed here from the DAE's expressions after
sympy's ``cse`` by sympy's own C99 printer, compiled by the system's C
compiler (``gcc``, or ``$CC``) and loaded with ctypes.  It shares with the
code under test the DAE's expressions and nothing of fmigen's code
generation (``fmigen/generate``) or runtime.  Why: IDA's difference-quotient
Jacobian evaluates the residual once per unknown, and on a large mechanism
(the 30-body vehicle) numpy-lambdified expressions made the reference cost
more than the rest of a validation (docs/validation.md has the figures).
"""

from __future__ import annotations

from dataclasses import dataclass

import ctypes
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import sympy as sp
from sksundae.ida import IDA
from sympy.printing.c import C99CodePrinter

from fmigen.derive.dae import DAE
from fmigen.model import ModelError, t as T_SYM
from fmigen.verify.prescribed import DAEDrives, solve_bordered
from fmigen.verify.trims import dae_trims


#: compiler flags.  -O0: gcc -O1 on a large mechanism's one long function
#: costs ten times as much for code barely faster than the Python around
#: each call; no fast-math and no contraction into fused multiply-adds: IEEE
#: double arithmetic, operation by operation, as numpy's.
CFLAGS = ("-O0", "-shared", "-fPIC", "-fno-fast-math", "-ffp-contract=off")


def _sparse(matrix: sp.Matrix):
    """(rows, cols, values) of a matrix's structural non-zeros."""
    dok = matrix.todok()
    keys = sorted(dok)
    return (np.array([k[0] for k in keys], dtype=int), np.array([k[1] for k in keys], dtype=int),
            [dok[k] for k in keys])


class _Printer(C99CodePrinter):
    """sympy's C99 printer with the arguments' symbols printed as elements
    of the input array (``names``: no expression is rebuilt for it) and
    integer powers as products (pow() of an integer exponent is a library
    call at -O1)."""

    def __init__(self, names: dict):
        # terms as they are: ordering them is most of the printing's time
        super().__init__({"order": "none"})
        self.names = names

    def _print_Symbol(self, expr):
        name = self.names.get(expr)
        return name if name is not None else super()._print_Symbol(expr)

    def _print_Pow(self, expr):
        b, e = expr.as_base_exp()
        if e.is_Integer and 1 < abs(e) <= 4:
            prod = "*".join([f"({self._print(b)})"] * int(abs(e)))
            return f"(1.0/({prod}))" if e < 0 else f"({prod})"
        return super()._print_Pow(expr)


def c_source(exprs: list, args: list, name="dae_eval") -> str:
    """C of ``void name(const double *x, double *out)``: out[k] = exprs[k]
    at args = x, after a common-subexpression elimination."""
    temps, reduced = sp.cse([sp.sympify(e) for e in exprs], symbols=sp.numbered_symbols("w_"), order="none")
    # after the elimination: each expression is shallow then, while
    # free_symbols of the whole expressions walks shared subtrees again
    # at every use
    stray = set().union(*(e.free_symbols for e in [*(e for _, e in temps), *reduced])) \
        - {s for s, _ in temps} - set(args)
    if stray:
        raise ModelError(f"the DAE's expressions use symbols that are neither coordinates, velocities, time, "
                         f"parameters nor inputs: {sorted(map(str, stray))}")
    printer = _Printer({a: f"x[{k}]" for k, a in enumerate(args)})
    lines = ["#include <math.h>", f"void {name}(const double *x, double *out) {{"]
    lines += [f"  const double {s} = {printer.doprint(e)};" for s, e in temps]
    lines += [f"  out[{k}] = {printer.doprint(e)};" for k, e in enumerate(reduced)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def compile_source(source: str, name="dae_eval"):
    """Compile ``source`` into a shared library and return its function
    ``name`` (ctypes).  The library is kept under FMIGEN_CACHE's
    ``reference/`` by the source's hash (the same DAE again is not compiled
    again); the file stays open through ctypes after loading."""
    from fmigen.kinematics.groebner import CACHE_DIR, write_atomically
    digest = hashlib.sha256((" ".join(CFLAGS) + "\0" + source).encode()).hexdigest()
    lib = Path(CACHE_DIR) / "reference" / f"{digest}.so"
    if not lib.exists():
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "dae.c"
            src.write_text(source)
            out = Path(tmp) / "dae.so"
            try:
                proc = subprocess.run([os.environ.get("CC", "gcc"), *CFLAGS, str(src), "-o", str(out), "-lm"],
                                      capture_output=True, text=True)
            except OSError as e:
                raise ModelError(f"the IDA reference compiles the DAE's expressions and found no C compiler: "
                                 f"{e}") from e
            if proc.returncode != 0:
                raise ModelError(f"compiling the DAE's expressions for the IDA reference failed:\n"
                                 f"{proc.stderr[-2000:]}")
            # a concurrent process (the suite's workers) reads a whole library or none
            write_atomically(lib, out.read_bytes())
    fn = getattr(ctypes.CDLL(str(lib)), name)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return fn


class CompiledDAE:
    """M, F, Φ, Φ_q, Φ_t and γ of ``dae.closure`` (every closure row) and,
    given ``B`` (p × n expressions, the drives' (∂F/∂d)ᵀ), B, evaluated together by ``eval``
    at the DAE's current parameter and input values (``dae.numeric.pu``,
    which starts at ``tunable_values`` and ``input_values``).  Φ_q and B are written by their structural
    non-zeros only."""

    def __init__(self, dae, B: sp.Matrix | None = None):
        full = dae.closure
        self.n, self.r, self.p = dae.n, len(full.constraint_names), 0 if B is None else B.rows
        n = self.n
        self.args = [T_SYM, *dae.q_sym, *dae.v_sym, *dae.tunable, *dae.inputs]
        self.x = np.zeros(len(self.args))
        # the parameter and input values the lambdified DAE evaluates at
        # (``NumericDAE.pu``): read at every call, since a caller may change a
        # tunable parameter between two runs of the reference (a mass step)
        self._values = dae.numeric
        self._M = _sparse(dae.M)
        self._Phi_q = _sparse(full.Phi_q) if self.r else (np.zeros(0, int), np.zeros(0, int), [])
        self._B = _sparse(B) if self.p else (np.zeros(0, int), np.zeros(0, int), [])
        parts = [self._M[2], list(dae.F), list(full.Phi), self._Phi_q[2], list(full.Phi_t), list(full.gamma),
                 self._B[2]]
        sizes = np.cumsum([0, *map(len, parts)])
        self._slices = [slice(a, b) for a, b in zip(sizes[:-1], sizes[1:])]
        self.out = np.zeros(sizes[-1])
        self._fn = compile_source(c_source([e for part in parts for e in part], self.args))
        self.M = np.zeros((n, n))
        self.Phi_q = np.zeros((self.r, n))
        self.B = np.zeros((self.p, n))

    def eval(self, tt, q, v):
        """Evaluate every function at (t, q, v) into the attributes ``M``,
        ``F``, ``Phi``, ``Phi_q``, ``Phi_t``, ``gamma``, ``B`` (arrays
        overwritten by the next call)."""
        n, x = self.n, self.x
        x[0] = tt
        x[1:1 + n] = q
        x[1 + n:1 + 2 * n] = v
        x[1 + 2 * n:] = self._values.pu
        self._fn(x.ctypes.data, self.out.ctypes.data)
        out, (sM, sF, sPhi, sJ, sPt, sG, sB) = self.out, self._slices
        rows, cols, _ = self._M
        self.M[rows, cols] = out[sM]
        self.F, self.Phi, self.Phi_t, self.gamma = out[sF], out[sPhi], out[sPt], out[sG]
        if self.r:
            self.Phi_q[self._Phi_q[0], self._Phi_q[1]] = out[sJ]
        if self.p:
            self.B[self._B[0], self._B[1]] = out[sB]
        return self


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


def compiled(dae: DAE, drives: DAEDrives | None = None) -> CompiledDAE:
    """The DAE's M, F, Φ and derivatives (and the drives' B) compiled
    (``CompiledDAE``), made once per DAE and set of drives: the
    reference, the consistent accelerations and the drives along an FMU's
    trajectory evaluate the same functions."""
    key = ("_reference_compiled", tuple(drives.symbols) if drives is not None else ())
    made = dae.__dict__.get(key)
    if made is None:
        made = dae.__dict__[key] = CompiledDAE(dae, None if drives is None else drives.B)
    return made


def consistent_accelerations(dae: DAE, tt, q, v, dependent=None, drives: DAEDrives | None = None):
    """Solve [[M, Φ_qᵀ], [Φ_q, 0]] [a; λ] = [F; γ]; with redundant rows
    (``dependent``: the dependent coordinates' indices) the rows are those
    of W Φ_q and W γ and the forces Φ_qᵀ Wᵀ λ (module docstring).  With
    ``drives`` the system is bordered by the prescribed coordinates'
    drives and filter rows, and the second result is λ followed by the
    drives."""
    full = dae.closure
    n, m = dae.n, dae.m
    q, v = np.asarray(q, dtype=float), np.asarray(v, dtype=float)
    num = compiled(dae, drives).eval(tt, q, v)
    M, F = num.M.copy(), num.F.copy()
    if drives is not None:
        bordered = (num.B.copy(), drives.A, drives.target(tt, q, v))
    if m == 0:
        if drives is None:
            return np.linalg.solve(M, F), np.zeros(0)
        return solve_bordered(M, F, n, *bordered)
    J = num.Phi_q.copy()
    gamma = num.gamma.copy()
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
    a = baumgarte
    times = np.asarray(output_times, dtype=float)
    q0 = np.asarray(q0, dtype=float)
    v0 = consistent_velocities(dae, times[0], q0, v0, independent)
    dep = [i for i, nm in enumerate(dae.names) if nm not in independent]

    num = compiled(dae, drives)
    if dae.mechanism.trims:
        # the trimmed preloads at this start, in the DAE's input values
        dae_trims(dae, num, times[0], q0, independent, ReferenceSolverError)

    def resfn(tt, y, yp, res):
        q, v, lam = y[:n], y[n:2 * n], y[2 * n:2 * n + m]
        qp, vp = yp[:n], yp[n:2 * n]
        res[:n] = qp - v
        num.eval(tt, q, v)
        F = num.F
        if p:
            # the drives, algebraic like λ, and the filters' accelerations
            F = F + num.B.T @ y[2 * n + m:]
            res[2 * n + m:] = vp[drives.index] - drives.target(tt, q, v)
        if m:
            J = num.Phi_q
            alg = J @ vp - num.gamma + 2 * a * (J @ v + num.Phi_t) + a * a * num.Phi
            if full is not dae:
                # redundant rows: m combinations of all of them (docstring)
                W = _weights(full, J, dep)
                J, alg = W @ J, W @ alg
            res[n:2 * n] = num.M @ vp + J.T @ lam - F
            res[2 * n:2 * n + m] = alg
        else:
            res[n:2 * n] = num.M @ vp - F

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


