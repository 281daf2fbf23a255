"""fmigen.derive.derivatives: the same Jacobians as sympy's own, node for node."""

from pathlib import Path

import sympy as sp

from fmigen.build.pipeline import load_mechanism
from fmigen.derive.dae import build_dae
from fmigen.derive.derivatives import derivative, jacobian

CORPUS = Path(__file__).parent / "corpus"


def _same(a: sp.Matrix, b: sp.Matrix) -> bool:
    return a.shape == b.shape and [sp.srepr(x) for x in a] == [sp.srepr(y) for y in b]


def test_sums_products_powers_and_functions_differentiate_as_sympy_does():
    x, y, L = sp.symbols("x y L", real=True)
    exprs = [2 * (x + y),                          # a number times a sum: distributed by Mul
             sp.Rational(3, 7) * x * (x + y) * sp.sin(y),
             (L * sp.cos(x) - 3) ** 2 + (L * sp.sin(x) * sp.cos(y)) ** 2 - L ** 2,
             x * y / (1 + x ** 2), sp.sqrt(x ** 2 + y ** 2), sp.Abs(x - y), sp.atan2(y, x) * x,
             sp.Integer(5), L]
    for e in exprs:
        for v in (x, y):
            assert sp.srepr(derivative(e, v, {})) == sp.srepr(e.diff(v))
    column = sp.Matrix(exprs)
    assert _same(jacobian(column, [x, y]), column.jacobian([x, y]))


def test_undefined_functions_go_to_sympy():
    t = sp.Symbol("t")
    q = sp.Function("q")(t)
    column = sp.Matrix([sp.sin(q) * t, q.diff(t) * t ** 2])
    assert _same(jacobian(column, [t]), column.jacobian([t]))


def test_a_spatial_mechanisms_phi_q_and_gamma_terms_are_sympys():
    """Φ_q and (Φ_q v)_q of the corpus double wishbone (spatial loops,
    rational geometry): the expressions the DAE, and so model.c, are made of."""
    dae = build_dae(load_mechanism(str(CORPUS / "double_wishbone.py")), at_rest=True)
    v = sp.Matrix(dae.v_sym)
    ours = jacobian(dae.Phi, dae.q_sym)
    sympys = dae.Phi.jacobian(dae.q_sym)
    assert _same(ours, sympys)
    assert _same(jacobian(ours * v, dae.q_sym), (sympys * v).jacobian(dae.q_sym))


def test_time_and_coordinate_derivatives_are_sympys():
    """The points' velocities and accelerations, and their partial
    derivatives by the coordinates and the rates (what the equations of
    motion and the joint loads take), of every body of the corpus double
    wishbone: the same expressions as sympy's ``diff``, by t twice, by
    q_i(t) and by q̇_i(t)."""
    from fmigen.differentiation import FunctionDerivative, time_derivative
    from fmigen.model import t
    mech = load_mechanism(str(CORPUS / "double_wishbone.py"))
    exprs = []
    for b in mech.bodies:
        exprs += [sp.sympify(e) for e in b.com]
        exprs += list(b.frame.ang_vel_in(mech.world).to_matrix(b.frame))
    memo = {}
    rates = [time_derivative(e, t, memo) for e in exprs]
    assert [sp.srepr(r) for r in rates] == [sp.srepr(e.diff(t)) for e in exprs]
    second = [time_derivative(r, t, memo) for r in rates]
    assert [sp.srepr(a) for a in second] == [sp.srepr(r.diff(t)) for r in rates]
    for v in mech.q[:4] + [qi.diff(t) for qi in mech.q[:4]]:
        by_v = FunctionDerivative(v)
        assert [sp.srepr(by_v(e)) for e in exprs + rates] == [sp.srepr(e.diff(v)) for e in exprs + rates]


def test_second_time_derivatives_are_sympys_diff_t_2():
    """``diff(t, 2)`` is not ``diff`` taken twice (a product by the
    general Leibniz rule, the result through factor_terms and signsimp):
    the bodies' centres of mass of the corpus double wishbone (what a tree
    joint's reaction differentiates), and a sum whose first derivative is a
    product, as sympy's ``diff(t, 2)`` gives them, with both memos shared."""
    from fmigen.differentiation import second_time_derivative
    from fmigen.model import t
    mech = load_mechanism(str(CORPUS / "double_wishbone.py"))
    b = sp.Function("b")(t)
    L, C = sp.symbols("L1 C1x")
    exprs = [C + L * sp.cos(b) / 2, L * sp.sin(b) ** 2 * b, sp.Integer(3), C]
    exprs += [sp.sympify(e) for body in mech.bodies for e in body.com]
    second, first = {}, {}
    ours = [second_time_derivative(e, t, second, first) for e in exprs]
    assert [sp.srepr(a) for a in ours] == [sp.srepr(e.diff(t, 2)) for e in exprs]
    # the first of them differs from diff taken twice: the test can tell
    assert sp.srepr(ours[0]) != sp.srepr(exprs[0].diff(t).diff(t))
