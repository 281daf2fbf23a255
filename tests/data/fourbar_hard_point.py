"""The four-bar of ``mechanisms/fourbar.py`` with its rocker length ``l3`` a
hard point: a tunable parameter with a declared range that enters the loop
constraints, so the FMU takes a new rocker length without a rebuild.

``build(l3=None)``: with a number, ``l3`` is structural at that value (the
independent reference the tests compare a re-tuned FMU with).
``l3_range``: the declared range (one that holds rocker lengths at which
the start cannot be assembled, for the refusal test)."""
import importlib.util
from pathlib import Path

from fmigen.model import Mechanism

L3_RANGE = (2.3, 2.7)


def _fourbar():
    path = Path(__file__).parents[2] / "mechanisms" / "fourbar.py"
    spec = importlib.util.spec_from_file_location("fourbar", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(l3=None, l3_range=L3_RANGE) -> Mechanism:
    if l3 is None:
        return _fourbar().build(l3_range=l3_range, name="fourbar_hard_point")
    return _fourbar().build(l3=l3, name="fourbar_l3_fixed")
