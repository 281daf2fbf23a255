"""Stage 5 — triangular: each constraint block becomes a recursive solution
sequence q_d = g(q_i) by a lex Gröbner basis.

Per block:

1. *Polynomialize.*  For every unknown angle x, sin x -> s_x and cos x -> c_x
   and s_x² + c_x² − 1 is added; unknown lengths stay as they are.  Anything
   else (sin 2x is expanded first; exp x, sqrt x, x·sin x ...) is an error that
   names the constraint.
2. *Abstract.*  Each coefficient (w.r.t. the unknowns' monomials) that depends
   on known quantities (independent coordinates, earlier blocks, time) becomes
   a fresh symbol K_j.  The basis is then computed over Q(K), which keeps it
   tiny: a four-bar loop takes milliseconds instead of expanding cos θ terms.
3. *Gröbner basis* in lex order, unknowns' polynomial variables highest
   first as the mechanism (or the default: declaration order, c_x ≻ s_x)
   gives them.
4. *Extract*, last variable first: for each variable the basis element of
   smallest degree in it that contains no higher variable.  Degree 1 is an
   explicit formula; degree 2 a square root whose sign (the assembly branch)
   is fixed at build time from the start configuration.
5. *Recover* coordinates: angle = atan2(s_x, c_x), length = its variable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from .dae import DAE
from .groebner import GroebnerTimeout, groebner_lex
from .model import ModelError, t
from .partition import Block, Partition


@dataclass
class Step:
    variable: sp.Symbol
    degree: int
    coeffs: list[sp.Expr]        # highest power first; polynomials in K and lower variables
    poly: sp.Expr                # the basis element used
    sign: int = 1                # square-root branch for degree 2
    start: float = 0.0           # value at the start (warm start for degree > 2)

    @property
    def terms(self):
        return len(sp.Add.make_args(sp.expand(self.poly)))

    @property
    def max_coeff_digits(self):
        p = sp.Poly(self.poly, *sorted(self.poly.free_symbols, key=str))
        return max(len(str(abs(int(c)))) for c in p.coeffs())


@dataclass
class TriangularBlock:
    block: Block
    method: str                                  # "groebner" or "newton"
    variables: list[sp.Symbol]                   # unknown polynomial variables, highest first
    abstractions: dict[sp.Symbol, sp.Expr]       # K_j -> expression in known q and t
    steps: list[Step]                            # in solving order
    recover: dict[int, sp.Expr]                  # coordinate index -> expression in variables
    polys: list[sp.Expr] = field(default_factory=list)
    #: known quantities kept as (lowest) ring variables because the order
    #: names them, e.g. p_BC for the landing gear: symbol -> expression in q.
    known_ring: dict[sp.Symbol, sp.Expr] = field(default_factory=dict)
    #: why a block is solved by Newton ("forced by the mechanism", "Gröbner
    #: basis not finished in 60 s", ...)
    reason: str = ""
    #: Fixed number of Newton steps on the block's own equations after the
    #: sequence, when evaluating it in double precision loses digits (the
    #: landing gear's 264-digit coefficients cancel to 1e-3 residuals); 0 when
    #: the sequence alone is exact to round-off.
    polish: int = 0
    #: Newton blocks of an alternative formulation (``kinematics`` "newton" or
    #: "newton-loop", see ``triangularize``): absolute tolerance on the Newton
    #: step; None keeps the default 1e-14·(1 + max|q|) convergence test.
    tol: float | None = None


#: Kinematics formulations (``triangularize(kinematics=...)``, ``fmigen build
#: --kinematics``, ``fmigen bench``): "groebner" (default: triangular sequences,
#: Newton only where the mechanism forces it or the basis times out),
#: "newton" (one Newton iteration over all dependent coordinates, all
#: constraints as one block), "newton-loop" (Newton on each block separately).
KINEMATICS = ("groebner", "newton", "newton-loop")
DEFAULT_NEWTON_TOL = 1e-10


@dataclass
class Triangularization:
    blocks: list[TriangularBlock]
    partition: Partition


def poly_variables(dae: DAE, block: Block):
    """(variables in default order, substitution, recovery, circle identities)."""
    subs, recover, circles, angle_vars, length_vars = {}, {}, [], [], []
    exprs = [sp.expand_trig(dae.Phi[j]) for j in block.equations]
    for i in block.unknowns:
        q = dae.q_sym[i]
        trig = any(e.has(sp.sin(q)) or e.has(sp.cos(q)) for e in exprs)
        if trig:
            s, c = sp.Symbol(f"s_{q}"), sp.Symbol(f"c_{q}")
            subs[sp.sin(q)] = s
            subs[sp.cos(q)] = c
            circles.append(s**2 + c**2 - 1)
            angle_vars += [c, s]
            recover[i] = sp.atan2(s, c)
        else:
            length_vars.append(q)
            recover[i] = q
    return angle_vars + length_vars, subs, recover, circles, exprs


def rationalize(expr, tol=1e-6):
    """Floats to rationals: a short decimal stays exact (0.1 -> 1/10, 2.12 ->
    53/25: denominators up to 8 digits); any other float (a computed length,
    π, a decimal with a longer denominator) becomes the continued-
    fraction convergent with the fewest digits whose relative error is below
    ``tol`` (paper 000: < 1e-6, i.e. < 1 µm on a metre-sized mechanism), which
    keeps the Gröbner coefficients short."""
    def conv(f):
        x = float(f)
        r = sp.Rational(repr(x))
        if len(str(r.q)) <= 8:
            return r
        return best_rational(x, tol)
    return expr.xreplace({f: conv(f) for f in expr.atoms(sp.Float)})


def best_rational(x: float, tol: float) -> sp.Rational:
    """First continued-fraction convergent p/q of x with |p/q − x| ≤ tol·|x|."""
    from fractions import Fraction
    exact = Fraction(x)
    h0, h1, k0, k1 = 0, 1, 1, 0
    rest = exact
    while True:
        a = rest.numerator // rest.denominator
        h0, h1 = h1, a * h1 + h0
        k0, k1 = k1, a * k1 + k0
        if abs(Fraction(h1, k1) - exact) <= tol * abs(exact) or rest == a:
            return sp.Rational(h1, k1)
        rest = 1 / (rest - a)


def polynomialize(dae: DAE, block: Block, order: list[str] | None = None):
    """Polynomial form of a block.  Returns (unknown variables in order,
    polynomials, circle identities, recovery, known ring variables)."""
    variables, subs, recover, circles, exprs = poly_variables(dae, block)
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
    unknown_q = {dae.q_sym[i] for i in block.unknowns}
    polys = []
    for j, e in zip(block.equations, exprs):
        p = rationalize(sp.expand(e.xreplace(subs)))
        leftover = p.free_symbols & (unknown_q - set(variables))
        if leftover or any(a.has(*variables) and not a.is_Symbol for a in sp.preorder_traversal(p)
                           if isinstance(a, sp.Function)):
            raise ModelError(
                f"constraint '{dae.constraint_names[j]}' is not polynomial in sin/cos of the angles "
                f"and in the lengths of {sorted(str(dae.q_sym[i]) for i in block.unknowns)} "
                f"(left over: {sorted(map(str, leftover)) or 'a non-polynomial function'})")
        polys.append(p)
    return variables, polys, circles, recover, known_ring


def abstract(polys, variables, counter):
    """Replace each non-constant coefficient by a fresh symbol K_j."""
    table: dict[sp.Expr, sp.Symbol] = {}
    out = []
    for p in polys:
        P = sp.Poly(p, *variables)
        new = 0
        for monom, coeff in P.terms():
            coeff = sp.nsimplify(coeff) if coeff.is_Number else coeff
            if not coeff.free_symbols:
                k = coeff
            else:
                if coeff not in table and -coeff in table:
                    k = -table[-coeff]
                else:
                    if coeff not in table:
                        counter[0] += 1
                        table[coeff] = sp.Symbol(f"K_{counter[0]}")
                    k = table[coeff]
            new += k * sp.Mul(*[v**e for v, e in zip(variables, monom)])
        out.append(new)
    return out, {sym: expr for expr, sym in table.items()}


def extract(basis, variables, block_name) -> list[Step]:
    """Solution sequence for ``variables`` (unknowns, highest first); any
    lower ring variables are knowns."""
    steps = []
    for j in range(len(variables) - 1, -1, -1):
        v = variables[j]
        higher = set(variables[:j])
        cands = [g for g in basis if g.has(v) and not (g.free_symbols & higher)]
        if not cands:
            raise ModelError(f"block {block_name}: the Gröbner basis has no element that solves for {v}")
        best = min(cands, key=lambda g: (sp.degree(g, v), len(sp.Add.make_args(g))))
        P = sp.Poly(best, v)
        steps.append(Step(v, P.degree(), [sp.expand(c) for c in P.all_coeffs()], best))
    return steps


def triangularize(dae: DAE, part: Partition, order: list[str] | None = None,
                  use_cache=True, log=None, timeout=60.0, kinematics="groebner",
                  newton_tol=None) -> Triangularization:
    log = log or (lambda msg: None)
    if kinematics != "groebner":
        return newton_formulation(dae, part, kinematics, newton_tol, log)
    order = order or dae.mechanism.groebner_order
    forced = [set(b) for b in (getattr(dae.mechanism, "newton_blocks", None) or [])]
    counter = [0]
    tblocks = []
    for b in part.blocks:
        unknown_names = {dae.names[i] for i in b.unknowns}
        name = "{" + ", ".join(dae.names[i] for i in b.unknowns) + "}"
        if any(unknown_names <= f for f in forced):
            log(f"block {name}: Newton iteration (forced by the mechanism)")
            tblocks.append(newton_block(b, "forced by the mechanism"))
            continue
        block_order = _block_order(dae, b, order) if order else None
        variables, polys, circles, recover, known_ring = polynomialize(dae, b, block_order)
        ring = [*variables, *known_ring]
        apolys, abstractions = abstract(polys, ring, counter)
        log(f"Gröbner basis of block {name}: {len(apolys)} equations, "
            f"{len(ring)} variables, {len(abstractions)} abstracted knowns")
        try:
            basis = groebner_lex(apolys + circles, ring, list(abstractions), use_cache=use_cache,
                                 log=log, timeout=timeout)
        except GroebnerTimeout:
            reason = f"Gröbner basis not finished in {timeout:g} s"
            log(f"block {name}: {reason}; falling back to Newton iteration on this block")
            tblocks.append(newton_block(b, reason))
            continue
        if any(g.is_Number and g != 0 for g in basis):
            raise ModelError(f"inconsistent constraints in block {name}: "
                             f"{[dae.constraint_names[j] for j in b.equations]} have no common solution")
        steps = extract(basis, variables, name)
        tblocks.append(TriangularBlock(b, "groebner", variables, abstractions, steps, recover, apolys,
                                       known_ring))
    tri = Triangularization(tblocks, part)
    choose_branches(dae, tri)
    return tri


def newton_block(b: Block, reason: str) -> TriangularBlock:
    return TriangularBlock(b, "newton", [], {}, [], {}, reason=reason)


def newton_formulation(dae: DAE, part: Partition, kinematics: str, tol=None, log=None) -> Triangularization:
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
        tb = newton_block(b, f"{reason} (tol {tol:g})")
        tb.tol = tol
        tblocks.append(tb)
    tri = Triangularization(tblocks, part)
    choose_branches(dae, tri)
    return tri


def _block_order(dae, b, order):
    """The part of a user order that concerns block ``b``: its unknowns' and
    knowns' polynomial variables."""
    names = {dae.names[i] for i in [*b.unknowns, *b.knowns]}
    return [o for o in order if o in names or (o[:2] in ("s_", "c_") and o[2:] in names)]


