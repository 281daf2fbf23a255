"""Static trims (``JointSystem.trim``) in the conversion of a joint system.

A trimmed spring's preload is a hidden input of the generated code,
``trim_<spring>`` (``model.Trim``), which the runtime solves at
initialization, after it has assembled the start at the parameters the
importer set (hard points included): at rest (q̇ = 0) the equations of
motion M q̈ = F + Φ_qᵀ λ leave the trimmed coordinates unloaded when the
generalized force projected on the motions the constraints allow vanishes
on their rows, Nᵀ F = 0 with N = [I; −Φ_d⁻¹ Φ_i] (rows ordered as the
coordinates), one row per independent coordinate.  F is affine in the
preloads (a spring's tension is), so the runtime evaluates it at preload 0
and at each unit preload and solves the small linear system
(``fmigen_core.c``, ``fmigen_core_trim``; the Python runtime's
``Core.trim``).  Why at run time: N is Φ_q's at the assembled start, which
moves with every hard point, and no closed form of the assembly exists; a
preload that is a number of the build's geometry kept the default's
equilibrium when a hard point was set in the FMU, and put the default
geometry's numbers into the derivation's key.

``trim_solution`` is the same condition solved once at the build's start
and default geometry, in the tunable parameters: the build's check that
the trims are well posed (along independent coordinates, a non-singular
system) and what the Modelica export writes.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from fmigen.floats import rational
from fmigen.model import ModelError, Trim, declare_input, t


def declare_trims(system, m) -> dict:
    """{spring: its preload's symbol}: each trimmed spring's preload a
    hidden input ``trim_<spring>`` of ``m``, which the loads read in place
    of the declared preload (``joint_model._loads``)."""
    placeholders = {}
    for spring, coord in system.trims:
        sd = next(sd for sd in [*system.springs, *system.rotational_springs] if sd.name == spring)
        unit = "N" if sd in system.springs else "N.m"
        name = f"trim_{spring}"
        if name in system.outputs:
            raise ModelError(f"'{system.name}': the output '{name}' is the trim's of spring '{spring}'; "
                             "rename the output")
        try:
            sym = declare_input(m.inputs, name, 0.0, unit, f"trimmed preload of spring '{spring}'")
        except ModelError:
            raise ModelError(f"'{system.name}': the input '{name}' is the trim's of spring '{spring}'; "
                             "rename the input") from None
        m.inputs[-1].hidden = True
        placeholders[spring] = sym
        m.trims.append(Trim(spring, coord, name))
    return placeholders


def finish_trims(system, m, placeholders):
    """The outputs ``trim_<spring>`` (the solved preloads), and the build's
    check that the trims are well posed at the start (``trim_solution``)."""
    for spring, _ in system.trims:
        inp = next(i for i in m.inputs if i.symbol == placeholders[spring])
        m.output(inp.name, placeholders[spring], inp.unit,
                 f"trimmed preload of spring '{spring}' (static equilibrium at the start pose)")
    trim_solution(m)


def trim_solution(m) -> dict:
    """{trim input symbol: its preload}, solved at ``m``'s start (the pose
    the build assembled) and the parameters' default values for the
    geometry (hard points), as expressions in the other tunable parameters
    (masses, g, stiffnesses: the constant parts of Nᵀ F are linear in
    them).  Raises ModelError for a trim along a dependent coordinate or a
    trim the start leaves singular."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.embed import embed
    from fmigen.derive.partition import choose_partition
    name = m.name
    dae = build_dae(m, at_rest=True)
    names = list(dae.names)
    # the independent set the build will use (declared, or chosen as the
    # build chooses it), which must hold every trimmed coordinate
    emb = embed(dae, choose_partition(dae))
    emb.trim_coordinates()
    independent = [names[k] for k in emb.independent]
    q0 = np.array([float(c.start) for c in m.coordinates])
    ind = [names.index(n) for n in independent]
    dep = [k for k in range(len(names)) if k not in ind]
    N = np.zeros((len(names), len(ind)))
    N[ind, range(len(ind))] = 1.0
    if dep:
        J = dae.numeric.Phi_q(0.0, q0)
        N[dep, :] = -np.linalg.solve(J[:, dep], J[:, ind])
    unknowns = [next(i.symbol for i in m.inputs if i.name == tr.input) for tr in m.trims]
    at_rest = {**dict(zip(dae.q_sym, q0.tolist())), **{v: 0 for v in dae.v_sym}, t: 0,
               **{s: v for s, v in zip(dae.inputs, dae.input_values) if s not in unknowns}}
    hard = {p.symbol: rational(p.value, m.float_rule) for p in m.parameters if p.is_hard_point}
    F = [sp.sympify(f).xreplace({**at_rest, **hard}) for f in dae.F]
    rows = []
    for tr in m.trims:
        col = independent.index(tr.coordinate)
        rows.append(sp.Add(*[sp.Float(N[k, col]) * F[k] for k in range(len(names)) if N[k, col] != 0 and F[k] != 0]))
    A, b = sp.linear_eq_to_matrix([sp.expand(r) for r in rows], unknowns)
    stray = set().union(*(e.free_symbols for e in A)) if A else set()
    if stray:
        raise ModelError(f"'{name}': the trimmed preloads' coefficients depend on {sorted(map(str, stray))}; "
                         "a trim needs them to be numbers at the start pose")
    An = np.array(A.tolist(), dtype=float)
    if np.linalg.matrix_rank(An, tol=1e-12 * max(1.0, np.abs(An).max())) < len(unknowns):
        pairs = ", ".join(f"'{tr.spring}' along '{tr.coordinate}'" for tr in m.trims)
        raise ModelError(f"'{name}': the trim ({pairs}) has no unique solution: at the start pose a "
                         "trimmed spring does not act on its coordinate, or two act the same way")
    Ainv = np.linalg.inv(An)
    return {u: sp.Add(*[sp.Float(Ainv[i, j]) * b[j] for j in range(len(unknowns))]) for i, u in enumerate(unknowns)}


def fold_trims(m):
    """A copy of ``m`` whose trimmed preloads are ``trim_solution``'s
    expressions instead of hidden inputs (no ``Trim`` left): the trims
    solved at the build's start and default geometry, re-solved for other
    masses, g and stiffnesses by the expressions themselves.  For an
    export with no initialization of its own to solve them in (the Modelica
    export, ``tools/modelica.py``)."""
    import copy
    if not m.trims:
        return m
    solution = trim_solution(m)

    def put(e):
        return sp.sympify(e).xreplace(solution)

    out = copy.copy(m)
    # point forces (and their floating-base forms) are (point, force) pairs of tuples
    out.point_forces = [tuple(tuple(put(x) for x in part) for part in pf) for pf in m.point_forces]
    out.point_forces_in_base = [None if pb is None else tuple(tuple(put(x) for x in part) for part in pb)
                                for pb in m.point_forces_in_base]
    out.generalized_forces = {k: put(v) for k, v in m.generalized_forces.items()}
    out.outputs = {k: put(v) for k, v in m.outputs.items()}
    out.inputs = [i for i in m.inputs if i.symbol not in solution]
    out.trims = []
    return out
