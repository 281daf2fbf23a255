"""Floats as the user wrote them: the one rule by which a double in a
mechanism becomes an exact rational.

The kinematics are exact (constraints, structural parameters and starts
enter Gröbner bases and the assembly as rationals), so every float literal
has to become a rational somewhere; this module is that place for the joint
API (positions, axes, masses, starts, parameters), the low-level
``Mechanism``'s expressions and the assembly.

Rule ``"decimal"`` (the default, ``Mechanism.float_rule`` and
``JointSystem.float_rule``): a double x becomes

* the decimal with the fewest significant digits, at most ``MAX_DIGITS``
  (10), that lies within ``TOLERANCE_ULPS`` (16) units in the last place of
  x (``math.ulp(x)``) — the number the user most likely meant when x is the
  result of float arithmetic on short decimals: 0.70 − 0.30 is the double
  0.39999999999999997, one ulp from 0.4, and becomes 2/5;
* otherwise the shortest decimal that reads back to x (``repr(x)``).

Why these bounds: a decimal the user typed with at most 15 significant
digits is never changed (another decimal of at most 10 digits is at least
1e-11·|x| away from it, far beyond 16 ulp ≈ 3.6e-15·|x|), so 0.1 stays 1/10
and 2.12 stays 53/25; 16 ulp covers the round-off of sums and differences
of a few decimals of like size (99% of random ones of two or three terms);
and a double that is not a short decimal (math.pi, a sine) is replaced by
one only when a decimal of at most 10 digits happens to lie within 16 ulp
of it — rare (below one in 10⁴ values) and then at most 16 ulp, a relative
3.6e-15, away.  A difference of nearly equal large numbers (10.7 − 10.3)
carries the round-off of its operands, more than 16 ulp of the result; it
keeps its ``repr``.

Rule ``"binary"``: the double's exact binary value (0.1 is
3602879701896397/36028797018963968), for a mechanism whose floats are
exact binary fractions by construction.

A sympy Float of more than double precision is always its exact binary
value: it was made on purpose.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import sympy as sp

from .model import ModelError

#: the rules ``rational`` knows
FLOAT_RULES = ("decimal", "binary")
#: "decimal": at most this many significant digits for a snapped decimal
MAX_DIGITS = 10
#: "decimal": how far (in units in the last place of x) the snapped decimal
#: may lie from x
TOLERANCE_ULPS = 16


def check_rule(rule: str, what: str = "float_rule") -> str:
    if rule not in FLOAT_RULES:
        raise ModelError(f"{what} must be one of {', '.join(map(repr, FLOAT_RULES))}, got {rule!r}")
    return rule


@functools.lru_cache(maxsize=65536)
def _decimal(x: float) -> Fraction:
    if x == 0.0:
        return Fraction(0)
    exact = Fraction(x)
    tol = TOLERANCE_ULPS * Fraction(math.ulp(x))
    # A decimal within tol of x reads back as a double within tol + ulp(x)
    # of x (its double is within half an ulp of it, and that ulp is at most
    # twice x's); the double difference is rounded monotonically, so one
    # above that bound rules the decimal out without exact arithmetic
    # (most of the time: the Fractions below are what made this slow)
    near = (TOLERANCE_ULPS + 1) * math.ulp(x)
    for n in range(1, MAX_DIGITS + 1):
        # x's exact value correctly rounded to n significant digits: the
        # nearest n-digit decimal, so if it is not close enough none is
        text = format(x, f".{n - 1}e")
        if not abs(float(text) - x) <= near:
            continue
        d = Fraction(text)
        if abs(d - exact) <= tol:
            return d
    return Fraction(repr(x))


def rational(x, rule: str = "decimal") -> sp.Rational:
    """The exact rational of the number ``x`` by ``rule`` (module docstring):
    an int or sympy Rational as it is, a float or a double-precision sympy
    Float by the rule, a higher-precision Float as its binary value."""
    if isinstance(x, (int, sp.Integer, sp.Rational)) and not isinstance(x, bool):
        return sp.Rational(x)
    if isinstance(x, sp.Float) and x._prec > 53:
        return sp.Rational(x)
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"the number {x} is not finite; a mechanism's values must be finite")
    if check_rule(rule) == "binary":
        return sp.Rational(*x.as_integer_ratio())
    d = _decimal(x)
    return sp.Rational(d.numerator, d.denominator)


def exact_floats(expr, rule: str = "decimal"):
    """``expr`` with every float literal replaced by its ``rational``.
    Constraints go through this before anything else, so the kinematics
    solve the constraint as written."""
    expr = sp.sympify(expr)
    floats = expr.atoms(sp.Float)
    if not floats:
        return expr
    return expr.xreplace({f: rational(f, rule) for f in floats})


def rounded(x, digits: int) -> sp.Rational:
    """``x`` rounded to ``digits`` significant digits, exactly.  Not for a
    user's literals (``rational`` is): for values another program computed
    from a file (``mjcf``: MuJoCo's compiled model, read to 12 digits)."""
    x = float(x)
    if not math.isfinite(x):
        raise ModelError(f"the number {x} is not finite")
    return sp.Rational(format(x, f".{digits}g"))
