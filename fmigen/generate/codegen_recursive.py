"""Stage 6c — the reduced dynamics by recursive elimination, cost linear in the loops.

The embedding (``codegen_embedding``) solves

    (Bᵀ M B) q̈_i = Bᵀ (F − M a_c),     B = [−Φ_d⁻¹ Φ_i ; I],

and for a mechanism whose loops hang from one another B is dense (a ladder:
moving the top rail moves every cell below it), so X = Φ_d⁻¹Φ_i and M·B cost
O(L²) and Bᵀ M B and its LDLᵀ O(L³) per right-hand side.  This module solves
the same equations without forming B: the equations of motion with the
constraints, in the joint coordinates the model already has,

    M q̈ + Φ_qᵀ λ = F,     Φ_q q̈ = γ,

eliminated one piece at a time in an order fixed at build time, every piece a
small dense operation on the structural non-zeros that are left — Anderson
and Critchley's recursive coordinate reduction (Multibody System Dynamics,
2003) read as sparse elimination, which is what their recursion is once the
bodies' quantities are summed into M.  Two kinds of pieces:

* a **loop block** (a diagonal block of Φ_d from the partition: constraint
  rows E, dependent coordinates D, Φ_ED square and invertible — the same
  blocks, factored once, that the velocity stage solves): its rows give
  q̈_D = g − Σ_r H_r q̈_r with H_r = Φ_ED⁻¹ Φ_Er over the other coordinates N
  of its rows and g = Φ_ED⁻¹ γ_E; substituting, and adding Hᵀ times D's
  rows of the equations of motion to N's rows (the multipliers λ_E drop
  out, as in the embedding), leaves the same problem over one loop fewer:

      M_rs ← M_rs − M_rD H_s − H_rᵀ (M_Ds − M_DD H_s)    (r, s ∈ N),
      M_rs ← M_rs − M_rD H_s                              (r ∉ N, s ∈ N),
      F_r  ← F_r − M_rD g − [r ∈ N] H_rᵀ (F_D − M_DD g),
      Φ_ls ← Φ_ls − Φ_lD H_s,  γ_l ← γ_l − Φ_lD g         (later rows l using D);

* an **independent coordinate** i once no remaining constraint row reads
  it: a scalar pivot of the (positive definite) mass matrix that is left,
  q̈_i = F_i / M_ii − Σ_s (M_is / M_ii) q̈_s, and the usual Schur complement
  on its neighbours.

Why this is exact and needs no pivoting: what remains after each piece is
again ``M' q̈ + Φ'ᵀλ = F', Φ' q̈ = γ'`` with M' symmetric positive definite
(a Schur complement, or a Bᵀ M B over one loop) and no λλ block — a loop
block's pivot [M_DD Φ_EDᵀ; Φ_ED 0] has a zero DD block in its inverse, and a
coordinate is only eliminated when no constraint row reads it.  And a loop
block's Φ_ED is never changed before its own turn: a substitution writes
into columns N of an earlier-solved loop (the partition's block-triangular
order has no cycles), never into a later block's own D.  So every pivot is
one the embedding factors too (Φ_d's diagonal blocks, by the same code) or
a diagonal entry of a positive definite matrix; the two formulations agree
to round-off (tests/test_ladder.py).

The order: greedy minimum degree over those pieces (the fewest remaining
coordinates a piece couples — the fill it makes), ties to the piece latest
in model order, so a tree is eaten from its leaves: for a ladder the bottom
cell first, each cell's loop blocks then its independent rung angle, the
top last — every piece couples a bounded number of coordinates, so the
generated code and the work per step grow linearly with the loops, as they
would in an articulated-body pass.  The order is chosen on the sparsity
pattern only (build time O(pieces × degree² × log)), and the code is
straight-line like the embedding's: the mass matrix updates in one pass (no
input read: ``fmigen_embedded_prepare``), the right-hand side (F, γ) in a
second and the back substitution q̈ in a third (``_split_inputs`` moves
what reads the inputs to ``fmigen_embedded_finish``).

Velocity stage: v_d from Φ_d v_d = −(Φ_i v_i + Φ_t) by block forward
substitution over the same factored blocks — O(non-zeros of Φ_d), never
X = Φ_d⁻¹Φ_i.

Limit test: with more than two independent coordinates pass 1 also sums
every loop block's ‖H‖_F² in unit scales, which the runtime's limit test
reads in place of the embedding's ‖Φ_d⁻¹Φ_i‖_F² (``accelerations``).

Not covered: a mechanism whose M' loses positive definiteness at run time
(a massless independent chain) returns 2 like the embedding's LDLᵀ; one
that is structurally singular (an independent coordinate with no mass left
to pivot on) is refused at build time.
"""

