"""C generation's cost bounds and what they must not change
(fmigen/generate/codegen_embedding.py, fmigen/generate/codegen.py):

- the unit-circle trial is skipped by a count of work, the products its
  expansion would form (``expansion_products``), never by time;
- the two joint CSEs pre-pass each expression once, without sympifying
  the pre-pass's dicts of factors, to sympy's result;
- fmigen enlarges sympy's cache when imported first;
- the replacement and atom walks that visit each shared sub-expression
  once give sympy's xreplace and atoms;
- the Gröbner sequences' large coefficient functions are compiled at -O1,
  the largest are tables, and both give the bits the model's -O2 gives."""
import re
import subprocess

import numpy as np
import sympy as sp

from fmigen.generate import codegen, codegen_embedding as ce
from fmigen.build.pipeline import load_mechanism
from fmigen.generate.codegen_kinematics import TABLE_STATEMENTS
from fmigen.generate.statements import poly_plan, table_function

from conftest import compiled_model, derivation_for_generate
from test_runtime_lu import runtime_harness


def test_expansion_products_counts_the_products_of_the_expansion():
    """The count against sympy's expansion: exact where no two products are
    alike ((a+b+c)² has the 6 monomials of degree 2 in three terms, a product
    of sums the product of their lengths), an upper bound where like terms
    collect, and it stops above its limit."""
    a, b, c, d, e = sp.symbols("a b c d e")
    assert ce.expansion_products([(a + b + c) ** 2]) == 6 == len(sp.Add.make_args(sp.expand((a + b + c) ** 2)))
    assert ce.expansion_products([(a + b) * (c + d + e)]) == 6
    assert ce.expansion_products([a * b, (a + b) * (c + d + e) ** 3]) == 1 + 2 * 10
    rng = np.random.default_rng(5)
    syms = [a, b, c, d, e]
    for _ in range(30):
        factors = [sp.Add(*[int(rng.integers(1, 9)) * syms[int(k)] ** int(rng.integers(1, 3))
                            for k in rng.choice(5, size=int(rng.integers(1, 4)), replace=False)])
                   for _ in range(int(rng.integers(1, 4)))]
        expr = sp.Mul(*factors) ** int(rng.integers(1, 3)) + syms[int(rng.integers(0, 5))]
        assert ce.expansion_products([expr]) >= len(sp.Add.make_args(sp.expand(expr)))
    assert ce.expansion_products([(a + b + c + d + e) ** 12], limit=100) == 101


def test_the_circle_is_not_tried_where_its_expansion_is_too_large(monkeypatch):
    """A product of five sums of six sine/cosine terms: 66 operations,
    6⁵ = 7,776 products to expand, above CIRCLE_MAX_PRODUCTS; the quantity is
    kept as it is without expanding it.  A small one (p·s² + p·c²) is still
    reduced on the circle, to p."""
    trig = sp.symbols("trig[0:6]")
    p = sp.Symbol("p[0]")
    big = sp.Mul(*[sp.Add(*[(k + 1) * t for k, t in enumerate(trig)]) + j for j in range(5)])
    assert sp.count_ops(big) < ce.CIRCLE_MAX_OPS
    assert ce.expansion_products([big]) > ce.CIRCLE_MAX_PRODUCTS

    def no_expansion(exprs):
        raise AssertionError("the expansion was tried")

    small = [p * trig[0] ** 2 + p * trig[1] ** 2]
    assert ce.circle_where_cheaper(small) == [p]
    monkeypatch.setattr(ce, "on_the_circle", no_expansion)
    quantity = [big, trig[2] * p]
    assert ce.circle_where_cheaper(quantity) is quantity


