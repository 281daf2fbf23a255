"""Modelica export: the reduced (embedded) model as self-contained Modelica source.

``fmigen export-modelica MECH -o X.mo [--package NAME]`` writes the model the
FMU integrates, from the same derivation (``pipeline.compile_model``: the
DAE, the partition, the embedding and the triangularization), printed as
Modelica instead of C:

* states: the independent coordinates and their velocities;
* the kinematics: one Modelica function per block of the block-triangular
  constraint Jacobian.  A Gröbner block's primary lex sequence
  (``TriangularBlock.steps``) is written as equations of the model: the
  abstracted knowns K, the predictions of the polynomial variables, each
  step's coefficients (polynomials in K and the earlier steps' variables)
  and its variable, the root of its univariate polynomial (a linear step by
  division, a quadratic by the root nearest the prediction, a higher degree
  by Newton from the prediction) by a small function of one output, and
  whether the sequence still holds (a vanishing leading coefficient, a
  representation singularity, leaves the block to Newton from the
  prediction).  Equations, not statements of the block function: a tool
  that inlines a call once per output, as rumoca does, would evaluate the
  sequence's coefficients (a six-bar's are 100 kB of text each) once per
  unknown of the block.  The block function then recovers the coordinates
  (atan2 of a (sin, cos) pair, turned to the prediction's revolution) and
  polishes them with a few Newton steps on the block's own constraints.  A
  Newton block's function iterates from the prediction.  Every loop has a
  literal bound (no ``while``): a fixed number of iterations that stop
  changing anything once the step is at round-off;
* the branch by continuity, as the C runtime chooses it: the C keeps the last
  accepted solution and predicts each variable from it and its velocity.  A
  Modelica function cannot keep state, so the model keeps it: discrete
  variables sample the dependent coordinates, their velocities and the time
  every ``predictorPeriod`` seconds (``when sample(...)``), and each block
  function receives the prediction ``pre(q) + pre(v)·(time − pre(t))`` for
  its unknowns.  ``pre`` makes it an input of the call, not an algebraic
  loop; the period only has to be short against the time the mechanism takes
  from one assembly branch to the other (default 1 ms);
* the dynamics as equations: the velocity constraint Φ_d v_d = −(Φ_i v_i +
  Φ_t), the columns of B = [−Φ_d⁻¹ Φ_i ; I] and a_c = [Φ_d⁻¹ γ ; 0], each
  block by block (Φ_d is block-triangular: a block's diagonal Φ_bb against
  what earlier blocks solved, as the C runtime does), the mass matrix M and
  forces F in the coordinates, and the embedded ODE (Bᵀ M B) q̈_i = Bᵀ (F −
  M a_c); these linear systems are equations (Φ_bb v_b = ..., (Bᵀ M B) q̈_i
  = ...) that the Modelica tool solves, every one written as scalar rows
  (M only at its structurally nonzero entries, M B and M a_c through them):
  a tool that lowers an array equation row by row re-evaluates its whole
  right-hand side per row, as rumoca does; the Newton steps inside the block
  functions solve theirs by Gaussian elimination with partial pivoting (a
  generated function per size);
* tunable parameters as ``parameter Real``, a hard point (one with a range,
  which may enter the constraints: the sequences are over Q(K) with it
  inside the K) with its range as ``min``/``max`` and an ``assert``;
  structural ones (geometry, baked into the Gröbner bases) as ``final
  parameter Real`` for the reader; inputs as ``input Real`` with their
  start; outputs as ``output Real``; units as ``unit=``.

Joint reactions (``s.reaction``: every coordinate's acceleration and the
constraint multipliers) and prescribed coordinates (``s.prescribe``: the
filter's acceleration, the drive an unknown force) are equations of the
model too (``fmigen.tools.modelica_motion``).  A kinematic mechanism is its
kinematics alone, with the kinematic FMU's interface: the independent
coordinates and their velocities inputs, the dependent ones and their
velocities outputs (the blocks and the velocity solve, no dynamics).
Coordinate switching (``switch_independent``): every partition's kinematics,
the states the active partition's independent coordinates, and a ``when``
that switches where the C runtime does (``fmigen.tools.modelica_switching``);
refused before the derivation (``refuse_mechanism``) together with a
kinematic interface, joint reactions or prescribed coordinates.

Only Modelica's built-in functions are used (``sin``, ``atan2``, ``sqrt``,
``abs``, ...), no Modelica Standard Library, no external C: the model runs in
a compiler without the MSL (rumoca, which the tests simulate it with).

``fmigen export-modelica MECH --fmu X.fmu`` writes instead a wrapper of the
FMU (``fmigen.tools.modelica_fmu``): external "C" functions, their C in the wrapper's
``Include`` annotation, that load the FMU's binary and co-simulate it.

Expressions come from the derivation as sympy expressions and are printed by
``fmigen.tools.modelica_printer`` (sympy has no Modelica printer: a small
``StrPrinter`` subclass, with ``^`` powers, ``if`` expressions and
floating-point rationals).
"""

