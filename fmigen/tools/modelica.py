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
Refused before the derivation (``refuse_mechanism``): coordinate switching.

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
import math
import re
from dataclasses import dataclass

import sympy as sp

from fmigen.model import ModelError, t
from fmigen.tools.modelica_motion import embedding_columns as _embedding_columns
from fmigen.tools.modelica_motion import mass_entry as _mass_entry
from fmigen.tools.modelica_motion import prescribed_equations, reaction_equations, reaction_symbols
from fmigen.tools.modelica_motion import scalar_rows as _scalar_rows
from fmigen.tools.modelica_printer import mo

#: Newton iterations of a Newton block or a fallback from the prediction
#: (the C runtime's FMIGEN_NEWTON_MAX_ITER default), and of the polish after a
#: sequence (the C's polish takes at most 4 too)
NEWTON_ITERATIONS = 50
POLISH_ITERATIONS = 4
#: Newton iterations on a univariate polynomial of degree > 2, from the prediction
POLY_ITERATIONS = 60

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


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unit(unit: str) -> str:
    return f'unit={_string(unit)}' if unit else ""


def _mods(*items) -> str:
    items = [i for i in items if i]
    return f"({', '.join(items)})" if items else ""


# --------------------------------------------------------------------------
# Linear solves of fixed size (no loop with a non-literal bound: rumoca
# requires literal range bounds)
# --------------------------------------------------------------------------

def solve_function(n: int) -> str:
    """``fmigen_solve<n>``: A x = b (A n×n, b a vector) by Gaussian
    elimination with partial pivoting, every loop bound a literal (the
    Newton steps of the block functions call it)."""
    name = f"fmigen_solve{n}"
    rhs, out, cols, ytype = f"b[{n}]", f"x[{n}]", 1, f"Real y[{n}]"
    y = lambda r, c: f"y[{r}]"  # noqa: E731
    xx = lambda r, c: f"x[{r}]"  # noqa: E731
    return f"""  function {name} "solves A x = b ({n}x{n}) by Gaussian elimination with partial pivoting"
    input Real A[{n}, {n}];
    input Real {rhs};
    output Real {out};
  protected
    Real M[{n}, {n}];
    {ytype};
    Real tmp;
    Integer p;
  algorithm
    M := A;
    y := b;
    for k in 1:{n} loop
      p := k;
      for i in 1:{n} loop
        if i > k and abs(M[i, k]) > abs(M[p, k]) then
          p := i;
        end if;
      end for;
      for j in 1:{n} loop
        tmp := M[k, j]; M[k, j] := M[p, j]; M[p, j] := tmp;
      end for;
      for c in 1:{cols} loop
        tmp := {y('k', 'c')}; {y('k', 'c')} := {y('p', 'c')}; {y('p', 'c')} := tmp;
      end for;
      for i in 1:{n} loop
        if i > k then
          tmp := M[i, k] / M[k, k];
          for j in 1:{n} loop
            M[i, j] := M[i, j] - tmp * M[k, j];
          end for;
          for c in 1:{cols} loop
            {y('i', 'c')} := {y('i', 'c')} - tmp * {y('k', 'c')};
          end for;
        end if;
      end for;
    end for;
    for r in 1:{n} loop
      for c in 1:{cols} loop
        tmp := {y(f'{n + 1} - r', 'c')};
        for j in 1:{n} loop
          if j > {n + 1} - r then
            tmp := tmp - M[{n + 1} - r, j] * {xx('j', 'c')};
          end if;
        end for;
        {xx(f'{n + 1} - r', 'c')} := tmp / M[{n + 1} - r, {n + 1} - r];
      end for;
    end for;
  end {name};
"""


# --------------------------------------------------------------------------
# The kinematics: one function per block
# --------------------------------------------------------------------------

