"""The Python runtime (fmigen/pyfmu/pyruntime.py, ``fmigen build --runtime python``):
the same reduced model as a pure-Python FMI 2.0 Co-Simulation FMU through
pythonfmu, checked against the C FMU in fmpy."""
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave
from fmpy.validation import validate_fmu

from fmigen.fmi import fmu as fmu_mod
from fmigen.pyfmu import pyruntime
from fmigen.pyfmu import numeric
from fmigen.build.pipeline import build_fmu, load_mechanism
from conftest import compiled_model

MECHS = ["fourbar", "slider_crank", "fourbar_joints"]   # fourbar_joints: a block in angle sums


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """C FMU (fmigen build MECH, default RK4, h = 1 ms) and the Python FMU of
    the same compiled model, per mechanism."""
    d = tmp_path_factory.mktemp("pyrt")
    out = {}
    for mech in MECHS:
        c_path, compiled = build_fmu(mech, d / f"{mech}_c.fmu", windows=False)
        py_path, _ = pyruntime.build_python_fmu(mech, d / f"{mech}_py.fmu", compiled=compiled)
        out[mech] = (c_path, py_path, compiled)
    return out


def _outputs(compiled):
    names = [c.name for c in compiled.mechanism.coordinates]
    return names, names + [f"der({n})" for n in names] + ["constraint_residual"]


def _max_diffs(a, b, names):
    assert len(a) == len(b) and np.array_equal(a["time"], b["time"])
    return {n: float(np.max(np.abs(a[n] - b[n]))) for n in names}


@pytest.mark.parametrize("mech", MECHS)
def test_python_fmu_agrees_with_c_fmu(pairs, mech):
    c_path, py_path, compiled = pairs[mech]
    coords, outs = _outputs(compiled)
    rc = simulate_fmu(str(c_path), stop_time=1.0, output_interval=0.01, output=outs)
    rp = simulate_fmu(str(py_path), stop_time=1.0, output_interval=0.01, output=outs)
    assert len(rp) == 101
    diffs = _max_diffs(rc, rp, outs)
    print(f"{mech}: max |C - Python| over 1 s (RK4, h = 1 ms, 100 communication steps): {diffs}")
    # Measured: ≤ 6.7e-16 in the coordinates and ≤ 5.3e-15 in the velocities
    # (0.0 for the four-bar's coordinates).  The generated Python evaluates
    # the same kinematics (same CSE, integer powers as products, same libm),
    # RK4 and step rule as the C; the C's embedding is generated straight-line
    # code (codegen_embedding.py: adjugate, LDLᵀ) while the Python keeps the
    # LU port, so the two agree to round-off, no longer bit for bit.  The
    # bound: ~20x the largest of those.
    for n in outs:
        assert diffs[n] <= 1e-13, (n, diffs[n])
    assert rp["constraint_residual"].max() <= 1e-12
    # the motion is real (a few radians), not a trivially equal rest state
    assert np.ptp(rp[coords[0]]) > 1.0


@pytest.mark.parametrize("mech", MECHS)
def test_python_fmu_validates_without_messages(pairs, mech):
    assert validate_fmu(str(pairs[mech][1])) == []


@pytest.mark.parametrize("mech", MECHS)
def test_interface_is_the_c_fmus(pairs, mech):
    """Same variables (names, value references, causality, variability,
    initial, start, unit) and FMI 2.0 Co-Simulation only."""
    c_path, py_path, _ = pairs[mech]
    mc, mp = read_model_description(str(c_path)), read_model_description(str(py_path))
    assert mp.fmiVersion == "2.0" and mp.modelExchange is None
    assert mp.coSimulation.modelIdentifier == mech
    assert "pythonfmu" in mp.generationTool

    def table(md):
        return [(v.name, v.valueReference, v.causality, v.variability, v.initial, v.start, v.unit)
                for v in md.modelVariables]

    assert table(mp) == table(mc)
    with zipfile.ZipFile(py_path) as z:
        names = z.namelist()
    assert f"binaries/linux64/{mech}.so" in names
    assert any(n.startswith("resources/fmigen_") and n.endswith(".py") for n in names)
    assert "resources/pythonfmu/fmi2slave.py" in names


