"""Stage 3 — partition: independent coordinates q_i, dependent q_d, and blocks.

The f = n − m independent coordinates are named by the mechanism or chosen by
column-pivoted QR on Φ_q at the start guess (the pivot columns are the best
conditioned dependent set).  The constraints are then split into blocks (loops)
in block-triangular order: a perfect matching of equations to dependent
unknowns, then the strongly connected components of the resulting dependency
graph in topological order (the fine Dulmage–Mendelsohn decomposition).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fmigen.derive.dae import DAE
from fmigen.model import ModelError


@dataclass
class Block:
    equations: list[int]     # constraint indices
    unknowns: list[int]      # dependent coordinate indices (model order)
    #: coordinates (model order) this block needs as knowns: independent ones
    #: and dependents solved by earlier blocks.
    knowns: list[int]


@dataclass
class Partition:
    independent: list[int]
    dependent: list[int]
    blocks: list[Block]

    def names(self, dae: DAE, idx):
        return [dae.names[i] for i in idx]


def choose_partition(dae: DAE, graph=None) -> Partition:
    mech = dae.mechanism
    n, m = dae.n, dae.m
    J = dae.numeric.Phi_q(0.0, dae.start_guess())
    if mech.independent is not None:
        for name in mech.independent:
            if name not in dae.names:
                raise ModelError(f"independent coordinate '{name}' is not a coordinate of '{mech.name}'")
        if len(mech.independent) != n - m:
            raise ModelError(
                f"wrong DOF count: '{mech.name}' names {len(mech.independent)} independent coordinates "
                f"({', '.join(mech.independent)}) but has {n} coordinates and {m} constraints, "
                f"i.e. {n - m} degrees of freedom")
        indep = [dae.names.index(x) for x in mech.independent]
        dep = [i for i in range(n) if i not in indep]
        if m and np.linalg.matrix_rank(J[:, dep]) < m:
            raise ModelError(
                f"singular configuration: with independent coordinates {mech.independent}, "
                f"Φ_d (∂Φ/∂{[dae.names[i] for i in dep]}) is singular at the start guess; "
                "choose other independent coordinates")
    else:
        if m:
            import scipy.linalg   # here: see block_decomposition's imports
            _, _, piv = scipy.linalg.qr(J, pivoting=True)
            dep = sorted(piv[:m].tolist())
        else:
            dep = []
        indep = [i for i in range(n) if i not in dep]
    return Partition(indep, dep, block_decomposition(dae, indep, dep, graph))


def partition_with(dae: DAE, names: list[str], graph=None) -> Partition:
    """The partition with the given independent coordinates (an alternative
    set for coordinate switching): no rank test at the start, where the set
    need not be regular; its start assembly (``branches.choose_branches``)
    is."""
    mech = dae.mechanism
    for name in names:
        if name not in dae.names:
            raise ModelError(f"switch_independent: '{name}' is not a coordinate of '{mech.name}'")
    if len(names) != dae.n - dae.m:
        raise ModelError(f"switch_independent: {names} has {len(names)} coordinates, but '{mech.name}' "
                         f"has {dae.n - dae.m} degrees of freedom")
    indep = [dae.names.index(x) for x in names]
    dep = [i for i in range(dae.n) if i not in indep]
    return Partition(indep, dep, block_decomposition(dae, indep, dep, graph))


def block_decomposition(dae: DAE, indep: list[int], dep: list[int], graph=None) -> list[Block]:
    """``graph``: ``matching_and_components`` or a cached equivalent."""
    m = dae.m
    if not dep:
        return []
    col = {q: k for k, q in enumerate(dep)}
    inc = np.zeros((m, len(dep)), dtype=int)
    for j, e in enumerate(dae.Phi):
        for s in e.free_symbols:
            if s in dae.q_sym and dae.q_sym.index(s) in col:
                inc[j, col[dae.q_sym.index(s)]] = 1
    found = (graph or matching_and_components)(inc)
    match, ncomp, label = np.array(found["match"], dtype=int), found["ncomp"], np.array(found["label"], dtype=int)
    if (match < 0).any():
        bad = [dae.constraint_names[j] for j in np.where(match < 0)[0]]
        raise ModelError(f"structurally singular constraints: {bad} cannot be matched to distinct dependent coordinates")
    eq_of_col = {int(c): j for j, c in enumerate(match)}
    # Topological order of the condensation: a component whose equations use
    # only its own unknowns and earlier components' unknowns comes first.
    comps = [[j for j in range(m) if label[j] == c] for c in range(ncomp)]
    order, done = [], set()
    while len(order) < ncomp:
        for c, eqs in enumerate(comps):
            if c in done:
                continue
            needs = {label[eq_of_col[int(k)]] for j in eqs for k in np.nonzero(inc[j])[0]}
            if needs <= done | {c}:
                order.append(c)
                done.add(c)
    blocks, solved = [], set(indep)
    for c in order:
        eqs = comps[c]
        unknowns = sorted(dep[int(match[j])] for j in eqs)
        used = set()
        for j in eqs:
            used |= {dae.q_sym.index(s) for s in dae.Phi[j].free_symbols if s in dae.q_sym}
        knowns = sorted(used - set(unknowns))
        assert set(knowns) <= solved
        blocks.append(Block(sorted(eqs), unknowns, knowns))
        solved |= set(unknowns)
    return blocks


def matching_and_components(inc: np.ndarray) -> dict:
    """The matching of equations to dependent unknowns (scipy's
    ``maximum_bipartite_matching`` of the incidence ``inc``, -1 where an
    equation has none) and, when it is perfect, the strongly connected
    components of the equations' dependency graph through it (scipy's
    ``connected_components``: their number and each equation's label), as
    plain lists: a function of ``inc`` (and the scipy version) alone, which
    the build keeps in its cache (``derived.partition_graph``)."""
    # scipy here, not at the top: this module's types are imported by every
    # build, and one that packages a derived model from the cache (a solver
    # or step change) never partitions
    import scipy.sparse as sps
    from scipy.sparse.csgraph import connected_components, maximum_bipartite_matching
    m = inc.shape[0]
    match = maximum_bipartite_matching(sps.csr_matrix(inc), perm_type="column")
    if (match < 0).any():
        return {"match": match.tolist(), "ncomp": 0, "label": []}
    # graph on equations: j -> k when equation j uses the unknown matched to k
    eq_of_col = {int(c): j for j, c in enumerate(match)}
    adj = np.zeros((m, m), dtype=int)
    for j in range(m):
        for k in np.nonzero(inc[j])[0]:
            adj[j, eq_of_col[int(k)]] = 1
    ncomp, label = connected_components(sps.csr_matrix(adj), directed=True, connection="strong")
    return {"match": match.tolist(), "ncomp": int(ncomp), "label": label.tolist()}
