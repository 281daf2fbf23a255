"""The kinematics of model.c: the walk over the triangular blocks
(``kinematics_walk``) that solves the dependent coordinates step by step,
with branch choice, completions, checks and the Newton fallbacks, printed
as C (``CKinematics``) or, by the Python runtime, as Python.
"""

from __future__ import annotations

import sympy as sp

from fmigen.derive.embed import Embedding
from fmigen.generate.codegen_lanes import lane_classes, lane_function
from fmigen.generate.codegen_newton import (POLISH_ITERATIONS, _newton_call, _newton_function, newton_pairs,
                                           newton_start)
from fmigen.generate.printer import SymbolMap, c, sincos_into
from fmigen.generate.statements import _function, assignments, poly_plan, table_function
from fmigen.kinematics.completion import ROOT_REFINEMENTS
from fmigen.kinematics.sweep_measures import abs_sum, block_layout, solution_start_values
from fmigen.kinematics.sequences import Triangularization, block_name


#: statements above which a sequence step's coefficient function is noinline
NOINLINE_STATEMENTS = 200
#: statements above which its terms are tables (statements.poly_table)
#: rather than code: where gcc's time on the code is seconds
TABLE_STATEMENTS = 1000


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
        if len(plan) > NOINLINE_STATEMENTS:
            # ... and compiled once: model.c's AVX copy (fmigen_model_avx.c,
            # FMIGEN_MODEL_VARIANT) calls the SSE2 copy's function instead of
            # compiling its own.  Why: such steps are nearly all of a large
            # model.c (a six-bar's sextic: 96 % of its text and of gcc's
            # time), and the AVX copy would give the same bits anyway
            # (scalar arithmetic without contraction, fmigen.fmi.fmu.AVX_FLAGS).
            # External (hidden in a binary FMU), so named per model
            # (FMIGEN_NAME, fmigen_names.h) for source FMUs linked together.
            # A very big one is tables the runtime's loop reads, not code
            # (statements.poly_table says why), a smaller one code at -O1
            # under gcc (FMIGEN_NOINLINE_COLD, fmigen_runtime.h): gcc's time
            # on such a function is nearly all register allocation, which
            # straight-line sums of products do not need.  The same bits
            # all three ways (docs/benchmarks.md).
            tables, fn = fn, f"FMIGEN_NAME({fn})"
            signature = f"void {fn}({params}double *a)"
            if len(plan) > TABLE_STATEMENTS:
                definition = table_function(tables, signature, step.coeff_polys, used)
            else:
                definition = (f"{signature.replace('void ', 'void FMIGEN_NOINLINE_COLD ', 1)}\n{{\n"
                              + "\n".join(body) + "\n}\n")
            helpers.append(f"#ifdef FMIGEN_MODEL_VARIANT\n{signature};\n#else\n{definition}#endif\n")
        else:
            helpers.append(f"static void {fn}({params}double *a)\n{{\n" + "\n".join(body) + "\n}\n")
        lines = [f"{indent}double a_[{len(targets)}];",
                 f"{indent}{fn}({''.join(f'{g}, ' for g in used)}a_);"]
        lines += [f"{indent}const double {a} = a_[{k}];" for k, a in enumerate(targets)]
    if lead_scale is not None:
        decl = "const double " if helpers is not None else ""
        extra = assign([f"{decl}lead_scale"], [lead_scale], indent=indent, tmp=tmp + "s")
        lines += extra.split("\n") if isinstance(extra, str) else extra
    return lines


def _bare(exprs, dae, subs=None):
    """Coordinates that occur in exprs outside the trig substitution: the
    free coordinates of ``e.xreplace(subs)`` for each e, read off by one walk
    over the expressions' shared subtrees that skips the substituted sin/cos
    instead of building the substituted expressions (which took 5 s of the
    vehicle's C generation)."""
    index = {q: k for k, q in enumerate(dae.q_sym)}
    subs = subs or {}
    out, seen = set(), set()
    stack = [sp.sympify(e) for e in exprs]
    while stack:
        e = stack.pop()
        if e in seen or e in subs:
            continue
        seen.add(e)
        if e in index:
            out.add(index[e])
        stack.extend(e.args)
    return out


def block_plan(dae, solved_block, scales, start, woff, sol="base->sol", vel="base->v"):
    """What the C and the Python kinematics share for one block, as
    (name, expression) pairs in either language: the prediction P_<var> of
    every variable from the last accepted solution (``sol``) and velocities
    (``vel``) over dt, and the continuity tolerance T<i> of every
    coordinate.  Also the block's slots in the solution vector and their
    start values (``start``: the start assembly)."""
    layout = block_layout(solved_block, scales)
    slot, defs = {}, []
    for i, kind, vs, scale in layout:
        w = f"w{i}"
        if i in solved_block.angle_sums:
            # the variables are (sin, cos) of the angle sum ψ = Σ k·q_j
            # (polynomialize.angle_plan): it turns at Σ k·v_j
            combo = solved_block.angle_sums[i][2]
            rate = " + ".join(f"{vel}[{j}]" if k == 1 else f"{float(k)!r} * {vel}[{j}]" for j, k in combo.items())
            defs.append((w, f"({rate}) * dt"))
        else:
            defs.append((w, f"{vel}[{i}] * dt"))
        if kind == "angle":
            # (s, c) rotated by ω·dt, to second order
            s_, c_ = vs
            slot[s_], slot[c_] = woff + len(slot), woff + len(slot) + 1
            defs += [(f"P_{s_}", f"{sol}[{slot[s_]}] * (1.0 - 0.5 * {w} * {w}) + {sol}[{slot[c_]}] * {w}"),
                     (f"P_{c_}", f"{sol}[{slot[c_]}] * (1.0 - 0.5 * {w} * {w}) - {sol}[{slot[s_]}] * {w}"),
                     (f"T{i}", f"FMIGEN_BRANCH_TOL + fabs({w}) + dqi")]
        else:
            v = vs[0]
            slot[v] = woff + len(slot)
            defs += [(f"P_{v}", f"{sol}[{slot[v]}] + {w}"),
                     (f"T{i}", f"(FMIGEN_BRANCH_TOL + dqi) * {scale!r} + fabs({w})")]
    return layout, slot, defs, solution_start_values(dae, solved_block, layout, start)