@pytest.mark.parametrize("solver", ["euler", "symplectic"])
def test_start_values_parameters_and_euler_with_shortened_steps(tmp_path, solver):
    """Independent start values, a tunable parameter, an input, explicit or
    semi-implicit Euler with an internal step that does not divide the
    communication step (2 full steps of 4 ms + one of 2 ms per 10 ms): still
    the C FMU's trajectory."""
    compiled = compiled_model("fourbar")
    c_path = fmu_mod.package(compiled.embedding, compiled.generated, tmp_path / "fb_e.fmu", solver=solver,
                             step=4e-3, windows=False, use_cache=True)
    py_path = pyruntime.package(compiled, tmp_path / "fb_e_py.fmu", solver=solver, step=4e-3)
    _, outs = _outputs(compiled)
    start = {"theta": 1.2, "der(theta)": -0.5, "tau": 4.0, "m2": 1.5}
    rc = simulate_fmu(str(c_path), stop_time=0.5, output_interval=0.01, output=outs, start_values=start)
    rp = simulate_fmu(str(py_path), stop_time=0.5, output_interval=0.01, output=outs, start_values=start)
    assert rp["theta"][0] == 1.2 and rp["der(theta)"][0] == -0.5
    diffs = _max_diffs(rc, rp, outs)
    # measured 8.9e-16 here
    assert max(diffs.values()) <= 1e-14, diffs
    default = simulate_fmu(str(py_path), stop_time=0.5, output_interval=0.01, output=["theta"])
    assert abs(default["theta"][-1] - rp["theta"][-1]) > 0.1   # the start values took effect


def _slave(path, tmp_path, name="p"):
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / name))
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName=name)
    s.instantiate()
    return s, {v.name: v.valueReference for v in md.modelVariables}


_BAD_CALL = r"""
import json, math, sys
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
path, unzip, which = sys.argv[1], sys.argv[2], sys.argv[3]
md = read_model_description(path)
vr = {v.name: v.valueReference for v in md.modelVariables}
msgs = []
def log(env, name, status, category, message):
    msgs.append((status, (message or b"").decode()))
cb = fmi2CallbackFunctions()
cb.logger = fmi2CallbackLoggerTYPE(log)
s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
              instanceName="bad")
s.instantiate(callbacks=cb, loggingOn=True)
bad = {
    "dependent": lambda: s.setReal([vr["alpha"]], [0.3]),
    "nan_input": lambda: s.setReal([vr["tau"], vr["tau"]], [1.0, math.nan]),
    "inf_input": lambda: s.setReal([vr["tau"]], [math.inf]),
    "zero_step": lambda: s.doStep(0.01, 0.0),
    "negative_step": lambda: s.doStep(0.01, -1e-3),
    "wrong_time": lambda: s.doStep(0.5, 0.01),
    "fixed_parameter_after_init": lambda: s.setReal([vr["internal_step"]], [2e-3]),
    "negative_mass": lambda: s.setReal([vr["m2"]], [-0.2]),
}[which]
if which != "dependent":
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    s.doStep(0.0, 0.01)
status = 0
try:
    bad()
except FMICallException as e:
    status = e.status
print(json.dumps({"status": status, "messages": msgs}), flush=True)
# After fmi2Fatal the standard allows no further call on any instance
# (FMI 2.0.4, 2.1.3), so no freeInstance.  The interpreter's own teardown
# would still run pythonfmu's destructors over the class object it freed
# (CI saw "corrupted double-linked list" there, after this line printed);
# the process is declared corrupt, so leave without tearing down.
import os
os._exit(0)
"""


