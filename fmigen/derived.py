"""The derived-model cache: what packaging needs of a derivation, on disk.

Deriving a model (equations of motion, triangularization, workspace cover, C
generation) takes from a second to a minute; packaging what it produced takes
about one.  So ``build`` keeps, under the Gröbner cache's root
(``groebner.CACHE_DIR``/derived), the generated code without its start and
default values (``codegen.finish`` appends those) and the FMU's interface
(independent coordinates, output names, ModelStructure dependencies), keyed
by

* the mechanism as ``pipeline.prepare_mechanism`` left it: coordinates with
  their assembled starts, parameters (structural ones with their values,
  tunable ones without: their values are only defaults in the FMU), inputs,
  bodies, constraints, loads, outputs, the independent choice, the Gröbner
  order, coordinate switching, and the unit scales the kinematics use;
* the derivation options (variable order, kinematics, Newton tolerance);
* the text of every fmigen module that takes part in the derivation, so an
  edit of the code invalidates every entry.

A hit returns a ``Derived`` (no symbolic model); callers that need the DAE,
partition or triangularization derive as before (with the Gröbner cache).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from . import codegen, groebner
from .fmu import Interface
from .structure import Dependencies

FORMAT = "derived-1"

#: fmigen modules that only consume a derived model (packaging, simulation,
#: reports, the CLI): editing them leaves the cache valid.  Every other
#: module, a new one included, is part of the key.  variables.py is one: the
#: variable table is made at packaging from the mechanism and the recorded
#: interface, and no entry holds a value reference.
CONSUMERS = {"__init__.py", "__main__.py", "cli.py", "fmu.py", "fmi3.py", "variables.py", "validate.py",
             "check.py", "bench.py", "bench_build.py", "reference.py", "pyruntime.py", "formulation.py",
             "progress.py", "sweep.py", "sweep_worker.py", "bundle.py"}


@dataclass
class Derived:
    """A cache hit: enough to package FMUs and report a build, no more."""
    mechanism: object
    generated: codegen.GeneratedModel
    interface: Interface
    start: dict
    #: per stage, what the recorded derivation took
    derivation_seconds: dict
    #: what this build took (reading the entry)
    seconds: dict = None

    @property
    def independent_names(self) -> list[str]:
        return [self.mechanism.coordinates[i].name for i in self.interface.independent]


def source_digest() -> str:
    """sha256 over the fmigen modules that take part in a derivation."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        if path.name not in CONSUMERS:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def key_text(mech, options: dict) -> str:
    """What the derived model is a function of (see the module docstring), as text."""
    from .workspace import mechanism_unit_scales
    s = sp.srepr
    w = mech.world
    model = {
        "name": mech.name,
        "coordinates": [[c.name, s(c.symbol), c.unit, repr(float(c.start))] for c in mech.coordinates],
        "parameters": [[p.name, s(p.symbol), p.unit, p.tunable, None if p.tunable else repr(p.value)]
                       for p in mech.parameters],
        "inputs": [[i.name, s(i.symbol), i.unit] for i in mech.inputs],
        "bodies": [[b.name, s(sp.sympify(b.mass)), s(b.inertia), s(tuple(b.com)), s(b.frame.dcm(w)),
                    s(b.frame.ang_vel_in(w).to_matrix(w))] for b in mech.bodies],
        "constraints": [[c.name, s(c.expr)] for c in mech.constraints],
        "point_forces": [s(tuple(f)) for f in mech.point_forces],
        "point_forces_in_base": [None if f is None else s(tuple(f)) for f in mech.point_forces_in_base],
        "bodies_in_base": [None if b.com_in_base is None else s(b.com_in_base) for b in mech.bodies],
        "floating_base": None if mech.floating_base is None else
        [mech.floating_base.body, mech.floating_base.coordinates, s(mech.floating_base.origin),
         s(mech.floating_base.angular_velocity)],
        "generalized_forces": {k: s(sp.sympify(v)) for k, v in mech.generalized_forces.items()},
        "gravity": s(tuple(mech.gravity)),
        "outputs": {k: s(sp.sympify(v)) for k, v in mech.outputs.items()},
        "independent": mech.independent, "dof": mech.dof, "groebner_order": mech.groebner_order,
        "kinematic": mech.kinematic, "switch_independent": mech.switch_independent,
        "newton_blocks": mech.newton_blocks, "angle_sums": mech.angle_sums,
        "unit_scales": [repr(float(x)) for x in mechanism_unit_scales(mech)],
    }
    return "\n".join([FORMAT, source_digest(), json.dumps(options, sort_keys=True, default=str),
                      json.dumps(model, sort_keys=True)])


def record(compiled) -> str:
    """The cache entry of a derivation (``pipeline.Compiled``), as JSON."""
    gen = compiled.generated
    iface = Interface.of(compiled.embedding)
    return json.dumps({
        "body": gen.body, "macros": gen.macros, "start": compiled.triangular.start,
        "independent": list(iface.independent), "outputs": iface.outputs,
        "dependencies": {"runtime": iface.dependencies.runtime, "initial": iface.dependencies.initial},
        "seconds": compiled.seconds})


def from_record(text: str, mech) -> Derived:
    """A ``Derived`` of ``mech`` (its current tunable values, input and
    velocity starts) from a cache entry."""
    d = json.loads(text)
    gen = codegen.finish(mech.name, d["body"], d["macros"], d["start"], mech, tuple(d["independent"]))
    iface = Interface(mech, tuple(d["independent"]), d["outputs"],
                      Dependencies(d["dependencies"]["runtime"], d["dependencies"]["initial"]))
    return Derived(mech, gen, iface, d["start"], d["seconds"])


def derive(mech, options: dict, compute, use_cache=True, reuse=True):
    """(model, hit): ``compute()`` (a ``pipeline.Compiled``) recorded under
    ``mech`` and ``options``; with ``reuse`` a recorded one is returned as a
    ``Derived`` instead of computing.  ``use_cache=False`` neither reads nor
    writes."""
    if not use_cache:
        return compute(), False
    key = key_text(mech, options)
    computed = []

    def compute_record():
        computed.append(compute())
        return record(computed[0])

    if not reuse:
        # derive, and leave the entry for a later build to reuse
        text, _, _ = groebner.disk_cache(key, compute_record, use_cache=True, subdir="derived",
                                         force=True)
        return computed[0], False
    text, _, hit = groebner.disk_cache(key, compute_record, use_cache=True, subdir="derived")
    return (from_record(text, mech), True) if hit else (computed[0], False)