def block_failure(dae, solved_block) -> str:
    return (f"block {block_name(dae, solved_block.block)}: no solution continuing the previous one (every sequence, "
            "and Newton from the prediction, failed its residual or continuity check)")


def q_from_vars(layout, prefix="", sums=None, printer=None):
    """(coordinate, expression) setting q of each unknown from its
    variables (``prefix`` "P_": from their predictions): atan2(s, c) for an
    angle, by the runtime's fmigen_atan2 (a Newton start: libm's is a large
    part of a step's cost); the same text in C
    and Python (elementary.fmigen_atan2, bit for bit).  ``sums`` (``angle_sums``): an
    angle whose variables are an angle sum's is atan2 of its sine and cosine
    by angle addition, printed by ``printer`` (C's or Python's)."""
    sums = sums or {}
    printer = printer or c
    out = []
    for i, kind, vs, _ in layout:
        if i in sums:
            ren = {v: sp.Symbol(f"{prefix}{v}") for _, _, ws, _ in layout for v in ws}
            sin_q, cos_q = (printer(e.xreplace(ren)) for e in sums[i][1:])
            out.append((i, f"fmigen_atan2({sin_q}, {cos_q})"))
        else:
            out.append((i, f"fmigen_atan2({prefix}{vs[0]}, {prefix}{vs[1]})" if kind == "angle"
                        else f"{prefix}{vs[0]}"))
    return out


def angle_sums(solved_block, symbol_map, ts):
    """Per unknown angle of ``solved_block`` whose polynomial variables are the sine
    and cosine of an angle sum ψ (``polynomialize.angle_plan``): (ψ, sin q_i,
    cos q_i) as expressions in the arrays (q[], trig[]) and the block's
    variables, from ``solved_block.recover`` (known angles through ``trig`` where the
    kinematics has them, as the abstractions)."""
    out = {}
    for i, (_, _, combo) in solved_block.angle_sums.items():
        psi = sp.Add(*[k * sp.Symbol(f"q[{j}]") for j, k in combo.items()])
        sin_q, cos_q = solved_block.recover[i].args
        out[i] = (psi, symbol_map(ts(sin_q)), symbol_map(ts(cos_q)))
    return out


def hoisted_knowns(emb: Embedding, tri: Triangularization) -> dict:
    """The Gröbner blocks' abstracted knowns that read no dependent
    coordinate (K -> expression): the kinematics computes them once, before
    the first block (``kinematics_walk``)."""
    dep_syms = {emb.dae.q_sym[i] for i in emb.dependent}
    return {K: expr for solved_block in tri.blocks if solved_block.method == "groebner"
            for K, expr in solved_block.abstractions.items() if not (sp.sympify(expr).free_symbols & dep_syms)}


def kinematics_code(emb: Embedding, tri: Triangularization, symbol_map: SymbolMap, trig=None):
    """The kinematics in C (``kinematics_walk`` with ``CKinematics``).
    Returns (C code, start values of the solution vector ``sol``: per block
    its polynomial variables, or a Newton block's coordinates)."""
    lang = CKinematics(emb, symbol_map)
    body, failures, sol_start = kinematics_walk(emb, tri, symbol_map, trig or (set(), {}), lang)
    fail_table = ",\n    ".join(f'"{f}"' for f in failures) or '""'
    code = "\n".join(lang.helpers) + _function(
        "int fmigen_kinematics(double t, double *q, const double *p, const FmigenBase *base, "
        "double *sol, double *trig)", body)
    code += f"\nconst char *const fmigen_kinematics_failure[] = {{\n    \"\",\n    {fail_table}\n}};\n"
    # the runtime's atan2 (fmigen_numeric.h): reading every coordinate of an FMU
    # computes these after each step, and libm's is many times slower
    # four at a time (fmigen_atan2_4, the same bits as one by one): what
    # reading every coordinate after a step costs the Stewart platform's FMU
    whole = len(lang.deferred) - len(lang.deferred) % 4
    body = [f"    fmigen_atan2_4(q, trig, {', '.join(map(str, lang.deferred[k:k + 4]))});" for k in range(0, whole, 4)]
    body += lang.complete_angles("top", lang.deferred[whole:])
    # continuous: the turns the base holds for each (fmigen_runtime.h, FmigenBase)
    body += [f"    q[{i}] = fmigen_turned(q[{i}], base, trig, {i});" for i in lang.deferred]
    body += ["    (void)q; (void)trig; (void)base;"]
    code += _function("void fmigen_kinematic_angles(double *q, const double *trig, const FmigenBase *base)",
                      "\n".join(body))
    # an accept's update of those turns: a sign test per angle, where
    # tracking the angle itself would cost an atan2 per angle and step
    first = [f"        base->turn[{i}] = fmigen_turns_near(base->q[{i}], fmigen_atan2(trig[{2 * i}], trig[{2 * i + 1}]));"
             for i in lang.deferred]
    wind = [f"        base->turn[{i}] += fmigen_wind(base->wind_s[{i}], trig[{2 * i}], trig[{2 * i + 1}]);"
            for i in lang.deferred]
    body = (["    if (!base->continuity) {", *first, "    } else {", *wind, "    }"] +
            [f"    base->wind_s[{i}] = trig[{2 * i}];" for i in lang.deferred] + ["    (void)base; (void)trig;"])
    code += _function("void fmigen_angle_turns(FmigenBase *base, const double *trig)", "\n".join(body))
    return code, sol_start


