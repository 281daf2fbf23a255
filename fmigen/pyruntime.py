"""Python runtime: the same reduced model as a pure-Python FMU (pythonfmu).

``fmigen build MECH -o OUT.fmu --runtime python`` packages the model that
``codegen`` turns into C as one generated Python module instead, wrapped by
pythonfmu's prebuilt FMI 2.0 Co-Simulation binary.  It serves users without a
C compiler and is a comparison row for the C FMU.

The generated module mirrors the C operation for operation, so the two agree
to round-off:

- every model expression is printed by a subclass of codegen's C printer
  (integer powers as multiplications, rationals as double divisions, the same
  sympy CSE), and the C function names resolve to Python's ``math`` (the same
  libm on the same machine);
- the kinematic solution sequence has the same branch signs, the same
  cancellation-free quadratic formula, the same linear formula, the same
  Newton blocks, polish steps and continuity guard;
- Euler / RK4 and the internal-step rule (full steps of h, one shorter last
  step, a remainder below 1e-9·h absorbed) are ports of
  ``runtime/fmigen_core.c``; the embedded ODE is the block LU with partial
  pivoting over the model's structure (``codegen_embedding.structure_tables``:
  block-triangular Φ_d, M's structural non-zeros) that the C runtime used before its embedding became
  generated straight-line code (``codegen_embedding.py``: adjugates, LDLᵀ) —
  the same equations, so the two FMUs agree to round-off, not bit for bit.

The runtime below (``linear`` ... ``Core``, and ``SlaveMethods``, the FMI
instance layer of ``fmigen_instance.c`` for Co-Simulation) is real Python,
copied verbatim into every generated module with ``inspect.getsource``; the
module needs only the standard library (no numpy) plus pythonfmu's own Python
files, which pythonfmu bundles into the FMU's resources.

Status codes: pythonfmu 0.7.0 returns fmi2Discard when ``do_step`` returns
False (a singular configuration, as the C FMU) but turns every Python
exception into fmi2Fatal (its ``handle_py_exception`` throws
``cppfmu::FatalError``); there is no path to fmi2Error from Python.  Bad calls
(NaN/Inf inputs, a step <= 0, a wrong communication point, setting a
calculated variable or a parameter after initialization, a call in the wrong
state) therefore raise, and the importer sees fmi2Fatal with the message in
its log.  After that status pythonfmu has freed the instance's Python objects:
the process must not use the FMU again (the standard's meaning of Fatal).

Variables, value references, units, start values and ModelStructure are those
of the C FMU (``fmu.variables`` / ``fmu.model_description``), so importers see
the same interface; the modelDescription differs in ``needsExecutionTool``
(a Python interpreter is needed), in having no ``<SourceFiles>``, and in its
GUID.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import tempfile
import time
import uuid
from math import fabs, isfinite
from pathlib import Path

import sympy as sp

from . import codegen, fmu, structure
from .codegen import SymbolMap
from .codegen_embedding import structure_tables
from .model import ModelError

FMIGEN_NEWTON_MAX_ITER = 20
FMIGEN_CONTINUITY_JUMP = 0.05
FMIGEN_MAX_DEGREE = 32
EULER, RK4 = 0, 1


class PythonRuntimeError(ModelError):
    """The Python FMU cannot be built (pythonfmu missing, unsupported option,
    an expression without a Python equivalent)."""


# --------------------------------------------------------------------------
# Runtime (copied into the generated module).  Ports of fmigen_runtime.h and
# fmigen_core.c (the embedding: of its block-LU version, see the top).
# --------------------------------------------------------------------------

def linear(a1, a0):
    """fmigen_linear: (status, x) of a1 x + a0 = 0."""
    if not (fabs(a1) > 1e-13 * fabs(a0)) or a1 == 0.0:
        return 1, 0.0
    return 0, -a0 / a1


def quadratic(a2, a1, a0, sign):
    """fmigen_quadratic: root on the branch sign·√disc, cancellation-free."""
    scale = fabs(a2) + fabs(a1) + fabs(a0)
    if not (fabs(a2) > 1e-13 * scale):
        return 1, 0.0
    disc = a1 * a1 - 4.0 * a2 * a0
    if disc < 0.0:
        if disc < -1e-12 * (a1 * a1 + fabs(4.0 * a2 * a0)):
            return 2, 0.0
        disc = 0.0
    r = sign * math.sqrt(disc)
    if -a1 * r > 0.0 or a1 == 0.0:
        return 0, (-a1 + r) / (2.0 * a2)
    den = -a1 - r
    if den == 0.0:
        return 1, 0.0
    return 0, 2.0 * a0 / den


def fmax(a, b):
    """C99 fmax: a NaN argument is ignored."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


def fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a <= b else b


def lu_factor(n, A, piv):
    """fmigen_lu_factor: in-place LU with partial pivoting, row-major n×n."""
    scale = 0.0
    for k in range(n * n):
        if fabs(A[k]) > scale:
            scale = fabs(A[k])
    if not (scale > 0.0) or not isfinite(scale):
        return 1
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if fabs(A[i * n + k]) > fabs(A[p * n + k]):
                p = i
        if not (fabs(A[p * n + k]) > 1e-13 * scale):
            return 1
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k * n + j], A[p * n + j] = A[p * n + j], A[k * n + j]
        for i in range(k + 1, n):
            A[i * n + k] /= A[k * n + k]
            l_ = A[i * n + k]
            for j in range(k + 1, n):
                A[i * n + j] -= l_ * A[k * n + j]
    return 0


