"""General 6-6 Stewart platform (paper 001, example B): planar base and
platform joints, degree-20 I/O polynomial, 40 assemblies.  The model lives in
``stewart_66.py`` (``build_platform``); this module only exposes it by name."""
from mechanisms.stewart_66 import build_platform as build  # noqa: F401
