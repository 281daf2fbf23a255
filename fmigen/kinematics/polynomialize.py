"""Constraints as polynomials: each angle's cosine and sine become two
variables on the unit circle (``poly_variables``, with the sums of angles a
joint chain shares, ``angle_plan``), and the block's equations integer
polynomials in them (``polynomialize``, ``abstract``), what the Gröbner
basis and the triangular sequence are computed from.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from fmigen.derive.dae import DAE
from fmigen.model import ModelError
from fmigen.derive.partition import Block


@dataclass
class AnglePlan:
    """A block's change of angle variables (``angle_plan``): the polynomial
    variables of unknown angle ``i`` are the sine and cosine of the angle
    ψ_i = ``combos[i]`` (coordinate index -> integer coefficient; unknowns
    and knowns) instead of q_i's own."""
    combos: dict                  # unknown coordinate index -> {coordinate index: coefficient}
    names: dict                   # unknown coordinate index -> the name of ψ_i


def _integer_combination(arg, index):
    """{coordinate index: integer coefficient} with arg = Σ coeff·q, or None
    (a constant, a non-integer multiple, anything not linear in q)."""
    terms = {}
    for a in sp.Add.make_args(arg):
        coeff, rest = a.as_coeff_Mul()
        if rest not in index or not coeff.is_Integer:
            return None
        terms[index[rest]] = terms.get(index[rest], 0) + int(coeff)
    return {k: c for k, c in terms.items() if c}


def angle_plan(dae: DAE, block: Block) -> AnglePlan | None:
    """The angle sums of a block and the angles its polynomial variables are
    the sines and cosines of, or None when those are the unknowns' own
    (every argument of sin/cos a single coordinate: every low-level
    mechanism so far).

    Why: with relative joint angles (a plate's ``A`` measured from its
    hanger's ``psi``) the loop constraints read cos(psi + A); expanded in
    s_psi, c_psi, s_A, c_A they are bilinear, and the lex basis of the
    Stephenson six-bar in those did not finish in 60 s, while in the
    absolute angles (one s/c pair per argument) it is the low-level model's
    (~1 s).  So the block is solved for ψ = T q_u + S q_k: each row of the
    integer matrix T (on the unknown angles) is the unknown part of an
    argument, S adds the known part the argument carries along (θ + C: the
    rod's absolute angle, as in the low-level model, instead of cos θ and
    sin θ as four abstracted coefficients of s_C and c_C); rows missing for a
    full rank are unit vectors.  T must be unimodular, so the unknowns are
    integer combinations of ψ and knowns (``recover``: differences by angle
    addition, no division).  Arguments whose unknown part is no row (more
    distinct sums than unknown angles) are expanded in the ψ by
    ``expand_trig`` as before; when no unimodular T exists the block keeps
    its own angles, and so does a mechanism that sets ``angle_sums = False``."""
    if not dae.mechanism.angle_sums:
        return None
    index = {q: k for k, q in enumerate(dae.q_sym)}
    unknowns = list(block.unknowns)
    exprs = [dae.Phi[j] for j in block.equations]
    args = sorted({a.args[0] for e in exprs for a in e.atoms(sp.sin, sp.cos)}, key=sp.default_sort_key)
    # unknowns that occur outside sin/cos (lengths, or an angle entering
    # linearly) stay polynomial variables of their own
    inside = {f: sp.Dummy() for e in exprs for f in e.atoms(sp.sin, sp.cos)}
    bare = {index[s] for e in exprs for s in e.xreplace(inside).free_symbols if s in index}
    counts: dict = {}                  # unknown part -> {known part: occurrences}
    first_seen = []
    for arg in args:
        combo = _integer_combination(arg, index)
        if combo is None:
            continue
        u = tuple(combo.get(i, 0) for i in unknowns)
        if not any(u) or any(combo.get(i) for i in bare & set(unknowns)):
            continue
        known = tuple(sorted((k, c) for k, c in combo.items() if k not in unknowns))
        if next(c for c in u if c) < 0:              # sin(−x) = −sin x: one sign per direction
            u = tuple(-c for c in u)
            known = tuple((k, -c) for k, c in known)
        occurrences = sum(len([a for a in e.atoms(sp.sin, sp.cos) if a.args[0] in (arg, -arg)]) for e in exprs)
        counts.setdefault(u, {})
        counts[u][known] = counts[u].get(known, 0) + occurrences
        if u not in first_seen:
            first_seen.append(u)
    angles = [k for k, i in enumerate(unknowns) if any(u[k] for u in counts)]
    if all(sum(map(abs, u)) == 1 and set(counts[u]) == {()} for u in counts):
        return None
    # rows: the most frequent directions first, greedily while independent
    rows = []
    for u in sorted(first_seen, key=lambda u: (-sum(counts[u].values()), sum(map(abs, u)), first_seen.index(u))):
        if sp.Matrix([list(r) for r in rows + [u]]).rank() == len(rows) + 1:
            rows.append(u)
    for k in angles:
        unit = tuple(int(j == k) for j in range(len(unknowns)))
        if len(rows) < len(angles) and sp.Matrix([list(r) for r in rows + [unit]]).rank() == len(rows) + 1:
            rows.append(unit)
    T = sp.Matrix([[r[k] for k in angles] for r in rows])
    if T.shape != (len(angles), len(angles)) or abs(T.det()) != 1:
        return None
    # each row stands in for one unknown angle (its coordinate in the
    # layout): a matching on T's non-zeros, unit rows to their own angle
    match = _row_matching(T)
    combos, names = {}, {}
    taken = {dae.names[i] for i in range(dae.n)} | {str(s) for s in dae.Phi.free_symbols}
    for r, row in enumerate(rows):
        i = unknowns[angles[match[r]]]
        parts = counts.get(row, {(): 0})
        known = max(parts, key=lambda kp: (parts[kp], kp == ()))     # the commonest offset; none on a tie
        combo = {unknowns[k]: c for k, c in enumerate(row) if c}
        combo.update(dict(known))
        combo = {k: combo[k] for k in sorted(combo)}
        combos[i] = combo
        if combo == {i: 1}:
            names[i] = dae.names[i]
            continue
        name = "_".join(("m" if c < 0 else "") + (str(abs(c)) if abs(c) != 1 else "") + dae.names[k]
                        for k, c in combo.items())
        while name in taken:
            name += "_"
        taken.add(name)
        names[i] = name
    return AnglePlan(combos, names)


