"""The Modelica export's equations beyond the embedded ODE itself
(``fmigen.tools.modelica``): the joint reactions (``s.reaction``), which read
every coordinate's acceleration and the constraint multipliers, and the
prescribed coordinates (``s.prescribe``), whose acceleration is their input's
filter and whose driving force is an unknown of the model; with the scalar
rows and the embedding's columns both share with the ODE.

Joint reactions.  The FMU solves K [q̈; λ] = [F; γ], K = [[M, Φ_qᵀ], [Φ_q,
0]] (``codegen.reaction_system``).  Its q̈ is the embedded ODE's: the
independent accelerations q̈_i and q̈ = B q̈_i + a_c.  The model writes that
q̈ (``fmigen_qdd``) and λ (``fmigen_lambda``) from the dependent rows of
M q̈ + Φ_qᵀ λ = F, Φ_dᵀ λ = (F − M q̈)_d: Φ_d is block-triangular (a block's
constraints read the unknowns of earlier blocks), so Φ_dᵀ is too in the
reverse order, and each block's multipliers solve Φ_bbᵀ λ_b = (F − M q̈ −
Σ_later Φ_qᵀ λ)_b, its diagonal block Φ_bb the model's ``fmigen_J<b>``
already.  The same numbers as the whole K's solve to round-off wherever
Φ_d is regular (the independent rows then hold by the embedded ODE), and
each system is the size of a kinematic block, not n + m.

Prescribed coordinates.  The runtime drives a prescribed coordinate by the
generalized force (a hidden input, the output ``drive_<coordinate>``) that
gives it the filter's acceleration q̈ = ω²(u − q) − 2ω q̇, found from two
evaluations of the accelerations (``fmigen_core.c``, ``prescribe``; they are
affine in the force).  The model states the same thing as equations: the
force is an unknown of the model (the output itself), and one more equation
per prescription sets the coordinate's acceleration to the filter's; the
embedded ODE's rows then determine the other accelerations and the force
together, a linear system the Modelica tool solves.
"""

from __future__ import annotations

import sympy as sp

from fmigen.model import acceleration_symbol, multiplier_symbol
from fmigen.tools.modelica_printer import mo


def scalar_rows(lhs_rows, rhs) -> list[str]:
    """One scalar equation per row, ``Σ_c J[r, c]·x_c = rhs_r`` (``lhs_rows``
    the products' terms already printed).  Why not ``J * x = b``: rumoca
    0.10.2 lowers an array equation once per scalar row and re-lowers the
    whole right-hand side array each time, so array equations cost the
    square of their size in its setup (docs/modelica.md)."""
    return [f"    {' + '.join(terms) if terms else '0.0'} = {r};" for terms, r in zip(lhs_rows, rhs)]


def embedding_columns(emb, tri, tag=""):
    """B (n×f, rows of lists) and a_c (n) as sympy entries: 1 and 0 at the
    independent coordinates, and each dependent coordinate's entries the
    variables of its block (``fmigen_B<b>[r, k]``, ``fmigen_a<b>[r]``; a
    switching model's partition's with its ``tag``, ``fmigen_p2_B1``)."""
    I, f, n = list(emb.independent), emb.f, emb.dae.n
    where = {i: (bi, k) for bi, solved_block in enumerate(tri.blocks) for k, i in enumerate(solved_block.block.unknowns)}
    B, ac = [], []
    for i in range(n):
        if i in I:
            B.append([sp.S.One if I.index(i) == k else sp.S.Zero for k in range(f)])
            ac.append(sp.S.Zero)
        else:
            bi, r = where[i]
            B.append([sp.Symbol(f"fmigen_{tag}B{bi + 1}[{r + 1}, {k + 1}]") for k in range(f)])
            ac.append(sp.Symbol(f"fmigen_{tag}a{bi + 1}[{r + 1}]"))
    return B, ac


