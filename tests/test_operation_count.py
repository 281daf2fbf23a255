"""fmigen.generate.operation_count gives sympy's count_ops, node by node."""
import random

import sympy as sp

from fmigen.generate.operation_count import OperationCount

x, y, z = sp.symbols("x y z")
f = sp.Function("f")


def _cases():
    s, c = sp.Symbol("trig[0]"), sp.Symbol("trig[1]")
    return [
        sp.Integer(1), sp.Integer(-3), sp.Rational(-1, 3), sp.Rational(2, 7), x, -x, 2 * x, -2 * x,
        x / 3, -x / 3, 1 / x, -1 / x, 2 / x, -2 / (x * y), x / (y + z), -(x + y) / (3 * z),
        x ** -1, x ** -2, (x + y) ** -1, x ** 2, sp.sqrt(x), sp.exp(x), sp.exp(x + y), sp.E,
        -x - y, -x + y, x - y, x + y + z, -x - y - z, sp.sin(x) * sp.cos(y) - 3 * x * y / 7,
        sp.Max(x, y, z), sp.Min(x, -y), f(x), f(x).diff(x), sp.Derivative(f(x), (x, 2)),
        s ** 2 + c ** 2 - 1, (1 - c ** 2) * s - 2 * s * c * x, sp.Abs(x - y), sp.atan2(y, x),
        sp.Piecewise((x, x > 0), (-x, True)),
    ]


def _random_expression(rng, depth):
    leaves = [x, y, z, sp.Integer(rng.randint(-3, 3)), sp.Rational(rng.randint(-5, 5), rng.randint(1, 4))]
    if depth == 0:
        return rng.choice(leaves)
    a, b = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    return rng.choice([a + b, a - b, a * b, -a * b, a / (b + 2 * z + 1), a ** 2, sp.sin(a), sp.cos(b) * a,
                       a ** -1 if a != 0 else b, sp.exp(a) - b])


def test_the_counts_are_sympys():
    rng = random.Random(4)
    exprs = _cases() + [_random_expression(rng, 3) for _ in range(40)]
    counter = OperationCount()
    for e in exprs:
        assert counter.count(e) == sp.count_ops(e), e
        # every sub-expression too, with the counts kept from the others
        for node in sp.preorder_traversal(e):
            assert counter.count(node) == sp.count_ops(node), node
    # and from an empty memo, in another order
    fresh = OperationCount()
    assert [fresh.count(e) for e in reversed(exprs)] == [sp.count_ops(e) for e in reversed(exprs)]


def test_the_memo_is_bounded():
    counter = OperationCount(kept=10)
    exprs = [_random_expression(random.Random(k), 3) for k in range(40)]
    assert [counter.count(e) for e in exprs] == [sp.count_ops(e) for e in exprs]
    assert len(counter.memo) <= 10 + max(sum(1 for _ in sp.preorder_traversal(e)) for e in exprs)


def test_lists_and_relations_go_to_sympy():
    counter = OperationCount()
    assert counter.count(sp.Eq(x + y, 2 * z)) == sp.count_ops(sp.Eq(x + y, 2 * z))
    assert counter.count(3) == 0
