"""All assembly configurations of a mechanism — the Gröbner–Sylvester hybrid
of Dhingra, Almadi & Kohli (paper 001), cross-checked by a lex route.

Given values of the independent coordinates (the "inputs" of the displacement
problem), find every configuration, complex and real, that satisfies the loop
constraints:

1. *Polynomialize* the constraints exactly as ``triangular`` does: for each
   unknown angle x, sin x -> s_x, cos x -> c_x plus s_x² + c_x² − 1; geometry
   becomes exact rationals; the known inputs are substituted (a sine/cosine of
   a known value is rationalized to ~1e-24).  A mechanism may attach
   ``AssemblyHints`` (``mech.assembly_hints``): the variable order, the hidden
   variable, auxiliary variables (paper 001's h_k = l₁·R e_k) and implied
   equations (det R = +1 for a rotation matrix) that select the physical
   component of the variety.
2. *Graded reverse lex* reduced Gröbner basis G in Singular (``dp``).  The
   paper's "dlex" results (68 / 43 / 29 generators) reproduce only with
   grevlex.  ``vdim`` of G is the number of complex solutions.
3. *Sylvester (dialytic) matrix*: hide one variable h; every g ∈ G (or a
   subset that involves only some variables) is linear in the monomials of the
   other variables with coefficients in Q[h].  When there are as many
   monomials as polynomials the square matrix S(h) is the Sylvester matrix and
   det S(h) is the input/output polynomial.  The determinant is computed
   exactly in Singular (fraction-free Bareiss, ``det(S, "SBareiss")``).
4. Roots of the I/O polynomial at high precision (mpmath).  For each root
   the null vector of S(h₀) (monomial 1 normalized to 1; least squares in
   double precision refined iteratively with residuals in mpmath) gives the
   variables that appear as linear monomials; the rest follow from G by
   back-substitution (each remaining variable from an element that is
   univariate in it once the knowns are substituted, branching over its
   roots).  A final Newton step in mpmath on the original equations polishes
   each solution; its size is reported.
5. *Cross-check* (``cross_check=True``): the lex basis by FGLM in Singular,
   its univariate polynomial in h compared exactly with the monic Sylvester
   determinant, and the whole solution set solved again by triangular
   back-substitution on the lex basis.

``choose_start_assembly`` is the build-time use: all real assemblies at the
start input, the one nearest the user's guesses, and a warning when two real
assemblies are close to each other.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction

import mpmath as mp
import numpy as np
import sympy as sp

from fmigen.derive.derivatives import jacobian
from fmigen.floats import exact_floats, rational
from fmigen.kinematics import groebner
from fmigen.model import Mechanism, ModelError, t

#: rational approximations of sin/cos of known values: denominators up to this
RATIONAL_DENOMINATOR = 10**12
#: working precision (decimal digits) of the numeric stages
DPS = 60


class AssemblyError(ModelError):
    pass


class AssemblyWarning(UserWarning):
    """Two real assemblies at the start input are close to each other."""


@dataclass
class AssemblyHints:
    """Optional guidance for ``assemble`` attached as ``mech.assembly_hints``.

    order:     polynomial variables highest first (names such as ``s_theta2``,
               ``c_theta2``, ``r5``, auxiliary names); the grevlex order.
    hidden:    the variable hidden in the Sylvester matrix (default: the last).
    auxiliary: name -> expression in the coordinates; a new variable with the
               equation name − expression = 0 (does not change the solutions).
    implied:   (name, expression) pairs that hold at every physical
               configuration but are not DAE constraints, e.g. det R = +1.
    """
    order: list[str] | None = None
    hidden: str | None = None
    auxiliary: dict = field(default_factory=dict)
    implied: list = field(default_factory=list)


# --- polynomialization ------------------------------------------------------

def _rational(value) -> sp.Rational:
    f = Fraction(str(sp.N(value, 40))).limit_denominator(RATIONAL_DENOMINATOR)
    return sp.Rational(f.numerator, f.denominator)


@dataclass
class PolySystem:
    mechanism: Mechanism
    known: dict                    # independent coordinate -> value used
    unknowns: list[str]            # dependent coordinates, model order
    variables: list[sp.Symbol]     # polynomial variables, highest first
    polys: list[sp.Expr]           # rational coefficients
    names: list[str]               # a name per polynomial
    recover: dict                  # coordinate -> ("angle", s, c) | ("length", v)
    residual_exprs: list           # (name, expr in coordinate symbols, [terms])
    coord_symbols: dict            # coordinate name -> plain Symbol


def independent_names(mech: Mechanism) -> list[str]:
    if mech.independent is not None:
        return list(mech.independent)
    # same rule as ``partition``: pivoted QR on Φ_q at the start guess
    names = [c.name for c in mech.coordinates]
    plain = {c.symbol: sp.Symbol(c.name) for c in mech.coordinates}
    params = {p.symbol: rational(p.value, mech.float_rule) for p in mech.parameters}
    phi = sp.Matrix(len(mech.constraints), 1,   # a column, 0 x 1 too: 0 x 0 has no Jacobian
                    [sp.sympify(c.expr).xreplace(plain).xreplace(params).subs(t, 0) for c in mech.constraints])
    syms = [sp.Symbol(n) for n in names]
    J = np.array(sp.lambdify(syms, jacobian(phi, syms), "numpy")(*[c.start for c in mech.coordinates]), dtype=float)
    # scipy here and in _Newton, not at the top: a build whose start
    # assembly is read from the cache never solves one
    import scipy.linalg
    _, _, piv = scipy.linalg.qr(J, pivoting=True)
    dep = set(piv[: J.shape[0]].tolist())
    return [n for i, n in enumerate(names) if i not in dep]


def polynomial_system(mech: Mechanism, inputs: dict | None = None) -> PolySystem:
    inputs = dict(inputs or {})
    hints = mech.assembly_hints or AssemblyHints()
    names = [c.name for c in mech.coordinates]
    indep = independent_names(mech)
    pvals = {p.name: p.value for p in mech.parameters}
    known = {n: mech.coordinate_by_name(n).start for n in indep}
    for k, v in inputs.items():
        if k in known:
            known[k] = float(v)
        elif k in pvals:
            pvals[k] = float(v)
        elif k in names:
            raise AssemblyError(f"'{k}' is a dependent coordinate of '{mech.name}'; inputs are the "
                                f"independent coordinates {indep} (or geometry parameters)")
        else:
            raise AssemblyError(f"unknown input '{k}' (independent coordinates of '{mech.name}': {indep})")
    unknowns = [n for n in names if n not in known]
    coord_sym = {n: sp.Symbol(n) for n in names}
    to_plain = {c.symbol: coord_sym[c.name] for c in mech.coordinates}
    params = {p.symbol: rational(pvals[p.name], mech.float_rule) for p in mech.parameters}
    known_sub = {coord_sym[n]: rational(v, mech.float_rule) for n, v in known.items()}

    def plain(e):
        # float literals exact first, as in the DAE (``floats.exact_floats``)
        return exact_floats(e, mech.float_rule).xreplace(to_plain).xreplace(params).subs(t, 0)

    equations = [(c.name, plain(c.expr)) for c in mech.constraints]
    implied = [(n, plain(e)) for n, e in hints.implied]
    aux = {n: plain(e) for n, e in hints.auxiliary.items()}

    unknown_syms = [coord_sym[n] for n in unknowns]
    raw = [sp.expand_trig(e) for _, e in equations + implied] + [sp.expand_trig(e) for e in aux.values()]
    angles = [q for q in unknown_syms if any(r.has(sp.sin(q)) or r.has(sp.cos(q)) for r in raw)]
    subs, recover, variables, circles = {}, {}, [], []
    for q in unknown_syms:
        if q in angles:
            s, c = sp.Symbol(f"s_{q}"), sp.Symbol(f"c_{q}")
            subs[sp.sin(q)], subs[sp.cos(q)] = s, c
            recover[str(q)] = ("angle", s, c)
            variables += [c, s]
            circles.append((f"circle_{q}", s**2 + c**2 - 1))
        else:
            recover[str(q)] = ("length", q)
            variables.append(q)
    aux_syms = [sp.Symbol(n) for n in aux]
    variables += aux_syms

    def polynomialize(name, e):
        e = sp.expand_trig(e).xreplace(subs).xreplace(known_sub)
        # sin/cos (or anything) of known values: rationalize
        funcs = [f for f in e.atoms(sp.Function) if not f.free_symbols]
        e = e.xreplace({f: _rational(sp.N(f, 50)) for f in funcs})
        e = sp.expand(e)
        e = e.xreplace({f: _rational(f) for f in e.atoms(sp.Float)})
        try:
            P = sp.Poly(e, *variables)
        except sp.PolynomialError as err:
            raise AssemblyError(f"equation '{name}' is not polynomial in sin/cos of the unknown angles "
                                f"and the unknown lengths ({err})") from None
        if not P.domain.is_QQ and not P.domain.is_ZZ:
            raise AssemblyError(f"equation '{name}' has non-rational coefficients after substitution "
                                f"(domain {P.domain}); left over: {sorted(map(str, e.free_symbols - set(variables)))}")
        return P.as_expr()

    polys, pnames = [], []
    for n, e in equations + implied:
        polys.append(polynomialize(n, e))
        pnames.append(n)
    for n, e in circles:
        polys.append(e)
        pnames.append(n)
    for (n, e), hs in zip(aux.items(), aux_syms):
        polys.append(sp.expand(hs - polynomialize(n, e)))
        pnames.append(f"aux_{n}")

    if hints.order:
        by_name = {str(v): v for v in variables}
        missing = set(by_name) - set(hints.order)
        if missing:
            raise AssemblyError(f"assembly order {hints.order} misses variables {sorted(missing)}")
        variables = [by_name[n] for n in hints.order if n in by_name]

    # residuals are measured on the mechanism's own equations (with the inputs
    # as given, not rationalized), relative to the size of their terms
    residual_exprs = []
    for n, e in equations + implied:
        e = e.xreplace(known_sub)
        residual_exprs.append((n, e, list(sp.Add.make_args(sp.expand(e)))))
    return PolySystem(mech, known, unknowns, variables, polys, pnames, recover, residual_exprs, coord_sym)


# --- Singular ----------------------------------------------------------------

_DUMP_PROC = """proc dumpideal(ideal g)
{
  int k; poly p;
  for (k = 1; k <= ncols(g); k++) {
    p = g[k];
    if (p != 0) {
      print("@@P");
      while (p != 0) { print("@@T " + string(leadcoef(p)) + " " + string(leadexp(p))); p = p - lead(p); }
    }
  }
}
"""


def _parse_polys(out: str, nvars: int) -> list[dict]:
    # exact coefficients can have tens of thousands of digits
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return _parse_polys_unlimited(out, nvars)
    finally:
        sys.set_int_max_str_digits(old)


def _parse_polys_unlimited(out, nvars):
    polys, cur = [], None
    for line in out.splitlines():
        if line.startswith("@@P"):
            cur = {}
            polys.append(cur)
        elif line.startswith("@@T "):
            _, c, e = line.split(" ")
            exps = tuple(int(x) for x in e.split(","))
            assert len(exps) == nvars
            cur[exps] = Fraction(c)
    return polys


def _cached(kind, script, compute, use_cache):
    # keyed by the engine's version too: Singular's output is what is kept
    return groebner.disk_cache(kind + "\n" + groebner.engine_key() + "\n" + script, compute, use_cache,
                               subdir="assemble", suffix=".txt")[0]


def groebner_basis(polys, variables, order="dp", use_cache=True, cpu_limit=None):
    """Reduced Gröbner basis in Singular: ``order`` "dp" (graded reverse lex)
    or "lp" (lex, by FGLM from the grevlex basis).  Returns (basis as
    {exponent tuple: Fraction} dicts, vdim)."""
    vs = ",".join(str(v) for v in variables)
    ideal = ",\n  ".join(groebner.singular_poly(p, variables) for p in polys)
    script = (f"{_DUMP_PROC}ring fmgR = 0,({vs}),dp;\noption(redSB);\nideal fmgI =\n  {ideal};\n"
              "ideal fmgG = std(fmgI);\nint fmgD = vdim(fmgG);\nprint(\"@@V \" + string(fmgD));\n")
    if order == "dp":
        script += "dumpideal(fmgG);\n"
    elif order == "lp":
        script += (f"if (fmgD >= 0) {{\n  ring fmgL = 0,({vs}),lp;\n  ideal fmgJ = fglm(fmgR, fmgG);\n"
                   "  dumpideal(fmgJ);\n}\n")
    else:
        raise ValueError(order)
    script += "quit;\n"
    out = _cached("gb", script, lambda: groebner.run_singular(script, cpu_limit), use_cache)
    vdim = int(next(line.split()[1] for line in out.splitlines() if line.startswith("@@V ")))
    return _parse_polys(out, len(variables)), vdim


# --- the Sylvester matrix ----------------------------------------------------

@dataclass
class Sylvester:
    hidden: int                        # index of the hidden variable
    rows: list[int]                    # basis elements used
    monomials: list[tuple]             # column monomials (hidden exponent 0), "1" last
    entries: list[list[dict]]          # entries[i][j] = {power of h: Fraction}

    @property
    def size(self):
        return len(self.rows)


def _other_monomials(g, h):
    return {tuple(0 if k == h else e for k, e in enumerate(exp)) for exp in g}


def _det_mod_p(rows, monomials, hidden, basis, hval, p=(1 << 61) - 1) -> int:
    col = {m: j for j, m in enumerate(monomials)}
    n = len(rows)
    A = [[0] * n for _ in range(n)]
    for i, r in enumerate(rows):
        for exp, c in basis[r].items():
            m = tuple(0 if k == hidden else e for k, e in enumerate(exp))
            v = c.numerator * pow(c.denominator, -1, p) * pow(hval, exp[hidden], p)
            A[i][col[m]] = (A[i][col[m]] + v) % p
    det = 1
    for k in range(n):
        piv = next((i for i in range(k, n) if A[i][k]), None)
        if piv is None:
            return 0
        if piv != k:
            A[k], A[piv] = A[piv], A[k]
            det = -det
        det = det * A[k][k] % p
        inv = pow(A[k][k], -1, p)
        for i in range(k + 1, n):
            if A[i][k]:
                f = A[i][k] * inv % p
                A[i] = [(a - f * b) % p for a, b in zip(A[i], A[k])]
    return det % p


def sylvester_matrix(basis, nvars, hidden, max_enumerate=16, which="smallest") -> Sylvester | None:
    """The smallest square, nonsingular Sylvester matrix from G or a subset of
    G whose elements involve only some of the variables (paper 001, eqs. 3–8);
    ``which="full"`` takes the whole of G or nothing."""
    mons = [_other_monomials(g, hidden) for g in basis]
    gvars = [frozenset(k for m in ms for k, e in enumerate(m) if e) for ms in mons]
    zero = tuple([0] * nvars)
    others = [k for k in range(nvars) if k != hidden]
    cands = []
    seen = set()
    subsets = [frozenset(others)]
    if which == "full":
        rows = tuple(range(len(basis)))
        cols = set().union(*mons)
        subsets = []
        cands = [(len(rows), rows, cols)] if len(cols) == len(rows) and zero in cols else []
    elif len(others) <= max_enumerate:
        subsets += [frozenset(c) for r in range(len(others)) for c in itertools.combinations(others, r)]
    for W in subsets:
        rows = tuple(k for k, vs in enumerate(gvars) if vs <= W)
        if not rows or rows in seen:
            continue
        seen.add(rows)
        cols = set().union(*(mons[k] for k in rows))
        if len(cols) == len(rows) and zero in cols:
            cands.append((len(rows), rows, cols))
    cands.sort(key=lambda c: c[0])
    rng = random.Random(1)
    for _, rows, cols in cands:
        monomials = sorted(cols - {zero}, key=lambda m: (sum(m), m), reverse=True) + [zero]
        if _det_mod_p(rows, monomials, hidden, basis, rng.randrange(2, 1 << 60)) == 0:
            continue
        col = {m: j for j, m in enumerate(monomials)}
        entries = []
        for r in rows:
            row = [dict() for _ in monomials]
            for exp, c in basis[r].items():
                m = tuple(0 if k == hidden else e for k, e in enumerate(exp))
                d = row[col[m]]
                d[exp[hidden]] = d.get(exp[hidden], 0) + c
            entries.append(row)
        return Sylvester(hidden, list(rows), monomials, entries)
    return None


def sylvester_determinant(S: Sylvester, hname: str, use_cache=True,
                          cpu_limit=None) -> list[Fraction]:
    """det S(h) exactly (Singular, fraction-free Bareiss); coefficients highest first.

    Singular gets integer entries only (``groebner.singular_poly``): each
    row is scaled by the least common multiple of its denominators, and
    the determinant divided by the product of the scales afterwards."""
    h = sp.Symbol(hname)
    scales = [math.lcm(*(c.denominator for d in row for c in d.values())) for row in S.entries]
    n = S.size
    ent = ",\n".join(",".join(groebner.singular_poly(sum(sp.Rational(c.numerator, c.denominator) * w * h**k
                                                            for k, c in d.items()), [h])
                               for d in row)
                      for row, w in zip(S.entries, scales))
    script = (f"{_DUMP_PROC}ring fmgR = 0,({hname}),dp;\nmatrix fmgS[{n}][{n}] =\n{ent};\n"
              "ideal fmgD = det(fmgS, \"SBareiss\");\ndumpideal(fmgD);\nquit;\n")
    out = _cached("det", script, lambda: groebner.run_singular(script, cpu_limit), use_cache)
    polys = _parse_polys(out, 1)
    if not polys:
        return [Fraction(0)]
    scale = math.prod(scales)
    terms = {e[0]: c / scale for e, c in polys[0].items()}
    deg = max(terms)
    return [terms.get(k, Fraction(0)) for k in range(deg, -1, -1)]


def monic(coeffs):
    lc = coeffs[0]
    return [c / lc for c in coeffs]


# --- numerics ----------------------------------------------------------------

def _mpf(fr: Fraction):
    return mp.mpf(fr.numerator) / fr.denominator


def poly_roots(coeffs: list[Fraction]):
    """All roots of a polynomial with rational coefficients, to the working
    precision.  Repeated roots are returned once (roots of the squarefree
    part).  Start values from numpy's companion matrix, then Aberth–Ehrlich
    iteration in mpmath with the exact coefficients; mpmath's own
    ``polyroots`` when that does not converge."""
    c = _squarefree(coeffs)
    if len(c) <= 1:
        return []
    a = [_mpf(ci) for ci in monic(c)]
    n = len(a) - 1
    if n == 1:
        return [mp.mpc(-a[1])]
    try:
        with np.errstate(all="ignore"):
            z0 = np.roots(np.array([float(ai) for ai in a]))
        if len(z0) != n or not np.all(np.isfinite(z0)):
            raise ValueError
        z = [mp.mpc(complex(v)) for v in z0]
        # separate exactly equal starts
        for i in range(n):
            for j in range(i):
                if z[i] == z[j]:
                    z[i] += mp.mpc(0, 1e-8) * (1 + abs(z[i]))
        eps = mp.mpf(10) ** (-(mp.mp.dps - 8))
        for _ in range(200):
            worst = mp.mpf(0)
            for i in range(n):
                p, dp = mp.polyval(a, z[i], derivative=True)
                if p == 0:
                    continue
                ratio = p / dp
                s_ = mp.fsum(1 / (z[i] - z[j]) for j in range(n) if j != i)
                w = ratio / (1 - ratio * s_)
                z[i] -= w
                worst = max(worst, abs(w) / max(1, abs(z[i])))
            if worst < eps:
                break
        else:
            raise ValueError
        return z
    except (ValueError, ZeroDivisionError):
        roots = mp.polyroots(a, maxsteps=400, extraprec=4 * mp.mp.dps)
        return [mp.mpc(r) for r in roots]


class _MPBasis:
    """Basis elements as (coefficient, exponents) lists in mpmath, scaled so the
    largest coefficient of each element is 1."""

    def __init__(self, basis):
        self.elems, self.sparse = [], []
        for g in basis:
            big = max(abs(c) for c in g.values())
            self.elems.append([(_mpf(c / big), e) for e, c in g.items()])
            self.sparse.append([(c, [(i, p) for i, p in enumerate(e) if p]) for c, e in self.elems[-1]])
        self.vars = [frozenset(k for _, e in g for k, x in enumerate(e) if x) for g in self.elems]

    def value(self, k, x):
        """|g_k(x)| and the size of its terms."""
        terms = []
        for c, e in self.sparse[k]:
            t_ = c
            for i, p in e:
                t_ *= x[i] if p == 1 else x[i] ** p
            terms.append(t_)
        return abs(mp.fsum(terms)), mp.fsum(abs(t_) for t_ in terms)

    def univariate(self, k, x, v):
        """g_k with all variables but v substituted: coefficients, highest
        first, and for each the size of the terms that were summed into it."""
        coeffs, scales = {}, {}
        for c, e in self.elems[k]:
            t_ = c
            for i, p in enumerate(e):
                if p and i != v:
                    t_ *= x[i] ** p
            coeffs[e[v]] = coeffs.get(e[v], 0) + t_
            scales[e[v]] = scales.get(e[v], 0) + abs(t_)
        deg = max(coeffs)
        return ([coeffs.get(d, mp.mpc(0)) for d in range(deg, -1, -1)],
                [scales.get(d, mp.mpf(0)) for d in range(deg, -1, -1)])


def back_substitute(B: _MPBasis, nvars, known: dict, tol=mp.mpf("1e-20"), max_branches=10000):
    """Complete the partial solutions ``known`` (index -> value) with the basis:
    repeatedly take the lowest-degree element univariate in one unknown
    variable, branch over its roots, and drop branches on which an element
    that has become fully known does not vanish (relative to its terms)."""
    degree = [{i: max(e[i] for _, e in g) for i in vs} for g, vs in zip(B.elems, B.vars)]
    out, stack = [], [(dict(known), set(known))]
    noise = mp.mpf(10) ** (-(mp.mp.dps - 10))
    while stack:
        cur, new = stack.pop()
        have = set(cur)
        if any(vs & new and vs <= have and _bad(B, k, cur, tol) for k, vs in enumerate(B.vars)):
            continue
        if len(cur) == nvars:
            out.append(cur)
            continue
        cands = []
        for k, vs in enumerate(B.vars):
            rest = vs - have
            if len(rest) == 1:
                v = next(iter(rest))
                cands.append((degree[k][v], k, v))
        best = None
        for _, k, v in sorted(cands):
            if best is not None and len(best[1]) - 1 <= degree[k][v]:
                break
            coeffs, scales = B.univariate(k, cur, v)
            # a leading coefficient that is zero up to the working precision
            # (the element's degree in v drops at this point)
            while len(coeffs) > 1 and abs(coeffs[0]) <= noise * max(scales[0], mp.mpf(1e-300)):
                coeffs, scales = coeffs[1:], scales[1:]
            if len(coeffs) >= 2 and (best is None or len(coeffs) < len(best[1])):
                best = (v, coeffs)
        if best is None:
            raise AssemblyError("back-substitution stalled: no basis element is univariate in an unknown")
        v, coeffs = best
        if len(coeffs) == 2:
            roots = [-coeffs[1] / coeffs[0]]
        else:
            roots = mp.polyroots(coeffs, maxsteps=400, extraprec=4 * mp.mp.dps)
        for r in roots:
            nxt = dict(cur)
            nxt[v] = mp.mpc(r)
            stack.append((nxt, {v}))
        if len(stack) > max_branches:
            raise AssemblyError("back-substitution produced too many branches")
    return out


def _bad(B, k, x, tol):
    val, scale = B.value(k, x)
    return val > tol * max(scale, mp.mpf(1e-300))


def _nullvector(S: Sylvester, h0):
    """Null vector of S(h0) with its last (monomial 1) entry 1: least squares
    in double precision, refined with residuals computed in mpmath."""
    n = S.size
    if n == 1:          # the basis has a univariate element in h: nothing to solve
        return [mp.mpc(1)]
    key = ("mp", mp.mp.prec)
    if getattr(S, "_mp_key", None) != key:
        S._mp_entries = []
        for i, row in enumerate(S.entries):
            big = max(abs(c) for d in row for c in d.values())
            S._mp_entries.append([(j, [(k, _mpf(c / big)) for k, c in d.items()])
                                  for j, d in enumerate(row) if d])
        S._mp_key = key
    A_mp = mp.matrix(n, n)
    hp = {}
    for i, row in enumerate(S._mp_entries):
        for j, d in row:
            v = mp.mpc(0)
            for k, c in d:
                if k not in hp:
                    hp[k] = h0**k
                v += c * hp[k]
            A_mp[i, j] = v
    A = np.array([[complex(A_mp[i, j]) for j in range(n)] for i in range(n)])
    rows = [[A_mp[i, j] for j in range(n - 1)] for i in range(n)]
    M, b = A[:, :-1], -A[:, -1]
    Q, R = np.linalg.qr(M)
    x = [mp.mpc(v) for v in np.linalg.solve(R, Q.conj().T @ b)]
    for _ in range(8):
        res = [-A_mp[i, n - 1] - mp.fdot(rows[i], x) for i in range(n)]
        r = np.array([complex(v) for v in res])
        dx = np.linalg.solve(R, Q.conj().T @ r)
        x = [xi + mp.mpc(d) for xi, d in zip(x, dx)]
        if np.abs(dx).max() <= 10.0 ** (-(mp.mp.dps - 15)) * max(1.0, max(abs(complex(v)) for v in x)):
            break
    return x + [mp.mpc(1)]


class _Newton:
    """Newton polish of a solution on the polynomial system (mpmath).

    Not derive.workspace.newton_steps: it polishes complex solutions in
    DPS-digit arithmetic, on rows chosen by a pivoted QR where the system
    has more polynomials than variables."""

    def __init__(self, system: PolySystem):
        vs = system.variables
        self.F = sp.lambdify(vs, system.polys, "mpmath")
        J = jacobian(sp.Matrix(system.polys), vs)
        self.J = sp.lambdify(vs, J.tolist(), "mpmath")
        self.n = len(vs)

    def __call__(self, x, steps=6):
        x = [mp.mpc(v) for v in x]
        moved = mp.mpf(0)
        for _ in range(steps):
            F = self.F(*x)
            J = self.J(*x)
            if len(J) > self.n:   # else the pivoted QR would pick every row: no scipy
                import scipy.linalg
                _, _, piv = scipy.linalg.qr(np.array([[complex(v) for v in row] for row in J]).T, pivoting=True)
                rows = sorted(piv[: self.n].tolist())
            else:
                rows = list(range(len(J)))
            try:
                dx = mp.lu_solve(mp.matrix([J[i] for i in rows]), mp.matrix([-F[i] for i in rows]))
            except ZeroDivisionError:
                break
            x = [xi + d for xi, d in zip(x, dx)]
            step = max(abs(d) for d in dx)
            moved = max(moved, step)
            if step <= mp.mpf(10) ** (-DPS + 15) * max(1, max(abs(v) for v in x)):
                break
        return x, moved


# --- results -----------------------------------------------------------------

@dataclass
class Solution:
    values: dict            # coordinate -> complex (mpmath) value
    real: bool
    residual: float         # max relative constraint residual
    polish: float = 0.0     # largest Newton correction applied

    def as_json(self):
        vals = {}
        for k, v in self.values.items():
            z = complex(v)
            vals[k] = z.real if self.real else [z.real, z.imag]
        return {"real": self.real, "values": vals, "residual": self.residual}


@dataclass
class AssemblyResult:
    mechanism: str
    inputs: dict
    variables: list[str]
    order: str
    basis_size: int
    vdim: int
    method: str                     # "sylvester" or "lex"
    hidden: str
    sylvester_size: int | None
    io_polynomial: list[Fraction]   # monic, highest first
    solutions: list[Solution]
    seconds: dict
    cross_check: dict | None = None
    imag_tol: float = 1e-9

    @property
    def io_polynomial_degree(self):
        return len(self.io_polynomial) - 1

    @property
    def real_solutions(self):
        return [s for s in self.solutions if s.real]

    @property
    def real_count(self):
        return len(self.real_solutions)

    @property
    def max_residual(self):
        return max((s.residual for s in self.solutions), default=0.0)

    def as_json(self):
        out = {"io_polynomial_degree": self.io_polynomial_degree,
               "solutions": [s.as_json() for s in self.solutions],
               "real_count": self.real_count,
               "mechanism": self.mechanism, "inputs": self.inputs,
               "method": self.method, "hidden_variable": self.hidden,
               "sylvester_size": self.sylvester_size, "groebner_basis_size": self.basis_size,
               "vdim": self.vdim, "order": self.order, "variables": self.variables,
               "io_polynomial": [float(c) for c in self.io_polynomial],
               "max_residual": self.max_residual, "imag_tol": self.imag_tol,
               "seconds": {k: round(v, 3) for k, v in self.seconds.items()}}
        if self.cross_check is not None:
            out["cross_check"] = self.cross_check
        return out


def _angle(s, c):
    # θ with cos θ = c, sin θ = s; atan2 for real values, its analytic
    # continuation −i log(c + i s) for complex ones
    if abs(mp.im(s)) + abs(mp.im(c)) == 0:
        return mp.mpc(mp.atan2(mp.re(s), mp.re(c)))
    return -1j * mp.log(c + 1j * s)


def _to_solution(system: PolySystem, x: list, imag_tol: float, residual_fns) -> Solution:
    env = {str(v): x[i] for i, v in enumerate(system.variables)}
    values = {}
    for name in system.mechanism.coordinates:
        n = name.name
        if n in system.known:
            values[n] = mp.mpc(system.known[n])
        else:
            rec = system.recover[n]
            values[n] = _angle(env[str(rec[1])], env[str(rec[2])]) if rec[0] == "angle" else env[str(rec[1])]
    dep = [values[n] for n in system.unknowns]
    is_real = all(abs(mp.im(v)) <= imag_tol * max(1, abs(v)) for v in dep)
    if is_real:
        dep = [mp.mpc(mp.re(v)) for v in dep]
        values.update({n: v for n, v in zip(system.unknowns, dep)})
    res = 0.0
    for f, terms in residual_fns:
        val = abs(f(*dep))
        scale = sum(abs(tf(*dep)) for tf in terms)
        res = max(res, float(val / max(scale, mp.mpf(1e-300))))
    return Solution(values, is_real, res)


def _residual_fns(system: PolySystem):
    syms = [system.coord_symbols[n] for n in system.unknowns]
    fns = []
    for _, e, terms in system.residual_exprs:
        fns.append((sp.lambdify(syms, e, "mpmath"), [sp.lambdify(syms, tt, "mpmath") for tt in terms]))
    return fns


def _dedupe(points, tol=1e-12):
    out = []
    for p in points:
        if not any(max(abs(a - b) / max(1, abs(a)) for a, b in zip(p, q)) < tol for q in out):
            out.append(p)
    return out


def _solve_sylvester(system, basis, hidden, use_cache, cpu_limit, which="smallest"):
    nv = len(system.variables)
    S = sylvester_matrix(basis, nv, hidden, which=which)
    if S is None:
        return None
    det = sylvester_determinant(S, str(system.variables[hidden]), use_cache, cpu_limit)
    while det and det[0] == 0:
        det = det[1:]
    if len(det) < 2:
        return None
    io = monic(det)
    sols = []
    with mp.workdps(DPS):
        B = _MPBasis(basis)
        for h0 in poly_roots(io):
            X = _nullvector(S, h0)
            known = {hidden: h0}
            for m, val in zip(S.monomials, X):
                if sum(m) == 1:
                    known[m.index(1)] = val
            sols += back_substitute(B, nv, known, tol=mp.mpf("1e-12"))
    return S, io, sols


def _solve_lex(system, hidden, use_cache, cpu_limit):
    """The lex route: basis by FGLM with the hidden variable smallest, then
    triangular back-substitution from its univariate polynomial."""
    order = [v for v in system.variables if v != system.variables[hidden]] + [system.variables[hidden]]
    lex, vdim = groebner_basis(system.polys, order, "lp", use_cache, cpu_limit)
    nv = len(order)
    uni = [g for g in lex if all(sum(e[:-1]) == 0 for e in g)]
    if not uni:
        raise AssemblyError("the lex basis has no univariate polynomial (ideal not zero-dimensional)")
    g = uni[0]
    deg = max(e[-1] for e in g)
    io = monic([g.get(tuple([0] * (nv - 1) + [k]), Fraction(0)) for k in range(deg, -1, -1)])
    sols = []
    with mp.workdps(DPS):
        B = _MPBasis(lex)
        for h0 in poly_roots(io):
            sols += back_substitute(B, nv, {nv - 1: h0}, tol=mp.mpf("1e-25"))
    # back to the system's variable order
    perm = [order.index(v) for v in system.variables]
    sols = [{i: s[perm[i]] for i in range(nv)} for s in sols]
    return io, sols, vdim, len(lex)


def assemble(mech: Mechanism, inputs: dict | None = None, hidden: str | None = None,
             method: str = "auto", cross_check: bool = False, imag_tol: float = 1e-9,
             use_cache: bool = True, cpu_limit: float | None = None, log=None,
             sylvester: str = "smallest", system: PolySystem | None = None) -> AssemblyResult:
    """Every assembly configuration of ``mech`` at the given independent
    coordinates (``inputs``, name -> value, angles in radians; default: the
    mechanism's start values).  ``method`` is "sylvester" (paper 001), "lex"
    (lex basis and triangular back-substitution) or "auto" (Sylvester, and lex
    when no square Sylvester matrix exists).  ``sylvester`` is "smallest" (the
    smallest square nonsingular subset of G) or "full" (all of G, as the
    paper does for examples A and C).  ``system``: ``polynomial_system(mech,
    inputs)`` when the caller has it already."""
    log = log or (lambda msg: None)
    times = {}
    t0 = time.perf_counter()
    system = system or polynomial_system(mech, inputs)
    hints = mech.assembly_hints or AssemblyHints()
    names = [str(v) for v in system.variables]
    if not names:
        # an open chain: no constraint, so no unknown; its one assembly is
        # the independent coordinates as given (the unit ideal of no
        # polynomial has one point: vdim 1, I/O polynomial 1)
        if hidden:
            raise AssemblyError(f"hidden variable '{hidden}': '{mech.name}' has no constraint, so no "
                                "dependent coordinate to solve for")
        times["polynomialize"] = time.perf_counter() - t0
        return AssemblyResult(mech.name, {**system.known, **(inputs or {})}, [], "none (no constraint)",
                              0, 1, "none", "", None, [Fraction(1)], [Solution({}, True, 0.0)], times,
                              None, imag_tol)
    hname = hidden or hints.hidden or names[-1]
    if hname not in names:
        raise AssemblyError(f"hidden variable '{hname}' is not one of {names}")
    hidx = names.index(hname)
    times["polynomialize"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    basis, vdim = groebner_basis(system.polys, system.variables, "dp", use_cache, cpu_limit)
    times["groebner_grevlex"] = time.perf_counter() - t1
    log(f"grevlex basis: {len(basis)} elements, {vdim} solutions (vdim), {times['groebner_grevlex']:.2f} s")
    if len(basis) == 1 and list(basis[0]) == [tuple([0] * len(names))]:
        raise AssemblyError(f"'{mech.name}' cannot be assembled at {system.known}: the constraints "
                            "have no common solution, not even a complex one")
    if vdim < 0:
        raise AssemblyError(f"'{mech.name}' is not finitely solvable at {system.known}: the solution set "
                            "is positive-dimensional (are all the independent coordinates given?)")
    nv = len(names)
    t2 = time.perf_counter()
    out = None
    if method in ("auto", "sylvester"):
        out = _solve_sylvester(system, basis, hidx, use_cache, cpu_limit, sylvester)
        if out is None and method == "sylvester":
            raise AssemblyError(f"no square Sylvester matrix with hidden variable {hname}; "
                                "try another --hidden or method lex")
    if out is not None:
        S, io, raw = out
        used, ssize = "sylvester", S.size
        log(f"Sylvester matrix {S.size}x{S.size} in {hname}: I/O polynomial of degree {len(io) - 1}")
    else:
        io, raw, _, _ = _solve_lex(system, hidx, use_cache, cpu_limit)
        used, ssize = "lex", None
    times["solve"] = time.perf_counter() - t2
    t3 = time.perf_counter()
    newton = _Newton(system)
    rfns = _residual_fns(system)
    pts = []
    with mp.workdps(DPS):
        for s in raw:
            x, moved = newton([s[i] for i in range(nv)])
            pts.append((x, moved))
        uniq = _dedupe([p[0] for p in pts])
        sols = []
        for x in uniq:
            moved = next(m for p, m in pts if p is x)
            sol = _to_solution(system, x, imag_tol, rfns)
            sol.polish = float(moved)
            sols.append(sol)
    sols.sort(key=lambda s: (not s.real, [float(abs(mp.im(v))) for v in s.values.values()]))
    times["back_substitution"] = time.perf_counter() - t3
    result = AssemblyResult(mech.name, {**system.known, **(inputs or {})}, names,
                            "grevlex (Singular dp), highest first", len(basis), vdim, used, hname,
                            ssize, io, sols, times, None, imag_tol)
    if cross_check:
        t4 = time.perf_counter()
        lio, lraw, lvdim, lsize = _solve_lex(system, hidx, use_cache, cpu_limit)
        with mp.workdps(DPS):
            lpts = [newton([s[i] for i in range(nv)])[0] for s in lraw]
            lpts = _dedupe(lpts)
            # distance of each lex solution to the nearest Sylvester one
            dist = 0.0
            for p in lpts:
                d = min(max(float(abs(a - b) / max(1, abs(a))) for a, b in zip(p, q)) for q in uniq) if uniq else math.inf
                dist = max(dist, d)
        io_sqf = _squarefree(io)
        result.cross_check = {
            "lex_basis_size": lsize, "lex_vdim": lvdim,
            "lex_univariate_degree": len(lio) - 1,
            "io_polynomials_equal": _squarefree(lio) == io_sqf,
            "lex_solution_count": len(lpts),
            "max_distance_to_sylvester_solutions": dist,
            "seconds": round(time.perf_counter() - t4, 3)}
    return result


def _squarefree(coeffs):
    """The monic squarefree part P / gcd(P, P') of a rational polynomial."""
    x = sp.Symbol("x")
    P = sp.Poly([sp.Rational(c.numerator, c.denominator) for c in coeffs], x, domain=sp.QQ)
    Q = sp.Poly(sp.quo(P, sp.gcd(P, P.diff(x))), x).monic()
    return [Fraction(int(r.p), int(r.q)) for r in Q.all_coeffs()]
