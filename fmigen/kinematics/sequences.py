"""The triangular decomposition's data: a block's solution sequence
(``Step``, ``Sequence``), its exact completion (``Completion``), the block
(``TriangularBlock``) and the mechanism's blocks (``Triangularization``);
a sequence read off a lex Gröbner basis (``extract``), and its integer
coefficient polynomials evaluated exactly or vectorized (``poly_value``,
``poly_evaluator``).
"""

from __future__ import annotations

import fractions
import functools
import math
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from fmigen.model import ModelError
from fmigen.derive.partition import Block, Partition


@dataclass
class Step:
    """One step of a sequence.  The coefficients are kept as integer
    polynomials (``sp.Poly``, the basis element's generators): the build-time
    evaluations (start assembly, workspace cover) work on their terms, and
    the expressions (``coeffs``, ``poly``) are only made when asked for
    (a six-bar's are thousands of terms with 50-digit coefficients: turning
    every one into an expression took seconds that nothing needed)."""
    variable: sp.Symbol
    degree: int
    coeff_polys: list[sp.Poly]   # highest power first; polynomials in K and lower variables
    element: sp.Poly             # the basis element used
    sign: int = 1                # square-root branch of the start assembly (build time only)

    @functools.cached_property
    def coeffs(self) -> list[sp.Expr]:
        return [c.as_expr() for c in self.coeff_polys]

    @functools.cached_property
    def poly(self) -> sp.Expr:
        return self.element.as_expr()

    @property
    def terms(self):
        return len(self.element.terms())

    @property
    def max_coeff_digits(self):
        return max(len(str(abs(int(c)))) for c in self.element.coeffs())


@dataclass
class Sequence:
    """The solution sequence of a block: the lex order it comes from and its
    steps in solving order."""
    variables: list[sp.Symbol]
    steps: list[Step]
    #: its error amplification on the workspace sweep (``amplification``):
    #: the largest double-precision error, in units of the machine epsilon
    amplification: float = math.nan

    @property
    def label(self):
        return " > ".join(map(str, self.variables))


@dataclass
class Completion:
    """The exact completion of a primary sequence (``completion_plan``), for
    the configurations where a later, linear step's leading coefficient
    vanishes: no iteration on the block's constraints once the first step's
    root is known.

    Why it exists: a linear step's leading coefficient that vanishes at a
    regular configuration means that two assemblies share the values solved
    before it there (the drag-link four-bar's two assemblies share sin φ
    where the line from the crank pin to the second pivot is vertical), so
    the lex sequence cannot tell them apart from those values.  Two things
    still can, without another lex order or an iteration:

    1. the first step's root.  A quadratic's two roots, accurate even where
       they meet: the discriminant, factored at build time, has the
       vanishing coefficient as a square factor, so √disc = |f|^k·√rest is
       computed without the cancellation that costs the plain formula half
       its digits (``disc_root``).  A higher degree's (the Stephenson
       six-bars' sextic) root nearest the prediction, by the run time's
       univariate root finder, then refined on the block's own constraints
       (``refine``, ``root_refinement``);
    2. from the root, its angle's other variable by the circle
       s² + c² = 1 (the root nearest its prediction: the assemblies that
       share sin φ have cos φ of opposite signs), and every other variable
       by one square linear system (``rows``, solved by LU): the block's own
       constraints that are linear in the remaining unknowns and, where
       those are fewer than the unknowns, the circles of the angles they
       eliminate (``_eliminated_circle_rows``).

    The run time tries the first root's completion, then (a quadratic) the
    other root's, each accepted only when the block's polynomials vanish to
    round-off (FMIGEN_SEQ_TOL) and its roots continue the last solution."""
    variable: sp.Symbol                    # the first step's variable (the univariate root)
    disc_root: sp.Expr | None              # √(discriminant) in factored form, or None (plain formula)
    partner: sp.Symbol | None              # the other variable of its angle, by the circle
    rest: list[sp.Symbol]                  # the remaining unknowns, by the linear system
    rows: list[tuple[list[sp.Expr], sp.Expr]]   # per equation: coefficients of ``rest``, constant
    degree: int = 2                        # the first step's degree
    #: where ``rows`` include eliminated circles (``_eliminated_circle_rows``):
    #: the root's refinement on the univariate in the constraints' own form
    #: (``root_refinement``): (the angle pair (s, c) of the root, the pair
    #: whose circle is left over, per row the derivative along the root's
    #: angle of its coefficients and constant); None: no refinement
    refine: tuple | None = None

    label = "exact completion"

    @property
    def attempts(self) -> int:
        """Run-time attempts: a quadratic's nearer root, then its other root;
        a higher degree's root nearest the prediction (the univariate root
        finder's choice, which continues the branch)."""
        return 2 if self.degree == 2 else 1


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
    #: why a block is solved by Newton ("forced by the mechanism", ...)
    reason: str = ""
    #: Newton because the Gröbner engine failed (not ran out of time): the
    #: derived-model cache does not record such a build (``derived.remember``)
    engine_failed: bool = False
    #: the exact completion of the primary sequence (``completion_plan``):
    #: where one of its linear steps' leading coefficients vanishes, the
    #: rest of the block from its univariate root without another lex order
    completion: Completion | None = None
    #: the circle identities s² + c² − 1 of the block's angles
    circles: list[sp.Expr] = field(default_factory=list)
    #: how long the primary sequence took to build (basis and extraction),
    #: for the log only: nothing the build decides reads it
    seconds: float = 0.0
    #: swept configurations where the primary sequence, evaluated in double
    #: precision, misses by more than COVER_ERROR without a vanishing
    #: coefficient (huge Gröbner coefficients cancelling; the run-time
    #: polish repairs it)
    precision_loss: dict = field(default_factory=dict)
    #: representation singularities the workspace sweep found (see
    #: ``cover_workspace``), for ``fmigen check``
    singular_points: list[dict] = field(default_factory=list)
    #: Newton blocks of an alternative formulation (``kinematics`` "newton" or
    #: "newton-loop", see ``triangularize``): absolute tolerance on the Newton
    #: step; None keeps the default 1e-14·(1 + max|q|) convergence test.
    tol: float | None = None
    #: the primary sequence's error amplification (``amplification``)
    amplification: float = math.nan
    #: no swept configuration is covered by the block's sequence or its
    #: exact completion (``cover_workspace``): a step continuing from the last one tries Newton
    #: from the prediction first, the sequences only when that fails (and at
    #: the first assembly, which has no prediction)
    newton_first: bool = False
    #: unknown angles whose polynomial variables are the sine and cosine of
    #: an angle sum ψ (``angle_plan``): coordinate index -> (s, c,
    #: {coordinate index: integer coefficient}); ``recover`` turns them into
    #: the coordinate.  Empty when every pair is its own angle's.
    angle_sums: dict = field(default_factory=dict)

    @property
    def sequences(self) -> list[Sequence]:
        return [Sequence(self.variables, self.steps, self.amplification)] if self.method == "groebner" else []


