"""Stage 6b — the embedded right-hand side as straight-line generated C.

For a state (q complete after the kinematics, v_i) the embedding needs

    v_d = −Φ_d⁻¹ (Φ_i v_i + Φ_t),      a_c = Φ_d⁻¹ γ,      B = [−Φ_d⁻¹ Φ_i ; I],
    (Bᵀ M B) q̈_i = Bᵀ (F − M a_c)                             (paper 000, eq. 11).

Why generated and not a runtime loop: the matrices are tiny and sparse
(Φ_d block-diagonal with six 3×3 blocks for the Stewart platform, M block
diagonal), and generic loops over index arrays spent ~10 instructions per
useful flop; every separately generated model function also re-evaluated
sin/cos of every angle.  Here one function evaluates Φ_q, Φ_t, γ, M and F with
one joint common-subexpression elimination, then the
linear algebra unrolled over the structural non-zeros only:

- each diagonal block of Φ_d (the partition's blocks, in block-triangular
  order) up to 3×3 is inverted by its adjugate, with a singularity test on
  the determinant relative to the product of its rows' largest Φ_q entries;
  larger blocks use the runtime's LU with partial pivoting;
- the couplings below the diagonal blocks enter by block forward
  substitution;
- Bᵀ M B is formed from M's non-zeros, upper triangle only (it is
  symmetric), and solved by an unrolled LDLᵀ factorization (symmetric
  positive definite: the kinetic energy in the independent velocities);
- where Φ_d is block-diagonal with blocks up to 3×3 and M couples no two
  blocks (nor a block to an independent coordinate), as the Stewart
  platform's legs, Bᵀ M B is instead summed block by block without forming
  X, when that is the cheaper code (``_blockwise_reduced``).

Nothing is expanded symbolically across the linear algebra: every
intermediate is a named double, so the code grows like the number of
non-zeros, not like the inverse's expression.

With that blockwise structure, diagonal blocks of one size (the Stewart
legs) are computed four at a time in vector lanes: what the per-block loops
emit is tagged (``_Code.lane``) and ``codegen_slp`` packs it.

Generated functions (declared in ``runtime/fmigen_runtime.h``):

- ``int fmigen_embedded_velocities(t, q, v, p, u, trig)``: fills v_d in v
  from v_i;
- ``int fmigen_embedded_prepare(t, q, v, p, trig, work)``: the same, then
  everything of q̈_i that does not read the inputs u, into ``work``
  (FMIGEN_NWORK doubles);
- ``int fmigen_embedded_finish(t, q, v, p, u, trig, work, qdd_i)``: q̈_i from
  that and u (``_split_inputs``: one right-hand side cut in two, so the
  runtime can keep the first half with a committed state);

with ``trig`` the sines and cosines of the angles as the kinematics left them
(``codegen.trig_plan``): one joint CSE over Φ_q, Φ_t, γ, M and F
(each remaining sin/cos once) then uses no libm call for an angle the
kinematics solved.

Both return 0, 1 when a diagonal block of Φ_d is singular, 2 when Bᵀ M B is
not positive definite.
"""

from __future__ import annotations

import functools
import math
import re
from contextlib import nullcontext

import sympy as sp
from sympy.simplify.cse_main import basic_optimizations, postprocess_for_cse, preprocess_for_cse

from fmigen.generate import codegen_recursive as recursive
from fmigen.generate import codegen_slp as slp
from fmigen.generate import cse_prepass
from fmigen.generate.chunking import CHUNK_ABOVE, _split_inputs, chunked
from fmigen.generate.exact_expansion import ExactExpansion
from fmigen.generate.embedding_blockwise import (_blockwise_reduced, _blockwise_structure,
                                                 _blockwise_transposed, _lane_blocks, _lane_roles)
from fmigen.generate.operation_count import OperationCount
from fmigen.generate.printer import SymbolMap, c
from fmigen.derive.embed import Embedding
from fmigen.generate.unrolled_algebra import _Code, _factor_block, _ldlt_solve
from fmigen.model import t as TIME
from fmigen.kinematics.sequences import Triangularization
from fmigen.symbolic import shared_xreplace


def _late(reps, seeds):
    """The CSE temporaries that depend (transitively) on any symbol in seeds."""
    late = set(seeds)
    out = set()
    for s, e in reps:
        if e.free_symbols & late:
            late.add(s)
            out.add(s)
    return out


def _needed(reps, exprs):
    """The CSE temporaries the given expressions use, transitively."""
    need = set().union(*(e.free_symbols for e in exprs)) if exprs else set()
    out = set()
    for s, e in reversed(reps):
        if s in need:
            out.add(s)
            need |= e.free_symbols
    return out