def kinematics_walk(emb: Embedding, tri: Triangularization, symbol_map: SymbolMap, trig, lang):
    """The kinematics: every dependent coordinate from q_i, block by block,
    each result verified and continued from the last accepted solution.
    The one walker of it: ``lang`` spells each statement, in C
    (``CKinematics``, model.c) or Python (``pyruntime.PyKinematics``, the
    Python FMU), so the two runtimes make the same decisions in the same order.

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
    4. On failure, the exact completion of the primary (``completion_cases``,
       where the build attached one to cover its representation
       singularities), then Newton
       from the prediction (≤ FMIGEN_NEWTON_MAX_ITER), verified the same
       way; if that fails too, a failure code whose message names the block.

    A Newton block predicts its coordinates the same way, iterates from the
    prediction and checks continuity.

    ``trig`` = (angles, substitution) from ``trig_plan``: the kinematics also
    fills trig[2k], trig[2k+1] = sin, cos of every such angle and of every
    dependent angle a sequence solves (from its (s, c) pair); where ``lang``
    defers angles (C), such an angle that nothing reads bare is left out of
    q (``fmigen_kinematic_angles`` computes it when q is read).

    Returns (the function body, the failure messages per code 1.., the start
    values of the solution vector)."""
    from fmigen.derive.workspace import unit_scales
    dae = emb.dae
    scales = unit_scales(dae)
    trig_angles, trig_subs = trig
    ts = lambda e: sp.sympify(e).xreplace(trig_subs)  # noqa: E731
    bare, newton_reads = _bare_reads(emb, tri, trig_subs)
    failures, sol_start = [], []
    # how far the independent coordinates moved from the base, in unit
    # scales: a kinematic FMU's inputs may jump, and continuity is relative
    dq = " + ".join(f"fabs(q[{k}] - {lang.base_q}[{k}]) * {1.0 / float(scales[k])!r}"
                    for k in emb.independent) or "0.0"
    out = lang.prelude(dae.n, dq)
    out += lang.trigs_from_q(sorted(trig_angles & set(emb.independent)))
    hoisted = hoisted_knowns(emb, tri)
    out += _hoisted_code(hoisted, symbol_map, ts, lang)
    lane_of = _lane_plan(dae, tri, hoisted, scales, trig_angles, bare, lang)

    for bi, solved_block in enumerate(tri.blocks):
        layout, slot, defs, start = block_plan(dae, solved_block, scales, tri.start, len(sol_start),
                                               sol=lang.base_sol, vel=lang.base_v)
        sums = angle_sums(solved_block, symbol_map, ts)
        sol_start += start
        failures.append(block_failure(dae, solved_block))
        code = len(failures)
        nseq = len(solved_block.sequences) if solved_block.method == "groebner" else 0
        what = (f"groebner, {nseq} sequence(s)" if nseq else f"newton {solved_block.reason}")
        if bi in lane_of:
            cls, k = lane_of[bi]
            if k == 0:
                out += lang.lanes_call(cls.index, [str(K) for b in cls.members for K in tri.blocks[b].abstractions])
            out += lang.block_open(f"block {block_name(dae, solved_block.block)}: {what}, unless lane {k} of "
                                   f"fmigen_lanes{cls.index} solved it", f"!(lanes{cls.index} & {1 << k}u)")
        else:
            out += lang.block_open(f"block {block_name(dae, solved_block.block)}: {what}")
        # prediction and continuity tolerances
        for name, expr in defs:
            out += lang.let("block", name, expr)
        pairs = newton_pairs(emb, solved_block)
        if solved_block.method == "newton":
            out += _newton_block_code(solved_block, bi, layout, slot, pairs, code, trig_angles, lang)
            continue
        for K, expr in solved_block.abstractions.items():
            if K not in hoisted:
                out += lang.let("block", K, lang.expr(symbol_map(ts(expr))))
        for v, expr in solved_block.known_ring.items():
            out += lang.let("block", v, lang.expr(symbol_map(ts(expr))))
        allvars = [v for _, _, vs, _ in layout for v in vs]
        # the attempts: sequence 0, 1, ... then Newton; a failed check leaves
        # an attempt with ok = 0 and the next one runs
        plan = solved_block.completion
        ncases = nseq + (plan.attempts if plan is not None else 0)
        out += lang.attempts_open(allvars, ncases, solved_block.newton_first)
        out += _sequence_cases(solved_block, bi, layout, lang)
        if plan is not None:
            out += completion_cases(solved_block, plan, bi, nseq, layout, symbol_map, ts, lang)
        # the deferred angles this block's Newton reads (none where every
        # angle is in q at once: the Python port)
        complete = sorted(newton_reads[bi] & set(lang.deferred)) if lang.defers_angles else []
        out += _newton_case(solved_block, bi, layout, sums, pairs, complete, lang)
        out += lang.cases_close()
        out += _verification_code(solved_block, bi, layout, sums, pairs, complete, plan is not None, lang)
        # a Newton or polished result: every variable (ok == 1, a sequence's,
        # had its roots checked above)
        out += lang.attempts_close([f"fabs({v} - P_{v}) <= T{i}" for i, _, vs, _ in layout for v in vs], code)
        for v in allvars:
            out += lang.set("block", f"sol[{slot[v]}]", v)
        out += _coordinates_from_vars(layout, sums, bare, trig_angles, lang)
        out += lang.block_close()
    return lang.finish(out), failures, sol_start