@dataclass
class _Names:
    """How the model's symbols are spelled inside a block function: the
    coordinate vector ``q``, the tunable parameters ``p``, the time ``t``."""
    subs: dict

    @classmethod
    def function(cls, dae):
        subs = {qs: sp.Symbol(f"q[{i + 1}]") for i, qs in enumerate(dae.q_sym)}
        subs.update({s: sp.Symbol(f"p[{k + 1}]") for k, s in enumerate(dae.tunable)})
        subs.update({s: sp.Symbol(f"u[{k + 1}]") for k, s in enumerate(dae.inputs)})
        subs[t] = sp.Symbol("t")
        return cls(subs)

    def __call__(self, expr) -> str:
        return mo(sp.sympify(expr).xreplace(self.subs))


def _local(sym) -> sp.Symbol:
    return sp.Symbol("x_" + re.sub(r"[^A-Za-z0-9_]", "_", str(sym)))


def step_function(degree: int, output: str) -> str:
    """``fmigen_step<d>_root`` (``output`` "root") or ``fmigen_step<d>_ok``
    ("ok"): one step of a Gröbner sequence, its univariate polynomial
    a[1] x^d + ... + a[d+1] (the coefficients computed by the model's
    equations).  The root is the one nearest the prediction P (a quadratic's
    on the prediction's side of the vertex, a higher degree's by Newton from
    P); ``ok`` (1 or 0) says whether the sequence still holds: 0 once a step
    cannot be taken (a leading coefficient at round-off of its terms, a
    representation singularity of the lex order), and then the root is P.
    Two functions of one scalar output each: a tool that inlines a call once
    per output (rumoca) would otherwise repeat the step for each."""
    name = f"fmigen_step{degree}_{output}"
    lead = " + ".join(f"abs(a[{k + 1}])" for k in range(degree + 1))
    # the step is taken while the sequence holds and its leading coefficient
    # is not at round-off of its terms (the test written out in the branch
    # condition: rumoca rejects a loop under a branch whose condition is a
    # local assigned conditionally before it)
    taken = f"ok > 0.5 and not abs(a[1]) <= 1e-13 * ({lead})"
    sign = ["disc := a[2] * a[2] - 4.0 * a[1] * a[3];",
            "r := sqrt(max(disc, 0.0));",
            "if 2.0 * a[1] * P + a[2] < 0.0 then",
            "  r := -r;",
            "end if;"]
    if output == "ok":
        # a quadratic's also fails where neither root formula applies
        step = [*sign, "if -a[2] * r > 0.0 or a[2] == 0.0 or -a[2] - r <> 0.0 then", "  held := 1.0;", "end if;"] \
            if degree == 2 else ["held := 1.0;"]
        body, out, work = ["held := 0.0;", f"if {taken} then", *["  " + line for line in step], "end if;"], "held", \
            (["disc", "r"] if degree == 2 else [])
    else:
        if degree == 1:
            step, work = ["x := -a[2] / a[1];"], []
        elif degree == 2:
            # the root on the prediction's side of the vertex, without
            # cancellation (the C's fmigen_quadratic_root); neither formula
            # applying leaves P (and the ok function says the step failed)
            step = [*sign,
                    "if -a[2] * r > 0.0 or a[2] == 0.0 then",
                    "  x := (-a[2] + r) / (2.0 * a[1]);",
                    "elseif -a[2] - r <> 0.0 then",
                    "  x := 2.0 * a[3] / (-a[2] - r);",
                    "end if;"]
            work = ["disc", "r"]
        else:
            # Newton on the univariate polynomial from the prediction
            step = [f"for it in 1:{POLY_ITERATIONS} loop", "  f := a[1];", "  df := 0.0;"]
            for k in range(2, degree + 2):
                step += ["  df := df * x + f;", f"  f := f * x + a[{k}];"]
            step += ["  if df <> 0.0 then", "    x := x - f / df;", "  end if;", "end for;"]
            work = ["f", "df"]
        body, out = ["x := P;", f"if {taken} then", *["  " + line for line in step], "end if;"], "x"
    text = [f"  function {name} {_string(f'the {output} of a sequence step of degree {degree}')}",
            "    input Real ok \"1 while the sequence holds, else 0\";",
            f"    input Real a[{degree + 1}] \"the coefficients, the leading one first\";",
            "    input Real P \"the prediction of the step's variable\";",
            f"    output Real {out};",
            *(["  protected", *[f"    Real {v};" for v in work]] if work else []),
            "  algorithm",
            *[f"    {v} := 0.0;" for v in work],
            *[f"    {line}" for line in body],
            f"  end {name};", ""]
    return "\n".join(text)


