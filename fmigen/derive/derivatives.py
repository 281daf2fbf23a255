"""Jacobians of plain expressions: the same expressions sympy's ``diff``
gives, without the work its ``Derivative`` does at every node.

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
"""

from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef


def _plain(e) -> bool:
    """No node whose derivative sympy's ``Derivative`` treats specially."""
    return not e.has(sp.Derivative, AppliedUndef)


def derivative(e, x: sp.Symbol, memo: dict):
    """``e.diff(x)`` for a plain expression ``e`` (``memo``: the derivatives
    by ``x`` already taken, shared between calls)."""
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


def jacobian(column: sp.Matrix, xs) -> sp.Matrix:
    """``column.jacobian(xs)`` (``xs`` plain symbols), entry by entry
    ``derivative``; an expression that is not plain goes to sympy's
    ``diff``."""
    memos = {x: {} for x in xs}
    entries = list(column)
    if not all(isinstance(x, sp.Symbol) for x in xs) or not all(_plain(sp.sympify(e)) for e in entries):
        return column.jacobian(xs)
    return sp.Matrix(len(entries), len(xs), lambda j, i: derivative(sp.sympify(entries[j]), xs[i], memos[xs[i]]))
