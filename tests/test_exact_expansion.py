"""The unit-circle form of a model quantity by polynomial arithmetic
(fmigen/generate/exact_expansion.py) is sympy's expansion, node for node,
and what is no exact polynomial is left to sympy."""

import random

import sympy as sp

from fmigen.generate import codegen_embedding as ce
from fmigen.generate.exact_expansion import ExactExpansion

S = [sp.Symbol(f"trig[{k}]", real=True) for k in range(6)]
V = [sp.Symbol(f"v[{k}]", real=True) for k in range(3)]
P = sp.Symbol("p[0]", real=True)


def _sympys_circle(exprs):
    # on_the_circle as it was, by sympy's expand alone
    pairs = {S[0]: S[1], S[2]: S[3], S[4]: S[5]}
    out = []
    for e in exprs:
        e = sp.expand(e)
        e = sp.expand(e.replace(lambda x: x.is_Pow and x.base in pairs and x.exp.is_Integer and x.exp >= 2,
                                lambda x: x.base ** (int(x.exp) % 2) * (1 - pairs[x.base] ** 2) ** (int(x.exp) // 2)))
        mine = [v for v in V if v in e.free_symbols]
        out.append(sp.collect(e, mine) if mine else e)
    return out


def _random_entry(rng, depth=3):
    atoms = S + V + [P]
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(atoms + [sp.Rational(rng.randint(-40, 40), rng.randint(1, 60))])
    kind = rng.choice(["add", "mul", "pow"])
    if kind == "pow":
        return _random_entry(rng, depth - 1) ** rng.randint(2, 3)
    args = [_random_entry(rng, depth - 1) for _ in range(rng.randint(2, 3))]
    return sp.Add(*args) if kind == "add" else sp.Mul(*args)


def test_exact_entries_give_sympys_expansion_node_for_node():
    rng = random.Random(5)
    exprs = [_random_entry(rng) for _ in range(60)]
    ours, sympys = ce.on_the_circle(exprs), _sympys_circle(exprs)
    assert [sp.srepr(e) for e in ours] == [sp.srepr(e) for e in sympys]
    # the unit circle's reduction happened: a square of a sine is gone
    assert any(e.has(S[0] ** 2) for e in exprs)
    assert not any(e.has(S[0] ** 2) for e in ours)


def test_anything_but_an_exact_polynomial_is_left_to_sympy():
    exact = ExactExpansion(S + V + [P], {S[0]: S[1]})
    x = S[0] + S[1]
    assert exact.polynomial(x ** 2 / 3 - 1) is not None
    for e in [sp.Float("0.3") * x, sp.sqrt(2) * x, x ** -1, sp.sin(P) * x, sp.sqrt(x), sp.pi * x,
              x * sp.Symbol("unknown")]:
        assert exact.polynomial(e) is None, e
    mixed = [sp.Float("431.3") * (S[0] * P + S[1]) ** 2, sp.sqrt(3) * S[2] ** 2 * V[0] + V[0] * S[3]]
    assert [sp.srepr(e) for e in ce.on_the_circle(mixed)] == [sp.srepr(e) for e in _sympys_circle(mixed)]
