"""Hard points: tunable geometry (``Parameter.range``) that enters the
constraints, and the build's sweep of its declared range.

The Gröbner stage needs no change for them: ``polynomialize.abstract``
replaces every coefficient that holds a known quantity by a fresh symbol K_j,
and a hard point is such a known, so each block's basis is computed over
Q(K) with the hard points inside the K_j.  The sequence is then exact for
every value of them at which its leading coefficients and discriminants do
not vanish, and the generated C evaluates the K_j from the run-time
parameters p[] like any other known.  The FMU assembles the start again at
ExitInitializationMode, from the build's branch signs.

What depends on the value is checked here, on samples of the declared
range (``range_samples``): that the start assembles there on the build's
branch (the sequence's assembly with the build-time signs is the one that
Newton continuation in the hard points reaches from the default), and, at
the box's two extreme corners (``swept_samples``), where the primary
sequence degenerates on the workspace swept at that value and the exact
completion chosen at the default does not cover it (the run-time Newton
fallback solves those configurations, as it does at the default).  The FMU refuses a value outside the range; one inside at which
the start cannot be assembled fails ExitInitializationMode.
"""

from __future__ import annotations

import functools

import numpy as np

from fmigen.derive.dae import DAE
from fmigen.derive.workspace import continuation_newton, sweep, unit_scales
from fmigen.kinematics.branches import assemble
from fmigen.kinematics.sequences import Triangularization, block_name
from fmigen.kinematics.completion import completion_evaluator
from fmigen.kinematics.sweep_measures import (COVER_ERROR, degenerate, hard_point_values, representation_singular,
                                             sequence_evaluator)
from fmigen.model import ModelError

#: continuation steps in the hard points from the default to a sample
CONTINUATION_STEPS = 16
#: a sample's sequence assembly and its continuation agree to this (relative
#: to the unit scales): else the branch changed between them
BRANCH_AGREEMENT = 1e-8


def hard_points(mech) -> list:
    """The mechanism's hard points (tunable parameters with a range)."""
    return [p for p in mech.parameters if p.is_hard_point]


def range_samples(mech) -> list[dict]:
    """{name: value} samples of the hard points' box: each one alone at its
    lower and upper bound and half-way to each (the others at their
    defaults), and, with more than one, all at their lower and all at their
    upper bounds.  The default itself is the build's own sweep."""
    hard = hard_points(mech)
    out = []
    for p in hard:
        lo, hi = p.range
        v = float(p.value)
        out += [{p.name: x} for x in (lo, 0.5 * (lo + v), 0.5 * (v + hi), hi)]
    if len(hard) > 1:
        out += [{p.name: p.range[0] for p in hard}, {p.name: p.range[1] for p in hard}]
    return out


def swept_samples(mech) -> list[dict]:
    """The samples of ``range_samples`` at which the workspace is swept as
    well: the box's two extreme corners, every hard point at its lower and
    every one at its upper bound (one hard point: its two bounds).  A sweep
    of the whole mechanism costs what the build's own does, and its finding
    is a log line (the run-time Newton fallback solves degenerate
    configurations either way), while the assembly on the build's branch,
    checked at every sample, is what the FMU's start rests on: so a
    corner's thirty-odd hard points cost two sweeps, not four per point."""
    hard = hard_points(mech)
    return [{p.name: p.range[0] for p in hard}, {p.name: p.range[1] for p in hard}] if hard else []


