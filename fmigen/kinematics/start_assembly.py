"""Which assembly a build starts from: every real assembly of the described
start (assemble.assemble), the one nearest the described angles chosen, and
a warning or an error when the choice is not clear.
"""

from __future__ import annotations

import copy
import json
import math
import warnings

import mpmath as mp
import sympy as sp

from fmigen.derive.cache_key import key_text
from fmigen.kinematics import groebner
from fmigen.kinematics.assemble import AssemblyError, AssemblyWarning, PolySystem, assemble, polynomial_system
from fmigen.kinematics.groebner import GroebnerError, singular_available
from fmigen.model import Mechanism, ModelError


def _angle_distance(a, b):
    d = (a - b) % (2 * math.pi)
    return min(d, 2 * math.pi - d)


def choose_start_assembly(mech: Mechanism, close_tol: float = 1e-2,
                          cpu_limit: float | None = None,
                          log=None, apply: bool = True, system: PolySystem | None = None,
                          accept=None, accept_what: str = "") -> dict:
    """All real assemblies at the start input; the one nearest the user's
    guesses (max over dependent coordinates, angles compared modulo 2π) is
    returned and, with ``apply``, written into the dependent coordinates'
    start values.  Warns (``AssemblyWarning`` and the log) when another real
    assembly is within ``close_tol`` of the chosen one or when the guesses are
    about equally far from two assemblies.

    ``accept`` (values by coordinate name -> bool): only the real assemblies
    it accepts compete (a joint system's branch hints, ``accept_what``
    describes them for the error when none is accepted)."""
    log = log or (lambda msg: None)
    res = _all_assemblies(mech, cpu_limit, system)
    reals = res.real_solutions
    if not reals:
        raise AssemblyError(f"'{mech.name}' has no real assembly at the start input "
                            f"({', '.join(f'{k}={v:g}' for k, v in res.inputs.items())}); "
                            f"{len(res.solutions)} complex ones")
    if accept is not None:
        accepted = [s for s in reals if accept({n: float(mp.re(v)) for n, v in s.values.items()})]
        if not accepted:
            raise AssemblyError(f"'{mech.name}': none of the {len(reals)} real assemblies at the start input "
                                f"satisfies the branch hints ({accept_what or 'accept'})")
        reals = accepted
    units = {c.name: c.unit for c in mech.coordinates}
    guesses = {c.name: c.start for c in mech.coordinates}

    def dist(sol_a, vals_b):
        ds = []
        for n in sol_a.values:
            if n in res.inputs:
                continue
            a, b = float(mp.re(sol_a.values[n])), vals_b[n]
            ds.append(_angle_distance(a, b) if units[n] == "rad" else abs(a - b))
        return max(ds, default=0.0)

    ranked = sorted(reals, key=lambda s: dist(s, guesses))
    best = ranked[0]
    chosen = {n: float(mp.re(v)) for n, v in best.values.items()}
    log(f"assembly: {len(reals)} real of {len(res.solutions)} configurations at the start; "
        f"nearest the guesses is {', '.join(f'{n}={v:.6g}' for n, v in chosen.items() if n not in res.inputs)} "
        f"(distance {dist(best, guesses):.3g})")
    for other in ranked[1:]:
        sep = dist(other, chosen)
        ambiguous = dist(other, guesses) - dist(best, guesses) < close_tol
        if sep < close_tol or ambiguous:
            msg = (f"'{mech.name}': two real assemblies at the start are close "
                   f"(separation {sep:.3g}; distances from the guesses {dist(best, guesses):.3g} and "
                   f"{dist(other, guesses):.3g}): the branch choice may be ambiguous or near a singularity")
            log("warning: " + msg)
            warnings.warn(msg, AssemblyWarning, stacklevel=2)
            break
    if apply:
        for n, v in chosen.items():
            if n not in res.inputs:
                mech.coordinate_by_name(n).start = v
    return chosen


#: ``assemble``'s results in this process, by everything they are a function
#: of (``_solved_key``).  Why: a joint system's build solves the same
#: system at the same start input twice, for its branch hints
#: (``joint_model._start_assembly``) and for the start assembly
#: (``start_assembly_hook``, whose disk entry is keyed by the starts the
#: first one wrote).  A handful, oldest dropped first.
_SOLVED: dict = {}
_SOLVED_KEPT = 8


def _all_assemblies(mech: Mechanism, cpu_limit, system: PolySystem | None):
    """``assemble(mech, cpu_limit=cpu_limit, system=system)``, solved once
    per process (``_SOLVED``)."""
    system = system or polynomial_system(mech)
    key = _solved_key(system, cpu_limit)
    if key not in _SOLVED:
        result = assemble(mech, cpu_limit=cpu_limit, system=system)
        while len(_SOLVED) >= _SOLVED_KEPT:
            _SOLVED.pop(next(iter(_SOLVED)))
        _SOLVED[key] = result
    return copy.deepcopy(_SOLVED[key])


