"""The four-bar of ``mechanisms/fourbar.py`` with three outputs that are an
asin, an acos and an atan of its angles, as the vehicle's wheel pitch is an
asin of its rotation matrix: the generated code prints them as the
runtime's fmigen_asin, fmigen_acos and fmigen_atan, not the C library's."""
from sympy import acos, asin, atan, cos, sin

from fmigen.model import Mechanism
from mechanisms import fourbar


def build() -> Mechanism:
    m = fourbar.build(name="fourbar_inverse_trig")
    theta, alpha, phi = (m.coordinate_by_name(n).symbol for n in ("theta", "alpha", "phi"))
    m.output("asin_out", asin(0.2 * sin(theta) * cos(alpha)))
    m.output("acos_out", acos(0.9 * cos(phi + theta)))
    m.output("atan_out", atan(3.0 * sin(alpha) + theta))
    return m
