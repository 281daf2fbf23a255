"""Stage 5 — triangular: each constraint block becomes a recursive solution
sequence q_d = g(q_i) by a lex Gröbner basis.

Per block:

1. *Polynomialize.*  For every unknown angle x, sin x -> s_x and cos x -> c_x
   and s_x² + c_x² − 1 is added; unknown lengths stay as they are.  Anything
   else (sin 2x is expanded first; exp x, sqrt x, x·sin x ...) is an error that
   names the constraint.  Where the arguments are angle sums (relative joint
   angles: cos(ψ + A)), the variables are the sines and cosines of the sums
   instead (``angle_plan``), and step 5 recovers the joint angles from them.
2. *Abstract.*  Each coefficient (w.r.t. the unknowns' monomials) that depends
   on known quantities (independent coordinates, earlier blocks, time) becomes
   a fresh symbol K_j.  The basis is then computed over Q(K), which keeps it
   tiny: a four-bar loop takes milliseconds instead of expanding cos θ terms.
3. *Gröbner basis* in lex order, unknowns' polynomial variables highest
   first as the mechanism (or the default: declaration order, c_x ≻ s_x)
   gives them.
4. *Extract*, last variable first: for each variable the basis element of
   smallest degree in it that contains no higher variable.  Degree 1 is an
   explicit formula; degree 2 a square root, degree > 2 a univariate root.
   Which root is the assembly branch is decided at run time, every time, as
   the root nearest the value predicted from the previous solution (the
   build-time sign only assembles the start).
5. *Recover* coordinates: angle = atan2(s_x, c_x) (of an angle sum's
   difference by angle addition), length = its variable.
6. *Cover the workspace* (``cover_workspace``): a lex sequence has
   representation singularities, regular configurations where one of its
   leading coefficients or discriminants vanishes (a Grashof double-crank
   four-bar divides by l1 cos θ − d).  The reachable workspace is swept by
   Newton continuation (``workspace.py``, independent of the sequences); where
   the primary sequence degenerates, its exact completion (``Completion``:
   the first step's root, of any degree, the circle, then the block's linear
   constraints and the circles of the angles they eliminate, as one linear
   system) takes over if it covers every degenerate swept point; otherwise
   the run-time Newton fallback solves them.  One lex order per block: no
   other order is searched (``cover_workspace`` says why).

Nothing here is bounded by the clock: each block gets one Gröbner basis, of
its given or default order, and Singular's CPU-time safety limit fails the
build when reached (``groebner.SINGULAR_CPU_LIMIT``).  So the same module
gives the same sequences, and the same model.c, on an idle machine and a
loaded one.
"""

from __future__ import annotations

import fractions
import functools
import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from fmigen.derive.dae import DAE
from fmigen.kinematics.groebner import GroebnerError, GroebnerLimit, groebner_lex
from fmigen.kinematics.polynomialize import abstract, angle_plan, polynomialize
from fmigen.model import ModelError, t
from fmigen.derive.partition import Block, Partition
from fmigen.derive.workspace import continuation_newton, sweep, unit_scales


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


#: a block with more polynomial variables than this is solved by Newton
#: without trying a lex basis: a bound on the input, decided before any work.
#: The largest shipped blocks whose bases finish have 9 (the landing gear's,
#: the Stephenson six-bar's 8); the eight-link's 6×6 block (12 variables)
#: had not finished after 4 minutes of CPU time, the five-link's 15×15
#: pose-and-links block (28) not in 60 s.  Below it, Singular's CPU-time
#: safety limit is an error (``groebner.SINGULAR_CPU_LIMIT``).
MAX_GROEBNER_VARIABLES = 10

#: a block whose Bézout number exceeds this is solved by Newton without
#: trying a lex basis, also decided from the input alone.  The Bézout number
#: is the product of the total degrees, in the block's unknown polynomial
#: variables, of its equations and circle identities: a bound on the number
#: of isolated solutions, and so on the degree of the basis' univariate
#: polynomial, whose coefficients (rational functions of the abstracted
#: knowns) make the basis' size.  Variables alone do not tell: the double
#: wishbone's upright block (a ball joint's three Euler angles and an arm's
#: angle, 8 variables like the Stephenson six-bar's block) has 2,592 and its
#: basis did not finish within Singular's 600 s safety limit; the shipped
#: blocks whose bases finish have at most 256 (the landing gear's; the
#: Stephenson six-bar's 16, a Stewart leg's 72); the five-link's and the
#: quarter car's pose blocks 62,208.
MAX_GROEBNER_BEZOUT = 1024

