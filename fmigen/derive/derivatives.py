"""Jacobians of plain expressions: the same expressions sympy's ``diff``
gives, entry by entry by ``fmigen.differentiation.derivative`` (which says
why and how)."""

from __future__ import annotations

import sympy as sp

from fmigen.differentiation import derivative, is_plain


def jacobian(column: sp.Matrix, xs) -> sp.Matrix:
    """``column.jacobian(xs)`` (``xs`` plain symbols), entry by entry
    ``derivative``; an expression that is not plain goes to sympy's
    ``diff``."""
    memos = {x: {} for x in xs}
    entries = list(column)
    if not all(isinstance(x, sp.Symbol) for x in xs) or not all(is_plain(sp.sympify(e)) for e in entries):
        return column.jacobian(xs)
    return sp.Matrix(len(entries), len(xs), lambda j, i: derivative(sp.sympify(entries[j]), xs[i], memos[xs[i]]))
