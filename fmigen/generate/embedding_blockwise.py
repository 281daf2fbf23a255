"""The embedding's reduced mass matrix Bᵀ M B summed block by block, for a
Φ_d block-diagonal in small blocks that M does not couple (the Stewart
platform's legs, ``_blockwise_structure``), and the lane tags with which
codegen_slp computes equal blocks together.
"""

from __future__ import annotations

from fmigen.generate import codegen_slp as slp
from fmigen.derive.embed import Embedding
from fmigen.generate.unrolled_algebra import ADJUGATE_MAX, _Code


def _blockwise_structure(emb: Embedding, blocks) -> bool:
    """Can Bᵀ M B be summed block by block (``_blockwise_reduced``)?  It needs
    Φ_d block-diagonal (no coupling below its diagonal blocks), every block
    inverted by its adjugate, and M without entries between two blocks'
    dependent coordinates or between a dependent and an independent one:
    then Xᵀ M_dd X = Σ_b Φ_i,bᵀ (Φ_d,b⁻ᵀ M_b Φ_d,b⁻¹) Φ_i,b and M_id = 0."""
    if not blocks or any(len(unk) > ADJUGATE_MAX for _, unk in blocks):
        return False
    block_of = {i: bi for bi, (_, unk) in enumerate(blocks) for i in unk}
    for bi, (eqs, _) in enumerate(blocks):
        if any(emb.Phi_q[j, i] != 0 and block_of[i] != bi for j in eqs for i in emb.dependent):
            return False
    return not any(emb.M[i, k] != 0 and block_of.get(k) != block_of[i]
                   for i in emb.dependent for k in range(emb.dae.n))


def _lane_roles(blocks, groups, ind) -> dict:
    """{(quantity, key): (block, role)} for the model quantities that belong
    to one diagonal block of Φ_d (codegen_slp): a row of Φ_q over the
    block's or the independent coordinates, Φ_t and γ of its rows, M among
    its coordinates, by their positions in the block."""
    row = {j: (bi, r) for bi, (eqs, _) in enumerate(blocks) for r, j in enumerate(eqs)}
    col = {i: (bi, k) for bi, (_, unk) in enumerate(blocks) for k, i in enumerate(unk)}
    out = {}
    for g, d in groups:
        for key in d:
            if g == "J" and key[0] in row:
                (bi, r), i = row[key[0]], key[1]
                if i in col and col[i][0] == bi:
                    out[(g, key)] = (bi, ("J", r, "d", col[i][1]))
                elif i in ind:
                    out[(g, key)] = (bi, ("J", r, "i", ind.index(i)))
            elif g in ("Pt", "G") and key in row:
                out[(g, key)] = (row[key][0], (g, row[key][1]))
            elif g == "M" and key[0] in col and key[1] in col and col[key[0]][0] == col[key[1]][0]:
                out[(g, key)] = (col[key[0]][0], ("M", col[key[0]][1], col[key[1]][1]))
    return out


def _lane_blocks(blocks, tags) -> "slp.Blocks | None":
    """The chunks of blocks solved together in lanes: blocks of the same size
    in order, up to slp.LANES at a time, a short chunk's last block repeated;
    None when no two blocks have the same size."""
    by_size = {}
    for bi, (eqs, unk) in enumerate(blocks):
        by_size.setdefault((len(eqs), len(unk)), []).append(bi)
    chunks = []
    for members in by_size.values():
        for k in range(0, len(members), slp.LANES):
            chunk = members[k:k + slp.LANES]
            if len(chunk) > 1:
                chunks.append(tuple(chunk + [chunk[-1]] * (slp.LANES - len(chunk))))
    if not chunks:
        return None
    return slp.Blocks(coords=[list(unk) for _, unk in blocks], tags=dict(tags), chunks=chunks)


def _blockwise_reduced(code: _Code, blocks, adj, Jn, Mn, ind, f):
    """Bᵀ M B (upper triangle) summed block by block, for the structure
    ``_blockwise_structure`` checks.  With A_b = Φ_d,b⁻¹ (the adjugate
    inverse) and Φ_i,b the block's rows of Φ_i:

        Bᵀ M B = M_ii + Σ_b Φ_i,bᵀ N_b Φ_i,b,   N_b = A_bᵀ M_b A_b.

    Why: X = Φ_d⁻¹ Φ_i couples every independent coordinate to every
    dependent one that any loop moves (the Stewart platform's pose moves all
    18 leg coordinates), so each entry of Xᵀ M X is a dot over all of them;
    here each block contributes its small N_b, and constant columns of Φ_i
    (the platform's position enters each leg's rows as ∓I) cost nothing
    (docs/benchmarks.md, "Measurements behind the code's choices")."""
    terms = {(a, c): [] for a in range(f) for c in range(a, f)}
    for bi, (eqs, unk) in enumerate(blocks):
        with code.lane(bi, "reduced"):
            A, nb = adj[bi], len(unk)
            # M_b A_b, then N_b = A_bᵀ (M_b A_b), upper triangle (N_b symmetric)
            MA = [[code.dot("ma", None, [(Mn.get((unk[r], unk[s])), A[s][k]) for s in range(nb)], sign="+")
                   for k in range(nb)] for r in range(nb)]
            N = {}
            for k in range(nb):
                for l in range(k, nb):
                    N[(k, l)] = N[(l, k)] = code.dot("nb", None, [(A[r][k], MA[r][l]) for r in range(nb)], sign="+")
            Pi = [[Jn.get((j, ind[a])) for a in range(f)] for j in eqs]
            # P = N_b Φ_i,b, then Φ_i,bᵀ P into the upper triangle of Bᵀ M B
            P = [[code.dot("pn", None, [(N[(k, l)], Pi[l][a]) for l in range(nb)], sign="+") for a in range(f)]
                 for k in range(nb)]
            for a in range(f):
                for c in range(a, f):
                    terms[(a, c)] += [(Pi[k][a], P[k][c]) for k in range(nb)]
    return {(a, c): code.dot("mh", Mn.get((ind[a], ind[c])), terms[(a, c)], sign="+") for (a, c) in terms}


def _blockwise_transposed(code: _Code, blocks, adj, Jn, vec, first, ind, f, ztag, tag):
    """first_a − (Xᵀ vec_d)_a per independent coordinate a, block by block for
    ``_blockwise_reduced``'s structure: Xᵀ vec_d = Σ_b Φ_i,bᵀ (A_bᵀ vec_b).
    With first = vec_i it is r̄ = Bᵀ vec (the residual; the input forces
    F_u, added to r̄ in fmigen_embedded_finish)."""
    terms = {a: [] for a in range(f)}
    for bi, (eqs, unk) in enumerate(blocks):
        A, nb = adj[bi], len(unk)
        with code.lane(bi, ztag):
            z = [code.dot(ztag, None, [(A[r][k], vec.get(unk[r])) for r in range(nb)], sign="+")
                 for k in range(nb)]
        for a in range(f):
            terms[a] += [(Jn.get((j, ind[a])), z[k]) for k, j in enumerate(eqs)]
    return {a: code.dot(tag, first[a], terms[a]) for a in range(f)}
