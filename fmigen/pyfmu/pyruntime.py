"""Python runtime: the same reduced model as a pure-Python FMU (pythonfmu).

``fmigen build MECH -o OUT.fmu --runtime python`` packages the model that
``codegen`` turns into C as one generated Python module instead, wrapped by
pythonfmu's prebuilt FMI 2.0 Co-Simulation binary.  It serves users without a
C compiler and is a comparison row for the C FMU.

The generated module mirrors the C operation for operation, so the two agree
to round-off:

- every model expression is printed by a subclass of codegen's C printer
  (integer powers as multiplications, rationals as double divisions, the same
  sympy CSE), and the C function names resolve to the runtime's ports of
  fmigen's own (``fmigen_sin``, ``fmigen_cos``, ``fmigen_tan``,
  ``fmigen_atan2``, ``fmigen_asin``, ``fmigen_acos``, ``fmigen_atan``,
  ``fmigen_exp``, ``fmigen_log``: the C's bits, never libm's) or to
  Python's ``math`` (sqrt, correctly rounded);
- the kinematics comes from model.c's own walker (``codegen_kinematics.kinematics_walk``,
  spelled in Python by ``PyKinematics``), so it is the C statement for statement:
  per block the prediction from the last accepted solution (``Core.base``,
  FmigenBase: continuity, t, sol, q, v; updated after a successful assemble
  only, as ``fmigen_base_accept``), the sequence and its exact completion
  with the root nearest the prediction (``quadratic_near``, ``poly_root``),
  Newton from the prediction last, each result verified by the block's own
  polynomials with the same optional polish and continuity check, the same
  constants (read from ``runtime/fmigen_runtime.h``) and the same failure
  messages (block and independent coordinates);
- Euler / symplectic Euler / RK4 and the internal-step rule (full steps of h, one shorter last
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
of the C FMU (``variables.table`` / ``fmu.model_description``), so importers see
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
from pathlib import Path

import sympy as sp

from fmigen.generate import codegen
from fmigen.generate import codegen_kinematics
from fmigen.generate import codegen_newton
from fmigen.fmi import fmu, variables
from fmigen.generate.codegen_newton import newton_system
from fmigen.generate.mass_checks import checked_value, mass_check_source
from fmigen.generate.printer import PythonRuntimeError, SymbolMap, pyexpr
from fmigen.generate.codegen_embedding import structure_tables
from fmigen.derive.dae import PSD3_MINORS, psd3
from fmigen.derive.workspace import mechanism_unit_scales
from fmigen.generate.elementary import (fmigen_acos, fmigen_asin, fmigen_atan, fmigen_atan2, fmigen_cos, fmigen_exp,
                                        fmigen_log, fmigen_powi, fmigen_sin, fmigen_sincos, fmigen_tan)
from fmigen.pyfmu.numeric import (EULER, FMIGEN_BRANCH_TOL, FMIGEN_LIMIT_GAIN, FMIGEN_MAX_DEGREE,
                                  FMIGEN_MESSAGE_SIZE, FMIGEN_NEWTON_MAX_ITER, FMIGEN_POLISH_TOL,
                                  FMIGEN_SEQ_TOL, FMIGEN_SWITCH_COND, RK4, SYMPLECTIC, all_roots, fmax,
                                  fmigen_unwrap, fmin, ldlt_factor, ldlt_solve, linear, lu_factor, lu_solve,
                                  poly_eval, poly_root, quadratic_near, quadratic_root, rotate)
from fmigen.pyfmu.slave import Core, FmuError, SlaveMethods


# --------------------------------------------------------------------------
# Runtime (copied into the generated module).  Ports of fmigen_runtime.h,
# fmigen_numeric.h and fmigen_core.c (the embedding: of its block-LU
# version, see the top).
# --------------------------------------------------------------------------


RUNTIME_OBJECTS = [linear, quadratic_near, quadratic_root, rotate, fmigen_sincos, fmigen_sin, fmigen_cos, fmigen_atan2,
                   fmigen_tan, fmigen_asin, fmigen_acos, fmigen_atan, fmigen_exp, fmigen_log, fmigen_unwrap,
                   fmigen_powi, fmax, fmin, lu_factor, lu_solve,
                   ldlt_factor, ldlt_solve, psd3, checked_value,
                   poly_eval, all_roots, poly_root,
                   Core, FmuError, SlaveMethods]
SLAVE_METHODS = ["__init__", "_defaults", "to_xml", "_fail", "_vr_name", "_check_masses", "_allowed", "setup_experiment",
                 "enter_initialization_mode", "exit_initialization_mode", "terminate", "_ensure_assembled",
                 "get_real", "set_real", "do_step", "_get_fmu_state", "_set_fmu_state"]

# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

#: C function names the C printer emits -> Python (math module or the runtime)
MATH_NAMES = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
              "acosh", "atanh", "exp", "expm1", "log", "log1p", "log10", "log2", "sqrt", "cbrt", "pow",
              "fabs", "floor", "ceil", "fmod", "hypot", "erf", "erfc", "lgamma"]


def assignments(targets, exprs, indent="    ", tmp="x"):
    """statements.assignments with Python statements (the same sympy CSE call)."""
    exprs = [sp.sympify(e) for e in exprs]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp))
    lines = [f"{indent}{s} = {pyexpr(e)}" for s, e in reps]
    lines += [f"{indent}{tg} = {pyexpr(e)}" for tg, e in zip(targets, reduced)]
    return lines


def _newton_lines(emb, solved_block, symbol_map, tag, iterations, ind):
    """codegen_newton._newton_code in Python: Newton on the block's own equations
    from the values in q, at most ``iterations`` steps, chord steps with the
    last LU factors near the solution in an exact block; leaves
    ``converged_<tag>`` true when the step passed the convergence test, false
    when it did not or the Jacobian was singular or the step not finite."""
    unk = solved_block.block.unknowns
    nb = len(unk)
    Phi_b, J_b, pairs = newton_system(emb, solved_block, "_ns", "_nc")
    exact = solved_block.tol is None
    inner = ind + ("        " if exact else "    ")
    phi = [symbol_map(e) for e in Phi_b]
    body = assignments([f"_r[{k}]" for k in range(nb)] + [f"_J[{k}]" for k in range(nb * nb)],
                       phi + [symbol_map(e) for e in J_b], indent=inner, tmp=f"n{tag}_")
    factor = [f"{inner}if lu_factor({nb}, _J, _piv): break"]

    def py(cond):
        return cond.replace("&&", "and")
    if exact:
        residual = assignments([f"_r[{k}]" for k in range(nb)], phi, indent=inner, tmp=f"nr{tag}_")
        evaluate = [f"{ind}    _fresh = not _reuse", f"{ind}    if _fresh:", *body, *factor,
                    f"{inner}_nfresh += 1", f"{ind}    else:", *residual]
        chord = py(codegen_newton.CHORD_STOP.format(d="_dmax", p="_dprev", q="_qmax"))
        stall = py(codegen_newton.STALL_STOP.format(d="_dmax", p="_dprev", q="_qmax"))
        test = [f"{ind}    if {stall}:", f"{ind}        _conv = True", f"{ind}        break",
                f"{ind}    if _fresh and _dmax >= _dfresh: break",
                f"{ind}    if _fresh: _dfresh = _dmax",
                f"{ind}    _conv = _dmax <= 1e-14 * (1.0 + _qmax) or (not _fresh and _chord_prev and ({chord}))",
                f"{ind}    _reuse = _dmax <= 1e-4 * (1.0 + _qmax) if _fresh else _dmax <= 1e-3 * _dprev",
                f"{ind}    _chord_prev = not _fresh"]
        state = [f"{ind}_reuse = False", f"{ind}_chord_prev = False", f"{ind}_nfresh = 0", f"{ind}_dfresh = math.inf"]
        loop = (f"{ind}while (_reuse or _nfresh < {iterations}) and _it < {iterations} + {codegen_newton.CHORD_EXTRA} "
                f"and not _conv:")
    else:
        evaluate = [*body, *factor]
        test = [f"{ind}    _conv = _dmax <= FMIGEN_NEWTON_TOL"]
        state = []
        loop = f"{ind}while _it < {iterations} and not _conv:"
    return [f"{ind}_idx = {list(unk)!r}",
            f"{ind}_J = [0.0] * {nb * nb}",
            f"{ind}_r = [0.0] * {nb}",
            f"{ind}_piv = [0] * {nb}",
            *([f"{ind}_ns{k}, _nc{k} = fmigen_sincos(q[{unk[k]}])" for k in pairs]
              if solved_block.method == "newton" else
              [line for j, k in enumerate(pairs) for line in (
                  f"{ind}_ns{k}, _nc{k} = _pr{tag}[{2 * j}], _pr{tag}[{2 * j + 1}]",
                  f"{ind}_rn = 1.0 / math.sqrt(_ns{k} * _ns{k} + _nc{k} * _nc{k})",
                  f"{ind}_ns{k}, _nc{k} = _ns{k} * _rn, _nc{k} * _rn")]),
            f"{ind}_conv = False",
            f"{ind}_dprev = 0.0",
            *state,
            f"{ind}_it = 0",
            loop,
            *evaluate,
            f"{ind}    lu_solve({nb}, _J, _piv, _r)",
            f"{ind}    _dmax = 0.0",
            f"{ind}    _qmax = 0.0",
            f"{ind}    for _i in range({nb}):",
            f"{ind}        q[_idx[_i]] -= _r[_i]",
            f"{ind}        if fabs(_r[_i]) > _dmax: _dmax = fabs(_r[_i])",
            f"{ind}        if fabs(q[_idx[_i]]) > _qmax: _qmax = fabs(q[_idx[_i]])",
            f"{ind}    if not (_dmax < math.inf): break",
            *[f"{ind}    _ns{k}, _nc{k} = rotate(_ns{k}, _nc{k}, -_r[{k}], q[{unk[k]}])" for k in pairs],
            *test,
            f"{ind}    _dprev = _dmax",
            f"{ind}    _it += 1",
            *[f"{ind}_pr{tag}[{2 * j}], _pr{tag}[{2 * j + 1}] = _ns{k}, _nc{k}" for j, k in enumerate(pairs)],
            f"{ind}converged_{tag} = _conv"]


def _vars_from_q(layout, ind, sums=None, pairs=None, tag=None):
    """codegen_kinematics._vars_from_q in Python."""
    lines = []
    pairs = pairs or {}
    for i, kind, vs, _ in layout:
        if i in (sums or {}):
            psi = pyexpr(sums[i][0])
            lines += [f"{ind}{vs[0]} = sin({psi})", f"{ind}{vs[1]} = cos({psi})"]
        elif kind == "angle" and i in pairs:
            j = pairs[i]
            lines += [f"{ind}{vs[0]} = _pr{tag}[{2 * j}]", f"{ind}{vs[1]} = _pr{tag}[{2 * j + 1}]"]
        elif kind == "angle":
            lines += [f"{ind}{vs[0]} = sin(q[{i}])", f"{ind}{vs[1]} = cos(q[{i}])"]
        else:
            lines.append(f"{ind}{vs[0]} = q[{i}]")
    return lines


class PyKinematics:
    """``codegen_kinematics.kinematics_walk``'s statements in Python: one flat function
    (block scopes are C's only), the attempts a ``for`` over one-pass
    ``while True`` loops (C: a switch whose cases ``break`` with ok = 0),
    Newton inline, and every dependent angle written to q at once (the C
    defers one nobody reads bare to fmigen_kinematic_angles: the same atan2
    of the same pair).  The sin/cos hand-over ``trig`` is a local here (the
    Python embedding evaluates its own sin/cos), but later blocks read it as
    in C, so their coefficients see the sequence's (s, c), not
    sin(atan2(s, c))."""
    base_sol, base_v, base_q = "b_sol", "b_v", "b_q"
    defers_angles = False
    helpers = None   # codegen_kinematics.step_code: coefficients inline
    #: the walker's statement depths, and the verification's own
    indent = {"top": "    ", "block": "    ", "case": " " * 16, "step": " " * 16, "polish": " " * 16,
              "polished": " " * 20, "verify": " " * 8, "failed": " " * 12}

    def __init__(self, emb, symbol_map):
        self.emb, self.symbol_map = emb, symbol_map
        self.expr = pyexpr
        self.assignments = assignments

    def prelude(self, n, dq):
        return [f"    trig = [0.0] * {2 * n}", "    b_sol, b_q, b_v = base['sol'], base['q'], base['v']",
                "    dt = t - base['t']", "    check = base['continuity']", f"    dqi = {dq}"]

    def trig_from_q(self, depth, i):
        ind = self.indent[depth]
        return [f"{ind}trig[{2 * i}], trig[{2 * i + 1}] = fmigen_sincos(q[{i}])"]

    def trigs_from_q(self, ks):
        return [line for i in ks for line in self.trig_from_q("top", i)]

    def block_open(self, label):
        return [f"    # {label}"]

    def block_close(self):
        return []

    def let(self, depth, name, expr):
        return [f"{self.indent[depth]}{name} = {expr}"]

    set = let

    def newton_function(self, solved_block, bi):
        pass   # inline (newton)

    def newton(self, depth, solved_block, bi, tag, iterations):
        return _newton_lines(self.emb, solved_block, self.symbol_map, tag, iterations, self.indent[depth])

    def return_unless_newton_continues(self, bi, continuity, code):
        return [f"    if not converged_{bi} or (check and not ({' and '.join(continuity)})): return {code}"]

    def attempts_open(self, allvars, nseq, newton_first=False):
        if not newton_first:
            return ["    _ok = 0", f"    for _attempt in range({nseq + 1}):"]
        return ["    _ok = 0", f"    for _pass in range({nseq + 1}):",
                f"        _attempt = (_pass + {nseq}) % {nseq + 1} if check else _pass"]

    def case_open(self, si, label):
        head = f"        {'if' if si == 0 else 'elif'} _attempt == {si}:" if si is not None else "        else:"
        return [f"{head}  # {label}", "            while True:"]

    def step_open(self, label):
        return [f"{self.indent['step']}# {label}"]

    def step_close(self):
        return []

    def break_unless(self, depth, cond, bare=False):
        return [f"{self.indent[depth]}if not {cond if bare else f'({cond})'}: break"]

    def break_unless_continuous(self, depth, tests):
        return [f"{self.indent[depth]}if check and not ({' and '.join(tests)}): break"]

    def solve_step(self, var, degree):
        ind = self.indent["step"]
        if degree == 1:
            solve = f"{ind}_st, {var} = linear(a1, a0)"
        elif degree == 2:
            solve = f"{ind}_st, {var} = quadratic_near(a2, a1, a0, P_{var})"
        else:
            coeffs = ", ".join(f"a{d}" for d in range(degree, -1, -1))
            solve = f"{ind}_st, {var} = poly_root({degree}, [{coeffs}], P_{var})"
        return [solve, f"{ind}if _st: break"]

    def case_close(self, ok):
        return [f"{self.indent['case']}_ok = {ok}", f"{self.indent['case']}break"]

    def cases_close(self):
        return ["        if not _ok: continue"]

    def vars_from_q(self, depth, layout, sums, pairs=None, tag=None):
        return _vars_from_q(layout, self.indent[depth], sums, pairs, tag)

    def newton_start(self, depth, items, tag, n=0):
        if items is None:   # returned pairs only
            return [f"{self.indent[depth]}_pr{tag} = [0.0] * {n}"]
        return [f"{self.indent[depth]}_pr{tag} = [{', '.join(items)}]"]

    def trig_from_pair(self, depth, i, tag, j):
        ind = self.indent[depth]
        return [f"{ind}trig[{2 * i}] = _pr{tag}[{2 * j}]", f"{ind}trig[{2 * i + 1}] = _pr{tag}[{2 * j + 1}]"]

    @staticmethod
    def _within(n, tol, r="_rv", s="_rs"):
        return " and ".join(f"fabs({r}[{k}]) <= {tol} * {s}[{k}]" for k in range(n))

    def verify_open(self, polys, pscales, tmp, polish_from=0):
        n, i1, i2 = len(polys), self.indent["verify"], self.indent["failed"]
        guard = f"_attempt >= {polish_from} and " if polish_from else ""
        return [f"{i1}_rv = [0.0] * {n}", f"{i1}_rs = [0.0] * {n}",
                *assignments([f"_rv[{k}]" for k in range(n)] + [f"_rs[{k}]" for k in range(n)],
                             polys + pscales, indent=i1, tmp=tmp),
                f"{i1}if not ({self._within(n, 'FMIGEN_SEQ_TOL')}):", f"{i2}_ok = 0",
                f"{i2}if {guard}{self._within(n, 'FMIGEN_POLISH_TOL')}:  # polish: Newton from the result"]

    def quadratic_root(self, depth, var, root, other, circle_of=None):
        ind = self.indent[depth]
        if circle_of is not None:      # var² + circle_of² − 1 = 0
            return [f"{ind}_st, {var} = quadratic_near(1.0, 0.0, {circle_of} * {circle_of} - 1.0, P_{var})",
                    f"{ind}if _st: break"]
        return [f"{ind}_st, {var} = quadratic_root(a2, a1, a0, {root}, P_{var}, {int(other)})", f"{ind}if _st: break"]

    def linear_solve(self, depth, n, A, b, targets):
        ind = self.indent[depth]
        return [f"{ind}_Ac = [{', '.join(A)}]", f"{ind}_bc = [{', '.join(b)}]", f"{ind}_pc = [0] * {n}",
                f"{ind}if lu_factor({n}, _Ac, _pc): break", f"{ind}lu_solve({n}, _Ac, _pc, _bc)",
                *[f"{ind}{v} = _bc[{k}]" for k, v in enumerate(targets)]]

    def linear_resolve(self, depth, n, b, name):
        ind = self.indent[depth]
        return [f"{ind}{name} = [{', '.join(b)}]", f"{ind}lu_solve({n}, _Ac, _pc, {name})"]

    def linear_refill(self, depth, n, A, b, targets):
        # Python's names are the function's: a new solve rebinds the same ones
        return self.linear_solve(depth, n, A, b, targets)

    def break_unless_within(self, depth, polys, pscales, tmp):
        ind, n = self.indent[depth], len(polys)
        return [f"{ind}_rc = [0.0] * {n}", f"{ind}_sc = [0.0] * {n}",
                *assignments([f"_rc[{k}]" for k in range(n)] + [f"_sc[{k}]" for k in range(n)],
                             polys + pscales, indent=ind, tmp=tmp),
                f"{ind}if not ({self._within(n, 'FMIGEN_SEQ_TOL', '_rc', '_sc')}): break"]

    def polished_open(self, converged):
        return [f"{self.indent['polish']}if {converged}:"]

    def verify_close(self):
        return [f"{self.indent['polished']}_ok = 2"]

    def attempts_close(self, continuity, code):
        return [f"        if _ok == 2 and check and not ({' and '.join(continuity)}): _ok = 0",
                "        if _ok: break", f"    if not _ok: return {code}"]

    def angle_from_sums(self, i, sin_q, cos_q, to_trig, defer):
        trig = [f"    trig[{2 * i}] = _sq", f"    trig[{2 * i + 1}] = _cq"] if to_trig else []
        return [f"    _sq = {sin_q}", f"    _cq = {cos_q}", *trig,
                f"    q[{i}] = fmigen_unwrap(fmigen_atan2(_sq, _cq), b_q[{i}])"]

    def angle_from_pair(self, i, vs, to_trig, defer):
        trig = [f"    trig[{2 * i}] = {vs[0]}", f"    trig[{2 * i + 1}] = {vs[1]}"] if to_trig else []
        # continuous: the turns nearest the last accepted value (C: the
        # same a + 2π·k, by fmigen_unwrap or a deferred angle's turns)
        return [*trig, f"    q[{i}] = fmigen_unwrap(fmigen_atan2({vs[0]}, {vs[1]}), b_q[{i}])"]

    def finish(self, out):
        return "def fmigen_kinematics(t, q, p, base, sol):\n" + "\n".join(out + ["    return 0"]) + "\n"


def kinematics_source(emb, tri, symbol_map):
    """The kinematics in Python: ``codegen_kinematics.kinematics_walk`` (model.c's
    walker) with ``PyKinematics``.  Returns (source, failure table, start of
    the solution vector ``sol``)."""
    src, failures, sol_start = codegen_kinematics.kinematics_walk(emb, tri, symbol_map, codegen.trig_plan(emb), PyKinematics(emb, symbol_map))
    return src, [""] + failures, sol_start


def _check_against_c(model_c, failures, sol_start):
    """The failure table and the start of ``sol`` must be model.c's
    (fmigen_kinematics_failure, fmigen_sol_start): a guard against the two
    generators drifting apart."""
    m_ = re.search(r"const double fmigen_sol_start\[\] = \{(.*)\};", model_c)
    c_start = [float(x) for x in m_.group(1).split(",")] if m_ else None
    if c_start != ([float(x) for x in sol_start] or [0.0]):
        raise PythonRuntimeError("the Python kinematics' solution vector does not match model.c's "
                                 "fmigen_sol_start (pyruntime.kinematics_source out of step with codegen)")
    m_ = re.search(r"fmigen_kinematics_failure\[\] = \{\n(.*?)\n\};", model_c, re.S)
    c_fail = re.findall(r'^\s*"(.*)",?$', m_.group(1), re.M) if m_ else []
    # (without any block, model.c pads its table with a second "")
    if [f for f in c_fail if f] != failures[1:]:
        raise PythonRuntimeError("the Python kinematics' failure messages do not match model.c's "
                                 "(pyruntime.kinematics_source out of step with codegen)")


def reaction_source(dae, symbol_map) -> str:
    """model.c's joint reactions (``codegen.reaction_c``) in Python: K [q̈; λ]
    = [F; γ] (``codegen.reaction_system``) by the runtime's LU, then the
    reaction outputs; ``fmigen_outputs_with_reactions`` is the outputs
    function the runtime calls."""
    entries, rhs, outs = codegen.reaction_system(dae)
    nk = dae.n + dae.m
    fill = assignments([f"K[{r * nk + c_}]" for r, c_, _ in entries] + [f"b[{k}]" for k in range(nk)],
                       [symbol_map(e) for _, _, e in entries] + [symbol_map(e) for e in rhs])
    body = assignments([f"out[{k}]" for k, _ in outs], [symbol_map(e) for _, e in outs])
    return "\n".join([
        "def fmigen_reactions(t, q, v, p, u, out):",
        f"    K, b, piv = [0.0] * {nk * nk}, [0.0] * {nk}, [0] * {nk}",
        *fill,
        f"    if lu_factor({nk}, K, piv):",
        *(f"        out[{k}] = NAN" for k, _ in outs),
        "        return",
        f"    lu_solve({nk}, K, piv, b)",
        f"    a, lam = b[:{dae.n}], b[{dae.n}:]",
        *body, "",
        "def fmigen_outputs_with_reactions(t, q, v, p, u, out):",
        "    fmigen_outputs(t, q, v, p, u, out)",
        "    fmigen_reactions(t, q, v, p, u, out)", ""])


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
    symbol_map = SymbolMap(emb)
    n, m = dae.n, dae.m
    kin_src, failures, sol_start = kinematics_source(emb, tri, symbol_map)
    _check_against_c(gen.whole_c, failures, sol_start)
    fns, labels = _model_functions(emb, symbol_map)
    tols = {solved_block.tol for solved_block in tri.blocks if solved_block.method == "newton" and solved_block.tol is not None}

    # variables and modelDescription: the C FMU's (one variable table), adapted to pythonfmu
    iface = fmu.Interface.of(emb)
    table = variables.table(iface, step, "cs")
    xml = fmu.model_description(iface, gen, table, "cs", step)
    nu, np_ = len(dae.inputs), len(dae.tunable)
    # the group offsets SlaveMethods dispatches on (a Co-Simulation FMU declares no later group)
    vr = {g: table.offsets[g] for g in ("VR_V", "VR_RES", "VR_U", "VR_P", "VR_H", "VR_Y", "VR_A")}

    model = dict(
        identifier=identifier, description=mech.description or mech.name,
        NQ=n, NC=m, NI=emb.f, ND=n - emb.f, NP=np_, NU=nu, NY=len(dae.outputs), NSOL=len(sol_start),
        independent=list(emb.independent), dependent=list(emb.dependent),
        q_start=[float(tri.start[nm]) for nm in dae.names],
        v_start=[float(c_.velocity_start) for c_ in mech.coordinates],
        p_default=[float(x) for x in dae.tunable_values], u_default=[float(x) for x in dae.input_values],
        sol_start=[float(x) for x in sol_start], failure=failures, names=list(dae.names),
        unit_scale=[float(x) for x in mechanism_unit_scales(mech)],
        mass_labels=labels, psd3_minors=list(PSD3_MINORS),
        vr_names=[v.name for v in sorted(table.rows, key=lambda v: v.vr)],
        kinematic=bool(mech.kinematic), default_solver=fmu.SOLVERS[solver], default_step=float(step),
        # (coordinate, input, drive, ω) per prescribed coordinate (Core.prescribe)
        prescribed=[(dae.names.index(p.coordinate), [str(u) for u in dae.inputs].index(p.input),
                     [str(u) for u in dae.inputs].index(p.drive), 1.0 / float(p.time_constant))
                    for p in mech.prescribed],
        # (coordinate, preload's input) per static trim (Core.trim)
        trims=[(coord, [str(u) for u in dae.inputs].index(tr.input))
               for coord, tr in zip(emb.trim_coordinates(), mech.trims)],
        # {index in p: (lower, upper)} per hard point (fmigen_instance.c's range check)
        hard_points={k: tuple(p.range) for k, p in enumerate(p_ for p_ in mech.parameters if p_.tunable)
                     if p.is_hard_point},
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
        f"FMIGEN_MAX_DEGREE = {FMIGEN_MAX_DEGREE}",
        f"FMIGEN_SWITCH_COND = {FMIGEN_SWITCH_COND!r}",
        f"FMIGEN_SEQ_TOL = {FMIGEN_SEQ_TOL!r}",
        f"FMIGEN_POLISH_TOL = {FMIGEN_POLISH_TOL!r}",
        f"FMIGEN_BRANCH_TOL = {FMIGEN_BRANCH_TOL!r}",
        f"FMIGEN_LIMIT_GAIN = {FMIGEN_LIMIT_GAIN!r}",
        f"FMIGEN_MESSAGE_SIZE = {FMIGEN_MESSAGE_SIZE}",
        f"FMIGEN_NEWTON_TOL = {min(tols)!r}" if tols else "",
        f"EULER, RK4, SYMPLECTIC = {EULER}, {RK4}, {SYMPLECTIC}",
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
        "MODEL.outputs = fmigen_outputs_with_reactions" if mech.reactions else "MODEL.outputs = fmigen_outputs",
        "MODEL.mass_check = fmigen_mass_check",
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
    # over the source (model, runtime, solver, step) and the declared
    # variables, whose units and descriptions the source does not hold
    guid = str(uuid.UUID(hashlib.md5((src + "\0" + fmu.variable_list(table, "2")).encode()).hexdigest()))
    xml = _adapt_model_description(xml, guid)
    src = src.replace("'@@XML@@'", repr(xml.decode()))
    try:
        compile(src, f"{identifier}.py", "exec")
    except SyntaxError as e:
        raise PythonRuntimeError(f"generated Python does not compile: {e}") from e
    return src, identifier, guid


def _model_functions(emb, symbol_map) -> tuple[list[str], list]:
    """The model's Python functions beside its kinematics (constraints and
    their derivatives, mass matrix, forcing, outputs, reactions, mass checks)
    and the mass checks' labels."""
    dae = emb.dae
    mech = dae.mechanism

    def matrix_fn(name, M):
        flat = [symbol_map(e) for e in M]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat)
        return f"def {name}(t, q, v, p, u, out):\n" + ("\n".join(body) if body else "    pass") + "\n"

    fns = [matrix_fn("fmigen_phi", dae.Phi), matrix_fn("fmigen_phi_q", emb.Phi_q),
           matrix_fn("fmigen_phi_t", emb.Phi_t), matrix_fn("fmigen_gamma", emb.gamma),
           matrix_fn("fmigen_mass", emb.M), matrix_fn("fmigen_forcing", emb.F),
           matrix_fn("fmigen_outputs", sp.Matrix([0 if k in mech.reactions else e for k, e in dae.outputs.items()])
                     if dae.outputs else sp.Matrix([]))]
    if mech.reactions:
        fns.append(reaction_source(dae, symbol_map))
    checks, labels = mass_check_source(mech)
    fns.append(checks)
    return fns, labels


def _adapt_model_description(xml: bytes, guid: str) -> bytes:
    """The C FMU's modelDescription for pythonfmu's binary: no SourceFiles,
    an execution tool (a Python interpreter) needed, GUID of the Python source
    and the variables."""
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
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    log = log or (lambda msg: None)
    check_pythonfmu()
    if compiled is None:
        mech = prepare_mechanism(spec_or_mech, log, use_cache)
        compiled = compile_model(mech, order=order, use_cache=use_cache, log=log, kinematics=kinematics,
                                 newton_tol=newton_tol)
    if compiled.mechanism.switch_independent:
        # the Python twin mirrors one partition's kinematics and embedding
        log("warning: the Python runtime does not switch coordinates (switch_independent); near a "
            "singularity of the declared partition it returns fmi2Discard naming the block")
    t0 = time.perf_counter()
    log(f"[5/5] generating Python and packaging {out} with pythonfmu")
    path = package(compiled, Path(out), solver=solver, step=step)
    compiled.seconds["fmu"] = time.perf_counter() - t0
    return path, compiled
