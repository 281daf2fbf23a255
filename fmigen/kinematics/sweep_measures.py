"""How well a sequence does in double precision over the swept workspace
(``sequence_evaluator``): its error against the continuation's
configurations, its leading coefficients' and discriminants' distance
from zero, the points where it degenerates (``degenerate``) and its error
amplification (``amplification``), what the workspace cover and the
order search decide on.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from fmigen.kinematics.sequences import Sequence, TriangularBlock, poly_evaluator
from fmigen.model import t


#: a sequence is degenerate at a swept point when it misses the continuation's
#: solution by more than this (relative to the unit scale) ...
COVER_ERROR = 1e-6
#: ... or a leading coefficient falls below this relative to the sum of its
#: terms' magnitudes (the generated C switches to the next sequence there:
#: FMIGEN_SWITCH_COND, the same value) ...
COVER_CONDITION = 1e-3
#: ... or a quadratic's discriminant below this relative to a1² + |4 a2 a0|
#: (two roots closer than ~3e-5 of their scale: the nearest-root choice and
#: its precision need a good prediction there)
COVER_DISCRIMINANT = 1e-9
EPS = float(np.finfo(float).eps)


def abs_sum(expr) -> sp.Expr:
    """Σ |term| of a polynomial: the scale its value cancels from."""
    return sp.Add(*[sp.Abs(a) for a in sp.Add.make_args(sp.expand(expr))])


def block_layout(solved_block: TriangularBlock, scales):
    """Per unknown coordinate of a block: (model index, kind, variables,
    unit scale); kind "angle" has variables (s, c) and scale 1, "length"
    (x,), and a Newton block's "q" the name q<i>: the coordinate itself."""
    if solved_block.method == "newton":
        return [(i, "q", (f"q{i}",), float(scales[i])) for i in solved_block.block.unknowns]
    out = []
    for i in solved_block.block.unknowns:
        expr = solved_block.recover[i]
        if i in solved_block.angle_sums:       # the sine and cosine of an angle sum standing in for q_i
            out.append((i, "angle", solved_block.angle_sums[i][:2], 1.0))
        elif isinstance(expr, sp.atan2):
            out.append((i, "angle", (expr.args[0], expr.args[1]), 1.0))
        else:
            out.append((i, "length", (expr,), float(scales[i])))
    return out


def solution_start_values(dae, solved_block: TriangularBlock, layout, start: dict) -> list[float]:
    """A block's slots of the solution vector at ``start`` (coordinate name
    -> value), in ``layout``'s order (``block_layout``): sin and cos of an
    angle (or of the angle sum its variables stand for), a length itself.
    The generated kinematics' start (``codegen_kinematics.block_plan``, and
    ``codegen.solution_start_definition``, which writes it into a body taken
    from the cache without importing the generators)."""
    out = []
    for i, kind, _, _ in layout:
        if i in solved_block.angle_sums:
            angle = sum(k * start[dae.names[j]] for j, k in solved_block.angle_sums[i][2].items())
        else:
            angle = start[dae.names[i]]
        out += [math.sin(angle), math.cos(angle)] if kind == "angle" else [start[dae.names[i]]]
    return out


def _true_values(dae, solved_block, points):
    """Polynomial-variable values at the swept configurations (columns)."""
    out = {}
    for i, expr in solved_block.recover.items():
        if i in solved_block.angle_sums:
            s, c, combo = solved_block.angle_sums[i]
            a = sum(k * points[:, j] for j, k in combo.items())
            out[s], out[c] = np.sin(a), np.cos(a)
        elif isinstance(expr, sp.atan2):
            out[expr.args[0]] = np.sin(points[:, i])
            out[expr.args[1]] = np.cos(points[:, i])
        else:
            out[expr] = points[:, i].copy()
    return out


def known_function(dae, solved_block: TriangularBlock):
    """The block's knowns (its abstractions K_j, then its known-ring values)
    as a numpy function of (t, q_1 … q_n, h_1 … h_m), the h the hard points
    (``dae.hard_points``, in that order; ``hard_point_values``).  They are
    arguments, not substituted, so that one function serves every sample of
    their range (``hard_points.sweep_hard_point_range``): substituting and
    lambdifying each block again per sample was most of that sweep."""
    return sp.lambdify([t, *dae.q_sym, *dae.hard_points],
                       [*solved_block.abstractions.values(), *solved_block.known_ring.values()], "numpy")