def _bare_reads(emb: Embedding, tri: Triangularization, trig_subs) -> tuple[set, dict]:
    """(the coordinates read bare by the embedding or by a later block (its
    abstractions, or its Newton block's equations), which are always
    computed; per sequence block, the earlier coordinates its Newton reads)."""
    dae = emb.dae
    bare = _bare([*emb.Phi_q, *emb.Phi_t, *emb.gamma, *emb.M, *emb.F], dae, trig_subs)
    # A sequence block's own equations read earlier blocks' angles bare only
    # in its Newton (the fallback, the polish, a Newton-first block's
    # iteration); its sequences read them through the abstractions.  Such an
    # angle is deferred like any other and completed from its pair where
    # that Newton runs (``newton_reads``): the five-link's five β_k, read by
    # their α_k blocks' fallbacks, would cost an atan2 each in every solve.
    # A Newton block's equations are
    # its normal path: what they read stays in q.
    newton_reads = {}
    for bi, solved_block in enumerate(tri.blocks):
        reads = _bare([dae.Phi[j] for j in solved_block.block.equations], dae) - set(solved_block.block.unknowns)
        if solved_block.method == "newton":
            bare |= reads
        else:
            newton_reads[bi] = reads
        bare |= _bare([*solved_block.abstractions.values(), *solved_block.known_ring.values()], dae, trig_subs)
        # known angles an angle sum's recovery subtracts
        bare |= _bare([solved_block.recover[i] for i in solved_block.angle_sums], dae, trig_subs) - set(solved_block.block.unknowns)
    return bare, newton_reads


def _hoisted_code(hoisted, symbol_map, ts, lang) -> list[str]:
    """The blocks' abstracted knowns that read no dependent coordinate, with
    one CSE over all of them, before the first block.  Why: the Stewart
    platform's six legs each abstract the platform point R(φ, θ, ψ)·b_k
    (K_1..K_18); per block, every leg multiplied out R's entries again, and
    gcc cannot share them across the blocks' stores to trig[]
    (docs/benchmarks.md has the operation counts)."""
    out = []
    if hoisted:
        reps, reduced = sp.cse([symbol_map(ts(e)) for e in hoisted.values()], symbols=sp.numbered_symbols("ka"))
        for name, e in reps:
            out += lang.let("top", str(name), lang.expr(e))
        for K, e in zip(hoisted, reduced):
            out += lang.let("top", str(K), lang.expr(e))
    return out


def _lane_plan(dae, tri: Triangularization, hoisted, scales, trig_angles, bare, lang) -> dict:
    """Blocks that are one sequence up to their numbers (the Stewart
    platform's legs), four at a time in vector lanes (codegen_lanes.py)
    where the language has them: each class is solved before its first
    block, and a block's own code runs only where its lane failed.  Adds the
    lane functions to ``lang.helpers``; returns {block index: (class, lane)}."""
    lane_of = {}
    if getattr(lang, "lanes", False):
        plans, slots, woff = {}, {}, 0
        for bi, solved_block in enumerate(tri.blocks):
            layout, slot, _, start = block_plan(dae, solved_block, scales, tri.start, woff)
            plans[bi], slots[bi], woff = layout, slot, woff + len(start)
        for cls in lane_classes(tri, hoisted, scales):
            for k, bi in enumerate(cls.members):
                lane_of[bi] = (cls, k)
            lang.helpers.append(lane_function(tri, cls, plans, slots, trig_angles, bare))
    return lane_of


def _newton_block_code(solved_block, bi, layout, slot, pairs, code, trig_angles, lang) -> list[str]:
    """A Newton block: iterate from the prediction, check continuity, store
    the solution and the sines and cosines of its angles."""
    out = []
    for i, e in q_from_vars(layout, "P_"):
        out += lang.set("block", f"q[{i}]", e)
    lang.newton_function(solved_block, bi)
    out += lang.newton_start("block", newton_start(pairs, layout, "P_"), bi, 2 * len(pairs))
    out += lang.newton("block", solved_block, bi, bi, "FMIGEN_NEWTON_MAX_ITER")
    out += lang.return_unless_newton_continues(
        bi, [f"fabs(q[{i}] - P_q{i}) <= T{i}" for i, *_ in layout], code)
    for i, *_ in layout:
        out += lang.set("block", f"sol[{slot[f'q{i}']}]", f"q[{i}]")
    for i in solved_block.block.unknowns:
        if i in trig_angles:
            # the pair the iteration carried: sin, cos of that q
            out += (lang.trig_from_pair("block", i, bi, pairs[i]) if i in pairs
                    else lang.trig_from_q("block", i))
    out += lang.block_close()
    return out


def _sequence_cases(solved_block, bi, layout, lang) -> list[str]:
    """A Gröbner block's sequences, one attempt each: every step solved, its
    leading coefficient checked, the chosen roots checked for continuity."""
    out = []
    for si, seq in enumerate(solved_block.sequences):
        out += lang.case_open(si, f"sequence {seq.label}")
        for step in seq.steps:
            tmp = f"k{bi}_{si}_{step.variable}_"
            out += lang.step_open(f"{step.variable}: degree {step.degree}")
            lead_scale = switch_scale(solved_block, step)
            out += step_code(step, lead_scale, lang.indent["step"], tmp, lang.assignments, lang.helpers)
            if lead_scale is not None:
                out += lang.break_unless("step", f"fabs(a{step.degree}) > FMIGEN_SWITCH_COND * lead_scale")
            out += lang.solve_step(step.variable, step.degree)
            out += lang.step_close()
        # continuity of every value this sequence chose (root_continuity)
        rc = root_continuity(seq, layout)
        if rc:
            out += lang.break_unless_continuous("case", rc)
        out += lang.case_close(1)
    return out