from __future__ import annotations

import keyword
import re

import sympy as sp

from fmigen.model import ModelError, t
from fmigen.tools.modelica_blocks import _mods, _string, _unit, block_velocity_equations, kinematics_equations
from fmigen.tools.modelica_blocks import solve_function, step_function
from fmigen.tools.modelica_motion import embedding_columns as _embedding_columns
from fmigen.tools.modelica_motion import mass_entry as _mass_entry
from fmigen.tools.modelica_motion import prescribed_equations, reaction_equations, reaction_symbols
from fmigen.tools.modelica_motion import scalar_rows as _scalar_rows
from fmigen.tools.modelica_printer import mo
from fmigen.tools.modelica_switching import switching_model

#: Modelica's reserved words (MLS 3.6 §2.3.3) and the built-in names a
#: variable must not shadow here
RESERVED = set("""algorithm and annotation block break class connect connector constant constrainedby der
discrete each else elseif elsewhen encapsulated end enumeration equation expandable extends external false final
flow for function if import impure in initial inner input loop model not operator or outer output package
parameter partial protected public pure record redeclare replaceable return stream then true type when while
within time sin cos tan asin acos atan atan2 sinh cosh tanh exp log log10 sqrt abs sign pre sample noEvent
smooth min max sum size zeros ones fill transpose Real Integer Boolean String""".split())

CITATION = (
    "<p>Generated by fmigen from the mechanism <b>{name}</b>: the equations of motion in the "
    "independent coordinates (embedding: the Lagrange multipliers and the dependent accelerations "
    "eliminated, (B<sup>T</sup> M B) q&#776;<sub>i</sub> = B<sup>T</sup>(F &minus; M a<sub>c</sub>)), "
    "and the dependent coordinates from the constraints' triangular decomposition by lexicographic "
    "Gr&ouml;bner bases, the assembly branch chosen by continuity with the previous solution.</p>"
    "<p>Independent coordinates: {independent}. Kinematic blocks: {blocks}.</p>"
    "<p>Method: J. Garc&iacute;a de Jal&oacute;n and E. Bayo, <i>Kinematic and Dynamic Simulation of "
    "Multibody Systems: The Real-Time Challenge</i>, Springer, 1994 (coordinate partitioning and the "
    "embedded equations of motion); B. Buchberger, <i>Gr&ouml;bner Bases: An Algorithmic Method in "
    "Polynomial Ideal Theory</i>, 1985, and D. Cox, J. Little and D. O'Shea, <i>Ideals, Varieties, and "
    "Algorithms</i>, Springer, 1992 (lexicographic bases and triangular sets).</p>"
    "<p>The branch predictor samples the dependent coordinates every <code>predictorPeriod</code> "
    "seconds: keep it short against the motion between two assembly branches.</p>")


KINEMATIC = ("<p>A kinematic model: the independent coordinates and their velocities are inputs (the FMU's "
             "<code>q</code> and <code>der(q)</code>), the dependent ones and their velocities outputs, solved "
             "from the constraints alone; no dynamics.</p>")


