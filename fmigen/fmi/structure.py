"""Exact ModelStructure for the FMU: which knowns every unknown depends on.

The dependencies are structural, read off the symbolic model:

* a dependent coordinate is solved from the constraints of its loop (the
  connected component of the constraint/dependent-coordinate incidence graph),
  so it depends on the independent coordinates that appear in that loop;
* its velocity comes from Φ_d v_d = −Φ_i v_i − Φ_t over the same loop, so it
  also depends on those independent velocities;
* ``constraint_residual`` depends on every independent coordinate in Φ;
* a user output depends on the symbols of its expression, with dependent
  coordinates and velocities replaced by their own dependencies;
* the acceleration of an independent coordinate (Model Exchange only) comes
  from the embedded ODE: every state, the inputs in F, the tunable parameters
  in M and F.

Knowns are named by FMU variable name (``theta``, ``der(theta)``, ``tau``,
``m1``) plus ``time``.  ``runtime`` lists the knowns after initialization
(states, inputs, time); ``initial`` those in initialization mode (exact
states, inputs, tunable parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from fmigen.derive.embed import Embedding
from fmigen.graph import component_roots
from fmigen.model import t


@dataclass
class Dependencies:
    runtime: dict[str, list[str]] = field(default_factory=dict)
    initial: dict[str, list[str]] = field(default_factory=dict)


def _components(emb: Embedding):
    """For each dependent coordinate index, the independent coordinate indices of its loop."""
    dae = emb.dae
    dep = set(emb.dependent)
    uses = [{i for i, q in enumerate(dae.q_sym) if q in phi.free_symbols} for phi in dae.Phi]
    root = component_roots(dep, [(a, b) for u in uses for a, b in zip(sorted(u & dep), sorted(u & dep)[1:])])
    loop_indep = {}
    for u in uses:
        ds = u & dep
        if ds:
            loop_indep.setdefault(root[next(iter(ds))], set()).update(u - dep)
    return {d: loop_indep.get(root[d], set()) for d in dep}


def dependencies(emb: Embedding) -> Dependencies:
    dae = emb.dae
    names = dae.names
    qname = {i: names[i] for i in range(dae.n)}
    vname = {i: f"der({names[i]})" for i in range(dae.n)}
    indep = list(emb.independent)
    loop = _components(emb)
    param_name = {s: p.name for s, p in zip(dae.tunable, [p for p in dae.mechanism.parameters if p.tunable])}
    input_name = {s: i.name for s, i in zip(dae.inputs, dae.mechanism.inputs) if not i.hidden}
    # a prescribed coordinate's driving force is no FMU variable: it is
    # solved from the state and the input the coordinate follows
    drive_of = {p.drive: p.input for p in dae.mechanism.prescribed}
    hidden = {s: drive_of[i.name] for s, i in zip(dae.inputs, dae.mechanism.inputs) if i.name in drive_of}
    # a trimmed preload is solved at initialization from the start and every
    # parameter, and constant after it; the loads it balances are the inputs'
    # declared starts (fmigen_core_trim), not the inputs the importer sets
    trimmed = {i.symbol for i in dae.mechanism.inputs if any(tr.input == i.name for tr in dae.mechanism.trims)}
    indep_states = {qname[i] for i in emb.independent} | {vname[i] for i in emb.independent}

    def of_q(i):
        return {qname[i]} if i in indep else {qname[k] for k in loop[i]}

    def of_v(i):
        return {vname[i]} if i in indep else {qname[k] for k in loop[i]} | {vname[k] for k in loop[i]}

    def of_expr(*exprs):
        # the union of the expressions' symbols (not of their sum: summing
        # the vehicle's 74 forces one by one took seconds, each sum flattening
        # the whole Add again)
        symbols = set().union(*(sp.sympify(e).free_symbols for e in exprs))
        rt, params = set(), set()
        for s in symbols:
            if s in dae.q_sym:
                rt |= of_q(dae.q_sym.index(s))
            elif s in dae.v_sym:
                rt |= of_v(dae.v_sym.index(s))
            elif s in input_name:
                rt.add(input_name[s])
            elif s in hidden:
                rt |= indep_states | {hidden[s]}
            elif s in trimmed:
                params |= set(param_name.values()) | {qname[i] for i in indep}
            elif s in param_name:
                params.add(param_name[s])
            elif s == t:
                rt.add("time")
        return rt, params

    order = {nm: k for k, nm in enumerate(
        [qname[i] for i in range(dae.n)] + [vname[i] for i in range(dae.n)]
        + list(input_name.values()) + list(param_name.values()) + ["time"])}

    def sort(xs):
        return sorted(xs, key=lambda x: order.get(x, len(order)))

    deps = Dependencies()

    def put(name, rt, params=()):
        deps.runtime[name] = sort(rt)
        deps.initial[name] = sort((set(rt) - {"time"}) | set(params))

    for i in range(dae.n):
        put(qname[i], of_q(i))
        put(vname[i], of_v(i))
    phi_rt, _ = of_expr(*dae.Phi)
    put("constraint_residual", {x for x in phi_rt if not x.startswith("der(")})
    _, m_params = of_expr(*emb.M)
    f_rt, f_params = of_expr(*emb.F)
    g_rt, _ = of_expr(*emb.gamma, *emb.Phi_t)
    states = {qname[i] for i in indep} | {vname[i] for i in indep}
    acc_rt = states | {x for x in f_rt | g_rt if x not in states and not x.startswith("der(")
                       and x not in {qname[i] for i in range(dae.n)}}
    reactions = set(dae.mechanism.reactions)
    for name, expr in dae.outputs.items():
        rt, params = of_expr(expr)
        if name in reactions or sp.sympify(expr).free_symbols & set(hidden):
            # it reads q̈ and λ, which depend on what the accelerations do
            rt, params = rt | acc_rt, params | m_params | f_params
        put(name, rt, params)
    for i in indep:
        put(f"der({names[i]},2)", acc_rt, m_params | f_params)
    return deps


def augmented_dependencies(emb: Embedding, form) -> Dependencies:
    """Dependencies for an augmented formulation (fmigen/generate/formulation.py):
    every coordinate and velocity is a state.  After initialization each
    depends on itself, the residual on the coordinates in Φ, a user output on
    the symbols of its expression, and the acceleration der(q,2) of every
    coordinate on the structural dependencies of the formulation's linear
    system.  The start is assembled as in the embedded FMU, so the initial
    dependencies are the embedded ones, mapped through the kinematics."""
    from fmigen.generate.formulation import acceleration_dependencies
    dae = emb.dae
    names = dae.names
    base = dependencies(emb)
    sym_name = {}
    for i in range(dae.n):
        sym_name[dae.q_sym[i]] = names[i]
        sym_name[dae.v_sym[i]] = f"der({names[i]})"
    sym_name.update({s: i.name for s, i in zip(dae.inputs, dae.mechanism.inputs)})
    sym_name[t] = "time"
    param_name = {s: p.name for s, p in zip(dae.tunable, [p for p in dae.mechanism.parameters if p.tunable])}
    order = {nm: k for k, nm in enumerate(
        list(names) + [f"der({x})" for x in names] + [i.name for i in dae.mechanism.inputs]
        + list(param_name.values()) + [n for n, *_ in form.parameters()] + ["time"])}

    def sort(xs):
        return sorted(set(xs), key=lambda x: order.get(x, len(order)))

    def split(symbols):
        rt = {sym_name[s] for s in symbols if s in sym_name}
        params = {param_name[s] for s in symbols if s in param_name}
        return rt, params

    def initial_of(rt, params):
        out = set(params)
        for x in rt:
            if x == "time":
                continue
            out |= set(base.initial.get(x, [x]))
        return sort(out)

    deps = Dependencies(runtime={}, initial=dict(base.initial))
    for i in range(dae.n):
        deps.runtime[names[i]] = [names[i]]
        deps.runtime[f"der({names[i]})"] = [f"der({names[i]})"]
    phi_rt, _ = split(sp.Add(*dae.Phi).free_symbols if dae.m else set())
    deps.runtime["constraint_residual"] = sort(x for x in phi_rt if not x.startswith("der("))
    reactions = set(dae.mechanism.reactions)
    every_acceleration = set().union(*acceleration_dependencies(emb, form).values()) if reactions else set()
    for name, expr in dae.outputs.items():
        rt, _ = split(sp.sympify(expr).free_symbols | (every_acceleration if name in reactions else set()))
        deps.runtime[name] = sort(rt)
    fparams = {n for n, *_ in form.parameters()}
    for i, symbols in acceleration_dependencies(emb, form).items():
        rt, params = split(symbols)
        name = f"der({names[i]},2)"
        deps.runtime[name] = sort(rt)
        deps.initial[name] = initial_of(rt, params | fparams)
    return deps