@pytest.mark.parametrize("which,text", [
    ("dependent", "fmi2SetReal: alpha (value reference 1) cannot be set (it is calculated or unknown)"),
    ("nan_input", "fmi2SetReal: tau (value reference 7) set to a non-finite value (NaN or Inf)"),
    ("inf_input", "fmi2SetReal: tau (value reference 7) set to a non-finite value (NaN or Inf)"),
    ("zero_step", "communication step size must be > 0 (got 0)"),
    ("negative_step", "communication step size must be > 0 (got -0.001)"),
    ("wrong_time", "currentCommunicationPoint 0.5 does not match the FMU time 0.01"),
    ("fixed_parameter_after_init", "internal_step (value reference 12) is a fixed parameter: it can be set only "
     "before fmi2ExitInitializationMode"),
    ("negative_mass", "fmi2SetReal: these parameter values make the mass of body 'coupler' (m2) -0.2; a mass must "
     "be >= 0 (nothing was set)"),
])
def test_bad_calls_are_rejected_with_fatal(pairs, tmp_path, which, text):
    """pythonfmu 0.7.0 turns every Python exception into fmi2Fatal (its
    handle_py_exception throws cppfmu::FatalError) and frees the Python class
    object, after which the process cannot instantiate the FMU again (use
    after free; a later call on the instance even segfaults).  No fmi2Error
    is reachable from Python code, so the Python FMU rejects a bad call with
    fmi2Fatal and our message in the log — in a subprocess here, as that
    status announces ("the model computations are irreparably corrupted for
    all FMU instances"), which ends without any further FMI call."""
    path = pairs["fourbar"][1]
    unzip = extract(str(path), unzipdir=str(tmp_path / "u"))
    p = subprocess.run([sys.executable, "-c", _BAD_CALL, str(path), unzip, which], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["status"] == 4
    assert any(st == 4 and text in m for st, m in out["messages"]), out["messages"]


def test_fmu_state_restores_the_trajectory_bit_for_bit(pairs, tmp_path):
    s, vr = _slave(pairs["fourbar"][1], tmp_path)
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    for k in range(10):
        s.doStep(k * 0.01, 0.01)
    state = s.getFMUstate()
    blob = s.serializeFMUstate(state)
    first = []
    for k in range(10, 20):
        s.doStep(k * 0.01, 0.01)
        first.append(s.getReal([vr["theta"], vr["phi"]]))
    for restored in (state, s.deSerializeFMUstate(blob)):
        s.setFMUstate(restored)
        again = []
        for k in range(10, 20):
            s.doStep(k * 0.01, 0.01)
            again.append(s.getReal([vr["theta"], vr["phi"]]))
        assert again == first
    s.terminate()
    s.freeInstance()


def test_singular_configuration_is_a_discard_like_the_c_fmu(tmp_path):
    """Non-Grashof four-bar (as in test_fmu_robustness): the crank reaches its
    limit angle at t ≈ 0.85 s; both FMUs stop at the same last good time."""
    compiled = compiled_model("fourbar_toggle")
    c_path = fmu_mod.package(compiled.embedding, compiled.generated, tmp_path / "tg.fmu", windows=False, use_cache=True)
    py_path = pyruntime.package(compiled, tmp_path / "tg_py.fmu")
    s, vr = _slave(py_path, tmp_path)
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    t, h = 0.0, 0.01
    with pytest.raises(FMICallException) as e:
        for _ in range(300):
            s.doStep(t, h)
            t += h
    assert e.value.status == 2                  # fmi2Discard
    assert 0.8 < t < 0.9
    theta, r = s.getReal([vr["theta"], vr["constraint_residual"]])
    assert 2.2 < theta < math.acos(-29 / 48) and r <= 1e-12   # the last good state
    s.freeInstance()
    rc = simulate_fmu(str(c_path), stop_time=3.0, output_interval=0.01, output=["theta"])
    rp = simulate_fmu(str(py_path), stop_time=3.0, output_interval=0.01, output=["theta"])
    assert rp["time"][-1] == rc["time"][-1] and 0.8 < rp["time"][-1] < 0.9
    assert np.array_equal(rp["theta"], rc["theta"])


def test_negative_masses_are_refused_like_the_c_fmu(pairs, capsys):
    """Masses set negative: before, BᵀMB was not positive definite and both
    runtimes stopped at t = 0 (the C one with Discard at the first step);
    a negative mass that left BᵀMB positive definite (m2 = -0.2 alone) ran
    with OK.  Now ExitInitializationMode (values set before it) and
    fmi2SetReal (after it) refuse either, naming the first body whose mass
    is negative: the C FMU with fmi2Error (here through fmpy's simulate,
    the masses as start values), the Python FMU with fmi2Fatal
    (``test_bad_calls_are_rejected_with_fatal``, in a subprocess).  The
    Python FMU still runs its default masses."""
    from fmpy.fmi1 import FMICallException
    from fmigen.verify.validate import simulate
    c_path, py_path, compiled = pairs["fourbar"]
    with pytest.raises(FMICallException):
        simulate(c_path, ["theta", "alpha", "phi"], 0.05, 0.001, start_values={"m1": -1.0, "m2": -1.0, "m3": -1.0})
    out, err = capsys.readouterr()
    assert out == ""
    assert "ExitInitializationMode: these parameter values make the mass of body 'crank' (m1) -1; a mass must " \
           "be >= 0" in err, err
    r = simulate(py_path, ["theta", "alpha", "phi"], 0.05, 0.001)
    assert r["time"][-1] == pytest.approx(0.05)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *args], capture_output=True, text=True)