def identifier(name: str, what: str) -> str:
    """``name`` as a Modelica identifier: characters other than letters,
    digits and _ become _, a leading digit or a reserved word gets a _ prefix
    or suffix."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not out or out[0].isdigit():
        out = "_" + out
    if out in RESERVED or keyword.iskeyword(out) or out.startswith("fmigen_"):
        out = out + "_"
    return out


# --------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------

def _listed(names, most=3) -> str:
    names = list(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def refuse_mechanism(mech):
    """A clear error for a mechanism whose features the export does not
    write, all named in one message.  Called on the loaded mechanism (its start already assembled),
    before the equations of motion and the triangularization, so a refusal
    costs no derivation."""
    why = []
    if mech.trims:
        # export_mechanism folds them (joint_trim.fold_trims)
        why.append(f"static trims ({', '.join(tr.spring for tr in mech.trims)}) as the runtime's hidden inputs")
    if mech.switch_independent:
        # the switching model's states are the active partition's chart
        # (modelica_switching); these read the declared partition's
        with_ = [what for what, has in (("a kinematic interface", mech.kinematic), ("joint reactions", mech.reactions),
                                        ("prescribed coordinates", mech.prescribed)) if has]
        if with_:
            why.append(f"coordinate switching (switch_independent {mech.switch_independent}) together with "
                       f"{' and '.join(with_)}, which the export writes for one fixed set of independent "
                       "coordinates only")
    if why:
        raise ModelError(f"export-modelica: '{mech.name}' has " + "; and ".join(why) +
                         ". Build an FMU instead (fmigen build), or export the mechanism without them "
                         "(docs/modelica.md)")


def _refuse_unexportable(compiled):
    """A clear error for a derivation the export does not write."""
    emb, dae = compiled.embedding, compiled.dae
    mech = dae.mechanism
    if compiled.dynamics not in ("embedded", "recursive"):
        raise ModelError(f"dynamics {compiled.dynamics}: the Modelica export writes the embedded ODE")
    refuse_mechanism(mech)
    if len(dae.constraint_names) != len(emb.dependent):
        raise ModelError(f"'{mech.name}': {len(dae.constraint_names)} constraints for {len(emb.dependent)} "
                         "dependent coordinates; the export needs a square Φ_d")


class _ModelNames:
    """The model's Modelica names: coordinates ``qn``, velocities ``vn``,
    the independent accelerations ``an``, tunable parameters ``pn``, inputs
    ``un``, outputs ``on``; two things spelled alike are an error naming
    both."""

    def __init__(self, mech, dae, I):
        self.used = {}
        claim = self.claim
        self.qn = [claim(identifier(c.name, "coordinate"), f"coordinate {c.name}") for c in mech.coordinates]
        self.vn = [claim("v_" + q, f"the velocity of {c.name}") for q, c in zip(self.qn, mech.coordinates)]
        self.an = {i: claim("a_" + self.qn[i], f"the acceleration of {mech.coordinates[i].name}") for i in I}
        self.tunable = [p for p in mech.parameters if p.tunable]
        self.pn = [claim(identifier(p.name, "parameter"), f"parameter {p.name}") for p in self.tunable]
        # a prescribed coordinate's driving force (a hidden input) is an
        # unknown of the model: the output of its name (prescribed_equations)
        self.un = [identifier(u.name, "input") if u.hidden else claim(identifier(u.name, "input"), f"input {u.name}")
                   for u in mech.inputs]
        self.on = {name: claim(identifier(name, "output"), f"output {name}") for name in dae.outputs}
        for u, name in zip(mech.inputs, self.un):
            if u.hidden and self.on.get(u.name) != name:
                raise ModelError(f"the hidden input {u.name} is no output of the same name: the export "
                                 "writes a prescribed coordinate's drive as that output")
        self.structural = [p for p in mech.parameters if not p.tunable and identifier(p.name, "") not in self.used]
        subs = {qs: sp.Symbol(self.qn[i]) for i, qs in enumerate(dae.q_sym)}
        subs.update({vs: sp.Symbol(self.vn[i]) for i, vs in enumerate(dae.v_sym)})
        subs.update({s: sp.Symbol(self.pn[k]) for k, s in enumerate(dae.tunable)})
        subs.update({s: sp.Symbol(self.un[k]) for k, s in enumerate(dae.inputs)})
        subs[t] = sp.Symbol("time")
        if mech.reactions:
            subs.update(reaction_symbols(dae))
        self.subs = subs

    def claim(self, name, what):
        if name in self.used:
            raise ModelError(f"{what} and {self.used[name]} are both '{name}' in Modelica; rename one")
        self.used[name] = what
        return name

    def __call__(self, expr) -> str:
        """An expression of the model's symbols as Modelica text."""
        return mo(sp.sympify(expr).xreplace(self.subs))