def _row_matching(T):
    """row -> column with T[row, column] ≠ 0, a perfect matching (exists: T
    is invertible); a unit row keeps its own column."""
    n = T.shape[0]
    order = sorted(range(n), key=lambda r: sum(1 for x in T.row(r) if x))

    def extend(k, used, out):
        if k == n:
            return out
        r = order[k]
        for col in range(n):
            if T[r, col] and col not in used:
                got = extend(k + 1, used | {col}, {**out, r: col})
                if got is not None:
                    return got
        return None
    return extend(0, frozenset(), {})


def poly_variables(dae: DAE, block: Block):
    """(variables in default order, substitution, recovery, circle identities,
    expanded constraints, angle sums ``{i: (s, c, combination)}``)."""
    plan = angle_plan(dae, block)
    if plan is not None:
        return _poly_variables_summed(dae, block, plan)
    subs, recover, circles, angle_vars, length_vars = {}, {}, [], [], []
    exprs = [sp.expand_trig(dae.Phi[j]) for j in block.equations]
    for i in block.unknowns:
        q = dae.q_sym[i]
        if any(e.has(sp.sin(q)) or e.has(sp.cos(q)) for e in exprs):
            _own_pair(q, i, subs, circles, angle_vars, recover)
        else:
            length_vars.append(q)
            recover[i] = q
    return angle_vars + length_vars, subs, recover, circles, exprs, {}


def _own_pair(q, i, subs, circles, angle_vars, recover):
    """Angle ``q`` (coordinate ``i``) as its own pair s_q, c_q on the unit
    circle, recovered by atan2."""
    s, c = sp.Symbol(f"s_{q}"), sp.Symbol(f"c_{q}")
    subs[sp.sin(q)], subs[sp.cos(q)] = s, c
    circles.append(s**2 + c**2 - 1)
    angle_vars += [c, s]
    recover[i] = sp.atan2(s, c)


