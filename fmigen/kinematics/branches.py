"""The triangular sequences evaluated at build time, in 80-digit arithmetic
(``solve_block_numeric``): a configuration assembled from the independent
coordinates (``assemble``), and each quadratic step's root chosen nearest
the start guesses (``choose_branches``), the branch the run time continues.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from fmigen.derive.dae import DAE
from fmigen.derive.workspace import newton_steps
from fmigen.kinematics.sequences import TriangularBlock, Triangularization, poly_values_scaled
from fmigen.model import ModelError, t


#: digits for build-time evaluation: Gröbner coefficients reach hundreds of
#: digits and cancel, so 15 would not do.
PREC = 80


def _roots_in_branch_order(coeffs):
    """Both roots of a quadratic, in (sign = +1, sign = −1) order."""
    a, b, c = coeffs
    disc = b * b - 4 * a * c
    r = disc**0.5
    return {+1: (-b + r) / (2 * a), -1: (-b - r) / (2 * a)}


def _target_values(dae, solved_block, guesses):
    """Polynomial-variable values implied by coordinate guesses."""
    out = {}
    for i, expr in solved_block.recover.items():
        g = guesses[dae.names[i]]
        if i in solved_block.angle_sums:
            s, c, combo = solved_block.angle_sums[i]
            a = sum(k * guesses[dae.names[j]] for j, k in combo.items())
            out[s], out[c] = math.sin(a), math.cos(a)
        elif isinstance(expr, sp.atan2):
            out[expr.args[0]] = math.sin(g)
            out[expr.args[1]] = math.cos(g)
        else:
            out[expr] = g
    return out


#: Newton steps a Newton block's numeric start may take from the guesses
BLOCK_NEWTON_ITERATIONS = 50


def newton_numeric(dae, solved_block: TriangularBlock, q: dict, tt: float, start: dict, tol=1e-14,
                   max_iter=BLOCK_NEWTON_ITERATIONS):
    """Newton on the block's own equations, from ``start`` (coordinate guesses)."""
    num = dae.numeric
    eqs, unk = solved_block.block.equations, solved_block.block.unknowns
    x = np.array([start[n] for n in dae.names], dtype=float)
    for n_, v in q.items():
        x[dae.names.index(n_)] = v
    for i in unk:
        x[i] = start[dae.names[i]]
    for r, _, dx in newton_steps(lambda at: num.Phi(tt, at)[eqs], lambda at: num.Phi_q(tt, at)[eqs], x, unk,
                                 max_iter):
        if np.abs(dx).max() <= 1e-15 * (1 + np.abs(x[unk]).max()) or np.abs(r).max() <= tol:
            if np.abs(num.Phi(tt, x)[eqs]).max() <= 1e-12:
                return {dae.names[i]: float(x[i]) for i in unk}
    names = [dae.names[i] for i in unk]
    raise ModelError(f"the start cannot be assembled: Newton on block {names} did not converge "
                     f"(residual {np.abs(num.Phi(tt, x)[eqs]).max():.3g})")


def solve_block_numeric(dae, solved_block: TriangularBlock, q: dict, tt: float, choose_from=None, warm=None):
    """Evaluate one block's sequence at known values ``q`` (name -> value).

    With ``choose_from`` (user guesses by coordinate name) the square-root
    branches are picked to match the guesses and stored in the steps.
    ``warm`` (coordinate values, default the guesses) starts Newton blocks and
    picks the real root of a degree > 2 step nearest to it."""
    warm = warm or choose_from or {c.name: c.start for c in dae.mechanism.coordinates}
    if solved_block.method == "newton":
        return newton_numeric(dae, solved_block, q, tt, warm)
    # only the coordinates the block's expressions read: a block of a large model
    # reads a few of them, and an 80-digit Float of each of the others is wasted work
    reads = set().union(*(e.free_symbols for e in (*solved_block.abstractions.values(),
                                                   *solved_block.known_ring.values(), *solved_block.recover.values())))
    known = {s: sp.Float(q[s.name], PREC) for s in dae.q_sym if s.name in q and s in reads}
    known[t] = sp.Float(tt, PREC)
    known.update(dae.hard_points)
    env = {K: sp.Float(expr.xreplace(known).evalf(PREC), PREC) for K, expr in solved_block.abstractions.items()}
    env.update({v: sp.Float(expr.xreplace(known).evalf(PREC), PREC) for v, expr in solved_block.known_ring.items()})
    guess_vars = _target_values(dae, solved_block, choose_from) if choose_from is not None else {}
    warm_vars = _target_values(dae, solved_block, warm)
    for si, step in enumerate(solved_block.steps):
        coeffs = [complex(c) for c in poly_values_scaled(step.coeff_polys, env)]
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
        if abs(value.imag) > 1e-9 * max(1.0, abs(value)):
            names = [dae.names[i] for i in solved_block.block.unknowns]
            equations = [dae.constraint_names[j] for j in solved_block.block.equations]
            knowns = [dae.names[i] for i in solved_block.block.knowns]
            at = ", ".join(f"{k}={v:.6g}" for k, v in q.items() if k in knowns)
            # a block that reads no known coordinate (nor t) has the same
            # equations at every configuration, and its first step's
            # polynomial is in the elimination ideal: no real root there
            # means its constraints never hold together.  A later step's
            # roots depend on the branches the guesses chose before it.
            never = si == 0 and not knowns and not any(dae.Phi[j].has(t) for j in solved_block.block.equations)
            if never:
                where = "for any configuration: these constraints are inconsistent (they never hold together)"
            elif si > 0:
                where = (f"on the branches the start guesses choose for {[str(st.variable) for st in solved_block.steps[:si]]}"
                         + (f", at the given independent coordinates ({at})" if knowns else ""))
            else:
                where = f"at the given independent coordinates ({at})"
            raise ModelError(f"the start cannot be assembled: block {names} (constraints {equations}) has no real "
                             f"solution for {step.variable} {where}")
        env[step.variable] = sp.Float(value.real, PREC)
    env.update(known)     # a recovered angle sum subtracts known angles
    return {dae.names[i]: float(expr.xreplace(env).evalf(PREC)) for i, expr in solved_block.recover.items()}


