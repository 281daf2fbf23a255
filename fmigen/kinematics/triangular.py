"""Stage 5 — triangular: each constraint block becomes a recursive solution
sequence q_d = g(q_i) by a lex Gröbner basis.

Per block:

1. *Polynomialize.*  For every unknown angle x, sin x -> s_x and cos x -> c_x
   and s_x² + c_x² − 1 is added; unknown lengths stay as they are.  Anything
   else (sin 2x is expanded first; exp x, sqrt x, x·sin x ...) is an error that
   names the constraint.  Where the arguments are angle sums (relative joint
   angles: cos(ψ + A)), the variables are the sines and cosines of the sums
   instead (``angle_plan``), and step 5 recovers the joint angles from them.
2. *Abstract.*  Each coefficient (w.r.t. the unknowns' monomials) that depends
   on known quantities (independent coordinates, earlier blocks, time) becomes
   a fresh symbol K_j.  The basis is then computed over Q(K), which keeps it
   tiny: a four-bar loop takes milliseconds instead of expanding cos θ terms.
3. *Gröbner basis* in lex order, unknowns' polynomial variables highest
   first as the mechanism (or the default: declaration order, c_x ≻ s_x)
   gives them.
4. *Extract*, last variable first: for each variable the basis element of
   smallest degree in it that contains no higher variable.  Degree 1 is an
   explicit formula; degree 2 a square root, degree > 2 a univariate root.
   Which root is the assembly branch is decided at run time, every time, as
   the root nearest the value predicted from the previous solution (the
   build-time sign only assembles the start).
5. *Recover* coordinates: angle = atan2(s_x, c_x) (of an angle sum's
   difference by angle addition), length = its variable.
6. *Cover the workspace* (``cover_workspace``): a lex sequence has
   representation singularities, regular configurations where one of its
   leading coefficients or discriminants vanishes (a Grashof double-crank
   four-bar divides by l1 cos θ − d).  The reachable workspace is swept by
   Newton continuation (``workspace.py``, independent of the sequences); where
   the primary sequence degenerates, its exact completion (``Completion``:
   the first step's root, of any degree, the circle, then the block's linear
   constraints and the circles of the angles they eliminate, as one linear
   system) takes over if it covers every degenerate swept point; otherwise
   the run-time Newton fallback solves them.  One lex order per block: no
   other order is searched (``cover_workspace`` says why).

Nothing here is bounded by the clock: each block gets one Gröbner basis, of
its given or default order, and Singular's CPU-time safety limit fails the
build when reached (``groebner.SINGULAR_CPU_LIMIT``).  So the same module
gives the same sequences, and the same model.c, on an idle machine and a
loaded one.
"""

from __future__ import annotations

import math
import time

import numpy as np
import sympy as sp

from fmigen.derive.dae import DAE
from fmigen.kinematics import KINEMATICS
from fmigen.kinematics.branches import choose_branches
from fmigen.kinematics.completion import completion_error, completion_plan
from fmigen.kinematics.groebner import GroebnerError, GroebnerLimit, groebner_lex
from fmigen.kinematics.hard_points import sweep_hard_point_range
from fmigen.kinematics.polynomialize import abstract, angle_plan, polynomialize
from fmigen.kinematics.sequences import TriangularBlock, Triangularization, block_name, extract
from fmigen.kinematics.sweep_measures import (COVER_ERROR, amplification, degenerate, representation_singular,
                                              sequence_evaluator)
from fmigen.model import ModelError
from fmigen.derive.partition import Block, Partition
from fmigen.derive.workspace import continuation_newton, sweep, unit_scales


#: a block with more polynomial variables than this is solved by Newton
#: without trying a lex basis: a bound on the input, decided before any work,
#: between the largest shipped blocks whose bases finish and the smallest
#: that do not (docs/benchmarks.md, "Measurements behind the code's
#: choices").  Below it, Singular's CPU-time
#: safety limit is an error (``groebner.SINGULAR_CPU_LIMIT``).
MAX_GROEBNER_VARIABLES = 10

#: a block whose Bézout number exceeds this is solved by Newton without
#: trying a lex basis, also decided from the input alone.  The Bézout number
#: is the product of the total degrees, in the block's unknown polynomial
#: variables, of its equations and circle identities: a bound on the number
#: of isolated solutions, and so on the degree of the basis' univariate
#: polynomial, whose coefficients (rational functions of the abstracted
#: knowns) make the basis' size.  Variables alone do not tell: the double
#: wishbone's upright block (a ball joint's three Euler angles and an arm's
#: angle, 8 variables like the Stephenson six-bar's block) has 2,592 and its
#: basis did not finish within Singular's 600 s safety limit; the shipped
#: blocks whose bases finish have at most 256 (the landing gear's; the
#: Stephenson six-bar's 16, a Stewart leg's 72); the five-link's and the
#: quarter car's pose blocks 62,208.
MAX_GROEBNER_BEZOUT = 1024