def hard_point_values(dae) -> list[float]:
    """The hard points' values of ``dae``, the last arguments of ``known_function``."""
    return [float(v) for v in dae.hard_points.values()]


def sequence_quality(dae, solved_block: TriangularBlock, seq: Sequence, points, scales):
    """``sequence_evaluator(...)(points)``: one evaluation."""
    return sequence_evaluator(dae, solved_block, seq, scales)(points)


def sequence_evaluator(dae, solved_block: TriangularBlock, seq: Sequence, scales):
    """A function of swept configurations (rows) that evaluates ``seq`` in
    double precision at each, taking every time the root nearest the true
    value (the run-time choice with an exact prediction).  It returns
    (relative error, condition, index of the worst step, signed values) per
    point: the condition is the smallest leading coefficient relative to
    COVER_CONDITION or discriminant relative to COVER_DISCRIMINANT along the
    sequence (< 1 is degenerate); the signed values are (what, step, array)
    for every leading coefficient and discriminant, whose sign changes locate
    zeros between samples.  The expressions are lambdified once here (the
    bisection calls the function again and again).  Its second argument,
    ``hard`` (``hard_point_values`` of a DAE at other hard points; default
    ``dae``'s), evaluates the sequence at other values of the hard points
    with the same function."""
    knowns = [*solved_block.abstractions, *solved_block.known_ring]
    known_fn = known_function(dae, solved_block)
    default_hard = hard_point_values(dae)
    vscale = {v: scale for _, _, vs, scale in block_layout(solved_block, scales) for v in vs}
    compiled, args = [], list(knowns)
    for step in seq.steps:
        compiled.append([poly_evaluator(c, args) for c in step.coeff_polys])
        args = args + [step.variable]

    def coefficients(fns, vals):
        """The step's coefficients at ``vals`` and its leading one's scale
        (Σ|term|), each coefficient evaluated once"""
        lead, lead_scale = fns[0](*vals)
        return [lead, *(f(*vals, scale=False)[0] for f in fns[1:])], lead_scale

    def evaluate(points, hard=None):
        npts = len(points)
        col = lambda x, kind=float: np.broadcast_to(np.asarray(x, dtype=kind), (npts,))  # noqa: E731
        truth = _true_values(dae, solved_block, points)
        vals = [col(x) for x in known_fn(np.zeros(npts), *points.T, *(default_hard if hard is None else hard))]
        signed = []
        cond = np.full(npts, np.inf)
        worst = np.zeros(npts, dtype=int)
        err = np.zeros(npts)
        with np.errstate(all="ignore"):
            for k, (step, fns) in enumerate(zip(seq.steps, compiled)):
                values, lead_scale = coefficients(fns, vals)
                co = [col(c_, complex) for c_ in values]
                lead_scale = col(lead_scale)
                c_k = np.abs(co[0]) / np.where(lead_scale > 0, lead_scale, 1.0) / COVER_CONDITION
                signed.append((f"leading coefficient of the degree-{step.degree} step for {step.variable}",
                               k, np.real(co[0])))
                target = truth[step.variable]
                if step.degree == 1:
                    x = -co[1] / co[0]
                elif step.degree == 2:
                    a2, a1, a0 = co
                    disc = a1 * a1 - 4 * a2 * a0
                    r = np.sqrt(disc)
                    x1, x2 = (-a1 + r) / (2 * a2), (-a1 - r) / (2 * a2)
                    x = np.where(np.abs(x1 - target) <= np.abs(x2 - target), x1, x2)
                    d_k = np.abs(disc) / (np.abs(a1) ** 2 + np.abs(4 * a2 * a0) + 1e-300) / COVER_DISCRIMINANT
                    c_k = np.minimum(c_k, d_k)
                    signed.append((f"discriminant of the degree-2 step for {step.variable}", k, np.real(disc)))
                else:
                    x = nearest_roots(co, target)
                c_k = np.where(np.isfinite(c_k), c_k, 0.0)
                worst = np.where(c_k < cond, k, worst)
                cond = np.minimum(cond, c_k)
                e = np.abs(x - target) / vscale[step.variable]
                err = np.maximum(err, np.where(np.isfinite(e), e, np.inf))
                vals.append(np.real(x))
        return err, cond, worst, signed
    return evaluate


