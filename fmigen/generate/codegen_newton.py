"""The generated Newton iterations of model.c: a block the triangular sequence
does not solve (``--kinematics newton``, a block over the Gröbner limits) is
solved by a Newton function written for it, chord steps included.
"""

from __future__ import annotations

import re
from pathlib import Path

import sympy as sp

from fmigen.derive.derivatives import jacobian
from fmigen.generate.printer import c
from fmigen.generate.statements import assignments


def _newton_function(emb, solved_block, symbol_map, bi):
    """A block's Newton iteration as its own function, out of the solve's hot
    path (the fallback and the polish both call it; inlined, its code cost
    the sequence registers): 1 when converged within ``max_iter`` steps."""
    body = _newton_code(emb, solved_block, symbol_map, bi, "max_iter", indent="    ")
    return (f"static int FMIGEN_NOINLINE fmigen_newton_block{bi}(double t, double *q, const double *p, "
            f"int max_iter, double *pair)\n{{\n{body}\n    (void)t; (void)p; (void)pair;\n"
            f"    return converged_{bi};\n}}\n")


def _newton_call(bi, tag, iterations, indent):
    return f"{indent}const int converged_{tag} = fmigen_newton_block{bi}(t, q, p, {iterations}, pr{tag});"


def _carried(dae, solved_block) -> list[int]:
    """Positions (in the block's unknowns) of the angles a block's Newton
    iteration carries as (sin, cos) pairs: those whose sin or cos its
    equations contain (their Jacobian then has the pair too).  Read off
    Φ_b alone, so ``newton_pairs`` needs no Jacobian."""
    Phi_b = [sp.sympify(dae.Phi[j]) for j in solved_block.block.equations]
    found = set().union(*(e.atoms(sp.sin, sp.cos) for e in Phi_b))
    return [k for k, i in enumerate(solved_block.block.unknowns)
            if sp.sin(dae.q_sym[i]) in found or sp.cos(dae.q_sym[i]) in found]


def newton_pairs(emb, solved_block):
    """{coordinate: slot} of the angles a block's Newton iteration carries as
    (sin, cos) pairs (``_carried``): slot j is pair[2j], pair[2j + 1] of the
    Newton function's hand-over, in and out."""
    unk = solved_block.block.unknowns
    return {unk[k]: j for j, k in enumerate(_carried(emb.dae, solved_block))}


def newton_start(pairs, layout, prefix, sums=None, printer=None):
    """The Newton hand-over's start, 2·len(pairs) values slot by slot: each
    carried angle's block variables (``prefix`` "P_": their prediction),
    whose atan2 the angle is.  The iteration normalizes them (a prediction
    or a rejected sequence's pair lies off the unit circle by more than
    round-off); normalizing them here, at the call, would add register
    spills to the hot path of every solve, which rarely takes this path.  None for a Newton block (kind "q"): its iteration
    starts from sin and cos of q itself, and the hand-over only returns the
    pairs.  An angle of an angle sum
    (``sums``) starts from its sine and cosine by angle addition, as in
    ``q_from_vars``.  The same text in C and Python."""
    sums = sums or {}
    printer = printer or c
    items = [None] * (2 * len(pairs))
    for i, kind, vs, _ in layout:
        if i not in pairs:
            continue
        j = pairs[i]
        if i in sums:
            ren = {v: sp.Symbol(f"{prefix}{v}") for _, _, ws, _ in layout for v in ws}
            items[2 * j], items[2 * j + 1] = (printer(e.xreplace(ren)) for e in sums[i][1:])
        elif kind == "angle":
            items[2 * j], items[2 * j + 1] = f"{prefix}{vs[0]}", f"{prefix}{vs[1]}"
        else:
            return None
    return items


#: An exact block's Newton iteration (``_newton_code``) takes fresh steps
#: (Jacobian, LU factorization) until a step is at most 1e-4·(1 + max|q|);
#: from there it keeps those LU factors and takes chord steps (simplified
#: Newton: the residual only) for as long as each contracts the step by
#: 1000 or more, else a fresh step again.  Why: from a prediction 1e-6
#: away, a chord step with the first step's Jacobian lands about as close as
#: a fresh one, and the Jacobian and its factorization are most of an
#: iteration.
#: It stops when a step is at round-off, 1e-14·(1 + max|q|): that step only
#: confirms the iterate before it.  It also stops after two chord steps in a
#: row when their ratio, the chord's measured contraction ρ = d/p, puts what
#: is left, ρ·d, a thousand times below that bound.  Only then: after a
#: fresh step, d/p measures the curvature along that one step, and the
#: chord's contraction depends on the curvature in every direction (on
#: Φ = (x + 1000·x·y, y + 1e-3·x²) d·(d/p) predicts round-off where the
#: iterate is far above it).  A thousand rather than ten: a mechanism whose
#: lengths are in mm multiplies the error in q into |Φ| by hundreds, and the
#: wider margin takes no more steps on the shipped mechanisms.  The
#: iteration limit counts fresh steps, and chord steps, which must
#: contract, at most 8 more.  C and Python, the same text.
CHORD_STOP = ("{p} > 0.0 && {p} <= 1e-4 * (1.0 + {q}) && {d} <= 1e-3 * {p} && "
              "1e3 * {d} * {d} <= 1e-14 * (1.0 + {q}) * {p}")
