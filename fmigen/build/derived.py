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

Beside it (``bodies``), the generated body is kept a second time, keyed
without the start (``body_key``): a build at another start derives again,
since the start assembly, the workspace sweep and the cover's decisions
follow the start, but takes that body when what the derivation decided at
its start is what the body was generated from, and writes its solution
start in (``body_of``).

The same root (``joint_models``) keeps a second, earlier cache: the
low-level ``Mechanism`` that ``joint_model.to_mechanism`` makes of a
``JointSystem`` (``mechanism_of``), keyed by the joint system itself with
the same source digest.  Why: for a large joint system the conversion,
not the derivation, is what a warm build waits for (the vehicle: ~9 s of
sympy differentiation and constraint selection before the derived-model key
can even be computed).  A second entry per system is keyed without the
coordinates' start values and replayed at another start
(``joint_model.at_start``): a start change redoes only the conversion's
start-dependent steps (row selection, start checks, start assembly).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import platform
import threading
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from fmigen.derive.cache_key import key_text, source_digest
from fmigen.derive.dae import DERIVATIVES
from fmigen.fmi.fmu import Interface
from fmigen.fmi.structure import Dependencies
from fmigen.generate import codegen
from fmigen.kinematics import groebner

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


#: the joint-system conversion's entries (``mechanism_of``): a new format
#: changes every key
JOINT_FORMAT = "joint-model-1"
#: the start-free entries' format (``mechanism_of``)
JOINT_START_FREE_FORMAT = "joint-model-start-free-1"


def mechanism_of(system, use_cache=True):
    """``joint_model.to_mechanism(system)``, read from the cache when the same
    joint system was converted by the same code before, or converted at
    other start values (``joint_model.at_start``).

    The key is the sha256 of the joint system's canonical text
    (``_canonical``: every body, marker, joint, load, output and option it
    holds; the conversion reads nothing else), the fmigen source digest, and
    the sympy, numpy and Python versions (the start projection is numeric).
    A second entry is keyed by the same text without the coordinates'
    start values (whether a coordinate has one stays: the spanning tree
    prefers such joints): the conversion at some start with its
    ``joint_start.StartFree`` record, from which ``at_start`` makes the
    conversion at this start when the start-dependent selection agrees
    (else the system is converted in full).  A joint system holding
    something the text cannot describe is converted every time.  An entry
    is a pickle, written atomically; one that cannot be read is converted
    again and rewritten.  (Like any local cache, its directory must be the
    user's own: a pickle runs code when read.)"""
    from fmigen.model import Mechanism

    def convert(system):
        # imported here: a build that reads the entry does not wait for the
        # conversion's imports (scipy among them)
        from fmigen.frontends.joint_model import convert
        return convert(system)
    if not use_cache:
        return convert(system)[0]
    try:
        path, free_path = (_joint_entry(system, JOINT_FORMAT, True),
                           _joint_entry(system, JOINT_START_FREE_FORMAT, False))
    except (TypeError, ValueError, RecursionError):   # something the key cannot describe: no entry
        return convert(system)[0]
    mech = _read_pickle(path)
    if isinstance(mech, Mechanism):
        return mech
    entry = _read_pickle(free_path)
    if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], Mechanism):
        from fmigen.frontends.joint_model import at_start
        mech = at_start(system, *entry)
        if mech is not None:
            _write_pickle(path, mech)
            return mech
    mech, record = convert(system)
    _write_pickle(path, mech)
    if record is not None:
        _write_pickle(free_path, (mech, record))
    return mech


def _joint_entry(system, form: str, starts: bool):
    """The path of a joint-system conversion's entry: ``form`` and the
    system's canonical text, with or without its start values."""
    import numpy
    data = json.dumps(_canonical(system, starts))
    h = hashlib.sha256()
    for part in (form, source_digest(), sp.__version__, numpy.__version__, platform.python_version(), data):
        h.update(part.encode() + b"\0")
    return groebner.CACHE_DIR / "joint_models" / f"{h.hexdigest()}.pickle"


def _read_pickle(path):
    """The object pickled at ``path``; None when there is none or it cannot
    be read (a damaged or foreign entry is converted again and rewritten)."""
    try:
        return pickle.loads(path.read_bytes())
    except Exception:
        return None


def _write_pickle(path, obj):
    """Write ``obj``'s pickle to ``path`` atomically.  The cache is
    optional: an object that does not pickle, or a directory that cannot be
    written, costs the next load a conversion, never this one its result."""
    try:
        blob = pickle.dumps(obj, protocol=4)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(blob)
        tmp.replace(path)
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, OSError):
        pass


