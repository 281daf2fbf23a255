import os

import pytest

from fmigen.pipeline import build_fmu, load_mechanism
from fmigen.validate import validate

# No win64 DLL in the suite's builds (fmu.windows_by_default), also in the
# CLI processes the tests start: it is a third compilation of every new
# model.c (beside the SSE2 and AVX copies of the .so), and only
# tests/test_fmi_variants.py looks at the DLL (its variants are built
# without this setting, as a user's are).
os.environ["FMIGEN_WINDOWS"] = "0"


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
def _fmpy_logger_proxy_reset():
    reset_fmpy_logger()
    yield
    reset_fmpy_logger()


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("fmus")


@pytest.fixture(scope="session")
def fourbar_fmu(fmu_dir):
    path, compiled = build_fmu("fourbar", fmu_dir / "fourbar.fmu", solver="rk4", step=1e-3)
    return path, compiled


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


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        test = f"{name}::{item.originalname}"
        if name in QUICK or test in QUICK:
            item.add_marker(pytest.mark.quick)
