"""The pipeline end to end: mechanism module -> FMU.

    model -> dae -> partition -> embed -> triangular -> codegen -> fmu

Each stage is its own module and only consumes what the previous ones made.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from fmigen.generate import codegen
from fmigen.build import derived, progress
from fmigen.fmi import fmu
from fmigen.derive.dae import DAE
from fmigen.derive.embed import Embedding, embed
from fmigen.model import Mechanism, ModelError
from fmigen.derive.partition import Partition, choose_partition, partition_with
from fmigen.kinematics import groebner
from fmigen.kinematics.sequences import Triangularization

#: the shipped mechanisms: ``mechanisms/`` beside the package in a checkout
#: (or an editable install), ``fmigen/mechanisms`` inside an installed wheel
#: (pyproject.toml maps the one to the other)
_CHECKOUT_MECHANISMS = Path(__file__).resolve().parent.parent.parent / "mechanisms"
MECHANISMS_DIR = (_CHECKOUT_MECHANISMS if _CHECKOUT_MECHANISMS.is_dir()
                  else Path(__file__).resolve().parent.parent / "mechanisms")


def load_mechanism(spec: str, use_cache=True) -> Mechanism:
    """``spec`` is a path to a module (``mechanisms/fourbar.py``), a bare name
    (``fourbar``) or a MuJoCo model file (``model.xml``).  Its ``build()`` returns a ``Mechanism`` or a
    ``joints.JointSystem``, which is converted (``joint_model.to_mechanism``; with ``use_cache``
    through ``derived.mechanism_of``'s cache)."""
    path = Path(spec)
    if path.suffix.lower() == ".xml":
        # a MuJoCo model (MJCF): its bodies and joints (fmigen/frontends/mjcf.py)
        if not path.exists():
            raise ModelError(f"no MJCF file {path}")
        from fmigen.frontends.mjcf import import_mjcf
        return as_mechanism(import_mjcf(path), str(path), use_cache)
    if path.suffix != ".py":
        candidates = [Path.cwd() / "mechanisms" / f"{spec}.py", MECHANISMS_DIR / f"{spec}.py"]
        path = next((c for c in candidates if c.exists()), candidates[-1])
    if not path.exists():
        known = sorted(p.stem for p in MECHANISMS_DIR.glob("*.py") if not p.stem.startswith("_"))
        raise ModelError(f"no mechanism '{spec}' (looked for {path}; known: {', '.join(known)})")
    mod_name = f"fmigen_mechanism_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[mod_name] = module
    # Mechanism modules may import their siblings (``from mechanisms.x import``).
    root = str(path.resolve().parent.parent)
    if root not in sys.path:
        sys.path.append(root)
    try:
        module_spec.loader.exec_module(module)
    except (ImportError, SyntaxError) as exc:
        # the user's own module: its file and the failing import or line, not
        # a traceback through fmigen's loader
        del sys.modules[mod_name]
        where = (f"; its own imports resolve from {root} (the folder above its folder) and the "
                 f"installed packages" if isinstance(exc, ImportError) else "")
        raise ModelError(f"{path} does not import: {type(exc).__name__}: {exc}{where}") from exc
    if not hasattr(module, "build"):
        raise ModelError(f"{path} has no build() -> Mechanism function")
    return as_mechanism(module.build(), f"{path}: build()", use_cache)


def as_mechanism(obj, what="the mechanism", use_cache=True) -> Mechanism:
    """A ``Mechanism`` as it is, a ``JointSystem`` converted to one (read
    from the conversion cache with ``use_cache``, ``derived.mechanism_of``)."""
    if isinstance(obj, Mechanism):
        return obj
    # here, and only for what is not a Mechanism: a low-level module's
    # build does not wait for the joint API's import
    from fmigen.joints import JointSystem
    if isinstance(obj, JointSystem):
        return derived.mechanism_of(obj, use_cache)
    raise ModelError(f"{what} returned {type(obj).__name__}, not a Mechanism or a JointSystem")


def _copy(mech: Mechanism) -> Mechanism:
    """A copy whose coordinates (the only thing the start assembly writes)
    are its own; everything else is shared (sympy objects are immutable)."""
    out = copy.copy(mech)
    object.__setattr__(out, "coordinates", [dataclasses.replace(c) for c in mech.coordinates])
    return out


def prepare_mechanism(spec_or_mech, log=None, use_cache=True) -> Mechanism:
    """The mechanism as every build simulates it (the C and Python FMUs and
    ``fmigen bench``): loaded, and its start taken as the real assembly at
    the start input nearest the guesses (``start_assembly.start_assembly_hook``:
    small systems only, a warning when two are close; ~0.1 s for the
    four-bar, 2.3 s for the Stephenson six-bar; its outcome is cached with
    ``use_cache``).  A ``Mechanism`` passed in is copied first, so the
    caller's starts stay the guesses it wrote; a ``JointSystem`` is
    converted."""
    from fmigen.kinematics.start_assembly import start_assembly_hook
    if isinstance(spec_or_mech, (str, Path)):
        mech = load_mechanism(spec_or_mech, use_cache)
    else:
        mech = _copy(as_mechanism(spec_or_mech, use_cache=use_cache))
    start_assembly_hook(mech, log=log or (lambda msg: None), use_cache=use_cache)
    return mech


@dataclass
class Compiled:
    mechanism: Mechanism
    dae: DAE
    partition: Partition
    embedding: Embedding
    triangular: Triangularization
    generated: codegen.GeneratedModel
    seconds: dict
    #: how the right-hand side solves the embedded ODE: embedded | recursive
    dynamics: str = "embedded"
    #: a block (of any coordinate set) is solved by Newton because the
    #: Gröbner engine failed: ``derived.remember`` does not record the build
    engine_failed: bool = False
    #: coordinate switching (``Mechanism.switch_independent``): the
    #: (embedding, triangularization) of each further set of independent
    #: coordinates, in the order the FMU numbers its partitions
    alternatives: list = field(default_factory=list)

    @property
    def independent_names(self) -> list[str]:
        return [self.dae.names[i] for i in self.partition.independent]

    @property
    def start(self) -> dict:
        return self.triangular.start


def derivation_options(order=None, kinematics="groebner", newton_tol=None, dynamics="auto") -> dict:
    """The build options that key the derived-model cache (``derived.derive``):
    one place, so that ``fmigen check`` finds the entry a build wrote."""
    return {"order": order, "kinematics": kinematics, "newton_tol": newton_tol, "dynamics": dynamics}


def compile_model(mech: Mechanism, order=None, use_cache=True, log=None, kinematics="groebner",
                  newton_tol=None, dynamics="auto", generate_c=True) -> Compiled:
    """The derivation, stages 1-4.  ``dynamics`` embedded|recursive|auto:
    how the generated right-hand side solves the embedded ODE
    (``codegen_recursive.choose``).  ``generate_c=False``: stop before
    stage 4 (``Compiled.generated`` is None), for a consumer of the symbolic
    derivation only (the Modelica export), which would otherwise pay for C
    it never reads.  With ``use_cache``, stage 4 is read from the
    derived-model cache when a build or an earlier call (``fmigen check``,
    another process of the test suite) recorded this mechanism with these
    options (``derived.generated_of``: the same bytes; or the body recorded
    at another start, ``derived.body_of``), and recorded when it ran or came
    from such a body (``derived.remember``)."""
    from fmigen.generate.codegen_recursive import choose as choose_dynamics
    from fmigen.frontends.start_pose import check_start_pose
    # here, not at the top: a build that packages a derived model from the
    # cache (a solver or step change) does not wait for the
    # triangularization's imports (the workspace sweep, branches, completion)
    from fmigen.kinematics.triangular import triangularize
    log = log or (lambda msg: None)
    # the key of the derived-model cache: the options as given (dynamics
    # "auto", not what it resolves to), as build_fmus keys its entry
    options = derivation_options(order, kinematics, newton_tol, dynamics)
    times = {}
    history = progress.StageTimes()
    t0 = time.perf_counter()
    progress.stage(log, f"[1/5] deriving equations of motion of '{mech.name}' (sympy.physics.mechanics)",
                   history.last(mech.name, "dae"))
    dae = derived.dae_of(mech, use_cache)
    times["dae"] = time.perf_counter() - t0
    graph = derived.partition_graph if use_cache else None
    part = choose_partition(dae, graph)
    log(f"[2/5] partition: independent {[dae.names[i] for i in part.independent]}, "
        f"{len(part.blocks)} block(s)")
    if mech.independent_note:
        log(f"      {mech.independent_note}")
    emb = embed(dae, part)
    dynamics, why = choose_dynamics(dynamics, emb, part)
    log(f"      dynamics: {dynamics} ({why})")
    t1 = time.perf_counter()
    progress.stage(log, "[3/5] triangularizing the constraint blocks", history.last(mech.name, "triangular"))
    if len(dae.Phi):
        log(f"      Gröbner engine: {groebner.engine_description()}")
    tri = triangularize(dae, part, order=order, use_cache=use_cache, log=lambda m: log("      " + m),
                        kinematics=kinematics, newton_tol=newton_tol)
    _warn_singularities(dae, tri, log)
    # the start the FMU carries must be the pose the joint description
    # states, not another assembly that closes the loops as well
    check_start_pose(mech, dae, [dae.names[i] for i in part.independent], tri.start,
                     log=lambda m: log("      " + m))
    alternatives = []
    for names in (mech.switch_independent or []):
        missing = [p.coordinate for p in mech.prescribed if p.coordinate not in names]
        if missing:
            raise ModelError(f"switch_independent set {list(names)} leaves out the prescribed coordinate(s) "
                             f"{missing}: every set must keep them independent")
        # coordinate switching (paper 004): each further set of independent
        # coordinates gets its own kinematics and embedding in the FMU
        part_k = partition_with(dae, list(names), graph)
        log(f"      coordinate switching: independent {list(names)}, {len(part_k.blocks)} block(s)")
        tri_k = triangularize(dae, part_k, use_cache=use_cache, log=lambda m: log("      " + m),
                              kinematics=kinematics, newton_tol=newton_tol, guesses=tri.start)
        alternatives.append((embed(dae, part_k), tri_k))
    times["triangular"] = time.perf_counter() - t1
    t2 = time.perf_counter()
    generated_now = False
    found = derived.generated_of(mech, options, emb, tri) if generate_c and use_cache else None
    gen, own_entry = found if found is not None else (None, False)
    from_body = gen is not None and not own_entry
    if gen is not None:
        log("[4/5] generated C from the derived-model cache" +
            (" (the body recorded at another start)" if from_body else ""))
    elif not generate_c:
        log("[4/5] C generation skipped: not needed here")
        gen = None
    else:
        generated_now = True
        progress.stage(log, "[4/5] generating C", history.last(mech.name, "codegen"))
        gen = codegen.generate(emb, tri, mech.name, alternatives=alternatives, dynamics=dynamics)
    times["codegen"] = time.perf_counter() - t2
    if generated_now:
        history.remember(mech.name, times)
    log(f"      stages: equations of motion {times['dae']:.2f} s, triangularization and workspace cover "
        f"{times['triangular']:.2f} s, C generation {times['codegen']:.2f} s")
    failed = any(solved_block.engine_failed for t in [tri, *(t for _, t in alternatives)] for solved_block in t.blocks)
    compiled = Compiled(mech, dae, part, emb, tri, gen, times, dynamics, failed, alternatives)
    if (generated_now or from_body) and use_cache:
        derived.remember(compiled, options)
    return compiled


def _warn_singularities(dae, tri, log):
    """The cheap part of ``fmigen check``, on every build: what the workspace
    sweep found that the FMU cannot do by straight-line code."""
    uncovered = [p for solved_block in tri.blocks for p in solved_block.singular_points if p["covered_by"] is None]
    for p in uncovered:
        at = ", ".join(f"{k}={v:.6g}" for k, v in p["at"].items())
        log(f"warning: block {p['block']} has a representation singularity at {at} ({p['condition']}) that "
            "the exact completion does not cover; the run-time Newton fallback solves it (fmigen check)")
    sweep = tri.sweep
    switch_sets = dae.mechanism.switch_independent or []
    for p in (sweep.physical if sweep is not None else []):
        at = ", ".join(f"{k}={v:.6g}" for k, v in p["at"].items())
        what = "the FMU switches coordinates there (Co-Simulation)" if switch_sets else \
            "the FMU returns Discard there; see fmigen check for independent coordinates that are regular"
        log(f"warning: a sweep path ends at {at} ({p['kind']}): a physical singularity or workspace limit "
            f"of the partition; {what}")


def build_fmu(spec_or_mech, out, solver="rk4", step=1e-3, order=None, use_cache=True, log=None,
              fmi="2", kind="cs", windows=None, kinematics="groebner", newton_tol=None, formulation_params=None,
              reuse=False, dynamics="auto", realtime=None):
    """One FMU; see ``build_fmus``."""
    paths, compiled = build_fmus(spec_or_mech, [(out, fmi, kind)], solver=solver, step=step, order=order,
                                 use_cache=use_cache, log=log, windows=windows, kinematics=kinematics,
                                 newton_tol=newton_tol, formulation_params=formulation_params, reuse=reuse,
                                 dynamics=dynamics, realtime=realtime)
    return paths[0], compiled


def build_fmus(spec_or_mech, targets, solver="rk4", step=1e-3, order=None, use_cache=True, log=None,
               windows=None, kinematics="groebner", newton_tol=None, formulation_params=None, reuse=False,
               dynamics="auto", realtime=None):
    """FMUs of one derivation: ``targets`` is a list of (path, fmi "2"|"3",
    kind "cs"|"me"); the model is derived and generated once, then compiled
    and packaged per variant.

    ``use_cache``: the Gröbner, derived-model (fmigen/build/derived.py) and
    compiled-library caches are read and written; ``reuse`` (with
    ``use_cache``): a derived model recorded earlier is packaged without
    deriving, and the second value returned is then a ``derived.Derived``
    (no DAE, partition or triangularization) instead of a ``Compiled``.
    An augmented formulation always derives.

    ``kinematics`` baumgarte|penalty|spring: an augmented formulation
    (fmigen/generate/formulation.py) with ``formulation_params`` ({name: value}, None =
    defaults) on the Gröbner build's model functions, which also assemble the
    start.

    ``dynamics`` embedded|recursive|auto: the embedded ODE's right-hand side
    by Bᵀ M B (``codegen_embedding``) or by the elimination whose cost is
    linear in the loops (``codegen_recursive``); auto picks by the number of
    independent coordinates (``codegen_recursive.choose``).  Not with an
    augmented formulation, which does not embed.

    ``realtime``: ``fmigen build --realtime``'s measurement
    (``bench.realtime_caps``, passed in: it runs a tool's harness), a
    function of the Compiled, the solver, the step and the log returning
    the model to package, each bounded loop capped at what its workspace
    sweep needs plus a margin, and those caps for the documentation; the
    embedded Gröbner formulation only, and always derived (the sweep it
    measures on is not in the derived-model cache)."""
    from fmigen.generate import formulation
    log = log or (lambda msg: None)
    form = None
    if realtime is not None and kinematics != "groebner":
        raise ModelError(f"--realtime caps the loops of the Gröbner kinematics (--kinematics groebner); "
                         f"got --kinematics {kinematics}")
    reuse = reuse and realtime is None
    if kinematics in formulation.AUGMENTED:
        form = formulation.make(kinematics, **(formulation_params or {}))
        kinematics = "groebner"
        if dynamics == "recursive":
            raise ModelError(f"--dynamics recursive solves the embedded ODE; the {kinematics} formulation "
                             "integrates all coordinates and has no embedding to solve (use --dynamics auto)")
    elif formulation_params:
        raise ModelError(f"formulation parameters {sorted(formulation_params)} apply to --kinematics "
                         f"{'|'.join(formulation.AUGMENTED)} only")
    mech = prepare_mechanism(spec_or_mech, log, use_cache)
    if form is not None and mech.prescribed:
        # the augmented formulations integrate every coordinate with its own
        # dynamics; the prescribed drive acts on the embedded ODE only
        raise ModelError(f"prescribed motion ({', '.join(p.coordinate for p in mech.prescribed)}) needs the "
                         f"embedded ODE; the {form.name} formulation does not embed (drop --kinematics "
                         f"{'|'.join(formulation.AUGMENTED)})")
    t0 = time.perf_counter()
    options = derivation_options(order, kinematics, newton_tol, dynamics)
    compiled, hit = derived.derive(
        mech, options, lambda: compile_model(mech, order=order, use_cache=use_cache, log=log,
                                             kinematics=kinematics, newton_tol=newton_tol, dynamics=dynamics),
        use_cache=use_cache, reuse=reuse and form is None)
    if hit:
        compiled.seconds = {"derived": time.perf_counter() - t0}
        log(f"[1-4/5] derived model of '{mech.name}' from the cache in {compiled.seconds['derived']:.2f} s "
            f"(deriving it took {sum(compiled.derivation_seconds.values()):.1f} s; --no-cache derives again)")
    if form is not None:
        formulation.check_model(compiled.embedding, form)
        log(f"      formulation: {form.name} ({', '.join(f'{n} = {v:g}' for n, v, _, _ in form.parameters())})")
        compiled.generated = formulation.apply(compiled.generated, form, compiled.embedding)
    generated, caps = compiled.generated, None
    if realtime is not None:
        generated, caps = realtime(compiled, solver, step, log)
    paths = []
    history = progress.StageTimes()
    compiled.seconds["fmu"] = 0.0
    if windows is None and not fmu.mingw_available():
        # the cross-compiler is optional (fmigen doctor): say what the FMU lacks
        log(f"      no win64 cross-compiler ({fmu.MINGW_CC}): the FMU carries linux64 binaries and its C sources, "
            "no win64 DLL")
    for out, fmi, kind in targets:
        t0 = time.perf_counter()
        progress.stage(log, f"[5/5] compiling and packaging {out} (FMI {fmi}.0 {kind.upper()})",
                       history.last(mech.name, f"fmu_{fmi}_{kind}"))
        paths.append(fmu.package(compiled.interface if hit else compiled.embedding, generated, Path(out),
                                 solver=solver, step=step, fmi=fmi, kind=kind, windows=windows,
                                 use_cache=use_cache, realtime=caps))
        seconds = time.perf_counter() - t0
        history.remember(mech.name, {f"fmu_{fmi}_{kind}": seconds})
        compiled.seconds["fmu"] += seconds
        log(f"      compiled and packaged in {seconds:.2f} s")
    return paths, compiled