def _variables(mech, dae, I, names, start, predictor_period, switching=False) -> list[str]:
    """The model's declarations up to its embedded-ODE arrays: parameters,
    inputs, coordinates and velocities (the independent ones states; with
    ``switching`` none: the active partition's chart is), outputs."""
    lines = []
    for p, name in zip(names.tunable, names.pn):
        # a hard point's range as min/max: the sequence over Q(K) holds for
        # every value the build swept, and the FMU refuses any other
        bounds = [f"min = {float(p.range[0])!r}", f"max = {float(p.range[1])!r}"] if p.is_hard_point else []
        lines.append(f"    parameter Real {name}{_mods(_unit(p.unit), *bounds)} = {float(p.value)!r} "
                     f"{_string(p.description or 'tunable parameter')};")
    for p in names.structural:
        name = identifier(p.name, "parameter")
        names.claim(name, f"structural parameter {p.name}")
        lines.append(f"    final parameter Real {name}{_mods(_unit(p.unit))} = {float(p.value)!r} "
                     f"{_string('structural: built into the kinematic solution; informative only')};")
    lines.append(f"    parameter Real predictorPeriod(unit=\"s\") = {predictor_period!r} "
                 "\"period of the branch predictor's samples of the dependent coordinates\";")
    for u, name in zip(mech.inputs, names.un):
        if u.hidden:
            continue    # a drive: declared as its output
        # its start as a binding: the model simulates standalone, and a model
        # that uses it replaces the binding by a modification (plant(tau = u))
        lines.append(f"    input Real {name}{_mods(_unit(u.unit))} = {float(u.start)!r} "
                     f"{_string(u.description or 'input')};")
    qn, vn = names.qn, names.vn
    dependent = "(from the active partition)" if switching else "(dependent)"
    for i, c in enumerate(mech.coordinates):
        vunit = c.unit + "/s" if c.unit else ""
        if mech.kinematic:
            # the kinematic FMU's interface: the independent coordinates and
            # their velocities (der(q) in the FMU) inputs, the rest outputs
            kind, what = ("input", "independent; input") if i in I else ("output", "dependent")
            lines.append(f"    {kind} Real {qn[i]}{_mods(_unit(c.unit))}"
                         f"{f' = {float(start[c.name])!r}' if i in I else ''} "
                         f"{_string((c.description + ' ' if c.description else '') + f'({what})')};")
            lines.append(f"    {kind} Real {vn[i]}{_mods(_unit(vunit))}"
                         f"{f' = {float(c.velocity_start)!r}' if i in I else ''} {_string(f'velocity of {c.name}')};")
        elif i in I:
            lines.append(f"    Real {qn[i]}{_mods(_unit(c.unit), f'start = {float(start[c.name])!r}', 'fixed = true')}"
                         f" {_string((c.description + ' ' if c.description else '') + '(independent; state)')};")
            lines.append(f"    Real {vn[i]}{_mods(_unit(vunit), f'start = {float(c.velocity_start)!r}', 'fixed = true')}"
                         f" {_string(f'velocity of {c.name} (state)')};")
            aunit = c.unit + "/s2" if c.unit else ""
            lines.append(f"    Real {names.an[i]}{_mods(_unit(aunit))} {_string(f'acceleration of {c.name}')};")
        else:
            lines.append(f"    Real {qn[i]}{_mods(_unit(c.unit))} "
                         f"{_string((c.description + ' ' if c.description else '') + dependent)};")
            lines.append(f"    Real {vn[i]}{_mods(_unit(vunit))} {_string(f'velocity of {c.name}')};")
    info = mech.output_info
    for name, mname in names.on.items():
        unit, d = info.get(name, ("", ""))
        lines.append(f"    output Real {mname}{_mods(_unit(unit))} {_string(d or 'output')};")
    return lines


def _hard_point_asserts(names) -> list[str]:
    """An ``assert`` per hard point: a value outside its declared range is
    refused, as the FMU refuses it (a tool may only warn on a parameter
    outside its min/max)."""
    out = []
    for p, name in zip(names.tunable, names.pn):
        if p.is_hard_point:
            lo, hi = (float(x) for x in p.range)
            why = (f"hard point {p.name} outside its declared range [{lo!r}, {hi!r}], the only values the "
                   "build swept; rebuild with a wider range")
            out.append(f"    assert({name} >= {lo!r} and {name} <= {hi!r}, {_string(why)});")
    return out