def _poly_variables_summed(dae: DAE, block: Block, plan: AnglePlan):
    """``poly_variables`` in the angles of ``plan``: every sin/cos argument
    rewritten as an integer combination of the ψ plus a known remainder
    (zero for a row's own argument), expanded, sin ψ -> s_ψ; each unknown
    angle recovered as atan2 of its sine and cosine by angle addition from
    the ψ's and the knowns' (exact: q_u = T⁻¹(ψ − S q_k))."""
    unknowns = [i for i in block.unknowns if i in plan.combos]
    psi = {i: sp.Symbol(plan.names[i], real=True) for i in unknowns}
    s_of = {i: sp.Symbol(f"s_{plan.names[i]}") for i in unknowns}
    c_of = {i: sp.Symbol(f"c_{plan.names[i]}") for i in unknowns}
    # ψ = T q_u + S q_k  =>  q_u = T⁻¹ ψ − T⁻¹ S q_k
    T = sp.Matrix([[plan.combos[r].get(i, 0) for i in unknowns] for r in unknowns])
    S = sp.Matrix([[sum(c * dae.q_sym[k] for k, c in plan.combos[r].items() if k not in unknowns)]
                   for r in unknowns])
    Tinv = T.inv()
    q_of = {i: sp.expand((Tinv * (sp.Matrix([psi[r] for r in unknowns]) - S))[k]) for k, i in enumerate(unknowns)}
    to_psi = {dae.q_sym[i]: q_of[i] for i in unknowns}
    trig_psi = {}
    for i in unknowns:
        trig_psi[sp.sin(psi[i])], trig_psi[sp.cos(psi[i])] = s_of[i], c_of[i]
    exprs = []
    for j in block.equations:
        e = dae.Phi[j]
        e = e.xreplace({f: f.func(sp.expand(f.args[0].xreplace(to_psi))) for f in e.atoms(sp.sin, sp.cos)})
        exprs.append(sp.expand_trig(e).xreplace(trig_psi))
    subs, recover, circles, angle_vars, length_vars, sums = {}, {}, [], [], [], {}
    for i in block.unknowns:
        q = dae.q_sym[i]
        if i in psi:
            s, c = s_of[i], c_of[i]
            circles.append(s**2 + c**2 - 1)
            angle_vars += [c, s]
            recover[i] = sp.atan2(sp.expand_trig(sp.sin(q_of[i])).xreplace(trig_psi),
                                  sp.expand_trig(sp.cos(q_of[i])).xreplace(trig_psi))
            if plan.combos[i] != {i: 1}:     # (a row ψ = q_i is q_i's own pair: atan2(s, c))
                sums[i] = (s, c, dict(plan.combos[i]))
        elif any(e.has(sp.sin(q)) or e.has(sp.cos(q)) for e in exprs):
            # an angle left out of T because it also occurs outside sin/cos:
            # its own s/c, as without sums (``polynomialize`` then names the
            # constraint as not polynomial)
            _own_pair(q, i, subs, circles, angle_vars, recover)
        else:
            length_vars.append(q)
            recover[i] = q
    return angle_vars + length_vars, subs, recover, circles, exprs, sums


def refuse_floats(expr, constraint: str):
    """The DAE makes every float literal of a constraint exact
    (``floats.exact_floats``); a float that still reaches the Gröbner stage
    would have to be approximated, i.e. the kinematics would solve another
    constraint, so it is refused, named."""
    floats = sorted(expr.atoms(sp.Float), key=float)
    if floats:
        raise ModelError(f"constraint '{constraint}' contains the float {floats[0]} after conversion; the "
                         "Gröbner stage needs exact coefficients: declare the value as a structural parameter "
                         f"(m.parameter('name', {float(floats[0])!r}, 'm')), which is converted exactly")
    return expr