@dataclass
class Sequence:
    """A Gröbner block's primary lex sequence as model equations: every
    abstracted known, prediction and step coefficient a model variable, so
    that each is evaluated once (inside the block function, a tool that
    inlines the call once per output, as rumoca does, evaluated the whole
    sequence once per unknown).  ``recovered`` are the model variables the
    block function's recovery reads (``z`` in its order), ``ok`` the model
    variable that says whether the whole sequence held."""
    declarations: list
    equations: list
    degrees: set
    recovered: list
    ok: str


def sequence_equations(bi, solved_block, dae, names, scales, at) -> Sequence:
    """The ``Sequence`` of block ``bi`` (0-based); ``at(i)`` is the model's
    text of coordinate i as the block function receives it (a known
    coordinate, or an unknown's prediction)."""
    from fmigen.kinematics.sweep_measures import block_layout
    prefix = f"fmigen_b{bi + 1}_"
    decl, eqs, value = [], [], {}

    def define(sym, kind, text, what):
        value[sym] = sp.Symbol(prefix + kind + re.sub(r"[^A-Za-z0-9_]", "_", str(sym)))
        decl.append(f"    Real {value[sym]} {_string(what)};")
        eqs.append(f"    {value[sym]} = {text};")

    for K, expr in solved_block.abstractions.items():
        define(K, "", names(expr), "abstracted known")
    for v, expr in solved_block.known_ring.items():
        define(v, "", names(expr), "known ring value")
    coordinate = {qs: sp.Symbol(at(i)) for i, qs in enumerate(dae.q_sym)}
    predicted = {}
    for i, kind, vs, _ in block_layout(solved_block, scales):
        if i in solved_block.angle_sums:
            combo = solved_block.angle_sums[i][2]
            psi = names(sp.Add(*[k * dae.q_sym[j] for j, k in combo.items()]).xreplace(coordinate))
            texts = [f"sin({psi})", f"cos({psi})"]
        elif kind == "angle":
            texts = [f"sin({at(i)})", f"cos({at(i)})"]
        else:
            texts = [at(i)]
        for v, text in zip(vs, texts):
            define(v, "P_", text, f"the prediction of {v}")
            predicted[v] = value[v]
    ok = "1.0"
    for k, st in enumerate(solved_block.steps, start=1):
        a = f"{prefix}a{k}"
        decl.append(f"    Real {a}[{st.degree + 1}] \"step {k} ({st.variable}): its coefficients\";")
        eqs += [f"    {a}[{j + 1}] = {mo(sp.sympify(c).xreplace(value))};" for j, c in enumerate(st.coeffs)]
        x, held = f"{prefix}x{k}", f"{prefix}ok{k}"
        decl += [f"    Real {x} {_string(f'step {k}: {st.variable}')};",
                 f"    Real {held} \"1 while the sequence holds after step {k}, else 0\";"]
        eqs += [f"    {x} = fmigen_step{st.degree}_root({ok}, {a}, {predicted[st.variable]});",
                f"    {held} = fmigen_step{st.degree}_ok({ok}, {a}, {predicted[st.variable]});"]
        value[st.variable] = sp.Symbol(x)
        ok = held
    # the sequence's symbols the recovery reads (it may read coordinates too:
    # an angle sum's recovery subtracts the known angles)
    used = sorted(set().union(*[sp.sympify(e).free_symbols for e in solved_block.recover.values()]) & set(value),
                  key=str)
    return Sequence(decl, eqs, {st.degree for st in solved_block.steps}, [(s, str(value[s])) for s in used], ok)


