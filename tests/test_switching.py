"""Coordinate switching (paper 004) on the real binaries: the slider-crank
with the slider position independent passes its dead centres only by
switching to the crank angle (Co-Simulation); Model Exchange, which cannot
switch, reports Discard there naming the block, never OK.  The match with
the IDA reference through seven dead centres is in test_exact_kinematics."""
import fmpy
import numpy as np
import pytest
from conftest import reset_fmpy_logger
from fmpy.fmi2 import FMU2Slave

from fmigen.verify.check import check
from fmigen.build.pipeline import build_fmu, build_fmus


@pytest.fixture(scope="module")
def slider_fmus(tmp_path_factory):
    d = tmp_path_factory.mktemp("switching")
    # one derivation, both interfaces (fmigen build --kind cs,me)
    (cs, me), _ = build_fmus("slider_crank_from_slider", [(d / "cs.fmu", "2", "cs"), (d / "me.fmu", "2", "me")])
    return cs, me


def _messages():
    out = []

    def logger(component, instance_name, status, category, message):
        out.append((status, category.decode(), message.decode()))
    return out, logger


def test_cs_switches_to_the_crank_and_logs_it(slider_fmus):
    cs, _ = slider_fmus
    msgs, logger = _messages()
    r = fmpy.simulate_fmu(str(cs), stop_time=0.5, output_interval=0.01, output=["theta", "x"],
                          logger=logger, debug_logging=True)
    assert r["time"][-1] == pytest.approx(0.5)
    events = [m for s, c, m in msgs if "coordinate switching" in m]
    assert events and "independent coordinates now theta" in events[0], msgs[-5:]
    # the crank passed the first (inner) dead centre, x = sqrt((l - r)^2 - e^2)
    assert np.min(r["x"]) == pytest.approx(np.sqrt(0.4**2 - 0.05**2), abs=1e-3)


def test_a_switching_doStep_logs_nothing_and_the_next_call_reports_the_switch(slider_fmus, tmp_path):
    """Nothing is formatted or logged inside a doStep that succeeds: the
    switch is recorded and its event (the same text as fmpy's run above
    gets) reaches the logger from the next call, here the GetReal after
    the step, with the set and count of that step."""
    from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
    cs, _ = slider_fmus
    md = fmpy.read_model_description(str(cs))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    calls, now = [], ["instantiate"]

    def log(env, name, status, category, message):
        calls.append((now[0], message.decode()))
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(log)
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=fmpy.extract(str(cs), str(tmp_path / "x")),
                    modelIdentifier=md.coSimulation.modelIdentifier, instanceName="a")
    fmu.instantiate(loggingOn=True, callbacks=callbacks)
    fmu.setDebugLogging(True, ["logEvents"])
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    t = 0.0
    for _ in range(50):
        now[0] = "doStep"
        fmu.doStep(t, 0.01)
        t += 0.01
        now[0] = "getReal"
        fmu.getReal([vr["theta"]])
    now[0] = "terminate"
    fmu.terminate()
    fmu.freeInstance()
    assert [m for call, m in calls if call == "doStep"] == [], calls
    events = [(call, m) for call, m in calls if "coordinate switching" in m]
    assert events and events[0] == ("getReal", "coordinate switching: independent coordinates now theta (the "
                                    "previous set neared a singular configuration); 1 switch(es) so far"), calls


def test_me_cannot_switch_and_discards_naming_the_block(slider_fmus):
    _, me = slider_fmus
    msgs, logger = _messages()
    # fmpy's own Euler: CVode calls GetDerivatives from a C callback, where
    # the Discard's exception is swallowed differently under pytest
    with pytest.raises(Exception, match="discard"):
        fmpy.simulate_fmu(str(me), stop_time=0.5, output_interval=0.01, fmi_type="ModelExchange",
                          solver="Euler", step_size=1e-4, logger=logger)
    text = " ".join(m for _, _, m in msgs)
    assert "singular configuration" in text and ("block {theta, beta}" in text or "Φ_d" in text
                                                 or "Jacobian" in text), text[-500:]


def test_state_restored_across_a_switch_is_bit_identical(slider_fmus, tmp_path):
    """FMU state (active partition included): save before the first switch,
    run past it, restore, run again: the same bits."""
    cs, _ = slider_fmus
    md = fmpy.read_model_description(str(cs))
    unzip = fmpy.extract(str(cs), str(tmp_path / "x"))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    fmu = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
                    instanceName="a")
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    state = fmu.getFMUstate()

    def run():
        out = []
        t = 0.0
        for _ in range(40):
            fmu.doStep(t, 0.01)   # raises on a status other than OK
            t += 0.01
            out.append(fmu.getReal([vr["theta"], vr["x"], vr["beta"]]))
        return np.array(out)
    first = run()
    fmu.setFMUstate(state)
    second = run()
    fmu.freeFMUstate(state)
    fmu.terminate()
    fmu.freeInstance()
    assert np.array_equal(first, second)


def test_check_names_the_switch():
    r = check("slider_crank_from_slider")
    assert r["passed"]
    assert len(r["physical_singularities"]) == 2
    for p in r["physical_singularities"]:
        assert p["switching"]["independent"] == ["theta"] and p["switching"]["condition_number"] < 10


def test_switching_rewrites_angle_sum_slots(tmp_path):
    """slider_crank_joints (rod angle B relative to the crank) with the slider
    position independent: both partitions solve B in the angle sum θ + B, so
    the switch rewrites a solution slot of sin/cos(θ + B) from q
    (fmigen_sol_layout's term list).  After the switch to θ it follows the
    θ-independent FMU of the same mechanism (measured ≤ 5.4e-12: RK4 on
    another state vector)."""
    from fmigen.build.pipeline import load_mechanism
    m = load_mechanism("slider_crank_joints")
    m.name, m.independent, m.switch_independent = "scj_from_slider", ["x"], [["theta"]]
    switching, compiled = build_fmu(m, tmp_path / "x.fmu")
    assert compiled.triangular.blocks[0].angle_sums
    plain, _ = build_fmu("slider_crank_joints", tmp_path / "theta.fmu", reuse=True)
    msgs, logger = _messages()
    out = ["theta", "B", "x"]
    r = fmpy.simulate_fmu(str(switching), stop_time=2.0, output_interval=0.01, output=out, logger=logger,
                          debug_logging=True)
    reset_fmpy_logger()   # the next run must not log through the freed logger
    r0 = fmpy.simulate_fmu(str(plain), stop_time=2.0, output_interval=0.01, output=out)
    assert any("independent coordinates now theta" in m_ for _, _, m_ in msgs)
    for n in out:
        assert np.abs(r[n] - r0[n]).max() <= 1e-10, n
