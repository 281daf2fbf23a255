import io
import os
from pathlib import Path

import pytest

from fmigen.build.pipeline import build_fmu, build_fmus, compile_model, load_mechanism, prepare_mechanism
from fmigen.verify.validate import validate

# No win64 DLL in the suite's builds (fmu.windows_by_default), also in the
# CLI processes the tests start: it is a third compilation of every new
# model.c (beside the SSE2 and AVX copies of the .so), and only
# tests/test_fmi_variants.py looks at the DLL (its variants are built
# without this setting, as a user's are).
os.environ["FMIGEN_WINDOWS"] = "0"
# Nor the model's AVX copy (fmu.avx_variant): a second compilation of every
# new model.c, in the .so and in the benchmark's harness, which ends in the
# same bits as the SSE2 copy; tests/test_avx_variant.py checks that on
# its own builds, which set FMIGEN_AVX back (use_avx_copy below), as do the
# tests of how the copy is compiled and cached.
os.environ["FMIGEN_AVX"] = "0"


@pytest.fixture
def use_avx_copy(monkeypatch):
    """The test's builds hold the model's AVX copy, as a user's do where
    the compiler targets x86-64 Linux (the suite's setting above leaves it
    out)."""
    monkeypatch.setenv("FMIGEN_AVX", "1")


def toggle_fourbar():
    """A non-Grashof four-bar (l1 = 2, l2 = 2.5, l3 = 2, d = 3: s + l = 5 >
    p + q = 4.5): under the 6 N·m torque the crank reaches its limit angle
    (A, B, D aligned, θ = arccos(-29/48) ≈ 2.2195) at t ≈ 0.85 s, where the
    rocker angle has no regular solution."""
    m = load_mechanism("fourbar")
    for p in m.parameters:
        p.value = {"l1": 2.0, "l2": 2.5, "l3": 2.0, "d": 3.0}.get(p.name, p.value)
    for c in m.coordinates:
        c.start = {"alpha": -0.0255, "phi": 1.8239}.get(c.name, c.start)
    m.name = "fourbar_toggle"
    return m


#: fmpy's printer as a C callback, alive for the whole session (see below)
_FMPY_PRINTER = []


def reset_fmpy_logger():
    """fmpy's native logging proxy (fmpy.logging) keeps one global logger:
    ``simulate_fmu(logger=f)`` points it at f's ctypes thunk, which is freed
    with that call's callbacks, and every later FMI 2 FMU in the process
    logs through the same proxy (fmpy's default callbacks too) into freed
    memory — a segmentation fault or an illegal instruction.  Seen running
    tests/test_switching.py (loggers) before tests/test_landing_gear.py (a
    Discard message); the whole suite's alphabetical order hid it.  This
    points the proxy back at fmpy's own printer, whose thunk lives as long as
    the session: around every test (the fixture below), and in a test right
    after a ``logger=`` run that other FMUs follow."""
    from ctypes import byref

    from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, printLogMessage
    from fmpy.logging import addLoggerProxy
    if not _FMPY_PRINTER:
        _FMPY_PRINTER.append(fmi2CallbackLoggerTYPE(printLogMessage))
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = _FMPY_PRINTER[0]
    addLoggerProxy(byref(callbacks))


@pytest.fixture(autouse=True)
def _working_directory_kept():
    """Every test starts in the directory the suite started in: a test that
    leaves another behind (an FMI master run in-process can change it) made
    later tests in the same xdist worker miss 'mechanisms/fourbar.py'."""
    cwd = os.getcwd()
    yield
    if os.getcwd() != cwd:
        os.chdir(cwd)


@pytest.fixture(autouse=True)
def _fmpy_logger_proxy_reset():
    reset_fmpy_logger()
    yield
    reset_fmpy_logger()


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fmus")


_compiled = {}