DEFAULT_NEWTON_TOL = 1e-10


def triangularize(dae: DAE, part: Partition, order: list[str] | None = None,
                  use_cache=True, log=None, kinematics="groebner",
                  newton_tol=None, cover=True, guesses=None) -> Triangularization:
    """``cover``: sweep the workspace and add the exact completion where the
    primary sequence degenerates (``cover_workspace``).  ``guesses``: coordinate
    values that pick the start assembly (default: the mechanism's starts)."""
    log = log or (lambda msg: None)
    if kinematics != "groebner":
        return newton_formulation(dae, part, kinematics, newton_tol, log, guesses)
    order = order or dae.mechanism.groebner_order
    if order:
        # a name no block has would be dropped silently, and an order of
        # such names only would be the default order
        stray = [o for o in order if not any(_block_order(dae, b, [o]) for b in part.blocks)]
        if stray:
            raise ModelError(f"Gröbner order: no block has the variable(s) {', '.join(stray)} (a block's "
                             "variables are its coordinates' names, and s_<angle>, c_<angle> for its angles)")
    forced = [set(b) for b in (dae.mechanism.newton_blocks or [])]
    counter = [0]
    tblocks = []
    for b in part.blocks:
        unknown_names = {dae.names[i] for i in b.unknowns}
        name = block_name(dae, b)
        if any(unknown_names <= f for f in forced):
            log(f"block {name}: Newton iteration (forced by the mechanism)")
            tblocks.append(newton_block(b, "forced by the mechanism"))
            continue
        t_block = time.perf_counter()
        block_order = _block_order(dae, b, order) if order else None
        variables, polys, circles, recover, known_ring, sums = polynomialize(dae, b, block_order)
        ring = [*variables, *known_ring]
        if len(ring) > MAX_GROEBNER_VARIABLES:
            reason = (f"{len(ring)} polynomial variables > {MAX_GROEBNER_VARIABLES}, too many for a lex "
                      "Gröbner basis")
            log(f"block {name}: {reason}; Newton iteration on this block")
            tblocks.append(newton_block(b, reason))
            continue
        degrees = [sp.Poly(p, *variables).total_degree() for p in [*polys, *circles]]
        bezout = math.prod(degrees)
        if bezout > MAX_GROEBNER_BEZOUT:
            reason = (f"Bézout number {bezout} (degrees {', '.join(map(str, degrees))}) > "
                      f"{MAX_GROEBNER_BEZOUT}, too large for a lex Gröbner basis")
            log(f"warning: block {name}: {reason}; Newton iteration on this block (newton_blocks says "
                "so without this warning)")
            tblocks.append(newton_block(b, reason))
            continue
        apolys, abstractions = abstract(polys, ring, counter)
        log(f"Gröbner basis of block {name}: {len(apolys)} equations, "
            f"{len(ring)} variables, {len(abstractions)} abstracted knowns")
        try:
            basis = groebner_lex(apolys + circles, ring, list(abstractions), use_cache=use_cache, log=log)
        except GroebnerLimit as e:
            # an error, not Newton: a quiet change of method when a machine
            # is slow would give other C for the same module
            raise ModelError(
                f"block {name}: the Gröbner basis did not finish ({e}); solve the block by Newton "
                f"(list its coordinates {sorted(unknown_names)} in the mechanism's newton_blocks) or give "
                "a Gröbner order (groebner_order, fmigen build --order) for which it finishes") from None
        except GroebnerError as e:
            # any other failure of the engine (it could not run, ran out of
            # memory, refused the input): the block is still solvable, by
            # the same Newton iteration as a block whose basis is too big
            # (the reason is one line; it also labels the block in model.c)
            reason = f"the Gröbner engine failed: {e}".replace("*/", "* /")
            log(f"warning: block {name}: {reason}; solving it by Newton iteration instead")
            solved_block = newton_block(b, reason)
            solved_block.engine_failed = True
            tblocks.append(solved_block)
            continue
        if any(g.is_ground and not g.is_zero for g in basis):
            raise ModelError(f"inconsistent constraints in block {name}: "
                             f"{[dae.constraint_names[j] for j in b.equations]} have no common solution")
        t_extract = time.perf_counter()
        steps = extract(basis, variables, name)
        log(f"block {name}: sequence of {len(steps)} steps (degrees "
            f"{', '.join(str(st.degree) for st in steps)}) extracted in {time.perf_counter() - t_extract:.2f} s")
        tblocks.append(TriangularBlock(b, "groebner", variables, abstractions, steps, recover, apolys,
                                       known_ring, circles=circles, angle_sums=sums,
                                       seconds=time.perf_counter() - t_block))
    tri = Triangularization(tblocks, part)
    choose_branches(dae, tri, guesses)
    if cover:
        cover_workspace(dae, tri, log=log)
        sweep_hard_point_range(dae, tri, log=log)
    return tri