def _ode_equations(emb, tri, names, columns=None, accelerations=None) -> list[str]:
    """The embedded ODE (Bᵀ M B) q̈_i = Bᵀ (F − M a_c) in scalar equations:
    the structurally nonzero entries of M, the forces F, M B and M a_c
    through those entries only, Bᵀ M B and Bᵀ (F − M a_c), then the
    independent accelerations row by row; and the outputs.  ``columns``
    (B, a_c) and the ``accelerations`` q̈_i: a switching model's active
    partition's (default: the embedding's)."""
    dae, I, f, n = emb.dae, list(emb.independent), emb.f, emb.dae.n
    m = names
    B, ac = columns or _embedding_columns(emb, tri)
    accelerations = accelerations or [names.an[i] for i in I]
    nonzero = [[c for c in range(n) if emb.M[r, c] != 0] for r in range(n)]
    lines = ["    // the embedded ODE: (Bᵀ M B) q̈_i = Bᵀ (F − M a_c)"]
    lines += [f"    {_mass_entry(r, c)} = {m(emb.M[r, c])};" for r in range(n) for c in nonzero[r]]
    lines += [f"    fmigen_F[{r + 1}] = {m(emb.F[r])};" for r in range(n)]

    def dot(row, column):   # Σ_j M[r, j]·x_j over M's nonzero entries of row r
        terms = [f"{_mass_entry(row, j)}*{mo(column[j])}" for j in nonzero[row] if column[j] != 0]
        return " + ".join(terms) if terms else "0.0"

    for r in range(n):
        for k in range(f):
            lines.append(f"    fmigen_MB[{r + 1}, {k + 1}] = {dot(r, [B[j][k] for j in range(n)])};")
        lines.append(f"    fmigen_Mac[{r + 1}] = {dot(r, ac)};")
    for a in range(f):
        rows = [r for r in range(n) if B[r][a] != 0]
        for b in range(f):
            lines.append(f"    fmigen_Mr[{a + 1}, {b + 1}] = "
                         f"{' + '.join(f'{mo(B[r][a])}*fmigen_MB[{r + 1}, {b + 1}]' for r in rows) or '0.0'};")
        lines.append(f"    fmigen_h[{a + 1}] = "
                     f"{' + '.join(f'{mo(B[r][a])}*(fmigen_F[{r + 1}] - fmigen_Mac[{r + 1}])' for r in rows) or '0.0'};")
    lines += _scalar_rows([[f"fmigen_Mr[{a + 1}, {b + 1}]*{acc}" for b, acc in enumerate(accelerations)] for a in range(f)],
                          [f"fmigen_h[{a + 1}]" for a in range(f)])
    return lines + _output_equations(dae, names)


def _output_equations(dae, names) -> list[str]:
    """The outputs' equations; a drive's output is the unknown force itself
    (``prescribed_equations``), with none of its own."""
    drives = {p.drive for p in dae.mechanism.prescribed}
    return [f"    {names.on[name]} = {names(expr)};" for name, expr in dae.outputs.items() if name not in drives]


