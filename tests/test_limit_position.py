"""A limit position of the partition: the FMU must stop there, never carry on
with OK on the wrong branch.

The geometry is the fuzzer's case fuzz1_016_fourbar (``scripts/corpus.py
--fuzz 200 --seed 1``): a non-Grashof four-bar (ground 2.279, crank 1.637,
coupler 1.305, rocker 1.684: s + l = 3.916 > p + q = 3.589) whose crank θ,
the independent coordinate, swings down under its torque and gravity to
its limit angle, where coupler and rocker are stretched in line:
|A − O4| = coupler + rocker gives cos θ = (1.637² + 2.279² − 2.989²) /
(2·1.637·2.279), θ* = −1.71338.  There Φ_d is singular; the mechanism
passes through onto the other assembly branch while θ turns back (IDA, the
Cartesian reference and MuJoCo agree).  Before, the FMU turned θ back on
the same branch at t ≈ 0.832 s (the coupler angle A reversed from −8.8 to
+3.6 rad/s in one 1 ms step) and ran on with fmi2OK, 1.8 rad off the
references.  Now every variant returns Discard before that step, naming
the limit position and θ.
"""
import math
import sys
from ctypes import byref, c_double
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave

from fmigen.pyfmu import pyruntime
from fmigen.fmi import fmu as fmu_mod
from fmigen.build.pipeline import compile_model, prepare_mechanism

sys.path.append(str(Path(__file__).parent))
from corpus._families import four_bar  # noqa: E402

THETA_LIMIT = -math.acos((1.637**2 + 2.279**2 - 2.989**2) / (2 * 1.637 * 2.279))   # -1.71338
#: where the old FMU's crank turned back on the wrong branch (its 1 ms steps)
T_WRONG_TURN = 0.832


def fuzz_fourbar():
    return four_bar("limit_fourbar", "fuzz seed 1 case 16: a crank that reaches its limit angle",
                    2.279, 1.637, 1.305, 1.684, 0.148, True, tau=-2.3104)


@pytest.fixture(scope="module")
def compiled():
    return compile_model(prepare_mechanism(fuzz_fourbar()))


@pytest.fixture(scope="module")
def fmus(compiled, tmp_path_factory):
    d = tmp_path_factory.mktemp("limit")
    return {(fmi, kind): fmu_mod.package(compiled.embedding, compiled.generated, d / f"limit{fmi}{kind}.fmu",
                                         fmi=fmi, kind=kind, windows=False, use_cache=True)
            for fmi, kind in (("2", "cs"), ("3", "cs"), ("2", "me"))}


def _logger(messages):
    def log(*args):
        messages.append(args[-1].decode() if isinstance(args[-1], bytes) else str(args[-1]))
    return log


def _assert_limit_message(text, t_lo=0.8):
    assert "limit position at t=" in text and "theta=" in text and "switch_independent" in text
    t = float(text.split("limit position at t=")[1].split(" ")[0])
    theta = float(text.split("theta=")[1].split(")")[0])
    assert t_lo < t < T_WRONG_TURN
    assert THETA_LIMIT < theta < THETA_LIMIT + 0.02     # within 0.02 rad of the limit, on the assembled side


def test_co_simulation_fmi2_discards_before_the_limit(fmus, tmp_path):
    path = fmus[("2", "cs")]
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    messages = []
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path), unzipdir=str(tmp_path / "u")),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="lim")
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    t, h, last_ok = 0.0, 1e-3, None
    with pytest.raises(FMICallException) as e:
        for _ in range(2000):
            s.doStep(t, h)
            t += h
            last_ok = s.getReal([vr["theta"], vr["A"], vr["der(A)"]])
    assert e.value.status == 2                              # fmi2Discard
    # never OK at or past the wrong turn: the last OK state still moves A
    # the way the mechanism does (decreasing, fast)
    assert 0.8 < t < T_WRONG_TURN
    theta, a, da = last_ok
    assert THETA_LIMIT < theta < THETA_LIMIT + 0.02 and da < -8.0
    assert s.getReal([vr["theta"]])[0] == theta             # the last good state stays readable
    s.freeInstance()
    # what an importer's logger gets: the cause, the coordinate, the time
    res = simulate_fmu(str(path), stop_time=1.0, output_interval=1e-3, output=["theta", "der(A)"],
                       logger=_logger(messages), debug_logging=True)
    assert 0.8 < res["time"][-1] < T_WRONG_TURN and (res["der(A)"][res["time"] > 0.8] < -5.0).all()
    _assert_limit_message(next(m for m in messages if "limit position" in m))