def polynomialize(dae: DAE, block: Block, order: list[str] | None = None):
    """Polynomial form of a block.  Returns (unknown variables in order,
    polynomials, circle identities, recovery, known ring variables, angle
    sums: unknown angle -> (s, c, combination) where its variables are those
    of an angle sum, ``angle_plan``)."""
    variables, subs, recover, circles, exprs, sums = poly_variables(dae, block)
    known_ring = {}
    if order:
        by_name = {str(v): v for v in variables}
        missing = set(by_name) - set(order)
        if missing:
            raise ModelError(f"Gröbner order {order} misses variables {sorted(missing)}")
        variables = [by_name[n] for n in order if n in by_name]
        # Names in the order that are not unknowns must be knowns of this
        # block: they stay polynomial variables, lowest in the order.
        for name in order:
            if name in by_name:
                continue
            for i in block.knowns:
                q = dae.q_sym[i]
                if name == str(q):
                    known_ring[q] = q
                elif name == f"s_{q}":
                    v = sp.Symbol(name)
                    subs[sp.sin(q)] = v
                    known_ring[v] = sp.sin(q)
                elif name == f"c_{q}":
                    v = sp.Symbol(name)
                    subs[sp.cos(q)] = v
                    known_ring[v] = sp.cos(q)
    # (the ψ of angle sums must not be left over either)
    unknown_q = {dae.q_sym[i] for i in block.unknowns} | {sp.Symbol(str(s)[2:], real=True)
                                                         for s, _, _ in sums.values()}
    polys = []
    for j, e in zip(block.equations, exprs):
        p = refuse_floats(sp.expand(e.xreplace(subs)), dae.constraint_names[j])
        leftover = p.free_symbols & (unknown_q - set(variables))
        if leftover or any(a.has(*variables) and not a.is_Symbol for a in sp.preorder_traversal(p)
                           if isinstance(a, sp.Function)):
            raise ModelError(
                f"constraint '{dae.constraint_names[j]}' is not polynomial in sin/cos of the angles "
                f"and in the lengths of {sorted(str(dae.q_sym[i]) for i in block.unknowns)} "
                f"(left over: {sorted(map(str, leftover)) or 'a non-polynomial function'})")
        polys.append(p)
    return variables, polys, circles, recover, known_ring, sums


def abstract(polys, variables, counter):
    """Replace the known part of each coefficient by a fresh symbol K_j.

    A coefficient c0 + g·r (c0 its constant terms, g the rational content
    of the rest, r primitive) becomes c0 + g·K_j with K_j = r: the K_j are
    the primitive, *centred* known quantities (cos θ, not 3 − cos θ / 2).
    Why: the basis is then a polynomial in knowns that vary around zero on a
    unit scale, and its evaluation in double precision cancels far less (a
    K^15 term of K ∈ [2.5, 3.5] is ~1e7 times larger than what survives
    the cancellation; of K ∈ [−1, 1] it is at most 1).  The ideal is the same
    (an affine change of parameters), so is every solution; coefficients
    that differ only in their constant or content share one K."""
    table: dict[sp.Expr, sp.Symbol] = {}
    out = []
    for p in polys:
        P = sp.Poly(p, *variables)
        new = 0
        for monom, coeff in P.terms():
            # an exact rational stays as it is: nsimplify may turn one into
            # radicals (106397/250000 -> ...·10^(1/6)·7^(5/6)/..., which
            # Singular cannot read)
            coeff = sp.nsimplify(coeff) if coeff.is_Number and not coeff.is_Rational else coeff
            if not coeff.free_symbols:
                k = coeff
            else:
                const, rest = sp.expand(coeff).as_independent(*coeff.free_symbols, as_Add=True)
                content, prim = rest.as_content_primitive()
                if prim not in table and -prim in table:
                    content, prim = -content, -prim
                if prim not in table:
                    counter[0] += 1
                    table[prim] = sp.Symbol(f"K_{counter[0]}")
                k = const + content * table[prim]
            new += k * sp.Mul(*[v**e for v, e in zip(variables, monom)])
        out.append(sp.expand(new))
    return out, {sym: expr for expr, sym in table.items()}