from __future__ import annotations

import heapq

from fmigen.model import ModelError

#: ``--dynamics auto`` picks the recursive elimination from this many
#: independent coordinates on (see ``choose``): below it the elimination
#: costs a few per cent more per step than the embedding, from it on it wins
#: by a margin that grows with f (docs/benchmarks.md, "Measurements behind
#: the code's choices").  So the shipped mechanisms up to f = 7 keep the
#: embedding they were validated with.
RECURSIVE_FROM_F = 8
#: ... and only where B is dense: the share of its dependent-by-independent
#: entries that are structurally non-zero (``coupling``).  The embedding's
#: cost follows B's non-zeros, the elimination's does not: the planar
#: ladders, each cell's loop depending on every cell's coordinate above it,
#: are well above it; the full vehicle, each corner on its own travel and
#: the rack, well below, and there the elimination costs more per step.
RECURSIVE_FROM_COUPLING = 0.3
DYNAMICS = ("auto", "embedded", "recursive")


def coupling(part) -> float:
    """The share of B's dependent × independent entries that can be non-zero:
    a dependent coordinate depends on the independent coordinates its block
    reads, directly or through the earlier blocks it reads."""
    independent = set(part.independent)
    solved, nonzero = {}, 0
    for b in part.blocks:
        deps = set()
        for k in b.knowns:
            deps |= {k} if k in independent else solved[k]
        for u in b.unknowns:
            solved[u] = deps
        nonzero += len(b.unknowns) * len(deps)
    return nonzero / max(1, len(part.dependent) * len(part.independent))

#: a pivot of the remaining mass matrix is refused (return 2, as the
#: embedding's LDLᵀ) when not above this times its value before elimination
SINGULAR_REL = 1e-13


def choose(requested: str, emb, part=None) -> tuple[str, str]:
    """(embedded | recursive, why) for ``--dynamics requested``.

    auto: the embedding costs O(f · nnz) for X = Φ_d⁻¹Φ_i and O(f³) for
    BᵀMB's LDLᵀ, the elimination O(nnz) with a larger constant, so the
    choice is by the number f of independent coordinates, at the crossover
    ``scripts/bench_ladder.py`` measured (docs/benchmarks.md, "Growth with
    the number of loops")."""
    if requested not in DYNAMICS:
        raise ModelError(f"unknown dynamics '{requested}' (known: {', '.join(DYNAMICS)})")
    f = emb.f
    if requested == "auto":
        if f < RECURSIVE_FROM_F:
            return "embedded", f"auto: {f} independent coordinate{'s' if f != 1 else ''} < {RECURSIVE_FROM_F}"
        share = coupling(part) if part is not None else 1.0
        if share < RECURSIVE_FROM_COUPLING:
            return "embedded", (f"auto: {f} independent coordinates, but B is sparse ({share:.0%} of its "
                                f"entries can be non-zero < {RECURSIVE_FROM_COUPLING:.0%})")
        return "recursive", (f"auto: {f} independent coordinates >= {RECURSIVE_FROM_F}, B {share:.0%} dense")
    return requested, "requested"


def _key(r, s):
    return (r, s) if r <= s else (s, r)


def velocities(code, blocks, inv, Jn, Ptn, independent):
    """Emit v_d: per diagonal block of Φ_d, in block-triangular order,
    Φ_ED v_D = −(Φ_t,E + Σ Φ_Er v_r) over the columns of its rows outside D
    (independent velocities and earlier blocks' v_d, already written into
    v)."""
    cols_of_row = {}
    for (j, i) in Jn:
        cols_of_row.setdefault(j, []).append(i)
    for bi, (eqs, unk) in enumerate(blocks):
        own = set(unk)
        with code.lane(bi, "vs"):
            r = [code.dot("vs", Ptn.get(j), [(Jn[(j, i)], f"v[{i}]") for i in sorted(cols_of_row.get(j, ()))
                                             if i not in own], sign="+") for j in eqs]
            for i, val in zip(unk, inv[bi](r, "vs")):
                code.emit(f"v[{i}] = {'-' + val if val else '0.0'};")