def newton_block(b: Block, reason: str) -> TriangularBlock:
    return TriangularBlock(b, "newton", [], {}, [], {}, reason=reason)


def newton_formulation(dae: DAE, part: Partition, kinematics: str, tol=None, log=None,
                       guesses=None) -> Triangularization:
    """The iterative alternatives to Gröbner (paper 000, §4.1 approaches 2
    and 3), for benchmarks: "newton" merges every block into one Newton block
    over all dependent coordinates; "newton-loop" solves each block (loop) by
    its own Newton iteration.  Both converge when the Newton step is at most
    ``tol`` (absolute; default DEFAULT_NEWTON_TOL) and warm-start from the
    previous solution."""
    log = log or (lambda msg: None)
    if kinematics not in KINEMATICS:
        raise ModelError(f"unknown kinematics formulation '{kinematics}' (known: {', '.join(KINEMATICS)})")
    tol = DEFAULT_NEWTON_TOL if tol is None else float(tol)
    if not tol > 0:
        raise ModelError(f"the Newton tolerance must be > 0 (got {tol})")
    if kinematics == "newton" and part.blocks:
        unknowns = [i for b in part.blocks for i in b.unknowns]
        knowns = sorted({i for b in part.blocks for i in b.knowns} - set(unknowns))
        blocks = [Block([j for b in part.blocks for j in b.equations], unknowns, knowns)]
        reason = "single Newton iteration over all dependent coordinates"
    else:
        blocks = list(part.blocks)
        reason = "Newton iteration per block"
    log(f"kinematics '{kinematics}': {len(blocks)} Newton block(s), step tolerance {tol:g}")
    tblocks = []
    for b in blocks:
        solved_block = newton_block(b, f"{reason} (tol {tol:g})")
        solved_block.tol = tol
        tblocks.append(solved_block)
    tri = Triangularization(tblocks, part)
    choose_branches(dae, tri, guesses)
    return tri


def _block_order(dae, b, order):
    """The part of a user order that concerns block ``b``: its unknowns' and
    knowns' polynomial variables."""
    names = {dae.names[i] for i in [*b.unknowns, *b.knowns]}
    plan = angle_plan(dae, b)
    names |= set(plan.names.values()) if plan is not None else set()
    return [o for o in order if o in names or (o[:2] in ("s_", "c_") and o[2:] in names)]


# --- the workspace cover: the exact completion where the primary degenerates --


def cover_workspace(dae: DAE, tri: Triangularization, log=None):
    """Sweep the workspace (``workspace.sweep``) and, for every Gröbner block
    whose primary sequence degenerates somewhere on it, take its exact
    completion (``completion_plan``) where that covers every such point.
    Points it does not cover are left to the run-time Newton fallback; all
    are recorded in ``solved_block.singular_points`` (``fmigen check`` reports them).

    No other lex order is computed, neither to cover degenerate points nor
    to condition the primary better.  Why: each would be another Gröbner
    basis, extraction and sweep evaluation (the Stephenson III six-bar's
    seven other orders were most of its cold build), the exact completion
    covers the degenerate swept points of the Stephenson six-bars and of
    every shipped mechanism whose primary degenerates, and the run time
    verifies every result to FMIGEN_SEQ_TOL and polishes (or completes) one
    that a poorly conditioned sequence leaves short.  The primary's error
    amplification is still measured (``solved_block.amplification``, reported by
    ``fmigen check``): a mechanism may record a better conditioned order
    (``groebner_order``)."""
    log = log or (lambda msg: None)
    tri.sweep = sw = sweep(dae, tri.partition, tri.start, log=log)
    scales = unit_scales(dae)
    for solved_block in tri.blocks:
        if solved_block.method != "groebner":
            continue
        name = block_name(dae, solved_block.block)
        evaluate = sequence_evaluator(dae, solved_block, solved_block.sequences[0], scales)
        quality = evaluate(sw.points)
        singular = representation_singular(quality, sw.paths)
        bad = degenerate(quality, sw.paths, singular)
        solved_block.amplification = amplification(quality, singular)
        _, cond, worst, _ = quality
        solved_block.singular_points = _singular_runs(dae, tri, solved_block, solved_block.sequences[0], singular, cond, worst, evaluate)
        loss = bad & ~singular
        solved_block.precision_loss = {"configurations": int(loss.sum()), "of": int(len(loss)),
                             "max_error": float(np.max(np.where(loss, quality[0], 0.0)))}
        if not bad.any():
            continue
        plan = completion_plan(solved_block)
        if plan is not None:
            missed = int((completion_error(dae, solved_block, plan, sw.points[bad], scales) > COVER_ERROR).sum())
            if not missed:
                solved_block.completion = plan
                for sp_ in solved_block.singular_points:
                    sp_["covered_by"] = plan.label
                log(f"block {name}: the primary sequence degenerates at {int(bad.sum())} of {len(bad)} swept "
                    f"configurations; the exact completion from its root {plan.variable} covers them")
                continue
            log(f"block {name}: the exact completion from {plan.variable} misses {missed} of the primary's "
                f"{int(bad.sum())} degenerate swept configurations")
        log(f"block {name}: the primary sequence degenerates at {int(bad.sum())} of {len(bad)} swept "
            "configurations; the run-time Newton fallback solves them")
        if bad.all():
            # Why: every run-time solve would evaluate the sequence, find it
            # degenerate or short of FMIGEN_SEQ_TOL, and end in Newton anyway
            # (the landing gear: its linear steps' coefficients, degree-12
            # polynomials in p_BC with 260-digit integers, cancel to ~1e-10
            # everywhere).  Newton from the prediction first skips that work;
            # the sequence still finds the branch where there is no
            # prediction (the first assembly) or Newton fails.
            solved_block.newton_first = True
            log(f"block {name}: its sequence covers no swept configuration; a step that continues from the "
                "last one tries Newton from the prediction first")