def compiled_model(spec):
    """``compile_model(prepare_mechanism(spec))`` (``"fourbar_toggle"``:
    ``toggle_fourbar()``), derived once per session (per pytest-xdist worker)
    for the tests that read or package the same model with its default
    options; they must not modify it.  Prepared (the assembled start), as
    ``build_fmu`` and ``fmigen check`` derive: the same derived-model cache
    entry, so a mechanism another worker or CLI process already built
    brings its C from the cache instead of generating it again."""
    if spec not in _compiled:
        _compiled[spec] = compile_model(prepare_mechanism(toggle_fourbar() if spec == "fourbar_toggle" else spec))
    return _compiled[spec]


@pytest.fixture(scope="session")
def fourbar_compiled():
    return compiled_model("fourbar")


@pytest.fixture(scope="session")
def vehicle_fmu(tmp_path_factory):
    """The shipped full vehicle (``mechanisms/vehicle.py``) as an FMI 2
    Co-Simulation FMU (RK4, 1 ms, no win64 DLL), built once per session for
    tests/test_masters.py's libcosim test, tests/test_vehicle.py and
    tests/test_examples.py, which must not modify it.  SHARED below puts
    them in one xdist unit, so one worker builds it: a cold derivation is
    minutes, and even packaging the cached derivation again converts the
    joint description anew.  ``reuse``: a derivation recorded in the cache
    is packaged without deriving."""
    d = tmp_path_factory.mktemp("vehicle")
    (path,), _ = build_fmus("vehicle", [(d / "vehicle.fmu", "2", "cs")], windows=False, reuse=True)
    return Path(path)


@pytest.fixture(scope="session")
def fourbar_fmu(fmu_dir):
    path, compiled = build_fmu("fourbar", fmu_dir / "fourbar.fmu", solver="rk4", step=1e-3)
    return path, compiled


def _reference_key(dae, q0, v0, output_times, independent, kwargs) -> str:
    """Everything a DAE reference depends on: its equations, start, output
    times and settings, the source of the code that integrates it and
    SUNDIALS' version."""
    import hashlib

    import numpy as np
    import sksundae
    import sympy as sp

    from fmigen.derive import dae as dae_mod
    from fmigen.verify import prescribed, reference
    h = hashlib.sha256()
    for part in [Path(reference.__file__).read_bytes(), Path(dae_mod.__file__).read_bytes(),
                 Path(prescribed.__file__).read_bytes(), repr(dae.mechanism.prescribed),
                 sksundae.__version__, np.__version__, sp.__version__,
                 sp.srepr([dae.names, dae.q_sym, dae.v_sym, dae.tunable, dae.inputs, dae.M, dae.F, dae.Phi,
                           dae.Phi_redundant]),
                 repr([list(map(float, dae.tunable_values)), list(map(float, dae.input_values))]),
                 np.asarray(q0, dtype=float).tobytes(), np.asarray(v0, dtype=float).tobytes(),
                 np.asarray(output_times, dtype=float).tobytes(), repr(list(independent)),
                 repr(sorted(kwargs.items()))]:
        h.update(b"\0" + (part if isinstance(part, bytes) else str(part).encode()))
    return h.hexdigest()


@pytest.fixture(scope="session", autouse=True)
def _memoized_references(request):
    """validate()'s DAE references (IDA at rtol 1e-12) kept on disk under
    pytest's cache (.pytest_cache/d/fmigen-references), keyed by content
    (_reference_key): the tests validate one mechanism at several steps and
    solvers, whose references are the same integration over the same output
    times; shared by the pytest-xdist workers.  Nothing is kept when pytest
    runs without its cache (-p no:cacheprovider)."""
    import numpy as np

    from fmigen.verify import validate as validate_mod
    from fmigen.kinematics.groebner import write_atomically
    from fmigen.verify.reference import ReferenceSolution
    cache = getattr(request.config, "cache", None)
    if cache is None:
        yield
        return
    where = cache.mkdir("fmigen-references")
    solve = validate_mod.solve_reference

    def memoized(dae, q0, v0, output_times, independent, **kwargs):
        if kwargs.get("demands"):
            # a prescribed coordinate's demand as a function of t (a
            # signal) is not a value: no key, no memo
            return solve(dae, q0, v0, output_times, independent, **kwargs)
        path = where / f"{_reference_key(dae, q0, v0, output_times, independent, kwargs)}.npz"
        if path.exists():
            with np.load(path) as z:
                drive = {str(n): z[f"drive_{k}"] for k, n in enumerate(z["drive_names"])} or None
                return ReferenceSolution(z["t"], z["q"], z["v"], float(z["rtol"]), [str(n) for n in z["names"]],
                                         drive)
        ref = solve(dae, q0, v0, output_times, independent, **kwargs)
        buf = io.BytesIO()
        drive = ref.drive or {}
        np.savez(buf, t=ref.t, q=ref.q, v=ref.v, rtol=ref.rtol, names=np.array(ref.names),
                 drive_names=np.array(list(drive), dtype=str),
                 **{f"drive_{k}": d for k, d in enumerate(drive.values())})
        write_atomically(path, buf.getvalue())
        return ref

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(validate_mod, "solve_reference", memoized)
        yield