def _newton_case(solved_block, bi, layout, sums, pairs, complete, lang) -> list[str]:
    """A Gröbner block's last attempt: Newton from the prediction."""
    out = []
    out += lang.case_open(None, "Newton from the prediction")
    if complete:
        out += lang.complete_angles("case", complete)
    for i, e in q_from_vars(layout, "P_", sums, lang.expr):
        out += lang.set("case", f"q[{i}]", e)
    lang.newton_function(solved_block, bi)
    start_n = newton_start(pairs, layout, "P_", sums, lang.expr)
    # a sequence block's carried angles are its (s, c) pairs or angle sums
    assert start_n is not None, "a carried angle of a sequence block without its pair"
    out += lang.newton_start("case", start_n, f"{bi}_n")
    out += lang.newton("case", solved_block, bi, f"{bi}_n", "FMIGEN_NEWTON_MAX_ITER")
    out += lang.break_unless("case", f"converged_{bi}_n", bare=True)
    out += lang.vars_from_q("case", layout, sums, pairs, f"{bi}_n")
    out += lang.case_close(2)
    return out


def _verification_code(solved_block, bi, layout, sums, pairs, complete, has_completion, lang) -> list[str]:
    """The verification of an attempt's result: the block's own polynomials,
    relative, |P_k| ≤ tol·scale_k for every k (no division; NaN fails), and
    the Newton polish of a result close to it."""
    polys, pscales = verification(solved_block)
    # a primary result short of round-off goes to the exact completion
    # (the next attempt), not to the polish
    out = []
    out += lang.verify_open(polys, pscales, f"v{bi}_", polish_from=1 if has_completion else 0)
    for i, e in q_from_vars(layout, "", sums, lang.expr):
        out += lang.set("polish", f"q[{i}]", e)
    if complete:
        out += lang.complete_angles("polish", complete)
    out += lang.newton_start("polish", newton_start(pairs, layout, "", sums, lang.expr), f"{bi}_p",
                             2 * len(pairs))
    out += lang.newton("polish", solved_block, bi, f"{bi}_p", str(POLISH_ITERATIONS))
    out += lang.polished_open(f"converged_{bi}_p")
    out += lang.vars_from_q("polished", layout, sums, pairs, f"{bi}_p")
    out += lang.verify_close()
    return out


def _coordinates_from_vars(layout, sums, bare, trig_angles, lang) -> list[str]:
    """A verified Gröbner block's coordinates (and the sines and cosines the
    model reads) from its polynomial variables."""
    out = []
    for i, kind, vs, _ in layout:
        defer = lang.defers_angles and i not in bare
        if i in sums:
            # sin, cos of q_i by angle addition from the block's angle
            # sums (and known angles): no atan2 where only those are read
            _, sin_q, cos_q = sums[i]
            out += lang.angle_from_sums(i, lang.expr(sin_q), lang.expr(cos_q), i in trig_angles or defer, defer)
        elif kind == "angle":
            out += lang.angle_from_pair(i, vs, i in trig_angles or defer, defer)
        else:
            out += lang.set("block", f"q[{i}]", vs[0])
            # an angle its block solves as a plain variable (it enters
            # the block's constraints linearly, e.g. a gear φ − 2θ = 0)
            if i in trig_angles:
                out += lang.trig_from_q("block", i)
    return out


