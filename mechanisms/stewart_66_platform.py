"""General 6-6 Stewart platform (paper 001, example B): planar base and
platform joints, degree-20 I/O polynomial, 40 assemblies.  The model lives in
``stewart_66.py`` (``build_platform``); this module only exposes it by name."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("fmigen_mechanism_stewart_66_shared",
                                               Path(__file__).with_name("stewart_66.py"))
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)


def build():
    return _mod.build_platform()