def lu_solve(n, LU, piv, b):
    """fmigen_lu_solve: all row swaps first, then substitution (b in place)."""
    for k in range(n):
        if piv[k] != k:
            b[k], b[piv[k]] = b[piv[k]], b[k]
    for k in range(n):
        for i in range(k + 1, n):
            b[i] -= LU[i * n + k] * b[k]
    for k in range(n - 1, -1, -1):
        for j in range(k + 1, n):
            b[k] -= LU[k * n + j] * b[j]
        b[k] /= LU[k * n + k]


def poly_eval(degree, a, z):
    pv, d = a[0], 0.0
    for k in range(1, degree + 1):
        d = d * z + pv
        pv = pv * z + a[k]
    return pv, d


def all_roots(degree, a):
    """Aberth–Ehrlich iteration as in fmigen_core.c; (status, re, im)."""
    if degree > FMIGEN_MAX_DEGREE or a[0] == 0.0:
        return 1, None, None
    R = 0.0
    for k in range(1, degree + 1):
        r = fabs(a[k] / a[0])
        if r > R:
            R = r
    R = 1.0 + R
    re, im = [0.0] * degree, [0.0] * degree
    for k in range(degree):
        ang = 6.283185307179586 * k / degree + 0.4
        re[k] = 0.5 * R * math.cos(ang)
        im[k] = 0.5 * R * math.sin(ang)
    for _it in range(500):
        worst = 0.0
        for k in range(degree):
            pr, pi, dr, di, zr, zi = a[0], 0.0, 0.0, 0.0, re[k], im[k]
            for j in range(1, degree + 1):
                ndr = dr * zr - di * zi + pr
                ndi = dr * zi + di * zr + pi
                dr, di = ndr, ndi
                npr = pr * zr - pi * zi + a[j]
                npi = pr * zi + pi * zr
                pr, pi = npr, npi
            den = dr * dr + di * di
            if den == 0.0:
                re[k] += 1e-8 * R
                continue
            nr = (pr * dr + pi * di) / den
            ni = (pi * dr - pr * di) / den
            sr, si = 0.0, 0.0
            for j in range(degree):
                if j != k:
                    ar, ai = zr - re[j], zi - im[j]
                    d2 = ar * ar + ai * ai
                    if d2 > 0.0:
                        sr += ar / d2
                        si -= ai / d2
            br = 1.0 - (nr * sr - ni * si)
            bi = -(nr * si + ni * sr)
            b2 = br * br + bi * bi
            if b2 == 0.0:
                continue
            wr = (nr * br + ni * bi) / b2
            wi = (ni * br - nr * bi) / b2
            re[k] -= wr
            im[k] -= wi
            step = math.sqrt(wr * wr + wi * wi) / (1.0 + math.sqrt(re[k] * re[k] + im[k] * im[k]))
            if step > worst:
                worst = step
        if worst < 1e-15:
            return 0, re, im
    return 0, re, im


def poly_root(degree, coeffs, x0):
    """fmigen_poly_root: (status, root) continuing the branch of x0."""
    z = x0
    for _it in range(8):
        p, dp = poly_eval(degree, coeffs, z)
        if dp == 0.0 or not isfinite(dp):
            break
        dz = p / dp
        z -= dz
        if fabs(dz) <= 1e-15 * (1.0 + fabs(z)):
            if fabs(z - x0) <= 0.05 * (1.0 + fabs(x0)):
                return 0, z
            break
    st, re, im = all_roots(degree, coeffs)
    if st:
        return 3, x0
    best = -1
    for k in range(degree):
        if fabs(im[k]) > 1e-7 * (1.0 + fabs(re[k])):
            continue
        if best < 0 or fabs(re[k] - x0) < fabs(re[best] - x0):
            best = k
    if best < 0:
        return 3, x0
    z = re[best]
    for _it in range(5):
        p, dp = poly_eval(degree, coeffs, z)
        if dp == 0.0:
            break
        z -= p / dp
    if not isfinite(z):
        return 3, x0
    return 0, z


