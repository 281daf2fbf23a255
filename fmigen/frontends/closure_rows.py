"""Which closure equations a joint model keeps: the loop closures and shared
frames give more rows than the loops have independent constraints, and a
regular choice of them, numerically at the start pose, is what the
mechanism is built from.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from fmigen.derive import lambdify_numpy
from fmigen.differentiation import derivative, is_plain
from fmigen.floats import rational
from fmigen.model import Constraint, ModelError, t


#: numerical tolerances of the redundancy and zero tests (relative to the
#: size of the Jacobian entries)
_ZERO_TOL = 1e-10
_RANK_TOL = 1e-9


class _Numeric:
    def __init__(self, exprs, coords, params):
        self.q = [sp.Symbol(f"_q{i}", real=True) for i in range(len(coords))]
        plain = {c.symbol: s for c, s in zip(coords, self.q)}
        exprs = [sp.sympify(e).xreplace(plain).xreplace(params) for e in exprs]
        stray = set().union(*(e.free_symbols for e in exprs)) - set(self.q) - {t} if exprs else set()
        if stray:
            raise ModelError(f"closure equations use {sorted(map(str, stray))}: only coordinates and "
                             "structural parameters may enter a joint's geometry")
        self.exprs = [e.subs(t, 0) for e in exprs]
        self.m = len(self.exprs)
        vec = sp.Matrix(self.exprs) if self.exprs else sp.zeros(0, 1)
        # a joint system's first numpy lambdify (the DAE's come later): its
        # namespace without numpy's lazy submodules (lambdify_numpy)
        lambdify_numpy.prepare()
        self._f = sp.lambdify(self.q, vec, "numpy", cse=True)
        self._J = None

    def f(self, q):
        return np.array(self._f(*q), dtype=float).ravel()

    def J(self, q):
        if self._J is None:
            self._J = sp.lambdify(self.q, self._jacobian(), "numpy", cse=True)
        return np.array(self._J(*q), dtype=float).reshape(self.m, len(q))

    def _jacobian(self):
        """∂Φ/∂q, differentiating each row only by the coordinates it reads
        (the same entries as ``Matrix.jacobian``).  Why: built on first use
        and sparse, it no longer dominates loading a joint system — a
        closure row reads its own loop's coordinates only (the vehicle: 60
        rows of 75 coordinates; the dense Jacobian's 4,500 derivatives took
        most of the 3.1 s of constraint selection, and the first of the two
        systems selection builds, and the start check's, never read it)."""
        J = sp.zeros(self.m, len(self.q))
        index = {s: i for i, s in enumerate(self.q)}
        memos = {s: {} for s in self.q}
        for j, e in enumerate(self.exprs):
            for s in e.free_symbols:
                if s in index:
                    J[j, index[s]] = derivative(e, s, memos[s]) if is_plain(e) else e.diff(s)
        return J


def _project(num: _Numeric, q0, free, iterations=60):
    """Gauss–Newton (minimum-norm steps over the ``free`` coordinates) from
    q0 onto Φ = 0; returns (q, |Φ|∞)."""
    q = np.array(q0, dtype=float)
    res = np.abs(num.f(q)).max(initial=0.0)
    for _ in range(iterations):
        if res < 1e-13:
            break
        J = num.J(q)[:, free]
        step, *_ = np.linalg.lstsq(J, -num.f(q), rcond=None)
        lam = 1.0
        while lam > 1e-4:
            trial = q.copy()
            trial[free] += lam * step
            r = np.abs(num.f(trial)).max(initial=0.0)
            if r < res:
                q, res = trial, r
                break
            lam /= 2
        else:
            break
    return q, res


def _greedy_rows(J, tol):
    keep, rank = [], 0
    for j in range(J.shape[0]):
        r = np.linalg.matrix_rank(J[keep + [j]], tol=tol) if J.shape[1] else 0
        if r > rank:
            keep.append(j)
            rank = r
    return keep