def export(compiled, package: str | None = None, predictor_period: float = 1e-3) -> str:
    """Modelica source of a ``pipeline.Compiled`` derivation: a package named
    ``package`` (default: the mechanism's name) holding the functions and a
    model named after the mechanism."""
    _refuse_unexportable(compiled)
    emb, tri, dae = compiled.embedding, compiled.triangular, compiled.dae
    mech = dae.mechanism
    n, f = dae.n, emb.f
    I, D = list(emb.independent), list(emb.dependent)
    model = identifier(mech.name, "the mechanism")
    pkg = identifier(package, "--package") if package else model
    kinematic = mech.kinematic   # the kinematics alone: no mass matrix, forces or ODE
    # coordinate switching: the states are the active partition's chart, every
    # coordinate an algebraic variable, and the predictor samples them all
    names = _ModelNames(mech, dae, [] if compiled.alternatives else I)
    if compiled.alternatives:
        sw = switching_model(model, compiled, names)
        functions, sizes, degrees, kin_decls, kin_lines = sw.functions, sw.sizes, sw.degrees, [], []
        D, states = list(range(n)), []
    else:
        sw, states, kin_decls, kin_lines = None, ([] if kinematic else I), [], []
        functions, sizes, degrees, sequence_decls, kinematics = kinematics_equations(model, emb, tri, names)
    nd = len(D)
    # the Newton steps inside the block functions solve by generated
    # elimination; the model's own linear systems are equations (J x = b),
    # which the tool solves itself: rumoca 0.10.2 inlines a called function
    # into the model before simulating, and a pivoting elimination per
    # system cost it more setup than the equations do
    solve_text = [solve_function(k) for k in sorted(sizes)]
    solve_text += [step_function(d, output) for d in sorted(degrees) for output in ("root", "ok")]

    lines = [f"package {pkg} {_string(f'{mech.name}: embedded equations of motion, exported by fmigen')}", ""]
    lines += solve_text + functions
    desc = mech.description or f"{mech.name}, exported by fmigen"
    lines.append(f"  model {model} {_string(desc)}")
    lines += _variables(mech, dae, states if sw else I, names, tri.start, predictor_period, bool(sw))
    if nd:
        lines += [
            f"    discrete Real fmigen_qs[{nd}](start = {{{', '.join(repr(float(tri.start[dae.names[i]])) for i in D)}}}, "
            f"each fixed = true) \"the {'' if sw else 'dependent '}coordinates at the last sample\";",
            f"    discrete Real fmigen_vs[{nd}](start = fill(0.0, {nd}), each fixed = true) "
            "\"their velocities at the last sample\";",
            "    discrete Real fmigen_ts(start = 0.0, fixed = true) \"the last sample's time\";",
            f"    Real fmigen_pred[{nd}] \"the {'' if sw else 'dependent '}coordinates predicted from the last sample\";",
        ]
    if not kinematic:
        lines += [f"    Real {_mass_entry(r, c)} \"mass matrix entry\";"
                  for r in range(n) for c in range(n) if emb.M[r, c] != 0]
        lines += [f"    Real fmigen_F[{n}] \"forces\";",
                  f"    Real fmigen_MB[{n}, {f}] \"M B (q̇ = B q̇_i + c)\";",
                  f"    Real fmigen_Mac[{n}] \"M a_c (a_c = [Φ_d⁻¹ γ ; 0])\";",
                  f"    Real fmigen_Mr[{f}, {f}] \"Bᵀ M B\";",
                  f"    Real fmigen_h[{f}] \"Bᵀ (F − M a_c)\";"]
    if sw:
        kin_decls, kin_lines = sw.declarations, sw.equations
    elif nd:
        decls, block_lines = block_velocity_equations(emb, tri, names, velocities_only=kinematic)
        kin_decls, kin_lines = sequence_decls + decls, kinematics + block_lines
    lines += kin_decls
    reactions = reaction_equations(emb, tri, names) if mech.reactions else ([], [])
    lines += reactions[0]
    lines.append("  equation")
    lines += _hard_point_asserts(names)
    for i in states:
        lines += [f"    der({names.qn[i]}) = {names.vn[i]};", f"    der({names.vn[i]}) = {names.an[i]};"]
    if nd:
        lines += ["    // the branch predictor: the last sample, moved on by its velocity",
                  *[f"    fmigen_pred[{k}] = pre(fmigen_qs[{k}]) + pre(fmigen_vs[{k}]) * (time - pre(fmigen_ts));"
                    for k in range(1, nd + 1)],
                  "    when sample(0, predictorPeriod) then",
                  # arrays: rumoca takes no element of a discrete array as a when equation's target
                  f"      fmigen_qs = {{{', '.join(names.qn[i] for i in D)}}};",
                  f"      fmigen_vs = {{{', '.join(names.vn[i] for i in D)}}};",
                  "      fmigen_ts = time;",
                  "    end when;",
                  "    // the kinematics, block by block"]
        lines += kin_lines
    lines += prescribed_equations(mech, names)
    lines += _output_equations(dae, names) if kinematic else \
        _ode_equations(emb, tri, names, *((sw.columns, sw.accelerations) if sw else ()))
    lines += reactions[1]
    independent = ", ".join(dae.names[i] for i in I)
    if sw:
        independent += "; by coordinate switching also " + "; ".join(
            ", ".join(dae.names[i] for i in e.independent) for e, _ in compiled.alternatives)
    doc = (KINEMATIC if kinematic else "") + CITATION.format(name=mech.name, independent=independent,
                                                            blocks=len(tri.blocks))
    lines.append(f"    annotation(Documentation(info={_string('<html>' + doc + '</html>')}));")
    lines.append(f"  end {model};")
    lines.append(f"end {pkg};")
    return "\n".join(lines) + "\n"


def export_mechanism(spec, package=None, log=None, use_cache=True, predictor_period=1e-3):
    """(Modelica text, the model's qualified name, the ``Compiled``
    derivation) of a mechanism (a spec ``pipeline.load_mechanism`` reads or a
    mechanism object), derived as ``fmigen build`` derives it."""
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    from fmigen.frontends.joint_trim import fold_trims
    # static trims solved at the build's start and default geometry (no
    # initialization here to solve them at a set hard point)
    mech = fold_trims(prepare_mechanism(spec, log, use_cache))
    refuse_mechanism(mech)   # before deriving: export() refuses it too
    compiled = compile_model(mech, use_cache=use_cache, log=log, generate_c=False)
    text = export(compiled, package, predictor_period)
    model = identifier(mech.name, "")
    return text, f"{identifier(package, '') if package else model}.{model}", compiled