class Core:
    """FmigenCore and its functions (fmigen_core.c).  ``m`` is the model:
    sizes, index maps, start values, structure and generated functions."""

    def __init__(self, m, solver, h):
        self.m = m
        self.t = 0.0
        self.q = list(m.q_start)
        self.v = list(m.v_start)
        self.p = list(m.p_default)
        self.u = list(m.u_default)
        self.y = [0.0] * m.NY
        self.warm = list(m.warm_start)
        self.h = h
        self.residual = 0.0
        self.solver = solver
        self.message = ""

    # -- state snapshots (FMU state) --
    FIELDS = ("t", "q", "v", "p", "u", "y", "warm", "h", "residual", "solver", "message")

    def snapshot(self):
        return {k: (list(getattr(self, k)) if isinstance(getattr(self, k), list) else getattr(self, k))
                for k in self.FIELDS}

    def restore(self, s):
        for k in self.FIELDS:
            setattr(self, k, list(s[k]) if isinstance(s[k], list) else s[k])

    def kinematics(self, t, q):
        k = self.m.kinematics(t, q, self.p, self.warm)
        if k:
            self.message = ("singular configuration at t=%.9g: no regular solution for %s "
                            "(leading coefficient or discriminant vanishes)" % (t, self.m.failure[k]))
        return k

    # Φ_d = ∂Φ/∂q_d and its factorization: per diagonal block
    # (codegen_embedding.structure_tables), or none without constraints.
    def phid_factor(self, J):
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if m.blocked:
            lus = []
            for b in range(m.nblocks):
                p0, nb = m.blk_ptr[b], m.blk_ptr[b + 1] - m.blk_ptr[b]
                A = [J[m.blk_rows[p0 + r] * NQ + dep[m.blk_cols[p0 + k]]] for r in range(nb) for k in range(nb)]
                piv = [0] * nb
                if lu_factor(nb, A, piv):
                    return None
                lus.append((A, piv))
            return lus
        A = [J[r * NQ + dep[k]] for r in range(ND) for k in range(ND)]
        piv = [0] * ND
        if lu_factor(ND, A, piv):
            return None
        return [(A, piv)]

    def phid_solve_cols(self, J, lus, b, ncol):
        """b (ND×ncol, rows by constraint) := Φ_d⁻¹ b (rows by dependent position)."""
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if not m.blocked:
            A, piv = lus[0]
            cols = [[b[r * ncol + j] for r in range(ND)] for j in range(ncol)]
            for col in cols:
                lu_solve(ND, A, piv, col)
            return [cols[j][r] for r in range(ND) for j in range(ncol)]
        tmp, x = [0.0] * (ND * ncol), [0.0] * (ND * ncol)
        c = 0
        for bl in range(m.nblocks):
            p0, nb = m.blk_ptr[bl], m.blk_ptr[bl + 1] - m.blk_ptr[bl]
            for r in range(nb):
                for j in range(ncol):
                    tmp[(p0 + r) * ncol + j] = b[m.blk_rows[p0 + r] * ncol + j]
            while c < m.ncouple and m.couple[2 * c] < p0 + nb:
                pr, pc = m.couple[2 * c], m.couple[2 * c + 1]
                a = J[m.blk_rows[pr] * NQ + dep[m.blk_cols[pc]]]
                for j in range(ncol):
                    tmp[pr * ncol + j] -= a * x[m.blk_cols[pc] * ncol + j]
                c += 1
            A, piv = lus[bl]
            for j in range(ncol):
                col = [tmp[(p0 + r) * ncol + j] for r in range(nb)]
                lu_solve(nb, A, piv, col)
                for r in range(nb):
                    x[m.blk_cols[p0 + r] * ncol + j] = col[r]
        return x

    def velocities(self, t, q, v):
        """Fill v_d from q and v_i; returns (status, J, lus, X) with
        X = Φ_d⁻¹Φ_i (ND×NI, row-major)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        if NC == 0:
            return 0, None, None, []
        J = [0.0] * (NC * NQ)
        pt = [0.0] * NC
        m.phi_q(t, q, v, self.p, self.u, J)
        m.phi_t(t, q, v, self.p, self.u, pt)
        lus = self.phid_factor(J)
        if lus is None:
            self.message = ("singular configuration at t=%.9g: the constraint Jacobian with respect to the "
                            "dependent coordinates is singular" % t)
            return 1, None, None, None
        ncol = NI + 1
        rhs = [0.0] * (ND * ncol)
        for r in range(ND):
            for k in range(NI):
                rhs[r * ncol + k] = J[r * NQ + m.independent[k]]
            rhs[r * ncol + NI] = pt[r]
        rhs = self.phid_solve_cols(J, lus, rhs, ncol)
        X = [0.0] * (ND * NI)
        for r in range(ND):
            for k in range(NI):
                X[r * NI + k] = rhs[r * ncol + k]
            s = rhs[r * ncol + NI]
            for k in range(NI):
                s += X[r * NI + k] * v[m.independent[k]]
            v[m.dependent[r]] = -s
        return 0, J, lus, X

    def rhs(self, t, x):
        """fmigen_core_rhs: dx of x = [q_i, v_i], or None (message set)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        q, v = [0.0] * NQ, [0.0] * NQ
        for k in range(NI):
            q[m.independent[k]] = x[k]
            v[m.independent[k]] = x[NI + k]
        if self.kinematics(t, q):
            return None
        st, J, lus, X = self.velocities(t, q, v)
        if st:
            return None
        ac = [0.0] * NQ
        if NC > 0:
            g = [0.0] * NC
            m.gamma(t, q, v, self.p, self.u, g)
            g = self.phid_solve_cols(J, lus, g, 1)
            for r in range(ND):
                ac[m.dependent[r]] = g[r]
        M, F = [0.0] * (NQ * NQ), [0.0] * NQ
        m.mass(t, q, v, self.p, self.u, M)
        m.forcing(t, q, v, self.p, self.u, F)
        B = [0.0] * (NQ * NI)
        for k in range(NI):
            B[m.independent[k] * NI + k] = 1.0
        for r in range(ND):
            for k in range(NI):
                B[m.dependent[r] * NI + k] = -X[r * NI + k]
        MB = [0.0] * (NQ * NI)
        res = list(F)
        for i, j in m.m_nz:   # M's structural non-zeros
            mij = M[i * NQ + j]
            res[i] -= mij * ac[j]
            for k in range(NI):
                MB[i * NI + k] += mij * B[j * NI + k]
        Mh, rh, pivh = [0.0] * (NI * NI), [0.0] * NI, [0] * NI
        for a in range(NI):
            s = 0.0
            for i in range(NQ):
                s += B[i * NI + a] * res[i]
            rh[a] = s
            for b in range(NI):
                mm = 0.0
                for i in range(NQ):
                    mm += B[i * NI + a] * MB[i * NI + b]
                Mh[a * NI + b] = mm
        if lu_factor(NI, Mh, pivh):
            self.message = "singular reduced mass matrix BᵀMB at t=%.9g" % t
            return None
        lu_solve(NI, Mh, pivh, rh)
        dx = [0.0] * (2 * NI)
        for k in range(NI):
            dx[k] = x[NI + k]
            dx[NI + k] = rh[k]
        for k in range(2 * NI):
            if not isfinite(dx[k]):
                self.message = "non-finite state derivative at t=%.9g" % t
                return None
        return dx

    def assemble(self):
        """fmigen_core_assemble: complete q, v from q_i, v_i; residual, outputs."""
        m = self.m
        for k in range(m.NI):
            if not isfinite(self.q[m.independent[k]]) or not isfinite(self.v[m.independent[k]]):
                self.message = "non-finite independent coordinate or velocity"
                return 1
        if self.kinematics(self.t, self.q):
            return 1
        if self.velocities(self.t, self.q, self.v)[0]:
            return 1
        if m.NC > 0:
            phi = [0.0] * m.NC
            m.phi(self.t, self.q, self.v, self.p, self.u, phi)
            self.residual = 0.0
            for j in range(m.NC):
                if fabs(phi[j]) > self.residual:
                    self.residual = fabs(phi[j])
        if m.NY > 0:
            m.outputs(self.t, self.q, self.v, self.p, self.u, self.y)
        return 0

    def one_step(self, x, t, h):
        n = len(x)
        k1 = self.rhs(t, x)
        if k1 is None:
            return 1
        if self.solver == EULER:
            for i in range(n):
                x[i] += h * k1[i]
            return 0
        xs = [x[i] + 0.5 * h * k1[i] for i in range(n)]
        k2 = self.rhs(t + 0.5 * h, xs)
        if k2 is None:
            return 1
        xs = [x[i] + 0.5 * h * k2[i] for i in range(n)]
        k3 = self.rhs(t + 0.5 * h, xs)
        if k3 is None:
            return 1
        xs = [x[i] + h * k3[i] for i in range(n)]
        k4 = self.rhs(t + h, xs)
        if k4 is None:
            return 1
        for i in range(n):
            x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
        return 0

    def commit_or_restore(self, t, q_good, v_good, t_good):
        """fmigen_core.c's commit_or_restore: assemble the state at t (its
        independent coordinates already set); on failure put back the last
        good q, v and t, so GetReal never reports a half-solved state."""
        self.t = t
        if not self.assemble():
            return 0
        self.q, self.v, self.t = q_good, v_good, t_good
        return 1

    def step(self, H):
        """fmigen_core_step: full internal steps of h, then one shorter step."""
        m = self.m
        NI = m.NI
        q_good, v_good = list(self.q), list(self.v)
        if m.kinematic:
            # q_i, v_i are inputs held over the step: re-solve at its end
            return self.commit_or_restore(self.t + H, q_good, v_good, self.t)
        x = [self.q[m.independent[k]] for k in range(NI)] + [self.v[m.independent[k]] for k in range(NI)]
        t_end = self.t + H
        t = self.t
        nfull = int(math.floor(H / self.h))
        rem = H - nfull * self.h
        if rem < 1e-9 * self.h and nfull > 0:
            rem = 0.0
        elif self.h - rem < 1e-9 * self.h:
            nfull += 1
            rem = 0.0
        for s in range(nfull):
            h = t_end - t if (s == nfull - 1 and rem == 0.0) else self.h
            if self.one_step(x, t, h):
                return 1
            t = self.t + (s + 1) * self.h
        if rem > 0.0 and self.one_step(x, t, t_end - t):
            return 1
        for k in range(2 * NI):
            if not isfinite(x[k]):
                self.message = "state became non-finite before t=%.9g" % t_end
                return 1
        for k in range(NI):
            self.q[m.independent[k]] = x[k]
            self.v[m.independent[k]] = x[NI + k]
        return self.commit_or_restore(t_end, q_good, v_good, self.t)


