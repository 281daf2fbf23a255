"""Stage 6 — codegen: C99 for one mechanism (``model.c`` + ``model_config.h``).

The generated file holds only model-specific code and data, with no globals
that change: the kinematic solution sequence (each step's coefficients
term by term over their shared monomials, ``poly_plan``), Newton, Φ and the
user outputs (each with common-subexpression elimination), and the embedding — v_d and q̈_i as
straight-line code over the structural non-zeros (``codegen_embedding.py``).
The integrators and the FMI glue are hand-written and shared by every FMU
(``fmigen/runtime``), the same split the Modelica Association's Reference
FMUs use.

Calling convention of the generated functions (all arrays in model order):
q[n] coordinates, v[n] velocities, p[] tunable parameters, u[] inputs.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from dataclasses import dataclass

import sympy as sp
from sympy.printing.c import C99CodePrinter

from .embed import Embedding
from .model import t
from .triangular import Triangularization, abs_sum, block_layout, block_name


class _Printer(C99CodePrinter):
    """C99 printer that keeps integer powers as multiplications (cheaper and
    exact-er than pow) and big integers as doubles (no integer overflow)."""

    def _print_Pow(self, expr):
        base, exp = expr.args
        if exp.is_Integer and 1 < exp <= 4:
            b = self.parenthesize(base, 100)
            return "(" + "*".join([b] * int(exp)) + ")"
        if exp.is_Integer and -4 <= exp < 0:
            return "(1.0/" + self._print_Pow(sp.Pow(base, -exp, evaluate=False)) + ")"
        if exp.is_Integer and abs(exp) <= POWI_MAX:
            # pow() is a libm call of ~100 instructions; squaring is a handful
            # of multiplications (fmigen_powi, runtime/fmigen_runtime.h)
            call = f"fmigen_powi({self._print(base)}, {abs(int(exp))})"
            return call if exp > 0 else f"(1.0/{call})"
        return super()._print_Pow(expr)

    def _print_Integer(self, expr):
        return f"{float(expr)!r}" if abs(int(expr)) > 2**31 else super()._print_Integer(expr)

    def _print_Pi(self, expr):
        # M_PI is not part of strict C99 (-std=c99 hides it)
        return "3.141592653589793"

    def _print_Rational(self, expr):
        return f"({float(expr.p)!r}/{float(expr.q)!r})"


#: integer exponents up to this are printed as fmigen_powi (repeated
#: squaring), beyond it as pow()
POWI_MAX = 64

_printer = _Printer()


def c(expr) -> str:
    return _printer.doprint(expr)


@dataclass
class GeneratedModel:
    model_c: str
    config_h: str
    guid: str
    formulation: object = None   # formulation.Augmented, None for the embedded ODE
    independent: tuple = ()      # model indices of the independent coordinates
    body: str = ""               # model_c without the start and default values (codegen.finish)
    macros: dict = None          # the sizes in model_config.h


class SymbolMap:
    """Maps model symbols to the C arrays they live in."""

    def __init__(self, emb: Embedding):
        dae = emb.dae
        self.subs = {}
        for i, (qs, vs) in enumerate(zip(dae.q_sym, dae.v_sym)):
            self.subs[qs] = sp.Symbol(f"q[{i}]")
            self.subs[vs] = sp.Symbol(f"v[{i}]")
        for k, s in enumerate(dae.tunable):
            self.subs[s] = sp.Symbol(f"p[{k}]")
        for k, s in enumerate(dae.inputs):
            self.subs[s] = sp.Symbol(f"u[{k}]")
        self.subs[t] = sp.Symbol("t")

    def __call__(self, expr):
        return sp.sympify(expr).xreplace(self.subs)


def assignments(targets, exprs, indent="    ", tmp="x"):
    """CSE over ``exprs`` and C assignments ``target = expr;``.

    Plain CSE here, unlike the embedding's joint CSE (codegen_embedding.py,
    optimizations="basic"): these are the kinematics' per-block expressions,
    many and small, where "basic" made the Stewart cold build > 90 s instead
    of 27 s (5862348)."""
    exprs = [sp.sympify(e) for e in exprs]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp))
    lines = [f"{indent}const double {s} = {c(e)};" for s, e in reps]
    lines += [f"{indent}{tg} = {c(e)};" for tg, e in zip(targets, reduced)]
    return "\n".join(lines)


def poly_plan(polys, tmp="m"):
    """Straight-line evaluation of integer polynomials (``sp.Poly`` with one
    set of generators: a sequence step's coefficients) from their terms, as
    statements (target, operator, text): a temporary ``tmp<k>`` ("="), or
    the index of the polynomial whose sum it starts ("=") or continues ("+="
    or "-="), the text the same in C and Python (``*``, numbers and the
    generators' names).  Every monomial a term needs is one temporary, made
    from a smaller one times one generator, so the monomials the
    coefficients share are computed once; each sum goes term by term in the
    Poly's order, a monomial made just before its first term (short live
    ranges: with every temporary first and the sums last, gcc's register
    allocation took most of a six-bar's compile).

    Why not ``assignments`` (sympy's cse) here: a six-bar's steps have
    thousands of terms with 50-digit integers, and making their expressions
    and searching them for common subexpressions took ~10 s of its build;
    the monomials are the common subexpressions of such sums anyway."""
    gens = polys[0].gens if polys else ()
    names = [str(g) for g in gens]
    table, out = {}, []
    ntemp = [0]

    def monomial(m):
        if m in table:
            return table[m]
        nz = [(k, e) for k, e in enumerate(m) if e]
        if not nz:
            return None
        k, e = nz[-1]
        if len(nz) == 1 and e == 1:
            return names[k]
        parent = monomial(m[:k] + (e - 1,) + m[k + 1:])
        table[m] = name = f"{tmp}{ntemp[0]}"
        ntemp[0] += 1
        out.append((name, "=", f"{parent}*{names[k]}"))
        return name

    def number(c):
        # big integers as doubles, as the printer does (no integer overflow)
        return f"{float(c)!r}" if abs(c) > 2**31 else str(c)

    for i, P in enumerate(polys):
        if P.gens != gens:
            raise ValueError(f"poly_plan: generators {P.gens} differ from {gens}")
        first = True
        for m, c in P.terms():
            c = int(c)
            if c == 0:
                continue
            mono = monomial(m)
            mag = number(abs(c)) if mono is None else (mono if abs(c) == 1 else f"{number(abs(c))}*{mono}")
            if first:
                out.append((i, "=", ("-" if c < 0 else "") + mag))
            else:
                out.append((i, "-=" if c < 0 else "+=", mag))
            first = False
        if first:
            out.append((i, "=", "0"))
    return out


#: statements above which a sequence step's coefficient function is noinline
NOINLINE_STATEMENTS = 200


def step_code(step, lead_scale, indent, tmp, assign, helpers=None):
    """The lines that set the coefficients a<degree>..a0 of a sequence step
    and, where switching is checked, lead_scale: ``poly_plan`` over the
    coefficient polynomials, ``assign(targets, exprs, indent, tmp)`` for
    lead_scale (a few terms).  C (``helpers`` a list): the coefficients are
    computed by a function of their own, appended to ``helpers``, because
    gcc's register allocation grows faster than linearly with a function's
    size and a six-bar's kinematics inline is tens of thousands of
    statements; Python (pyruntime's ``assign``, ``helpers`` None): inline."""
    targets = [f"a{d}" for d in range(step.degree, -1, -1)]
    plan = poly_plan(step.coeff_polys, "m" if helpers is not None else tmp)
    if helpers is None:
        lines = [f"{indent}{targets[t] if isinstance(t, int) else t} {op} {text}" for t, op, text in plan]
    else:
        used = [g for g in step.element.gens if any(P.degree(g) > 0 for P in step.coeff_polys)]
        fn = f"fmigen_coeffs_{tmp.rstrip('_')}"
        body = [f"    {'const double ' if op == '=' else ''}{t} {op} {text};" if isinstance(t, str) else
                f"    {'double ' if op == '=' else ''}{targets[t]} {op} {text};" for t, op, text in plan]
        body += [f"    a[{k}] = {a};" for k, a in enumerate(targets)]
        params = "".join(f"double {g}, " for g in used)
        # only a big step is kept out of line (compile time); a small one,
        # like a Stewart leg's, is left to gcc to inline: the call costs more
        # than its arithmetic
        attribute = "__attribute__((noinline)) " if len(plan) > NOINLINE_STATEMENTS else ""
        helpers.append(f"static void {attribute}{fn}({params}double *a)\n{{\n"
                       + "\n".join(body) + "\n}\n")
        lines = [f"{indent}double a_[{len(targets)}];",
                 f"{indent}{fn}({''.join(f'{g}, ' for g in used)}a_);"]
        lines += [f"{indent}const double {a} = a_[{k}];" for k, a in enumerate(targets)]
    if lead_scale is not None:
        decl = "const double " if helpers is not None else ""
        extra = assign([f"{decl}lead_scale"], [lead_scale], indent=indent, tmp=tmp + "s")
        lines += extra.split("\n") if isinstance(extra, str) else extra
    return lines


def _function(signature, body):
    return f"{signature}\n{{\n{body}\n}}\n"


def _newton_function(emb, tb, sm, bi):
    """A block's Newton iteration as its own function, out of the solve's hot
    path (the fallback and the polish both call it; inlined, its code cost
    the sequence registers): 1 when converged within ``max_iter`` steps."""
    body = _newton_code(emb, tb, sm, bi, "max_iter", indent="    ")
    return (f"static int __attribute__((noinline)) fmigen_newton_block{bi}(double t, double *q, const double *p, "
            f"int max_iter)\n{{\n{body}\n    (void)t; (void)p;\n    return converged_{bi};\n}}\n")


def _newton_call(bi, tag, iterations, indent):
    return f"{indent}const int converged_{tag} = fmigen_newton_block{bi}(t, q, p, {iterations});"


def _newton_code(emb, tb, sm, tag, iterations, indent="            "):
    """Newton iteration on one block's own equations, from the values already
    in q[idx] of its unknowns: at most ``iterations`` steps (a C expression);
    leaves ``int converged_<tag>`` = 1 when the step fell below the
    convergence test, 0 when it did not or the Jacobian was singular or the
    step not finite.  An alternative formulation's block (``tb.tol`` set,
    kinematics "newton"/"newton-loop") stops at the absolute step tolerance
    FMIGEN_NEWTON_TOL; every other at 1e-14·(1 + max|q|)."""
    dae = emb.dae
    unk = tb.block.unknowns
    nb = len(unk)
    Phi_b = sp.Matrix([dae.Phi[j] for j in tb.block.equations])
    J_b = Phi_b.jacobian([dae.q_sym[i] for i in unk])
    ind = indent
    body = assignments([f"r[{k}]" for k in range(nb)] + [f"J[{k}]" for k in range(nb * nb)],
                       [sm(e) for e in Phi_b] + [sm(e) for e in J_b], indent=ind + "        ",
                       tmp=f"n{tag}_")
    test = ("converged = dmax <= FMIGEN_NEWTON_TOL; (void)qmax;" if tb.tol is not None
            else "converged = dmax <= 1e-14 * (1.0 + qmax);")
    idx = ", ".join(str(i) for i in unk)
    return f"""{ind}int converged_{tag} = 0;
{ind}{{
{ind}    static const int idx[{nb}] = {{{idx}}};
{ind}    double J[{nb * nb}], r[{nb}];
{ind}    int piv[{nb}], converged = 0;
{ind}    for (int it = 0; it < {iterations} && !converged; it++) {{
{body}
{ind}        if (fmigen_lu_factor({nb}, J, piv)) break;
{ind}        fmigen_lu_solve({nb}, J, piv, r);
{ind}        double dmax = 0.0, qmax = 0.0;
{ind}        for (int i = 0; i < {nb}; i++) {{
{ind}            q[idx[i]] -= r[i];
{ind}            if (fabs(r[i]) > dmax) dmax = fabs(r[i]);
{ind}            if (fabs(q[idx[i]]) > qmax) qmax = fabs(q[idx[i]]);
{ind}        }}
{ind}        if (!(dmax == dmax)) break;
{ind}        {test}
{ind}    }}
{ind}    converged_{tag} = converged;
{ind}}}"""


def trig_plan(emb: Embedding):
    """The angles whose sin/cos the model functions use, and the substitution
    sin(q_k) → trig[2k], cos(q_k) → trig[2k+1].

    Why: the kinematics already holds s = sin ϑ and c = cos ϑ of every angle it
    solves through a triangular sequence (the polynomial variables), so it
    hands them over in ``trig`` instead of the embedding re-evaluating sin/cos
    and the sequence evaluating atan2 for an angle nobody reads bare."""
    dae = emb.dae
    exprs = [*emb.Phi_q, *emb.Phi_t, *emb.gamma, *emb.M, *emb.F]
    qset = set(dae.q_sym)
    angles = set()
    for e in exprs:
        for a in sp.sympify(e).atoms(sp.sin, sp.cos):
            if a.args[0] in qset:
                angles.add(dae.q_sym.index(a.args[0]))
    subs = {}
    for k in sorted(angles):
        subs[sp.sin(dae.q_sym[k])] = sp.Symbol(f"trig[{2 * k}]")
        subs[sp.cos(dae.q_sym[k])] = sp.Symbol(f"trig[{2 * k + 1}]")
    return angles, subs


def _sincos_prelude(exprs, dae):
    """sin and cos of each angle in exprs, evaluated once up front through a
    local (gcc then makes one sincos call of the pair; reading q[k] twice
    between stores to out[] defeats that).  Returns (C lines, substitution)."""
    qset = set(dae.q_sym)
    found = {}
    for e in exprs:
        for a in sp.sympify(e).atoms(sp.sin, sp.cos):
            if a.args[0] in qset:
                found.setdefault(dae.q_sym.index(a.args[0]), set()).add(a.func)
    lines, subs = [], {}
    for k in sorted(found):
        s_, c_ = sp.Symbol(f"sin_q{k}"), sp.Symbol(f"cos_q{k}")
        subs[sp.sin(dae.q_sym[k])], subs[sp.cos(dae.q_sym[k])] = s_, c_
        lines.append(f"    double {s_}, {c_}; {{ const double a = q[{k}]; {s_} = sin(a); {c_} = cos(a); }}"
                     f" (void){s_}; (void){c_};")
    return "".join(line + "\n" for line in lines), subs


def _bare(exprs, dae):
    """Coordinates that occur in exprs outside the trig substitution."""
    out = set()
    for e in exprs:
        for s_ in sp.sympify(e).free_symbols:
            if s_ in dae.q_sym:
                out.add(dae.q_sym.index(s_))
    return out


def block_plan(dae, tb, scales, start, woff, sol="base->sol", vel="base->v"):
    """What the C and the Python kinematics share for one block, as
    (name, expression) pairs in either language: the prediction P_<var> of
    every variable from the last accepted solution (``sol``) and velocities
    (``vel``) over dt, and the continuity tolerance T<i> of every
    coordinate.  Also the block's slots in the solution vector and their
    start values (``start``: the start assembly)."""
    layout = block_layout(tb, scales)
    slot, defs, sol_start = {}, [], []
    for i, kind, vs, scale in layout:
        w = f"w{i}"
        if i in tb.angle_sums:
            # the variables are (sin, cos) of the angle sum ψ = Σ k·q_j
            # (triangular.angle_plan): it turns at Σ k·v_j
            combo = tb.angle_sums[i][2]
            rate = " + ".join(f"{vel}[{j}]" if k == 1 else f"{float(k)!r} * {vel}[{j}]" for j, k in combo.items())
            defs.append((w, f"({rate}) * dt"))
            angle = sum(k * start[dae.names[j]] for j, k in combo.items())
        else:
            defs.append((w, f"{vel}[{i}] * dt"))
            angle = start[dae.names[i]]
        if kind == "angle":
            # (s, c) rotated by ω·dt, to second order
            s_, c_ = vs
            slot[s_], slot[c_] = woff + len(slot), woff + len(slot) + 1
            defs += [(f"P_{s_}", f"{sol}[{slot[s_]}] * (1.0 - 0.5 * {w} * {w}) + {sol}[{slot[c_]}] * {w}"),
                     (f"P_{c_}", f"{sol}[{slot[c_]}] * (1.0 - 0.5 * {w} * {w}) - {sol}[{slot[s_]}] * {w}"),
                     (f"T{i}", f"FMIGEN_BRANCH_TOL + fabs({w}) + dqi")]
            sol_start += [math.sin(angle), math.cos(angle)]
        else:
            v = vs[0]
            slot[v] = woff + len(slot)
            defs += [(f"P_{v}", f"{sol}[{slot[v]}] + {w}"),
                     (f"T{i}", f"(FMIGEN_BRANCH_TOL + dqi) * {scale!r} + fabs({w})")]
            sol_start.append(start[dae.names[i]])
    return layout, slot, defs, sol_start


def block_failure(dae, tb) -> str:
    return (f"block {block_name(dae, tb.block)}: no solution continuing the previous one (every sequence, "
            "and Newton from the prediction, failed its residual or continuity check)")


def q_from_vars(layout, prefix="", sums=None, printer=None):
    """(coordinate, expression) setting q of each unknown from its
    variables (``prefix`` "P_": from their predictions): atan2(s, c) for an
    angle; the same text in C and Python.  ``sums`` (``angle_sums``): an
    angle whose variables are an angle sum's is atan2 of its sine and cosine
    by angle addition, printed by ``printer`` (C's or Python's)."""
    sums = sums or {}
    printer = printer or c
    out = []
    for i, kind, vs, _ in layout:
        if i in sums:
            ren = {v: sp.Symbol(f"{prefix}{v}") for _, _, ws, _ in layout for v in ws}
            sin_q, cos_q = (printer(e.xreplace(ren)) for e in sums[i][1:])
            out.append((i, f"atan2({sin_q}, {cos_q})"))
        else:
            out.append((i, f"atan2({prefix}{vs[0]}, {prefix}{vs[1]})" if kind == "angle" else f"{prefix}{vs[0]}"))
    return out


def angle_sums(tb, sm, ts):
    """Per unknown angle of ``tb`` whose polynomial variables are the sine
    and cosine of an angle sum ψ (``triangular.angle_plan``): (ψ, sin q_i,
    cos q_i) as expressions in the arrays (q[], trig[]) and the block's
    variables, from ``tb.recover`` (known angles through ``trig`` where the
    kinematics has them, as the abstractions)."""
    out = {}
    for i, (_, _, combo) in tb.angle_sums.items():
        psi = sp.Add(*[k * sp.Symbol(f"q[{j}]") for j, k in combo.items()])
        sin_q, cos_q = tb.recover[i].args
        out[i] = (psi, sm(ts(sin_q)), sm(ts(cos_q)))
    return out


def kinematics_code(emb: Embedding, tri: Triangularization, sm: SymbolMap, trig=None):
    """The kinematics: every dependent coordinate from q_i, block by block,
    each result verified and continued from the last accepted solution.

    Per Gröbner block, every call:

    1. *Predict* each polynomial variable from the last accepted solution
       (``base->sol``) and velocities (``base->v``) over dt = t − base->t:
       (s, c) of an angle rotated by ω·dt (second order), a length moved by
       v·dt.
    2. *Solve* by the primary sequence; a quadratic or higher-degree step
       takes the root nearest the prediction (no build-time sign), a linear
       step whose leading coefficient is below FMIGEN_SWITCH_COND of the sum
       of its terms (a representation singularity of that lex order) fails.
    3. *Verify*: the block's own polynomials (and s² + c² − 1) at the result,
       each relative to the sum of its terms' magnitudes, must be ≤
       FMIGEN_SEQ_TOL; up to FMIGEN_POLISH_TOL a Newton polish (≤ 4 steps,
       from the result) brings it there.  Then *continuity*: every variable
       within FMIGEN_BRANCH_TOL (unit-circle chord for an angle, fraction of
       the mechanism's size for a length) plus the predicted motion of its
       prediction (skipped at the initial assembly, where there is no
       previous solution and the prediction is the build-time start).
    4. On failure, the next sequence (other lex orders, chosen at build time
       to cover the primary's representation singularities), then Newton
       from the prediction (≤ FMIGEN_NEWTON_MAX_ITER), verified the same
       way; if that fails too, a failure code whose message names the block.

    A Newton block predicts its coordinates the same way, iterates from the
    prediction and checks continuity.

    ``trig`` = (angles, substitution) from ``trig_plan``: the kinematics also
    fills trig[2k], trig[2k+1] = sin, cos of every such angle and of every
    dependent angle a sequence solves (from its (s, c) pair); such an angle
    that nothing reads bare is left out of q (``fmigen_kinematic_angles``
    computes it when q is read).

    Returns (C code, start values of the solution vector ``sol``: per block
    its polynomial variables, or a Newton block's coordinates)."""
    from .workspace import unit_scales
    dae = emb.dae
    scales = unit_scales(dae)
    trig_angles, trig_subs = trig or (set(), {})
    ts = lambda e: sp.sympify(e).xreplace(trig_subs)  # noqa: E731
    # coordinates read bare by the embedding or by a later block (its
    # abstractions, or its Newton fallback's equations): always computed
    bare = _bare([ts(e) for e in [*emb.Phi_q, *emb.Phi_t, *emb.gamma, *emb.M, *emb.F]], dae)
    for tb in tri.blocks:
        bare |= _bare([dae.Phi[j] for j in tb.block.equations], dae) - set(tb.block.unknowns)
        bare |= _bare([ts(e) for e in [*tb.abstractions.values(), *tb.known_ring.values()]], dae)
        # known angles an angle sum's recovery subtracts
        bare |= _bare([ts(tb.recover[i]) for i in tb.angle_sums], dae) - set(tb.block.unknowns)
    out, failures, sol_start, deferred, helpers = [], [], [], [], []
    out.append("    const double dt = t - base->t;")
    out.append("    const int check = base->continuity;")
    # how far the independent coordinates moved from the base, in unit
    # scales: a kinematic FMU's inputs may jump, and continuity is relative
    dq = " + ".join(f"fabs(q[{k}] - base->q[{k}]) * {1.0 / float(scales[k])!r}" for k in emb.independent) or "0.0"
    out.append(f"    const double dqi = {dq};")
    for k in sorted(trig_angles & set(emb.independent)):
        # through a local: gcc then makes one sincos call of the pair
        out.append(f"    {{ const double a = q[{k}]; trig[{2 * k}] = sin(a); trig[{2 * k + 1}] = cos(a); }}")

    for bi, tb in enumerate(tri.blocks):
        layout, slot, defs, start = block_plan(dae, tb, scales, tri.start, len(sol_start))
        sums = angle_sums(tb, sm, ts)
        sol_start += start
        failures.append(block_failure(dae, tb))
        code = len(failures)
        nseq = len(tb.sequences) if tb.method == "groebner" else 0
        what = (f"groebner, {nseq} sequence(s)" if nseq else f"newton {tb.reason}")
        out.append(f"    {{ /* block {block_name(dae, tb.block)}: {what} */")
        # prediction and continuity tolerances
        out += [f"        const double {name} = {expr};" for name, expr in defs]
        if tb.method == "newton":
            its = "FMIGEN_NEWTON_MAX_ITER"
            out += [f"        q[{i}] = {e};" for i, e in q_from_vars(layout, "P_")]
            helpers.append(_newton_function(emb, tb, sm, bi))
            out.append(_newton_call(bi, bi, its, "        "))
            cont = " && ".join(f"fabs(q[{i}] - P_q{i}) <= T{i}" for i, *_ in layout)
            out.append(f"        if (!converged_{bi} || (check && !({cont}))) return {code};")
            for i, *_ in layout:
                out.append(f"        sol[{slot[f'q{i}']}] = q[{i}];")
            _trig_from_q(out, tb.block.unknowns, trig_angles)
            out.append("    }")
            continue
        for K, expr in tb.abstractions.items():
            out.append(f"        const double {K} = {c(sm(ts(expr)))};")
        for v, expr in tb.known_ring.items():
            out.append(f"        const double {v} = {c(sm(ts(expr)))};")
        allvars = [v for _, _, vs, _ in layout for v in vs]
        out.append("        double " + ", ".join(str(v) for v in allvars) + ";")
        out.append("        int ok = 0;")
        out.append(f"        for (int attempt = 0; attempt <= {nseq} && !ok; attempt++) {{")
        out.append("            switch (attempt) {")
        for si, seq in enumerate(tb.sequences):
            out.append(f"            case {si}: {{ /* sequence {seq.label} */")
            for step in seq.steps:
                tmp = f"k{bi}_{si}_{step.variable}_"
                coeff_names = [f"a{d}" for d in range(step.degree, -1, -1)]
                out.append(f"                {{ /* {step.variable}: degree {step.degree} */")
                lead_scale = switch_scale(tb, step)
                out += step_code(step, lead_scale, "                    ", tmp, assignments, helpers)
                if lead_scale is not None:
                    out.append(f"                    if (!(fabs(a{step.degree}) > FMIGEN_SWITCH_COND * lead_scale)) break;")
                var = step.variable
                if step.degree == 1:
                    out.append(f"                    if (fmigen_linear(a1, a0, &{var})) break;")
                elif step.degree == 2:
                    out.append(f"                    if (fmigen_quadratic_near(a2, a1, a0, P_{var}, &{var})) break;")
                else:
                    arr = ", ".join(coeff_names)
                    out.append(f"                    const double coeffs[] = {{{arr}}};")
                    out.append(f"                    {var} = P_{var};")
                    out.append(f"                    if (fmigen_poly_root({step.degree}, coeffs, &{var})) break;")
                out.append("                }")
            # continuity of the roots this sequence chose (degree ≥ 2): the
            # linear steps' values are then the unique solution with them
            rc = root_continuity(seq, layout)
            if rc:
                out.append(f"                if (check && !({' && '.join(rc)})) break;")
            # a `break` above leaves the switch with ok = 0: the next attempt
            out.append("                ok = 1;")
            out.append("                break; }")
        out.append("            default: { /* Newton from the prediction */")
        out += [f"                q[{i}] = {e};" for i, e in q_from_vars(layout, "P_", sums)]
        helpers.append(_newton_function(emb, tb, sm, bi))
        out.append(_newton_call(bi, f"{bi}_n", "FMIGEN_NEWTON_MAX_ITER", "                "))
        out.append(f"                if (!converged_{bi}_n) break;")
        out += _vars_from_q(layout, "                ", sums)
        out.append("                ok = 2;")
        out.append("                break; }")
        out.append("            }")
        out.append("            if (!ok) continue;")
        # --- verification: the block's own polynomials, relative ----------
        polys, pscales = verification(tb)
        out.append("            {")
        out.append(f"                double rv[{len(polys)}], rs[{len(polys)}];")
        out.append(assignments([f"rv[{k}]" for k in range(len(polys))] + [f"rs[{k}]" for k in range(len(polys))],
                               polys + pscales, indent="                ",
                               tmp=f"v{bi}_"))
        # |P_k| ≤ tol·scale_k for every k (no division; NaN fails)
        within = lambda tol: " && ".join(f"fabs(rv[{k}]) <= {tol} * rs[{k}]" for k in range(len(polys)))  # noqa: E731
        out.append(f"                if (!({within('FMIGEN_SEQ_TOL')})) {{")
        out.append("                    ok = 0;")
        out.append(f"                    if ({within('FMIGEN_POLISH_TOL')}) {{ /* polish: Newton from the result */")
        out += [f"                        q[{i}] = {e};" for i, e in q_from_vars(layout, "", sums)]
        out.append(_newton_call(bi, f"{bi}_p", "4", "                        "))
        out.append(f"                        if (converged_{bi}_p) {{")
        out += _vars_from_q(layout, "                            ", sums)
        out.append("                            ok = 2;")
        out.append("                        }")
        out.append("                    }")
        out.append("                }")
        out.append("            }")
        # a Newton or polished result: every variable (ok == 1, a sequence's,
        # had its roots checked above)
        cont = " && ".join(f"fabs({v} - P_{v}) <= T{i}" for i, _, vs, _ in layout for v in vs)
        out.append(f"            if (ok == 2 && check && !({cont})) ok = 0;")
        out.append("        }")
        out.append(f"        if (!ok) return {code};")
        for v in allvars:
            out.append(f"        sol[{slot[v]}] = {v};")
        for i, kind, vs, _ in layout:
            if i in sums:
                # sin, cos of q_i by angle addition from the block's angle
                # sums (and known angles): no atan2 where only those are read
                defer = i not in bare
                _, sin_q, cos_q = sums[i]
                line = f"        {{ const double sq = {c(sin_q)}, cq = {c(cos_q)};"
                if i in trig_angles or defer:
                    line += f" trig[{2 * i}] = sq; trig[{2 * i + 1}] = cq;"
                if defer:
                    deferred.append(i)
                else:
                    line += f" q[{i}] = fmigen_atan2(sq, cq);"
                out.append(line + " }")
            elif kind == "angle":
                defer = i not in bare
                if i in trig_angles or defer:
                    out.append(f"        trig[{2 * i}] = {vs[0]}; trig[{2 * i + 1}] = {vs[1]};")
                if defer:
                    deferred.append(i)
                else:
                    # the runtime's atan2 (fmigen_core.c), as for the deferred
                    # angles: within an ulp of libm's at half its cost, and this
                    # one is in every right-hand side
                    out.append(f"        q[{i}] = fmigen_atan2({vs[0]}, {vs[1]});")
            else:
                out.append(f"        q[{i}] = {vs[0]};")
                # an angle its block solves as a plain variable (it enters
                # the block's constraints linearly, e.g. a gear φ − 2θ = 0)
                _trig_from_q(out, [i], trig_angles)
        out.append("    }")
    body = "\n".join(out + ["    (void)t; (void)p; (void)trig; (void)check; (void)dt; (void)dqi;", "    return 0;"])
    fail_table = ",\n    ".join(f'"{f}"' for f in failures) or '""'
    code = "\n".join(helpers) + _function(
        "int fmigen_kinematics(double t, double *q, const double *p, const FmigenBase *base, "
        "double *sol, double *trig)", body)
    code += f"\nconst char *const fmigen_kinematics_failure[] = {{\n    \"\",\n    {fail_table}\n}};\n"
    # the runtime's atan2 (fmigen_core.c): reading every coordinate of an FMU
    # computes these after each step, and libm's costs 12x as many instructions
    angles = [f"    q[{i}] = fmigen_atan2(trig[{2 * i}], trig[{2 * i + 1}]);" for i in deferred]
    code += _function("void fmigen_kinematic_angles(double *q, const double *trig)",
                      "\n".join(angles + ["    (void)q; (void)trig;"]))
    return code, sol_start


def root_continuity(seq, layout) -> list[str]:
    """The continuity tests of the variables a sequence picks a root for
    (degree ≥ 2 steps), as C/Python comparisons."""
    coord = {v: i for i, _, vs, _ in layout for v in vs}
    return [f"fabs({st.variable} - P_{st.variable}) <= T{coord[st.variable]}" for st in seq.steps if st.degree >= 2]


def switch_scale(tb, step):
    """What a step's leading coefficient is compared with at run time
    (|a| > FMIGEN_SWITCH_COND · scale, else the next sequence takes over):
    the sum of its terms' magnitudes.  None, and no check, where switching
    cannot help or cannot happen: a block with one sequence (its vanishing
    coefficient is caught by the residual check and solved by Newton), a
    constant coefficient, or one of more than 40 terms."""
    if len(tb.sequences) < 2:
        return None
    lead = step.coeff_polys[0].as_expr()
    if not lead.free_symbols:
        return None
    scale = abs_sum(lead)
    return scale if len(sp.Add.make_args(scale)) <= 40 else None


def verification(tb):
    """The polynomials a block's result must satisfy and the scale each is
    relative to: the sum of its terms' magnitudes; 2 for s² + c² − 1
    (s² + c² + 1 at any result that could pass)."""
    return [*tb.polys, *tb.circles], [abs_sum(p) for p in tb.polys] + [sp.Integer(2)] * len(tb.circles)


def _trig_from_q(out, unknowns, trig_angles):
    for i in unknowns:
        if i in trig_angles:
            out.append(f"        {{ const double a = q[{i}]; trig[{2 * i}] = sin(a); trig[{2 * i + 1}] = cos(a); }}")


def _vars_from_q(layout, ind, sums=None):
    lines = []
    for i, kind, vs, _ in layout:
        if i in (sums or {}):
            psi = c(sums[i][0])
            lines.append(f"{ind}{vs[0]} = sin({psi}); {vs[1]} = cos({psi});")
        elif kind == "angle":
            lines.append(f"{ind}{vs[0]} = sin(q[{i}]); {vs[1]} = cos(q[{i}]);")
        else:
            lines.append(f"{ind}{vs[0]} = q[{i}];")
    return lines


#: the generated names each partition has its own copy of
PARTITION_SYMBOLS = ("fmigen_kinematics_failure", "fmigen_kinematics", "fmigen_kinematic_angles",
                     "fmigen_embedded_velocities", "fmigen_embedded_prepare", "fmigen_embedded_finish",
                     "fmigen_independent",
                     "fmigen_dependent", "fmigen_sol_start", "fmigen_sol_layout")


def sol_layout(dae, tri) -> tuple[list[tuple[int, int]], list[int]]:
    """Per slot of the solution vector: (coordinate, 0 sin / 1 cos / 2 the
    value), in the order ``kinematics_code`` assigns the slots; and the
    terms of angle sums.  A slot holding sin or cos of an angle sum ψ = Σ
    k·q_j (``triangular.angle_plan``) has coordinate −1 − o, o the offset of
    its terms in the flat table fmigen_sol_layout (after the slots' pairs):
    their count, then (j, k) pairs."""
    from .workspace import unit_scales
    slots, combos = [], []
    for tb in tri.blocks:
        for i, kind, _, _ in block_layout(tb, unit_scales(dae)):
            if i in tb.angle_sums:
                combos.append(tb.angle_sums[i][2])
                slots += [(None, len(combos) - 1, 0), (None, len(combos) - 1, 1)]
            else:
                slots += [(i, None, 0), (i, None, 1)] if kind == "angle" else [(i, None, 2)]
    terms, offset = [], []
    for combo in combos:
        offset.append(2 * len(slots) + len(terms))
        terms += [len(combo), *[x for j, k in combo.items() for x in (j, k)]]
    return [(i if i is not None else -1 - offset[r], kind) for i, r, kind in slots], terms


def _partition_code(emb, tri, sm, trig, suffix, shared=None):
    """Kinematics, embedding and tables of one partition, and the sizes of
    its solution vector and embedding ``work``; names suffixed (``_p1``...)
    for an alternative one (coordinate switching)."""
    import re
    kin, sol_start = kinematics_code(emb, tri, sm, trig)
    if shared is not None and "embedding" in shared:
        embedding, nwork = shared["embedding"]
    else:
        embedding, nwork = embedding_code(emb, tri, sm, trig[1])
        if shared is not None:
            shared["embedding"] = embedding, nwork
    slots, terms = sol_layout(emb.dae, tri)
    layout = [x for pair in slots for x in pair] + terms
    code = "\n".join([kin, embedding,
                      _arr("int", "fmigen_independent", emb.independent, str),
                      _arr("int", "fmigen_dependent", emb.dependent, str),
                      _arr("double", "fmigen_sol_start", sol_start),
                      _arr("int", "fmigen_sol_layout", layout, str), ""])
    if suffix:
        code = re.sub(r"\b(" + "|".join(PARTITION_SYMBOLS) + r"|fmigen_newton_block\d+|fmigen_coeffs_\w+)\b", r"\1" + suffix,
                      code)
        # the alternative's functions are reached through fmigen_partitions only
        code = re.sub(r"^(int|void|const) (fmigen_\w+" + suffix + r")", r"static \1 \2", code, flags=re.M)
    return code, len(sol_start), nwork


def _arr(ctype, name, values, fmt=repr):
    vals = ", ".join(fmt(v) for v in values) or "0"
    return f"const {ctype} {name}[] = {{{vals}}};"


def generate(emb: Embedding, tri: Triangularization, model_identifier: str, shared=None,
             alternatives=()) -> GeneratedModel:
    """model.c and model_config.h.  ``shared``: a dict kept across calls for
    the same embedding and partition (several kinematics formulations).
    ``alternatives``: (embedding, triangularization) of further partitions
    the FMU may switch to (``Mechanism.switch_independent``)."""
    dae = emb.dae
    mech = dae.mechanism
    sm = SymbolMap(emb)
    n, m, f = dae.n, dae.m, emb.f
    parts = ["/* Generated by fmigen for mechanism '%s'. Do not edit. */" % mech.name,
             '#include "fmigen_runtime.h"', ""]
    tols = {tb.tol for tb in tri.blocks if tb.method == "newton" and tb.tol is not None}
    if tols:
        parts += ["#ifndef FMIGEN_NEWTON_TOL", f"#define FMIGEN_NEWTON_TOL {min(tols)!r}", "#endif", ""]
    trig = trig_plan(emb)
    code0, nwarm, nwork = _partition_code(emb, tri, sm, trig, "", shared)
    parts.append(code0)
    for k, (emb_k, tri_k) in enumerate(alternatives, start=1):
        code_k, nsol_k, nwork_k = _partition_code(emb_k, tri_k, SymbolMap(emb_k), trig_plan(emb_k), f"_p{k}")
        parts.append(code_k)
        nwarm, nwork = max(nwarm, nsol_k), max(nwork, nwork_k)
    def matrix_fn(name, sig, M):
        prelude, subs = _sincos_prelude(list(M), dae)
        flat = [sm(sp.sympify(e).xreplace(subs)) for e in M]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat) or "    (void)out;"
        return _function(f"void {name}({sig}, double *out)",
                         "    (void)t; (void)q; (void)v; (void)p; (void)u;\n" + prelude + body)

    def trig_fn(name, sig, M):
        """The same from the sin/cos the kinematics left in ``trig`` (the
        trig_plan angles: filled by every partition's kinematics, as the
        embedding reads them), so observing a state computes no sin/cos of
        those and needs no atan2 of a deferred angle.  Also returns whether it
        still reads an angle itself (bare or in a sin/cos): the runtime then
        completes the deferred angles first."""
        angles = {a.args[0] for e in M for a in sp.sympify(e).atoms(sp.sin, sp.cos)} & set(dae.q_sym)
        # the pair scaled onto the unit circle: the sequence's s, c satisfy
        # s² + c² = 1 only to its tolerance (1e-13), and the residual must be
        # that of the q the FMU reports (atan2 of the pair), not of the
        # pair's distance from the circle; a sqrt and a division per angle
        # against sin and cos of the atan2
        trig_lines, unit = [], {}
        for k in sorted(dae.q_sym.index(a) for a in angles):
            if sp.sin(dae.q_sym[k]) in trig[1]:
                s_, c_ = f"trig[{2 * k}]", f"trig[{2 * k + 1}]"
                trig_lines.append(f"    const double r_q{k} = 1.0/sqrt({s_}*{s_} + {c_}*{c_}); "
                                  f"const double ts_q{k} = {s_}*r_q{k}, tc_q{k} = {c_}*r_q{k};")
                unit[sp.sin(dae.q_sym[k])] = sp.Symbol(f"ts_q{k}")
                unit[sp.cos(dae.q_sym[k])] = sp.Symbol(f"tc_q{k}")
        exprs = [sp.sympify(e).xreplace(unit) for e in M]
        reads_angle = any(e.free_symbols & angles for e in exprs)
        prelude, subs = _sincos_prelude(exprs, dae)
        prelude = "".join(line + "\n" for line in trig_lines) + prelude
        flat = [sm(e.xreplace(subs)) for e in exprs]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat) or "    (void)out;"
        return _function(f"void {name}({sig}, const double *trig, double *out)",
                         "    (void)t; (void)q; (void)v; (void)p; (void)u; (void)trig;\n" + prelude + body), \
            int(reads_angle)

    sig = "double t, const double *q, const double *v, const double *p, const double *u"
    outputs = sp.Matrix(list(dae.outputs.values())) if dae.outputs else sp.Matrix([])
    parts.append(matrix_fn("fmigen_phi", sig, dae.Phi))
    parts.append(matrix_fn("fmigen_outputs", sig, outputs))
    phi_trig, residual_angles = trig_fn("fmigen_phi_trig", sig, dae.Phi)
    outputs_trig, outputs_angles = trig_fn("fmigen_outputs_trig", sig, outputs)
    parts += [phi_trig, outputs_trig]

    arr = _arr
    from .workspace import unit_scales
    table = []
    for k, (emb_k, tri_k) in enumerate([(emb, tri), *alternatives]):
        sx = f"_p{k}" if k else ""
        table.append(f"    {{fmigen_kinematics{sx}, fmigen_kinematic_angles{sx}, fmigen_embedded_velocities{sx}, "
                     f"fmigen_embedded_prepare{sx}, fmigen_embedded_finish{sx}, fmigen_independent{sx}, fmigen_dependent{sx}, "
                     f"fmigen_kinematics_failure{sx}, fmigen_sol_start{sx}, fmigen_sol_layout{sx}, "
                     f"{len(sol_layout(dae, tri_k)[0])}}}")
    parts.append("const FmigenPartition fmigen_partitions[] = {\n" + ",\n".join(table) + "\n};")
    # time events (Model Exchange nextEventTime): breakpoints of loads piecewise in t
    from .events import dae_time_events
    events = dae_time_events(dae)
    if events:
        parts.append(arr("double", "fmigen_event_times", events))
    macros = {"NQ": n, "NC": m, "NI": f, "NP": len(dae.tunable), "NU": len(dae.inputs), "NY": len(dae.outputs),
              "NSOL": nwarm, "NPART": 1 + len(alternatives), "FMIGEN_KINEMATIC": int(mech.kinematic),
              # rheonomic constraints (a kinematic drive): the solve depends on t
              "FMIGEN_KINEMATICS_TIME": int(any(sp.sympify(e).has(t) for e in dae.Phi)),
              "FMIGEN_NEVENTS": len(events),
              # the embedding's hand-over from prepare to finish (codegen_embedding._split_inputs)
              "FMIGEN_NWORK": nwork,
              # fmigen_phi_trig / fmigen_outputs_trig read a (possibly deferred) angle
              "FMIGEN_RESIDUAL_ANGLES": residual_angles, "FMIGEN_OUTPUTS_ANGLES": outputs_angles,
              # the embedding depends on t (rheonomic constraints or loads in t): its
              # cache at the commit then keys on t too
              "FMIGEN_EMBEDDING_TIME": int(any(sp.sympify(e).has(t) for e in
                                               [*dae.Phi, *emb.M, *emb.F])),}
    return finish(model_identifier, "\n".join(parts), macros, tri.start, mech, tuple(emb.independent))


def finish(model_identifier: str, body: str, macros: dict, start: dict, mech, independent) -> GeneratedModel:
    """The generated model from its derived ``body`` (all code) and sizes
    (``macros``): the start and default values appended from ``mech``, the
    GUID over the result.  Split from ``generate`` so that the derived-model
    cache (fmigen/derived.py) keeps the body and a build after a change of a
    tunable parameter's value only redoes this."""
    from .workspace import mechanism_unit_scales
    arr = _arr
    tail = [arr("double", "fmigen_q_start", [start[c_.name] for c_ in mech.coordinates]),
            arr("double", "fmigen_v_start", [c_.velocity_start for c_ in mech.coordinates]),
            arr("double", "fmigen_p_default", [float(p.value) for p in mech.parameters if p.tunable]),
            arr("double", "fmigen_u_default", [i.start for i in mech.inputs]),
            arr("double", "fmigen_unit_scale", [float(x) for x in mechanism_unit_scales(mech)]),
            "const char *const fmigen_coordinate_names[] = {"
            + ", ".join(f'"{c_.name}"' for c_ in mech.coordinates) + "};", ""]
    model_c = body + "\n" + "\n".join(tail)
    guid = str(uuid.UUID(hashlib.md5(model_c.encode()).hexdigest()))
    config_h = "\n".join([
        "/* Generated by fmigen. Sizes and identity of this model. */",
        "#ifndef FMIGEN_MODEL_CONFIG_H", "#define FMIGEN_MODEL_CONFIG_H",
        f'#define MODEL_IDENTIFIER {model_identifier}',
        f'#define MODEL_IDENTIFIER_STRING "{model_identifier}"',
        f'#define MODEL_GUID "{{{guid}}}"',
        *[f"#define {k} {v}" for k, v in macros.items()],
        "#endif", ""])
    return GeneratedModel(model_c, config_h, guid, independent=tuple(independent), body=body, macros=dict(macros))


# imported last: codegen_embedding uses this module's printer and SymbolMap
from .codegen_embedding import embedding_code  # noqa: E402
