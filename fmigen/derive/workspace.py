"""The reachable workspace, swept at build time (used by ``triangular`` to
decide where the exact completion is needed and by ``fmigen check``).

Newton continuation on the *full* constraint system Φ(q) = 0 from the start
assembly: the independent coordinates move along straight paths (a full turn
each way for a single independent angle; the axes and a few seeded random
directions otherwise, or only random directions beyond 16 independent
coordinates), and at every point the dependent coordinates are
corrected by Newton on Φ with q_i held, predicted along the tangent
q̇_d = −Φ_d⁻¹ Φ_i q̇_i.  Nothing here uses the Gröbner sequences, so the
sweep is an independent reference for them: the branch it follows is the
one continuity gives.

A path stops where Φ_d becomes singular or Newton stops converging, or
converges off the curve, to another assembly (``_resolved``), even after
halving the step: a physical singularity of the partition (a dead centre, a
limit of the workspace), recorded with its configuration and condition
number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fmigen.derive.dae import DAE
from fmigen.derive.partition import Partition

#: a point whose Φ_d has a condition number above this is reported as a
#: physical singularity of the partition (the sweep stops there)
COND_LIMIT = 1e8

#: most paths of a sweep: up to 16 independent coordinates, each axis both
#: ways and 4 random directions; beyond that, this many paths along half as
#: many random directions, each both ways (the cost of the sweep then grows
#: with the size of Φ only)
MAX_PATHS = 36


def unit_scales(dae: DAE) -> np.ndarray:
    """Per coordinate, the size a 'unit change' has: 1 for an angle (rad);
    for a length, the largest start value or geometric parameter of its
    unit (the mechanism's size), so tolerances mean the same in metres and
    centimetres."""
    return mechanism_unit_scales(dae.mechanism)


def mechanism_unit_scales(mech) -> np.ndarray:
    """``unit_scales`` from the mechanism alone (the derived-model cache keys
    on it without building the DAE).

    A unit whose starts and parameters are all below 1e-6 (zero, or the
    assembly's round-off of zero) states no size of its own: a joint
    description's slider or free joint written at its design pose (start 0)
    with the hard points as numbers, not parameters.  Its scale is then the
    bodies' extent, the largest distance of a centre of mass from the world
    origin at the start (1 when that is zero too).  Not the floor of 1e-6:
    every continuity tolerance of such a coordinate would be a micrometre
    (a McPherson strut's stroke then failed its check at the first step)
    and the sweep of an independent one would cover a micrometre of its
    travel."""
    sizes = {}
    for c in mech.coordinates:
        sizes.setdefault(c.unit, []).append(abs(c.start))
    for p in mech.parameters:
        sizes.setdefault(p.unit, []).append(abs(p.value))
    extent = None
    out = []
    for c in mech.coordinates:
        if c.unit == "rad":
            out.append(1.0)
            continue
        size = max(sizes.get(c.unit, [1.0]))
        if size < 1e-6:
            extent = _bodies_extent(mech) if extent is None else extent
            size = extent or 1.0
        out.append(max(1e-6, size))
    return np.array(out)


def _bodies_extent(mech) -> float:
    """The largest distance of a body's centre of mass from the world
    origin, with every coordinate, parameter and input at its start."""
    import sympy as sp
    values = {c.symbol: c.start for c in mech.coordinates}
    values.update({p.symbol: p.value for p in mech.parameters})
    values.update({i.symbol: i.start for i in mech.inputs})
    extent = 0.0
    for b in mech.bodies:
        r = [float(sp.sympify(x).xreplace(values)) for x in b.com]
        extent = max(extent, float(np.linalg.norm(r)))
    return extent


@dataclass
class Sweep:
    #: consistent configurations (model order), one row per point
    points: np.ndarray
    #: per path, the row indices of its points in continuation order (the
    #: start first)
    paths: list[list[int]]
    #: where a path stopped at a singular Φ_d or a failing Newton
    physical: list[dict] = field(default_factory=list)
    #: condition number of Φ_d at each point
    conditions: np.ndarray = None


#: Newton steps a continuation point may take from its predicted start:
#: the prediction is close, so more steps would only walk to another branch
CONTINUATION_NEWTON_ITERATIONS = 12


def newton_steps(residual, jacobian, x, free, max_iter):
    """Full Newton steps on residual(x) = 0 over the unknowns x[free], x
    updated in place; ``jacobian(x)`` has a column per entry of x, of which
    the columns ``free`` are square and regular.  Yields (the residual
    before the step, the Jacobian, the step) after each step, at most
    ``max_iter`` times, for the caller's own convergence test; a singular
    Jacobian raises numpy.linalg.LinAlgError.  The one numeric Newton
    iteration of the assembly: the workspace sweep's continuation
    (``continuation_newton``) and the numeric start of a Newton block
    (``kinematics.branches.newton_numeric``)."""
    free = np.asarray(free, dtype=np.intp)
    for _ in range(max_iter):
        r = residual(x)
        J = jacobian(x)
        dx = solve(J[:, free], r)
        x[free] -= dx
        yield r, J, dx


def solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``numpy.linalg.solve(a, b)`` for a square float64 matrix and a vector:
    the same LAPACK routine (numpy's ``solve1`` gufunc) under the same error
    state, so the same bits and the same LinAlgError on a singular matrix,
    without the wrapper's argument checks and conversions, which were most
    of the time of a sweep's 2×2 and 4×4 solves.  Anything else goes
    through ``numpy.linalg.solve``."""
    if _GUFUNCS is None or a.dtype != np.float64 or b.dtype != np.float64 or a.ndim != 2 or b.ndim != 1 \
            or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        return np.linalg.solve(a, b)
    with np.errstate(call=_singular, invalid="call", over="ignore", divide="ignore", under="ignore"):
        return _GUFUNCS.solve1(a, b, signature="dd->d")


def cond(a: np.ndarray) -> float:
    """``float(numpy.linalg.cond(a))`` (the 2-norm condition number, the
    ratio of the largest to the smallest singular value; inf for a singular
    matrix without NaN entries): the same LAPACK routine (numpy's ``svd``
    gufunc, singular values only) and the same arithmetic, without the
    wrappers' overhead, for the same reason as ``solve``."""
    if _GUFUNCS is None or a.dtype != np.float64 or a.ndim != 2 or 0 in a.shape:
        return float(np.linalg.cond(a))
    with np.errstate(call=_svd_failed, invalid="call", over="ignore", divide="ignore", under="ignore"):
        s = _GUFUNCS.svd(a, signature="d->d")
    with np.errstate(all="ignore"):
        r = s[0] / s[-1]
    if np.isnan(r) and not np.isnan(a).any():
        return float("inf")
    return float(r)


def _singular(err, flag):
    raise np.linalg.LinAlgError("Singular matrix")


def _svd_failed(err, flag):
    raise np.linalg.LinAlgError("SVD did not converge")


def _linalg_gufuncs():
    """numpy's own linear-algebra gufuncs behind ``numpy.linalg.solve`` and
    ``svd`` (a private module; ``svd`` is numpy 2's name, numpy 1 names
    its SVD gufuncs otherwise); None where either is missing, and ``solve``/``cond``
    then call the public functions, with the same results."""
    try:
        from numpy.linalg import _umath_linalg
    except ImportError:
        return None
    return _umath_linalg if all(hasattr(_umath_linalg, f) for f in ("solve1", "svd")) else None


_GUFUNCS = _linalg_gufuncs()


def continuation_newton(num, tt, q, dep, max_iter=CONTINUATION_NEWTON_ITERATIONS):
    """Newton on Φ(q) = 0 over q_d.  Converged when the step is at round-off
    of q_d (relative 1e-13); the residual must then be at round-off of the
    constraint's scale, |Φ_q|·|q| (the landing gear's are in cm, 1e4).
    None when it does not converge (or Φ_d is singular)."""
    dep = np.asarray(dep, dtype=np.intp)
    rows = dep.tolist()
    try:
        for _, Jf, dx in newton_steps(lambda at: num.Phi(tt, at), lambda at: num.Phi_q(tt, at), q, dep, max_iter):
            # the per-step tests on Python floats: numpy's reductions of a
            # few entries cost more than the solve (a sweep is ~1,400 points
            # of ~4 steps); the same values (q finite, so dx is), so the same
            # decisions
            values = q.tolist()
            if not all(map(math.isfinite, values)):
                return None
            if max(map(abs, dx.tolist())) <= 1e-13 * (1 + max(abs(values[i]) for i in rows)):
                scale = 1.0 + np.abs(Jf).max() * (1.0 + np.abs(q).max())
                if np.abs(num.Phi(tt, q)).max() <= 1e-12 * scale:
                    return q
    except np.linalg.LinAlgError:
        return None
    return None


def sweep(dae: DAE, part: Partition, start: dict, points_per_path=None, seed=0, log=None) -> Sweep:
    """Continuation from ``start`` (coordinate name -> value, consistent)."""
    log = log or (lambda msg: None)
    num = dae.numeric
    indep, dep = part.independent, part.dependent
    scales = unit_scales(dae)
    q0 = np.array([start[n] for n in dae.names], dtype=float)
    f = len(indep)
    if not dep or not f:
        return Sweep(q0[None, :], [[0]], conditions=np.ones(1))
    if f == 1:
        i = indep[0]
        extent = 2 * np.pi if dae.mechanism.coordinates[i].unit == "rad" else 1.0  # × the unit scale
        directions = [np.array([1.0]), np.array([-1.0])]
        n_steps = points_per_path or 720
    else:
        rng = np.random.default_rng(seed)
        if 2 * f + 4 <= MAX_PATHS:
            directions = [s * e for e in np.eye(f) for s in (1.0, -1.0)]
            directions += [d / np.linalg.norm(d) for d in rng.normal(size=(4, f))]
        else:
            # MAX_PATHS / 2 random directions, both ways, each moving every
            # independent coordinate: along an axis only the blocks that
            # depend on that coordinate move, so with many of them each block
            # would move on a few of the 2f + 4 paths while the sweep's cost
            # grows as f².  Scaled so that the largest component is 1: each
            # coordinate goes as far as along its axis (a unit norm would
            # move each by ~1/√f)
            directions = [s * d / np.abs(d).max() for d in rng.normal(size=(MAX_PATHS // 2, f))
                          for s in (1.0, -1.0)]
        extent = 1.0   # one rad, or one mechanism size, per unit-scaled direction
        n_steps = points_per_path or 40
    # index arrays once: fancy indexing by a list converts it on every use
    indep, dep = np.asarray(indep, dtype=np.intp), np.asarray(dep, dtype=np.intp)
    points, paths, physical = [q0.copy()], [], []
    J0 = num.Phi_q(0.0, q0)
    conds = [cond(J0[:, dep])]
    for d in directions:
        step = extent / n_steps * d * scales[indep]
        q, path, travelled = q0.copy(), [0], 0
        Jd, c = J0, conds[0]
        while travelled < n_steps:
            if not c < COND_LIMIT:
                physical.append(_stop(dae, indep, q, c, "Φ_d singular", len(paths)))
                break
            h, nxt = 1.0, None
            for _ in range(4):      # halve the step before giving up
                trial = q.copy()
                trial[indep] += h * step
                # tangent predictor: Φ_d Δq_d = −Φ_i Δq_i
                trial[dep] -= solve(Jd[:, dep], Jd[:, indep] @ (h * step))
                predicted = trial.copy()
                nxt = continuation_newton(num, 0.0, trial, dep)
                if nxt is not None and _resolved(q, predicted, nxt, scales):
                    break
                nxt = None
                h /= 2
            if nxt is None:
                physical.append(_stop(dae, indep, q, c, "no assembly beyond", len(paths)))
                break
            travelled += h
            q = nxt
            points.append(q.copy())
            # Φ_q and its condition at the new point, also the next step's
            Jd = num.Phi_q(0.0, q)
            c = cond(Jd[:, dep])
            conds.append(c)
            path.append(len(points) - 1)
        paths.append(path)
    log(f"workspace sweep: {len(points)} configurations on {len(paths)} paths, "
        f"{len(physical)} path end(s) at a physical singularity or workspace limit")
    return Sweep(np.array(points), paths, physical, np.array(conds))


def _resolved(q, predicted, corrected, scales) -> bool:
    """Whether a continuation step stayed on the solution curve: Newton
    moved the tangent prediction by no more than the prediction moved from
    q (unit-scaled, largest coordinate).  On a smooth stretch the
    predictor's error is about κ·h² against a move of h (κ the curve's
    curvature, h the step), a ratio far below 1.  Approaching a fold, where
    q_d ≈ a·√δ in the independent coordinates' distance δ from it, a step
    of x·δ that lands on the curve short of the fold has the ratio
    (1 − x/2 − √(1 − x)) / (x/2): below 1, and 1 only landing on the fold
    itself.  A larger correction is not this branch: the step went over a
    fold and Newton, converging all the same, found another assembly at
    those independent values; the step is then halved, as when Newton
    fails (docs/corpus.md, the McPherson strut, has the case that showed
    it and its ratios).  At a singularity that is no simple fold (the full Φ_q singular too)
    steps on the curve can exceed 1 close to it, and the path stops a
    fraction of a step earlier than it could."""
    corrector = (np.abs(corrected - predicted) / scales).max()
    move = (np.abs(predicted - q) / scales).max()
    return bool(corrector <= move)


def _stop(dae, indep, q, cond, why, path):
    return {"path": path, "at": {dae.names[i]: float(q[i]) for i in indep},
            "configuration": {n: float(x) for n, x in zip(dae.names, q)},
            "condition_number": float(cond) if np.isfinite(cond) else None, "kind": why}