class ContinuityFallback(Exception):
    """Raised by a polished block's sequence or polish when it fails: the
    generated kinematics then solves that block by Newton from the previous
    solution (codegen's ``goto fallback``)."""


class FmuError(Exception):
    """Raised inside the FMU: pythonfmu turns it into fmi2Error with the message."""


class SlaveMethods:
    """The FMI 2.0 Co-Simulation instance (fmigen_instance.c, CS part) as
    methods of the generated ``Fmi2Slave`` subclass.  Value references as in
    ``runtime/fmigen_instance.h``."""

    def __init__(self, **kwargs):
        Fmi2Slave.__init__(self, **kwargs)  # noqa: F821 (names of the generated module)
        self.modelName = MODEL.identifier  # noqa: F821
        self.description = MODEL.description  # noqa: F821
        self._defaults()

    def _defaults(self):
        self.core = Core(MODEL, MODEL.default_solver, MODEL.default_step)  # noqa: F821
        self.fg_state = "instantiated"
        self.assembled = False
        self.terminated = False
        self.last_successful_time = 0.0

    def to_xml(self, model_options=None):
        from xml.etree import ElementTree
        return ElementTree.fromstring(MODEL.model_description)  # noqa: F821

    def _fail(self, msg):
        raise FmuError(msg)

    def _allowed(self, fn, states):
        if self.fg_state not in states:
            state = self.fg_state
            self.fg_state = "error"
            self._fail("%s is not allowed in state '%s'" % (fn, state))

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self._allowed("fmi2SetupExperiment", ("instantiated",))
        if not isfinite(start_time):
            self._fail("fmi2SetupExperiment: start time is not finite")
        self.core.t = float(start_time)

    def enter_initialization_mode(self):
        self._allowed("fmi2EnterInitializationMode", ("instantiated",))
        self.assembled = False
        self.fg_state = "init"

    def exit_initialization_mode(self):
        self._allowed("fmi2ExitInitializationMode", ("init",))
        if self.core.assemble():
            self.fg_state = "error"
            self._fail("the start cannot be assembled: %s" % self.core.message)
        self.assembled = True
        self.last_successful_time = self.core.t
        self.fg_state = "step"

    def terminate(self):
        self._allowed("fmi2Terminate", ("step", "discarded"))
        self.fg_state = "terminated"

    def _ensure_assembled(self):
        if self.assembled:
            return
        snap = self.core.snapshot()
        if self.core.assemble():
            msg = self.core.message
            self.core.restore(snap)
            self._fail("%s: %s" % ("the start cannot be assembled" if self.fg_state == "init" else "GetReal", msg))
        self.assembled = True

    def get_real(self, vrs):
        if self.fg_state == "instantiated":
            self._allowed("fmi2GetReal", ())
        if self.fg_state not in ("error", "discarded"):
            self._ensure_assembled()
        c, m = self.core, MODEL  # noqa: F821
        out = []
        for r in vrs:
            if r < m.VR_V:
                out.append(c.q[r])
            elif r < m.VR_RES:
                out.append(c.v[r - m.VR_V])
            elif r == m.VR_RES:
                out.append(c.residual)
            elif r < m.VR_P:
                out.append(c.u[r - m.VR_U])
            elif r < m.VR_H:
                out.append(c.p[r - m.VR_P])
            elif r == m.VR_H:
                out.append(c.h)
            elif r < m.VR_A:
                out.append(c.y[r - m.VR_Y])
            else:
                self._fail("fmi2GetReal: unknown value reference %d" % r)
        return out

    def set_real(self, vrs, values):
        self._allowed("fmi2SetReal", ("instantiated", "init", "step"))
        m = MODEL  # noqa: F821
        before_init = self.fg_state in ("instantiated", "init")
        for r, val in zip(vrs, values):
            if not isfinite(val):
                self._fail("fmi2SetReal: value reference %d set to a non-finite value (NaN or Inf)" % r)
            ok = False
            if r < m.VR_RES:
                i = r if r < m.VR_V else r - m.VR_V
                ok = (before_init or m.kinematic) and i in m.independent
            elif m.VR_U <= r < m.VR_P:
                ok = True
            elif m.VR_P <= r < m.VR_H:
                ok = before_init
            elif r == m.VR_H:
                ok = before_init
                if ok and not (val > 0.0):
                    self._fail("internal_step must be > 0 (got %g)" % val)
            if not ok:
                self._fail("fmi2SetReal: value reference %d cannot be set %s" % (
                    r, "(it is calculated or unknown)" if before_init else "after initialization"))
        c = self.core
        changed = False
        for r, val in zip(vrs, values):
            val = float(val)
            if r < m.VR_V:
                arr, i = c.q, r
            elif r < m.VR_RES:
                arr, i = c.v, r - m.VR_V
            elif r < m.VR_P:
                arr, i = c.u, r - m.VR_U
            elif r < m.VR_H:
                arr, i = c.p, r - m.VR_P
            else:
                if c.h != val:
                    changed = True
                c.h = val
                continue
            if arr[i] != val:
                changed = True
            arr[i] = val
        if changed:
            self.assembled = False

    def do_step(self, current_time, step_size):
        self._allowed("fmi2DoStep", ("step",))
        c = self.core
        H, t = step_size, current_time
        if not (H > 0.0) or not isfinite(H):
            self._fail("fmi2DoStep: communication step size must be > 0 (got %g)" % H)
        if not isfinite(t) or fabs(t - c.t) > 1e-9 * (1.0 + fabs(t)) + 1e-12 * H:
            self._fail("fmi2DoStep: currentCommunicationPoint %.17g does not match the FMU time %.17g" % (t, c.t))
        c.t = t
        if c.step(H):
            self.log(c.message, Fmi2Status.discard,  # noqa: F821
                     "logStatusError")
            self.fg_state = "discarded"
            self.last_successful_time = c.t
            self.terminated = True
            return False
        self.assembled = True
        self.last_successful_time = c.t
        return True

    def _get_fmu_state(self):
        return {"core": self.core.snapshot(), "fg_state": self.fg_state, "assembled": self.assembled,
                "terminated": self.terminated, "last_successful_time": self.last_successful_time}

    def _set_fmu_state(self, state):
        self.core.restore(state["core"])
        self.fg_state = state["fg_state"]
        self.assembled = state["assembled"]
        self.terminated = state["terminated"]
        self.last_successful_time = state["last_successful_time"]