def _recovery(solved_block, names, scales, recovered):
    """(declarations, body) of a Gröbner block function's start: the
    sequence's values (input ``z``) recovered into the coordinates ``qq``
    (an angle turned to its prediction's revolution) where the sequence
    held (``ok``); else qq keeps the prediction for Newton."""
    from fmigen.kinematics.sweep_measures import block_layout
    layout = block_layout(solved_block, scales)
    local = {s: _local(s) for s, _ in recovered}
    decl = [f"Real {local[s]}" for s, _ in recovered]
    body = [f"{local[s]} := z[{k + 1}];" for k, (s, _) in enumerate(recovered)]
    body.append("if ok then")
    for k, (i, kind, vs, _) in enumerate(layout):
        value = mo(sp.sympify(solved_block.recover[i]).xreplace(local).xreplace(names.subs))
        body.append(f"  qq[{i + 1}] := {value};")
        if kind == "angle":
            body.append(f"  qq[{i + 1}] := qq[{i + 1}] + 2.0 * {math.pi!r} * "
                        f"floor((P[{k + 1}] - qq[{i + 1}]) / (2.0 * {math.pi!r}) + 0.5);")
    body.append("end if;")
    # a sequence result is polished by a few Newton steps; a failed
    # sequence leaves the prediction in qq, and Newton takes it from there
    body.append(f"// Newton: {POLISH_ITERATIONS} steps polish a sequence's result, "
                f"{NEWTON_ITERATIONS} start from the prediction where the sequence failed")
    return decl, body


def _newton_loop(emb, solved_block, names, iterations) -> list[str]:
    """Newton on the block's own constraints in its unknowns (Φ_q is the
    embedding's own), from ``qq``: a polish of ``iterations`` steps after a
    Gröbner sequence that succeeded, else up to NEWTON_ITERATIONS."""
    dae, unk = emb.dae, solved_block.block.unknowns
    nb = len(unk)
    q_of = {sp.Symbol(f"q[{i + 1}]"): sp.Symbol(f"qq[{i + 1}]") for i in range(dae.n)}

    def at_qq(e):
        return mo(sp.sympify(e).xreplace(names.subs).xreplace(q_of))

    limit = "true" if solved_block.method != "groebner" else f"(ok and it <= {iterations}) or not ok"
    body = ["converged := false;", f"for it in 1:{NEWTON_ITERATIONS} loop", f"  if not converged and ({limit}) then"]
    body += [f"    r[{k + 1}] := {at_qq(dae.Phi[j])};" for k, j in enumerate(solved_block.block.equations)]
    body += [f"    J[{a + 1}, {b + 1}] := {at_qq(emb.Phi_q[j, i])};"
             for a, j in enumerate(solved_block.block.equations) for b, i in enumerate(unk)]
    # a 1×1 system is the division the elimination would do, written out:
    # rumoca inlines every call of a function into its simulate setup
    body.append(f"    dx := fmigen_solve{nb}(J, r);" if nb > 1 else "    dx := {r[1] / J[1, 1]};")
    body += ["    dmax := 0.0;", "    qmax := 0.0;"]
    for k, i in enumerate(unk):
        body += [f"    qq[{i + 1}] := qq[{i + 1}] - dx[{k + 1}];",
                 f"    dmax := max(dmax, abs(dx[{k + 1}]));",
                 f"    qmax := max(qmax, abs(qq[{i + 1}]));"]
    body += ["    converged := dmax <= 1e-14 * (1.0 + qmax);", "  end if;", "end for;"]
    return body