# --- numeric evaluation (build time: assembly and branch choice) -------------

#: digits for build-time evaluation: Gröbner coefficients reach hundreds of
#: digits and cancel, so 15 would not do.
PREC = 80


def _eval(expr, env):
    return complex(expr.xreplace(env).evalf(PREC)) if expr.free_symbols else complex(expr)


def _roots_in_branch_order(coeffs):
    """Both roots of a quadratic, in (sign = +1, sign = −1) order."""
    a, b, c = coeffs
    disc = b * b - 4 * a * c
    r = disc**0.5
    return {+1: (-b + r) / (2 * a), -1: (-b - r) / (2 * a)}


def _target_values(dae, tb, guesses):
    """Polynomial-variable values implied by coordinate guesses."""
    out = {}
    for i, expr in tb.recover.items():
        g = guesses[dae.names[i]]
        if isinstance(expr, sp.atan2):
            out[expr.args[0]] = math.sin(g)
            out[expr.args[1]] = math.cos(g)
        else:
            out[expr] = g
    return out


def newton_numeric(dae, tb: TriangularBlock, q: dict, tt: float, start: dict, tol=1e-14, max_iter=50):
    """Newton on the block's own equations, from ``start`` (coordinate guesses)."""
    num = dae.numeric
    eqs, unk = tb.block.equations, tb.block.unknowns
    x = np.array([start[n] for n in dae.names], dtype=float)
    for n_, v in q.items():
        x[dae.names.index(n_)] = v
    for i in unk:
        x[i] = start[dae.names[i]]
    for _ in range(max_iter):
        r = num.Phi(tt, x)[eqs]
        J = num.Phi_q(tt, x)[np.ix_(eqs, unk)]
        dx = np.linalg.solve(J, r)
        x[unk] -= dx
        if np.abs(dx).max() <= 1e-15 * (1 + np.abs(x[unk]).max()) or np.abs(r).max() <= tol:
            if np.abs(num.Phi(tt, x)[eqs]).max() <= 1e-12:
                return {dae.names[i]: float(x[i]) for i in unk}
    names = [dae.names[i] for i in unk]
    raise ModelError(f"the start cannot be assembled: Newton on block {names} did not converge "
                     f"(residual {np.abs(num.Phi(tt, x)[eqs]).max():.3g})")