def on_the_circle(exprs: list) -> list:
    """The model quantities as polynomials reduced on the unit circles of their
    angles, collected by the velocities, for the joint CSE.

    Why: after the sin/cos → ``trig`` substitution the expressions are
    polynomials in each angle's pair (s, c) = (trig[2k], trig[2k+1]), and
    the derivation leaves s² + c² unreduced everywhere — the Stewart
    platform's mass matrix has p·s² + p·c² for p, and γ and F (derivatives of
    rotation matrices in Euler angles) are full of such sums.  Each
    expression is expanded and every s^n (n ≥ 2) replaced by
    s^(n mod 2)·(1 − c²)^(n div 2) — the normal form modulo s² + c² − 1 — and
    the result collected by the velocities v[i] (γ is a quadratic form in
    them, F has the velocity products of its Coriolis terms), which lets
    the CSE share the coefficient polynomials.  Stewart (γ, M and F so
    reduced, ``circle_where_cheaper``): 1,052 → 645 multiplications and
    607 → 425 additions over Φ_q, γ, M and F (sympy's count of the joint CSE
    output).  The values are the same on the constraint
    manifold, where the kinematics' pairs lie on the circle to rounding (the
    sequences verify s² + c² − 1 with the block's polynomials; the
    independent angles' pairs from fmigen_sincos, within an ulp): the arithmetic is
    reassociated, not approximated."""
    syms = set().union(*(sp.sympify(e).free_symbols for e in exprs)) if exprs else set()
    trig = {s.name: s for s in syms if s.name.startswith("trig[")}
    pairs = {}
    for name, sym in trig.items():
        k = int(name[5:-1])
        if k % 2 == 0 and f"trig[{k + 1}]" in trig:
            pairs[sym] = trig[f"trig[{k + 1}]"]
    vel = sorted((s for s in syms if s.name.startswith("v[")), key=lambda s: int(s.name[2:-1]))

    def is_high_sine(x):
        return x.is_Pow and x.base in pairs and x.exp.is_Integer and x.exp >= 2

    def reduce_sine(x):
        n = int(x.exp)
        return x.base ** (n % 2) * (1 - pairs[x.base] ** 2) ** (n // 2)

    # exact polynomials (Φ_q's) by polynomial arithmetic: the same expansion
    exact = ExactExpansion(syms, pairs)
    out = []
    for e in exprs:
        e = sp.sympify(e)
        poly = exact.polynomial(e)
        if poly is not None:
            e = exact.expression(exact.on_the_circle(poly) if pairs else poly)
        else:
            e = sp.expand(e)
            if pairs:
                e = sp.expand(e.replace(is_high_sine, reduce_sine))
        # by the velocities this entry has: collecting by all n of them
        # costs n per entry, O(n²) over a model (a 32-cell ladder's 160)
        mine = [v for v in vel if v in e.free_symbols]
        out.append(sp.collect(e, mine) if mine else e)
    return out


#: Model quantities this large are not expanded onto the unit circle
#: (``circle_where_cheaper``, per quantity) and, together, do not get the
#: joint CSE's 'basic' pre-pass (sympy's factor_terms on every sum): both
#: take time superlinear in the size for a few per cent of the operations.
#: The bounds lie between the largest shipped quantities, whose code they
#: leave as it was, and the vehicle's, whose generation did not finish with
#: both (docs/benchmarks.md, "Measurements behind the code's choices").
#: Counts are sympy's, before any substitution.
CIRCLE_MAX_OPS = 20_000
LARGE_MODEL_OPS = 60_000
#: ... nor a quantity whose expansion would form more than this many products
#: (``expansion_products``).  Why a second bound: sympy's expansion costs
#: about the same per product formed whatever the size in operations, and a
#: few thousand operations of nested products (the Euler angles' rotations
#: of a spatial suspension) multiply out into thousands of products, where
#: the expansion was never the cheaper code; every expansion the shipped
#: mechanisms keep forms far fewer.  A count of work, not of time: the same
#: quantities give the same code on any machine.
CIRCLE_MAX_PRODUCTS = 4_000


def expansion_products(exprs, limit=CIRCLE_MAX_PRODUCTS) -> int:
    """An upper bound of the products that expanding ``exprs`` forms (the
    terms before like ones are collected), counted without expanding: a sum
    has its terms' count, a product the product of its factors' counts, a
    power b^n (integer n > 0) the number of monomials of degree n in b's
    terms, C(t + n - 1, n); anything else one.  Counting stops above
    ``limit``."""
    memo: dict = {}

    def count(e):
        if e in memo:
            return memo[e]
        if e.is_Add:
            r = sum(count(a) for a in e.args)
        elif e.is_Mul:
            r = 1
            for a in e.args:
                r = min(r * count(a), limit + 1)
        elif e.is_Pow and e.exp.is_Integer and e.exp > 0:
            r = math.comb(count(e.base) + int(e.exp) - 1, int(e.exp))
        else:
            r = 1
        memo[e] = r = min(r, limit + 1)
        return r

    total = 0
    for e in exprs:
        total += count(sp.sympify(e))
        if total > limit:
            break
    return total


def is_large(exprs, limit=LARGE_MODEL_OPS) -> bool:
    """More than ``limit`` operations in ``exprs`` (counting stops there)."""
    total = 0
    for e in exprs:
        total += _expression_operations(e)
        if total > limit:
            return True
    return False


_OPERATIONS = OperationCount()


@functools.lru_cache(maxsize=100_000)
def _expression_operations(e) -> int:
    """``sp.count_ops(e)``, kept: the same quantities are counted again by
    ``is_large`` (per quantity, then all of them) and the two joint CSEs of
    ``_joint_cse_with_gamma`` share all their temporaries but γ's.  sympy's
    count of a list is the sum of its items' counts; each sub-expression
    is counted once (``operation_count``)."""
    return _OPERATIONS.count(e)


def _operations(cse) -> int:
    """sympy's operation count of a CSE's result (its temporaries and rows)."""
    reps, reduced = cse
    return sum(_expression_operations(e) for e in [e for _, e in reps] + list(reduced))


def _cse_ops(exprs) -> int:
    return _quick_cse_operations(tuple(exprs))


@functools.lru_cache(maxsize=64)
def _quick_cse_operations(exprs: tuple) -> int:
    """``_cse_ops``, kept: γ's quick CSE is counted by
    ``circle_where_cheaper`` and again by ``_joint_cse_with_gamma``."""
    return _operations(sp.cse(list(exprs), symbols=sp.numbered_symbols("w"), order="none", optimizations=None))


def circle_where_cheaper(exprs: list) -> list:
    """``on_the_circle(exprs)`` when that makes one quantity's code (all its
    entries, e.g. every entry of M) cheaper, else ``exprs`` unchanged.
    Why per quantity and measured: the expansion it needs multiplies out
    factored products, which a CSE shares well — the five-link's γ in
    factored form takes 2,076 operations after CSE, expanded and reduced
    3,149, while its M and F shrink from 142 to 45 and 346 to 167; the
    Stewart platform's γ, M and F all shrink (965 → 818, 310 → 93,
    762 → 408), and no Φ_q does (its entries are multilinear in each angle's
    pair: nothing to reduce, only products multiplied out).  The count is
    sympy's operations after a quick CSE (no optimizations) of the quantity
    alone, which orders the alternatives as the joint CSE does."""
    if not exprs or is_large(exprs, CIRCLE_MAX_OPS) or expansion_products(exprs) > CIRCLE_MAX_PRODUCTS:
        return exprs
    reduced = on_the_circle(exprs)
    if all(r == e for r, e in zip(reduced, exprs)):
        return exprs
    return reduced if _cse_ops(reduced) < _cse_ops(exprs) else exprs


def _jet(e, jets: dict):
    """(ė, ë) of a polynomial in the coordinates, t, and sines and cosines of
    such, along q̇ with q̈ = 0 (``jets`` maps every atom already known, a
    coordinate to (its velocity, 0), t to (1, 0), a CSE symbol to its own
    pair), every other symbol and every constant (π, √3) constant in time:
    Φ reads no symbol but the coordinates and t (``dae.build_dae`` checks).
    None for a function it has no rule for (sqrt, Abs, exp, Piecewise, a
    non-integer power)."""
    if e in jets:
        return jets[e]
    if e.is_number or e.is_Symbol:
        return sp.Integer(0), sp.Integer(0)
    if e.is_Add:
        parts = [_jet(a, jets) for a in e.args]
        if any(x is None for x in parts):
            return None
        return sp.Add(*[x[0] for x in parts]), sp.Add(*[x[1] for x in parts])
    if e.is_Mul:
        args = e.args
        parts = [_jet(a, jets) for a in args]
        if any(x is None for x in parts):
            return None
        d1, d2 = [], []
        for i, (a1, a2) in enumerate(parts):
            if a1 == 0 and a2 == 0:
                continue
            rest = sp.Mul(*(args[:i] + args[i + 1:]))
            d1.append(rest * a1)
            d2.append(rest * a2)
            for j in range(i + 1, len(args)):
                if parts[j][0] != 0:
                    d2.append(2 * sp.Mul(*[args[k] for k in range(len(args)) if k not in (i, j)])
                              * a1 * parts[j][0])
        return sp.Add(*d1), sp.Add(*d2)
    if e.is_Pow and e.exp.is_Integer:
        b, n = e.base, int(e.exp)
        part = _jet(b, jets)
        if part is None:
            return None
        b1, b2 = part
        return n * b ** (n - 1) * b1, n * b ** (n - 1) * b2 + n * (n - 1) * b ** (n - 2) * b1 ** 2
    if isinstance(e, (sp.sin, sp.cos)):
        part = _jet(e.args[0], jets)
        if part is None:
            return None
        u1, u2 = part
        s, c_ = sp.sin(e.args[0]), sp.cos(e.args[0])
        if isinstance(e, sp.sin):
            return c_ * u1, c_ * u2 - s * u1 ** 2
        return -s * u1, -s * u2 - c_ * u1 ** 2
    return None


def gamma_by_jets(dae) -> list | None:
    """γ = −Φ̈ at q̈ = 0 (the same quantity as ``dae.gamma``, −(Φ_q q̇)_q q̇ −
    2 Φ_qt q̇ − Φ_tt) by forward differentiation: Φ through one CSE, and for
    each of its temporaries and rows the first and second time derivative
    from its operands' (product rule, chain rule for sin and cos), then
    substituted back into one expression per row for the joint CSE.  Why:
    the symbolic γ differentiates Φ_q q̇ as expanded expressions and loses
    the products Φ is built of — the five-link's distance constraints
    |d|² − L² become γ = −2(ḋ·ḋ + d·d̈) again this way: 2,109 → 1,174
    operations after CSE (sympy's count), the Stewart platform's 1,001 → 639
    (786 on the unit circle).  None when Φ uses a function without a rule."""
    reps, rows = sp.cse(list(dae.Phi), optimizations=None)
    jets = {qs: (vs, sp.Integer(0)) for qs, vs in zip(dae.q_sym, dae.v_sym)}
    jets[TIME] = (sp.Integer(1), sp.Integer(0))
    # each temporary's derivatives as symbols of their own while the rows
    # are differentiated (small expressions), then everything substituted
    # back in order: each definition refers to earlier ones only
    defs = []
    for sym, e in reps:
        part = _jet(e, jets)
        if part is None:
            return None
        d1, d2 = sp.Symbol(f"{sym.name}_d1"), sp.Symbol(f"{sym.name}_d2")
        defs += [(sym, e), (d1, part[0]), (d2, part[1])]
        jets[sym] = (d1, d2)
    out = []
    for row in rows:
        part = _jet(row, jets)
        if part is None:
            return None
        out.append(-part[1])
    full = {}
    for sym, e in defs:
        full[sym] = e.xreplace(full)
    return [g.xreplace(full) for g in out]


def embedding_code(emb: Embedding, tri: Triangularization, symbols: SymbolMap, trig_subs: dict,
                   dynamics: str = "embedded") -> tuple[str, int, int, JointQuantities]:
    """The three functions' C, the size of ``work``, where in it prepare
    leaves ‖X̃‖_F² for the limit test (-1: nowhere; _RightHandSide.norm) and
    the model quantities as the joint CSE left them (``JointQuantities``,
    what the joint reactions reuse); ``trig_subs`` (codegen.trig_plan) maps sin/cos of
    each angle to the ``trig`` array the kinematics filled.

    ``dynamics``: ``embedded`` forms X = Φ_d⁻¹Φ_i and Bᵀ M B as above;
    ``recursive`` solves the same equations by the elimination of
    ``codegen_recursive`` (v_d and q̈_i without forming B: code and work
    linear in the number of loops).  The model quantities, their CSE, the
    factored diagonal blocks of Φ_d and the three functions are shared."""
    if dynamics not in ("embedded", "recursive"):
        raise ValueError(f"unknown dynamics '{dynamics}'")
    # three stages, each its own function: the model quantities and their one
    # joint CSE (_model_quantities, _joint_cse_with_gamma), the bodies of the
    # functions (_RightHandSide.body, a variant per layout), and the choice
    # among the variants with their vector and chunked forms (_functions)
    groups, quantities = _model_quantities(emb, symbols, trig_subs)
    large = is_large([e for g, _ in groups for e in quantities[g]])
    reps, reduced = _joint_cse_with_gamma(emb.dae, groups, quantities, symbols, trig_subs, large)
    blocks = _blocks(emb, tri)
    rhs = _RightHandSide(emb, dynamics, groups, reps, reduced, blocks, large)
    return (*_functions(rhs, dynamics == "embedded" and _blockwise_structure(emb, blocks)), rhs.quantities)


def _model_quantities(emb: Embedding, symbols: SymbolMap, trig_subs: dict):
    """The model quantities by their structural non-zeros: ``groups``, (name,
    {key: expression}) for Φ_q ("J"), Φ_t ("Pt"), γ ("G"), M's upper
    triangle where symmetric ("M") and F ("F"), and ``quantities``, per name
    the expressions in the generated C's names with sin/cos of the solved
    angles read from ``trig`` (on the unit circle where that is cheaper)."""
    dae = emb.dae
    n, m = dae.n, dae.m
    J = {(j, i): emb.Phi_q[j, i] for j in range(m) for i in range(n) if emb.Phi_q[j, i] != 0}
    Pt = {j: emb.Phi_t[j] for j in range(m) if emb.Phi_t[j] != 0}
    G = {j: emb.gamma[j] for j in range(m) if emb.gamma[j] != 0}
    Mm = {}
    for i in range(n):
        for k in range(n):
            if emb.M[i, k] != 0 and not (k < i and emb.M[k, i] == emb.M[i, k]):
                Mm[(i, k)] = emb.M[i, k]
    Fv = {i: emb.F[i] for i in range(n) if emb.F[i] != 0}
    groups = [("J", J), ("Pt", Pt), ("G", G), ("M", Mm), ("F", Fv)]
    memo = {}
    quantities = {g: circle_where_cheaper([symbols(shared_xreplace(sp.sympify(e), trig_subs, memo))
                                           for e in d.values()])
                  for g, d in groups}
    return groups, quantities


def _joint_cse(groups, quantities, gamma, large: bool, prepared: dict):
    """One CSE over every model quantity, with ``gamma`` for γ's; ``prepared``
    keeps each expression's 'basic' pre-pass across calls."""
    every = [e for g, _ in groups for e in (gamma if g == "G" else quantities[g])]
    if large:
        return sp.cse(every, symbols=sp.numbered_symbols("w"), order="none", optimizations=None)
    # sp.cse(every, optimizations="basic") in its three steps: the pre-pass
    # per expression (sympy's factor_terms: most of a joint CSE's time;
    # cse_prepass does it with less work),
    # the CSE proper, the post-pass.  Why by hand: the two joint CSEs
    # of _joint_cse_with_gamma share every quantity but γ, and each
    # expression's pre-pass is done once.  The same replacements and rows,
    # bit for bit, as the one call.
    with cse_prepass.prepass() as optimizations:
        for e in every:
            if e not in prepared:
                prepared[e] = preprocess_for_cse(e, optimizations)
    reps, rows = sp.cse([prepared[e] for e in every], symbols=sp.numbered_symbols("w"), order="none",
                        optimizations=None)
    return ([(s, postprocess_for_cse(e, basic_optimizations)) for s, e in reps],
            [postprocess_for_cse(e, basic_optimizations) for e in rows])


def _joint_cse_with_gamma(dae, groups, quantities, symbols: SymbolMap, trig_subs: dict, large: bool):
    """The joint CSE (replacements, reduced expressions in ``groups``' order),
    with γ by forward differentiation (``gamma_by_jets``) where that makes
    the whole cheaper; ``quantities["G"]`` is then the jets' γ.

    Why the comparison is made through the joint CSE and not on γ alone: γ's
    unit-circle form shares its products with Φ_q, M and F, so a γ that is
    cheaper alone can make the whole dearer (the Stewart platform's).  The
    second joint CSE is the slow part of generating the code, so it runs only
    where the jets make γ alone at least 10 % cheaper by the quick count, and
    the quantities are not too large for the 'basic' pre-pass.  Measured
    figures: docs/benchmarks.md, "γ by jets"."""
    prepared = {}
    joint = _joint_cse(groups, quantities, quantities["G"], large, prepared)
    G = dict(groups)["G"]
    jet_rows = gamma_by_jets(dae) if G and not large else None
    if jet_rows is not None:
        jets = [symbols(shared_xreplace(sp.sympify(jet_rows[j]), trig_subs)) for j in G]
        if _cse_ops(jets) < 0.9 * _cse_ops(quantities["G"]):
            with_jets = _joint_cse(groups, quantities, jets, large, prepared)
            if _operations(with_jets) < _operations(joint):
                joint, quantities["G"] = with_jets, jets
    return joint


class JointQuantities:
    """Φ_q, γ, M and F as the joint CSE (``_joint_cse_with_gamma``) left
    them: its temporaries and each quantity's reduced value, in the
    generated C's names with sin/cos of the angles read from ``trig``;
    ``large``: ``is_large`` of the quantities, as the embedding judged it.
    The joint reactions (``codegen.reaction_c``) fill their K = [[M, Φ_qᵀ],
    [Φ_q, 0]] and [F; γ] from these (``fill``) instead of a CSE and a
    printing of their own of the same quantities, most of their cost of
    generation on a large model; a temporary prints once for both
    (``definition``)."""

    def __init__(self, groups, reps, values: dict, large: bool):
        self.groups, self.reps, self.values, self.large = dict(groups), reps, values, large
        self._printed = {}

    def definition(self, s, e) -> str:
        """The statement defining temporary ``s`` = ``e`` (one of ``reps``)."""
        text = self._printed.get(s)
        if text is None:
            text = self._printed[s] = f"const double {s} = {c(e)};"
        return text

    def fill(self, n: int, m: int) -> str:
        """Statements storing K's non-zeros (row-major, (n+m)², into an array
        ``K`` the caller zeroed: M's entries by symmetry from the stored
        triangle, as the embedding reads them) and all of b = [F; γ], after
        the temporaries they read; the code reads ``trig`` as the
        embedding's does."""
        nk = n + m
        stores = []
        for (j, i) in self.groups["J"]:
            text = c(self.values[("J", (j, i))])
            stores += [f"    K[{i * nk + n + j}] = {text};", f"    K[{(n + j) * nk + i}] = {text};"]
        for (i, k) in self.groups["M"]:
            value = self.values[("M", (i, k))]
            if value != 0:
                text = c(value)
                stores.append(f"    K[{i * nk + k}] = {text};")
                if (k, i) not in self.groups["M"]:
                    stores.append(f"    K[{k * nk + i}] = {text};")
        rhs = {i: self.values[("F", i)] for i in self.groups["F"]}
        rhs.update({n + j: self.values[("G", j)] for j in self.groups["G"]})
        stores += [f"    b[{k}] = {c(rhs.get(k, sp.S.Zero))};" for k in range(nk)]
        need = _needed(self.reps, [self.values[(g, key)] for g in ("J", "M", "F", "G") for key in self.groups[g]])
        return "\n".join([*("    " + self.definition(s, e) for s, e in self.reps if s in need), *stores])


class _RightHandSide:
    """The bodies of the embedding's functions from the joint CSE: ``body``
    emits one variant (the velocities only, or everything to q̈_i; X formed,
    or the blockwise reduction, or the recursive elimination).  What the
    variants share (the CSE's values by quantity, which temporaries each
    stage needs, the lane roles) is worked out once here."""

    def __init__(self, emb: Embedding, dynamics: str, groups, reps, reduced, blocks, large: bool):
        dae = emb.dae
        self.emb, self.dynamics, self.groups, self.reps, self.blocks = emb, dynamics, groups, reps, blocks
        self.ind, self.dep = emb.independent, emb.dependent
        # the temporaries that read v_d (solved first) and the inputs u
        self.late = _late(reps, {sp.Symbol(f"v[{i}]") for i in self.dep})
        u_syms = {sp.Symbol(f"u[{k}]") for k in range(len(dae.inputs))}
        self.u_dep = u_syms | _late(reps, u_syms)
        self.values, pos = {}, 0
        for g, d in groups:
            for key in d:
                self.values[(g, key)] = reduced[pos]
                pos += 1
        self.quantities = JointQuantities(groups, reps, self.values, large)
        quantity = dict(groups)
        # the temporaries the velocities function needs: Φ_q's and Φ_t's
        self.velocity_temps = _needed(reps, [self.values[("J", k)] for k in quantity["J"]]
                                      + [self.values[("Pt", k)] for k in quantity["Pt"]])
        self.lane_role = _lane_roles(blocks, groups, self.ind)
        self.block_of = {i: bi for bi, (_, unk) in enumerate(blocks) for i in unk}
        self.tags_of = {}   # each body's _Code.tags, by body(...)'s arguments
        self.limit_norm = {}   # the name of ‖X̃‖_F² in each right-hand side (norm), by blockwise
        from fmigen.derive.workspace import unit_scales
        self.scales = unit_scales(dae)

    def stage(self, code: _Code, keep, group_names):
        """Emit the CSE temporaries in ``keep`` and name the group values."""
        for s, e in self.reps:
            if s in keep:
                code.emit(self.quantities.definition(s, e))
        names = {}
        for g in group_names:
            for key in dict(self.groups)[g]:
                value = self.values[(g, key)]
                # an entry that is zero only after the trig substitution and
                # the circle reduction (the Stewart legs' M coupling β and s,
                # zero once cos² + sin² = 1 is used) is a structural zero
                # from here on: a named 0 would still be multiplied (gcc may
                # not drop 0·x, which is NaN for an infinite x).  Not Φ_q's,
                # whose named entries the block factorizations read
                names[(g, key)] = None if g != "J" and value == 0 else code.let(g + "_", c(value))
                if names[(g, key)] and (g, key) in self.lane_role:
                    code.tags[names[(g, key)]] = self.lane_role[(g, key)]
        return names

    def body(self, with_rhs: bool, blockwise: bool = False) -> str:
        """One function body: v_d from v_i, then (``with_rhs``) q̈_i."""
        code = _Code()
        self.tags_of[(with_rhs, blockwise)] = code.tags
        code.emit("(void)t; (void)q; (void)p; (void)u;")
        early = {s for s, _ in self.reps if s not in self.late}
        names = self.stage(code, early if with_rhs else self.velocity_temps, ["J", "Pt"])
        quantity = dict(self.groups)
        Jn = {k: names[("J", k)] for k in quantity["J"]}
        Ptn = {j: names[("Pt", j)] for j in quantity["Pt"]}
        inv, adj = [], []
        for bi, b in enumerate(self.blocks):
            with code.lane(bi, "factor"):
                solve_b, inverse_b = _factor_block(code, b, bi, Jn)
            inv.append(solve_b)
            adj.append(inverse_b)
        X = self.velocities(code, Jn, Ptn, inv, blockwise)
        if with_rhs:
            self.limit_norm[blockwise] = self.norm(code, Jn, adj, X, blockwise)
            self.accelerations(code, Jn, inv, adj, X, blockwise)
        code.emit("return 0;")
        # the adjugate entries and M·B's entries this function never reads
        code.drop_unread(r"ai\d+_\d+|mb\d+")
        return "\n".join(code.lines)

    def norm(self, code: _Code, Jn, adj, X, blockwise: bool):
        """‖X̃‖_F², X̃ = S_d⁻¹ Φ_d⁻¹Φ_i S_i in unit scales, for the run-time
        limit test (fmigen_core.c, core_limit) with more than two
        independent coordinates, where the runtime could get it only by
        solving with Φ_d once per independent coordinate: here X is formed
        anyway (or, blockwise, each block's inverse A_b, X_b = A_b Φ_i,b).
        None (no test here) for one or two independent coordinates (the
        runtime measures those itself) and for the recursive elimination,
        which never forms X (its loop blocks' norm stands in:
        accelerations)."""
        f, ind, s = self.emb.f, self.ind, self.scales
        if f <= 2 or self.dynamics == "recursive":
            return None
        if blockwise:
            X = [{} for _ in range(f)]
            for bi, (eqs, unk) in enumerate(self.blocks):
                for r, i in enumerate(unk):
                    for a in range(f):
                        X[a][i] = code.dot("xb", None, [(adj[bi][r][l], Jn.get((j, ind[a])))
                                                        for l, j in enumerate(eqs)], sign="+")
        terms = [f"{float(s[ind[k]] / s[i]) ** 2!r}*{X[k][i]}*{X[k][i]}"
                 for k in range(f) for i in self.dep if X[k].get(i) is not None]
        return code.let("limn", " + ".join(terms) or "0.0")

    def solve(self, code: _Code, Jn, inv, rhs: dict, tag: str) -> dict:
        """Φ_d⁻¹ rhs (rhs by constraint, result by dependent coordinate),
        block forward substitution."""
        x = {}
        solved = []
        for bi, (eqs, unk) in enumerate(self.blocks):
            with code.lane(bi, tag):
                r = [code.dot(tag, rhs.get(j), [(Jn.get((j, i)), x.get(i)) for i in solved]) for j in eqs]
                for i, val in zip(unk, inv[bi](r, tag)):
                    x[i] = val
            solved += unk
        return x

    def velocities(self, code: _Code, Jn, Ptn, inv, blockwise: bool):
        """v_d = −Φ_d⁻¹(Φ_i v_i + Φ_t) into v; returns X = Φ_d⁻¹ Φ_i (its
        columns) where it is formed, else None."""
        ind, f, m = self.ind, self.emb.f, self.emb.dae.m
        if self.dynamics == "recursive" or blockwise:
            # one right-hand side, without X
            recursive.velocities(code, self.blocks, inv, Jn, Ptn, ind)
            return None
        X = [self.solve(code, Jn, inv, {j: Jn.get((j, ind[k])) for j in range(m)}, f"X{k}_") for k in range(f)]
        Y = self.solve(code, Jn, inv, Ptn, "Y_")
        for i in self.dep:
            terms = [(X[k].get(i), f"v[{ind[k]}]") for k in range(f)]
            val = code.dot("vd", Y.get(i), terms, sign="+")
            code.emit(f"v[{i}] = {'-' + val if val else '0.0'};")
        return X

    def forces(self, code: _Code):
        """F = F_free + F_u by coordinate, F_u the terms that read the inputs:
        everything up to Bᵀ(F_free − M a_c) and the factored BᵀMB then does
        not depend on u, and the inputs enter only at the end (the split into
        prepare and finish, _split_inputs, is then small)."""
        Fn, Fu = {}, {}
        for i in dict(self.groups)["F"]:
            terms = [a for a in sp.Add.make_args(self.values[("F", i)]) if a != 0]
            free = [a for a in terms if not (a.free_symbols & self.u_dep)]
            with_u = [a for a in terms if a.free_symbols & self.u_dep]
            with self.lane(code, i, "F"):
                Fn[i] = code.let("F_", c(sp.Add(*free))) if free else None
            with self.lane(code, i, "Fu"):
                if with_u:
                    Fu[i] = code.let("Fu_", c(sp.Add(*with_u)))
        return Fn, Fu

    def lane(self, code: _Code, i: int, kind: str):
        """Coordinate ``i``'s block's lane of ``kind``; none for an independent coordinate."""
        return code.lane(self.block_of[i], kind) if i in self.block_of else nullcontext()

    def accelerations(self, code: _Code, Jn, inv, adj, X, blockwise: bool):
        """q̈_i into qdd, after the velocities."""
        dae, f, ind, dep = self.emb.dae, self.emb.f, self.ind, self.dep
        names = self.stage(code, self.late, ["G", "M"])
        quantity = dict(self.groups)
        Gn = {j: names[("G", j)] for j in quantity["G"]}
        Mn = {}
        for (i, k) in quantity["M"]:
            Mn[(i, k)] = names[("M", (i, k))]
            if (k, i) not in quantity["M"]:
                Mn[(k, i)] = Mn[(i, k)]
        Fn, Fu = self.forces(code)
        if self.dynamics == "recursive":
            # more than two independent coordinates: the limit test's norm
            # from the loop blocks (the runtime measures one or two itself)
            self.limit_norm[blockwise] = recursive.accelerations(code, self.blocks, inv, Jn, Gn, Mn, Fn, Fu, ind, dae.n,
                                                                 self.scales if f > 2 else None)
            return
        ac = self.solve(code, Jn, inv, Gn, "ac_")
        # res = F − M a_c (every coordinate: r̄ = Bᵀ res reads them all)
        res = {}
        for i in range(dae.n):
            with self.lane(code, i, "res"):
                res[i] = code.dot("res", Fn.get(i), [(Mn.get((i, d)), ac.get(d)) for d in dep])
        if blockwise:
            Mb = _blockwise_reduced(code, self.blocks, adj, Jn, Mn, ind, f)
            rb = _blockwise_transposed(code, self.blocks, adj, Jn, res, {a: res.get(ind[a]) for a in range(f)},
                                       ind, f, "zt", "rb")
            if Fu:   # r̄ += Bᵀ F_u
                first = {a: " + ".join(x for x in (rb[a], Fu.get(ind[a])) if x) or None for a in range(f)}
                rb = _blockwise_transposed(code, self.blocks, adj, Jn, Fu, first, ind, f, "zu", "rbu")
            _ldlt_solve(code, f, Mb, rb)
            return
        # MB[:, k] = M[:, ind k] − Σ_d M[:, d] X_d,k  (B = [−X ; I])
        MB = {}
        for k in range(f):
            for i in range(dae.n):
                MB[(i, k)] = code.dot("mb", Mn.get((i, ind[k])), [(Mn.get((i, d)), X[k].get(d)) for d in dep])
        # M̄ = Bᵀ M B (upper triangle), r̄ = Bᵀ res
        Mb, rb = {}, {}
        for a in range(f):
            rb[a] = code.dot("rb", res.get(ind[a]), [(X[a].get(d), res.get(d)) for d in dep])
            for b in range(a, f):
                Mb[(a, b)] = code.dot("mh", MB.get((ind[a], b)), [(X[a].get(d), MB.get((d, b))) for d in dep])
        if Fu:   # r̄ += Bᵀ F_u
            for a in range(f):
                first = " + ".join(x for x in (rb[a], Fu.get(ind[a])) if x) or None
                rb[a] = code.dot("rbu", first, [(X[a].get(d), Fu.get(d)) for d in dep])
        _ldlt_solve(code, f, Mb, rb)


def _without_norm(body: str) -> str:
    """The body less the statements of _RightHandSide.norm."""
    return "\n".join(ln for ln in body.split("\n") if not re.match(r"\s*const double (xb|limn)\d+ =", ln))


def _functions(rhs: _RightHandSide, blockwise_possible: bool) -> tuple[str, int, int]:
    """The three C functions, the size of ``work`` and the place in it of
    ‖X̃‖_F² (-1: none; _RightHandSide.norm): the blockwise reduced
    mass matrix where the structure allows it and its code is the cheaper
    (_blockwise_structure; the velocities function then computes v_d the
    same way, so both give the same bits), the right-hand side cut at the
    inputs (_split_inputs), each in vector lanes where they group
    (codegen_slp), else chunked."""
    sig = "double t, const double *q, double *v, const double *p, const double *u, const double *trig"
    bodies = {False: rhs.body(True, False)}
    if blockwise_possible:
        bodies[True] = rhs.body(True, True)
    # chosen on the right-hand side alone: the limit test's norm (norm) is
    # cheaper where X is formed, and must not change which variant a model gets
    blockwise = blockwise_possible and _count_ops(_without_norm(bodies[True])) < _count_ops(_without_norm(bodies[False]))
    prepare, finish, nwork = _split_inputs(bodies[blockwise].split("\n"))
    velocities = rhs.body(False, blockwise)

    lanes = {with_rhs: _lane_blocks(rhs.blocks, rhs.tags_of[(with_rhs, True)]) if blockwise else None
             for with_rhs in (False, True)}

    def fits(text, with_rhs=True):
        """Blockwise, and small enough not to be chunked: the pass may read it."""
        return lanes[with_rhs] is not None and text.count("\n") <= CHUNK_ABOVE

    def packed(text, with_rhs=True, slots=frozenset()):
        """The function body with its per-block statements in lanes where they
        group (codegen_slp), or None: it does not fit, or nothing groups."""
        return slp.vectorize(text, lanes[with_rhs], slots) if fits(text, with_rhs) else None

    def function(name, params, text, body=None):
        return f"int {name}({params})\n{{\n{body}\n}}\n" if body else chunked(name, params, text)

    # ‖X̃‖_F² (_RightHandSide.norm) into the place after the hand-over, for
    # the runtime's limit test (FMIGEN_LIMIT_SLOT)
    norm = rhs.limit_norm.get(blockwise)

    def with_norm(text, slot):
        if norm is None:
            return text
        head, tail = text.rsplit("\n    return 0;", 1)
        return f"{head}\n    work[{slot}] = {norm};\n    return 0;{tail}"
    prepare_packed, slots = None, frozenset()
    # work laid out so that prepare's groups are stored whole; kept only when
    # prepare is packed (a scalar prepare would leave the places of a short
    # chunk's repeated lanes unwritten, which finish loads).  Not tried for
    # a prepare the pass does not read: it would parse a large body for
    # nothing.
    if fits(prepare):
        moved = slp.relayout_work(prepare, finish, lanes[True], nwork)
        prepare_packed = packed(with_norm(moved[0], moved[2]), slots=moved[3])
        if prepare_packed is not None:
            prepare, finish, nwork, slots = moved
    prepare = with_norm(prepare, nwork)
    limit_slot = nwork if norm is not None else -1
    nwork += norm is not None
    finish_packed = packed(finish, slots=slots)
    sig_prepare = "double t, const double *q, double *v, const double *p, const double *trig, double *work"
    sig_finish = ("double t, const double *q, const double *v, const double *p, const double *u, "
                  "const double *trig, const double *work, double *qdd")
    return (function("fmigen_embedded_velocities", sig, velocities, packed(velocities, with_rhs=False)) + "\n" +
            function("fmigen_embedded_prepare", sig_prepare, prepare, prepare_packed) + "\n" +
            function("fmigen_embedded_finish", sig_finish, finish, finish_packed)), nwork, limit_slot


def _blocks(emb: Embedding, tri: Triangularization):
    """Φ_d's diagonal blocks as (constraint rows, dependent coordinates), in
    block-triangular order; one dense block when the partition's blocks do not
    cover Φ_d exactly."""
    blocks = [(list(b.equations), list(b.unknowns)) for b in tri.partition.blocks]
    rows = sorted(j for eqs, _ in blocks for j in eqs)
    cols = sorted(i for _, unk in blocks for i in unk)
    dense = [(list(range(emb.dae.m)), list(emb.dependent))] if emb.dae.m else []
    if rows != list(range(emb.dae.m)) or cols != sorted(emb.dependent):
        return dense
    # block-triangular: a block's equations use only its own and earlier
    # blocks' unknowns (the forward substitution relies on it)
    later = set(emb.dependent)
    for eqs, unk in blocks:
        later -= set(unk)
        if any(emb.Phi_q[j, i] != 0 for j in eqs for i in later):
            return dense
    return blocks


#: a generated declaration ``[const] double name = expr;``
STATEMENT = re.compile(r"^\s*(?:const )?double (\w+) = (.*);\s*$")
_OPERATION = re.compile(r"[-+*/]|\b(?:sin|cos|sqrt|fabs|atan2|pow|fmigen_powi|fmigen_max)\(")


def statement_operations(expr: str) -> int:
    """Floating-point operations in one generated right-hand side: its
    operators and math calls; numeric constants (``((1.0/200.0))``) and a
    chunk's ``S->`` hand-over are none."""
    expr = re.sub(r"\(\(?-?\d+(?:\.\d+)?(?:/\d+(?:\.\d+)?)?\)\)?", "K", expr.replace("S->", ""))
    return len(_OPERATION.findall(expr))


def _count_ops(body: str) -> int:
    """Operations of the declarations in generated straight-line C
    (``statement_operations``): what decides between two variants of the
    same computation, and what scripts/bench_ladder.py reports per section."""
    total = 0
    for line in body.split("\n"):
        m = STATEMENT.match(line)
        if m:
            total += statement_operations(m.group(2))
    return total


def structure_tables(emb: Embedding, tri: Triangularization) -> dict:
    """The same structure as plain data for the Python runtime's embedding
    (pyruntime.py), which loops over it instead of being generated:

    - Φ_d's diagonal blocks (``_blocks``): ``blk_rows`` / ``blk_cols`` the
      constraint and dependent position of each block position, ``blk_ptr``
      the block starts, ``couple`` the structurally non-zero (row position,
      column position) pairs below the diagonal blocks, by row position;
    - ``m_nz``: the structurally non-zero entries (i, j) of M, row-major, so
      M·B and M·a_c skip exact zeros."""
    blocks = _blocks(emb, tri)
    dep_pos = {i: k for k, i in enumerate(emb.dependent)}
    rows = [j for eqs, _ in blocks for j in eqs]
    cols = [dep_pos[i] for _, unk in blocks for i in unk]
    ptr, couple = [0], []
    for eqs, _ in blocks:
        ptr.append(ptr[-1] + len(eqs))
    for bi in range(len(blocks)):
        for r in range(ptr[bi], ptr[bi + 1]):
            couple += [x for pc in range(ptr[bi]) if emb.Phi_q[rows[r], emb.dependent[cols[pc]]] != 0
                       for x in (r, pc)]
    n = emb.dae.n
    return dict(blocked=bool(blocks), nblocks=len(blocks), blk_ptr=ptr, blk_rows=rows, blk_cols=cols,
                ncouple=len(couple) // 2, couple=couple,
                m_nz=[(i, j) for i in range(n) for j in range(n) if emb.M[i, j] != 0])
