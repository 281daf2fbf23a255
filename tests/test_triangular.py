"""The Gröbner solution sequence against analytic geometry."""
import math

import numpy as np
import pytest
import sympy as sp

from fmigen.derive.dae import build_dae
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import load_mechanism
from fmigen.kinematics.triangular import triangularize
from fmigen.kinematics.branches import assemble


def fourbar_analytic(theta, l1=1.0, l2=4.0, l3=2.5, d=3.0, upper=True):
    """Circle intersection: coupler end B is |B−A| = l2 and |B−D| = l3."""
    A = np.array([l1 * math.cos(theta), l1 * math.sin(theta)])
    D = np.array([d, 0.0])
    dist = np.linalg.norm(D - A)
    a = (l2**2 - l3**2 + dist**2) / (2 * dist)
    h = math.sqrt(l2**2 - a**2)
    mid = A + a * (D - A) / dist
    perp = np.array([-(D - A)[1], (D - A)[0]]) / dist
    B = mid + (h if upper else -h) * perp
    return math.atan2(*(B - A)[::-1]), math.atan2(*(B - D)[::-1])


@pytest.fixture(scope="module")
def fourbar():
    dae = build_dae(load_mechanism("fourbar"))
    part = choose_partition(dae)
    return dae, triangularize(dae, part)


def test_fourbar_sequence_is_one_quadratic_then_linear(fourbar):
    _, tri = fourbar
    [block] = tri.blocks
    assert [str(s.variable) for s in block.steps] == ["s_phi", "c_phi", "s_alpha", "c_alpha"]
    assert [s.degree for s in block.steps] == [2, 1, 1, 1]


def test_start_is_assembled_exactly_from_theta(fourbar):
    _, tri = fourbar
    alpha, phi = fourbar_analytic(math.pi / 2)
    assert tri.start["alpha"] == pytest.approx(alpha, abs=1e-14)
    assert tri.start["phi"] == pytest.approx(phi, abs=1e-14)
    # the paper's rounded values only picked the branch
    assert tri.start["alpha"] == pytest.approx(0.353281, abs=1e-6)
    assert tri.start["phi"] == pytest.approx(1.26486, abs=1e-5)


@pytest.mark.parametrize("theta", np.linspace(-math.pi, math.pi, 13))
def test_branch_holds_over_a_full_crank_turn(fourbar, theta):
    dae, tri = fourbar
    q = assemble(dae, tri, {"theta": float(theta)})
    alpha, phi = fourbar_analytic(theta)
    assert math.remainder(q["alpha"] - alpha, 2 * math.pi) == pytest.approx(0, abs=1e-13)
    assert math.remainder(q["phi"] - phi, 2 * math.pi) == pytest.approx(0, abs=1e-13)


def test_sympy_fallback_without_singular_says_so_and_agrees(tmp_path):
    """With Singular off the PATH the sympy engine is used, announced on
    stderr, and gives the same solution sequence as Singular."""
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, PATH=str(tmp_path), FMIGEN_CACHE=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "fmigen.cli", "triangularize", "fourbar", "--json", "--no-cache"]
    fallback = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert fallback.returncode == 0, fallback.stderr
    assert "no Gröbner engine found; using the sympy groebner fallback (slow)" in fallback.stderr
    assert "pip install --no-deps passagemath-singular==10.8.13" in fallback.stderr
    assert "Gröbner engine: none: the sympy fallback" in fallback.stderr
    singular = subprocess.run(cmd, capture_output=True, text=True)
    seq = lambda p: [(s["variable"], s["degree"]) for b in json.loads(p.stdout)["blocks"] for s in b["sequence"]]
    assert seq(fallback) == seq(singular) == [("s_phi", 2), ("c_phi", 1), ("s_alpha", 1), ("c_alpha", 1)]


# --- angle sums: relative joint angles solved in absolute ones ------------------

def relative_fourbar():
    """The four-bar with every angle relative to its parent along the chain
    crank -> coupler -> rocker: θ, A (coupler from crank), B (rocker from
    coupler, the rocker pointing from B to D), so the loop reads
    l1 cos θ + l2 cos(θ + A) + l3 cos(θ + A + B) = d: products of s/c pairs if
    expanded, one pair per argument in the absolute angles."""
    from sympy import cos, sin
    from fmigen.model import Mechanism
    alpha0, phi0 = fourbar_analytic(math.pi / 2)
    m = Mechanism("relative_fourbar")
    th = m.coordinate("theta", math.pi / 2, "rad")
    a = m.coordinate("A", alpha0 - math.pi / 2, "rad")
    b = m.coordinate("B", phi0 + math.pi - alpha0, "rad")
    m.constraint("x", cos(th) + 4 * cos(th + a) + sp.Rational(5, 2) * cos(th + a + b) - 3)
    m.constraint("y", sin(th) + 4 * sin(th + a) + sp.Rational(5, 2) * sin(th + a + b))
    m.independent = ["theta"]
    m.dof = 1
    return m