#: Kinematics formulations (``triangularize(kinematics=...)``, ``fmigen build
#: --kinematics``, ``fmigen bench``): "groebner" (default: triangular sequences,
#: Newton only where the mechanism forces it or the block has more than
#: MAX_GROEBNER_VARIABLES polynomial variables),
#: "newton" (one Newton iteration over all dependent coordinates, all
#: constraints as one block), "newton-loop" (Newton on each block separately).
KINEMATICS = ("groebner", "newton", "newton-loop")
DEFAULT_NEWTON_TOL = 1e-10


@dataclass
class Triangularization:
    blocks: list[TriangularBlock]
    partition: Partition
    #: the start assembly (coordinate name -> value)
    start: dict = field(default_factory=dict)
    #: the workspace sweep the cover was decided on (workspace.Sweep)
    sweep: object = None


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
    iv = P.gens.index(v)
    buckets: dict = {}
    for monom, coeff in P.terms():
        rest = monom[:iv] + (0,) + monom[iv + 1:]
        buckets.setdefault(monom[iv], {})[rest] = coeff
    deg = P.degree(v)
    return [sp.Poly.from_dict(buckets.get(d, {}), *P.gens, domain=P.domain) for d in range(deg, -1, -1)]


def _exponents(P: sp.Poly, args) -> tuple[list, np.ndarray, list[int]]:
    """P's terms over ``args`` (symbols): (the generators that occur, their
    positions in args, as a list; exponent matrix terms × those generators;
    integer coefficients).  A generator that occurs and is not in args is an
    error (the evaluation would not know its value)."""
    terms = P.terms()
    used = [k for k, g in enumerate(P.gens) if any(m[k] for m, _ in terms)]
    missing = [P.gens[k] for k in used if P.gens[k] not in args]
    if missing:
        raise ValueError(f"cannot evaluate a polynomial in {missing}: not among {list(args)}")
    E = np.array([[m[k] for k in used] for m, _ in terms], dtype=int).reshape(len(terms), len(used))
    return [list(args).index(P.gens[k]) for k in used], E, [int(c) for _, c in terms]


def poly_evaluator(P: sp.Poly, args):
    """A numpy function of the values of ``args`` (arrays of one length)
    returning (P, Σ|term of P|) there, in double precision, from P's terms:
    what lambdify of the expression and of ``abs_sum`` computed, without
    making and printing the expression (for a six-bar's thousands of terms
    that took seconds per sequence)."""
    pos, E, coeffs = _exponents(P, args)
    c = np.array([float(x) for x in coeffs])

    def evaluate(*vals):
        n = len(np.asarray(vals[0])) if vals else 1
        mono = np.ones((len(c), n))
        for j, k in enumerate(pos):
            x = np.asarray(vals[k], dtype=float)
            powers = np.stack([x ** e for e in range(E[:, j].max() + 1)])
            mono *= powers[E[:, j]]
        return c @ mono, np.abs(c) @ np.abs(mono)
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
    powers = {}
    terms = []
    for row, coeff in zip(E.tolist(), coeffs):
        n, x = coeff, 0
        for j, e in enumerate(row):
            if e:
                if (j, e) not in powers:
                    powers[j, e] = mant[j] ** e
                n *= powers[j, e]
                x += e * expo[j]
        terms.append((n, x))
    if not terms:
        return 0, 0
    low = min(x for _, x in terms)
    return sum(n << (x - low) for n, x in terms), low