#: the DAE entries' format (``dae_of``): a new format changes every key
DAE_FORMAT = "dae-2"
#: what a DAE entry holds besides the mechanism (the caller's) and the
#: tunable and input defaults (set from the caller's mechanism): its fields
#: and the derivatives every derivation and reference reads
_DAE_DERIVED = DERIVATIVES


def dae_of(mech, use_cache=True):
    """``dae.build_dae(mech)`` with its Φ_q, Φ_t and γ differentiated, read
    from the cache when the same mechanism was derived by the same code
    before.  Why: every process that needs the symbolic model, the test
    suite's workers, the CLI processes they start and ``validate``'s
    reference after a derived-model hit, differentiated the same mechanisms
    again (the quarter car: ~6 s of sympy; its entry reads in ~0.3 s).

    The key is ``key_text(mech, ..., start=False)`` (build/derived.py's
    docstring: the equations' sources and structural values, the fmigen
    source digest, the sympy and numpy versions; not the start, which no
    field of a DAE depends on) with this format and the Python version.
    Not in the key, so taken from ``mech`` on a hit: the mechanism itself,
    its start, and the tunable parameters' and inputs' values, which the
    DAE holds as defaults only; the checks that read them run again as
    build_dae runs them (``check_dof`` at the start guesses,
    ``check_mass_properties`` at the defaults), so a hit raises what a
    derivation would.  Why without the start: a build after a start-value
    change derived the equations of motion again (the Stewart platform:
    ~10 s of CPU), though they are the same.  An entry is a pickle of the fields,
    written atomically; one that cannot be read is derived and rewritten.
    (Like any local cache, its directory must be the user's own: a pickle
    runs code when read.)"""
    from fmigen.derive.dae import DAE, build_dae, check_dof, check_mass_properties
    if not use_cache:
        return build_dae(mech)
    try:
        key = key_text(mech, {"dae": DAE_FORMAT, "python": platform.python_version()}, start=False)
    except (TypeError, ValueError):   # something the key cannot describe: no entry
        return build_dae(mech)
    path = groebner.cache_path(key, "dae", suffix=".pickle")
    if path.exists():
        try:
            fields = pickle.loads(path.read_bytes())
            dae = DAE(mechanism=mech, tunable_values=[float(p.value) for p in mech.parameters if p.tunable],
                      input_values=[i.start for i in mech.inputs],
                      **{f.name: fields[f.name] for f in dataclasses.fields(DAE)
                         if f.name not in ("mechanism", "tunable_values", "input_values")})
            for name in _DAE_DERIVED:
                dae.__dict__[name] = fields[name]
        except Exception:   # a damaged or foreign entry: derive and rewrite it
            pass
        else:
            check_dof(dae)
            check_mass_properties(mech)
            return dae
    dae = build_dae(mech)
    fields = {f.name: getattr(dae, f.name) for f in dataclasses.fields(DAE)
              if f.name not in ("mechanism", "tunable_values", "input_values")}
    fields.update({name: getattr(dae, name) for name in _DAE_DERIVED})
    # the cache is optional: an expression that does not pickle, or a
    # directory that cannot be written, costs a later process the
    # derivation, never this one its result
    try:
        groebner.write_atomically(path, pickle.dumps(fields, protocol=4))
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError, OSError):
        pass
    return dae


def _canonical(x, starts=True):
    """A joint system as JSON-able data that is the same for equal systems:
    sympy objects by ``srepr``, dataclasses by their fields, a marker by its
    body's name (not the body: the body lists its markers).  Why not the
    pickle: its bytes follow object identity (sympy's cache hands a second
    build the first one's objects, which pickle as references), so the same
    mechanism built twice in one process pickled differently.  Without
    ``starts``, a joint coordinate's start is only whether it has one, and
    a hard point's value is left out."""
    from fmigen.joints import JointCoordinate, Marker
    from fmigen.model import Parameter
    if isinstance(x, Marker):
        return ["Marker", x.body.name, x.name, _canonical(x.position), _canonical(x.rotation)]
    if isinstance(x, JointCoordinate) and not starts:
        x = dataclasses.replace(x, start=x.start is not None)
    if isinstance(x, Parameter) and x.is_hard_point and not starts:
        # a hard point's value is the start's geometry: the conversion is
        # symbolic in it and ``at_start`` replays what follows from it
        x = dataclasses.replace(x, value=None)
    if isinstance(x, (sp.Basic, sp.MatrixBase)):
        return sp.srepr(x)
    if isinstance(x, (bool, int, str)) or x is None:
        return x
    if isinstance(x, float):   # tagged: the float 1.0 is not the string "1.0"
        return ["float", repr(x)]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__] + [_canonical(v, starts) for v in x]
    if isinstance(x, dict):
        return [[_canonical(k, starts), _canonical(v, starts)] for k, v in x.items()]
    if dataclasses.is_dataclass(x):
        return [type(x).__name__] + [[f.name, _canonical(getattr(x, f.name), starts)] for f in dataclasses.fields(x)]
    raise TypeError(f"no canonical form of {type(x).__name__}")


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