def test_the_joint_cses_pre_pass_each_expression_once(monkeypatch):
    """The Stewart platform runs two joint CSEs (γ by forward differentiation
    is tried: its γ alone is cheaper that way); they share Φ_q, Φ_t, M and F,
    whose 'basic' pre-pass (sympy's factor_terms) runs once each: fewer
    pre-passes than the two CSEs have expressions, none twice."""
    seen, prepared, joint = [], set(), []
    prepass, cse = ce.preprocess_for_cse, sp.cse

    def counted(e, optimizations):
        seen.append(e)
        out = prepass(e, optimizations)
        prepared.add(out)
        return out

    def recorded(exprs, *args, **kwargs):
        if len(exprs) > 20 and all(e in prepared for e in exprs):
            joint.append(len(exprs))
        return cse(exprs, *args, **kwargs)

    monkeypatch.setattr(ce, "preprocess_for_cse", counted)
    monkeypatch.setattr(ce.sp, "cse", recorded)
    mech = load_mechanism("stewart")
    # the DAE from the derived-model cache where another test derived it
    _, _, emb, tri, _ = derivation_for_generate(mech)
    codegen.generate(emb, tri, mech.name)
    assert len(joint) == 2
    assert len(seen) == len(set(seen))
    assert len(seen) < sum(joint) - 100


def test_the_joint_cse_is_sympys_without_sympifying_dicts_of_factors(monkeypatch):
    """The joint CSE's pre-pass builds no sympy Dict (sympy's ``Factors`` of
    a dict of factors sympifies it to compare it with 1: ``cse_prepass._plain_factor_dicts``
    spares that) and gives, with it, sympy's ``cse(..., optimizations="basic")``
    to the srepr; afterwards ``Factors`` is sympy's own again."""
    from sympy.core.containers import Dict
    from sympy.core.exprtools import Factors
    trig = sp.symbols("trig[0:4]")
    v, p = sp.symbols("v[0:3]"), sp.symbols("p[0:3]")
    J = [p[0] * trig[0] * trig[1] - 2 * p[1] * trig[0] * trig[2], 3 * p[2] * trig[1] * trig[3] + p[0] * trig[0]]
    G = [(p[0] * trig[0] * v[0] + p[1] * trig[1] * v[1]) ** 2 * trig[2] - 4 * p[2] * trig[3] * v[2] * v[0],
         6 * p[0] * trig[0] * trig[1] * v[0] * v[1] - 3 * p[1] * trig[1] * trig[2] * v[1] ** 2 / 5]
    F = [p[0] * p[1] * trig[0] * v[0] + p[0] * p[1] * trig[1] * v[1] - p[0] * p[2] * trig[3]]
    groups = [("J", dict(enumerate(J))), ("G", dict(enumerate(G))), ("F", dict(enumerate(F)))]
    quantities = {"J": J, "G": G, "F": F}
    made = []
    new = Dict.__new__

    def counted(cls, *args):
        made.append(args)
        return new(cls, *args)

    monkeypatch.setattr(Dict, "__new__", staticmethod(counted))
    init, acp = Factors.__init__, sp.Mul.as_content_primitive
    reps, rows = ce._joint_cse(groups, quantities, G, False, {})
    assert made == []
    assert Factors.__init__ is init
    assert sp.Mul.as_content_primitive is acp
    monkeypatch.undo()
    ref_reps, ref_rows = sp.cse(J + G + F, symbols=sp.numbered_symbols("w"), order="none", optimizations="basic")
    assert len(reps) > 0
    assert sp.srepr(reps) == sp.srepr(ref_reps)
    assert sp.srepr(rows) == sp.srepr(ref_rows)


