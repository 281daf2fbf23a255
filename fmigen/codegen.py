"""Stage 6 — codegen: C99 for one mechanism (``model.c`` + ``model_config.h``).

The generated file holds only model-specific code and data, with no globals
that change: the kinematic solution sequence, Φ and the user outputs (each
with common-subexpression elimination), and the embedding — v_d and q̈_i as
straight-line code over the structural non-zeros (``codegen_embedding.py``).
The integrators and the FMI glue are hand-written and shared by every FMU
(``fmigen/runtime``), the same split the Modelica Association's Reference
FMUs use.

Calling convention of the generated functions (all arrays in model order):
q[n] coordinates, v[n] velocities, p[] tunable parameters, u[] inputs.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass

import sympy as sp
from sympy.printing.c import C99CodePrinter

from .embed import Embedding
from .model import t
from .triangular import Triangularization


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
        return super()._print_Pow(expr)

    def _print_Integer(self, expr):
        return f"{float(expr)!r}" if abs(int(expr)) > 2**31 else super()._print_Integer(expr)

    def _print_Pi(self, expr):
        # M_PI is not part of strict C99 (-std=c99 hides it)
        return "3.141592653589793"

    def _print_Rational(self, expr):
        return f"({float(expr.p)!r}/{float(expr.q)!r})"


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


def _function(signature, body):
    return f"{signature}\n{{\n{body}\n}}\n"


def _newton_code(emb, tb, sm, code, woff=None, iterations=None, on_fail=None):
    """Newton iteration on one block's own equations.

    With ``woff`` it starts from the previous solution kept in ``warm`` and
    iterates to convergence (at most FMIGEN_NEWTON_MAX_ITER): the Newton-block
    method.  Without it, it does a fixed number of ``iterations`` from the
    values already in q: the polish after a triangular sequence whose huge
    Gröbner coefficients lose digits in double precision; it stops early once
    converged, so it costs one step where the sequence was already exact.
    ``on_fail``: the C statement for a singular Jacobian or a NaN step
    (default: return the block's failure code)."""
    on_fail = on_fail or f"return {code};"
    dae = emb.dae
    unk = tb.block.unknowns
    nb = len(unk)
    Phi_b = sp.Matrix([dae.Phi[j] for j in tb.block.equations])
    J_b = Phi_b.jacobian([dae.q_sym[i] for i in unk])
    idx = ", ".join(str(i) for i in unk)
    body = assignments([f"r[{k}]" for k in range(nb)] + [f"J[{k}]" for k in range(nb * nb)],
                       [sm(e) for e in Phi_b] + [sm(e) for e in J_b], indent="                ",
                       tmp=f"n{code}_")
    head = f"""        static const int idx[{nb}] = {{{idx}}};
        double J[{nb * nb}], r[{nb}];
        int piv[{nb}], converged = 0;"""
    if woff is not None:
        head += f"""
        for (int i = 0; i < {nb}; i++) q[idx[i]] = warm[{woff} + i];"""
        loop = "for (int it = 0; it < FMIGEN_NEWTON_MAX_ITER && !converged; it++)"
    else:
        loop = f"for (int it = 0; it < {iterations} && !converged; it++)"
    # an alternative formulation's block (TriangularBlock.tol set) stops at an
    # absolute step tolerance, FMIGEN_NEWTON_TOL (overridable with -D)
    test = ("converged = dmax <= FMIGEN_NEWTON_TOL; (void)qmax;" if tb.tol is not None and woff is not None
            else "converged = dmax <= 1e-14 * (1.0 + qmax);")
    tail = f"""
        if (!converged) return {code};
        for (int i = 0; i < {nb}; i++) warm[{woff} + i] = q[idx[i]];""" if woff is not None else \
        "\n        polished = converged;"
    return f"""{head}
        {loop} {{
{body}
            if (fmigen_lu_factor({nb}, J, piv)) {on_fail}
            fmigen_lu_solve({nb}, J, piv, r);
            double dmax = 0.0, qmax = 0.0;
            for (int i = 0; i < {nb}; i++) {{
                q[idx[i]] -= r[i];
                if (fabs(r[i]) > dmax) dmax = fabs(r[i]);
                if (fabs(q[idx[i]]) > qmax) qmax = fabs(q[idx[i]]);
            }}
            if (!(dmax == dmax)) {on_fail}
            {test}
        }}{tail}"""


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


def kinematics_code(emb: Embedding, tri: Triangularization, sm: SymbolMap, trig=None):
    """The recursive solution sequence: every dependent coordinate from q_i.

    ``trig`` = (angles, substitution) from ``trig_plan``: the sequence also
    fills trig[2k], trig[2k+1] = sin, cos of every such angle (independent ones
    first, a dependent one right after its block).  A dependent angle that a
    block recovers from its (sin, cos) pair is computed by atan2 in the
    sequence only when something downstream reads it bare (``bare``);
    otherwise its pair goes to trig and ``fmigen_kinematic_angles`` computes
    the angle later, when q is read (``fmigen_core_observe``: an FMU step
    after which the importer reads no coordinate, residual or output pays
    no atan2).

    Returns (C code, warm-start values): ``warm`` holds the previous value of
    every degree > 2 root and of every Newton block's unknowns."""
    dae = emb.dae
    trig_angles, trig_subs = trig or (set(), {})
    ts = lambda e: sp.sympify(e).xreplace(trig_subs)  # noqa: E731
    # coordinates read bare by the embedding or by later blocks: always computed
    bare = _bare([ts(e) for e in [*emb.Phi_q, *emb.Phi_t, *emb.gamma, *emb.M, *emb.F]], dae)
    for tb in tri.blocks:
        if tb.method == "newton" or tb.polish:
            bare |= _bare([dae.Phi[j] for j in tb.block.equations], dae)
        else:
            bare |= _bare([ts(e) for e in [*tb.abstractions.values(), *tb.known_ring.values()]], dae)
    out, failures, warm_start, deferred = [], [], [], []
    for k in sorted(trig_angles & set(emb.independent)):
        # through a local: gcc then makes one sincos call of the pair
        out.append(f"    {{ const double a = q[{k}]; trig[{2 * k}] = sin(a); trig[{2 * k + 1}] = cos(a); }}")

    def trig_from_q(unknowns):
        for i in unknowns:
            if i in trig_angles:
                out.append(f"        {{ const double a = q[{i}]; trig[{2 * i}] = sin(a); trig[{2 * i + 1}] = cos(a); }}")

    for tb in tri.blocks:
        names = [emb.dae.names[i] for i in tb.block.unknowns]
        out.append(f"    {{ /* block {{{', '.join(names)}}}: {tb.method} {tb.reason} */")
        if tb.method == "newton":
            failures.append(f"block {{{', '.join(names)}}} (Newton iteration did not converge "
                            "or its Jacobian is singular)")
            out.append(_newton_code(emb, tb, sm, len(failures), woff=len(warm_start)))
            warm_start += [tri.start[n] for n in names]
            trig_from_q(tb.block.unknowns)
            out.append("    }")
            continue
        for K, expr in tb.abstractions.items():
            out.append(f"        const double {K} = {c(sm(ts(expr)))};")
        for v, expr in tb.known_ring.items():
            out.append(f"        const double {v} = {c(sm(ts(expr)))};")
        out.append("        double " + ", ".join(str(v) for v in tb.variables) + ";")
        # a polished block falls back to Newton from the previous solution
        # wherever its sequence or polish fails, not only on a jump
        fallback = f"fallback{len(warm_start)}" if tb.polish else None
        for step in tb.steps:
            failures.append(f"{step.variable} (block {{{', '.join(names)}}})")
            code = len(failures)
            fail = f"goto {fallback};" if fallback else f"return {code};"
            tmp = f"k{code}_"
            coeff_names = [f"a{d}" for d in range(step.degree, -1, -1)]
            out.append(f"        {{ /* {step.variable}: degree {step.degree} */")
            out.append(assignments([f"const double {nm}" for nm in coeff_names],
                                   step.coeffs, indent="            ", tmp=tmp))
            if step.degree == 1:
                out.append(f"            if (fmigen_linear(a1, a0, &{step.variable})) {fail}")
            elif step.degree == 2:
                out.append(f"            if (fmigen_quadratic(a2, a1, a0, {step.sign}, &{step.variable})) {fail}")
            else:
                arr = ", ".join(coeff_names)
                out.append(f"            const double coeffs[] = {{{arr}}};")
                out.append(f"            if (fmigen_poly_root({step.degree}, coeffs, &warm[{len(warm_start)}])) {fail}")
                out.append(f"            {step.variable} = warm[{len(warm_start)}];")
                warm_start.append(step.start)
            out.append("        }")
        for i, expr in tb.recover.items():
            sc = expr.args if isinstance(expr, sp.atan2) else None
            defer = bool(sc) and i not in bare and not tb.polish
            if sc and (i in trig_angles or defer) and not tb.polish:
                out.append(f"        trig[{2 * i}] = {sc[0]}; trig[{2 * i + 1}] = {sc[1]};")
            if defer:
                deferred.append(i)
            else:
                out.append(f"        q[{i}] = {c(expr)};")
            if i in trig_angles and not sc and not tb.polish:
                # an angle its block solves as a plain variable (it enters
                # the block's constraints linearly, e.g. a gear φ − 2θ = 0)
                trig_from_q([i])
        if tb.polish:
            # Polish the sequence's result; where the sequence is unreliable
            # (near a representation singularity of the basis its linear
            # steps turn 0/0) it may fail outright or the polish may land on
            # another branch, so a failure anywhere in the sequence or the
            # polish, or a result that jumps away from the previous solution,
            # is redone by Newton from the previous solution, which keeps
            # continuity (``fallback``).
            nb, woff = len(tb.block.unknowns), len(warm_start)
            failures.append(f"block {{{', '.join(names)}}} (no convergence near the previous solution)")
            code = len(failures)
            out.append(f"        int polished = 0;")
            out.append(f"        {{ /* polish: at most {tb.polish} Newton steps */")
            out.append(_newton_code(emb, tb, sm, code, iterations=tb.polish, on_fail=f"goto {fallback};"))
            out.append("        }")
            idx = ", ".join(str(i) for i in tb.block.unknowns)
            out.append(f"""        static const int jdx[{nb}] = {{{idx}}};
        {{
            double jump = 0.0;
            for (int i = 0; i < {nb}; i++) jump = fmax(jump, fabs(q[jdx[i]] - warm[{woff} + i]));
            if (polished && jump <= FMIGEN_CONTINUITY_JUMP) goto accepted{woff};
        }}
    {fallback}: ;
        {{""")
            out.append(_newton_code(emb, tb, sm, code, woff=woff))
            out.append("        }")
            out.append(f"    accepted{woff}:")
            out.append(f"        for (int i = 0; i < {nb}; i++) warm[{woff} + i] = q[jdx[i]];")
            warm_start += [tri.start[n] for n in names]
            trig_from_q(tb.block.unknowns)
        out.append("    }")
    body = "\n".join(out + ["    (void)t; (void)p; (void)warm; (void)trig;", "    return 0;"])
    fail_table = ",\n    ".join(f'"{f}"' for f in failures) or '""'
    code = _function("int fmigen_kinematics(double t, double *q, const double *p, double *warm, double *trig)",
                     body)
    code += f"\nconst char *const fmigen_kinematics_failure[] = {{\n    \"\",\n    {fail_table}\n}};\n"
    angles = [f"    q[{i}] = atan2(trig[{2 * i}], trig[{2 * i + 1}]);" for i in deferred]
    code += _function("void fmigen_kinematic_angles(double *q, const double *trig)",
                      "\n".join(angles + ["    (void)q; (void)trig;"]))
    return code, warm_start


def generate(emb: Embedding, tri: Triangularization, model_identifier: str, shared=None) -> GeneratedModel:
    """model.c and model_config.h.  ``shared``: a dict kept across calls for
    the same embedding and partition (several kinematics formulations)."""
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
    kin, warm_start = kinematics_code(emb, tri, sm, trig)
    nwarm = len(warm_start)
    parts.append(kin)

    def matrix_fn(name, sig, M):
        prelude, subs = _sincos_prelude(list(M), dae)
        flat = [sm(sp.sympify(e).xreplace(subs)) for e in M]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat) or "    (void)out;"
        return _function(f"void {name}({sig}, double *out)",
                         "    (void)t; (void)q; (void)v; (void)p; (void)u;\n" + prelude + body)

    sig = "double t, const double *q, const double *v, const double *p, const double *u"
    parts.append(matrix_fn("fmigen_phi", sig, dae.Phi))
    # the embedding depends on the model and partition only, not on the
    # kinematics formulation: ``shared`` (fmigen bench) keeps it across them
    if shared is not None and "embedding" in shared:
        parts.append(shared["embedding"])
    else:
        parts.append(embedding_code(emb, tri, sm, trig[1]))
        if shared is not None:
            shared["embedding"] = parts[-1]
    parts.append(matrix_fn("fmigen_outputs", sig, sp.Matrix(list(dae.outputs.values()))
                           if dae.outputs else sp.Matrix([])))

    def arr(ctype, name, values, fmt=repr):
        vals = ", ".join(fmt(v) for v in values) or "0"
        return f"const {ctype} {name}[] = {{{vals}}};"

    start = tri.start
    q0 = [start[nm] for nm in dae.names]
    v0 = [c_.velocity_start for c_ in mech.coordinates]
    parts += [arr("int", "fmigen_independent", emb.independent, str),
              arr("int", "fmigen_dependent", emb.dependent, str),
              arr("double", "fmigen_q_start", q0),
              arr("double", "fmigen_v_start", v0),
              arr("double", "fmigen_p_default", dae.tunable_values),
              arr("double", "fmigen_u_default", dae.input_values),
              arr("double", "fmigen_warm_start", warm_start), ""]
    model_c = "\n".join(parts)
    guid = str(uuid.UUID(hashlib.md5(model_c.encode()).hexdigest()))
    config_h = "\n".join([
        "/* Generated by fmigen. Sizes and identity of this model. */",
        "#ifndef FMIGEN_MODEL_CONFIG_H", "#define FMIGEN_MODEL_CONFIG_H",
        f'#define MODEL_IDENTIFIER {model_identifier}',
        f'#define MODEL_IDENTIFIER_STRING "{model_identifier}"',
        f'#define MODEL_GUID "{{{guid}}}"',
        f"#define NQ {n}", f"#define NC {m}", f"#define NI {f}",
        f"#define NP {max(len(dae.tunable), 0)}", f"#define NU {len(dae.inputs)}",
        f"#define NY {len(dae.outputs)}", f"#define NWARM {nwarm}",
        f"#define FMIGEN_KINEMATIC {int(mech.kinematic)}",
        # rheonomic constraints (a kinematic drive): the solve depends on t
        f"#define FMIGEN_KINEMATICS_TIME {int(any(sp.sympify(e).has(t) for e in dae.Phi))}",
        "#endif", ""])
    return GeneratedModel(model_c, config_h, guid, independent=tuple(emb.independent))


# imported last: codegen_embedding uses this module's printer and SymbolMap
from .codegen_embedding import embedding_code  # noqa: E402