def solve_block_numeric(dae, tb: TriangularBlock, q: dict, tt: float, choose_from=None, warm=None):
    """Evaluate one block's sequence at known values ``q`` (name -> value).

    With ``choose_from`` (user guesses by coordinate name) the square-root
    branches are picked to match the guesses and stored in the steps.
    ``warm`` (coordinate values, default the guesses) starts Newton blocks and
    picks the real root of a degree > 2 step nearest to it."""
    warm = warm or choose_from or {c.name: c.start for c in dae.mechanism.coordinates}
    if tb.method == "newton":
        return newton_numeric(dae, tb, q, tt, warm)
    known = {s: sp.Float(q[s.name], PREC) for s in dae.q_sym if s.name in q}
    known[t] = sp.Float(tt, PREC)
    env = {K: sp.Float(expr.xreplace(known).evalf(PREC), PREC) for K, expr in tb.abstractions.items()}
    env.update({v: sp.Float(expr.xreplace(known).evalf(PREC), PREC) for v, expr in tb.known_ring.items()})
    guess_vars = _target_values(dae, tb, choose_from) if choose_from is not None else {}
    warm_vars = _target_values(dae, tb, warm)
    for step in tb.steps:
        coeffs = [_eval(c, env) for c in step.coeffs]
        if abs(coeffs[0]) < 1e-12 * max(1.0, max(abs(c) for c in coeffs)):
            raise ModelError(f"singular configuration: leading coefficient of {step.variable} vanishes")
        if step.degree == 1:
            value = -coeffs[1] / coeffs[0]
        elif step.degree == 2:
            roots = _roots_in_branch_order(coeffs)
            if choose_from is not None:
                step.sign = min(roots, key=lambda s: abs(roots[s] - guess_vars[step.variable]))
            value = roots[step.sign]
        else:
            roots = [r for r in np.roots(coeffs) if abs(r.imag) <= 1e-9 * max(1.0, abs(r))] or list(np.roots(coeffs))
            value = complex(min(roots, key=lambda r: abs(r - warm_vars[step.variable])))
            if choose_from is not None:
                step.start = value.real
        if abs(value.imag) > 1e-9 * max(1.0, abs(value)):
            names = [dae.names[i] for i in tb.block.unknowns]
            raise ModelError(
                f"the start cannot be assembled: block {names} has no real solution for "
                f"{step.variable} at the given independent coordinates "
                f"({', '.join(f'{k}={v:.6g}' for k, v in q.items() if k in [dae.names[i] for i in tb.block.knowns])})")
        env[step.variable] = sp.Float(value.real, PREC)
    return {dae.names[i]: float(expr.xreplace(env).evalf(PREC)) for i, expr in tb.recover.items()}