@dataclass
class Triangularization:
    blocks: list[TriangularBlock]
    partition: Partition
    #: the start assembly (coordinate name -> value)
    start: dict = field(default_factory=dict)
    #: the workspace sweep the cover was decided on (workspace.Sweep)
    sweep: object = None
    #: the hard points' range check, one record per sample
    #: (``hard_points.sweep_hard_point_range``); empty without hard points
    hard_point_range: list = field(default_factory=list)


def extract(basis, variables, block_name) -> list[Step]:
    """Solution sequence for ``variables`` (unknowns, highest first); any
    lower ring variables are knowns.  ``basis``: integer polynomials
    (sp.Poly) whose generators include ``variables``; the work is done on
    their term dictionaries (a six-bar's basis has coefficients of hundreds
    of terms: expression-level degree and collection took minutes)."""
    steps = []
    for j in range(len(variables) - 1, -1, -1):
        v = variables[j]
        higher = set(variables[:j])
        cands = [g for g in basis if g.degree(v) > 0 and not any(g.degree(h) > 0 for h in higher)]
        if not cands:
            raise ModelError(f"block {block_name}: the Gröbner basis has no element that solves for {v}")
        best = min(cands, key=lambda g: (g.degree(v), len(g.terms())))
        steps.append(Step(v, best.degree(v), _coefficients_in(best, v), best))
    return steps


def _coefficients_in(P: sp.Poly, v) -> list[sp.Poly]:
    """P's coefficients as a polynomial in v, highest power first, each a
    polynomial in the other generators (same generators and domain as P)."""
    from fmigen.kinematics.groebner import poly_from_terms
    iv = P.gens.index(v)
    buckets: dict = {}
    for monom, coeff in P.rep.terms():   # the domain's own elements
        rest = monom[:iv] + (0,) + monom[iv + 1:]
        buckets.setdefault(monom[iv], {})[rest] = coeff
    deg = P.degree(v)
    return [poly_from_terms(buckets.get(d, {}), P.gens, P.domain) for d in range(deg, -1, -1)]


def _exponents(P: sp.Poly, args) -> tuple[list, np.ndarray, list[int]]:
    """P's terms over ``args`` (symbols): (the generators that occur, their
    positions in args, as a list; exponent matrix terms × those generators;
    integer coefficients).  A generator that occurs and is not in args is an
    error (the evaluation would not know its value)."""
    used, E, coeffs = _terms_of(P)
    missing = [P.gens[k] for k in used if P.gens[k] not in args]
    if missing:
        raise ValueError(f"cannot evaluate a polynomial in {missing}: not among {list(args)}")
    return [list(args).index(P.gens[k]) for k in used], E, coeffs