def block_function(fname: str, emb, solved_block, label: str, sequence: Sequence | None = None) -> tuple[str, set]:
    """The Modelica function of one block and the sizes of the linear
    solves it calls.  Signature: (t, q[n], p[np], u[nu]) -> x[nb]; q holds
    the known coordinates and, at this block's unknowns, their predictions;
    a Gröbner block also takes its ``sequence``'s results (z, held)."""
    from fmigen.derive.workspace import unit_scales
    dae = emb.dae
    n, nb = dae.n, len(solved_block.block.unknowns)
    unk = solved_block.block.unknowns
    names = _Names.function(dae)
    np_ = max(1, len(dae.tunable))
    nu = max(1, len(dae.inputs))
    decl = [f"Real P[{nb}] \"the prediction of the unknowns\"", f"Real r[{nb}]", f"Real J[{nb}, {nb}]",
            f"Real dx[{nb}]", "Real dmax", "Real qmax", "Boolean converged", "Boolean ok", f"Real qq[{n}]"]
    body = ["P := {" + ", ".join(f"q[{i + 1}]" for i in unk) + "};", "qq := q;",
            "ok := held > 0.5;" if sequence else "ok := true;"]
    # every local has a value on every path (rumoca inlines a function's
    # algorithm symbolically and rejects a variable a branch leaves unset)
    body += [f"r := fill(0.0, {nb});", f"J := fill(0.0, {nb}, {nb});", f"dx := fill(0.0, {nb});",
             "dmax := 0.0;", "qmax := 0.0;"]
    inputs = []
    iterations = NEWTON_ITERATIONS
    if sequence:
        d, b = _recovery(solved_block, names, unit_scales(dae), sequence.recovered)
        decl += d
        body += b
        inputs = [f"    input Real z[{len(sequence.recovered)}] \"the sequence's values the recovery reads\";",
                  "    input Real held \"1 where the whole sequence held, else 0\";"]
        iterations = POLISH_ITERATIONS
    body += _newton_loop(emb, solved_block, names, iterations)
    body.append("x := {" + ", ".join(f"qq[{i + 1}]" for i in unk) + "};")
    text = [f"  function {fname} {_string(label)}",
            "    input Real t;",
            f"    input Real q[{n}] \"known coordinates; at this block's unknowns, their predictions\";",
            f"    input Real p[{np_}] \"tunable parameters\";",
            f"    input Real u[{nu}] \"inputs\";",
            *inputs,
            f"    output Real x[{nb}];",
            "  protected",
            *[f"    {d};" for d in decl],
            "  algorithm",
            *[f"    {line}" for line in body],
            f"  end {fname};", ""]
    return "\n".join(text), {nb} - {1}


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
    if mech.switch_independent:
        # a fixed state set meets the singularity of its Φ_d that the switch
        # exists to avoid (a dead centre), and the model's solve fails there
        why.append(f"coordinate switching (switch_independent {mech.switch_independent}), which changes the "
                   "independent coordinates at run time: a Modelica model's states are one fixed set")
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


