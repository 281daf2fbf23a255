"""Floats as the user wrote them (fmigen/floats.py): a double becomes the
short decimal it is within round-off of, a typed decimal stays exact, an
irrational double keeps double precision, and the exact binary value is an
option."""
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from fmigen.derive.dae import build_dae
from fmigen.floats import MAX_DIGITS, TOLERANCE_ULPS, rational
from fmigen.joints import JointSystem
from fmigen.model import ModelError
from fmigen.build.pipeline import compile_model, load_mechanism


def ulps(r: sp.Rational, x: float) -> float:
    return float(abs(Fraction(r.p, r.q) - Fraction(x)) / Fraction(math.ulp(x)))


def test_round_off_of_decimal_arithmetic_is_the_decimal():
    assert 0.70 - 0.30 == 0.39999999999999997          # the double the issue saw
    assert rational(0.70 - 0.30) == sp.Rational(2, 5)
    assert rational(0.1 + 0.2) == sp.Rational(3, 10)
    assert rational(1.1 - 1.0) == sp.Rational(1, 10)   # 6.4 ulp away
    assert rational(-(0.70 - 0.30)) == -sp.Rational(2, 5)


def test_typed_decimals_stay_exact():
    assert rational(0.1) == sp.Rational(1, 10)
    assert rational(2.12) == sp.Rational(53, 25)
    assert rational(0.0123456789012345) == sp.Rational("0.0123456789012345")   # 15 digits
    assert rational(123456.789) == sp.Rational(123456789, 1000)
    assert rational(0.0) == 0 and rational(3) == 3 and rational(sp.Rational(1, 3)) == sp.Rational(1, 3)


def test_irrational_doubles_keep_double_precision():
    # no decimal of at most 10 digits within 16 ulp: the shortest decimal
    # that reads back, within half an ulp
    for x in (math.pi, math.pi / 3, math.e, math.sqrt(2), 1 / 3, math.sin(0.7)):
        r = rational(x)
        assert r == sp.Rational(repr(x)), x
        assert ulps(r, x) <= 0.5
        assert float(r) == x
    # and never farther than the tolerance, on many square roots (a handful
    # of them are that close to a short decimal: those are the only ones
    # that change, by at most 16 ulp)
    rng = np.random.default_rng(3)
    changed = 0
    for k in rng.integers(2, 10**9, 20000):
        x = math.sqrt(int(k)) * 1e-3
        r = rational(x)
        assert ulps(r, x) <= TOLERANCE_ULPS
        if r != sp.Rational(repr(x)):
            changed += 1
            assert len(str(r.p).strip("-").rstrip("0")) <= MAX_DIGITS
    assert changed <= 4


def test_binary_rule_is_the_exact_double():
    assert rational(0.1, "binary") == sp.Rational(3602879701896397, 36028797018963968)
    assert rational(0.70 - 0.30, "binary") == sp.Rational(7205759403792793, 18014398509481984)
    with pytest.raises(ModelError, match=r"float_rule must be one of 'decimal', 'binary', got 'exact'"):
        rational(0.5, "exact")
    with pytest.raises(ModelError, match="not finite"):
        rational(float("nan"))


def small_fourbar(**options):
    """A Grashof crank-rocker whose ground pivot is a computed hard point:
    D at x = 0.70 - 0.30 (the double 0.39999999999999997)."""
    s = JointSystem("fourbar_float", **options)
    crank = s.body("crank", 1.0, (0, 0, 0.3**2 / 12), com=(0.15, 0))
    coupler = s.body("coupler", 1.0, (0, 0, 0.55**2 / 12), com=(0.275, 0))
    rocker = s.body("rocker", 1.0, (0, 0, 0.5**2 / 12), com=(0.25, 0))
    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 2)
    s.revolute("A", crank.marker("A", (0.3, 0)), coupler.origin)
    s.revolute("B", coupler.marker("B", (0.55, 0)), rocker.marker("B", (0.5, 0)))
    s.revolute("phi", s.ground.marker("D", (0.70 - 0.30, 0)), rocker.origin)
    s.branch_hint(rocker.markers["B"], s.ground.markers["D"], (0, 1, 0), +1)
    s.independent = ["theta"]
    s.gravity = (0, -9.81, 0)
    return s


def test_a_computed_hard_point_is_its_decimal_in_the_ideal_and_the_c():
    compiled = compile_model(load_mechanism_of(small_fourbar()))
    # the loop constraint's constant: 2/5, not 39999999999999997/10^17
    consts = {abs(e.as_coeff_Add()[0]) for e in compiled.dae.Phi}
    assert sp.Rational(2, 5) in consts
    [solved_block] = compiled.triangular.blocks
    assert solved_block.method == "groebner"
    dens = [c.q for p in solved_block.polys for c in sp.Poly(p, *solved_block.variables, *solved_block.abstractions).coeffs()]
    assert max(dens) <= 100
    # no 17-digit coefficient reaches the C
    body = compiled.generated.model_c
    assert "39999999999999997" not in body and "1599999999999997" not in body
    # and it closes: the rocker pivot at exactly 0.4
    st = compiled.triangular.start
    bx = 0.3 * math.cos(st["theta"]) + 0.55 * math.cos(st["theta"] + st["A"])
    by = 0.3 * math.sin(st["theta"]) + 0.55 * math.sin(st["theta"] + st["A"])
    assert math.hypot(bx - 0.4, by) == pytest.approx(0.5, abs=1e-14)


def test_the_binary_rule_keeps_the_double():
    dae = build_dae(load_mechanism_of(small_fourbar(float_rule="binary")))
    consts = {abs(e.as_coeff_Add()[0]) for e in dae.Phi}
    assert sp.Rational(7205759403792793, 18014398509481984) in consts


def test_an_axis_of_decimals_is_a_unit_vector_by_the_decimal_rule():
    s = small_fourbar()
    b = s.body("slider", 1.0, (0, 0, 0))
    s.prismatic("slide", s.ground.origin, b.origin, axis=(0.6, 0.8, 0))
    assert s.joints["slide"].axis == (sp.Rational(3, 5), sp.Rational(4, 5), 0)
    s = small_fourbar(float_rule="binary")
    b = s.body("slider", 1.0, (0, 0, 0))
    with pytest.raises(ModelError, match="exact unit length"):
        s.prismatic("slide", s.ground.origin, b.origin, axis=(0.6, 0.8, 0))


def test_low_level_mechanism_floats_and_the_option():
    m = load_mechanism("slider_crank")
    c = next(c for c in m.constraints if c.name == "rod_y")
    c.expr = c.expr + (0.70 - 0.30)
    assert build_dae(m).Phi[1].as_coeff_Add()[0] == sp.Rational(2, 5) - sp.Rational(1, 20)
    m.float_rule = "binary"    # the parameter e = 0.05 too
    assert build_dae(m).Phi[1].as_coeff_Add()[0] == \
        sp.Rational(7205759403792793, 18014398509481984) - sp.Rational(3602879701896397, 72057594037927936)


def load_mechanism_of(system):
    from fmigen.frontends.joint_model import to_mechanism
    return to_mechanism(system)