def triangularize(dae: DAE, part: Partition, order: list[str] | None = None,
                  use_cache=True, log=None, kinematics="groebner",
                  newton_tol=None, cover=True, guesses=None) -> Triangularization:
    """``cover``: sweep the workspace and add the exact completion where the
    primary sequence degenerates (``cover_workspace``).  ``guesses``: coordinate
    values that pick the start assembly (default: the mechanism's starts)."""
    log = log or (lambda msg: None)
    if kinematics != "groebner":
        return newton_formulation(dae, part, kinematics, newton_tol, log, guesses)
    order = order or dae.mechanism.groebner_order
    if order:
        # a name no block has would be dropped silently, and an order of
        # such names only would be the default order
        stray = [o for o in order if not any(_block_order(dae, b, [o]) for b in part.blocks)]
        if stray:
            raise ModelError(f"Gröbner order: no block has the variable(s) {', '.join(stray)} (a block's "
                             "variables are its coordinates' names, and s_<angle>, c_<angle> for its angles)")
    forced = [set(b) for b in (dae.mechanism.newton_blocks or [])]
    counter = [0]
    tblocks = []
    for b in part.blocks:
        unknown_names = {dae.names[i] for i in b.unknowns}
        name = block_name(dae, b)
        if any(unknown_names <= f for f in forced):
            log(f"block {name}: Newton iteration (forced by the mechanism)")
            tblocks.append(newton_block(b, "forced by the mechanism"))
            continue
        t_block = time.perf_counter()
        block_order = _block_order(dae, b, order) if order else None
        variables, polys, circles, recover, known_ring, sums = polynomialize(dae, b, block_order)
        ring = [*variables, *known_ring]
        if len(ring) > MAX_GROEBNER_VARIABLES:
            reason = (f"{len(ring)} polynomial variables > {MAX_GROEBNER_VARIABLES}, too many for a lex "
                      "Gröbner basis")
            log(f"block {name}: {reason}; Newton iteration on this block")
            tblocks.append(newton_block(b, reason))
            continue
        degrees = [sp.Poly(p, *variables).total_degree() for p in [*polys, *circles]]
        bezout = math.prod(degrees)
        if bezout > MAX_GROEBNER_BEZOUT:
            reason = (f"Bézout number {bezout} (degrees {', '.join(map(str, degrees))}) > "
                      f"{MAX_GROEBNER_BEZOUT}, too large for a lex Gröbner basis")
            log(f"warning: block {name}: {reason}; Newton iteration on this block (newton_blocks says "
                "so without this warning)")
            tblocks.append(newton_block(b, reason))
            continue
        apolys, abstractions = abstract(polys, ring, counter)
        log(f"Gröbner basis of block {name}: {len(apolys)} equations, "
            f"{len(ring)} variables, {len(abstractions)} abstracted knowns")
        try:
            basis = groebner_lex(apolys + circles, ring, list(abstractions), use_cache=use_cache, log=log)
        except GroebnerLimit as e:
            # an error, not Newton: a quiet change of method when a machine
            # is slow would give other C for the same module
            raise ModelError(
                f"block {name}: the Gröbner basis did not finish ({e}); solve the block by Newton "
                f"(list its coordinates {sorted(unknown_names)} in the mechanism's newton_blocks) or give "
                "a Gröbner order (groebner_order, fmigen build --order) for which it finishes") from None
        except GroebnerError as e:
            # any other failure of the engine (it could not run, ran out of
            # memory, refused the input): the block is still solvable, by
            # the same Newton iteration as a block whose basis is too big
            # (the reason is one line; it also labels the block in model.c)
            reason = f"the Gröbner engine failed: {e}".replace("*/", "* /")
            log(f"warning: block {name}: {reason}; solving it by Newton iteration instead")
            tb = newton_block(b, reason)
            tb.engine_failed = True
            tblocks.append(tb)
            continue
        if any(g.is_ground and not g.is_zero for g in basis):
            raise ModelError(f"inconsistent constraints in block {name}: "
                             f"{[dae.constraint_names[j] for j in b.equations]} have no common solution")
        t_extract = time.perf_counter()
        steps = extract(basis, variables, name)
        log(f"block {name}: sequence of {len(steps)} steps (degrees "
            f"{', '.join(str(st.degree) for st in steps)}) extracted in {time.perf_counter() - t_extract:.2f} s")
        tblocks.append(TriangularBlock(b, "groebner", variables, abstractions, steps, recover, apolys,
                                       known_ring, circles=circles, angle_sums=sums,
                                       seconds=time.perf_counter() - t_block))
    tri = Triangularization(tblocks, part)
    choose_branches(dae, tri, guesses)
    if cover:
        cover_workspace(dae, tri, log=log)
    return tri


def block_name(dae, b: Block) -> str:
    return "{" + ", ".join(dae.names[i] for i in b.unknowns) + "}"


def newton_block(b: Block, reason: str) -> TriangularBlock:
    return TriangularBlock(b, "newton", [], {}, [], {}, reason=reason)


def newton_formulation(dae: DAE, part: Partition, kinematics: str, tol=None, log=None,
                       guesses=None) -> Triangularization:
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
    choose_branches(dae, tri, guesses)
    return tri


