"""The CLI process's settings (fmigen/build/process.py) change no result:
sympy's default facts copied without deducing them again are the facts
sympy's own copy deduces, for every sympy class, and a remembered deduction
sets the facts sympy's deduction sets, in its order."""

import gc
import importlib

import sympy as sp
from sympy.core.assumptions import StdFactKB
from sympy.core.basic import Basic
from sympy.core.facts import FactKB, InconsistentAssumptions

from fmigen.build import process


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _deduced_copy(kb):
    # sympy's StdFactKB.copy: a new knowledge base deduced from kb's facts
    return StdFactKB(kb)


def test_default_facts_copied_as_sympy_deduces_them():
    importlib.import_module("sympy.physics.mechanics")    # its classes too
    classes = [c for c in set(_subclasses(Basic)) if "default_assumptions" in c.__dict__]
    assert len(classes) > 300
    for cls in classes:
        kb = cls.default_assumptions
        ours, sympys = process._copy_facts(kb), _deduced_copy(kb)
        assert type(ours) is type(sympys)
        assert list(ours.items()) == list(sympys.items()), cls
        assert ours.rules is sympys.rules and ours.generator == sympys.generator
        assert ours is not kb and ours._generator is not kb._generator
        # what an object learns goes into its copy, not into the class's
        ours["learned"] = True
        assert "learned" not in kb


def _expanded_with_facts():
    sp.core.cache.clear_cache()
    x, y = sp.symbols("x y")
    expr = sp.expand((x * sp.Float("0.3") + sp.Rational(17, 50) * y - sp.Float("431.3")) ** 3)
    return sp.srepr(expr), [(a.is_zero, a.is_positive, a.is_integer, a.is_rational)
                            for a in sp.preorder_traversal(expr)]


def _sympys_deduction():
    deduce = FactKB.__dict__["deduce_all_facts"]
    return getattr(deduce, "deduce", deduce)


def test_tune_keeps_what_sympy_computes():
    saved_copy, saved_threshold = StdFactKB.__dict__["copy"], gc.get_threshold()
    saved_deduce = FactKB.__dict__["deduce_all_facts"]
    try:
        StdFactKB.copy = _deduced_copy       # sympy's own, whatever ran before
        FactKB.deduce_all_facts = _sympys_deduction()
        before = _expanded_with_facts()
        process.tune()
        assert gc.get_threshold() == process.GC_THRESHOLD
        assert StdFactKB.copy is process._copy_facts
        assert FactKB.deduce_all_facts.deduce is _sympys_deduction()
        after = _expanded_with_facts()
    finally:
        StdFactKB.copy = saved_copy
        FactKB.deduce_all_facts = saved_deduce
        gc.set_threshold(*saved_threshold)
    assert after == before


def _told(kb, deduce, facts):
    kb = process._copy_facts(kb)
    try:
        deduce(kb, facts)
    except InconsistentAssumptions:
        return "inconsistent", list(kb.items())
    return "ok", list(kb.items())


def test_a_remembered_deduction_sets_what_sympys_sets():
    # every fact, true and false, told to every class's default facts, as a
    # pair and as a dict: the first telling deduces, the second replays
    sympys = _sympys_deduction()
    remembered = process._remembered_deduction(sympys)
    # classes made at run time (sympy's undefined functions, as another test
    # in the same worker may have made) have no module: sort them by name
    classes = sorted((c for c in set(_subclasses(Basic)) if "default_assumptions" in c.__dict__),
                     key=lambda c: (c.__module__ or "", c.__qualname__))
    facts = sorted(StdFactKB(()).rules.defined_facts)
    compared = inconsistent = 0
    for cls in classes:
        kb = cls.default_assumptions
        for fact in facts:
            for value in (True, False):
                told = ((fact, value),)
                want = _told(kb, sympys, told)
                for _ in range(2):
                    assert _told(kb, remembered, told) == want, (cls, fact, value)
                    assert _told(kb, remembered, dict(told)) == want, (cls, fact, value)
                compared += 1
                inconsistent += want[0] == "inconsistent"
    assert compared > 10_000 and 0 < inconsistent < compared