RUNTIME_OBJECTS = [linear, quadratic, fmax, fmin, lu_factor, lu_solve, poly_eval, all_roots, poly_root,
                   ContinuityFallback, Core, FmuError, SlaveMethods]
SLAVE_METHODS = ["__init__", "_defaults", "to_xml", "_fail", "_allowed", "setup_experiment",
                 "enter_initialization_mode", "exit_initialization_mode", "terminate", "_ensure_assembled",
                 "get_real", "set_real", "do_step", "_get_fmu_state", "_set_fmu_state"]

# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

#: C function names the C printer emits -> Python (math module or the runtime)
MATH_NAMES = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
              "acosh", "atanh", "exp", "expm1", "log", "log1p", "log10", "log2", "sqrt", "cbrt", "pow",
              "fabs", "floor", "ceil", "fmod", "hypot", "erf", "erfc", "lgamma"]


class _PyPrinter(codegen._Printer):
    """codegen's C printer, so expressions print (and evaluate) exactly as in
    model.c; only constructs without a Python spelling are refused."""

    def _print_Piecewise(self, expr):
        # C: ((c1) ? (e1) : ((c2) ? (e2) : (e3))), the same tests in the same order
        if expr.args[-1].cond != sp.true:
            raise PythonRuntimeError(f"piecewise expression without a default (True) branch: {expr}")
        out = self._print(expr.args[-1].expr)
        for e, cnd in reversed(expr.args[:-1]):
            out = f"(({self._print(e)}) if ({self._print(cnd)}) else ({out}))"
        return out

    def _print_ITE(self, expr):
        return self._print(expr.rewrite(sp.Piecewise))

    def _print_And(self, expr):
        return "(" + " and ".join(f"({self._print(a)})" for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(" + " or ".join(f"({self._print(a)})" for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"(not ({self._print(expr.args[0])}))"

    def _print_BooleanTrue(self, expr):
        return "True"

    def _print_BooleanFalse(self, expr):
        return "False"

    def _print_Integer(self, expr):
        # C converts integer literals to double at compile time; Python would
        # keep exact (big) integers, so print them as the doubles C uses
        return repr(float(expr))

    def _print_Infinity(self, expr):
        return "INFINITY"

    def _print_NegativeInfinity(self, expr):
        return "(-INFINITY)"

    def _print_NaN(self, expr):
        return "NAN"


_py = _PyPrinter()


def pyexpr(expr) -> str:
    return _py.doprint(expr)


def assignments(targets, exprs, indent="    ", tmp="x"):
    """codegen.assignments with Python statements (the same sympy CSE call)."""
    exprs = [sp.sympify(e) for e in exprs]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp))
    lines = [f"{indent}{s} = {pyexpr(e)}" for s, e in reps]
    lines += [f"{indent}{tg} = {pyexpr(e)}" for tg, e in zip(targets, reduced)]
    return lines


