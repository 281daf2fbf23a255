"""Straight-line statements every kinematics printer shares: CSE assignments
(``assignments``), a polynomial's terms over shared monomials (``poly_plan``,
the same text in C and Python) and a C function around a body.
"""

from __future__ import annotations

import sympy as sp

from fmigen.generate.printer import c


def assignments(targets, exprs, indent="    ", tmp="x"):
    """CSE over ``exprs`` and C assignments ``target = expr;``.

    Plain CSE here, unlike the embedding's joint CSE (codegen_embedding.py,
    optimizations="basic"): these are the kinematics' per-block expressions,
    many and small, where "basic"'s search for common subexpressions costs
    the build several times what it saves."""
    exprs = [sp.sympify(e) for e in exprs]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp))
    lines = [f"{indent}const double {s} = {c(e)};" for s, e in reps]
    lines += [f"{indent}{tg} = {c(e)};" for tg, e in zip(targets, reduced)]
    return "\n".join(lines)


def _poly_steps(polys):
    """The straight-line evaluation of integer polynomials (``sp.Poly`` with
    one set of generators) that ``poly_plan`` prints and ``poly_table``
    tabulates, as steps in order: ("monomial", j, parent, k) makes monomial j
    as parent times generator k (parent: ("generator", k') or ("monomial",
    j')); ("term", i, c, monomial) adds the integer c times the monomial (None:
    the constant 1) to polynomial i's sum, its first term starting it;
    ("zero", i) is a polynomial without terms.  Every monomial a term needs
    is made once, from a smaller one times one generator, just before its
    first term; each sum goes term by term in the Poly's order."""
    gens = polys[0].gens if polys else ()
    table, out = {}, []

    def monomial(m):
        if m in table:
            return table[m]
        nz = [(k, e) for k, e in enumerate(m) if e]
        if not nz:
            return None
        k, e = nz[-1]
        if len(nz) == 1 and e == 1:
            return ("generator", k)
        parent = monomial(m[:k] + (e - 1,) + m[k + 1:])
        table[m] = ref = ("monomial", len(table))
        out.append(("monomial", ref[1], parent, k))
        return ref

    for i, P in enumerate(polys):
        if P.gens != gens:
            raise ValueError(f"poly_plan: generators {P.gens} differ from {gens}")
        terms = [(m, int(c)) for m, c in P.terms() if int(c) != 0]
        for m, c in terms:
            out.append(("term", i, c, monomial(m)))
        if not terms:
            out.append(("zero", i))
    return out


def poly_plan(polys, tmp="m"):
    """Straight-line evaluation of integer polynomials (``sp.Poly`` with one
    set of generators: a sequence step's coefficients) from their terms, as
    statements (target, operator, text): a temporary ``tmp<k>`` ("="), or
    the index of the polynomial whose sum it starts ("=") or continues ("+="
    or "-="), the text the same in C and Python (``*``, numbers and the
    generators' names).  The steps are ``_poly_steps``': the monomials the
    coefficients share are computed once, each made just before its first
    term (short live ranges: with every temporary first and the sums last,
    gcc's register allocation took most of a six-bar's compile).

    Why not ``assignments`` (sympy's cse) here: a six-bar's steps have
    thousands of terms with 50-digit integers, and making their expressions
    and searching them for common subexpressions took ~10 s of its build;
    the monomials are the common subexpressions of such sums anyway."""
    names = [str(g) for g in polys[0].gens] if polys else []

    def name(ref):
        return names[ref[1]] if ref[0] == "generator" else f"{tmp}{ref[1]}"

    def number(c):
        # big integers as doubles, as the printer does (no integer overflow)
        return f"{float(c)!r}" if abs(c) > 2**31 else str(c)

    out, started = [], set()
    for step in _poly_steps(polys):
        if step[0] == "monomial":
            _, j, parent, k = step
            out.append((f"{tmp}{j}", "=", f"{name(parent)}*{names[k]}"))
        elif step[0] == "zero":
            out.append((step[1], "=", "0"))
        else:
            _, i, c, mono = step
            mag = number(abs(c)) if mono is None else (name(mono) if abs(c) == 1 else f"{number(abs(c))}*{name(mono)}")
            if i not in started:
                out.append((i, "=", ("-" if c < 0 else "") + mag))
                started.add(i)
            else:
                out.append((i, "-=" if c < 0 else "+=", mag))
    return out


