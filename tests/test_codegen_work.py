"""C generation's cost bounds and what they must not change
(fmigen/generate/codegen_embedding.py, fmigen/generate/codegen.py):

- the unit-circle trial is skipped by a count of work, the products its
  expansion would form (``expansion_products``), never by time;
- the two joint CSEs pre-pass each expression once, without sympifying
  the pre-pass's dicts of factors, to sympy's result;
- fmigen enlarges sympy's cache when imported first;
- the Gröbner sequences' large coefficient functions are compiled at -O1
  and give the bits the model's -O2 gives."""
import re
import subprocess

import numpy as np
import sympy as sp

from fmigen.generate import codegen, codegen_embedding as ce
from fmigen.build.pipeline import load_mechanism
from fmigen.tools.bench import RUNTIME_DIR

from conftest import compiled_model, derivation_for_generate


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
    a dict of factors sympifies it to compare it with 1: ``_plain_factor_dicts``
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
    init = Factors.__init__
    reps, rows = ce._joint_cse(groups, quantities, G, False, {})
    assert made == []
    assert Factors.__init__ is init
    monkeypatch.undo()
    ref_reps, ref_rows = sp.cse(J + G + F, symbols=sp.numbered_symbols("w"), order="none", optimizations="basic")
    assert len(reps) > 0
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


DRIVER = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
%(prototypes)s
int main(void)
{
    double a[64];
%(calls)s
    return 0;
}
"""


def test_large_coefficient_functions_are_O1_with_the_bits_of_O2(tmp_path):
    """The Stephenson III six-bar's sextic: its sequence steps' coefficient
    functions (most of model.c) are FMIGEN_NOINLINE_COLD, gcc's
    optimize("O1"); compiled so and with the macro defined as plain noinline
    (the model's -O2), every coefficient of every function is the same
    double at 50 random arguments."""
    # the model as built (tests/test_exact_kinematics.py builds it too):
    # from the derived-model cache where that build came first
    gen = compiled_model("stephenson3_joints").generated
    defs = re.findall(r'void FMIGEN_NOINLINE_COLD FMIGEN_NAME\((\w+)\)\(([^)]*)\)',
                      gen.model_c)
    assert len(defs) >= 6
    rng = np.random.default_rng(11)
    prototypes, calls = [], []
    for name, params in defs:
        nargs = params.count("double ") - 1
        prototypes.append(f"void FMIGEN_NAME({name})({params});")
        for _ in range(50):
            args = ", ".join(repr(float(x)) for x in rng.uniform(-1.5, 1.5, nargs))
            calls.append(f"    FMIGEN_NAME({name})({args}{', ' if nargs else ''}a);"
                         f" for (int k = 0; k < 64; k++) printf(\"%a \", a[k]); printf(\"\\n\");")
    driver = DRIVER % {"prototypes": "\n".join(prototypes), "calls": "\n".join(calls)}
    outputs = []
    for variant, flags in (("O1", []), ("O2", ["-DFMIGEN_NOINLINE_COLD=__attribute__((noinline))"])):
        d = tmp_path / variant
        d.mkdir()
        (d / "model.c").write_text(gen.whole_c)
        (d / "model_config.h").write_text(gen.config_h)
        (d / "driver.c").write_text(driver.replace("double a[64];", "double a[64] = {0};"))
        r = subprocess.run(["gcc", "-O2", "-fno-math-errno", "-std=c99", "-Wall", "-Wno-unused-variable", *flags,
                            f"-I{d}", f"-I{RUNTIME_DIR}", str(d / "model.c"), str(RUNTIME_DIR / "fmigen_core.c"),
                            str(RUNTIME_DIR / "fmigen_augmented.c"), str(d / "driver.c"), "-lm",
                            "-o", str(d / "driver")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outputs.append(subprocess.run([str(d / "driver")], capture_output=True, text=True, check=True).stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count("\n") == 50 * len(defs)