def assemble(dae: DAE, tri: Triangularization, qi: dict, tt=0.0, choose_from=None, warm=None) -> dict:
    """All coordinates from the independent ones via the recursive sequence.

    ``warm``: coordinate values to start Newton blocks and high-degree roots
    from (default: the assembled start), e.g. the previous point of a sweep."""
    q = dict(qi)
    warm = warm or getattr(tri, "start", None)
    for tb in tri.blocks:
        q.update(solve_block_numeric(dae, tb, q, tt, choose_from, warm))
    return q


def choose_branches(dae: DAE, tri: Triangularization):
    """Pick each square-root sign so the assembly is nearest the user's guesses,
    then check that the assembled start satisfies every constraint."""
    guesses = {c.name: c.start for c in dae.mechanism.coordinates}
    qi = {dae.names[i]: guesses[dae.names[i]] for i in tri.partition.independent}
    q = assemble(dae, tri, qi, 0.0, choose_from=guesses, warm=guesses)
    qv = np.array([q[n] for n in dae.names])
    res = np.abs(dae.numeric.Phi(0.0, qv)).max() if dae.m else 0.0
    if res > 1e-9:
        raise ModelError(f"the start cannot be assembled: residual {res:.3g} after solving "
                         "the triangular sequence")
    tri.start = q
    for tb in tri.blocks:
        if tb.method == "groebner":
            tb.polish = polish_needed(dae, tb, q)
    return q