def _block_order(dae, b, order):
    """The part of a user order that concerns block ``b``: its unknowns' and
    knowns' polynomial variables."""
    names = {dae.names[i] for i in [*b.unknowns, *b.knowns]}
    plan = angle_plan(dae, b)
    names |= set(plan.names.values()) if plan is not None else set()
    return [o for o in order if o in names or (o[:2] in ("s_", "c_") and o[2:] in names)]


# --- numeric evaluation (build time: assembly and branch choice) -------------

#: digits for build-time evaluation: Gröbner coefficients reach hundreds of
#: digits and cancel, so 15 would not do.
PREC = 80


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
        if i in tb.angle_sums:
            s, c, combo = tb.angle_sums[i]
            a = sum(k * guesses[dae.names[j]] for j, k in combo.items())
            out[s], out[c] = math.sin(a), math.cos(a)
        elif isinstance(expr, sp.atan2):
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
    for si, step in enumerate(tb.steps):
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
            names = [dae.names[i] for i in tb.block.unknowns]
            equations = [dae.constraint_names[j] for j in tb.block.equations]
            knowns = [dae.names[i] for i in tb.block.knowns]
            at = ", ".join(f"{k}={v:.6g}" for k, v in q.items() if k in knowns)
            # a block that reads no known coordinate (nor t) has the same
            # equations at every configuration, and its first step's
            # polynomial is in the elimination ideal: no real root there
            # means its constraints never hold together.  A later step's
            # roots depend on the branches the guesses chose before it.
            never = si == 0 and not knowns and not any(dae.Phi[j].has(t) for j in tb.block.equations)
            if never:
                where = "for any configuration: these constraints are inconsistent (they never hold together)"
            elif si > 0:
                where = (f"on the branches the start guesses choose for {[str(st.variable) for st in tb.steps[:si]]}"
                         + (f", at the given independent coordinates ({at})" if knowns else ""))
            else:
                where = f"at the given independent coordinates ({at})"
            raise ModelError(f"the start cannot be assembled: block {names} (constraints {equations}) has no real "
                             f"solution for {step.variable} {where}")
        env[step.variable] = sp.Float(value.real, PREC)
    env.update(known)     # a recovered angle sum subtracts known angles
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


def _guess_distance(dae, values: dict, guesses: dict) -> float:
    """Max over the given coordinates of the distance to the guesses (angles
    modulo 2π)."""
    units = {c.name: c.unit for c in dae.mechanism.coordinates}
    out = 0.0
    for n, v in values.items():
        d = v - guesses[n]
        out = max(out, abs(math.remainder(d, 2 * math.pi)) if units[n] == "rad" else abs(d))
    return out


def _nearer_the_guesses(dae, tb: TriangularBlock, q: dict, got: dict, guesses: dict) -> dict:
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
        local = newton_numeric(dae, tb, q, 0.0, guesses)
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
    for tb in tri.blocks:
        got = solve_block_numeric(dae, tb, q, 0.0, choose_from=guesses, warm=guesses)
        if tb.method != "newton":
            got = _nearer_the_guesses(dae, tb, q, got, guesses)
        q.update(got)
    qv = np.array([q[n] for n in dae.names])
    res = np.abs(dae.numeric.Phi(0.0, qv)).max() if dae.m else 0.0
    if res > 1e-9:
        raise ModelError(f"the start cannot be assembled: residual {res:.3g} after solving "
                         "the triangular sequence")
    tri.start = q
    return q


# --- the workspace cover: the exact completion where the primary degenerates --

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


def block_layout(tb: TriangularBlock, scales):
    """Per unknown coordinate of a block: (model index, kind, variables,
    unit scale); kind "angle" has variables (s, c) and scale 1, "length"
    (x,), and a Newton block's "q" the name q<i>: the coordinate itself."""
    if tb.method == "newton":
        return [(i, "q", (f"q{i}",), float(scales[i])) for i in tb.block.unknowns]
    out = []
    for i in tb.block.unknowns:
        expr = tb.recover[i]
        if i in tb.angle_sums:       # the sine and cosine of an angle sum standing in for q_i
            out.append((i, "angle", tb.angle_sums[i][:2], 1.0))
        elif isinstance(expr, sp.atan2):
            out.append((i, "angle", (expr.args[0], expr.args[1]), 1.0))
        else:
            out.append((i, "length", (expr,), float(scales[i])))
    return out