def test_the_joint_cses_pre_pass_factors_a_repeated_sum_once(monkeypatch):
    """A sum that occurs in many places of the model quantities (a rotation
    product shared by every entry) has its common factors taken out once
    (``cse_prepass``), not once per occurrence as sympy's ``factor_terms``
    does, with sympy's result to the srepr."""
    from sympy.core import exprtools
    from fmigen.generate import cse_prepass
    trig, p = sp.symbols("trig[0:8]"), sp.symbols("p[0:3]")
    shared = 2 * p[0] * trig[0] * trig[1] + 4 * p[1] * trig[2] * trig[3] - 6 * p[2] * trig[0] * trig[3]
    J = [trig[k] * (shared * trig[k + 1] + p[k % 3]) for k in range(6)]
    groups, quantities = [("J", dict(enumerate(J)))], {"J": J}
    factored = []
    own = exprtools.gcd_terms

    def counted(terms, *args, **kwargs):
        factored.append(terms)
        return own(terms, *args, **kwargs)

    monkeypatch.setattr(exprtools, "gcd_terms", counted)
    monkeypatch.setattr(cse_prepass, "gcd_terms", counted)
    reps, rows = ce._joint_cse(groups, quantities, [], False, {})
    monkeypatch.undo()
    # the shared sum, factored: once, not six times
    assert sum(1 for f in factored if f.is_Add and len(f.args) == 3) == 1
    ref_reps, ref_rows = sp.cse(J, symbols=sp.numbered_symbols("w"), order="none", optimizations="basic")
    assert sp.srepr(reps) == sp.srepr(ref_reps)
    assert sp.srepr(rows) == sp.srepr(ref_rows)