def _kinematics(model, emb, tri, names):
    """The block functions, the linear-solve sizes and sequence-step
    degrees they call, the model's declarations for the Gröbner sequences,
    and the equations: each sequence's, then the call of its block's
    function."""
    from fmigen.derive.workspace import unit_scales
    from fmigen.kinematics.sequences import block_name
    dae, D = emb.dae, list(emb.dependent)
    functions, sizes, degrees, decls, equations = [], set(), set(), [], []
    pvec = "{" + (", ".join(names.pn) if names.pn else "0.0") + "}"
    # a drive (a hidden input) is a force: the kinematics never read it, and
    # passing it would tie every block to the dynamics' linear system
    uvec = "{" + (", ".join("0.0" if u.hidden else un for u, un in zip(dae.mechanism.inputs, names.un))
                  if names.un else "0.0") + "}"
    qn = names.qn
    slot = {i: k for k, i in enumerate(D)}   # a dependent coordinate's predictor slot
    for bi, solved_block in enumerate(tri.blocks):
        fname = f"{model}_block{bi + 1}"
        unknowns, known = solved_block.block.unknowns, set(solved_block.block.knowns)

        def at(i):
            # the knowns the block reads, the predictions of its unknowns, and
            # 0 for every other coordinate (a later block's: passing it would
            # make the blocks one algebraic loop)
            return f"fmigen_pred[{slot[i] + 1}]" if i in unknowns else qn[i] if i in known else "0.0"

        names_b = ", ".join(dae.names[i] for i in unknowns)
        what = (f"Gröbner: the primary lex sequence {' > '.join(map(str, solved_block.variables))}, then Newton"
                if solved_block.method == "groebner" else f"Newton ({solved_block.reason or 'no Gröbner sequence'})")
        sequence, extra = None, ""
        if solved_block.method == "groebner":
            sequence = sequence_equations(bi, solved_block, dae, names, unit_scales(dae), at)
            decls += sequence.declarations
            equations += [f"    // block {bi + 1}'s primary lex sequence", *sequence.equations]
            degrees |= sequence.degrees
            extra = f", {{{', '.join(v for _, v in sequence.recovered) or '0.0'}}}, {sequence.ok}"
        text, s = block_function(fname, emb, solved_block, f"block {block_name(dae, solved_block.block)}: "
                                 f"{names_b} by {what}", sequence)
        functions.append(text)
        sizes |= s
        args = ", ".join(at(i) for i in range(dae.n))
        equations.append(f"    {{{', '.join(qn[i] for i in unknowns)}}} = "
                         f"{fname}(time, {{{args}}}, {pvec}, {uvec}{extra});")
    return functions, sizes, degrees, decls, equations


def _variables(mech, dae, I, names, start, predictor_period) -> list[str]:
    """The model's declarations up to its embedded-ODE arrays: parameters,
    inputs, coordinates and velocities (the independent ones states),
    outputs."""
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
                         f"{_string((c.description + ' ' if c.description else '') + '(dependent)')};")
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




def _block_velocity_equations(emb, tri, names, velocities_only=False):
    """(declarations, equations) of the per-block solves.  Φ_d is
    block-triangular (the blocks in solving order): the velocities, the
    columns of B and the dependent accelerations block by block, each from
    its diagonal block Φ_bb and what earlier blocks solved; every equation
    scalar (``_scalar_rows``); only the velocities for a kinematic
    mechanism, which has no dynamics to read B and a_c."""
    dae, I, f = emb.dae, list(emb.independent), emb.f
    lines = ["    // per block b: Φ_bb v_b = −(Φ_t,b + Σ_known Φ_bj v_j), Φ_bb B_b = −Σ_known Φ_bj B_j, "
             "Φ_bb a_c,b = γ_b − Σ_known Φ_bj a_c,j"]
    decls = []
    m, vn = names, names.vn
    B, ac = _embedding_columns(emb, tri)
    for bi, solved_block in enumerate(tri.blocks):
        U, E, K = solved_block.block.unknowns, solved_block.block.equations, solved_block.block.knowns
        nb = len(U)
        jb = f"fmigen_J{bi + 1}"
        decls.append(f"    Real {jb}[{nb}, {nb}] \"Φ_q of block {bi + 1}, its unknowns' columns\";")
        if not velocities_only:
            decls += [f"    Real fmigen_B{bi + 1}[{nb}, {f}] \"rows of B of block {bi + 1}\";",
                      f"    Real fmigen_a{bi + 1}[{nb}] \"a_c of block {bi + 1}\";"]
        lines += [f"    {jb}[{r + 1}, {c + 1}] = {m(emb.Phi_q[e, i])};" for r, e in enumerate(E) for c, i in enumerate(U)]

        def rows(x):
            return [[f"{jb}[{r + 1}, {c + 1}]*{x(i)}" for c, i in enumerate(U)] for r in range(nb)]

        vel = [emb.Phi_t[e] + sum((emb.Phi_q[e, j] * dae.v_sym[j] for j in K), sp.S.Zero) for e in E]
        lines += _scalar_rows(rows(lambda i: vn[i]), [f"-({m(x)})" for x in vel])
        if velocities_only:
            continue
        for k in range(f):
            rhs = [sum((emb.Phi_q[e, j] * B[j][k] for j in K), sp.S.Zero) for e in E]
            lines += _scalar_rows(rows(lambda i: str(B[i][k])), [f"-({m(x)})" for x in rhs])
        acc = [emb.gamma[e] - sum((emb.Phi_q[e, j] * ac[j] for j in K if j not in I), sp.S.Zero) for e in E]
        lines += _scalar_rows(rows(lambda i: str(ac[i])), [m(x) for x in acc])
    return decls, lines