def test_angle_sums_become_the_polynomial_variables_and_the_chain_is_recovered():
    from fmigen.kinematics.polynomialize import angle_plan, polynomialize
    dae = build_dae(relative_fourbar())
    part = choose_partition(dae)
    [b] = part.blocks
    ia, ib = dae.names.index("A"), dae.names.index("B")
    plan = angle_plan(dae, b)
    # ψ_A = θ + A (the coupler's absolute angle), ψ_B = θ + A + B
    assert plan.combos == {ia: {0: 1, ia: 1}, ib: {0: 1, ia: 1, ib: 1}}
    variables, polys, *_ = polynomialize(dae, b)
    # linear in the absolute angles' s/c: no products of two pairs
    assert all(sp.Poly(p, *variables).total_degree() == 1 for p in polys)
    tri = triangularize(dae, part, cover=False)
    for theta in np.linspace(-math.pi, math.pi, 13):
        q = assemble(dae, tri, {"theta": float(theta)})
        alpha, phi = fourbar_analytic(theta)
        assert math.remainder(theta + q["A"] - alpha, 2 * math.pi) == pytest.approx(0, abs=1e-13)
        assert math.remainder(theta + q["A"] + q["B"] - math.pi - phi, 2 * math.pi) == pytest.approx(0, abs=1e-13)


def test_single_angle_arguments_keep_their_own_variables(fourbar):
    """No angle sum, no change of variables (the low-level mechanisms' C
    stays byte for byte what it was)."""
    from fmigen.kinematics.polynomialize import angle_plan
    dae, tri = fourbar
    assert angle_plan(dae, tri.partition.blocks[0]) is None
    assert tri.blocks[0].angle_sums == {}


def _big_poly():
    """A step-like integer polynomial: big coefficients, cancellation, a
    generator that does not occur."""
    import sympy as sp
    x, y, K, z = sp.symbols("x y K_1 z")
    expr = (12345678901234567890123 * K**5 * x**2 - 98765432109876543210 * K * y + 3 * x * y**3 - 7
            - 2**40 * K**2 + y)
    return sp.Poly(expr, x, y, K, z), (x, y, K, z)


def test_poly_value_is_the_exact_value_rounded_once():
    import sympy as sp
    from fmigen.kinematics.branches import PREC
    from fmigen.kinematics.sequences import poly_value
    P, (x, y, K, z) = _big_poly()
    env = {x: sp.Float(0.3, PREC), y: sp.Float(-1.7, PREC), K: sp.Float(2.5e-3, PREC), z: sp.Float(9.0, PREC)}
    assert poly_value(P, env) == float(P.as_expr().xreplace(env).evalf(PREC))
    assert poly_value(sp.Poly(0, x, y), {x: sp.Float(1.0), y: sp.Float(2.0)}) == 0.0


def test_poly_evaluator_matches_the_expression_and_its_term_magnitudes():
    import sympy as sp
    from fmigen.kinematics.sweep_measures import abs_sum
    from fmigen.kinematics.sequences import poly_evaluator
    P, (x, y, K, z) = _big_poly()
    args = [K, y, x]          # z does not occur, so it need not be given
    rng = np.random.default_rng(1)
    vals = [rng.uniform(-2, 2, 50) for _ in args]
    value, scale = poly_evaluator(P, args)(*vals)
    ref = sp.lambdify(args, P.as_expr(), "numpy")(*vals)
    ref_scale = sp.lambdify(args, abs_sum(P.as_expr()), "numpy")(*vals)
    assert np.allclose(value, ref, rtol=1e-13, atol=1e-13 * ref_scale.max())
    assert np.allclose(scale, ref_scale, rtol=1e-14)
    with pytest.raises(ValueError, match="x"):
        poly_evaluator(P, [K, y])


def test_poly_plan_evaluates_every_polynomial_term_by_term():
    """The straight-line code of a step's coefficients (C and Python share
    its text) computes the polynomials, each monomial once."""
    import sympy as sp
    from fmigen.generate.statements import poly_plan
    P, (x, y, K, z) = _big_poly()
    Q = sp.Poly(-x**2 * K**5 + 5 * y**3 * x, x, y, K, z)
    plan = poly_plan([P, Q, sp.Poly(0, x, y, K, z)], "m")
    env = {"x": 0.3, "y": -1.7, "K_1": 2.5e-3}
    sums = {}
    for target, op, text in plan:
        value = eval(text, {}, env)
        if isinstance(target, str):
            assert target not in env     # each temporary is defined once
            env[target] = value
        else:
            sums[target] = value if op == "=" else sums[target] + value if op == "+=" else sums[target] - value
    for k, poly in enumerate([P, Q]):
        exact = float(poly.as_expr().subs({x: sp.Rational(0.3), y: sp.Rational(-1.7), K: sp.Rational(2.5e-3)}))
        assert sums[k] == pytest.approx(exact, rel=1e-12, abs=1e-12 * 2**40)
    assert sums[2] == 0
    assert len({text for t, _, text in plan if isinstance(t, str)}) == sum(isinstance(t, str) for t, _, _ in plan)


def test_single_letter_ring_variables_read_back_from_singular():
    """With every name one letter Singular prints x^2 as "x2" (its short
    output) unless told otherwise; the term parser then failed with
    KeyError 'x2' (found by a review).  The basis of y² = a·x, x² + y² = 2
    against sympy's own lex basis."""
    import sympy as sp
    from fmigen.kinematics.groebner import groebner_lex
    x, y, a = sp.symbols("x y a")
    polys = [y ** 2 - a * x, x ** 2 + y ** 2 - 2]
    ours = groebner_lex(polys, [y, x], [a], use_cache=False)
    ref = sp.groebner(polys, y, x, order="lex", domain=sp.QQ.frac_field(a))
    # both monic in their leading variable here, so equal as expressions
    assert {sp.expand(p.as_expr()) for p in ours} == {sp.expand(g) for g in ref.exprs}