def generated_of(mech, options: dict, emb, tri):
    """The C of a derivation of ``mech`` with ``options`` (``pipeline.compile_model``'s
    stage 4: ``emb`` its embedding, ``tri`` its triangularization), from the
    entry a build or an earlier ``compile_model`` recorded, finished
    (``codegen.finish``) with ``mech``'s current default values, and
    whether it is this mechanism's own entry (False: a body recorded at
    another start, which the caller records as this start's); None without
    an entry.  Why: generating the C is most of a large mechanism's
    derivation (the five-link's ~80 %), and the test suite's worker processes
    and the CLI processes it starts derive the same models again and again.
    The caller derived the rest itself.  First the entry of this very
    mechanism (its start in the key), when its start and independent
    coordinates are this derivation's; else the body recorded at another
    start (``body_of``); an entry that cannot be read is no entry.  Either
    way what is missing is generated again (and recorded)."""
    text = _entry_text(mech, options)
    if text is not None:
        try:
            d = json.loads(text)
            if d["start"] == tri.start and tuple(d["independent"]) == tuple(emb.independent):
                return codegen.finish(mech.name, str(d["body"]), dict(d["macros"]), tri.start, mech,
                                      tuple(emb.independent)), True
        except (ValueError, KeyError, TypeError):
            pass
    gen = body_of(mech, options, emb, tri)
    return None if gen is None else (gen, False)


#: the format of ``partition_graph``'s entries
GRAPH_FORMAT = "partition-graph-1"


def partition_graph(inc) -> dict:
    """``partition.matching_and_components(inc)`` (the partition's matching
    and strongly connected components of a constraint incidence), kept in
    the cache by the incidence, the scipy version and the derivation's
    sources (``source_digest``, as every derived entry: an edit of
    ``matching_and_components`` must not be served an old graph).  Why: a build after a start change partitions again, and
    importing scipy's sparse graphs (and what scipy's own imports pull in)
    was about a sixth of the four-bar's such rebuild, for the same graph."""
    from fmigen.derive.partition import matching_and_components
    version = _scipy_version_text()
    if version is None:   # no version to key by: no entry
        return matching_and_components(inc)
    key = "\n".join([GRAPH_FORMAT, version, source_digest(), json.dumps(inc.tolist())])
    text, _, _ = groebner.disk_cache(key, lambda: json.dumps(matching_and_components(inc)), subdir="partition")
    return json.loads(text)


def _scipy_version_text() -> str | None:
    """The text of the installed scipy's ``scipy/version.py`` (its version
    and git revision), found without importing scipy; None without one.
    Not ``importlib.metadata.version``: importing ``importlib.metadata``
    (its email parser among it) took a build after a start change longer
    than reading the graph's entry."""
    import importlib.util
    spec = importlib.util.find_spec("scipy")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        try:
            return (Path(folder) / "version.py").read_text()
        except OSError:
            continue
    return None


#: the start-free body entries' format (``body_key``): a new format changes every key
BODY_FORMAT = "body-1"