def test_fmigen_imported_first_enlarges_sympys_cache():
    """Imported before sympy, fmigen sets SYMPY_CACHE_SIZE (a derivation's
    working set is far above sympy's default 1,000 entries), unless the user
    set it."""
    import os
    import sys
    probe = "import fmigen, sympy.core.cache as c; print(c.SYMPY_CACHE_SIZE)"
    env = {k: val for k, val in os.environ.items() if k != "SYMPY_CACHE_SIZE"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["100000"]
    out = subprocess.run([sys.executable, "-c", probe], env={**env, "SYMPY_CACHE_SIZE": "500"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["500"]


TABLE_DRIVER = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
void FMIGEN_NOINLINE_COLD code_O1(double x, double y, double K_1, double *a)
{
%(body)s
}
void FMIGEN_NOINLINE code_O2(double x, double y, double K_1, double *a)
{
%(body)s
}
%(tables)s
int main(void)
{
    static const double args[][3] = {%(args)s};
    for (unsigned n = 0; n < sizeof args / sizeof args[0]; n++) {
        double a[3][%(npolys)d];
        code_O1(args[n][0], args[n][1], args[n][2], a[0]);
        code_O2(args[n][0], args[n][1], args[n][2], a[1]);
        tables(args[n][0], args[n][1], args[n][2], a[2]);
        for (int v = 0; v < 3; v++) {
            for (int k = 0; k < %(npolys)d; k++) printf("%%a ", a[v][k]);
            printf("\n");
        }
    }
    return 0;
}
"""


def test_coefficient_tables_give_the_bits_of_the_straight_line_code(tmp_path):
    """A large Gröbner step's coefficients as the runtime's tables
    (statements.poly_table, fmigen_poly_table) and as the straight-line code
    poly_plan prints, compiled at -O1 (FMIGEN_NOINLINE_COLD) and at the
    model's -O2: every polynomial the same double at random arguments, at
    zeros of either sign (the sign of a zero sum) and at overflowing ones.
    The polynomials are like a sextic's: 50-digit integer coefficients of
    both signs, shared monomials, ±1 and constant terms, one without terms."""
    x, y, K = sp.symbols("x y K_1")
    rng = np.random.default_rng(3)

    def poly(n_terms):
        terms = {}
        for _ in range(n_terms):
            e = tuple(int(k) for k in rng.integers(0, [13, 11, 7]))
            terms[e] = int(rng.choice([-1, 1])) * int(rng.choice([1, int(rng.integers(2, 10**6)) * 10**int(
                rng.integers(0, 45)) + int(rng.integers(0, 10**9))]))
        return sp.Poly.from_dict(terms, x, y, K)

    polys = [poly(700), poly(60), sp.Poly(-x * K + 1, x, y, K), sp.Poly(0, x, y, K), sp.Poly(-x * K, x, y, K), poly(250)]
    plan = poly_plan(polys, "m")
    assert len(plan) > TABLE_STATEMENTS
    body = "\n".join(f"    {'const double ' if op == '=' else ''}{t} {op} {text};" if isinstance(t, str) else
                     f"    {'double ' if op == '=' else ''}s{t} {op} {text};" for t, op, text in plan)
    body += "\n" + "\n".join(f"    a[{k}] = s{k};" for k in range(len(polys)))
    tables = table_function("fmigen_coeffs_test", "void tables(double x, double y, double K_1, double *a)",
                            polys, [x, y, K])
    assert "fmigen_poly_table(" in tables
    points = [*rng.uniform(-1.5, 1.5, (40, 3)).tolist(), [0.0, 0.0, 0.0], [-0.0, 0.0, -0.0], [0.0, -0.0, 1.0],
              [1e30, -1e30, 1e20], [-1e-200, 1e-200, 3.0]]
    args = ", ".join("{" + ", ".join(float(v).hex() for v in p) + "}" for p in points)
    exe = runtime_harness(tmp_path, TABLE_DRIVER % {"body": body, "tables": tables, "args": args,
                                                    "npolys": len(polys)}, "driver", ["-Wall", "-Werror"])
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(lines) == 3 * len(points)
    for n in range(len(points)):
        assert lines[3 * n] == lines[3 * n + 1] == lines[3 * n + 2], points[n]
    signs = {line.split()[3] for line in lines}
    assert signs == {"0x0p+0"}
    assert any("inf" in line or "nan" in line for line in lines)
    assert any(line.split()[4] == "-0x0p+0" for line in lines)


def test_the_six_bars_large_steps_are_tables():
    """The Stephenson III six-bar's sextic: its large sequence steps'
    coefficients (most of what gcc compiled of model.c) are tables read by
    fmigen_poly_table, and the AVX copy calls the SSE2 copy's functions."""
    gen = compiled_model("stephenson3_joints").generated
    tables = re.findall(r"void FMIGEN_NOINLINE FMIGEN_NAME\((fmigen_coeffs_\w+)\)", gen.model_c)
    assert len(tables) >= 6
    for name in tables:
        assert f"{name}_terms, {name}_coefficients, a);" in gen.model_c
        assert f"#ifdef FMIGEN_MODEL_VARIANT\nvoid FMIGEN_NAME({name})(" in gen.model_c


def test_shared_xreplace_and_atoms_are_sympys():
    """``printer.shared_xreplace`` and ``shared_atoms`` visit each
    sub-expression object once: the results must be sympy's xreplace and
    atoms, on expressions that share objects, where a replaced node holds
    another key of the rule (the node is replaced before its arguments),
    where a replacement merges terms (the rebuilt node evaluates), and with
    one memo over several expressions."""
    from fmigen.symbolic import shared_atoms, shared_xreplace
    x, y, z = sp.symbols("x y z", real=True)
    shared = sp.sin(x) * sp.cos(y) + x * y
    exprs = [shared, shared ** 2 + 3 * shared, sp.sin(x + shared) * shared, sp.Integer(5),
             sp.Piecewise((shared, x > 0), (y, True)), sp.sin(x) + sp.sin(y) - x]
    rules = [{sp.sin(x): z, x: y}, {x: y}, {sp.sin(x) * sp.cos(y): z}, {}]
    for rule in rules:
        memo = {}
        assert [shared_xreplace(e, rule, memo) for e in exprs] == [e.xreplace(rule) for e in exprs]
        assert [shared_xreplace(e, rule) for e in exprs] == [e.xreplace(rule) for e in exprs]
    for types in [(sp.sin, sp.cos), (sp.Symbol,), (sp.Mul,)]:
        assert shared_atoms(exprs, *types) == set().union(*(e.atoms(*types) for e in exprs))