def elimination_order(n, blocks, mass_pattern, rows_pattern, independent):
    """The order of the pieces: a list of ("block", block index) and
    ("coordinate", model index), every block and independent coordinate
    once.  ``mass_pattern``: the structurally non-zero (r, s), r < s, of M;
    ``rows_pattern``: {constraint row: set of columns}.  Pure on the
    sparsity pattern, simulating the fill each piece makes."""
    adj = {r: set() for r in range(n)}
    for r, s in mass_pattern:
        adj[r].add(s)
        adj[s].add(r)
    rows = {j: set(cols) for j, cols in rows_pattern.items()}
    readers = {r: set() for r in range(n)}
    for j, cols in rows.items():
        for r in cols:
            readers[r].add(j)
    block_of_row = {j: bi for bi, (eqs, _) in enumerate(blocks) for j in eqs}
    present_blocks = set(range(len(blocks)))
    pending = set(independent)

    def block_reach(bi):
        eqs, unk = blocks[bi]
        own = set(unk)
        reach = set()
        for j in eqs:
            reach |= rows[j]
        for d in unk:
            reach |= adj[d]
        return reach - own

    def cost(piece):
        kind, x = piece
        if kind == "block":
            return len(block_reach(x))
        return len(adj[x])

    def rank(piece):
        kind, x = piece
        return max(blocks[x][1]) if kind == "block" else x

    heap = []

    def push(piece):
        heapq.heappush(heap, (cost(piece), -rank(piece), piece))

    for bi in present_blocks:
        push(("block", bi))
    for i in independent:
        if not readers[i]:
            push(("coordinate", i))
    order = []
    while heap:
        c, _, piece = heapq.heappop(heap)
        kind, x = piece
        if (kind == "block" and x not in present_blocks) or (kind == "coordinate" and x not in pending):
            continue                      # eliminated already (a stale entry)
        if c != cost(piece):
            push(piece)                   # its degree changed since: requeue
            continue
        order.append(piece)
        touched = set()
        if kind == "block":
            eqs, unk = blocks[x]
            own = set(unk)
            reach = block_reach(x)
            nbr = set()
            for j in eqs:
                nbr |= rows[j]
            nbr -= own
            # the mass updates couple the loop's other columns N with each
            # other and with every coordinate D was coupled to
            for r in reach:
                adj[r] -= own
                if r in nbr:
                    adj[r] |= reach - {r}
                else:
                    adj[r] |= nbr - {r}
            # later rows reading D now read N instead
            for d in unk:
                for j in readers[d] - set(eqs):
                    rows[j] = (rows[j] - own) | nbr
                    for r in nbr:
                        readers[r].add(j)
                    touched.add(("block", block_of_row[j]))
            for j in eqs:
                for r in rows[j]:
                    readers[r].discard(j)
                del rows[j]
            for d in unk:
                del adj[d], readers[d]
            present_blocks.discard(x)
            touched |= {("coordinate", r) for r in nbr if r in pending and not readers[r]}
        else:
            nbr = adj.pop(x)
            for r in nbr:
                adj[r].discard(x)
                adj[r] |= nbr - {r}
            pending.discard(x)
            del readers[x]
        for r in reach if kind == "block" else nbr:
            if r in pending and not readers.get(r):
                touched.add(("coordinate", r))
            for j in readers.get(r, ()):
                touched.add(("block", block_of_row[j]))
        for piece in touched:
            push(piece)
    if present_blocks or pending:
        left = [f"block {b}" for b in sorted(present_blocks)] + [f"coordinate {i}" for i in sorted(pending)]
        raise ModelError(f"recursive dynamics: no elimination order for {', '.join(left)}")
    return order


