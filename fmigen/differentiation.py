"""Derivatives as sympy's ``diff`` takes them, without the work its
``Derivative`` does at every node.

Why: ``expr.diff(x)`` goes through ``Derivative.__new__`` for the
expression and again for every sub-expression the sum and product rules
reach, and each of those asks the result ``is_zero`` (sympy's assumption
system on a large sum) and walks the whole result for ``Derivative`` nodes
to make canonical.  On a spatial mechanism's constraints that bookkeeping,
not the differentiation, was most of the time of Φ_q and γ.

Here sums and products are differentiated by the rules sympy's own
``Add._eval_derivative`` and ``Mul._eval_derivative`` apply (the
same terms built in the same order), each sub-expression once
(memoized), and every other node by sympy's ``diff`` itself.  The result
is the same expression: the shortcuts only leave out checks that cannot
change it for expressions with no ``Derivative`` or undefined function in
them, and with respect to a ``Symbol``; anything else goes to ``diff``.
The same rules serve the derivatives by time and by a coordinate q(t) or
its rate (``time_derivative``, ``FunctionDerivative``), which the
equations of motion and the joint loads take of the bodies' positions.

Here, at the bottom of the package (a ``describe`` module): the model
(``model.py``) takes them; ``fmigen/derive/derivatives.py`` builds the
Jacobians on them.
"""

from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.core.exprtools import factor_terms
from sympy.ntheory.multinomial import multinomial_coefficients_iterator
from sympy.simplify.simplify import signsimp


def is_plain(e) -> bool:
    """No node whose derivative sympy's ``Derivative`` treats specially."""
    return not e.has(sp.Derivative, AppliedUndef)


def derivative(e, x: sp.Symbol, memo: dict):
    """``e.diff(x)`` for a plain expression ``e``, or one in functions of
    ``x`` (``time_derivative``); ``memo``: the derivatives by ``x`` already
    taken, shared between calls."""
    found = memo.get(e)
    if found is not None:
        return found
    if x not in e.free_symbols:
        # Derivative's quick exit for a symbol the expression does not hold
        d = sp.S.Zero
    elif e.is_Add:
        # Add._eval_derivative
        d = e.func(*[derivative(a, x, memo) for a in e.args])
    elif e.is_Mul and e.is_commutative:
        # the product rule as Mul._eval_derivative applies it: one term per
        # factor, that factor differentiated (Add orders the terms itself)
        args = e.args
        d = sp.Add(*[sp.Mul(*args[:k], derivative(a, x, memo), *args[k + 1:]) for k, a in enumerate(args)])
    else:
        d = e.diff(x)
    memo[e] = d
    return d


def time_derivative(e, x: sp.Symbol, memo: dict):
    """``e.diff(x)`` for an expression in functions of ``x`` (the
    coordinates q(t) and their derivatives): sums and products by
    ``derivative``'s rules, every other node (sin(q(t)), q(t), q̇(t), a
    power) by ``diff``.  The same expression: what ``Derivative`` adds
    around the rules (its ``is_zero`` exit, which returns the same
    expression, and making its ``Derivative`` nodes canonical, which
    derivatives by one variable already are) changes nothing here."""
    return derivative(sp.sympify(e), x, memo)


def second_time_derivative(e, x: sp.Symbol, memo: dict, first: dict):
    """``e.diff(x, 2)`` for an expression in functions of ``x``: the
    expression sympy gives, which is not ``diff`` taken twice.
    ``Derivative`` with a count of 2 differentiates a commutative product
    by ``Mul._eval_derivative_n_times`` (the general Leibniz rule: one term
    per multinomial coefficient, each factor differentiated 0, 1 or 2
    times, a factor's second derivative again by this rule) and a sum by
    ``Basic._eval_derivative_n_times`` (its first derivative differentiated
    once more, here by ``derivative``'s rules), then returns a vanishing
    result as it is and any other as ``factor_terms(signsimp(...))``;
    every other node goes to ``diff`` itself.  ``memo``: the second
    derivatives already taken, ``first``: the first ones
    (``time_derivative``'s memo), both shared between calls."""
    found = memo.get(e)
    if found is not None:
        return found
    if x not in e.free_symbols:
        d = sp.S.Zero
    elif e.is_Mul and e.is_commutative or e.is_Add:
        if e.is_Add:
            d = derivative(derivative(e, x, first), x, first)
        else:
            orders = (lambda a: a, lambda a: derivative(a, x, first),
                      lambda a: second_time_derivative(a, x, memo, first))
            d = sp.Add(*[c * sp.Mul(*[orders[k](a) for k, a in zip(ks, e.args)])
                         for ks, c in multinomial_coefficients_iterator(len(e.args), 2)])
        if not d.is_zero:
            d = factor_terms(signsimp(d))
    else:
        d = e.diff(x, 2)
    memo[e] = d
    return d


class FunctionDerivative:
    """``e.diff(v)`` for ``v`` a coordinate q(t) or its rate q̇(t), as
    sympy takes it: ``v`` replaced by a dummy symbol, the derivative by
    that symbol (here by ``derivative``'s rules, memoized over every
    expression differentiated by the same ``v``), the dummy replaced back
    by ``subs``."""

    def __init__(self, v):
        self.v, self.dummy, self.memo = v, sp.Dummy("xi"), {}

    def __call__(self, e):
        e = sp.sympify(e)
        replaced = e.xreplace({self.v: self.dummy})
        if self.dummy not in replaced.free_symbols:
            return sp.S.Zero
        d = derivative(replaced, self.dummy, self.memo)
        if d.is_zero:
            # Derivative returns a vanishing derivative as it is
            return d
        return d.subs(self.dummy, self.v)
