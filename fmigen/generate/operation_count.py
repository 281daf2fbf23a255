"""sympy's operation count (``sp.count_ops(e)``, visual=False) of an
expression, each sub-expression counted once.

Why: the code generator compares alternatives by sympy's count (a
quantity on the unit circle or not, γ by jets or not, ``codegen_embedding``),
over expressions that share most of their sub-expressions, and
``count_ops`` walks every expression whole, builds a symbolic sum of
operation names per call and negates or splits sub-expressions on the
way.  The count of a node is what ``count_ops`` adds for the node itself
plus the counts of the sub-expressions it goes on to, whatever else is in
the expression: so it is kept per node (``OperationCount``), and the
total is the same integer.  The rules below are ``count_ops``'s branch
for an ``Expr`` (sympy 1.14), in its order; its symbolic sum ADD + SUB −
ADD + ... is the number of its terms, with SUB − ADD (a sum whose first
term is negative, the ADD recorded for a later term becoming a SUB)
counting nothing.
"""

from __future__ import annotations

import sympy as sp
from sympy.core.function import Derivative, _coeff_isneg
from sympy.functions.elementary.miscellaneous import LatticeOp
from sympy.simplify.radsimp import fraction


def _numerator_only(factor) -> bool:
    """Whether ``fraction`` puts ``factor`` of a product in the numerator
    as it is: not a power or exponential other than a positive integer
    power, not a fraction."""
    if factor.is_Rational:
        return factor.is_Integer
    if factor.is_Pow:
        return factor.exp.is_Integer and factor.exp > 0
    return not isinstance(factor, sp.exp)


class OperationCount:
    """``count(e)`` == ``sp.count_ops(e)`` for a sympy expression ``e``;
    the counts of every node met are kept between calls."""

    def __init__(self, kept: int = 200_000):
        self.memo: dict = {}
        self.kept = kept

    def count(self, e) -> int:
        e = sp.sympify(e)
        if not isinstance(e, sp.Expr) or e.is_Relational:
            return sp.count_ops(e)
        if len(self.memo) > self.kept:
            # a bound on the memory a long process (the test suite) keeps
            self.memo.clear()
        return self._count(e)

    def _count(self, a) -> int:
        found = self.memo.get(a)
        if found is None:
            found = self.memo[a] = self._node(a)
        return found

    def _node(self, a) -> int:
        count = self._count
        if a.is_Rational:
            # 1 counts nothing; -1/3 is a negation and a division
            return (a.p < 0) + (a.q != 1) if a is not sp.S.One else 0
        n = 0
        if a.is_Mul:
            if _coeff_isneg(a):
                n += 1
                a = a.as_two_terms()[1] if a.args[0] is sp.S.NegativeOne else -a
            if all(_numerator_only(f) for f in a.args):
                # fraction(a) is (a, 1): count_ops goes on with a itself
                num, den = a, sp.S.One
            else:
                num, den = fraction(a)
            if num.is_Integer:
                return n + 1 + bool(num < 0) + count(den)
            if den is not sp.S.One:
                return n + 1 + (0 if den.is_Integer else count(den)) + count(num)
        elif a.is_Add:
            negative = 0
            for i, term in enumerate(a.args):
                if _coeff_isneg(term):
                    negative += 1
                    term = -term
                n += count(term) + (i > 0)
            return n + (negative == len(a.args))
        if a.is_Pow and a.exp is sp.S.NegativeOne:
            return n + 1 + count(a.base)
        if a == sp.S.Exp1:
            return n + 1
        if a.is_Pow and a.base == sp.S.Exp1:
            return n + 1 + count(a.exp)
        if a.is_Mul or isinstance(a, LatticeOp):
            n += len(a.args) - 1
        elif a.args and (a.is_Pow or a.is_Function or isinstance(a, (Derivative, sp.Integral, sp.Sum))):
            n += 1
        if not a.is_Symbol:
            n += sum(count(x) for x in a.args)
        return n