def test_cli_build_runtime_python(tmp_path):
    out = tmp_path / "sc.fmu"
    p = _cli("build", "slider_crank", "-o", str(out), "--runtime", "python", "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    assert info["runtime"] == "python" and info["independent"] == ["theta"]
    assert validate_fmu(str(out)) == []
    r = simulate_fmu(str(out), stop_time=0.1, output_interval=0.01, output=["theta"])
    assert len(r) == 11 and np.isfinite(r["theta"]).all()


@pytest.mark.parametrize("extra", [["--kind", "me"], ["--fmi", "3"]])
def test_cli_runtime_python_is_fmi2_cs_only(tmp_path, extra):
    p = _cli("build", "fourbar", "-o", str(tmp_path / "x.fmu"), "--runtime", "python", *extra)
    assert p.returncode == 2
    assert "--runtime python builds FMI 2.0 Co-Simulation only" in p.stderr
    assert not (tmp_path / "x.fmu").exists()


def test_cli_without_pythonfmu_says_what_is_missing(tmp_path):
    """With pythonfmu not importable (blocked in sys.modules, as on a machine
    without it) the build stops with exit 2 and a message naming the fix."""
    code = ("import sys; sys.modules['pythonfmu'] = None; from fmigen.cli import main; "
            f"sys.exit(main(['build', 'fourbar', '-o', {str(tmp_path / 'x.fmu')!r}, '--runtime', 'python']))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2
    assert "--runtime python needs pythonfmu" in p.stderr and "pip install pythonfmu" in p.stderr
    assert not (tmp_path / "x.fmu").exists()


def test_an_augmented_build_is_refused_not_packaged_as_embedded(tmp_path):
    """A compiled model carrying an augmented formulation (build_fmu with
    --kinematics spring) cannot silently become an embedded Python FMU."""
    _, compiled = build_fmu("fourbar", tmp_path / "fb_spring.fmu", kinematics="spring", windows=False)
    with pytest.raises(pyruntime.PythonRuntimeError, match="--kinematics spring needs the C runtime"):
        pyruntime.package(compiled, tmp_path / "fb_spring_py.fmu")


def test_python_newton_block_agrees_with_the_c(tmp_path):
    """The landing gear's block is solved by Newton from the prediction in
    every step (``TriangularBlock.newton_first``): a fresh Jacobian, then a
    chord step with its LU factors (codegen_newton.CHORD_STOP), in C and in the
    Python port (``pyruntime._newton_lines``).  The mechanisms above only
    reach Newton in a polish or a fallback."""
    c_path, compiled = build_fmu("landing_gear_dynamic", tmp_path / "gear_c.fmu", windows=False)
    assert [solved_block.newton_first for solved_block in compiled.triangular.blocks] == [True]
    py_path, _ = pyruntime.build_python_fmu("landing_gear_dynamic", tmp_path / "gear_py.fmu", compiled=compiled)
    coords, outs = _outputs(compiled)
    rc = simulate_fmu(str(c_path), stop_time=0.3, output_interval=0.01, output=outs)
    rp = simulate_fmu(str(py_path), stop_time=0.3, output_interval=0.01, output=outs)
    diffs = _max_diffs(rc, rp, coords)
    print("gear: max |C - Python| over 0.3 s:", diffs)
    # measured 1.6e-15 (p_BC, integrated, 0.0): round-off of the Python
    # embedding's LU port against the C's straight-line solve, not of Newton
    assert max(diffs.values()) <= 1e-13, diffs
    assert rp["constraint_residual"].max() <= 1e-12
    # it moves: the gear folds under gravity, p_BC 2 -> 2.17 in these 0.3 s
    assert np.ptp(rp["p_BC"]) > 0.1


def test_ldlt_solves_as_numpy_and_refuses_an_indefinite_matrix():
    """The Python runtime's LDLᵀ (the C runtime's factorization of B^T M B)
    against numpy's solver on a random symmetric positive definite 5×5, and
    None for an indefinite one (the C runtime's refusal)."""
    rng = np.random.default_rng(3)
    G = rng.normal(size=(5, 5))
    A = G @ G.T + 5 * np.eye(5)
    b = rng.normal(size=5)
    factor = numeric.ldlt_factor(5, list(A.ravel()))
    x = list(b)
    numeric.ldlt_solve(5, *factor, x)
    assert np.max(np.abs(np.array(x) - np.linalg.solve(A, b))) < 1e-13
    A[4, 4] = -1.0
    assert numeric.ldlt_factor(5, list(A.ravel())) is None


def test_a_mass_check_python_cannot_evaluate_fails_like_the_c_one():
    """A mass of sqrt(m2) at m2 = -1: C computes NaN and the condition fails;
    Python's math.sqrt raises, which in the FMU would have been fmi2Fatal
    with Python's own message.  The generated check (here at the build's
    defaults, mass_checks.mass_check_defaults) fails the condition instead."""
    import sympy as sp
    from fmigen.generate import mass_checks
    from fmigen.model import ModelError
    m = load_mechanism("fourbar")
    m2 = next(p for p in m.parameters if p.name == "m2")
    m2.value = -1.0
    next(b for b in m.bodies if b.name == "coupler").mass = sp.sqrt(m2.symbol)
    with pytest.raises(ModelError, match=r"the mass of body 'coupler' \(m2\) is nan at the default parameter values"):
        mass_checks.mass_check_defaults(m)


@pytest.mark.parametrize("data, outs", [("fourbar_inverse_trig", ["asin_out", "acos_out", "atan_out"]),
                                        ("fourbar_exp_log_tan", ["tan_out", "exp_out", "log_out", "log10_g"])])
def test_inverse_trig_tan_exp_log_outputs_agree_with_the_c_fmu(tmp_path, data, outs):
    """asin, acos, atan, tan, exp and log in a model's outputs (and the
    latter three in its crank moment) print as the runtime's own in both
    runtimes (fmigen_asin, ..., fmigen_log: printer._Printer; the Python
    ports, generate/elementary.py, have the C's bits: test_runtime_lu): the Python FMU
    builds, runs and reports the C FMU's values to round-off, over a motion
    that sweeps their arguments.  (Not bit for bit: the two runtimes'
    embeddings differ in round-off, so their coordinates do, measured up to
    2.2e-16 over 0.5 s.)  Before, with only the outputs read: the C FMU's
    exp_out, exp(3 sin(α + θ)), took the coupler angle α, which nothing
    else reads bare (deferred), as it was at the start: 0.63 off at
    0.5 s (codegen._TrigFunctions saw a bare angle only outside sin/cos
    and in a sin/cos of the angle alone)."""
    spec = str(Path(__file__).parent / "data" / f"{data}.py")
    c_path, compiled = build_fmu(spec, tmp_path / "c.fmu", windows=False)
    py_path, _ = pyruntime.build_python_fmu(spec, tmp_path / "py.fmu", compiled=compiled)
    rc = simulate_fmu(str(c_path), stop_time=0.5, output_interval=0.01, output=outs)
    rp = simulate_fmu(str(py_path), stop_time=0.5, output_interval=0.01, output=outs)
    for n in outs:
        # round-off relative to the output's size for exp (up to e^3), an
        # absolute 1e-13 for the inverse trig outputs (|x| <= pi), as before
        scale = 1.0 if data == "fourbar_inverse_trig" else max(1.0, np.max(np.abs(rc[n])))
        assert np.max(np.abs(rc[n] - rp[n])) <= 1e-13 * scale, n
        if n == "log10_g":   # of a parameter: constant, log10(9.8)
            assert abs(rc[n][-1] - math.log10(9.8)) <= 2.3e-16, rc[n]
        else:
            assert np.ptp(rc[n]) > 1e-3, n
