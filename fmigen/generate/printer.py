"""The C printer every generator prints with, and where model symbols live in C.

``c(expr)`` prints a sympy expression as C99 the way model.c spells it
(integer powers as multiplications or ``fmigen_powi``, rationals as double
quotients); ``SymbolMap`` replaces the model's symbols by the C arrays the
runtime passes (q, v, p, u, t).  ``pyexpr`` is its Python twin: the same
spelling where Python has one, so an expression evaluates in the Python
runtime (and in the build's mass check, mass_checks.py) exactly as in
model.c.  The kinematics walk (codegen.py), the embedding
(codegen_embedding.py), the formulations and the Python runtime all print
with these, so they live apart from any one of them.
"""
from __future__ import annotations

import re

import sympy as sp
from sympy.printing.c import C99CodePrinter

from fmigen.derive.embed import Embedding
from fmigen.model import ModelError, t
from fmigen.symbolic import shared_xreplace


class _Printer(C99CodePrinter):
    """C99 printer that keeps integer powers as multiplications (cheaper and
    exact-er than pow) and big integers as doubles (no integer overflow)."""

    def _print_Pow(self, expr):
        base, exp = expr.args
        if exp.is_Integer and 1 < exp <= 4:
            b = self.parenthesize(base, 100)
            return "(" + "*".join([b] * int(exp)) + ")"
        if exp.is_Integer and -4 <= exp < 0:
            return "(1.0/" + self._print_Pow(sp.Pow(base, -exp, evaluate=False)) + ")"
        if exp.is_Integer and abs(exp) <= POWI_MAX:
            # pow() is a libm call of ~100 instructions; squaring is a handful
            # of multiplications (fmigen_powi, runtime/fmigen_runtime.h)
            call = f"fmigen_powi({self._print(base)}, {abs(int(exp))})"
            return call if exp > 0 else f"(1.0/{call})"
        return super()._print_Pow(expr)

    def _print_Integer(self, expr):
        return f"{float(expr)!r}" if abs(int(expr)) > 2**31 else super()._print_Integer(expr)

    def _print_Piecewise(self, expr):
        # sympy's ternary spans several lines; the passes over the generated
        # statements (chunking._split_inputs, chunked) read one
        # statement per line
        return re.sub(r"\s*\n\s*", " ", super()._print_Piecewise(expr))

    def __init__(self, settings=None):
        # no M_PI_2, M_LN10, M_SQRT2, ... for the constants sympy's C
        # printer knows: strict C99 (-std=c99) does not define them, nor
        # does Python's math; _print_NumberSymbol writes their doubles
        super().__init__({"math_macros": {}, **(settings or {})})

    def _print_Pi(self, expr):
        # M_PI is not part of strict C99 (-std=c99 hides it)
        return "3.141592653589793"

    def _print_NumberSymbol(self, expr):
        # E, EulerGamma, GoldenRatio, ...: the double nearest (sympy's C
        # printer would declare a const variable inside the expression)
        return repr(float(expr))

    _print_Exp1 = _print_NumberSymbol

    # sin, cos, tan, atan2, asin, acos, atan, exp and log are fmigen's own
    # (runtime/fmigen_numeric.h), never libm's: C libraries differ in the
    # last bit (glibc, mingw-w64, msvcrt, musl), and an FMU gives the same bits on
    # every platform (docs/portability.md).  sqrt stays: IEEE 754 rounds it
    # exactly.  pow (a non-integer power), cbrt and the hyperbolic functions
    # stay libm's (docs/portability.md says so).
    def _print_own(self, expr):
        return f"fmigen_{expr.func.__name__}({', '.join(self._print(a) for a in expr.args)})"

    _print_sin = _print_cos = _print_tan = _print_atan2 = _print_asin = _print_acos = _print_atan = _print_own
    _print_exp = _print_log = _print_own

    def _print_Rational(self, expr):
        return f"({float(expr.p)!r}/{float(expr.q)!r})"


#: integer exponents up to this are printed as fmigen_powi (repeated
#: squaring), beyond it as pow()
POWI_MAX = 64

_printer = _Printer()


def c(expr) -> str:
    return _printer.doprint(expr)


def sincos_into(k: int, array: str = "trig", slot: int | None = None) -> str:
    """The C statement that sets ``array[2j]``, ``array[2j + 1]`` to sin and
    cos of q[k] (j = ``slot``, by default k): one fmigen_sincos call, never
    libm's sin and cos, whose bits differ between C libraries
    (docs/portability.md).  Every generator that fills such a pair from q
    writes it with this."""
    j = k if slot is None else slot
    return f"fmigen_sincos(q[{k}], &{array}[{2 * j}], &{array}[{2 * j + 1}]);"



class SymbolMap:
    """Maps model symbols to the C arrays they live in."""

    def __init__(self, emb: Embedding):
        dae = emb.dae
        self.subs = {}
        for i, (qs, vs) in enumerate(zip(dae.q_sym, dae.v_sym)):
            self.subs[qs] = sp.Symbol(f"q[{i}]")
            self.subs[vs] = sp.Symbol(f"v[{i}]")
        for k, s in enumerate(dae.tunable):
            self.subs[s] = sp.Symbol(f"p[{k}]")
        for k, s in enumerate(dae.inputs):
            self.subs[s] = sp.Symbol(f"u[{k}]")
        self.subs[t] = sp.Symbol("t")
        # one memo for every expression mapped: the model's quantities share
        # their sub-expression objects (shared_xreplace)
        self._memo = {}

    def __call__(self, expr):
        return shared_xreplace(sp.sympify(expr), self.subs, self._memo)


class PythonRuntimeError(ModelError):
    """The Python FMU cannot be built (pythonfmu missing, unsupported option,
    an expression without a Python equivalent)."""


class _PyPrinter(_Printer):
    """The C printer above (``_Printer``), so expressions print (and evaluate) exactly as in
    model.c; only constructs without a Python spelling are refused."""

    def _print_Piecewise(self, expr):
        # C: ((c1) ? (e1) : ((c2) ? (e2) : (e3))), the same tests in the same order
        if expr.args[-1].cond != sp.true:
            raise PythonRuntimeError(f"piecewise expression without a default (True) branch: {expr}")
        out = self._print(expr.args[-1].expr)
        for e, cnd in reversed(expr.args[:-1]):
            out = f"(({self._print(e)}) if ({self._print(cnd)}) else ({out}))"
        return out

    def _print_ITE(self, expr):
        return self._print(expr.rewrite(sp.Piecewise))

    def _print_And(self, expr):
        return "(" + " and ".join(f"({self._print(a)})" for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(" + " or ".join(f"({self._print(a)})" for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"(not ({self._print(expr.args[0])}))"

    def _print_BooleanTrue(self, expr):
        return "True"

    def _print_BooleanFalse(self, expr):
        return "False"

    def _print_Integer(self, expr):
        # C converts integer literals to double at compile time; Python would
        # keep exact (big) integers, so print them as the doubles C uses
        return repr(float(expr))

    def _print_Infinity(self, expr):
        return "INFINITY"

    def _print_NegativeInfinity(self, expr):
        return "(-INFINITY)"

    def _print_NaN(self, expr):
        return "NAN"


_py = _PyPrinter()


def pyexpr(expr) -> str:
    return _py.doprint(expr)