def sweep_hard_point_range(dae: DAE, tri: Triangularization, log=None) -> list[dict]:
    """The range check of the module docstring, one record per sample:
    ``at`` (the sample), ``assembled`` (False: the FMU refuses the value at
    ExitInitializationMode), ``branch`` ("kept" or what changed), and per
    Gröbner block the swept configurations where its primary sequence
    degenerates, how many of those its exact completion does not cover, and
    how many were swept (``degenerate``: {block: (count, missed, of)}; empty
    but at the ``swept_samples``).  Warnings go to the
    log; stored in ``tri.hard_point_range``."""
    log = log or (lambda msg: None)
    records = []
    if not hard_points(dae.mechanism):
        return records
    scales = unit_scales(dae)
    part = tri.partition
    indep = {dae.names[i]: tri.start[dae.names[i]] for i in part.independent}
    q_default = np.array([tri.start[n] for n in dae.names], dtype=float)
    checks = _block_checks(dae, tri, scales)
    swept = swept_samples(dae.mechanism)
    for values in range_samples(dae.mechanism):
        at = ", ".join(f"{k}={v:g}" for k, v in values.items())
        sample = dae.at_hard_points(values)
        record = {"at": dict(values), "assembled": True, "branch": "kept", "degenerate": {}}
        records.append(record)
        try:
            start = assemble(sample, tri, indep)
        except ModelError as e:
            record.update(assembled=False, branch=str(e))
            log(f"warning: hard points at {at}: {e}; the FMU refuses these values at ExitInitializationMode")
            continue
        q = np.array([start[n] for n in dae.names], dtype=float)
        reached = _continue(dae, q_default, values, part.dependent)
        if reached is None or np.max(np.abs(reached - q) / scales) > BRANCH_AGREEMENT:
            record["branch"] = ("continuation from the default did not converge" if reached is None else
                                "the build's branch signs give another assembly than continuation from the default")
            log(f"warning: hard points at {at}: {record['branch']}: the start there may not be the described "
                "branch's")
        if values not in swept:
            continue
        sw = sweep(sample, part, start)
        hard = hard_point_values(sample)
        for name, (primary, completion) in checks.items():
            quality = primary(sw.points, hard)
            bad = degenerate(quality, sw.paths, representation_singular(quality, sw.paths))
            # of those, the ones the exact completion (chosen at the default) misses
            missed = bad.sum() if completion is None or not bad.any() else \
                (completion()(sw.points[bad], hard) > COVER_ERROR).sum()
            record["degenerate"][name] = (int(bad.sum()), int(missed), int(len(bad)))
            if missed:
                log(f"hard points at {at}: block {name}'s sequence degenerates at {int(bad.sum())} of {len(bad)} "
                    f"swept configurations, {int(missed)} of them not covered by its exact completion; the "
                    "run-time Newton fallback solves those")
    fine = [r for r in records if r["assembled"] and r["branch"] == "kept"]
    log(f"hard points {', '.join(p.name for p in hard_points(dae.mechanism))}: the start assembles on the build's "
        f"branch at {len(fine)} of {len(records)} samples of the declared range")
    tri.hard_point_range = records
    return records


def _block_checks(dae: DAE, tri: Triangularization, scales) -> dict:
    """{block name: (its primary sequence's evaluator, None or a function
    returning its exact completion's evaluator)} of every Gröbner block,
    each evaluator a function of (swept points, hard-point values):
    lambdified once for all the samples, which then differ only in those
    values.  The completion's is built on first use: only a block whose
    primary degenerates somewhere needs it."""
    out = {}
    for solved_block in tri.blocks:
        if solved_block.method == "groebner":
            completion = None if solved_block.completion is None else \
                functools.cache(functools.partial(completion_evaluator, dae, solved_block,
                                                  solved_block.completion, scales))
            out[block_name(dae, solved_block.block)] = (
                sequence_evaluator(dae, solved_block, solved_block.sequences[0], scales), completion)
    return out


def _continue(dae: DAE, q, values: dict, dependent) -> np.ndarray | None:
    """The start continued by Newton from the default hard points to
    ``values`` in CONTINUATION_STEPS equal steps (independent coordinates
    fixed), or None where a step does not converge.  Without dependent
    coordinates there is nothing to continue: the start is the sample's."""
    q = q.copy()
    if not len(dependent):
        return q
    defaults = {str(s): v for s, v in zip(dae.tunable, dae.tunable_values)}
    for s in np.linspace(0.0, 1.0, CONTINUATION_STEPS + 1)[1:]:
        step = dae.at_hard_points({k: defaults[k] + s * (v - defaults[k]) for k, v in values.items()})
        q = continuation_newton(step.numeric, 0.0, q, dependent)
        if q is None:
            return None
    return q