def _solved_key(system: PolySystem, cpu_limit) -> str:
    """What ``assemble`` of ``system`` reads: the polynomials (exact,
    ``srepr``), their variables and names, the known values, the residual
    equations, the hidden-variable hint, the mechanism's name (in the
    result) and the CPU limit."""
    mech = system.mechanism
    return repr((mech.name, getattr(mech.assembly_hints, "hidden", None), [sp.srepr(p) for p in system.polys],
                 [sp.srepr(v) for v in system.variables], list(system.names), list(system.unknowns),
                 [[k, repr(v)] for k, v in system.known.items()],
                 {k: [str(x) for x in v] for k, v in system.recover.items()},
                 [[n, sp.srepr(e)] for n, e, _ in system.residual_exprs],
                 [[k, sp.srepr(v)] for k, v in system.coord_symbols.items()], repr(cpu_limit)))


def start_assembly_hook(mech: Mechanism, log=None, max_variables: int = 12,
                        cpu_limit: float | None = None, use_cache: bool = False):
    """Build-time check called by ``pipeline.prepare_mechanism``: list the real
    assemblies at the start input and take the one nearest the guesses
    (``choose_start_assembly``).  Only for small constraint systems (at most
    ``max_variables`` polynomial variables; bigger ones, like a Stewart
    platform's 18 leg angles, are left to the triangular stage), and not
    fatal when it cannot run (the build goes on with the user's guesses) --
    except when Singular reaches its CPU-time safety limit: skipping then
    would make the start, and the model, depend on how fast the machine is.

    ``use_cache``: the outcome (every coordinate's start, the log lines and
    warnings) is kept under the Gröbner cache's root by the mechanism as
    it stands (``cache_key.key_text``, with every parameter's and input's
    value and the assembly hints): a warm build otherwise spent more time
    here (sympy's Jacobian, the Sylvester matrix) than packaging takes."""
    log = log or (lambda msg: None)
    if use_cache:
        key = key_text(mech, {
            "stage": "start_assembly_hook", "max_variables": max_variables, "cpu_limit": cpu_limit,
            "parameter_values": [[p.name, repr(p.value)] for p in mech.parameters],
            "input_values": [[i.name, repr(i.start)] for i in mech.inputs],
            "assembly_hints": repr(mech.assembly_hints), "singular": singular_available()})

        def compute():
            lines = []
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always", AssemblyWarning)
                chosen = start_assembly_hook(mech, lines.append, max_variables, cpu_limit)
            for w in got:
                if not issubclass(w.category, AssemblyWarning):
                    warnings.warn(w.message, w.category, stacklevel=2)
            return json.dumps({"starts": [[c.name, repr(float(c.start))] for c in mech.coordinates],
                               "chosen": None if chosen is None else [[n, repr(v)] for n, v in chosen.items()],
                               "log": lines,
                               "warnings": [str(w.message) for w in got if issubclass(w.category, AssemblyWarning)]})
        text, _, _ = groebner.disk_cache(key, compute, subdir="start_assembly")
        out = json.loads(text)
        starts = dict(out["starts"])
        for c in mech.coordinates:
            c.start = float(starts[c.name])
        for line in out["log"]:
            log(line)
        for msg in out["warnings"]:
            warnings.warn(msg, AssemblyWarning, stacklevel=2)
        return None if out["chosen"] is None else {n: float(v) for n, v in out["chosen"]}
    try:
        if not mech.constraints or not singular_available():
            return None
        # every dependent coordinate is at least one polynomial variable:
        # skip a big system (Stewart: 18) before polynomializing it
        dependent = len(mech.coordinates) - mech.dof if mech.dof is not None else 0
        if dependent > max_variables:
            log(f"assembly check skipped: {dependent} dependent coordinates > {max_variables}")
            return None
        system = polynomial_system(mech)
        if len(system.variables) > max_variables:
            log(f"assembly check skipped: {len(system.variables)} polynomial variables > {max_variables}")
            return None
        return choose_start_assembly(mech, cpu_limit=cpu_limit, log=log, system=system)
    except groebner.GroebnerLimit as e:
        raise AssemblyError(f"'{mech.name}': the start assembly check did not finish ({e})") from None
    except (ModelError, GroebnerError, OSError) as e:
        log(f"assembly check skipped: {e}")
        return None


def parse_inputs(text: str | None) -> dict:
    """``name=value,...``; values in SI units, angles in radians (a ``deg``
    suffix converts degrees)."""
    out = {}
    for item in filter(None, (x.strip() for x in (text or "").split(","))):
        if "=" not in item:
            raise AssemblyError(f"--inputs wants name=value pairs, got '{item}'")
        k, v = (x.strip() for x in item.split("=", 1))
        try:
            out[k] = math.radians(float(v[:-3])) if v.endswith("deg") else float(v)
        except ValueError:
            raise AssemblyError(f"--inputs: '{v}' is not a number (for {k})") from None
        if not math.isfinite(out[k]):
            raise AssemblyError(f"--inputs: '{v}' is not a finite number (for {k})")
    return out