def _true_values(dae, tb, points):
    """Polynomial-variable values at the swept configurations (columns)."""
    out = {}
    for i, expr in tb.recover.items():
        if i in tb.angle_sums:
            s, c, combo = tb.angle_sums[i]
            a = sum(k * points[:, j] for j, k in combo.items())
            out[s], out[c] = np.sin(a), np.cos(a)
        elif isinstance(expr, sp.atan2):
            out[expr.args[0]] = np.sin(points[:, i])
            out[expr.args[1]] = np.cos(points[:, i])
        else:
            out[expr] = points[:, i].copy()
    return out


def sequence_quality(dae, tb: TriangularBlock, seq: Sequence, points, scales):
    """``sequence_evaluator(...)(points)``: one evaluation."""
    return sequence_evaluator(dae, tb, seq, scales)(points)


def sequence_evaluator(dae, tb: TriangularBlock, seq: Sequence, scales):
    """A function of swept configurations (rows) that evaluates ``seq`` in
    double precision at each, taking every time the root nearest the true
    value (the run-time choice with an exact prediction).  It returns
    (relative error, condition, index of the worst step, signed values) per
    point: the condition is the smallest leading coefficient relative to
    COVER_CONDITION or discriminant relative to COVER_DISCRIMINANT along the
    sequence (< 1 is degenerate); the signed values are (what, step, array)
    for every leading coefficient and discriminant, whose sign changes locate
    zeros between samples.  The expressions are lambdified once here (the
    bisection calls the function again and again)."""
    knowns = [*tb.abstractions, *tb.known_ring]
    known_fn = sp.lambdify([t, *dae.q_sym], [*tb.abstractions.values(), *tb.known_ring.values()], "numpy")
    vscale = {v: scale for _, _, vs, scale in block_layout(tb, scales) for v in vs}
    compiled, args = [], list(knowns)
    for step in seq.steps:
        fns = [poly_evaluator(c, args) for c in step.coeff_polys]
        compiled.append((lambda *v, fns=fns: [f(*v)[0] for f in fns], lambda *v, f=fns[0]: f(*v)[1]))
        args = args + [step.variable]

    def evaluate(points):
        npts = len(points)
        col = lambda x, kind=float: np.broadcast_to(np.asarray(x, dtype=kind), (npts,))  # noqa: E731
        truth = _true_values(dae, tb, points)
        vals = [col(x) for x in known_fn(np.zeros(npts), *points.T)]
        signed = []
        cond = np.full(npts, np.inf)
        worst = np.zeros(npts, dtype=int)
        err = np.zeros(npts)
        with np.errstate(all="ignore"):
            for k, (step, (coeffs_fn, lead_fn)) in enumerate(zip(seq.steps, compiled)):
                co = [col(c_, complex) for c_ in coeffs_fn(*vals)]
                lead_scale = col(lead_fn(*vals))
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
                    x = np.empty(npts, dtype=complex)
                    for j in range(npts):
                        cj = [c_[j] for c_ in co]
                        rts = np.roots(cj) if np.all(np.isfinite(cj)) else [np.nan]
                        x[j] = min(rts, key=lambda z: abs(z - target[j]))
                c_k = np.where(np.isfinite(c_k), c_k, 0.0)
                worst = np.where(c_k < cond, k, worst)
                cond = np.minimum(cond, c_k)
                e = np.abs(x - target) / vscale[step.variable]
                err = np.maximum(err, np.where(np.isfinite(e), e, np.inf))
                vals.append(np.real(x))
        return err, cond, worst, signed
    return evaluate


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