def _select_constraints(system, m, coords, candidates):
    """Drop identically zero and redundant closure equations; check the DOF;
    leave the dependent starts at the projected start.  With
    ``system.preferred_independent`` (and no ``independent``): those
    coordinates, completed by pivoted QR, become ``m.independent`` when
    Φ_d is regular at the start with them kept at their starts (those that
    have one); otherwise the choice is left to ``partition`` as without it,
    and ``m.independent_note`` says why."""
    names = [nm for nm, _ in candidates]
    exprs = [e for _, e in candidates]
    # a name that is no joint coordinate at all is a mistake in the input,
    # not a choice to fall back from (as a cut joint's coordinate is)
    known = {c.name for c in system.coordinates}
    for name in system.preferred_independent or []:
        if name not in known:
            raise ModelError(f"preferred independent coordinate '{name}' is no coordinate of "
                             f"'{system.name}' (have {sorted(known)})")
    preferred = list(system.preferred_independent or []) if system.independent is None else []
    attempt = None
    if preferred:
        try:
            # kept where they have a start (an MJCF keyframe's); one without
            # is projected like any other
            kept = {c.name for c in coords if c.name in preferred and c.start is not None}
            attempt = _closure_rows(system, m, coords, candidates, kept)
        except ModelError as e:
            m.independent_note = (f"the preferred independent (actuated) coordinates {preferred} are not "
                                  f"taken: with them kept at their starts, {e}; the best-conditioned set "
                                  "at the start is taken instead")
        else:
            indep, why = _regular_choice(preferred, coords, *attempt[:4])
            if indep is None:
                m.independent_note = (f"the preferred independent (actuated) coordinates {preferred} are not "
                                      f"taken: {why}; the best-conditioned set at the start is taken instead")
                attempt = None
            else:
                m.independent = indep
    qs, chosen, dof, _, alive = attempt or _closure_rows(system, m, coords, candidates, set(system.independent or []))

    for k in chosen:
        m.constraint(names[k], exprs[k])
    # the rest of the closure that is not identically zero: redundant at the
    # start, but not necessarily everywhere on the motion (model.py)
    m.redundant_constraints = [Constraint(names[k], sp.sympify(exprs[k])) for k in alive if k not in chosen]
    m.dof = dof
    # a coordinate without a start gets the projected value as its guess
    for c, v in zip(coords, qs):
        if c.start is None:
            m.coordinate_by_name(c.name).start = float(v)
    return qs


