"""What a derivation is a function of, as text: the key of the build's caches.

``key_text(mech, options)`` is the derived-model cache's key (build/derived.py)
and the start assembly's (kinematics/assemble.py, ``start_assembly_hook``):
the mechanism as ``pipeline.prepare_mechanism`` left it, the options, and
``source_digest()``, the text of every fmigen module that takes part in a
derivation (all but ``CONSUMERS``), so an edit of the code invalidates every
entry, and the sympy and numpy versions.  It reads only the mechanism (and
its unit scales), so the stages that cache by it, early and late, can all
import it.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import sympy as sp
from sympy.printing.repr import ReprPrinter

FORMAT = "derived-1"

#: fmigen modules that only consume a derived model (packaging, simulation,
#: reports, the CLI): editing them leaves the cache valid.  Every other
#: module, a new one included, is part of the key.  variables.py is one: the
#: variable table is made at packaging from the mechanism and the recorded
#: interface, and no entry holds a value reference.
CONSUMERS = {"__init__.py", "__main__.py", "cli.py", "fmi/fmu.py", "fmi/fmi3.py", "fmi/description.py",
             "fmi/variables.py", "verify/validate.py", "verify/check.py", "tools/bench.py", "bench_build.py",
             "verify/reference.py", "pyfmu/pyruntime.py", "pyfmu/slave.py", "pyfmu/numeric.py",
             "generate/formulation.py", "build/progress.py", "tools/sweep.py", "tools/sweep_worker.py",
             "verify/bundle.py", "tools/modelica.py", "tools/modelica_printer.py", "tools/modelica_fmu.py",
             "tools/modelica_motion.py", "build/process.py",
             # the references and the peer: no module of the derivation imports them
             # (prescribed.py reads a DAE, but only the references call it)
             "verify/cartesian.py", "verify/cartesian_solve.py", "verify/prescribed.py", "verify/rigid_motion.py",
             "verify/mujoco_peer.py", "verify/trims.py", "verify/energy.py", "verify/compare.py",
             "verify/report.py"}


@functools.cache
def source_digest() -> str:
    """sha256 over the fmigen modules that take part in a derivation: every
    module of the package but CONSUMERS.  Once per process: the sources do
    not change under a running build, and a build keys five to seven
    entries."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent   # the fmigen package
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if name not in CONSUMERS:
            h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


class _SharedRepr(ReprPrinter):
    """``sp.srepr(expr, order="none")``, the same text, with each
    sub-expression object printed once for all the expressions one printer
    prints (a dict by identity that holds the objects, so no id is reused
    while it lives).

    Why order="none": the arguments in sympy's own canonical order; the
    printer's term ordering was most of srepr's time on a large model, and
    adds nothing to a key (equal expressions have their arguments in the
    same order, whatever process built them).  Why shared: the expressions a
    derivation builds share their sub-expression objects (a vehicle's joint
    reactions repeat the same products of its rotations), which srepr
    prints again at every occurrence.  The repr printer's text of a node
    depends on the node alone (no precedence, no state), so a printed
    sub-expression's text can stand for it."""

    def __init__(self):
        super().__init__({"order": "none"})
        self._printed = {}

    def _print(self, expr, **kwargs):
        if kwargs or not isinstance(expr, sp.Basic):
            return super()._print(expr, **kwargs)
        found = self._printed.get(id(expr))
        if found is not None and found[0] is expr:
            return found[1]
        text = super()._print(expr)
        self._printed[id(expr)] = (expr, text)
        return text


def key_text(mech, options: dict, start: bool = True) -> str:
    """What the derived model is a function of (build/derived.py's docstring), as text.

    ``start=False``: without what follows from the start (the coordinates'
    start values, the described start, the unit scales the starts size):
    the key of a stage whose result is the same from every start, the
    equations of motion (``derived.dae_of``), so that a build after a
    start-value change does not derive them again."""
    from fmigen.derive.workspace import mechanism_unit_scales
    # sp.srepr(expr, order="none") of each expression, through one printer
    # that prints every sub-expression object once (_SharedRepr)
    s = _SharedRepr().doprint
    w = mech.world
    model = {
        "name": mech.name,
        "coordinates": [[c.name, s(c.symbol), c.unit, *([repr(float(c.start))] if start else [])]
                        for c in mech.coordinates],
        # (a hard point's range: what the build swept and the FMU accepts)
        "parameters": [[p.name, s(p.symbol), p.unit, p.tunable, None if p.tunable else repr(p.value),
                        *([list(map(repr, p.range))] if p.range is not None else [])]
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
        "reactions": list(mech.reactions),
        "independent": mech.independent, "dof": mech.dof, "groebner_order": mech.groebner_order,
        "kinematic": mech.kinematic, "switch_independent": mech.switch_independent,
        "newton_blocks": mech.newton_blocks, "angle_sums": mech.angle_sums,
        "float_rule": mech.float_rule,
    }
    if start:
        # the build checks its start against the described one: an entry
        # holds only for the description it was checked against
        model["described_start"] = None if mech.described_start is None else \
            {k: repr(float(v)) for k, v in mech.described_start.items()}
        model["unit_scales"] = [repr(float(x)) for x in mechanism_unit_scales(mech)]
        # a hard point's default is the start's geometry: the derivation
        # assembles the start there, and the code holds that assembly (the
        # same coordinate guesses at another default assemble elsewhere)
        hard_points = {p.name: repr(float(p.value)) for p in mech.parameters if p.is_hard_point}
        if hard_points:
            model["hard_points"] = hard_points
    if mech.redundant_constraints:
        # only when there are any, as below; the DAE's Phi_redundant is built from them
        model["redundant_constraints"] = [[c.name, s(c.expr)] for c in mech.redundant_constraints]
    if mech.prescribed:
        # only when there are any: the keys of every other mechanism stay as they were
        model["prescribed"] = [[p.coordinate, p.input, p.drive, repr(float(p.time_constant))] for p in mech.prescribed]
    if mech.trims:
        model["trims"] = [[tr.spring, tr.coordinate, tr.input] for tr in mech.trims]
    import numpy
    # sympy prints the generated C and numpy computes the workspace cover
    # that picks its sequences: another version may make other bytes
    return "\n".join([FORMAT, source_digest(), sp.__version__, numpy.__version__,
                      json.dumps(options, sort_keys=True, default=str),
                      json.dumps(model, sort_keys=True)])