def cover_workspace(dae: DAE, tri: Triangularization, log=None):
    """Sweep the workspace (``workspace.sweep``) and, for every Gröbner block
    whose primary sequence degenerates somewhere on it, take its exact
    completion (``completion_plan``) where that covers every such point.
    Points it does not cover are left to the run-time Newton fallback; all
    are recorded in ``tb.singular_points`` (``fmigen check`` reports them).

    No other lex order is computed, neither to cover degenerate points nor
    to condition the primary better.  Why: each would be another Gröbner
    basis, extraction and sweep evaluation (the Stephenson III six-bar's
    seven other orders were most of its cold build), the exact completion
    covers the degenerate swept points of the Stephenson six-bars and of
    every shipped mechanism whose primary degenerates, and the run time
    verifies every result to FMIGEN_SEQ_TOL and polishes (or completes) one
    that a poorly conditioned sequence leaves short.  The primary's error
    amplification is still measured (``tb.amplification``, reported by
    ``fmigen check``): a mechanism may record a better conditioned order
    (``groebner_order``)."""
    log = log or (lambda msg: None)
    tri.sweep = sw = sweep(dae, tri.partition, tri.start, log=log)
    scales = unit_scales(dae)
    for tb in tri.blocks:
        if tb.method != "groebner":
            continue
        name = block_name(dae, tb.block)
        evaluate = sequence_evaluator(dae, tb, tb.sequences[0], scales)
        quality = evaluate(sw.points)
        singular = representation_singular(quality, sw.paths)
        bad = degenerate(quality, sw.paths, singular)
        tb.amplification = amplification(quality, singular)
        _, cond, worst, _ = quality
        tb.singular_points = _singular_runs(dae, tri, tb, tb.sequences[0], singular, cond, worst, evaluate)
        loss = bad & ~singular
        tb.precision_loss = {"configurations": int(loss.sum()), "of": int(len(loss)),
                             "max_error": float(np.max(np.where(loss, quality[0], 0.0)))}
        if not bad.any():
            continue
        plan = completion_plan(tb)
        if plan is not None:
            missed = int((completion_error(dae, tb, plan, sw.points[bad], scales) > COVER_ERROR).sum())
            if not missed:
                tb.completion = plan
                for sp_ in tb.singular_points:
                    sp_["covered_by"] = plan.label
                log(f"block {name}: the primary sequence degenerates at {int(bad.sum())} of {len(bad)} swept "
                    f"configurations; the exact completion from its root {plan.variable} covers them")
                continue
            log(f"block {name}: the exact completion from {plan.variable} misses {missed} of the primary's "
                f"{int(bad.sum())} degenerate swept configurations")
        log(f"block {name}: the primary sequence degenerates at {int(bad.sum())} of {len(bad)} swept "
            "configurations; the run-time Newton fallback solves them")
        if bad.all():
            # Why: every run-time solve would evaluate the sequence, find it
            # degenerate or short of FMIGEN_SEQ_TOL, and end in Newton anyway
            # (the landing gear: its linear steps' coefficients, degree-12
            # polynomials in p_BC with 260-digit integers, cancel to ~1e-10
            # everywhere).  Newton from the prediction first skips that work;
            # the sequence still finds the branch where there is no
            # prediction (the first assembly) or Newton fails.
            tb.newton_first = True
            log(f"block {name}: its sequence covers no swept configuration; a step that continues from the "
                "last one tries Newton from the prediction first")


#: Newton steps of a high-degree root's refinement (``root_refinement``):
#: the root's double-precision error (≤ 6e-9 on Stephenson I's sweep) is
#: squared by each, so two reach round-off
ROOT_REFINEMENTS = 2


def completion_plan(tb: TriangularBlock) -> Completion | None:
    """The exact completion of ``tb``'s primary sequence (``Completion``), or
    None where it does not apply: constraints that are not, after the first
    step's root and its angle's other variable, a square regular linear
    system in the remaining unknowns.  The rows are the block's own
    polynomials of degree ≤ 1 in them; where there are fewer of those than
    unknowns, the circles of angles those rows eliminate
    (``_eliminated_circle_rows``).  From more rows, the first regular square
    choice in their order.  The first step may have any degree: a quadratic
    keeps its two roots in closed form (``disc_root``), a higher degree's
    root is the run time's univariate root nearest the prediction."""
    if tb.method != "groebner" or not tb.steps or tb.steps[0].degree < 2:
        return None
    step = tb.steps[0]
    x0 = step.variable
    layout = block_layout(tb, dict.fromkeys(tb.block.unknowns, 1.0))
    pair = next((vs for _, kind, vs, _ in layout if kind == "angle" and x0 in vs), ())
    partner = next((v for v in pair if v != x0), None)
    rest = [v for v in tb.variables if v not in (x0, partner)]
    rows = []
    for p in tb.polys if rest else []:
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