def poly_table(polys, used):
    """The evaluation ``poly_plan`` prints, as the tables the C runtime's
    ``fmigen_poly_table`` (fmigen_numeric.h) reads instead of code: a
    six-bar's coefficient functions are most of its model.c, and gcc spent
    seconds per compiler on their straight-line code, nearly all in
    register allocation.  The values are v[0] = 1, v[1 + u] = the generator
    ``used[u]`` (the generators of positive degree), then the monomials;
    returns (the monomials' runs as (generator, first parent, length)
    triples, a run's monomials the generator times its parents one after
    another in v, all indices into v; the number of monomials; the number
    of terms of each polynomial, each term's index into v and its
    coefficient as a double).  The same IEEE operations as the printed
    plan, in its order, so the same bits: a monomial is its parent times
    its generator, a term c·m is the product of the double c (the value
    the printed literal has) and m, a sum starts at its first term and adds
    the others in order (a − c·m is a + (−c)·m in IEEE arithmetic), a
    coefficient ±1 multiplies exactly,
    the constant term multiplies 1."""
    gens = list(polys[0].gens) if polys else []
    slot = {k: 1 + used.index(g) for k, g in enumerate(gens) if g in used}
    steps = _poly_steps(polys)
    made = {j: (parent, slot[k]) for _, j, parent, k in (s for s in steps if s[0] == "monomial")}
    # the monomials by degree, each after every one it is made from: then
    # consecutive products do not wait for each other (the runtime's loop
    # keeps them in memory, where a chain of products made one after
    # another is several times slower); within a degree by generator and
    # parent, so that long runs of them are one generator times parents
    # that follow each other, which the loop reads without an index per
    # monomial.  Their order does not change a bit.
    degree = {}
    for j, (parent, _) in made.items():
        degree[j] = 1 + (degree[parent[1]] if parent[0] == "monomial" else 1)
    first = 1 + len(used)
    position = {}

    def index(ref):
        return 0 if ref is None else slot[ref[1]] if ref[0] == "generator" else position[ref[1]]

    runs = []
    for d in sorted(set(degree.values())):
        layer = [(made[j][1], index(made[j][0]), j) for j in made if degree[j] == d]
        for generator, parent, j in sorted(layer):
            position[j] = first + len(position)
            last = runs[-1] if runs else None
            if last and last[0] == generator and last[1] + last[2] == parent:
                last[2] += 1
            else:
                runs.append([generator, parent, 1])
    counts, terms = [0] * len(polys), []
    for step in steps:
        if step[0] == "term":
            _, i, c, mono = step
            counts[i] += 1
            terms.append((i, index(mono), float(c)))
    # the sums one after another (the plan interleaves them only where a
    # monomial is shared; each sum's own order is what decides its bits)
    terms.sort(key=lambda term: term[0])
    return [x for run in runs for x in run], len(position), counts, [t[1] for t in terms], [t[2] for t in terms]


def _function(signature, body):
    return f"{signature}\n{{\n{body}\n}}\n"


def _table(ctype, name, values, per_line=8):
    rows = [", ".join(values[k:k + per_line]) for k in range(0, len(values), per_line)] or ["0"]
    return f"static const {ctype} {name}[] = {{\n    " + ",\n    ".join(rows) + "\n};\n"


def table_function(name, signature, polys, used):
    """A C function ``signature`` (``void f(<used>..., double *a)``) that
    sets a[i] to polys[i] at the generators ``used`` through
    ``poly_table``'s tables, static arrays <name>_runs, _counts, _terms
    and _coefficients."""
    runs, n_monomials, counts, terms, coefficients = poly_table(polys, used)
    arrays = {"runs": ("int", [str(k) for k in runs]), "counts": ("int", [str(k) for k in counts]),
              "terms": ("int", [str(k) for k in terms]),
              "coefficients": ("double", [repr(c) for c in coefficients])}
    values = [f"    v[{1 + u}] = {g};" for u, g in enumerate(used)]
    return ("".join(_table(ctype, f"{name}_{what}", vals) for what, (ctype, vals) in arrays.items())
            + f"{signature.replace('void ', 'void FMIGEN_NOINLINE ', 1)}\n{{\n"
            + f"    double v[{1 + len(used) + n_monomials}];\n    v[0] = 1.0;\n" + "\n".join(values) + "\n"
            + f"    fmigen_poly_table(v, {1 + len(used)}, {len(runs) // 3}, {name}_runs, "
            + f"{len(polys)}, {name}_counts, {name}_terms, {name}_coefficients, a);\n}}\n")