def _newton_lines(emb, tb, sm, code, ind, woff=None, iterations=None, on_fail=None):
    """codegen._newton_code in Python (``on_fail``: the statement for a
    singular Jacobian or a NaN step, default returning the failure code)."""
    on_fail = on_fail or f"return {code}"
    dae = emb.dae
    unk = tb.block.unknowns
    nb = len(unk)
    Phi_b = sp.Matrix([dae.Phi[j] for j in tb.block.equations])
    J_b = Phi_b.jacobian([dae.q_sym[i] for i in unk])
    body = assignments([f"r[{k}]" for k in range(nb)] + [f"J[{k}]" for k in range(nb * nb)],
                       [sm(e) for e in Phi_b] + [sm(e) for e in J_b], indent=ind + "    ",
                       tmp=f"n{code}_")
    L = [f"{ind}idx = {list(unk)!r}",
         f"{ind}J = [0.0] * {nb * nb}",
         f"{ind}r = [0.0] * {nb}",
         f"{ind}piv = [0] * {nb}",
         f"{ind}converged = False"]
    if woff is not None:
        L.append(f"{ind}for i in range({nb}): q[idx[i]] = warm[{woff} + i]")
        limit = "FMIGEN_NEWTON_MAX_ITER"
    else:
        limit = str(int(iterations))
    test = ("converged = dmax <= FMIGEN_NEWTON_TOL" if tb.tol is not None and woff is not None
            else "converged = dmax <= 1e-14 * (1.0 + qmax)")
    L += [f"{ind}it = 0",
          f"{ind}while it < {limit} and not converged:",
          *body,
          f"{ind}    if lu_factor({nb}, J, piv): {on_fail}",
          f"{ind}    lu_solve({nb}, J, piv, r)",
          f"{ind}    dmax = 0.0",
          f"{ind}    qmax = 0.0",
          f"{ind}    for i in range({nb}):",
          f"{ind}        q[idx[i]] -= r[i]",
          f"{ind}        if fabs(r[i]) > dmax: dmax = fabs(r[i])",
          f"{ind}        if fabs(q[idx[i]]) > qmax: qmax = fabs(q[idx[i]])",
          f"{ind}    if not (dmax == dmax): {on_fail}",
          f"{ind}    {test}",
          f"{ind}    it += 1"]
    if woff is not None:
        L += [f"{ind}if not converged: return {code}",
              f"{ind}for i in range({nb}): warm[{woff} + i] = q[idx[i]]"]
    else:
        L.append(f"{ind}polished = converged")
    return L


def kinematics_source(emb, tri, sm):
    """codegen.kinematics_code in Python: (source, failure table, warm start)."""
    out, failures, warm_start = [], [], []
    ind = "    "
    for tb in tri.blocks:
        names = [emb.dae.names[i] for i in tb.block.unknowns]
        out.append(f"{ind}# block {{{', '.join(names)}}}: {tb.method} {tb.reason}")
        if tb.method == "newton":
            failures.append(f"block {{{', '.join(names)}}} (Newton iteration did not converge "
                            "or its Jacobian is singular)")
            out += _newton_lines(emb, tb, sm, len(failures), ind, woff=len(warm_start))
            warm_start += [tri.start[n] for n in names]
            continue
        # a polished block falls back to Newton from the previous solution
        # wherever its sequence or polish fails (raise ContinuityFallback),
        # as codegen's goto fallback
        seq, sind = [], ind + ("    " if tb.polish else "")
        fail = (lambda code: "raise ContinuityFallback") if tb.polish else (lambda code: f"return {code}")
        for K, expr in tb.abstractions.items():
            seq.append(f"{sind}{K} = {pyexpr(sm(expr))}")
        for v, expr in tb.known_ring.items():
            seq.append(f"{sind}{v} = {pyexpr(sm(expr))}")
        for step in tb.steps:
            failures.append(f"{step.variable} (block {{{', '.join(names)}}})")
            code = len(failures)
            coeff_names = [f"a{d}" for d in range(step.degree, -1, -1)]
            seq.append(f"{sind}# {step.variable}: degree {step.degree}")
            seq += assignments(coeff_names, step.coeffs, indent=sind, tmp=f"k{code}_")
            if step.degree == 1:
                seq.append(f"{sind}_st, {step.variable} = linear(a1, a0)")
                seq.append(f"{sind}if _st: {fail(code)}")
            elif step.degree == 2:
                seq.append(f"{sind}_st, {step.variable} = quadratic(a2, a1, a0, {int(step.sign)})")
                seq.append(f"{sind}if _st: {fail(code)}")
            else:
                w = len(warm_start)
                seq.append(f"{sind}_st, _root = poly_root({step.degree}, [{', '.join(coeff_names)}], warm[{w}])")
                seq.append(f"{sind}if _st: {fail(code)}")
                seq.append(f"{sind}warm[{w}] = _root")
                seq.append(f"{sind}{step.variable} = warm[{w}]")
                warm_start.append(step.start)
        for i, expr in tb.recover.items():
            seq.append(f"{sind}q[{i}] = {pyexpr(expr)}")
        if not tb.polish:
            out += seq
            continue
        nb, woff = len(tb.block.unknowns), len(warm_start)
        failures.append(f"block {{{', '.join(names)}}} (no convergence near the previous solution)")
        code = len(failures)
        out.append(f"{ind}jdx = {list(tb.block.unknowns)!r}")
        out.append(f"{ind}try:")
        out += seq
        out.append(f"{sind}polished = False")
        out.append(f"{sind}# polish: at most {tb.polish} Newton steps")
        out += _newton_lines(emb, tb, sm, code, sind, iterations=tb.polish, on_fail="raise ContinuityFallback")
        out += [f"{sind}jump = 0.0",
                f"{sind}for i in range({nb}): jump = fmax(jump, fabs(q[jdx[i]] - warm[{woff} + i]))",
                f"{sind}if not polished or jump > FMIGEN_CONTINUITY_JUMP: raise ContinuityFallback",
                f"{ind}except ContinuityFallback:"]
        out += _newton_lines(emb, tb, sm, code, ind + "    ", woff=woff)
        out.append(f"{ind}for i in range({nb}): warm[{woff} + i] = q[jdx[i]]")
        warm_start += [tri.start[n] for n in names]
    src = "def fmigen_kinematics(t, q, p, warm):\n" + "\n".join(out + [f"{ind}return 0"]) + "\n"
    return src, [""] + failures, warm_start


