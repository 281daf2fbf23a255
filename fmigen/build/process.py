"""Settings of an fmigen command's process that make a derivation cost less
CPU without changing anything it computes (``tune``, called by
``cli.main``).

Why: a derivation is sympy building and dropping millions of small,
acyclic expression objects, most of them kept alive by sympy's cache.  Two
costs of that are overhead of the interpreter and of sympy's bookkeeping,
not of the work:

- Python's cyclic garbage collector runs a young-generation pass every 700
  net allocations, and from time to time a full pass over the whole heap
  (sympy's cache: hundreds of MB), and finds next to nothing to free: the
  expressions form no cycles.  ``GC_THRESHOLD`` lets the young generation
  grow to 50,000 objects first; the older generations keep Python's
  defaults relative to it, so a long derivation (the full vehicle) still
  collects what cycles it makes.
- sympy gives every new number (each ``Float`` or ``Rational`` an
  expansion or a CSE forms) its class's default facts on the first
  assumption asked of it (``is_zero``, ``is_positive``, ...) by deducing
  them again from scratch (``StdFactKB.copy``: ``deduce_all_facts`` over
  the class's facts); the class's facts are already closed under the
  rules, so a plain copy of them is the same knowledge base
  (``_copy_facts``; ``tests/test_process.py`` compares the two for every
  sympy class).
- every fact an object learns (a ``Mul`` asked ``is_zero`` as it is built,
  a ``Float`` asked ``is_positive``) is deduced again through the rules,
  though a derivation asks the same few questions of knowledge bases in
  the same few states tens of thousands of times.  The deduction is a
  function of the knowledge base's facts and the facts told
  (``FactKB.deduce_all_facts``: the rules are fixed), so
  ``_remembered_deduction`` keeps, per such state and told facts, the
  entries the deduction set, in the order it set them, and sets them again
  (the same facts in the same order).

Measured: docs/benchmarks.md, "Build time: the process's settings" and "Build
time: sympy's deductions remembered, ...".
"""

from __future__ import annotations

import gc

#: the young generation's threshold (Python's default: 700); the others stay
#: Python's (10 young collections per middle one, 10 middle per full one)
GC_THRESHOLD = (50_000, 10, 10)


def _copy_facts(kb):
    """``StdFactKB.copy`` of a knowledge base closed under the rules (every
    ``default_assumptions`` is: ``StdFactKB(defs)`` deduced it): the same
    facts in the same order, the same rules and generator, without
    deducing them again."""
    new = dict.__new__(type(kb))
    dict.update(new, kb)
    new.rules = kb.rules
    new._generator = kb._generator.copy()
    return new


_UNSET = object()


def _remembered_deduction(deduce):
    """``deduce`` (sympy's ``FactKB.deduce_all_facts``) with its effect
    remembered per (rules, the knowledge base's facts, the facts told): the
    entries it set or changed, in its order.  The set of distinct states is
    small (a knowledge base holds at most one value per fact of sympy's
    rules).  A deduction that raises (inconsistent facts) is not
    remembered: it raises again each time."""
    done: dict = {}

    def deduce_all_facts(kb, facts):
        facts = tuple(facts.items()) if isinstance(facts, dict) else tuple(facts)
        key = (kb.rules, frozenset(kb.items()), facts)
        effect = done.get(key)
        if effect is None:
            before = dict(kb)
            deduce(kb, facts)
            done[key] = effect = tuple((k, v) for k, v in kb.items() if before.get(k, _UNSET) is not v)
            return
        for k, v in effect:
            dict.__setitem__(kb, k, v)

    deduce_all_facts.deduce = deduce
    return deduce_all_facts


def tune():
    """Set this process's garbage collector thresholds (``GC_THRESHOLD``),
    sympy's copy of default facts (``_copy_facts``) and its deduction of
    new facts (``_remembered_deduction``)."""
    from sympy.core.assumptions import StdFactKB
    from sympy.core.facts import FactKB
    gc.set_threshold(*GC_THRESHOLD)
    StdFactKB.copy = _copy_facts
    if not hasattr(FactKB.deduce_all_facts, "deduce"):
        FactKB.deduce_all_facts = _remembered_deduction(FactKB.deduce_all_facts)