def nearest_roots(co, target) -> np.ndarray:
    """Per point j, the root of the polynomial with the complex
    coefficients ``co[k][j]`` (highest degree first; complex arrays, as the
    cover's evaluation makes them: ``numpy.roots`` of real ones would take
    LAPACK's real eigenvalue routine, other bits) nearest ``target[j]``: the
    eigenvalues of its companion matrix as ``numpy.roots`` forms it, the
    first of the nearest (``min``'s choice); NaN where a coefficient is not
    finite.  Why batched: ``numpy.roots`` point by point was most of a
    sextic's cover evaluation on the sweep (its per-call overhead, 1,441
    times), and ``numpy.linalg.eigvals`` of the stacked matrices runs the
    same LAPACK routine on each, so the same roots, and ``min``'s distances
    are computed as it computes them, so the same choice.  A point whose
    polynomial ``numpy.roots`` would trim (a zero leading or trailing
    coefficient), whose companion matrix or distances are not finite, goes
    through ``numpy.roots`` and ``min`` as before (same result, same
    errors)."""
    C = np.stack([np.asarray(c_, dtype=complex) for c_ in co], axis=1)
    npts, n = C.shape
    x = np.empty(npts, dtype=complex)
    one_by_one = np.ones(npts, dtype=bool)
    rows = np.flatnonzero(np.isfinite(C).all(axis=1) & (C[:, 0] != 0) & (C[:, -1] != 0))
    if len(rows) and n > 2:
        p = C[rows]
        A = np.zeros((len(rows), n - 1, n - 1), dtype=complex)
        A[:, np.arange(1, n - 1), np.arange(n - 2)] = 1.0
        with np.errstate(all="ignore"):
            A[:, 0, :] = -p[:, 1:] / p[:, :1]
        ok = np.isfinite(A).all(axis=(1, 2))
        rows, A = rows[ok], A[ok]
        if len(rows):
            r = np.linalg.eigvals(A)
            # |z − target| as abs() of a complex scalar computes it (hypot):
            # numpy's vectorized complex absolute differs from it in the last
            # bit, and a conjugate pair's two distances differ by no more
            d = r - np.asarray(target)[rows, None]
            dist = np.hypot(d.real, d.imag)
            ok = ~np.isnan(dist).any(axis=1)
            rows, r, dist = rows[ok], r[ok], dist[ok]
            x[rows] = r[np.arange(len(rows)), np.argmin(dist, axis=1)]
            one_by_one[rows] = False
    for j in np.flatnonzero(one_by_one):
        cj = [c_[j] for c_ in co]
        rts = np.roots(cj) if np.all(np.isfinite(cj)) else [np.nan]
        x[j] = min(rts, key=lambda z: abs(z - target[j]))
    return x


def amplification(quality, singular) -> float:
    """A sequence's error amplification on the sweep: the largest error of
    its double-precision evaluation (``sequence_evaluator``: relative to the
    unit scale, against the continuation's configurations, exact root
    choice) in machine epsilons, over the swept points where it is not
    representation-singular (there it is not used).  The continuation's own
    error, ~eps times the condition of Φ_d, is included: a few units are the
    floor.  Why it matters: the run time accepts a sequence's result when the
    block's polynomials vanish to FMIGEN_SEQ_TOL relative, and the constraint
    residual of an accepted result is about this many eps times the
    mechanism's size."""
    err = quality[0][~singular]
    return float(np.max(err) / EPS) if len(err) else math.inf


def degenerate(quality, paths, singular=None):
    """Points where a sequence cannot be trusted: it misses the swept
    solution, a leading coefficient or discriminant is (relatively) near zero
    there, or one changes sign between the point and its neighbour on a
    sweep path (a zero between two samples: the sampling alone would step
    over it).  ``singular``: ``representation_singular`` if already known."""
    if singular is None:
        singular = representation_singular(quality, paths)
    return singular | ~(quality[0] <= COVER_ERROR)


def representation_singular(quality, paths):
    """The part of ``degenerate`` that is a vanishing coefficient or
    discriminant (not a plain loss of digits, which the run-time polish
    repairs)."""
    _, cond, _, signed = quality
    bad = ~(cond >= 1.0)
    for path in paths:
        idx = np.array(path)
        for _, _, val in signed:
            v = val[idx]
            flip = np.flatnonzero(np.sign(v[1:]) * np.sign(v[:-1]) <= 0)
            bad[idx[flip]] = True
            bad[idx[flip + 1]] = True
    return bad