def generate(compiled, solver="rk4", step=1e-3) -> tuple[str, str, str]:
    """The Python FMU module for a compiled model: (module source, model identifier, GUID)."""
    emb, tri, gen = compiled.embedding, compiled.triangular, compiled.generated
    dae = emb.dae
    mech = dae.mechanism
    if gen.formulation is not None:
        raise PythonRuntimeError(f"the Python runtime builds the embedded formulations only; "
                                 f"--kinematics {gen.formulation.name} needs the C runtime")
    if solver not in fmu.SOLVERS:
        raise PythonRuntimeError(f"unknown solver '{solver}' (choose from {sorted(fmu.SOLVERS)})")
    if not (step > 0):
        raise PythonRuntimeError(f"internal step must be > 0 (got {step})")
    identifier = mech.name
    if not identifier.isidentifier():
        raise PythonRuntimeError(f"mechanism name '{identifier}' is not a Python identifier")
    sm = SymbolMap(emb)
    n, m = dae.n, dae.m
    kin_src, failures, warm_start = kinematics_source(emb, tri, sm)

    def matrix_fn(name, M):
        flat = [sm(e) for e in M]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat)
        return f"def {name}(t, q, v, p, u, out):\n" + ("\n".join(body) if body else "    pass") + "\n"

    fns = [matrix_fn("fmigen_phi", dae.Phi), matrix_fn("fmigen_phi_q", emb.Phi_q),
           matrix_fn("fmigen_phi_t", emb.Phi_t), matrix_fn("fmigen_gamma", emb.gamma),
           matrix_fn("fmigen_mass", emb.M), matrix_fn("fmigen_forcing", emb.F),
           matrix_fn("fmigen_outputs", sp.Matrix(list(dae.outputs.values())) if dae.outputs else sp.Matrix([]))]
    tols = {tb.tol for tb in tri.blocks if tb.method == "newton" and tb.tol is not None}

    # variables and modelDescription: the C FMU's, adapted to pythonfmu
    start = {c.name: c.start for c in mech.coordinates}
    vars_ = fmu.variables(emb, start, step, "cs")
    deps = structure.dependencies(emb)
    xml = fmu.model_description(emb, gen, identifier, vars_, solver, "cs", deps, step)
    nu, np_ = len(dae.inputs), len(dae.tunable)
    vr = {"VR_V": n, "VR_RES": 2 * n, "VR_U": 2 * n + 1}
    vr["VR_P"] = vr["VR_U"] + nu
    vr["VR_H"] = vr["VR_P"] + np_
    vr["VR_Y"] = vr["VR_H"] + 1
    vr["VR_A"] = vr["VR_Y"] + len(dae.outputs)

    model = dict(
        identifier=identifier, description=mech.description or mech.name,
        NQ=n, NC=m, NI=emb.f, ND=n - emb.f, NP=np_, NU=nu, NY=len(dae.outputs), NWARM=len(warm_start),
        independent=list(emb.independent), dependent=list(emb.dependent),
        q_start=[float(tri.start[nm]) for nm in dae.names],
        v_start=[float(c_.velocity_start) for c_ in mech.coordinates],
        p_default=[float(x) for x in dae.tunable_values], u_default=[float(x) for x in dae.input_values],
        warm_start=[float(x) for x in warm_start], failure=failures,
        kinematic=bool(mech.kinematic), default_solver=fmu.SOLVERS[solver], default_step=float(step),
        **structure_tables(emb, tri), **vr)
    runtime = "\n\n".join(inspect.getsource(o) for o in RUNTIME_OBJECTS)
    methods = "\n".join(f"    {name} = SlaveMethods.{name}" for name in SLAVE_METHODS)
    parts = [
        f'"""fmigen Python FMU of mechanism \'{mech.name}\' (generated; do not edit).\n\n'
        f"The same reduced model as the C FMU ({solver}, internal step {step!r} s): kinematic\n"
        "solution sequence, embedded ODE and fixed-step integrator, in pure Python.\n\"\"\"",
        "import math",
        "from math import fabs, isfinite, inf as INFINITY, nan as NAN",
        "@@MATH_IMPORT@@",
        "from types import SimpleNamespace",
        "",
        "from pythonfmu import Fmi2Slave",
        "from pythonfmu.enums import Fmi2Status",
        "",
        f"FMIGEN_NEWTON_MAX_ITER = {FMIGEN_NEWTON_MAX_ITER}",
        f"FMIGEN_CONTINUITY_JUMP = {FMIGEN_CONTINUITY_JUMP!r}",
        f"FMIGEN_MAX_DEGREE = {FMIGEN_MAX_DEGREE}",
        f"FMIGEN_NEWTON_TOL = {min(tols)!r}" if tols else "",
        f"EULER, RK4 = {EULER}, {RK4}",
        "",
        "# ---- runtime (fmigen/pyruntime.py, a port of runtime/fmigen_core.c) ----",
        "",
        runtime,
        "",
        "# ---- model (generated from the same triangularization and embedding as model.c) ----",
        "",
        kin_src,
        *fns,
        f"MODEL = SimpleNamespace(**{model!r})",
        "MODEL.kinematics = fmigen_kinematics",
        "MODEL.phi, MODEL.phi_q, MODEL.phi_t = fmigen_phi, fmigen_phi_q, fmigen_phi_t",
        "MODEL.gamma, MODEL.mass, MODEL.forcing = fmigen_gamma, fmigen_mass, fmigen_forcing",
        "MODEL.outputs = fmigen_outputs",
        "MODEL.model_description = MODEL_DESCRIPTION = '@@XML@@'",
        "",
        "",
        f"class {identifier}(Fmi2Slave):",
        f'    """FMI 2.0 Co-Simulation slave of \'{mech.name}\'."""',
        methods,
        "",
    ]
    src = "\n".join(parts)
    # import only the math functions the model uses (math.cbrt is Python 3.11+)
    model_src = kin_src + "".join(fns)
    used = [n_ for n_ in MATH_NAMES if re.search(rf"\b{n_}\(", model_src)]
    missing = [n_ for n_ in used if not hasattr(math, n_)]
    if missing:
        raise PythonRuntimeError(f"no Python math function for {missing} used by the model")
    src = src.replace("@@MATH_IMPORT@@", f"from math import {', '.join(used)}" if used else "")
    guid = str(uuid.UUID(hashlib.md5(src.encode()).hexdigest()))
    xml = _adapt_model_description(xml, guid)
    src = src.replace("'@@XML@@'", repr(xml.decode()))
    try:
        compile(src, f"{identifier}.py", "exec")
    except SyntaxError as e:
        raise PythonRuntimeError(f"generated Python does not compile: {e}") from e
    return src, identifier, guid


