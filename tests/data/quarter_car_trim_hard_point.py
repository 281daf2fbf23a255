"""``quarter_car_hard_point.py`` (link 1's chassis point height ``C1z`` a
hard point of ±10 mm) with the coil-over's preload the static trim along
the travel ``z`` (``s.trim``) instead of its hand-made parameter: the
trim's N = [I; −Φ_d⁻¹Φ_i] goes through the corner's loop, which ``C1z``
moves.  ``build(c1z=None)``: with a number, the design value is moved
there (still a hard point), for the warm-rebuild timing."""
import dataclasses
import importlib.util
from pathlib import Path


def _hard_point_module():
    path = Path(__file__).with_name("quarter_car_hard_point.py")
    spec = importlib.util.spec_from_file_location("quarter_car_hard_point", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(c1z=None):
    s = _hard_point_module().build(c1z)
    s.name = "quarter_car_trim_hard_point"
    s.springs = [dataclasses.replace(sd, preload=0) if sd.name == "coilover" else sd for sd in s.springs]
    s.parameters = [p for p in s.parameters if p.name != "coilover_preload"]
    s.trim("coilover", "z")
    return s