def _ode_equations(emb, tri, names) -> list[str]:
    """The embedded ODE (Bᵀ M B) q̈_i = Bᵀ (F − M a_c) in scalar equations:
    the structurally nonzero entries of M, the forces F, M B and M a_c
    through those entries only, Bᵀ M B and Bᵀ (F − M a_c), then the
    independent accelerations row by row; and the outputs."""
    dae, I, f, n = emb.dae, list(emb.independent), emb.f, emb.dae.n
    m = names
    B, ac = _embedding_columns(emb, tri)
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
    lines += _scalar_rows([[f"fmigen_Mr[{a + 1}, {b + 1}]*{names.an[i]}" for b, i in enumerate(I)] for a in range(f)],
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
    names = _ModelNames(mech, dae, I)
    functions, sizes, degrees, sequence_decls, kinematics = _kinematics(model, emb, tri, names)
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
    lines += _variables(mech, dae, I, names, tri.start, predictor_period)
    if nd:
        lines += [
            f"    discrete Real fmigen_qs[{nd}](start = {{{', '.join(repr(float(tri.start[dae.names[i]])) for i in D)}}}, "
            "each fixed = true) \"the dependent coordinates at the last sample\";",
            f"    discrete Real fmigen_vs[{nd}](start = fill(0.0, {nd}), each fixed = true) "
            "\"their velocities at the last sample\";",
            "    discrete Real fmigen_ts(start = 0.0, fixed = true) \"the last sample's time\";",
            f"    Real fmigen_pred[{nd}] \"the dependent coordinates predicted from the last sample\";",
        ]
    kinematic = mech.kinematic   # the kinematics alone: no mass matrix, forces or ODE
    if not kinematic:
        lines += [f"    Real {_mass_entry(r, c)} \"mass matrix entry\";"
                  for r in range(n) for c in range(n) if emb.M[r, c] != 0]
        lines += [f"    Real fmigen_F[{n}] \"forces\";",
                  f"    Real fmigen_MB[{n}, {f}] \"M B (q̇ = B q̇_i + c)\";",
                  f"    Real fmigen_Mac[{n}] \"M a_c (a_c = [Φ_d⁻¹ γ ; 0])\";",
                  f"    Real fmigen_Mr[{f}, {f}] \"Bᵀ M B\";",
                  f"    Real fmigen_h[{f}] \"Bᵀ (F − M a_c)\";"]
    if nd:
        decls, block_lines = _block_velocity_equations(emb, tri, names, velocities_only=kinematic)
        lines += sequence_decls + decls
    reactions = reaction_equations(emb, tri, names) if mech.reactions else ([], [])
    lines += reactions[0]
    lines.append("  equation")
    lines += _hard_point_asserts(names)
    for i in I if not kinematic else ():
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
        lines += kinematics
        lines += block_lines
    lines += prescribed_equations(mech, names)
    lines += _output_equations(dae, names) if kinematic else _ode_equations(emb, tri, names)
    lines += reactions[1]
    doc = (KINEMATIC if kinematic else "") + CITATION.format(name=mech.name, independent=", ".join(dae.names[i] for i in I),
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
    mech = prepare_mechanism(spec, log, use_cache)
    refuse_mechanism(mech)   # before deriving: export() refuses it too
    compiled = compile_model(mech, use_cache=use_cache, log=log, generate_c=False)
    text = export(compiled, package, predictor_period)
    model = identifier(mech.name, "")
    return text, f"{identifier(package, '') if package else model}.{model}", compiled