def accelerations(code, blocks, inv, Jn, Gn, Mn, Fn, Fu, independent, n, scales=None):
    """Emit q̈_i into qdd[]: the elimination of the module docstring.
    ``Jn`` {(row, col): name} the C names of Φ_q, ``Gn`` of γ, ``Mn`` of M
    (both triangles), ``Fn``/``Fu`` the forces without and with the
    inputs, ``inv[bi](rhs, tag)`` the factored diagonal block bi of Φ_d.
    With ``scales`` returns the limit test's norm (``_limit_norm``)."""
    # M's structural non-zeros only: an entry the model's code found zero
    # (codegen_embedding's stage: zero once sin² + cos² = 1) is None there,
    # and would count as a coupling and be emitted as a factor
    M = {_key(r, s): name for (r, s), name in Mn.items() if name is not None}
    rows = {}
    for (j, i), name in Jn.items():
        rows.setdefault(j, {})[i] = name
    order = elimination_order(n, blocks, [k for k in M if k[0] != k[1]],
                              {j: set(cols) for j, cols in rows.items()}, independent)
    adj = {r: set() for r in range(n)}
    for r, s in M:
        if r != s:
            adj[r].add(s)
            adj[s].add(r)
    readers = {r: set() for r in range(n)}
    for j, cols in rows.items():
        for r in cols:
            readers[r].add(j)

    def m(r, s):
        return M.get(_key(r, s))

    def store(new):
        """A piece's updated entries into M and its pattern.  An exact zero
        (None: nothing was there and nothing filled in) stays out, so every
        coupling in adj has a name."""
        for (r, s), name in new.items():
            if name is not None:
                M[(r, s)] = name
                if r != s:
                    adj[r].add(s)
                    adj[s].add(r)

    # ---- pass 1: the mass matrix and the constraint rows (no input read)
    steps = []
    for kind, x in order:
        if kind == "block":
            eqs, unk = blocks[x]
            own = set(unk)
            for j in eqs:
                for d in unk:
                    if rows[j].get(d) != Jn.get((j, d)):
                        raise AssertionError("a loop block's own Φ_ED changed before its turn")
            N = sorted({r for j in eqs for r in rows[j]} - own)
            H = {r: inv[x]([rows[j].get(r) for j in eqs], "eH") for r in N}
            K = sorted({r for d in unk for r in adj[d]} - own)
            MrD = {r: [m(r, d) for d in unk] for r in K}
            MDD = [[m(d, e) for e in unk] for d in unk]
            # U_s = M_Ds − M_DD H_s, then the Schur complement on N and K
            U = {s: [code.dot("eU", m(d, s), [(MDD[a][b], H[s][b]) for b in range(len(unk))])
                     for a, d in enumerate(unk)] for s in N}
            new = {}
            for s in N:
                for r in K:
                    if r in H and r > s:
                        continue
                    terms = [(MrD[r][b], H[s][b]) for b in range(len(unk))]
                    if r in H:
                        terms += [(H[r][b], U[s][b]) for b in range(len(unk))]
                    new[_key(r, s)] = code.dot("eM", m(r, s), terms)
                for r in N:
                    if r <= s and r not in K:
                        terms = [(H[r][b], U[s][b]) for b in range(len(unk))]
                        new[_key(r, s)] = code.dot("eM", m(r, s), terms)
            later = sorted({j for d in unk for j in readers[d]} - set(eqs))
            PlD = {j: [rows[j].get(d) for d in unk] for j in later}
            for j in later:
                for r in N:
                    rows[j][r] = code.dot("eP", rows[j].get(r), [(PlD[j][b], H[r][b]) for b in range(len(unk))])
                    readers[r].add(j)
                for d in unk:
                    rows[j].pop(d, None)
            for j in eqs:
                for r in rows.pop(j):
                    readers[r].discard(j)
            for k in [k for k in M if k[0] in own or k[1] in own]:
                del M[k]
            for r in K:
                adj[r] -= own
            for d in unk:
                del adj[d], readers[d]
            store(new)
            steps.append(("block", x, unk, N, K, H, MrD, MDD, PlD))
        else:
            i = x
            if readers[i]:
                raise AssertionError("an independent coordinate eliminated while a constraint reads it")
            d = m(i, i)
            if d is None:
                raise ModelError(f"recursive dynamics: the mass left on independent coordinate {i} is structurally "
                                 "zero (singular reduced mass matrix)")
            code.emit(f"if (!({d} > {SINGULAR_REL!r} * fabs({Mn.get((i, i)) or d}))) return 2;")
            dinv = code.let("eDi", f"1.0/{d}")
            S = sorted(adj[i])
            Mis = {s: m(i, s) for s in S}
            lo = {s: code.let("eL", f"{Mis[s]}*{dinv}") for s in S}
            new = {}
            for a, r in enumerate(S):
                for s in S[a:]:
                    new[(r, s)] = code.dot("eM", m(r, s), [(Mis[r], lo[s])])
            for k in [k for k in M if i in k]:
                del M[k]
            for r in S:
                adj[r].discard(i)
            del adj[i], readers[i]
            store(new)
            steps.append(("coordinate", i, dinv, S, Mis, lo))

    norm = _limit_norm(code, steps, scales) if scales is not None else None
    # ---- pass 2: the right-hand side F, γ through the same eliminations
    record = _reduce_right_hand_side(code, steps, blocks, inv, Gn, Fn, Fu)
    # ---- pass 3: back substitution, the root first
    _back_substitute(code, steps, record, independent)
    return norm