def assemble(dae: DAE, tri: Triangularization, qi: dict, tt=0.0, choose_from=None, warm=None) -> dict:
    """All coordinates from the independent ones via the recursive sequence.

    ``warm``: coordinate values to start Newton blocks and high-degree roots
    from (default: the assembled start), e.g. the previous point of a sweep."""
    q = dict(qi)
    warm = warm or getattr(tri, "start", None)
    for solved_block in tri.blocks:
        q.update(solve_block_numeric(dae, solved_block, q, tt, choose_from, warm))
    return q


def _guess_distance(dae, values: dict, guesses: dict) -> float:
    """Max over the given coordinates of the distance to the guesses (angles
    modulo 2π)."""
    units = {c.name: c.unit for c in dae.mechanism.coordinates}
    out = 0.0
    for n, v in values.items():
        d = v - guesses[n]
        out = max(out, abs(math.remainder(d, 2 * math.pi)) if units[n] == "rad" else abs(d))
    return out


def _nearer_the_guesses(dae, solved_block: TriangularBlock, q: dict, got: dict, guesses: dict) -> dict:
    """The sequence's start assembly of one block, or Newton's from the
    guesses when that is nearer them.

    Why: a quadratic step picks the root nearest the guess of its own
    variable, but a sequence degenerate at the start does not decide the
    branch there.  The tie rod of ``tests/corpus/double_wishbone.py`` (a
    distance link: its U-joint's first angle q1 only in a·(e × w) = 0,
    linear in sin q1, cos q1) in the design pose: the sequence solves s_q1
    from a quadratic whose constant term is rounding (roots ±2e-17, a double
    root 0 in exact arithmetic), then c_q1 from a linear step whose value
    vanishes with s_q1, so it is rounding too; q1 = atan2(s, c) of two
    rounding errors came out π, the mirror, though the guess was 0 (each
    step's leading-coefficient test is relative to its own coefficients and
    passed).  Newton on the block's own equations from the guesses converges
    to the assembly next to them; it replaces the sequence's only when it is
    strictly nearer the guesses, so a sequence that chose well is kept.
    """
    try:
        local = newton_numeric(dae, solved_block, q, 0.0, guesses)
    except (ModelError, np.linalg.LinAlgError):
        return got
    if _guess_distance(dae, local, guesses) < _guess_distance(dae, got, guesses) - 1e-9:
        return local
    return got


def choose_branches(dae: DAE, tri: Triangularization, guesses=None):
    """Pick each square-root sign so the assembly is nearest the user's guesses,
    then check that the assembled start satisfies every constraint."""
    guesses = guesses or {c.name: c.start for c in dae.mechanism.coordinates}
    qi = {dae.names[i]: guesses[dae.names[i]] for i in tri.partition.independent}
    q = dict(qi)
    for solved_block in tri.blocks:
        got = solve_block_numeric(dae, solved_block, q, 0.0, choose_from=guesses, warm=guesses)
        if solved_block.method != "newton":
            got = _nearer_the_guesses(dae, solved_block, q, got, guesses)
        q.update(got)
    qv = np.array([q[n] for n in dae.names])
    res = np.abs(dae.numeric.Phi(0.0, qv)).max() if dae.m else 0.0
    if res > 1e-9:
        raise ModelError(f"the start cannot be assembled: residual {res:.3g} after solving "
                         "the triangular sequence")
    tri.start = q
    return q
