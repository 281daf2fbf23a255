"""The Modelica export's kinematics (``fmigen.tools.modelica``): one
function per block of the block-triangular constraint Jacobian (a Gröbner
block's sequence as model equations, its recovery and Newton polish in the
function; a Newton block's iteration from the prediction), the generated
linear solves and sequence steps they call, the calls of the block functions
in the model, and the per-block solves of the velocities, of the columns of B
and of a_c.  The module docstring of ``fmigen.tools.modelica`` says why each
is written as it is."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import sympy as sp

from fmigen.model import t
from fmigen.tools.modelica_motion import embedding_columns as _embedding_columns
from fmigen.tools.modelica_motion import scalar_rows as _scalar_rows
from fmigen.tools.modelica_printer import mo


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _unit(unit: str) -> str:
    return f'unit={_string(unit)}' if unit else ""


def _mods(*items) -> str:
    items = [i for i in items if i]
    return f"({', '.join(items)})" if items else ""


#: Newton iterations of a Newton block or a fallback from the prediction
#: (the C runtime's FMIGEN_NEWTON_MAX_ITER default), and of the polish after a
#: sequence (the C's polish takes at most 4 too)
NEWTON_ITERATIONS = 50
POLISH_ITERATIONS = 4
#: Newton iterations on a univariate polynomial of degree > 2, from the prediction
POLY_ITERATIONS = 60


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


def sequence_equations(bi, solved_block, dae, names, scales, at, tag="") -> Sequence:
    """The ``Sequence`` of block ``bi`` (0-based); ``at(i)`` is the model's
    text of coordinate i as the block function receives it (a known
    coordinate, or an unknown's prediction); ``tag`` a partition's
    (``Chart.tag``)."""
    from fmigen.kinematics.sweep_measures import block_layout
    prefix = f"fmigen_{tag}b{bi + 1}_"
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


@dataclass(frozen=True)
class Chart:
    """Which partition the kinematics are written for.  A model without
    coordinate switching has one (the default: no prefix, its equations
    always hold).  A switching model writes every partition's kinematics,
    each prefixed by its ``tag`` (``p2_``), and each of its equations holds
    while ``active`` (``fmigen_part == 2``); otherwise it gives a value that
    needs no solve (a block's unknowns their predictions, a linear system
    the identity): the inactive partition is singular exactly where the
    switch left it."""
    tag: str = ""
    active: str = ""

    def guard(self, text: str, idle: str) -> str:
        return f"(if {self.active} then {text} else {idle})" if self.active else text


def kinematics_equations(model, emb, tri, names, chart=Chart(), predicted=None):
    """The block functions, the linear-solve sizes and sequence-step
    degrees they call, the model's declarations for the Gröbner sequences,
    and the equations: each sequence's, then the call of its block's
    function.  ``predicted(i)``: the model's prediction of coordinate i
    (default: the dependent coordinates' predictor slots)."""
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
    predicted = predicted or (lambda i: f"fmigen_pred[{slot[i] + 1}]")
    for bi, solved_block in enumerate(tri.blocks):
        fname = f"{model}_{chart.tag}block{bi + 1}"
        unknowns, known = solved_block.block.unknowns, set(solved_block.block.knowns)

        def at(i):
            # the knowns the block reads, the predictions of its unknowns, and
            # 0 for every other coordinate (a later block's: passing it would
            # make the blocks one algebraic loop)
            return predicted(i) if i in unknowns else qn[i] if i in known else "0.0"

        names_b = ", ".join(dae.names[i] for i in unknowns)
        what = (f"Gröbner: the primary lex sequence {' > '.join(map(str, solved_block.variables))}, then Newton"
                if solved_block.method == "groebner" else f"Newton ({solved_block.reason or 'no Gröbner sequence'})")
        sequence, extra = None, ""
        if solved_block.method == "groebner":
            sequence = sequence_equations(bi, solved_block, dae, names, unit_scales(dae), at, chart.tag)
            decls += sequence.declarations
            equations += [f"    // block {bi + 1}'s primary lex sequence", *sequence.equations]
            degrees |= sequence.degrees
            extra = f", {{{', '.join(v for _, v in sequence.recovered) or '0.0'}}}, {sequence.ok}"
        text, s = block_function(fname, emb, solved_block, f"block {block_name(dae, solved_block.block)}: "
                                 f"{names_b} by {what}", sequence)
        functions.append(text)
        sizes |= s
        args = ", ".join(at(i) for i in range(dae.n))
        call = f"{fname}(time, {{{args}}}, {pvec}, {uvec}{extra})"
        equations.append(f"    {{{', '.join(qn[i] for i in unknowns)}}} = "
                         f"{chart.guard(call, '{' + ', '.join(predicted(i) for i in unknowns) + '}')};")
    return functions, sizes, degrees, decls, equations


def block_velocity_equations(emb, tri, names, velocities_only=False, chart=Chart()):
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
    B, ac = _embedding_columns(emb, tri, chart.tag)
    tag, guard = chart.tag, chart.guard
    for bi, solved_block in enumerate(tri.blocks):
        U, E, K = solved_block.block.unknowns, solved_block.block.equations, solved_block.block.knowns
        nb = len(U)
        jb = f"fmigen_{tag}J{bi + 1}"
        decls.append(f"    Real {jb}[{nb}, {nb}] \"Φ_q of block {bi + 1}, its unknowns' columns\";")
        if not velocities_only:
            decls += [f"    Real fmigen_{tag}B{bi + 1}[{nb}, {f}] \"rows of B of block {bi + 1}\";",
                      f"    Real fmigen_{tag}a{bi + 1}[{nb}] \"a_c of block {bi + 1}\";"]
        lines += [f"    {jb}[{r + 1}, {c + 1}] = {guard(m(emb.Phi_q[e, i]), '1.0' if r == c else '0.0')};"
                  for r, e in enumerate(E) for c, i in enumerate(U)]

        def rows(x):
            return [[f"{jb}[{r + 1}, {c + 1}]*{x(i)}" for c, i in enumerate(U)] for r in range(nb)]

        vel = [emb.Phi_t[e] + sum((emb.Phi_q[e, j] * dae.v_sym[j] for j in K), sp.S.Zero) for e in E]
        lines += _scalar_rows(rows(lambda i: vn[i]), [guard(f"-({m(x)})", "0.0") for x in vel])
        if velocities_only:
            continue
        for k in range(f):
            rhs = [sum((emb.Phi_q[e, j] * B[j][k] for j in K), sp.S.Zero) for e in E]
            lines += _scalar_rows(rows(lambda i: str(B[i][k])), [guard(f"-({m(x)})", "0.0") for x in rhs])
        acc = [emb.gamma[e] - sum((emb.Phi_q[e, j] * ac[j] for j in K if j not in I), sp.S.Zero) for e in E]
        lines += _scalar_rows(rows(lambda i: str(ac[i])), [guard(m(x), "0.0") for x in acc])
    return decls, lines