def test_co_simulation_fmi3_discards_with_last_successful_time(fmus, tmp_path):
    from fmpy.fmi3 import FMU3Slave, fmi3Boolean, fmi3Float64
    path = fmus[("3", "cs")]
    md = read_model_description(str(path))
    s = FMU3Slave(guid=md.guid, unzipDirectory=extract(str(path), unzipdir=str(tmp_path / "u3")),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="lim3")
    s.instantiate()
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    ev, term, early, last = fmi3Boolean(), fmi3Boolean(), fmi3Boolean(), fmi3Float64()
    t, h, status = 0.0, 1e-3, 0
    while status == 0 and t < 1.0:
        status = s.dll.fmi3DoStep(s.component, c_double(t), c_double(h), fmi3Boolean(True), byref(ev),
                                  byref(term), byref(early), byref(last))
        if status == 0:
            t += h
    assert status == 2 and term.value                      # fmi3Discard, terminateSimulation
    assert 0.8 < t < T_WRONG_TURN and last.value == pytest.approx(t, abs=1e-12)
    s.terminate()
    s.freeInstance()


def test_model_exchange_completed_integrator_step_discards(fmus):
    """fmpy's CVode (the default ME solver): the derivative calls near the
    limit integrate a singular ODE; the accepted state ahead of it makes
    CompletedIntegratorStep return Discard with the same message."""
    messages = []
    with pytest.raises(FMICallException) as e:
        simulate_fmu(str(fmus[("2", "me")]), stop_time=1.0, output_interval=1e-2, output=["theta"],
                     logger=_logger(messages), debug_logging=True)
    assert e.value.status == 2 and "CompletedIntegratorStep" in str(e.value)
    msg = next(m for m in messages if "limit position" in m)
    assert msg.startswith("CompletedIntegratorStep: ")
    _assert_limit_message(msg, t_lo=0.7)


def test_python_runtime_stops_where_the_c_fmu_does(compiled, fmus, tmp_path):
    py_path = pyruntime.package(compiled, tmp_path / "limit_py.fmu")
    rc = simulate_fmu(str(fmus[("2", "cs")]), stop_time=1.0, output_interval=1e-3, output=["theta"])
    messages = []
    rp = simulate_fmu(str(py_path), stop_time=1.0, output_interval=1e-3, output=["theta"],
                      logger=_logger(messages), debug_logging=True)
    assert 0.8 < rp["time"][-1] < T_WRONG_TURN and rp["time"][-1] == rc["time"][-1]
    assert abs(rp["theta"] - rc["theta"]).max() <= 1e-12      # the runtimes agree to round-off
    _assert_limit_message(next(m for m in messages if "limit position" in m))


def test_a_regular_crank_rocker_runs_to_the_end(tmp_path):
    """The corpus's Grashof crank-rocker (Norton, Example 4-1): its crank is
    regular everywhere, it turns fully; with a slow start and a reversal of
    nothing but the rocker, no limit position is reported: 2 s with OK, and
    its energy balance holds (validate's own check of the trajectory)."""
    from corpus.fourbar_crank_rocker import build
    c = compile_model(prepare_mechanism(build()))
    path = fmu_mod.package(c.embedding, c.generated, tmp_path / "crank_rocker.fmu", windows=False, use_cache=True)
    res = simulate_fmu(str(path), stop_time=2.0, output_interval=1e-2)
    assert res["time"][-1] == pytest.approx(2.0)


def test_an_open_chain_turning_back_is_no_limit(tmp_path):
    """The corpus pendulum (an open chain: no dependent coordinates) swings
    out from rest and turns back at t ≈ 1.1 s: its velocity falls to zero
    and reverses like a crank at its limit, but nothing moves on; 3 s with
    OK, and the swing's turning points are where energy conservation puts
    them (θ back at its start, −π/2 + 2, to the step's accuracy)."""
    from corpus.pendulum import build
    c = compile_model(prepare_mechanism(build()))
    path = fmu_mod.package(c.embedding, c.generated, tmp_path / "pendulum.fmu", windows=False, use_cache=True)
    res = simulate_fmu(str(path), stop_time=3.0, output_interval=1e-3, output=["theta", "der(theta)"])
    assert res["time"][-1] == pytest.approx(3.0)
    v = res["der(theta)"]
    assert (v[1:] * v[:-1] < 0).sum() >= 2                  # it turned back at least twice
    back = res["theta"][res["time"] > 1.5]                    # the second turning point on the start's side
    assert back.max() == pytest.approx(-math.pi / 2 + 2.0, abs=1e-5)


