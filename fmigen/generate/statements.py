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


def poly_plan(polys, tmp="m"):
    """Straight-line evaluation of integer polynomials (``sp.Poly`` with one
    set of generators: a sequence step's coefficients) from their terms, as
    statements (target, operator, text): a temporary ``tmp<k>`` ("="), or
    the index of the polynomial whose sum it starts ("=") or continues ("+="
    or "-="), the text the same in C and Python (``*``, numbers and the
    generators' names).  Every monomial a term needs is one temporary, made
    from a smaller one times one generator, so the monomials the
    coefficients share are computed once; each sum goes term by term in the
    Poly's order, a monomial made just before its first term (short live
    ranges: with every temporary first and the sums last, gcc's register
    allocation took most of a six-bar's compile).

    Why not ``assignments`` (sympy's cse) here: a six-bar's steps have
    thousands of terms with 50-digit integers, and making their expressions
    and searching them for common subexpressions took ~10 s of its build;
    the monomials are the common subexpressions of such sums anyway."""
    gens = polys[0].gens if polys else ()
    names = [str(g) for g in gens]
    table, out = {}, []
    ntemp = [0]

    def monomial(m):
        if m in table:
            return table[m]
        nz = [(k, e) for k, e in enumerate(m) if e]
        if not nz:
            return None
        k, e = nz[-1]
        if len(nz) == 1 and e == 1:
            return names[k]
        parent = monomial(m[:k] + (e - 1,) + m[k + 1:])
        table[m] = name = f"{tmp}{ntemp[0]}"
        ntemp[0] += 1
        out.append((name, "=", f"{parent}*{names[k]}"))
        return name

    def number(c):
        # big integers as doubles, as the printer does (no integer overflow)
        return f"{float(c)!r}" if abs(c) > 2**31 else str(c)

    for i, P in enumerate(polys):
        if P.gens != gens:
            raise ValueError(f"poly_plan: generators {P.gens} differ from {gens}")
        first = True
        for m, c in P.terms():
            c = int(c)
            if c == 0:
                continue
            mono = monomial(m)
            mag = number(abs(c)) if mono is None else (mono if abs(c) == 1 else f"{number(abs(c))}*{mono}")
            if first:
                out.append((i, "=", ("-" if c < 0 else "") + mag))
            else:
                out.append((i, "-=" if c < 0 else "+=", mag))
            first = False
        if first:
            out.append((i, "=", "0"))
    return out


def _function(signature, body):
    return f"{signature}\n{{\n{body}\n}}\n"
