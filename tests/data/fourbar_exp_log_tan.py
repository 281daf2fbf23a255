"""The four-bar of ``mechanisms/fourbar.py`` with exp, log and tan in its
crank's moment (the stepping path) and in four outputs, one of them a
logarithm of a tunable parameter: the generated code prints them as the
runtime's fmigen_exp, fmigen_log and fmigen_tan, not the C library's."""
from sympy import cos, exp, log, sin, tan

from fmigen.model import Mechanism, t
from mechanisms import fourbar


def build() -> Mechanism:
    m = fourbar.build(name="fourbar_exp_log_tan")
    theta, alpha, phi = (m.coordinate_by_name(n).symbol for n in ("theta", "alpha", "phi"))
    l3, g = (next(p.symbol for p in m.parameters if p.name == n) for n in ("l3", "g"))
    # a moment that rises and falls with the crank angle, a damping whose
    # coefficient is a logarithm, and a coupler-angle term through tan
    m.generalized_force("theta", 0.5 * exp(sin(theta)) - 0.4 * log(2 + cos(theta)) * theta.diff(t)
                        + 0.2 * tan(0.3 * cos(alpha)))
    m.output("tan_out", tan(theta - 1))                   # through its poles as the crank turns
    m.output("exp_out", exp(3 * sin(alpha + theta)))      # e^-3 .. e^3: several exponents
    m.output("log_out", log(l3 * (1.2 + cos(phi - theta))))   # arguments 0.5 .. 5.5, across 1
    m.output("log10_g", log(g, 10))
    return m