def test_with_a_switch_set_the_fmu_carries_the_motion_through_the_limit(tmp_path):
    """The way through that the message names: the same geometry with the
    rocker angle as a second set of independent coordinates.  The FMU
    switches to phi before θ's limit (phi is regular there) and follows the
    mechanism onto the other branch: within 1e-5 of the IDA reference over
    1 s, where the FMU without the set stops at 0.83 s (and before it ran on
    1.8 rad off)."""
    from fmigen.build.pipeline import as_mechanism
    from fmigen.verify.validate import validate
    m = as_mechanism(fuzz_fourbar())
    m.switch_independent = [["phi"]]
    r = validate(m, stop_time=1.0, fmu_path=tmp_path / "switching.fmu")
    ida = r.references["ida"]["max_abs_error"]
    assert max(ida.values()) < 1e-5, ida
    # it went through: θ came to its limit and turned back
    res = simulate_fmu(str(tmp_path / "switching.fmu"), stop_time=1.0, output_interval=1e-3, output=["theta"])
    assert res["time"][-1] == pytest.approx(1.0)
    assert res["theta"].min() == pytest.approx(THETA_LIMIT, abs=1e-3) and res["theta"][-1] > THETA_LIMIT + 0.05


# -- two independent coordinates: a five-bar's dyad at its fold ------------

#: fuzz seed 1 case 175 (``scripts/corpus.py --fuzz 200 --seed 1``)
FOLD_PARAMS = {"ground": 1.493, "crank1": 1.21, "coupler1": 2.465, "coupler2": 0.709, "crank2": 2.272,
               "theta1": 5.682, "theta2": 5.984, "up": True, "tau1": -4.4112, "tau2": 3.9875}
#: where the references pass the dyad's fold (C = 0, between the samples
#: C = +0.0107 at 0.726 s and C = -0.031 at 0.73 s); the old FMU turned C
#: back there and ran on with OK until its kinematics failed at 0.9445 s
T_FOLD = 0.73


def fuzz_five_bar():
    from corpus._families import five_bar
    return five_bar("fold_five_bar", "fuzz seed 1 case 175: a five-bar whose dyad passes its fold", **FOLD_PARAMS)


def _assert_fold_message(text, t_lo=0.72):
    assert "limit position at t=" in text and "theta1=" in text and "theta2=" in text
    assert "switch_independent" in text
    t = float(text.split("limit position at t=")[1].split(" ")[0])
    assert t_lo < t < T_FOLD


def _stops_ahead_of_the_fold_within_the_references(r, text, independent, t_lo):
    """What both fold tests check of a ``validate`` run at 1 ms samples
    whose FMU stopped (``text``: fmpy's stderr, which carries the FMU's
    message): the limit-position message, the stop between ``t_lo`` and the
    fold, every coordinate within validate's tolerance of IDA on validate's
    own grid (0.01 s); at every 1 ms sample the independent coordinates
    within it, the couplers within what B = dq_d/dq_i makes of their error
    there (δq_d ≈ B δq_i, ‖B‖ the message's, at the stop the largest on the
    way); and the references' C still > 0 at the stop, as the FMU's."""
    from fmigen.verify.compare import coordinate_error
    from fmigen.verify.validate import DEFAULT_COORD_TOL
    _assert_fold_message(text)
    t = r.times
    assert t_lo < t[-1] < T_FOLD
    ida = r.reference
    err = {n: coordinate_error(r.fmu_result[n], ida.q[:, i]) for i, n in enumerate(ida.names)}
    grid = np.isclose(t * 100, np.round(t * 100), atol=1e-6)
    assert all(e[grid].max() <= DEFAULT_COORD_TOL for e in err.values()), {n: e[grid].max() for n, e in err.items()}
    independent_error = np.sqrt(sum(err[n] ** 2 for n in independent))
    assert independent_error.max() <= DEFAULT_COORD_TOL
    gain = float(text.split("|B| = |dq_d/dq_i| rose ")[1].split(", to ")[1].split(")")[0])
    assert 100 < gain < 1000
    assert max(err["A"].max(), err["C"].max()) <= gain * independent_error.max()
    c = ida.names.index("C")
    assert ida.q[-1, c] > 0 and r.fmu_result["C"][-1] > 0