def _limit_norm(code, steps, scales) -> str:
    """The name of Σ_b ‖H̃_b‖_F², every loop block's H = Φ_ED⁻¹Φ_EN of
    pass 1 in unit scales (``scales`` by coordinate), for the run-time
    limit test (fmigen_core.c, core_limit): the stand-in for the
    embedding's ‖X̃‖_F², which this elimination never forms.  At a fold of
    the partition one block's Φ_ED turns singular and its H grows like
    1/|t − t*|; elsewhere every H is a bounded product of regular blocks'
    inverses and constraint rows."""
    terms = [f"{float(scales[r] / scales[d]) ** 2!r}*{H[r][b]}*{H[r][b]}"
             for _, _, unk, N, _, H, *_ in (s for s in steps if s[0] == "block")
             for r in N for b, d in enumerate(unk) if H[r][b] is not None]
    return code.let("limn", " + ".join(terms) or "0.0")


def _reduce_right_hand_side(code, steps, blocks, inv, Gn, Fn, Fu) -> list:
    """Pass 2 of ``accelerations``: the right-hand side F, γ through the
    eliminations ``steps`` of pass 1; per step, what back substitution reads."""
    F = {}
    for i in set(Fn) | set(Fu):
        parts = [x for x in (Fn.get(i), Fu.get(i)) if x]
        if parts:   # (a force that is an exact zero has no name)
            F[i] = parts[0] if len(parts) == 1 else code.let("eF", " + ".join(parts))
    gam = dict(Gn)
    record = []
    for step in steps:
        if step[0] == "block":
            _, x, unk, N, K, H, MrD, MDD, PlD = step
            eqs = blocks[x][0]
            g = inv[x]([gam.get(j) for j in eqs], "eg")
            V = [code.dot("eV", F.get(d), [(MDD[a][b], g[b]) for b in range(len(unk))])
                 for a, d in enumerate(unk)]
            for r in sorted(set(K) | set(N)):
                terms = [(MrD[r][b], g[b]) for b in range(len(unk))] if r in MrD else []
                if r in H:
                    terms += [(H[r][b], V[b]) for b in range(len(unk))]
                F[r] = code.dot("eF", F.get(r), terms)
            for j, PlDj in PlD.items():
                gam[j] = code.dot("eG", gam.get(j), [(PlDj[b], g[b]) for b in range(len(unk))])
            for d in unk:
                F.pop(d, None)
            for j in eqs:
                gam.pop(j, None)
            record.append(g)
        else:
            _, i, dinv, S, Mis, lo = step
            z = code.let("eZ", f"{F[i]}*{dinv}") if F.get(i) else None
            for s in S:
                F[s] = code.dot("eF", F.get(s), [(Mis[s], z)])
            F.pop(i, None)
            record.append(z)
    return record


def _back_substitute(code, steps, record, independent):
    """Pass 3 of ``accelerations``: back substitution, the root first; emits
    q̈ of the independent coordinates into qdd[]."""
    acc = {}
    for step, rhs in zip(reversed(steps), reversed(record)):
        if step[0] == "block":
            _, x, unk, N, K, H, *_ = step
            for b, d in enumerate(unk):
                acc[d] = code.dot("eA", rhs[b], [(H[r][b], acc.get(r)) for r in N])
        else:
            _, i, dinv, S, Mis, lo = step
            acc[i] = code.dot("eA", rhs, [(lo[s], acc.get(s)) for s in S])
    for k, i in enumerate(independent):
        code.emit(f"qdd[{k}] = {acc.get(i) or '0.0'};")