#: Two more ends, so that an iteration that cannot reach round-off does not
#: run to the cap (a budget for the work per step must hold for the steps
#: that fail too):
#: - At its round-off floor: a step that does not halve the one before it,
#:   which was already below 1e-12·(1 + max|q|), is accepted as converged.
#:   Near a singular configuration the Jacobian's condition number scales
#:   the round-off of each step: the steps stop contracting at ~cond·ε·|q|
#:   and wander there, above the 1e-14 test, until one falls below it by
#:   chance or the cap ends the solve.  The iterate is as accurate as
#:   the Jacobian allows, and 100 × the round-off test bounds that.  Where
#:   Newton converges it contracts far more than twofold at every step until
#:   the round-off test stops it, so a well-conditioned solve never ends here.
#: - No progress: a fresh step at least as long as the fresh step before it
#:   ends the iteration unconverged.  A fresh step is a full Newton step from
#:   the current iterate, so its length measures the iterate's error; not
#:   shorter after a whole cycle (chord steps included) means the iteration
#:   diverges, or wanders at a round-off floor above the one accepted above
#:   (the Jacobian too close to singular): more steps do not help.
STALL_STOP = "{p} > 0.0 && {d} > 0.5 * {p} && {p} <= 1e-12 * (1.0 + {q})"
#: chord steps allowed beyond the fresh steps' limit
CHORD_EXTRA = 8
#: fresh steps of the polish from a sequence's result that missed
#: FMIGEN_SEQ_TOL (the fallback's are FMIGEN_NEWTON_MAX_ITER)
POLISH_ITERATIONS = 4


def _newton_code(emb, solved_block, symbol_map, tag, iterations, indent="            "):
    """Newton iteration on one block's own equations, from the values already
    in q[idx] of its unknowns: at most ``iterations`` steps (a C expression);
    leaves ``int converged_<tag>`` = 1 when the step fell below the
    convergence test, 0 when it did not or the Jacobian was singular or the
    step not finite.  An alternative formulation's block (``solved_block.tol`` set,
    kinematics "newton"/"newton-loop") takes a fresh Jacobian every step and
    stops at the absolute step tolerance FMIGEN_NEWTON_TOL: the textbook
    Newton those formulations stand for.  Every other takes chord steps with
    the last LU factors once near the solution and stops at round-off
    (``CHORD_STOP``'s comment), at its round-off floor or where a fresh step
    makes no progress (``STALL_STOP``'s); ``iterations`` then limits its
    fresh steps.
    A step that is not finite (NaN or ±inf) ends it unconverged."""
    unk = solved_block.block.unknowns
    nb = len(unk)
    Phi_b, J_b, pairs = newton_system(emb, solved_block, "ns", "nc")
    ind = indent
    exact = solved_block.tol is None
    inner = ind + ("            " if exact else "        ")
    phi = [symbol_map(e) for e in Phi_b]
    body = assignments([f"r[{k}]" for k in range(nb)] + [f"J[{k}]" for k in range(nb * nb)],
                       phi + [symbol_map(e) for e in J_b], indent=inner, tmp=f"n{tag}_")
    factor = f"{inner}if (fmigen_lu_factor({nb}, J, piv)) break;"
    if exact:
        residual = assignments([f"r[{k}]" for k in range(nb)], phi, indent=inner, tmp=f"nr{tag}_")
        evaluate = (f"{ind}        const int fresh = !reuse;\n{ind}        if (fresh) {{\n{body}\n{factor}\n"
                    f"{inner}nfresh++;\n{ind}        }} else {{\n{residual}\n{ind}        }}")
        chord = CHORD_STOP.format(d="dmax", p="dprev", q="qmax")
        stall = STALL_STOP.format(d="dmax", p="dprev", q="qmax")
        test = (f"if ({stall}) {{ converged = 1; break; }}"
                f"\n{ind}        if (fresh && dmax >= dfresh) break;"
                f"\n{ind}        if (fresh) dfresh = dmax;"
                f"\n{ind}        converged = dmax <= 1e-14 * (1.0 + qmax) || (!fresh && chord_prev && ({chord}));"
                f"\n{ind}        reuse = fresh ? dmax <= 1e-4 * (1.0 + qmax) : dmax <= 1e-3 * dprev;"
                f"\n{ind}        chord_prev = !fresh; dprev = dmax;")
        state = f"\n{ind}    int reuse = 0, chord_prev = 0, nfresh = 0;\n{ind}    double dfresh = HUGE_VAL;"
        loop = (f"for (int it = 0; (reuse || nfresh < {iterations}) && it < {iterations} + {CHORD_EXTRA} "
                f"&& !converged; it++)")
    else:
        evaluate = f"{body}\n{factor}"
        test = "converged = dmax <= FMIGEN_NEWTON_TOL; (void)qmax; (void)dprev;"
        state = ""
        loop = f"for (int it = 0; it < {iterations} && !converged; it++)"
    idx = ", ".join(str(i) for i in unk)
    # the carried pairs come in and go out through pair[] (newton_pairs),
    # turned with every step, the last one included, so that they are sin
    # and cos of the q handed back.  A Newton block has no pair to start
    # from: fmigen_sincos's, on the circle; a sequence block's start pair (a
    # prediction, a rejected result) is normalized.
    if solved_block.method == "newton":
        start = "".join(f"\n{ind}    double ns{k}, nc{k}; fmigen_sincos(q[{unk[k]}], &ns{k}, &nc{k});" for k in pairs)
    else:
        start = "".join(f"\n{ind}    double ns{k} = pair[{2 * j}], nc{k} = pair[{2 * j + 1}];"
                        f"\n{ind}    {{ const double rn = 1.0 / sqrt(ns{k} * ns{k} + nc{k} * nc{k}); "
                        f"ns{k} *= rn; nc{k} *= rn; }}" for j, k in enumerate(pairs))
    turn = "".join(f"\n{ind}        fmigen_rotate(&ns{k}, &nc{k}, -r[{k}], q[{unk[k]}]);" for k in pairs)
    back = "".join(f"\n{ind}    pair[{2 * j}] = ns{k}; pair[{2 * j + 1}] = nc{k};" for j, k in enumerate(pairs))
    return f"""{ind}int converged_{tag} = 0;
{ind}{{
{ind}    static const int idx[{nb}] = {{{idx}}};
{ind}    double J[{nb * nb}], r[{nb}];
{ind}    int piv[{nb}], converged = 0;
{ind}    double dprev = 0.0;{state}{start}
{ind}    {loop} {{
{ind}        FMIGEN_NEWTON_STEP({iterations}, it);
{evaluate}
{ind}        fmigen_lu_solve({nb}, J, piv, r);
{ind}        double dmax = 0.0, qmax = 0.0;
{ind}        for (int i = 0; i < {nb}; i++) {{
{ind}            q[idx[i]] -= r[i];
{ind}            if (fabs(r[i]) > dmax) dmax = fabs(r[i]);
{ind}            if (fabs(q[idx[i]]) > qmax) qmax = fabs(q[idx[i]]);
{ind}        }}
{ind}        if (!(dmax < HUGE_VAL)) break;{turn}
{ind}        {test}
{ind}    }}{back}
{ind}    converged_{tag} = converged;
{ind}}}"""