def body_key(mech, options: dict, emb, tri) -> str:
    """What the generated body is a function of, the start left out where
    it is not read: ``key_text(mech, options, start=False)`` (the
    equations, structural values, options and code; the key of the
    equations of motion too), and what a derivation at a start decides
    that the generator reads (``codegen.generate``):

    * the partition: the independent coordinates (chosen at the start when
      the mechanism names none) and each block's equations and unknowns;
    * per block, its method and the workspace cover's decisions, the exact
      completion taken or not and Newton first or not
      (``triangular.cover_workspace``).  These come from the sweep of the
      workspace from the start (``workspace.sweep``), whose points follow
      the start, so they are taken from this derivation, never assumed;
    * the unit scales (a length's is the largest start of its unit), which
      the continuity tolerances hold as constants;
    * with coordinate switching, the start itself: an alternative
      partition's solution start is in the body, and its triangularization
      and cover start from the primary's start assembly.

    The rest of the triangularization (bases, sequences, completions) is a
    function of the first part: the same Gröbner input gives the same
    basis, the start only picks the branch (``choose_branches``:
    ``tri.start``).  The one line of the body that follows the start
    assembly itself, ``fmigen_sol_start``, is written again (``body_of``)."""
    from fmigen.derive.workspace import unit_scales
    depends = {
        "format": BODY_FORMAT,
        "independent": [int(i) for i in emb.independent],
        "blocks": [[[int(j) for j in b.block.equations], [int(i) for i in b.block.unknowns], b.method,
                    b.completion is not None, bool(b.newton_first)]
                   for b in tri.blocks],
        "unit_scales": [repr(float(x)) for x in unit_scales(emb.dae)],
        "switching_start": ({k: repr(float(v)) for k, v in sorted(tri.start.items())}
                            if mech.switch_independent else None),
    }
    return key_text(mech, {**options, "body": depends}, start=False)


def body_of(mech, options: dict, emb, tri):
    """The C of this derivation from a body recorded at another start
    (``body_key``), its solution start written for ``tri.start``
    (``codegen.solution_start_definition``) and finished; None without
    one.  The same bytes as generating: what else of the body follows the
    start is in the key."""
    try:
        key = body_key(mech, options, emb, tri)
    except (TypeError, ValueError):   # something the key cannot describe: no entry
        return None
    try:
        d = json.loads(groebner.cache_path(key, "bodies").read_text())
        body, macros = str(d["body"]), dict(d["macros"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    line = codegen.solution_start_definition(emb, tri) + "\n"
    body, count = codegen.SOLUTION_START.subn(lambda _: line, body)
    if count != 1:
        return None
    return codegen.finish(mech.name, body, macros, tri.start, mech, tuple(emb.independent))


def _remember_body(compiled, options: dict):
    """Record ``compiled``'s body under ``body_key``; not when its solution
    start is not the line ``solution_start_definition`` writes (then a body
    taken at another start could not be given its own)."""
    gen = compiled.generated
    if codegen.SOLUTION_START.findall(gen.body) != [
            codegen.solution_start_definition(compiled.embedding, compiled.triangular) + "\n"]:
        return
    key = body_key(compiled.mechanism, options, compiled.embedding, compiled.triangular)
    groebner.write_atomically(groebner.cache_path(key, "bodies"),
                              json.dumps({"body": gen.body, "macros": gen.macros}).encode())


def _entry_text(mech, options: dict) -> str | None:
    """The text of the entry recorded for ``mech`` and ``options``; None
    without one, or for a mechanism the key cannot describe."""
    try:
        key = key_text(mech, options)
    except (TypeError, ValueError):   # something the key cannot describe: no entry
        return None
    try:
        return groebner.cache_path(key, "derived").read_text()
    except OSError:
        return None


def remember(compiled, options: dict):
    """Record ``compiled`` (a ``pipeline.Compiled``) as the entry of its
    mechanism and ``options`` (``pipeline.compile_model`` when it generated
    the C or took a body recorded at another start), written atomically
    (the suite's workers and parallel builds write the same entries at
    once).  Not a derivation whose Gröbner engine
    failed (a block fell back to Newton because the engine could not run or
    ran out of memory): a later build with a working engine must derive
    again, not reuse the fallback."""
    if compiled.engine_failed:
        return
    try:
        key = key_text(compiled.mechanism, options)
    except (TypeError, ValueError):   # something the key cannot describe: not kept
        return
    # the cache is optional: a directory that cannot be written costs a
    # later derivation its C, never this one its result
    try:
        groebner.disk_cache(key, lambda: record(compiled), use_cache=True, subdir="derived", force=True)
        _remember_body(compiled, options)
    except OSError:
        pass


def derive(mech, options: dict, compute, use_cache=True, reuse=True):
    """(model, hit): with ``use_cache`` and ``reuse``, the derivation
    recorded for ``mech`` and ``options``, as a ``Derived``; else, or with no
    readable entry, ``compute()`` (a ``pipeline.Compiled``).  compute records
    its own derivation (``compile_model`` → ``remember``), so nothing is
    written here."""
    if use_cache and reuse:
        text = _entry_text(mech, options)
        if text is not None:
            try:
                return from_record(text, mech), True
            except (ValueError, KeyError, TypeError):   # a damaged entry: derived and rewritten
                pass
    return compute(), False