def _singular_runs(dae, tri, solved_block, seq, bad, cond, worst, quality_at):
    """One entry per contiguous run of degenerate points along each sweep
    path: which step and coefficient, the symbolic condition (the leading
    coefficient in the coordinates), and where: the zero of the coefficient
    or discriminant that changes sign there, located by bisection on the
    continuation (else the worst swept point)."""
    out = []
    indep = tri.partition.independent
    for path in tri.sweep.paths:
        run = []
        for pos, idx in enumerate(path + [None]):
            if idx is not None and bad[idx]:
                run.append(pos)
                continue
            if run:
                points = [path[r] for r in run]
                j = min(points, key=lambda r: cond[r])
                step = seq.steps[int(worst[j])]
                what = f"{'discriminant or ' if step.degree == 2 else ''}leading coefficient of the " \
                       f"degree-{step.degree} step for {step.variable}"
                at = tri.sweep.points[j]
                zero = _bisect_sign_change(dae, tri, path, run, quality_at)
                if zero is not None:
                    what, k_step, at = zero
                    step = seq.steps[k_step]
                lead = step.coeffs[0].xreplace({K: e for K, e in solved_block.abstractions.items()})
                # printed once: a large coefficient's text takes sympy ~0.1 s
                text = str(lead)
                out.append({"block": block_name(dae, solved_block.block), "variable": str(step.variable),
                            "condition": what,
                            "leading_coefficient": str(sp.factor(lead)) if len(text) < 400 else text[:400],
                            "at": {dae.names[i]: float(at[i]) for i in indep},
                            "located": "bisection" if zero is not None else "sweep point",
                            "points": len(run), "index": int(j),
                            "covered_by": None})
                run = []
    # the same singular point reached from both directions (angles mod 2π)
    period = {dae.names[i]: 2 * np.pi if dae.mechanism.coordinates[i].unit == "rad" else np.inf
              for i in indep}

    def same(a, b):
        for k in a:
            d = abs(a[k] - b[k])
            if np.isfinite(period[k]):
                d = min(d % period[k], period[k] - d % period[k])
            if d > 0.02:
                return False
        return True
    uniq = []
    for sp_ in out:
        if not any(same(sp_["at"], u["at"]) for u in uniq):
            uniq.append(sp_)
    return uniq


def _bisect_sign_change(dae, tri, path, run, quality_at, iterations=40):
    """The configuration where a signed leading coefficient or discriminant
    of the sequence crosses zero between two neighbours of the run on the
    path: (what, step index, configuration), or None."""
    pts = tri.sweep.points
    lo_pos, hi_pos = max(run[0] - 1, 0), min(run[-1] + 1, len(path) - 1)
    q = pts[[path[p] for p in range(lo_pos, hi_pos + 1)]]
    signed = quality_at(q)[3]
    dep = tri.partition.dependent
    for what, k_step, val in signed:
        flips = np.flatnonzero(np.sign(val[1:]) * np.sign(val[:-1]) < 0)
        if not len(flips):
            continue
        a, b = q[flips[0]].copy(), q[flips[0] + 1].copy()
        fa = val[flips[0]]
        for _ in range(iterations):
            mid = 0.5 * (a + b)
            m = continuation_newton(dae.numeric, 0.0, mid.copy(), dep)
            if m is None:
                break
            fm = next(v for w, _, v in quality_at(m[None, :])[3] if w == what)[0]
            if np.sign(fm) == np.sign(fa):
                a, fa = m, fm
            else:
                b = m
        return what, k_step, 0.5 * (a + b)
    return None