def _adapt_model_description(xml: bytes, guid: str) -> bytes:
    """The C FMU's modelDescription for pythonfmu's binary: no SourceFiles,
    an execution tool (a Python interpreter) needed, GUID of the Python source."""
    from lxml import etree
    root = etree.fromstring(xml)
    root.set("guid", "{" + guid + "}")
    cs = root.find("CoSimulation")
    for sf in cs.findall("SourceFiles"):
        cs.remove(sf)
    cs.set("needsExecutionTool", "true")
    root.set("generationTool", root.get("generationTool") + " (Python runtime, pythonfmu)")
    return etree.tostring(root, xml_declaration=False, encoding="unicode").encode()


def check_pythonfmu():
    """pythonfmu's builder and its prebuilt binary for this platform, or a
    PythonRuntimeError that says what is missing."""
    try:
        from pythonfmu.builder import FmuBuilder
    except ImportError as e:
        raise PythonRuntimeError(
            f"--runtime python needs pythonfmu ({e}); install it with `pip install pythonfmu` "
            "or build the C FMU (--runtime c)") from e
    if not FmuBuilder.has_binary():
        from pythonfmu.osutil import get_platform
        raise PythonRuntimeError(
            f"pythonfmu has no prebuilt FMI binary for this platform ({get_platform()}); "
            "build the C FMU instead (--runtime c)")
    return FmuBuilder


def package(compiled, out, solver="rk4", step=1e-3) -> Path:
    """Write the Python FMU (FMI 2.0 Co-Simulation) with pythonfmu."""
    FmuBuilder = check_pythonfmu()
    src, identifier, guid = generate(compiled, solver, step)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fmigen_py_") as tmp:
        # the module name is unique per generated source (pythonfmu imports it
        # by name and Python caches modules by name), so several Python FMUs,
        # even two builds of one mechanism, can share one interpreter
        script = Path(tmp) / f"fmigen_{identifier}_{guid.replace('-', '')[:12]}.py"
        script.write_text(src)
        # pythonfmu imports the script (sys.modules caches it by name): drop a
        # stale module of an earlier build in this process
        import sys
        sys.modules.pop(script.stem, None)
        try:
            FmuBuilder.build_FMU(script, dest=out, canGetAndSetFMUstate="true", canSerializeFMUstate="true",
                                 needsExecutionTool="true")
        finally:
            sys.modules.pop(script.stem, None)
            if tmp in sys.path:
                sys.path.remove(tmp)
    return out


def build_python_fmu(spec_or_mech, out, solver="rk4", step=1e-3, order=None, use_cache=True, log=None,
                     kinematics="groebner", newton_tol=None, compiled=None):
    """``pipeline.build_fmu`` for the Python runtime: same stages, pythonfmu at the end."""
    from .pipeline import compile_model, prepare_mechanism
    log = log or (lambda msg: None)
    check_pythonfmu()
    if compiled is None:
        mech = prepare_mechanism(spec_or_mech, log)
        compiled = compile_model(mech, order=order, use_cache=use_cache, log=log, kinematics=kinematics,
                                 newton_tol=newton_tol)
    t0 = time.perf_counter()
    log(f"[5/5] generating Python and packaging {out} with pythonfmu")
    path = package(compiled, Path(out), solver=solver, step=step)
    compiled.seconds["fmu"] = time.perf_counter() - t0
    return path, compiled
