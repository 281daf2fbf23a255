"""The Modelica printer of ``fmigen.tools.modelica``: sympy expressions as
Modelica expressions (sympy has no Modelica printer: a small ``StrPrinter``
subclass, with ``^`` powers, ``if`` expressions and floating-point
rationals)."""

from __future__ import annotations

import math

import sympy as sp
from sympy.printing.str import StrPrinter

from fmigen.model import ModelError


class ModelicaPrinter(StrPrinter):
    """sympy expressions as Modelica expressions: ``^`` for powers (the
    exponent parenthesized), ``sqrt`` for square roots, rationals and large
    integers as floating-point numbers, π as its double, ``Piecewise`` as an
    ``if`` expression, ``and``/``or``/``not``; every function name sympy
    uses here is a Modelica built-in of the same name."""

    FUNCTIONS = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log",
                 "sqrt", "abs", "sign"}

    def _print_Pow(self, expr):
        base, exp = expr.args
        b = self.parenthesize(base, 60) if not (base.is_Symbol or base.is_Function) else self._print(base)
        if exp == sp.S.Half:
            return f"sqrt({self._print(base)})"
        if exp == -sp.S.Half:
            return f"1.0/sqrt({self._print(base)})"
        if exp == -1:
            return f"1.0/{b}"
        if exp.is_Integer and exp < 0:
            return f"1.0/{self._print(sp.Pow(base, -exp, evaluate=False))}"
        if exp.is_Integer and 1 < exp <= 3:
            return "(" + "*".join([b] * int(exp)) + ")"
        return f"({b})^({self._print(exp)})"

    def _print_Integer(self, expr):
        return f"{float(expr)!r}" if abs(int(expr)) > 2**31 else str(int(expr))

    def _print_Rational(self, expr):
        return f"({float(expr.p)!r}/{float(expr.q)!r})"

    def _print_Float(self, expr):
        return repr(float(expr))

    def _print_Pi(self, expr):
        return repr(math.pi)

    def _print_Exp1(self, expr):
        return repr(math.e)

    def _print_Abs(self, expr):
        return f"abs({self._print(expr.args[0])})"

    def _print_Piecewise(self, expr):
        parts = []
        for k, (e, cond) in enumerate(expr.args):
            if cond == sp.true or k == len(expr.args) - 1:
                parts.append(f" else {self._print(e)}" if parts else self._print(e))
                break
            parts.append(f"{'if' if not parts else ' elseif'} {self._print(cond)} then {self._print(e)}")
        return "(" + "".join(parts) + ")"

    def _print_And(self, expr):
        return "(" + " and ".join(self._print(a) for a in expr.args) + ")"

    def _print_Or(self, expr):
        return "(" + " or ".join(self._print(a) for a in expr.args) + ")"

    def _print_Not(self, expr):
        return f"(not {self._print(expr.args[0])})"

    def _print_BooleanTrue(self, expr):
        return "true"

    def _print_BooleanFalse(self, expr):
        return "false"

    def _print_Relational(self, expr):
        op = {"==": "==", "!=": "<>"}.get(expr.rel_op, expr.rel_op)
        return f"({self._print(expr.lhs)} {op} {self._print(expr.rhs)})"

    def _print_Min(self, expr):
        return self._nested("min", expr.args)

    def _print_Max(self, expr):
        return self._nested("max", expr.args)

    def _nested(self, name, args):
        out = self._print(args[0])
        for a in args[1:]:
            out = f"{name}({out}, {self._print(a)})"
        return out

    def _print_Function(self, expr):
        name = expr.func.__name__
        if name not in self.FUNCTIONS:
            raise ModelError(f"the expression {expr} uses {name}, which has no Modelica built-in equivalent")
        return f"{name}({', '.join(self._print(a) for a in expr.args)})"

    def _print_Derivative(self, expr):
        raise ModelError(f"an unevaluated derivative {expr} cannot be exported")


_printer = ModelicaPrinter({"order": "none"})


def mo(expr) -> str:
    """A sympy expression as Modelica text."""
    return _printer.doprint(sp.sympify(expr))