def _closure_rows(system, m, coords, candidates, fixed):
    """(the start projected onto the closure with the coordinates ``fixed``
    kept, the independent closure equations' indices, the degrees of freedom,
    Φ_q of those equations there, the indices of all equations that are not
    identically zero); errors when the loops do not close or
    the DOF disagrees with what the system declares."""
    params = {p.symbol: rational(p.value, system.float_rule) for p in system.parameters}
    n = len(coords)
    exprs = [e for _, e in candidates]
    # identically zero: exact zeros first, then numerically at generic points
    nonzero = [k for k, e in enumerate(exprs) if sp.sympify(e) != 0]
    num = _Numeric([exprs[k] for k in nonzero], coords, params)
    rng = np.random.default_rng(12)
    generic = [rng.uniform(-3, 3, n) for _ in range(3)]
    values = np.array([num.f(q) for q in generic]).reshape(3, -1) if num.m else np.zeros((3, 0))
    scale = max(1.0, *(abs(float(p.value)) for p in system.parameters if not p.tunable), 1.0)
    alive = [nonzero[i] for i in range(num.m) if np.abs(values[:, i]).max() > _ZERO_TOL * scale]
    if alive != nonzero:   # (the lambdified Jacobian: seconds for the vehicle's 60 equations)
        num = _Numeric([exprs[k] for k in alive], coords, params)
    q0 = np.array([m.coordinate_by_name(c.name).start for c in coords])
    free = [i for i, c in enumerate(coords) if c.name not in fixed]
    if num.m:
        qs, res = _project(num, q0, free)
        # a poor guess (0 for every coordinate without a start) can stall
        # Gauss–Newton in a local minimum: restart the unstarted coordinates
        # from seeded random values (deterministic)
        unstarted = [i for i, c in enumerate(coords) if c.start is None and i in free]
        for _ in range(30 if unstarted else 0):
            if res <= 1e-10 * scale:
                break
            trial = q0.copy()
            trial[unstarted] = rng.uniform(-math.pi, math.pi, len(unstarted)) * \
                np.array([1.0 if coords[i].angle else scale for i in unstarted])
            qt, rt = _project(num, trial, free)
            if rt < res:
                qs, res = qt, rt
        if res > 1e-8 * scale:
            raise ModelError(f"'{system.name}': the loops cannot be closed near the start guesses "
                             f"(closure residual {res:.3g} after Gauss–Newton from the starts); check the "
                             "geometry or give starts (guesses) of the dependent coordinates")
        # the rank on the manifold: at the start and at two nearby assemblies
        points = [qs]
        for k in range(2):
            qk, rk = _project(num, qs + rng.normal(0, 0.05, n) * (np.array([i in free for i in range(n)])),
                              free)
            if rk < 1e-9 * scale:
                points.append(qk)
        ranks = [np.linalg.matrix_rank(num.J(p), tol=_RANK_TOL * max(1.0, np.abs(num.J(p)).max()))
                 for p in points]
        if ranks[0] < max(ranks):
            # Φ_q loses rank at the start only: a singular configuration (a
            # loop stretched or folded flat, a change point), not a redundant
            # constraint, which would lose it at the assemblies next to it too
            raise ModelError(f"'{system.name}': the start is a singular configuration: the closure equations "
                             f"have rank {ranks[0]} there and {max(ranks)} at the assemblies next to it (a loop "
                             "stretched or folded flat, or a change point), so the dependent coordinates are not "
                             "determined by the independent ones; start the independent coordinates "
                             f"({', '.join(c.name for c in coords if c.name in fixed) or 'none fixed'}) away from it")
        best = points[int(np.argmax(ranks))]
        J = num.J(best)
        rows = _greedy_rows(J, _RANK_TOL * max(1.0, np.abs(J).max()))
    else:
        qs, rows, J = q0, [], np.zeros((0, n))
    chosen = [alive[i] for i in rows]
    r = len(chosen)
    dof = n - r
    if system.dof is not None and dof != system.dof:
        what = "fewer" if dof < system.dof else "more"
        raise ModelError(f"wrong DOF count in '{system.name}': {n} joint coordinates and {r} independent "
                         f"closure equations (of {len(candidates)}, {len(candidates) - len(alive)} identically "
                         f"zero, {len(alive) - r} redundant) give {dof} degrees of freedom, {what} than the "
                         f"declared dof={system.dof}")
    if dof <= 0:
        raise ModelError(f"'{system.name}' is over-constrained: {n} joint coordinates and {r} independent "
                         "closure equations leave no motion")
    if system.independent is not None and len(system.independent) != dof:
        raise ModelError(f"wrong DOF count in '{system.name}': independent names {len(system.independent)} "
                         f"coordinates ({', '.join(system.independent)}) but the mechanism has {dof} degrees "
                         "of freedom")
    # Φ_q of the kept equations at the start itself (the rows were chosen
    # where the rank is largest, which may be a nearby assembly)
    return qs, chosen, dof, (num.J(qs) if num.m else J)[rows], alive


def _regular_choice(preferred, coords, qs, chosen, dof, J):
    """(independent coordinate names, None): ``preferred`` and as many more
    as the degrees of freedom need, by pivoted QR on the other columns of
    Φ_q at the start ``J``, when Φ_d is regular there; (None, why) otherwise."""
    names = [c.name for c in coords]
    unknown = [p for p in preferred if p not in names]
    if unknown:
        return None, f"{unknown} belong to a cut joint, whose coordinates are no coordinates of the model"
    if len(preferred) > dof:
        return None, f"{len(preferred)} of them for {dof} degree(s) of freedom"
    rest = [i for i, nm in enumerate(names) if nm not in preferred]
    r = J.shape[0]
    if r:
        tol = _RANK_TOL * max(1.0, np.abs(J).max())
        if np.linalg.matrix_rank(J[:, rest], tol=tol) < r:
            return None, "Φ_d is singular at the start with them independent"
        # scipy here, not at the top: a conversion with its independent
        # coordinates declared never takes this choice, and importing scipy
        # was a large part of such a conversion at a new start
        import scipy.linalg
        _, _, piv = scipy.linalg.qr(J[:, rest], pivoting=True)
        dependent = {rest[k] for k in piv[:r]}
    else:
        dependent = set()
    # in model order, as pivoted QR's choice is
    return [nm for i, nm in enumerate(names) if i not in dependent], None


