"""The mass checks an FMU runs when an importer sets its parameters, and the build's own run of them.

Every body's mass must be >= 0 and its central inertia positive semidefinite
(``dae.mass_checks``).  The conditions that read tunable parameters are
generated twice, the same conditions in the same order: in C for model.c
(``mass_check_code``) and in Python for the Python runtime
(``mass_check_source``).  The build evaluates the Python one at the
parameters' defaults (``mass_check_defaults``): in doubles, as both FMUs
will, because an exact check alone passes a mass that is 0 in exact
arithmetic and -1.1e-16 in doubles, which the FMU would then refuse.
"""
from __future__ import annotations

import json
import math

import sympy as sp

from fmigen.derive.dae import PSD3_MINORS, mass_checks, psd3
from fmigen.generate import elementary
from fmigen.generate.printer import c, pyexpr
from fmigen.model import ModelError


def runtime_mass_checks(mech, printer) -> list[tuple]:
    """The conditions of ``dae.mass_checks`` an FMU tests at run time, those
    that read tunable parameters (the others hold once the build has checked
    them): (1 + index, the check, its expressions printed over p[k]), the
    same for the C and the Python runtime's ``fmigen_mass_check``."""
    tunable = [p_ for p_ in mech.parameters if p_.tunable]
    to_p = {p_.symbol: sp.Symbol(f"p[{k}]") for k, p_ in enumerate(tunable)}
    checks = [chk for chk in mass_checks(mech) if chk.parameters]
    return [(k, chk, [printer(sp.sympify(e).xreplace(to_p)) for e in chk.exprs])
            for k, chk in enumerate(checks, start=1)]


def mass_check_code(mech) -> tuple[str, int]:
    """``fmigen_mass_check``: the conditions of ``dae.mass_checks`` that read
    tunable parameters, in C over p, for the FMU to test the parameters an
    importer sets (the others hold once the build has checked them), and
    their labels for its messages.  Returns (code, how many)."""
    checks = runtime_mass_checks(mech, c)
    body = []
    for k, chk, exprs in checks:
        if chk.kind == "mass":
            body.append(f"    {{ const double m = {exprs[0]}; if (!(m >= 0.0 && m <= 1.7976931348623157e308)) "
                        f"{{ *value = m; *minor = -1; return {k}; }} }}")
        else:
            body.append(f"    {{ const double I[6] = {{{', '.join(exprs)}}}; const int k = fmigen_psd3(I, value); "
                        f"if (k >= 0) {{ *minor = k; return {k}; }} }}")
    labels = ", ".join(json.dumps(chk.label) for _, chk, _ in checks) or '""'
    code = ("/* every body's mass >= 0 (and finite) and central inertia positive semidefinite at the tunable\n"
            " * parameters p (dae.mass_checks): 0, or 1 + the first condition that fails, *value\n"
            " * the mass or the principal minor that is negative, *minor its index (fmigen_psd3)\n"
            " * or -1 for a mass */\n"
            "int fmigen_mass_check(const double *p, double *value, int *minor)\n{\n"
            "    (void)p; (void)value; (void)minor;\n" + "\n".join(body) + ("\n" if body else "") +
            "    return 0;\n}\n"
            f"const char *const fmigen_mass_check_labels[] = {{{labels}}};\n"
            "/* fmigen_psd3's minors in its order, as messages name them */\n"
            f"const char *const fmigen_psd3_minors[] = {{{', '.join(json.dumps(n) for n in PSD3_MINORS)}}};\n")
    return code, len(checks)


def checked_value(f):
    """f() (an expression of a mass check), or NaN where Python raises and C
    gives NaN or an infinity (sqrt of a negative, a division by zero, an
    overflow): the condition then fails as in the C FMU, instead of the
    exception turning into fmi2Fatal with Python's message."""
    try:
        return f()
    except (ArithmeticError, ValueError):
        return math.nan


def mass_check_source(mech) -> tuple[str, list[str]]:
    """``fmigen_mass_check(p)`` -> (0 or 1 + the condition that fails, the
    mass or negative principal minor, the minor's index or -1): the C FMU's
    (``mass_check_code`` above, the same conditions in the same order),
    and their labels."""
    checks = runtime_mass_checks(mech, pyexpr)
    body = []
    for k, chk, exprs in checks:
        # (a number as it is; an expression of p through checked_value)
        values = ", ".join(f"checked_value(lambda: {e})" if "p[" in e else e for e in exprs)
        if chk.kind == "mass":
            body += [f"    m = {values}", "    if not (0.0 <= m <= 1.7976931348623157e308):",
                     f"        return {k}, m, -1"]
        else:
            body += [f"    k, value = psd3(({values}))", "    if k >= 0:", f"        return {k}, value, k"]
    return ("def fmigen_mass_check(p):\n" + "\n".join(body + ["    return 0, 0.0, -1"]) + "\n",
            [chk.label for _, chk, _ in checks])


def mass_check_defaults(mech):
    """The FMU's own test (``fmigen_mass_check``, in doubles as both runtimes
    evaluate it) at the tunable parameters' defaults, for the build: the
    exact check of ``dae.check_mass_properties`` alone would pass a mass
    that is 0 in exact arithmetic and -1.1e-16 in doubles, which the FMU
    would then run with and refuse to be set to.  Raises ModelError."""
    source, labels = mass_check_source(mech)
    if not labels:
        return
    namespace = {name: getattr(math, name) for name in dir(math) if not name.startswith("_")}
    namespace.update(psd3=psd3, checked_value=checked_value, fabs=math.fabs)
    # the printer's fmigen_sin, fmigen_exp, ...: the ports of the C's (pyexpr)
    namespace.update({name: getattr(elementary, name) for name in dir(elementary) if name.startswith("fmigen_")})
    exec(source, namespace)   # noqa: S102 - our own generated code
    j, value, minor = namespace["fmigen_mass_check"]([float(p_.value) for p_ in mech.parameters if p_.tunable])
    if j and minor < 0:
        raise ModelError(f"'{mech.name}': {labels[j - 1]} is {value:g} at the default parameter values, "
                         "evaluated in doubles as the FMU does; a mass must be >= 0")
    if j:
        raise ModelError(f"'{mech.name}': {labels[j - 1]} is not positive semidefinite at the default parameter "
                         f"values, evaluated in doubles as the FMU does: {PSD3_MINORS[minor]} = {value:g} < 0")
