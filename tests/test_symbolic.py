"""fmigen/symbolic.py and fmigen/kanes_method.py: the same expressions as
the sympy operations they stand for, object for object in form (srepr),
not only in value."""

import random

import pytest
import sympy as sp
from sympy.physics.mechanics import msubs

from fmigen import model
from fmigen.frontends.joint_model import to_mechanism
from fmigen.mechanics import me
from fmigen.symbolic import shared_msubs, shared_xreplace, times


def _random_matrix(rng, rows, cols, xs):
    pick = [0, 0, 2, sp.Rational(3, 7), xs[0] * xs[1] + sp.sin(xs[2]), xs[1] - 2 * xs[0] ** 2, sp.Float(0.25) * xs[2]]
    return sp.Matrix(rows, cols, lambda i, j: rng.choice(pick) * rng.choice([1, xs[(i + j) % len(xs)]]))


@pytest.mark.parametrize("immutable", [False, True])
def test_times_is_sympys_product(immutable):
    rng = random.Random(3)
    xs = sp.symbols("x0:4", real=True)
    for _ in range(20):
        A, B = _random_matrix(rng, 4, 5, xs), _random_matrix(rng, 5, rng.choice([1, 3]), xs)
        if immutable:
            A = sp.ImmutableMatrix(A)
        expected = A * B
        got = times(A, B)
        assert type(got) is type(expected)
        assert sp.srepr(got) == sp.srepr(expected)


def test_shared_walks_are_xreplace_and_msubs():
    """A node shared by several expressions is rebuilt once, and each
    result is the tree walk's: xreplace rebuilds only what changed, msubs
    every node but a Derivative (whose arguments it leaves as they are)."""
    t = sp.Symbol("t")
    q = sp.Function("q")(t)
    u = sp.Function("u")(t)
    x = sp.Symbol("x")
    shared = sp.sin(q) * sp.cos(q) + q.diff(t)
    exprs = [shared * x + 1, shared ** 2 - q.diff(t, 2), sp.Derivative(q, t) * shared]
    rule = {q.diff(t): u, x: 3}
    memo = {}
    assert [sp.srepr(shared_xreplace(e, rule, memo)) for e in exprs] == [sp.srepr(e.xreplace(rule)) for e in exprs]
    memo = {}
    assert [sp.srepr(shared_msubs(e, rule, memo)) for e in exprs] == [sp.srepr(msubs(e, rule)) for e in exprs]
    assert shared_msubs(sp.Derivative(q, t), {q: x}, {}) == sp.Derivative(q, t)


def test_kanes_method_gives_sympys_mass_matrix_and_forcing(monkeypatch):
    """The floating base's equations (Kane's method in the base's speeds)
    with fmigen's KanesMethod and with sympy's: the same expressions."""
    from tests.test_joint_model import floating_system
    m = to_mechanism(floating_system())
    assert m.floating_base is not None
    M, F = m.equations_of_motion()
    monkeypatch.setattr(model, "KanesMethod", me.KanesMethod)
    M0, F0 = m.equations_of_motion()
    assert [sp.srepr(e) for e in M] == [sp.srepr(e) for e in M0]
    assert [sp.srepr(e) for e in F] == [sp.srepr(e) for e in F0]