def _shared_frames(system, m, coords, cut, frames, rows, loop_rows, tree_links):
    """{cut joint name: the body whose frame its closure rows are written
    in}: ``frames`` (each loop's lowest common body), except that the loops
    of one coupled block (a block of the block-triangular structure, as
    ``partition`` will find it) that close in different frames all get one:
    of their frames, the one in which the fewest of their rows contain a
    coordinate the block does not solve for (nearest ground on a tie).

    Why: a loop's rows read every body's angle relative to the body it
    closes in.  Two coupled loops closing in different bodies read one
    link's angle once relative and once absolute (the Stephenson I six-bar:
    its floating four-bar closes in the crank's frame, the plate's leg to
    ground in the world frame), so the block's ring mixes cos A with
    cos(θ + A), the known crank angle multiplies unknowns, and the lex basis
    did not finish within Singular's 600 s.  In one frame every angle is
    relative to the same body and the angle sums are consistent
    (``polynomialize.angle_plan``).  Rows free of knowns have constant
    coefficients, so the frame that keeps the most of them gives the basis
    the fewest parameters: the six-bar's four-bar loop is constant in the
    crank's frame, where only the third leg's ground pivot moves (its basis
    takes seconds), while in the world frame both crank pivots move too.
    Loops in blocks solved one after another keep their own frames: each
    block's ring is consistent already.

    A frame is only taken where the rows written in it contain no
    coordinate of a later block (the block structure stays as it was).  The
    blocks need the independent coordinates: the declared ones, else as
    ``_regular_choice`` takes them at the start (the preferred ones
    completed by pivoted QR).  When the start does not close or the
    structure is singular, the frames stay: the selection reports that."""
    if len(set(frames.values())) < 2:
        return frames
    candidates = [row for j in cut for row in rows[j.name][0]]
    owner = [j.name for j in cut for _ in rows[j.name][0]]
    try:
        qs, chosen, dof, J, _ = _closure_rows(system, m, coords, candidates, set(system.independent or []))
    except ModelError:
        return frames
    if system.independent is not None:
        independent = set(system.independent)
    else:
        names, _ = _regular_choice(list(system.preferred_independent or []), coords, qs, chosen, dof, J)
        if names is None:
            names, _ = _regular_choice([], coords, qs, chosen, dof, J)
        if names is None:
            return frames
        independent = set(names)
    from types import SimpleNamespace
    from fmigen.derive.partition import block_decomposition
    plain = {c.symbol: sp.Symbol(f"_q{i}") for i, c in enumerate(coords)}
    structure = SimpleNamespace(m=len(chosen), q_sym=list(plain.values()),
                                Phi=[sp.sympify(candidates[k][1]).xreplace(plain) for k in chosen],
                                constraint_names=[candidates[k][0] for k in chosen])
    indep = [i for i, c in enumerate(coords) if c.name in independent]
    try:
        blocks = block_decomposition(structure, indep, [i for i in range(len(coords)) if i not in indep])
    except ModelError:
        return frames
    joints = {j.name: j for j in cut}
    order = [j.name for j in cut]

    def used(e):
        return {i for i, c in enumerate(coords) if e.has(c.symbol)}

    out, solved = dict(frames), set(indep)
    for b in blocks:
        unknowns = set(b.unknowns)
        allowed = solved | unknowns
        solved |= unknowns
        owners = sorted({owner[chosen[k]] for k in b.equations}, key=order.index)
        # a joint whose kept rows are split over blocks keeps its frame
        if any(owner[chosen[k]] in owners for k in range(len(chosen)) if k not in b.equations):
            continue
        options = sorted({frames[o] for o in owners}, key=lambda f: (tree_links.depth(f), f))
        if len(options) < 2:
            continue
        best = None
        for frame in options:
            known_rows, fits = 0, True
            for o in owners:
                for _, e in (rows[o][0] if frames[o] == frame else loop_rows(joints[o], frame)[0]):
                    u = used(e)
                    fits &= u <= allowed
                    known_rows += bool(u - unknowns)
            if fits and (best is None or known_rows < best[0]):
                best = (known_rows, frame)
        if best is not None:
            out.update({o: best[1] for o in owners})
    return out