#: the four FMI variants a runtime test checks: FMI 2 and 3, CS and ME
FMI_VARIANTS = [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")]


def build_fmi_variants(system, out: Path, prefix: str) -> dict:
    """{(fmi, kind): FMU path} of ``system`` in every FMI_VARIANTS, from one
    derivation (rk4, 1 ms, no win64 DLL)."""
    targets = [(out / f"{prefix}_{f}_{k}.fmu", f, k) for f, k in FMI_VARIANTS]
    paths, _ = build_fmus(system, targets, solver="rk4", step=1e-3, windows=False)
    return dict(zip(FMI_VARIANTS, paths))


_reports = {}


def cached_validate(mech, **kw):
    """validate() is deterministic; several tests look at the same run."""
    key = (mech, tuple(sorted(kw.items())))
    if key not in _reports:
        _reports[key] = validate(mech, **kw)
    return _reports[key]


def p_bc_ramp(p0, rate, stop):
    """Input signal for the landing gear's kinematic FMUs: p_BC = p0 + rate·t
    (with its derivative, which the kinematic FMU takes as an input too)."""
    import numpy as np
    sig = np.zeros(2, dtype=[("time", float), ("p_BC", float), ("der(p_BC)", float)])
    sig["time"] = [0.0, stop]
    sig["p_BC"] = [p0, p0 + rate * stop]
    sig["der(p_BC)"] = rate
    return sig


#: The quick tier (``scripts/test.sh --quick``, ``pytest -m quick``), for edit
#: loops: the four-bar, the slider-crank and the Stewart platform end to end
#: (built, run in fmpy, checked against the IDA and the Cartesian
#: references, at the FMU's C interface, through the CLI), and the unit
#: tests of every stage.  An entry is a test file or one test in it.  The
#: whole suite, which CI runs, stays the README's command.
QUICK = {
    # end to end
    "test_validation.py", "test_stewart.py", "test_fmu.py", "test_report.py",
    "test_cli.py::test_build_several_variants_from_one_derivation",
    "test_python_runtime.py::test_start_values_parameters_and_euler_with_shortened_steps",
    # the stages: description, joints, DAE, workspace, Gröbner and the
    # triangular sequence, assembly, floats in the C, variables, caches
    "test_joints.py", "test_equations_of_motion.py", "test_workspace.py", "test_groebner_engine.py",
    "test_triangular.py", "test_assemble.py", "test_floats.py", "test_variables.py",
    "test_cache_writes.py", "test_check.py::test_double_crank_singularities_are_where_l1_cos_theta_equals_d",
}


#: The order in which pytest-xdist hands out the work units (scripts/test.sh:
#: ``--dist loadfile --no-loadscope-reorder``; a unit is a test file, whose
#: tests stay on one worker so its module-scoped builds are made once, or
#: what ``work_unit`` makes of it): the longest units, as measured, first,
#: the others after them in collection order.  A long unit started last is
#: the run's tail, one worker busy while the other idles; xdist's own order
#: (by the number of tests in a unit) put the longest ones anywhere.  An
#: entry is a file or one test in it.  (``--dist loadgroup`` could split a
#: file, but with pytest 9 its groups do not reach the scheduler.)
LONG_FIRST = ["test_masters.py::test_libcosim_runs_the_full_vehicle_like_fmpy", "test_joint_model.py",
              "test_masters.py", "test_pip_install.py", "test_avx_variant.py", "test_bench.py",
              "test_embedding_code.py", "test_start_pose.py", "test_exact_kinematics.py", "test_five_link.py",
              "test_check.py", "test_time_events.py", "test_sink_definitions.py", "test_slp.py"]

#: Files whose tests are work units of their own: test_joint_model.py is
#: the longest file by far (a quarter of the suite's test time in a
#: --durations profile), longer than half the run: as one unit its worker
#: was the run's tail whatever the order.  Its tests share no module-scoped build;
#: the two that build the same mechanism stay one unit (TOGETHER), so the
#: workers never derive it at once.
SPLIT = {"test_joint_model.py"}
#: tests that are a unit of their own in a file that is otherwise one: the
#: full vehicle's build and run (the longest test) shares nothing with the
#: other masters' tests, which share their module's FMUs
ALONE = {"test_masters.py::test_libcosim_runs_the_full_vehicle_like_fmpy"}
#: tests of a SPLIT file that stay together, by the name of their unit
TOGETHER = {"test_joint_model.py::test_five_link_joints_matches_five_link": "five_link_joints",
            "test_joint_model.py::test_five_link_joints_validates_against_both_references": "five_link_joints"}
#: units across files, by name: a test or a whole file listed here runs on
#: the worker of the others with the same name, in collection order, so
#: their common session-scoped FMU is built once (the full vehicle,
#: ``vehicle_fmu``: a cold derivation of minutes, which two workers would
#: otherwise both make at once)
SHARED = {"test_masters.py::test_libcosim_runs_the_full_vehicle_like_fmpy": "vehicle",
          "test_examples.py": "vehicle", "test_vehicle.py": "vehicle"}


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its file (``--dist loadfile``), but a
    test of a SPLIT file or in ALONE is one of its own, TOGETHER's
    tests share one, and SHARED's one across files."""
    path, _, test = nodeid.partition("::")
    key = f"{Path(path).name}::{test.split('[')[0]}"
    shared = SHARED.get(key, SHARED.get(Path(path).name))
    if shared:
        return f"shared::{shared}"
    if key in TOGETHER:
        return f"{path}::{TOGETHER[key]}"
    if Path(path).name in SPLIT or key in ALONE:
        return nodeid
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with ``work_unit``'s units."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class WorkUnits(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return work_unit(nodeid)
    return WorkUnits(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        test = f"{name}::{item.originalname}"
        if name in QUICK or test in QUICK:
            item.add_marker(pytest.mark.quick)
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    # stable: collection order within a file and among the rest
    items.sort(key=lambda item: rank.get(f"{item.path.name}::{item.originalname}",
                                         rank.get(item.path.name, len(LONG_FIRST))))


# --- suiteB: memoized Cartesian references ---------------------------------


def _canonical(value) -> bytes:
    """An argument of ``CartesianModel.simulate`` as bytes that depend on its
    values only: {name: number} in key order, arrays of numbers as their
    float64 bytes (fmpy's result columns are views whose pickles differ)."""
    import numpy as np
    if isinstance(value, dict):
        return repr([(k, _canonical(v)) for k, v in sorted(value.items())]).encode()
    if isinstance(value, (str, type(None))):
        return repr(value).encode()
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return repr(list(value)).encode()
    return repr(np.asarray(value, dtype=float).shape).encode() + np.asarray(value, dtype=float).tobytes()


def _cartesian_key(model, args, kwargs):
    """Everything a Cartesian reference (``CartesianModel.simulate``)
    depends on, or None when it cannot be written down: the joint system
    (its repr with every sympy expression as ``srepr``, exact floats), the
    model's parameter and input values, the call's arguments, the source of
    the code that integrates it and the library versions.  An input given as
    a function of t (a signal) is not a value: no key, no memo."""
    import hashlib

    import numpy as np
    import sksundae
    import sympy as sp
    from sympy.matrices import MatrixBase

    from fmigen import joints
    from fmigen.verify import cartesian, cartesian_solve, energy, prescribed, rigid_motion, trims
    inputs = []
    for fn in model.input_fns:
        # CartesianModel.__init__ wraps an input given as a value in a lambda
        # whose default holds it; any other callable is the caller's signal
        name = getattr(fn, "__qualname__", "")
        if not (name.startswith("CartesianModel.__init__.<locals>.") and name.endswith("<lambda>")):
            return None
        inputs.append(float(fn.__defaults__[0]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sp.Basic, "__repr__", lambda e: sp.srepr(e))
        mp.setattr(MatrixBase, "__repr__", lambda e: sp.srepr(e))
        system = repr(model.system)
    try:
        call = [*map(_canonical, args), _canonical(kwargs)]
    except (TypeError, ValueError):      # an argument that is not numbers
        return None
    h = hashlib.sha256()
    for part in [*(Path(m.__file__).read_bytes() for m in (cartesian, cartesian_solve, energy, rigid_motion,
                                                            prescribed, trims)),
                 Path(joints.__file__).read_bytes(), sksundae.__version__, np.__version__, sp.__version__,
                 system, repr(model.baumgarte), repr(list(map(float, model.param_values))), repr(inputs),
                 *call]:
        h.update(b"\0" + (part if isinstance(part, bytes) else str(part).encode()))
    return h.hexdigest()


@pytest.fixture(scope="session", autouse=True)
def _memoized_cartesian_references(request):
    """The Cartesian references (``CartesianModel.simulate``, CVODE in
    absolute coordinates) kept on disk under pytest's cache
    (.pytest_cache/d/fmigen-cartesian), keyed by content (_cartesian_key),
    like the DAE references above: validate() runs one joint-described
    mechanism at several steps and solvers from the same start over the
    same output times, which is the same Cartesian integration each time;
    shared by the pytest-xdist workers.  A failed integration raises as
    before and is not kept."""
    import pickle

    from fmigen.kinematics.groebner import write_atomically
    from fmigen.verify.cartesian import CartesianModel
    cache = getattr(request.config, "cache", None)
    if cache is None:
        yield
        return
    where = cache.mkdir("fmigen-cartesian")
    simulate = CartesianModel.simulate

    def memoized(self, *args, **kwargs):
        key = _cartesian_key(self, args, kwargs)
        if key is None:
            return simulate(self, *args, **kwargs)
        path = where / f"{key}.pickle"
        if path.exists():
            return pickle.loads(path.read_bytes())
        sol = simulate(self, *args, **kwargs)
        write_atomically(path, pickle.dumps(sol, protocol=4))
        return sol

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CartesianModel, "simulate", memoized)
        yield

# --- suiteA: one derivation for several generations ------------------------------


def derivation_for_generate(mech):
    """What ``bench.generate_sources(mech, ["groebner"])`` derives before it
    generates, kept for the caller: (dae, partition, embedding, Gröbner
    triangularization, dynamics).  ``codegen.generate(emb, tri, mech.name,
    dynamics=dynamics)`` is then that function's model; a test that looks
    at the DAE or the triangularization too, or generates twice (with a
    pass on and off), derives once."""
    from fmigen.kinematics.triangular import triangularize
    from fmigen.tools.bench import derivation
    dae, part, emb, dynamics, _ = derivation(mech)
    return dae, part, emb, triangularize(dae, part, kinematics="groebner"), dynamics


@pytest.fixture
def compiled_sources(monkeypatch):
    """The names of the C sources compiled while the test runs (not those
    the object cache supplied), in order: what a rebuild had to compile."""
    from fmigen.fmi import fmu
    names = []
    compile_object = fmu._compile_object

    def recording(cc, flags, source, obj):
        names.append(source.name)
        return compile_object(cc, flags, source, obj)
    monkeypatch.setattr(fmu, "_compile_object", recording)
    return names