def mass_entry(r, c) -> str:
    """The model's variable of the mass matrix entry M[r, c] (0-based),
    declared only where M is structurally nonzero."""
    return f"fmigen_M_{r + 1}_{c + 1}"


def reaction_symbols(dae) -> dict:
    """The model's names of what a reaction output reads: each coordinate's
    acceleration symbol (``fmigen_qdd[i]``) and each constraint's multiplier
    (``fmigen_lambda[j]``), for the expression printer's substitutions."""
    subs = {acceleration_symbol(nm): sp.Symbol(f"fmigen_qdd[{i + 1}]") for i, nm in enumerate(dae.names)}
    subs.update({multiplier_symbol(nm): sp.Symbol(f"fmigen_lambda[{j + 1}]")
                 for j, nm in enumerate(dae.constraint_names)})
    return subs


def reaction_equations(emb, tri, names) -> tuple[list[str], list[str]]:
    """(declarations, equations) of every coordinate's acceleration and the
    multipliers (the module's "Joint reactions"), for the reaction outputs;
    ``names`` prints the model's expressions and holds the independent
    accelerations' names (``names.an``)."""
    dae, I, n = emb.dae, list(emb.independent), emb.dae.n
    m = len(dae.constraint_names)
    B, ac = embedding_columns(emb, tri)
    decls = [f"    Real fmigen_qdd[{n}] \"every coordinate's acceleration (q̈ = B q̈_i + a_c), for the reactions\";"]
    lines = ["    // the joint reactions' q̈ and λ: q̈ = B q̈_i + a_c, then Φ_dᵀ λ = (F − M q̈)_d block by block"]
    for i in range(n):
        if i in I:
            rhs = names.an[i]
        else:
            terms = [f"{mo(B[i][k])}*{names.an[j]}" for k, j in enumerate(I)] + [mo(ac[i])]
            rhs = " + ".join(terms)
        lines.append(f"    fmigen_qdd[{i + 1}] = {rhs};")
    if not m:
        return decls, lines
    decls.append(f"    Real fmigen_lambda[{m}] \"the constraint multipliers (M q̈ + Φ_qᵀ λ = F), for the reactions\";")
    for bi, solved_block in enumerate(tri.blocks):
        U, E = solved_block.block.unknowns, solved_block.block.equations
        own = set(E)
        lhs, rhs = [], []
        for c, i in enumerate(U):
            # row i of Φ_qᵀ λ: this block's multipliers through Φ_bbᵀ, the
            # other constraints' (those that read coordinate i as a known) on
            # the right
            lhs.append([f"fmigen_J{bi + 1}[{r + 1}, {c + 1}]*fmigen_lambda[{e + 1}]" for r, e in enumerate(E)])
            mq = [f"{mass_entry(i, j)}*fmigen_qdd[{j + 1}]" for j in range(n) if emb.M[i, j] != 0]
            other = [f"({names(emb.Phi_q[e, i])})*fmigen_lambda[{e + 1}]"
                     for e in range(m) if e not in own and emb.Phi_q[e, i] != 0]
            rhs.append(" - ".join([f"fmigen_F[{i + 1}]", *mq, *other]))
        lines += scalar_rows(lhs, rhs)
    return decls, lines


def prescribed_equations(mech, names) -> list[str]:
    """Per prescribed coordinate, its acceleration the filter's,
    q̈ = ω²(u − q) − 2ω q̇ (``Prescription``): with the driving force an
    unknown of the model, the equation that determines it."""
    lines = []
    coords = [c.name for c in mech.coordinates]
    inputs = [u.name for u in mech.inputs]
    for p in mech.prescribed:
        i, k = coords.index(p.coordinate), inputs.index(p.input)
        w = 1.0 / float(p.time_constant)
        lines.append(f"    {names.an[i]} = {w * w!r}*({names.un[k]} - {names.qn[i]}) - {2.0 * w!r}*{names.vn[i]}; "
                     f"// {p.coordinate} follows {p.input}: the filter that {p.drive} enforces")
    return lines