#: ``_terms_of``'s results by the Poly's identity: (the Poly, its result),
#: the Poly held so that its id is not reused while the entry lives
_TERMS: dict = {}
_TERMS_KEPT = 512


def _terms_of(P: sp.Poly) -> tuple[list[int], np.ndarray, list[int]]:
    """P's terms: (the indices of the generators that occur; the exponent
    matrix, terms × those generators; the integer coefficients), once per
    Poly object.  Why: a build evaluates the same sequence coefficients at
    the start (``branches``, exactly) and on the workspace sweep
    (``poly_evaluator``), and reading a six-bar's thousands of terms out of
    sympy's representation was most of either.  The caller must not change
    what it gets (the matrix is shared)."""
    found = _TERMS.get(id(P))
    if found is not None and found[0] is P:
        return found[1]
    terms = P.terms()
    used = [k for k, g in enumerate(P.gens) if any(m[k] for m, _ in terms)]
    E = np.array([[m[k] for k in used] for m, _ in terms], dtype=int).reshape(len(terms), len(used))
    E.flags.writeable = False
    out = (used, E, [int(c) for _, c in terms])
    while len(_TERMS) >= _TERMS_KEPT:
        _TERMS.pop(next(iter(_TERMS)))
    _TERMS[id(P)] = (P, out)
    return out


def poly_evaluator(P: sp.Poly, args):
    """A numpy function of the values of ``args`` (arrays of one length)
    returning (P, Σ|term of P|) there, in double precision, from P's terms:
    what lambdify of the expression and of ``abs_sum`` computed, without
    making and printing the expression (for a six-bar's thousands of terms
    that took seconds per sequence).  With ``scale=False`` the second value
    is None and not computed (a step's coefficients other than its leading
    one need no scale: half the work of each)."""
    pos, E, coeffs = _exponents(P, args)
    c = np.array([float(x) for x in coeffs])

    def evaluate(*vals, scale=True):
        n = len(np.asarray(vals[0])) if vals else 1
        mono = None
        for j, k in enumerate(pos):
            x = np.asarray(vals[k], dtype=float)
            powers = np.stack([x ** e for e in range(E[:, j].max() + 1)])
            # the first factor taken as it is: 1·x is x, to the bit
            if mono is None:
                mono = powers[E[:, j]]
            else:
                mono *= powers[E[:, j]]
        if mono is None:
            mono = np.ones((len(c), n))
        return c @ mono, (np.abs(c) @ np.abs(mono) if scale else None)
    return evaluate


def poly_value(P: sp.Poly, env: dict) -> float:
    """P at ``env`` (generator -> sp.Float), exactly (a Float is m·2^e, so
    integer arithmetic gives the exact value), rounded once to a double:
    what ``complex(P.as_expr().xreplace(env).evalf(PREC))`` gave, without
    making the expression."""
    total, low = _poly_exact(P, env)
    return float(fractions.Fraction(total) * fractions.Fraction(2) ** low)


def poly_values_scaled(polys, env: dict) -> list[float]:
    """The values of ``polys`` at ``env``, exact and rounded once, all divided
    by one power of two so the largest is near 1.  A step only uses ratios of
    its coefficients, and some exceed the double range (a landing gear
    sequence in absolute angles: beyond 1e308) although their ratios do not."""
    exact = [_poly_exact(P, env) for P in polys]
    top = max((n.bit_length() + x for n, x in exact if n), default=0)
    return [float(fractions.Fraction(n) * fractions.Fraction(2) ** (x - top)) for n, x in exact]


def _poly_exact(P: sp.Poly, env: dict) -> tuple[int, int]:
    """P at ``env`` as an exact n·2^x (integers n, x)."""
    pos, E, coeffs = _exponents(P, list(env))
    vals = list(env.values())
    mant, expo = [], []
    for k in pos:
        sign, man, exp, _ = sp.Float(vals[k])._mpf_
        mant.append(-man if sign else man)
        expo.append(exp)
    # per generator, its mantissa's powers and their binary exponents,
    # indexed by the power: each term then costs a few integer products
    # (exact, so any order of them gives the same n·2^x)
    top = E.max(axis=0).tolist() if len(E) else []
    powers = [[m ** e for e in range(d + 1)] for m, d in zip(mant, top)]
    shifts = [[x * e for e in range(d + 1)] for x, d in zip(expo, top)]
    terms = []
    for row, coeff in zip(E.tolist(), coeffs):
        n, x = coeff, 0
        for p, h, e in zip(powers, shifts, row):
            n *= p[e]
            x += h[e]
        terms.append((n, x))
    if not terms:
        return 0, 0
    low = min(x for _, x in terms)
    return sum(n << (x - low) for n, x in terms), low


def block_name(dae, b: Block) -> str:
    return "{" + ", ".join(dae.names[i] for i in b.unknowns) + "}"
