"""Coordinate switching in the Modelica export (``fmigen.tools.modelica``).

A mechanism with ``switch_independent`` (Blajer, Schiehlen and Schirm,
*Dynamic analysis of constrained multibody systems using inverse
kinematics*, 1992) has several partitions: the declared independent
coordinates (partition 1) and each further set (partitions 2, ...), each
with its own block-triangular kinematics and embedding.  The FMU switches at
the start of an internal step when another partition's velocity
amplification max|v_d| / max|v_i| (in unit scales) is FMIGEN_SWITCH_GAIN
times smaller than the active one's (``fmigen_core.c``,
``switch_partition``), and carries the state over unchanged: the new
independent coordinates and velocities are read from the complete q, v.

The model does the same with Modelica's own means:

* ``Integer fmigen_part``: the active partition;
* states ``fmigen_s_<k>``, ``fmigen_sv_<k>``: the k-th independent
  coordinate of the active partition and its velocity (a chart: x while
  partition 1 is active, the crank angle while partition 2 is);
* every partition's kinematics (its block functions, sequences and
  per-block velocity, B and a_c solves), each variable prefixed
  ``fmigen_p<p>_``, read from the chart states while its partition is
  active; otherwise every block returns its prediction and every linear
  system is the identity (``Chart.guard``), since an inactive partition is
  singular exactly where the switch left it;
* the coordinates, velocities, B and a_c the active partition's (``if``
  expressions on ``fmigen_part``); the mass matrix, forces and the embedded
  ODE once, in those;
* the switch: per partition p the C's choice of p as a condition of the
  continuous velocities (amplifications compared cross-multiplied, so a
  vanishing independent velocity is an infinite amplification as in the C),
  in one ``when ... elsewhen`` whose branch sets ``fmigen_part = p`` and
  ``reinit``s the chart states to p's independent coordinates and
  velocities.  The conditions read ``pre(fmigen_part)``: rumoca 0.10.2
  rejects a when-condition that reads the variable its clause assigns.  A
  ``reinit`` reads the values before the event, so nothing jumps.  The
  conditions hold off during the initialization (``not initial()``): the
  C's first check is at the first step's start, and a start that another
  partition suits better switches there, at the start time.

The tool locates the switch where the condition crosses; the FMU switches
at the first step start past it (within one internal step).  Both integrate
the same motion in a regular chart, so their trajectories agree to the
integration error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from fmigen.tools.modelica_blocks import Chart, _mods, _unit, block_velocity_equations, kinematics_equations
from fmigen.tools.modelica_motion import embedding_columns
from fmigen.tools.modelica_printer import mo


def switch_gain() -> float:
    """FMIGEN_SWITCH_GAIN of the C runtime, read from its header: the model
    switches where the FMU does."""
    header = Path(__file__).resolve().parent.parent / "runtime" / "fmigen_runtime.h"
    return float(re.search(r"#define FMIGEN_SWITCH_GAIN\s+(\S+)", header.read_text()).group(1))


def partitions(compiled) -> list:
    """The (embedding, triangularization) of every partition, the declared
    one first (the FMU's numbering)."""
    return [(compiled.embedding, compiled.triangular), *compiled.alternatives]


class _PartNames:
    """A partition's spelling of the model's symbols: its own coordinates
    and velocities (``fmigen_p<p>_x``), the model's parameters and inputs."""

    def __init__(self, names, dae, p):
        self.qn = [f"fmigen_p{p}_{q}" for q in names.qn]
        self.vn = [f"fmigen_p{p}_{v}" for v in names.vn]
        self.pn, self.un = names.pn, names.un
        self.subs = dict(names.subs)
        self.subs.update({qs: sp.Symbol(q) for qs, q in zip(dae.q_sym, self.qn)})
        self.subs.update({vs: sp.Symbol(v) for vs, v in zip(dae.v_sym, self.vn)})

    def __call__(self, expr) -> str:
        return mo(sp.sympify(expr).xreplace(self.subs))


def _select(texts, part="fmigen_part") -> str:
    """The text of the active partition's: an ``if`` on ``part``."""
    if len(texts) == 1:
        return texts[0]
    branches = [f"{'if' if p == 0 else 'elseif'} {part} == {p + 1} then {x}" for p, x in enumerate(texts[:-1])]
    return f"({' '.join(branches)} else {texts[-1]})"


def _largest(terms) -> str:
    if not terms:
        return "0.0"
    out = terms[0]
    for x in terms[1:]:
        out = f"max({out}, {x})"
    return out


@dataclass
class Switching:
    """What a switching model adds to the export: the block functions of
    every partition (and the solve sizes and step degrees they call), the
    declarations, the equations (the partitions' kinematics, the active
    one's selection, the chart ODE and the switch), and what the embedded
    ODE reads: the active partition's B and a_c as sympy entries
    (``columns``) and the chart accelerations."""
    functions: list
    sizes: set
    degrees: set
    declarations: list
    equations: list
    columns: tuple
    accelerations: list


def _partition(model, dae, names, p, emb_p, tri_p):
    """(functions, sizes, degrees, declarations, equations, (B, a_c)) of
    partition p (1-based)."""
    chart = Chart(f"p{p}_", f"fmigen_part == {p}")
    local = _PartNames(names, dae, p)
    mech = dae.mechanism
    decls, eqs = [], [f"    // partition {p}: independent {', '.join(dae.names[i] for i in emb_p.independent)}"]
    for i, c in enumerate(mech.coordinates):
        vunit = c.unit + "/s" if c.unit else ""
        decls += [f"    Real {local.qn[i]}{_mods(_unit(c.unit))} \"{c.name} in partition {p}\";",
                  f"    Real {local.vn[i]}{_mods(_unit(vunit))} \"the velocity of {c.name} in partition {p}\";"]
    # the chart states, whichever partition is active: an if between a state
    # and a discrete value here stops rumoca 0.10.2's algebraic projection
    # (an infinite block result); an inactive partition only evaluates its
    # sequences' polynomial coefficients at these values, every solve of it
    # being guarded
    for k, i in enumerate(emb_p.independent):
        eqs += [f"    {local.qn[i]} = fmigen_s_{k + 1};", f"    {local.vn[i]} = fmigen_sv_{k + 1};"]
    functions, sizes, degrees, seq_decls, kin = kinematics_equations(
        model, emb_p, tri_p, local, chart, predicted=lambda i: f"fmigen_pred[{i + 1}]")
    vel_decls, vel = block_velocity_equations(emb_p, tri_p, local, chart=chart)
    return functions, sizes, degrees, decls + seq_decls + vel_decls, eqs + kin + vel, \
        embedding_columns(emb_p, tri_p, chart.tag)


def switching_model(model, compiled, names) -> Switching:
    """The ``Switching`` of a compiled mechanism with alternative
    partitions; ``names`` the model's (``_ModelNames``)."""
    from fmigen.derive.workspace import mechanism_unit_scales
    dae, parts = compiled.dae, partitions(compiled)
    mech, n, f = dae.mechanism, dae.n, compiled.embedding.f
    start = compiled.triangular.start
    out = Switching([], set(), set(), [], [], None, [f"fmigen_sa_{k + 1}" for k in range(f)])
    I1 = list(compiled.embedding.independent)
    sets = "; ".join(f"{p + 1}: {', '.join(dae.names[i] for i in e.independent)}" for p, (e, _) in enumerate(parts))
    out.declarations += [
        f"    Integer fmigen_part(start = 1, fixed = true) \"the active partition (independent coordinates "
        f"{sets})\";",
        *[line for k, i in enumerate(I1) for line in (
            f"    Real fmigen_s_{k + 1}(start = {float(start[dae.names[i]])!r}, fixed = true) "
            f"\"independent coordinate {k + 1} of the active partition (state)\";",
            f"    Real fmigen_sv_{k + 1}(start = {float(mech.coordinates[i].velocity_start)!r}, fixed = true) "
            f"\"its velocity (state)\";",
            f"    Real fmigen_sa_{k + 1} \"its acceleration\";")],
        f"    Real fmigen_B[{n}, {f}] \"B of the active partition (q̇ = B ṡ)\";",
        f"    Real fmigen_ac[{n}] \"a_c of the active partition\";",
        f"    Real fmigen_vi[{len(parts)}] \"per partition, max |v_i| in unit scales\";",
        f"    Real fmigen_vd[{len(parts)}] \"per partition, max |v_d| in unit scales\";"]
    out.equations += [line for k in range(f) for line in (
        f"    der(fmigen_s_{k + 1}) = fmigen_sv_{k + 1};", f"    der(fmigen_sv_{k + 1}) = fmigen_sa_{k + 1};")]
    columns = []
    for p, (emb_p, tri_p) in enumerate(parts, start=1):
        functions, sizes, degrees, decls, eqs, cols = _partition(model, dae, names, p, emb_p, tri_p)
        out.functions += functions
        out.sizes |= sizes
        out.degrees |= degrees
        out.declarations += decls
        out.equations += eqs
        columns.append(cols)
    local = [_PartNames(names, dae, p) for p in range(1, len(parts) + 1)]
    out.equations.append("    // the active partition's coordinates, velocities, B and a_c")
    for i in range(n):
        out.equations += [f"    {names.qn[i]} = {_select([ln.qn[i] for ln in local])};",
                          f"    {names.vn[i]} = {_select([ln.vn[i] for ln in local])};"]
        out.equations += [f"    fmigen_B[{i + 1}, {k + 1}] = {_select([mo(B[i][k]) for B, _ in columns])};"
                          for k in range(f)]
        out.equations.append(f"    fmigen_ac[{i + 1}] = {_select([mo(ac[i]) for _, ac in columns])};")
    out.columns = ([[sp.Symbol(f"fmigen_B[{i + 1}, {k + 1}]") for k in range(f)] for i in range(n)],
                   [sp.Symbol(f"fmigen_ac[{i + 1}]") for i in range(n)])
    out.equations += _switch(names, parts, mechanism_unit_scales(mech))
    return out


def _switch(names, parts, scales) -> list[str]:
    """The amplifications and the ``when`` that switches (the module's
    docstring)."""
    P, gain = len(parts), switch_gain()

    def speed(i):
        return f"abs({names.vn[i]})/{float(scales[i])!r}"

    lines = ["    // coordinate switching: the partition whose velocity amplification max|v_d| / max|v_i| is "
             f"{gain!r} times smaller than the active one's (fmigen_core.c, switch_partition)"]
    for p, (emb_p, _) in enumerate(parts, start=1):
        lines += [f"    fmigen_vi[{p}] = {_largest([speed(i) for i in emb_p.independent])};",
                  f"    fmigen_vd[{p}] = {_largest([speed(i) for i in emb_p.dependent])};"]
    vi = _select([f"fmigen_vi[{p}]" for p in range(1, P + 1)], "pre(fmigen_part)")
    vd = _select([f"fmigen_vd[{p}]" for p in range(1, P + 1)], "pre(fmigen_part)")

    def moving(q):   # the C's amplification >= 0
        return f"fmigen_vi[{q}] + fmigen_vd[{q}] > 1e-12"

    def below(p, q, strict):   # amplification of p below q's (vd_p/vi_p < vd_q/vi_q), inf where vi = 0
        return f"fmigen_vd[{p}]*fmigen_vi[{q}] {'<' if strict else '<='} fmigen_vd[{q}]*fmigen_vi[{p}]"

    for p, (emb_p, _) in enumerate(parts, start=1):
        # the C takes, among the partitions GAIN times better than the active
        # one, the first of least amplification (with two there is one)
        terms = ["not initial()", f"{vi} + {vd} > 1e-12", f"{vd} > 0.0", moving(p),
                 f"{gain!r}*fmigen_vd[{p}]*{vi} < {vd}*fmigen_vi[{p}]"]
        if P > 2:
            terms += [f"(not ({moving(q)}) or {below(p, q, q < p)})" for q in range(1, P + 1) if q != p]
        lines.append(f"    {'when' if p == 1 else 'elsewhen'} {' and '.join(terms)} then")
        lines.append(f"      fmigen_part = {p};")
        for k, i in enumerate(emb_p.independent):
            lines += [f"      reinit(fmigen_s_{k + 1}, {names.qn[i]});", f"      reinit(fmigen_sv_{k + 1}, {names.vn[i]});"]
    lines.append("    end when;")
    return lines
