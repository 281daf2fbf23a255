"""A primary sequence's exact completion (``Completion``), built and
measured: where a later linear step's leading coefficient vanishes, the
block's remaining unknowns from the first step's root by the circle and
one linear system (``completion_plan``), the root refined on the block's
own constraints (``root_refinement``), and its error on the swept
configurations (``completion_error``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import sympy as sp

from fmigen.kinematics.sequences import Completion, TriangularBlock, poly_evaluator
from fmigen.kinematics.sweep_measures import _true_values, block_layout, hard_point_values, known_function


#: Newton steps of a high-degree root's refinement (``root_refinement``):
#: the root's double-precision error (≤ 6e-9 on Stephenson I's sweep) is
#: squared by each, so two reach round-off
ROOT_REFINEMENTS = 2


def completion_plan(solved_block: TriangularBlock) -> Completion | None:
    """The exact completion of ``solved_block``'s primary sequence (``Completion``), or
    None where it does not apply: constraints that are not, after the first
    step's root and its angle's other variable, a square regular linear
    system in the remaining unknowns.  The rows are the block's own
    polynomials of degree ≤ 1 in them; where there are fewer of those than
    unknowns, the circles of angles those rows eliminate
    (``_eliminated_circle_rows``).  From more rows, the first regular square
    choice in their order.  The first step may have any degree: a quadratic
    keeps its two roots in closed form (``disc_root``), a higher degree's
    root is the run time's univariate root nearest the prediction."""
    if solved_block.method != "groebner" or not solved_block.steps or solved_block.steps[0].degree < 2:
        return None
    step = solved_block.steps[0]
    x0 = step.variable
    layout = block_layout(solved_block, dict.fromkeys(solved_block.block.unknowns, 1.0))
    pair = next((vs for _, kind, vs, _ in layout if kind == "angle" and x0 in vs), ())
    partner = next((v for v in pair if v != x0), None)
    rest = [v for v in solved_block.variables if v not in (x0, partner)]
    rows = []
    for p in solved_block.polys if rest else []:
        P = sp.Poly(p, *rest)
        if P.total_degree() != 1:
            continue
        rows.append(([P.coeff_monomial(v) for v in rest], P.coeff_monomial(1)))
    derived, free = [], []
    if rest:
        if len(rows) < len(rest):
            pairs = [tuple(vs) for _, kind, vs, _ in layout if kind == "angle" and set(vs) <= set(rest)]
            derived, free = _eliminated_circle_rows(rows, rest, pairs, len(rest) - len(rows))
            rows = rows + derived
        chosen = next((pick for pick in itertools.combinations(rows, len(rest))
                       if sp.expand(sp.Matrix([r[0] for r in pick]).det()) != 0), None)
        if chosen is None:
            return None
        rows = list(chosen)
    refine = root_refinement(rows, pair, free) if derived and step.degree > 2 and pair else None
    disc_root = None
    if step.degree == 2:
        a2, a1, a0 = step.coeffs
        const, factors = sp.factor_list(sp.expand(a1**2 - 4 * a2 * a0))
        if any(e >= 2 and f.free_symbols for f, e in factors):
            odd = const * sp.Mul(*[f for f, e in factors if e % 2])
            disc_root = sp.sqrt(sp.Max(odd, 0)) * sp.Mul(*[sp.Abs(f)**(e // 2) for f, e in factors if e >= 2])
    return Completion(x0, disc_root, partner, rest, rows, step.degree, refine)


def root_refinement(rows, pair, free):
    """What refines a high-degree first step's root on the block's own
    constraints (``Completion.refine``), or None.

    Why: the univariate's coefficients are the Gröbner basis' (integers of
    dozens of digits over the abstracted knowns) and cancel when evaluated
    in double precision, so its root can be off by far more than round-off
    (Stephenson I's sextic: up to 6e-9), and every unknown solved from it
    inherits that.  The same univariate has a well-conditioned form: the
    square linear system (``rows``) gives the rest from the root's angle u,
    and the circle of a pair the rows do not contain, f(u) = s(u)² + c(u)²
    − 1, vanishes exactly at the assemblies (the determinantal form of the
    resultant).  Newton steps on f in u from the root, with f' from the
    same LU factorization (A y' = −(A' y + b')), bring the root to
    round-off; the rest is then solved once more."""
    if not free:
        return None
    s_, c_ = pair
    d = lambda e: sp.expand(c_ * sp.diff(e, s_) - s_ * sp.diff(e, c_))  # noqa: E731  d/du of (s, c) = (c, −s)
    drows = [([d(a) for a in r[0]], d(r[1])) for r in rows]
    return (s_, c_), free[0], drows


def _eliminated_circle_rows(rows, rest, pairs, needed):
    """Rows linear in ``rest`` that the block's linear rows alone do not give:
    solve those rows for the sine and cosine of some angles (the eliminated
    pairs) in terms of the other unknowns, put that into the eliminated
    angles' circles s² + c² = 1 and reduce by the other angles' circles.

    Why it is linear: in a planar loop an angle enters its two rows through
    a scaled rotation of (c, s), and the rows solved for some angles keep
    that form, so each substituted circle's quadratic part is a multiple of
    the other angles' own s² + c², which their circles make a constant.  (The
    textbook elimination of an angle by squaring: |l·e_φ|² = l².)  What
    stays is a line in the other angles' (c, s) through every assembly with
    the known values: with the block's rows, the rest of the block as one
    square linear system (the Stephenson six-bars: after the first angle,
    the dyad's and the four-bar's circles).  Spatial loops, whose rotations
    do not commute, generally leave products of different angles: no row.

    ``pairs``: the (s, c) pairs of the angles in ``rest``; ``needed``: how
    many rows are missing.  Returns (the rows, the pairs not eliminated,
    whose circles the rows do not contain): the first choice of pairs and
    rows (in their order) that gives ``needed`` linear rows, else none.  The
    choice is a bounded enumeration of the block's few angles, decided on
    the symbols."""
    if needed <= 0 or len(rows) < 2:
        return [], []
    index = {v: k for k, v in enumerate(rest)}
    for k in range(len(rows) // 2, 0, -1):
        for elim in itertools.combinations(pairs, k):
            cols = [index[v] for vs in elim for v in vs]
            free = [v for v in rest if not any(v in vs for vs in elim)]
            free_pairs = [vs for vs in pairs if vs not in elim]
            for pick in itertools.combinations(rows, 2 * k):
                A = sp.Matrix([[r[0][j] for j in cols] for r in pick])
                det = sp.expand(A.det())
                if det == 0:
                    continue
                # y_E = −A⁻¹ (A_F y_F + b) = −adj(A)(A_F y_F + b)/det
                rhs = sp.Matrix([sum((r[0][index[v]] * v for v in free), sp.Integer(0)) + r[1] for r in pick])
                num = -A.adjugate() * rhs
                value = dict(zip([v for vs in elim for v in vs], num))
                out = []
                for s_, c_ in elim:
                    circle = sp.expand(value[s_]**2 + value[c_]**2 - det**2)
                    for fs, fc in free_pairs:
                        circle = sp.expand(sp.rem(circle, fs**2 + fc**2 - 1, fs))
                    if circle == 0:
                        continue
                    P = sp.Poly(circle, *free) if free else None
                    if P is None or P.total_degree() > 1:
                        break
                    out.append(([P.coeff_monomial(v) if v in free else sp.Integer(0) for v in rest],
                                P.coeff_monomial(1)))
                else:
                    if len(out) >= needed:
                        return out, free_pairs
    return [], []


def completion_error(dae, solved_block: TriangularBlock, plan: Completion, points, scales):
    """The completion's error at swept configurations (rows of ``points``),
    relative to the unit scales, in double precision, with the root of
    the first step nearest the true value (as ``sequence_evaluator`` picks
    roots); inf where its linear system is singular."""
    return completion_evaluator(dae, solved_block, plan, scales)(points)


def completion_evaluator(dae, solved_block: TriangularBlock, plan: Completion, scales):
    """``completion_error`` as a function of (points, hard), lambdified once:
    ``hard`` as ``sequence_evaluator``'s (the hard points' values, default
    ``dae``'s)."""
    knowns = [*solved_block.abstractions, *solved_block.known_ring]
    known_fn = known_function(dae, solved_block)
    default_hard = hard_point_values(dae)
    step = solved_block.steps[0]
    if plan.degree == 2:
        a2, a1, a0 = step.coeffs
        quad = sp.lambdify(knowns, [a2, a1, a0, plan.disc_root if plan.disc_root is not None
                                    else sp.sqrt(sp.Max(a1**2 - 4 * a2 * a0, 0))], "numpy")
    else:
        # from the coefficients' terms, as ``sequence_evaluator``: a sextic's
        # are thousands of terms
        coeff_fns = [poly_evaluator(c_, knowns) for c_ in step.coeff_polys]
    solved = [plan.variable] + ([plan.partner] if plan.partner is not None else [])
    rows = sp.lambdify([*knowns, *solved], [[*r[0], r[1]] for r in plan.rows], "numpy")
    if plan.refine is not None:
        (ps, pc), (fs, fc), drows = plan.refine
        drow_fn = sp.lambdify([*knowns, *solved], [[*r[0], r[1]] for r in drows], "numpy")
        i_fs, i_fc = plan.rest.index(fs), plan.rest.index(fc)
    vscale = {v: scale for _, _, vs, scale in block_layout(solved_block, scales) for v in vs}

    def evaluate(points, hard=None):
        hard = default_hard if hard is None else hard
        truth = _true_values(dae, solved_block, points)
        err = np.zeros(len(points))
        for j, q in enumerate(points):
            kv = [float(x) for x in np.broadcast_to(known_fn(0.0, *q, *hard), (len(knowns),))] if knowns else []
            target = truth[plan.variable][j]
            if plan.degree == 2:
                A2, A1, A0, r = (float(x) for x in quad(*kv))
                x = min(((-A1 + r) / (2 * A2), (-A1 - r) / (2 * A2)), key=lambda z: abs(z - target))
            else:
                co = [complex(f(*[np.array([v]) for v in kv], scale=False)[0][0]) for f in coeff_fns]
                if not (co[0] != 0 and all(np.isfinite(co))):
                    err[j] = np.inf
                    continue
                x = min(np.roots(co), key=lambda z: abs(z - target)).real
            vals = {plan.variable: x}
            if plan.partner is not None:
                w = math.sqrt(max(1.0 - x * x, 0.0))
                vals[plan.partner] = w if abs(w - truth[plan.partner][j]) <= abs(-w - truth[plan.partner][j]) else -w
            if plan.rest:
                M = np.array(rows(*kv, *vals.values()), dtype=float).reshape(len(plan.rest), len(plan.rest) + 1)
                n = len(plan.rest)
                try:
                    sol = np.linalg.solve(M[:, :-1], -M[:, -1])
                    # the run time's refinement (codegen_kinematics.completion_cases):
                    # Newton on the left-over circle through the linear system
                    for _ in range(ROOT_REFINEMENTS if plan.refine is not None else 0):
                        D = np.array(drow_fn(*kv, *vals.values()), dtype=float).reshape(n, n + 1)
                        dy = np.linalg.solve(M[:, :-1], -(D[:, :-1] @ sol + D[:, -1]))
                        g = sol[i_fs] ** 2 + sol[i_fc] ** 2 - 1.0
                        du = -g / (2.0 * (sol[i_fs] * dy[i_fs] + sol[i_fc] * dy[i_fc]))
                        s1, c1 = vals[ps] + du * vals[pc], vals[pc] - du * vals[ps]
                        norm = 1.0 / math.sqrt(s1 * s1 + c1 * c1)
                        vals[ps], vals[pc] = s1 * norm, c1 * norm
                        M = np.array(rows(*kv, *vals.values()), dtype=float).reshape(n, n + 1)
                        sol = np.linalg.solve(M[:, :-1], -M[:, -1])
                except np.linalg.LinAlgError:
                    err[j] = np.inf
                    continue
                vals.update(zip(plan.rest, sol))
            err[j] = max(abs(v - truth[k][j]) / vscale[k] for k, v in vals.items())
        return np.where(np.isfinite(err), err, np.inf)
    return evaluate