def newton_system(emb, solved_block, sin_prefix, cos_prefix):
    """A block's Newton system: its equations Φ_b, their Jacobian in its
    unknowns, with sin q_i and cos q_i of each unknown angle replaced by the
    symbols <sin_prefix>k, <cos_prefix>k (k its position in the block), and
    those positions.  The Newton code keeps each pair and turns it with the
    step (fmigen_rotate) instead of calling sin and cos every iteration;
    sines of other arguments of an unknown (2 q_i, q_i + q_j) stay."""
    dae = emb.dae
    unk = solved_block.block.unknowns
    Phi_b = sp.Matrix([dae.Phi[j] for j in solved_block.block.equations])
    J_b = jacobian(Phi_b, [dae.q_sym[i] for i in unk])
    pairs = _carried(dae, solved_block)
    subs = {}
    for k in pairs:
        qs = dae.q_sym[unk[k]]
        subs[sp.sin(qs)] = sp.Symbol(f"{sin_prefix}{k}")
        subs[sp.cos(qs)] = sp.Symbol(f"{cos_prefix}{k}")
    return Phi_b.xreplace(subs), J_b.xreplace(subs), pairs


def iteration_caps() -> dict:
    """Each bounded loop's cap in iterations, as the runtime's headers and
    this module set it: a Newton block's (fresh steps up to
    FMIGEN_NEWTON_MAX_ITER, chord steps CHORD_EXTRA more), the polish's
    (POLISH_ITERATIONS fresh, CHORD_EXTRA chord), the polynomial root's
    Newton from the prediction and the Aberth iteration of its fallback.
    For `fmigen bench --worst-case` and the FMU's documentation."""
    runtime = Path(__file__).resolve().parent.parent / "runtime"
    text = (runtime / "fmigen_runtime.h").read_text() + (runtime / "fmigen_numeric.h").read_text()

    def define(name):
        return int(re.search(rf"#define {name} (\d+)", text).group(1))
    return {"newton": define("FMIGEN_NEWTON_MAX_ITER") + CHORD_EXTRA, "polish": POLISH_ITERATIONS + CHORD_EXTRA,
            "poly_newton": define("FMIGEN_POLY_NEWTON_MAX_ITER"), "aberth": define("FMIGEN_ABERTH_MAX_ITER")}