class CKinematics:
    """``kinematics_walk``'s statements in C: blocks in braces, the attempts
    a for/switch, Newton and large coefficient steps as functions of their
    own (``helpers``), dependent angles nobody reads bare deferred to
    fmigen_kinematic_angles (``deferred``)."""
    base_sol, base_v, base_q = "base->sol", "base->v", "base->q"
    defers_angles = True
    lanes = True   # codegen_lanes.py
    #: the walker's statement depths
    indent = {"top": "    ", "block": " " * 8, "case": " " * 16, "step": " " * 20, "polish": " " * 24,
              "polished": " " * 28}

    def __init__(self, emb, symbol_map):
        self.emb, self.symbol_map = emb, symbol_map
        self.helpers, self.deferred = [], []
        self.expr = c
        self.assignments = assignments

    def prelude(self, n, dq):
        return ["    const double dt = t - base->t;", "    const int check = base->continuity;",
                f"    const double dqi = {dq};"]

    def trig_from_q(self, depth, i):
        return [self.indent[depth] + sincos_into(i)]

    def trigs_from_q(self, ks):
        """The pairs of the independent angles ``ks`` a solve starts from:
        four at a time in vector lanes (fmigen_sincos_4; a short group
        repeats its last angle), one alone by the scalar function."""
        out = []
        for g in range(0, len(ks), 4):
            group = list(ks[g:g + 4])
            if len(group) == 1:
                out += self.trig_from_q("top", group[0])
            else:
                group += [group[-1]] * (4 - len(group))
                out.append(f"    fmigen_sincos_4(q, trig, {', '.join(map(str, group))});")
        return out

    def block_open(self, label, guard=None):
        return [f"    if ({guard}) {{ /* {label} */" if guard else f"    {{ /* {label} */"]

    def block_close(self):
        return ["    }"]

    def lanes_call(self, index, knowns):
        return [f"    const double lk{index}[] = {{{', '.join(knowns)}}};",
                f"    const unsigned lanes{index} = fmigen_lanes{index}(lk{index}, dt, dqi, check, base, q, sol, trig);"]

    def let(self, depth, name, expr):
        return [f"{self.indent[depth]}const double {name} = {expr};"]

    def set(self, depth, target, expr):
        return [f"{self.indent[depth]}{target} = {expr};"]

    def newton_function(self, solved_block, bi):
        self.helpers.append(_newton_function(self.emb, solved_block, self.symbol_map, bi))

    def newton(self, depth, solved_block, bi, tag, iterations):
        return [_newton_call(bi, tag, iterations, self.indent[depth])]

    def return_unless_newton_continues(self, bi, continuity, code):
        return [f"        if (!converged_{bi} || (check && !({' && '.join(continuity)}))) return {code};"]

    def attempts_open(self, allvars, nseq, newton_first=False):
        head = ["        double " + ", ".join(str(v) for v in allvars) + ";", "        int ok = 0;"]
        if not newton_first:
            return head + [f"        for (int attempt = 0; attempt <= {nseq} && !ok; attempt++) {{",
                           "            switch (attempt) {"]
        # continuing: Newton from the prediction (the last case) first
        return head + [f"        for (int pass = 0; pass <= {nseq} && !ok; pass++) {{",
                       f"            const int attempt = check ? (pass + {nseq}) % {nseq + 1} : pass;",
                       "            switch (attempt) {"]

    def case_open(self, si, label):
        return [f"            case {si}: {{ /* {label} */" if si is not None else
                f"            default: {{ /* {label} */"]

    def step_open(self, label):
        return [f"                {{ /* {label} */"]

    def step_close(self):
        return ["                }"]

    def break_unless(self, depth, cond, bare=False):
        return [f"{self.indent[depth]}if (!{cond if bare else f'({cond})'}) break;"]

    def break_unless_continuous(self, depth, tests):
        return [f"{self.indent[depth]}if (check && !({' && '.join(tests)})) break;"]

    def solve_step(self, var, degree):
        ind = self.indent["step"]
        if degree == 1:
            return [f"{ind}if (fmigen_linear(a1, a0, &{var})) break;"]
        if degree == 2:
            return [f"{ind}if (fmigen_quadratic_near(a2, a1, a0, P_{var}, &{var})) break;"]
        coeffs = ", ".join(f"a{d}" for d in range(degree, -1, -1))
        return [f"{ind}const double coeffs[] = {{{coeffs}}};", f"{ind}{var} = P_{var};",
                f"{ind}if (fmigen_poly_root({degree}, coeffs, &{var})) break;"]

    def case_close(self, ok):
        # a `break` above leaves the switch with ok = 0: the next attempt
        return [f"                ok = {ok};", "                break; }"]

    def cases_close(self):
        return ["            }", "            if (!ok) continue;"]

    def vars_from_q(self, depth, layout, sums, pairs=None, tag=None):
        return _vars_from_q(layout, self.indent[depth], sums, pairs, tag)

    def newton_start(self, depth, items, tag, n=0):
        if items is None:   # returned pairs only
            return [f"{self.indent[depth]}double pr{tag}[{max(1, n)}];"]
        return [f"{self.indent[depth]}double pr{tag}[{max(1, len(items))}] = {{{', '.join(items) or '0.0'}}};"]

    def trig_from_pair(self, depth, i, tag, j):
        return [f"{self.indent[depth]}trig[{2 * i}] = pr{tag}[{2 * j}]; trig[{2 * i + 1}] = pr{tag}[{2 * j + 1}];"]

    def _within(self, n, tol, r="rv", s="rs"):
        return " && ".join(f"fabs({r}[{k}]) <= {tol} * {s}[{k}]" for k in range(n))

    def verify_open(self, polys, pscales, tmp, polish_from=0):
        n = len(polys)
        guard = f"attempt >= {polish_from} && " if polish_from else ""
        return ["            {", f"                double rv[{n}], rs[{n}];",
                assignments([f"rv[{k}]" for k in range(n)] + [f"rs[{k}]" for k in range(n)],
                            polys + pscales, indent="                ", tmp=tmp),
                f"                if (!({self._within(n, 'FMIGEN_SEQ_TOL')})) {{",
                "                    ok = 0;",
                f"                    if ({guard}{self._within(n, 'FMIGEN_POLISH_TOL')}) {{ /* polish: Newton from the result */"]

    def quadratic_root(self, depth, var, root, other, circle_of=None):
        ind = self.indent[depth]
        if circle_of is not None:      # var² + circle_of² − 1 = 0
            return [f"{ind}if (fmigen_quadratic_near(1.0, 0.0, {circle_of} * {circle_of} - 1.0, P_{var}, &{var})) break;"]
        return [f"{ind}if (fmigen_quadratic_root(a2, a1, a0, {root}, P_{var}, {int(other)}, &{var})) break;"]

    def linear_solve(self, depth, n, A, b, targets):
        ind = self.indent[depth]
        return [f"{ind}double Ac[{n * n}] = {{{', '.join(A)}}};", f"{ind}double bc[{n}] = {{{', '.join(b)}}};",
                f"{ind}int pc[{n}];", f"{ind}if (fmigen_lu_factor({n}, Ac, pc)) break;",
                f"{ind}fmigen_lu_solve({n}, Ac, pc, bc);",
                *[f"{ind}{v} = bc[{k}];" for k, v in enumerate(targets)]]

    def linear_resolve(self, depth, n, b, name):
        """Solve A x = b into a new array ``name`` with the LU factors of the
        enclosing ``linear_solve`` (Ac, pc)."""
        ind = self.indent[depth]
        return [f"{ind}double {name}[{n}] = {{{', '.join(b)}}};", f"{ind}fmigen_lu_solve({n}, Ac, pc, {name});"]

    def linear_refill(self, depth, n, A, b, targets):
        """``linear_solve`` again into its own arrays (Ac, bc, pc: the
        enclosing scope's, which a later ``linear_resolve`` reads)."""
        ind = self.indent[depth]
        return [*[f"{ind}Ac[{k}] = {a};" for k, a in enumerate(A)], *[f"{ind}bc[{k}] = {v};" for k, v in enumerate(b)],
                f"{ind}if (fmigen_lu_factor({n}, Ac, pc)) break;", f"{ind}fmigen_lu_solve({n}, Ac, pc, bc);",
                *[f"{ind}{v} = bc[{k}];" for k, v in enumerate(targets)]]

    def break_unless_within(self, depth, polys, pscales, tmp):
        ind, n = self.indent[depth], len(polys)
        return [f"{ind}double rc[{n}], sc[{n}];",
                assignments([f"rc[{k}]" for k in range(n)] + [f"sc[{k}]" for k in range(n)],
                            polys + pscales, indent=ind, tmp=tmp),
                f"{ind}if (!({self._within(n, 'FMIGEN_SEQ_TOL', 'rc', 'sc')})) break;"]

    def polished_open(self, converged):
        return [f"                        if ({converged}) {{"]

    def verify_close(self):
        return ["                            ok = 2;", "                        }", "                    }",
                "                }", "            }"]

    def attempts_close(self, continuity, code):
        return [f"            if (ok == 2 && check && !({' && '.join(continuity)})) ok = 0;", "        }",
                f"        if (!ok) return {code};"]

    def angle_from_sums(self, i, sin_q, cos_q, to_trig, defer):
        line = f"        {{ const double sq = {sin_q}, cq = {cos_q};"
        if to_trig:
            line += f" trig[{2 * i}] = sq; trig[{2 * i + 1}] = cq;"
        if defer:
            self.deferred.append(i)
        else:
            line += f" q[{i}] = fmigen_unwrap(fmigen_atan2(sq, cq), base->q[{i}]);"
        return [line + " }"]

    def complete_angles(self, depth, indices):
        # deferred angles, from the pairs they left in trig (a Newton that
        # reads them bare; fmigen_kinematic_angles for all of them)
        return [f"{self.indent[depth]}q[{i}] = fmigen_atan2(trig[{2 * i}], trig[{2 * i + 1}]);" for i in indices]

    def angle_from_pair(self, i, vs, to_trig, defer):
        out = [f"        trig[{2 * i}] = {vs[0]}; trig[{2 * i + 1}] = {vs[1]};"] if to_trig else []
        if defer:
            self.deferred.append(i)
        else:
            # the runtime's atan2 (fmigen_numeric.h), as for the deferred
            # angles: within an ulp of libm's at half its cost, and this one
            # is in every right-hand side
            # continuous: the turns nearest the last accepted value
            out.append(f"        q[{i}] = fmigen_unwrap(fmigen_atan2({vs[0]}, {vs[1]}), base->q[{i}]);")
        return out

    def finish(self, out):
        return "\n".join(out + ["    (void)t; (void)p; (void)trig; (void)check; (void)dt; (void)dqi;",
                                "    return 0;"])


