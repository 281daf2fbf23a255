"""The four-bar of ``mechanisms/fourbar.py`` with its rocker length ``l3`` a
hard point: a tunable parameter with a declared range that enters the loop
constraints, so the FMU takes a new rocker length without a rebuild.

``build(l3=None)``: with a number, ``l3`` is structural at that value (the
independent reference the tests compare a re-tuned FMU with).
``l3_range``: the declared range (one that holds rocker lengths at which
the start cannot be assembled, for the refusal test)."""
from fmigen.model import Mechanism
from mechanisms import fourbar

L3_RANGE = (2.3, 2.7)


def build(l3=None, l3_range=L3_RANGE) -> Mechanism:
    if l3 is None:
        return fourbar.build(l3_range=l3_range, name="fourbar_hard_point")
    return fourbar.build(l3=l3, name="fourbar_l3_fixed")
