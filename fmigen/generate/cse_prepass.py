"""The joint CSE's 'basic' pre-pass (sympy's ``preprocess_for_cse`` with
``basic_optimizations``: ``sub_pre``, then ``factor_terms``), with the same
result and less work (``prepass``).

Why: the pre-pass is most of a joint CSE's time
(``codegen_embedding._joint_cse``), and sympy's ``factor_terms`` does the
same work many times over:

- its recursion (``do``) visits every occurrence of a subexpression, and the
  model quantities are trees with much sharing (a spatial suspension's F and
  γ: ~2,800 sums and products, ~740 distinct);
- at every level it asks ``as_content_primitive`` of the subtree, which
  itself recurses the whole subtree: quadratic in the depth.

``prepass`` memoizes both: pure functions of the expression (and of the
flags), so every value is the one sympy computes, and the pre-pass's output
is the same expression (``tests/test_codegen_work.py`` compares it with
sympy's ``cse(..., optimizations="basic")`` to the srepr).
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager

from sympy.core.add import Add
from sympy.core.basic import Basic
from sympy.core.exprtools import Factors, _factor_sum_int, gcd_terms
from sympy.core.mul import Mul, _keep_coeff
from sympy.core.power import Pow
from sympy.core.symbol import Dummy
from sympy.core.sympify import CantSympify, sympify
from sympy.simplify import cse_opts
from sympy.utilities.iterables import iterable


class _FactorDict(dict, CantSympify):
    """A dict of factors that sympify refuses at once (``_plain_factor_dicts``)."""


class _FactorDefaultDict(defaultdict, CantSympify):
    """The same for a defaultdict (``Term`` collects its factors in those)."""


@contextmanager
def _plain_factor_dicts():
    """sympy's ``Factors(d)`` for a dict or defaultdict ``d``, as the same
    object, without sympifying ``d``.  Why: ``Factors.__init__`` first asks
    ``d in (None, S.One)``, and ``S.One == d`` sympifies the dict into a
    sorted sympy ``Dict`` of every factor only to find it is not 1;
    ``factor_terms`` (the joint CSE's 'basic' pre-pass) builds such a dict
    for every term of every sum.  A dict that cannot be sympified compares
    unequal to 1 and 0 at once and takes the same branch, which copies it
    (a defaultdict's copy is made a plain defaultdict again), so the
    factors, and everything the pre-pass returns, are the same."""
    init = Factors.__init__

    def plain(self, factors=None):
        if type(factors) is dict:
            init(self, _FactorDict(factors))          # its copy is a plain dict
        elif type(factors) is defaultdict:
            init(self, _FactorDefaultDict(factors.default_factory, factors))
            self.factors = defaultdict(self.factors.default_factory, self.factors)
        else:
            init(self, factors)

    Factors.__init__ = plain
    try:
        yield
    finally:
        Factors.__init__ = init


@contextmanager
def _remembered_content_primitive():
    """``as_content_primitive`` of sums, products and powers remembered per
    (expression, flags) while the context lasts; sympy's own afterwards."""
    own = {cls: cls.__dict__["as_content_primitive"] for cls in (Add, Mul, Pow)}
    known = {}

    def remembering(method):
        def as_content_primitive(self, radical=False, clear=True):
            key = (self, radical, clear)
            out = known.get(key)
            if out is None:
                out = known[key] = method(self, radical, clear)
            return out
        return as_content_primitive

    for cls, method in own.items():
        cls.as_content_primitive = remembering(method)
    try:
        yield
    finally:
        for cls, method in own.items():
            cls.as_content_primitive = method


def _factor_terms(expr, known: dict, radical=False, clear=False, fraction=False, sign=True):
    """sympy's ``factor_terms`` (sympy 1.14, ``core/exprtools.py``), each
    subexpression's result remembered in ``known``: the same steps on a
    subexpression met before give the same value."""
    def do(expr):
        try:
            return known[expr]
        except (KeyError, TypeError):      # TypeError: an unhashable iterable
            pass
        out = _do(expr)
        try:
            known[expr] = out
        except TypeError:
            pass
        return out

    def _do(expr):
        from sympy.concrete.summations import Sum
        from sympy.integrals.integrals import Integral
        is_iterable = iterable(expr)
        if not isinstance(expr, Basic) or expr.is_Atom:
            if is_iterable:
                return type(expr)([do(i) for i in expr])
            return expr
        if expr.is_Pow or expr.is_Function or is_iterable or not hasattr(expr, 'args_cnc'):
            args = expr.args
            newargs = tuple([do(i) for i in args])
            if newargs == args:
                return expr
            return expr.func(*newargs)
        if isinstance(expr, (Sum, Integral)):
            return _factor_sum_int(expr, radical=radical, clear=clear, fraction=fraction, sign=sign)
        cont, p = expr.as_content_primitive(radical=radical, clear=clear)
        if p.is_Add:
            list_args = [do(a) for a in Add.make_args(p)]
            # get a common negative (if there) which gcd_terms does not remove
            if not any(a.as_coeff_Mul()[0].extract_multiplicatively(-1) is None for a in list_args):
                cont = -cont
                list_args = [-a for a in list_args]
            # watch out for exp(-(x+2)) which gcd_terms will change to exp(-x-2)
            special = {}
            for i, a in enumerate(list_args):
                b, e = a.as_base_exp()
                if e.is_Mul and e != Mul(*e.args):
                    list_args[i] = Dummy()
                    special[list_args[i]] = a
            # rebuild p not worrying about the order which gcd_terms will fix
            p = Add._from_args(list_args)
            p = gcd_terms(p, isprimitive=True, clear=clear, fraction=fraction).xreplace(special)
        elif p.args:
            p = p.func(*[do(a) for a in p.args])
        return _keep_coeff(cont, p, clear=clear, sign=sign)

    return do(sympify(expr))


@contextmanager
def prepass():
    """Inside: the optimizations list to give ``preprocess_for_cse`` in
    place of ``basic_optimizations`` (the same pre-pass, remembering across
    every expression pre-passed in the context); the post-pass stays
    ``postprocess_for_cse(e, basic_optimizations)``."""
    known = {}
    with _plain_factor_dicts(), _remembered_content_primitive():
        yield [(cse_opts.sub_pre, cse_opts.sub_post), (lambda e: _factor_terms(e, known), None)]