def completion_error(dae, tb: TriangularBlock, plan: Completion, points, scales):
    """The completion's error at swept configurations (rows of ``points``),
    relative to the unit scales, in double precision, with the root of
    the first step nearest the true value (as ``sequence_evaluator`` picks
    roots); inf where its linear system is singular."""
    knowns = [*tb.abstractions, *tb.known_ring]
    known_fn = sp.lambdify([t, *dae.q_sym], [*tb.abstractions.values(), *tb.known_ring.values()], "numpy")
    step = tb.steps[0]
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
    vscale = {v: scale for _, _, vs, scale in block_layout(tb, scales) for v in vs}
    truth = _true_values(dae, tb, points)
    err = np.zeros(len(points))
    for j, q in enumerate(points):
        kv = [float(x) for x in np.broadcast_to(known_fn(0.0, *q), (len(knowns),))] if knowns else []
        target = truth[plan.variable][j]
        if plan.degree == 2:
            A2, A1, A0, r = (float(x) for x in quad(*kv))
            x = min(((-A1 + r) / (2 * A2), (-A1 - r) / (2 * A2)), key=lambda z: abs(z - target))
        else:
            co = [complex(f(*[np.array([v]) for v in kv])[0][0]) for f in coeff_fns]
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


def _singular_runs(dae, tri, tb, seq, bad, cond, worst, quality_at):
    """One entry per contiguous run of degenerate points along each sweep
    path: which step and coefficient, the symbolic condition (the leading
    coefficient in the coordinates), and where: the zero of the coefficient
    or discriminant that changes sign there, located by bisection on the
    continuation (else the worst swept point)."""
    out = []
    indep = tri.partition.independent
    for path in tri.sweep.paths:
        run = []
        for pos, idx in enumerate(path + [None]):
            if idx is not None and bad[idx]:
                run.append(pos)
                continue
            if run:
                points = [path[r] for r in run]
                j = min(points, key=lambda r: cond[r])
                step = seq.steps[int(worst[j])]
                what = f"{'discriminant or ' if step.degree == 2 else ''}leading coefficient of the " \
                       f"degree-{step.degree} step for {step.variable}"
                at = tri.sweep.points[j]
                zero = _bisect_sign_change(dae, tri, path, run, quality_at)
                if zero is not None:
                    what, k_step, at = zero
                    step = seq.steps[k_step]
                lead = step.coeffs[0].xreplace({K: e for K, e in tb.abstractions.items()})
                out.append({"block": block_name(dae, tb.block), "variable": str(step.variable),
                            "condition": what,
                            "leading_coefficient": str(sp.factor(lead)) if len(str(lead)) < 400 else str(lead)[:400],
                            "at": {dae.names[i]: float(at[i]) for i in indep},
                            "located": "bisection" if zero is not None else "sweep point",
                            "points": len(run), "index": int(j),
                            "covered_by": None})
                run = []
    # the same singular point reached from both directions (angles mod 2π)
    period = {dae.names[i]: 2 * np.pi if dae.mechanism.coordinates[i].unit == "rad" else np.inf
              for i in indep}

    def same(a, b):
        for k in a:
            d = abs(a[k] - b[k])
            if np.isfinite(period[k]):
                d = min(d % period[k], period[k] - d % period[k])
            if d > 0.02:
                return False
        return True
    uniq = []
    for sp_ in out:
        if not any(same(sp_["at"], u["at"]) for u in uniq):
            uniq.append(sp_)
    return uniq


def _bisect_sign_change(dae, tri, path, run, quality_at, iterations=40):
    """The configuration where a signed leading coefficient or discriminant
    of the sequence crosses zero between two neighbours of the run on the
    path: (what, step index, configuration), or None."""
    pts = tri.sweep.points
    lo_pos, hi_pos = max(run[0] - 1, 0), min(run[-1] + 1, len(path) - 1)
    q = pts[[path[p] for p in range(lo_pos, hi_pos + 1)]]
    signed = quality_at(q)[3]
    dep = tri.partition.dependent
    for what, k_step, val in signed:
        flips = np.flatnonzero(np.sign(val[1:]) * np.sign(val[:-1]) < 0)
        if not len(flips):
            continue
        a, b = q[flips[0]].copy(), q[flips[0] + 1].copy()
        fa = val[flips[0]]
        for _ in range(iterations):
            mid = 0.5 * (a + b)
            m = continuation_newton(dae.numeric, 0.0, mid.copy(), dep)
            if m is None:
                break
            fm = next(v for w, _, v in quality_at(m[None, :])[3] if w == what)[0]
            if np.sign(fm) == np.sign(fa):
                a, fa = m, fm
            else:
                b = m
        return what, k_step, 0.5 * (a + b)
    return None