def sequence_float64(dae, tb: TriangularBlock, q: dict, tt=0.0) -> dict:
    """The block's sequence evaluated in IEEE double, as the generated C does."""
    env = {s: float(q[s.name]) for s in dae.q_sym if s.name in q}
    env[t] = tt
    vals = {K: float(sp.lambdify(list(env), expr, "math")(*env.values()))
            for K, expr in tb.abstractions.items()}
    vals.update({v: float(sp.lambdify(list(env), expr, "math")(*env.values())) for v, expr in tb.known_ring.items()})
    for step in tb.steps:
        f = sp.lambdify(list(vals), step.coeffs, "math")
        co = [float(x) for x in f(*vals.values())]
        if step.degree == 1:
            x = -co[1] / co[0]
        elif step.degree == 2:
            x = _roots_in_branch_order(co)[step.sign].real
        else:
            roots = np.roots(co)
            x = float(min(roots, key=lambda r: abs(r - step.start)).real)
        vals[step.variable] = x
    out = {}
    for i, expr in tb.recover.items():
        out[dae.names[i]] = float(sp.lambdify(list(vals), expr, "math")(*vals.values()))
    return out


def polish_needed(dae, tb: TriangularBlock, q: dict) -> int:
    """At most how many Newton polish steps the block gets after its
    sequence: 0 when the double-precision sequence meets the constraints to
    round-off at the start, else 4 (quadratic convergence takes the worst
    loss measured, 1e-3 on the landing gear, to round-off in 3)."""
    qd = dict(q)
    qd.update(sequence_float64(dae, tb, q))
    qv = np.array([qd[n] for n in dae.names])
    res = float(np.abs(dae.numeric.Phi(0.0, qv)[tb.block.equations]).max())
    return 0 if res <= 1e-13 else 4