def test_five_bar_discards_at_its_fold_before_leaving_the_references(tmp_path, capsys):
    """Two independent coordinates (the cranks θ1, θ2): at the dyad's fold
    only the cranks' velocity across it vanishes, so max|v_d|/max|v_i|
    stays bounded and the one-coordinate test saw nothing; ‖Φ_d⁻¹Φ_i‖
    grows like 1/|t − t*|.  The FMU now stops with Discard a step before
    the fold, and up to there it is within validate's tolerance of the IDA
    and Cartesian references (before, it ran on with OK 5.76 rad off)."""
    from fmigen.verify.validate import validate
    r = validate(fuzz_five_bar(), stop_time=1.0, output_interval=1e-3, fmu_path=tmp_path / "fold.fmu")
    _stops_ahead_of_the_fold_within_the_references(r, capsys.readouterr().err, ["theta1", "theta2"],
                                                  t_lo=0.725)


@pytest.fixture(scope="module")
def fold_compiled():
    return compile_model(prepare_mechanism(fuzz_five_bar()))


def test_five_bar_fold_in_every_runtime(fold_compiled, tmp_path):
    """FMI 3 Co-Simulation, FMI 2 Model Exchange (fmpy's CVode: the
    accepted state ahead of the fold makes CompletedIntegratorStep return
    Discard) and the Python runtime, which stops where the C FMU does."""
    c = fold_compiled
    paths = {(fmi, kind): fmu_mod.package(c.embedding, c.generated, tmp_path / f"fold{fmi}{kind}.fmu", fmi=fmi,
                                          kind=kind, windows=False, use_cache=True)
             for fmi, kind in (("2", "cs"), ("3", "cs"), ("2", "me"))}
    rc = simulate_fmu(str(paths[("2", "cs")]), stop_time=1.0, output_interval=1e-3, output=["theta1", "C"])
    assert 0.72 < rc["time"][-1] < T_FOLD
    messages = []
    with pytest.raises(FMICallException) as e:
        simulate_fmu(str(paths[("3", "cs")]), stop_time=1.0, output_interval=1e-3, output=["C"],
                     logger=_logger(messages), debug_logging=True)
    assert e.value.status == 2 and "fmi3DoStep" in str(e.value)
    _assert_fold_message(next(m for m in messages if "limit position" in m))
    messages = []
    with pytest.raises(FMICallException) as e:
        simulate_fmu(str(paths[("2", "me")]), stop_time=1.0, output_interval=1e-2, output=["C"],
                     logger=_logger(messages), debug_logging=True)
    assert e.value.status == 2 and "CompletedIntegratorStep" in str(e.value)
    _assert_fold_message(next(m for m in messages if "limit position" in m), t_lo=0.7)   # CVode's own steps
    messages = []
    rp = simulate_fmu(str(pyruntime.package(c, tmp_path / "fold_py.fmu")), stop_time=1.0, output_interval=1e-3,
                      output=["theta1", "C"], logger=_logger(messages), debug_logging=True)
    assert rp["time"][-1] == rc["time"][-1]
    assert abs(rp["C"] - rc["C"]).max() <= 1e-9
    _assert_fold_message(next(m for m in messages if "limit position" in m))


def test_with_a_switch_set_the_five_bar_passes_its_fold(tmp_path):
    """The switch comes first for two coordinates too: with (θ1, C) as a
    second set of independent coordinates the FMU switches before the
    dyad's fold (C is regular there) and follows the mechanism onto the
    other assembly, within 1e-6 of the IDA reference over 1 s, where the FMU
    without the set stops at 0.726 s."""
    from fmigen.build.pipeline import as_mechanism
    from fmigen.verify.validate import DEFAULT_COORD_TOL, validate
    m = as_mechanism(fuzz_five_bar())
    m.switch_independent = [["theta1", "C"]]
    r = validate(m, stop_time=1.0, fmu_path=tmp_path / "fold_switching.fmu")
    assert r.fmu_result["time"][-1] == pytest.approx(1.0)
    ida = r.references["ida"]["max_abs_error"]
    assert max(ida.values()) < DEFAULT_COORD_TOL, ida
    assert r.fmu_result["C"][-1] < 0                      # on the dyad's other assembly


# -- three independent coordinates: the five-bar carrying a pendulum -------

