"""sympy's ``expand`` of a polynomial with exact rational coefficients, and
its reduction on unit circles, by sparse polynomial arithmetic.

Why: ``codegen_embedding.on_the_circle`` expands every entry of a model
quantity twice (as it stands, then with s² = 1 − c² put in) to compare the
unit-circle form's code with the given one; sympy's ``expand`` builds and
canonicalizes every intermediate product as an expression.  A polynomial
with rational coefficients has one expanded form, so the same expression
comes out of sympy's polynomial ring (``PolyRing``, dicts of exponent
tuples to rationals) and its ``as_expr``: Φ_q's entries, whose geometry
is exact (``fmigen.floats``).  An expression with anything else (a
``Float``, whose sums sympy rounds in its own order, a function, a negative
or fractional power) is left to sympy's ``expand``
(``ExactExpansion.polynomial`` returns None).
"""

from __future__ import annotations

import sympy as sp
from sympy.polys.domains import QQ
from sympy.polys.orderings import lex
from sympy.polys.rings import PolyRing


class _NotExact(Exception):
    pass


class ExactExpansion:
    """Expansions over the symbols ``symbols`` (every symbol the expressions
    read), with ``pairs`` ({s: c}, each angle's sine and cosine) for the
    unit-circle reduction."""

    def __init__(self, symbols, pairs: dict):
        self.symbols = sorted(symbols, key=sp.default_sort_key)
        self.ring = PolyRing(self.symbols, QQ, lex) if self.symbols else None
        self.gens = dict(zip(self.symbols, self.ring.gens)) if self.ring else {}
        index = {s: i for i, s in enumerate(self.symbols)}
        self.pairs = [(index[s], index[c]) for s, c in pairs.items() if s in index and c in index]

    def _poly(self, e, memo):
        got = memo.get(e)
        if got is not None:
            return got
        if e.is_Symbol:
            r = self.gens[e]
        elif e.is_Rational:
            r = self.ring.ground_new(QQ(int(e.p), int(e.q)))
        elif e.is_Add:
            r = self.ring.zero
            for a in e.args:
                r += self._poly(a, memo)
        elif e.is_Mul:
            r = self.ring.one
            for a in e.args:
                r *= self._poly(a, memo)
        elif e.is_Pow and e.exp.is_Integer and e.exp >= 0:
            r = self._poly(e.base, memo) ** int(e.exp)
        else:
            raise _NotExact
        memo[e] = r
        return r

    def polynomial(self, e):
        """``e`` as an element of the ring, or None where it is no polynomial
        with rational coefficients in the symbols."""
        if self.ring is None or not e.free_symbols <= self.gens.keys():
            return None
        try:
            return self._poly(e, {})
        except _NotExact:
            return None

    def on_the_circle(self, poly):
        """``poly`` with every s^n (n ≥ 2) of a pair replaced by
        s^(n mod 2)·(1 − c²)^(n div 2), multiplied out."""
        ring = self.ring
        out = ring.zero
        for monom, coeff in poly.terms():
            exps = list(monom)
            factor = ring.one
            for i, j in self.pairs:
                n = exps[i]
                if n >= 2:
                    exps[i] = n % 2
                    factor *= (ring.one - ring.gens[j] ** 2) ** (n // 2)
            out += ring.from_dict({tuple(exps): coeff}) * factor
        return out

    @staticmethod
    def expression(poly):
        """The ring element as sympy's expanded expression."""
        return poly.as_expr()