def completion_cases(solved_block, plan, bi, nseq, layout, symbol_map, ts, lang):
    """The attempts of a block's exact completion (``sequences.Completion``),
    after its sequences.  A quadratic first step: the root nearest the
    prediction, then the other root; a higher degree: its root nearest the
    prediction (the univariate root finder, as a sequence's step).  From
    the root, its angle's other variable by the circle (the root nearest its
    prediction) and the rest by the square linear system of the block's own
    constraints and the circles they eliminate (LU).  Each attempt is
    accepted only when the block's polynomials vanish to FMIGEN_SEQ_TOL and
    its roots continue the prediction, so a wrong root leaves for the next
    attempt.  Fixed operation count apart from the univariate root: no
    iteration on the block's constraints."""
    step = solved_block.steps[0]
    coord = {v: i for i, _, vs, _ in layout for v in vs}
    out = []
    for other in (False, True)[:plan.attempts]:
        si = nseq + int(other)
        if plan.degree == 2:
            label = f"{plan.label} from {'the other' if other else 'the nearer'} root of {plan.variable}"
        else:
            label = f"{plan.label} from the degree-{plan.degree} root of {plan.variable}"
        out += lang.case_open(si, label)
        out += lang.step_open(f"{plan.variable}: degree {plan.degree}")
        # the coefficients by the primary's own function (C: its first step's
        # helper, already written; a throwaway list takes the copy)
        out += step_code(step, None, lang.indent["step"], f"k{bi}_0_{plan.variable}_", lang.assignments,
                         None if lang.helpers is None else [])
        if plan.degree == 2:
            root = (lang.expr(symbol_map(ts(plan.disc_root))) if plan.disc_root is not None
                    else "sqrt(fmax(a1 * a1 - 4.0 * a2 * a0, 0.0))")
            out += lang.let("step", "dr", root)
            out += lang.quadratic_root("step", plan.variable, "dr", other)
        else:
            out += lang.solve_step(plan.variable, plan.degree)
        out += lang.step_close()
        tests = [f"fabs({plan.variable} - P_{plan.variable}) <= T{coord[plan.variable]}"]
        if plan.partner is not None:
            out += lang.step_open(f"{plan.partner}: the circle")
            out += lang.quadratic_root("step", plan.partner, None, False, circle_of=plan.variable)
            out += lang.step_close()
            tests.append(f"fabs({plan.partner} - P_{plan.partner}) <= T{coord[plan.partner]}")
        if plan.rest:
            n = len(plan.rest)
            A = [lang.expr(symbol_map(ts(c_))) for r in plan.rows for c_ in r[0]]
            b = [lang.expr(symbol_map(ts(-r[1]))) for r in plan.rows]
            out += lang.linear_solve("case", n, A, b, [str(v) for v in plan.rest])
            out += root_refinement_code(plan, A, b, symbol_map, ts, lang)
        polys, pscales = verification(solved_block)
        out += lang.break_unless_within("case", polys, pscales, f"c{bi}_{int(other)}_")
        out += lang.break_unless_continuous("case", tests)
        out += lang.case_close(1)
    return out