def five_bar_with_load():
    """The fold five-bar above with a short light pendulum (0.3 m, 3 g)
    hinged on crank 1 at 0.6 m: a third independent coordinate ψ, coupled
    to the cranks through the dynamics, the same fold of the dyad ahead."""
    from corpus._families import _bar, five_bar
    s = five_bar("fold_five_bar_load", "the fold five-bar with a pendulum on crank 1", **FOLD_PARAMS)
    load = _bar(s, "load", 0.3, density=0.01)
    s.revolute("psi", s.bodies["crank1"].marker("L", (0.6, 0)), load.origin, start=-1.0)
    s.independent = ["theta1", "theta2", "psi"]
    s.dof = 3
    return s


def test_three_coordinates_discard_at_the_fold_before_leaving_the_references(tmp_path, capsys):
    """More than two independent coordinates: ‖Φ_d⁻¹Φ_i‖ in unit scales
    comes from the embedding, which forms Φ_d⁻¹Φ_i (prepare leaves its
    square in work).  The FMU stops with Discard a step ahead of the dyad's
    fold, within validate's tolerance of the IDA and Cartesian references up
    to there; before, with no test for three coordinates, it ran on with OK
    to 1 s, C 3.6 rad off IDA."""
    from fmigen.verify.validate import validate
    r = validate(five_bar_with_load(), stop_time=1.0, output_interval=1e-3, fmu_path=tmp_path / "fold3.fmu")
    text = capsys.readouterr().err
    assert "psi=" in text
    _stops_ahead_of_the_fold_within_the_references(r, text, ["theta1", "theta2", "psi"], t_lo=0.72)


def test_three_coordinates_python_runtime_stops_where_the_c_fmu_does(tmp_path):
    """The Python runtime measures the same ‖Φ_d⁻¹Φ_i‖ with a velocities
    solve per independent coordinate and stops at the same step."""
    c = compile_model(prepare_mechanism(five_bar_with_load()))
    path = fmu_mod.package(c.embedding, c.generated, tmp_path / "fold3.fmu", fmi="2", kind="cs", windows=False,
                           use_cache=True)
    rc = simulate_fmu(str(path), stop_time=1.0, output_interval=1e-3, output=["theta1", "C", "psi"])
    assert 0.72 < rc["time"][-1] < T_FOLD
    messages = []
    rp = simulate_fmu(str(pyruntime.package(c, tmp_path / "fold3_py.fmu")), stop_time=1.0, output_interval=1e-3,
                      output=["theta1", "C", "psi"], logger=_logger(messages), debug_logging=True)
    assert rp["time"][-1] == rc["time"][-1]
    assert abs(rp["C"] - rc["C"]).max() <= 1e-9
    _assert_fold_message(next(m for m in messages if "limit position" in m))


def test_three_coordinates_recursive_dynamics_discard_where_the_embedded_build_does(tmp_path, capsys):
    """The recursive elimination never forms Φ_d⁻¹Φ_i: its loop blocks'
    Φ_ED⁻¹Φ_EN in unit scales (codegen_recursive.accelerations) feed the
    limit test instead.  Built with ``dynamics="recursive"`` the loaded
    five-bar stops at the same step as the embedded build, within
    validate's tolerance of the IDA and Cartesian references up to there;
    before, the recursive build had no test and ran on to 1 s with OK."""
    from fmigen.verify.validate import validate
    mech = prepare_mechanism(five_bar_with_load())
    builds = {dyn: compile_model(mech, dynamics=dyn) for dyn in ("embedded", "recursive")}
    assert builds["recursive"].generated.macros.get("FMIGEN_DYNAMICS_RECURSIVE")
    paths = {dyn: fmu_mod.package(c.embedding, c.generated, tmp_path / f"fold3_{dyn}.fmu", fmi="2", kind="cs",
                                  windows=False, use_cache=True) for dyn, c in builds.items()}
    runs = {dyn: simulate_fmu(str(p), stop_time=1.0, output_interval=1e-3, output=["theta1", "C", "psi"])
            for dyn, p in paths.items()}
    assert runs["recursive"]["time"][-1] == runs["embedded"]["time"][-1]
    capsys.readouterr()
    r = validate(five_bar_with_load(), stop_time=1.0, output_interval=1e-3, existing_fmu=paths["recursive"])
    text = capsys.readouterr().err
    assert "psi=" in text
    _stops_ahead_of_the_fold_within_the_references(r, text, ["theta1", "theta2", "psi"], t_lo=0.72)