def root_refinement_code(plan, A, b, symbol_map, ts, lang):
    """The steps of ``completion.root_refinement`` (``ROOT_REFINEMENTS``,
    unrolled: a failure ``break``s out of the attempt): per step, the
    derivative of the rest along the root's angle (dy_ = −A⁻¹(A' y + b')),
    the Newton step du on the left-over circle f = s² + c² − 1 (f' = 2(s ds +
    c dc)), the root's pair rotated by du, and the rest solved again.  The
    derivative uses the LU factors of the solve before it (A at the same
    root), so a step factors A once."""
    if plan.refine is None:
        return []
    (ps, pc), (fs, fc), drows = plan.refine
    n, ifs, ifc = len(plan.rest), plan.rest.index(fs), plan.rest.index(fc)
    rhs = [lang.expr(symbol_map(ts(-(sp.Add(*[a * v for a, v in zip(r[0], plan.rest)]) + r[1])))) for r in drows]
    out = []
    for k in range(ROOT_REFINEMENTS):
        out += lang.step_open(f"refine {plan.variable}: Newton step {k + 1} on the circle of {fs}, {fc} "
                              "through the linear system")
        # dy_ = A⁻¹ (−A' y − b'): the rest's derivative along the root's angle
        out += lang.linear_resolve("step", n, rhs, "dy_")
        out += lang.let("step", "du", f"-({fs} * {fs} + {fc} * {fc} - 1.0) / (2.0 * ({fs} * dy_[{ifs}] + "
                                      f"{fc} * dy_[{ifc}]))")
        # a step this long is no refinement: the root was not near (NaN too)
        out += lang.break_unless("step", "fabs(du) <= 1e-3")
        out += lang.let("step", "s1", f"{ps} + du * {pc}")
        out += lang.let("step", "c1", f"{pc} - du * {ps}")
        out += lang.let("step", "nr", "1.0 / sqrt(s1 * s1 + c1 * c1)")
        out += lang.set("step", str(ps), "s1 * nr")
        out += lang.set("step", str(pc), "c1 * nr")
        out += lang.linear_refill("step", n, A, b, [str(v) for v in plan.rest])
        out += lang.step_close()
    return out


def root_continuity(seq, layout) -> list[str]:
    """The continuity tests of every variable a sequence solves, as C/Python
    comparisons.  The linear steps too: their value is unique given the
    roots chosen before, but two roots of a quadratic can both lie within
    the tolerance of the prediction while the linear step then gives values
    an O(1) apart.  A distance link's universal angle at rest at 0 (the
    tie rod of tests/corpus/mcpherson.py): s² = s0² has the roots ±s0,
    2·s0 apart, both near the predicted 0, and the linear step's
    c = −s·(K₃ − 28)/(K₂ + 4) follows the sign of s, +1 or −1: the assembly
    or its mirror, half a turn away."""
    coord = {v: i for i, _, vs, _ in layout for v in vs}
    return [f"fabs({st.variable} - P_{st.variable}) <= T{coord[st.variable]}" for st in seq.steps]


def switch_scale(solved_block, step):
    """What a step's leading coefficient is compared with at run time
    (|a| > FMIGEN_SWITCH_COND · scale, else the next sequence takes over):
    the sum of its terms' magnitudes.  None, and no check, where switching
    cannot help or cannot happen: a block with one sequence (its vanishing
    coefficient is caught by the residual check and solved by Newton), a
    constant coefficient, or one of more than 40 terms."""
    if len(solved_block.sequences) < 2 and getattr(solved_block, "completion", None) is None:
        return None
    lead = step.coeff_polys[0].as_expr()
    if not lead.free_symbols:
        return None
    scale = abs_sum(lead)
    return scale if len(sp.Add.make_args(scale)) <= 40 else None


def verification(solved_block):
    """The polynomials a block's result must satisfy and the scale each is
    relative to: the sum of its terms' magnitudes; 2 for s² + c² − 1
    (s² + c² + 1 at any result that could pass)."""
    return [*solved_block.polys, *solved_block.circles], [abs_sum(p) for p in solved_block.polys] + [sp.Integer(2)] * len(solved_block.circles)


def _vars_from_q(layout, ind, sums=None, pairs=None, tag=None):
    """A block's variables from q after a Newton iteration: an angle's pair
    as the iteration carried it (``pairs``: its slot in pr<tag>), else sin
    and cos of q (fmigen_sincos: the same bits on every platform)."""
    lines = []
    pairs = pairs or {}
    for i, kind, vs, _ in layout:
        if i in (sums or {}):
            psi = c(sums[i][0])
            lines.append(f"{ind}fmigen_sincos({psi}, &{vs[0]}, &{vs[1]});")
        elif kind == "angle" and i in pairs:
            j = pairs[i]
            lines.append(f"{ind}{vs[0]} = pr{tag}[{2 * j}]; {vs[1]} = pr{tag}[{2 * j + 1}];")
        elif kind == "angle":
            lines.append(f"{ind}fmigen_sincos(q[{i}], &{vs[0]}, &{vs[1]});")
        else:
            lines.append(f"{ind}{vs[0]} = q[{i}];")
    return lines
