"""The FMU itself: standard conformance and robustness, through fmpy."""
import shutil

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave
from fmpy.validation import validate_fmu


def test_validate_fmu_reports_nothing(fourbar_fmu):
    path, _ = fourbar_fmu
    assert validate_fmu(str(path)) == []


def test_variable_names_follow_the_conventions(fourbar_fmu):
    md = read_model_description(str(fourbar_fmu[0]))
    names = {v.name: v for v in md.modelVariables}
    for n in ["theta", "alpha", "phi", "der(theta)", "der(alpha)", "der(phi)",
              "constraint_residual", "tau", "internal_step", "m1", "g"]:
        assert n in names, n
    assert names["tau"].causality == "input" and float(names["tau"].start) == 6.0
    assert names["theta"].initial == "exact" and names["alpha"].initial == "calculated"


@pytest.fixture()
def slave(fourbar_fmu, tmp_path):
    path, _ = fourbar_fmu
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "unzip"))
    messages = []
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="t")
    s.instantiate(loggingOn=True)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    yield s, vr
    try:
        s.terminate()
    except FMICallException:
        pass
    s.freeInstance()
    shutil.rmtree(unzip, ignore_errors=True)


def _init(s):
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()


def test_start_assembled_at_initialization(slave):
    s, vr = slave
    _init(s)
    a, p, r = s.getReal([vr["alpha"], vr["phi"], vr["constraint_residual"]])
    assert a == pytest.approx(0.3532808961981055, abs=1e-14)
    assert p == pytest.approx(1.2648578195810691, abs=1e-14)
    assert r <= 1e-15


def test_nonpositive_communication_step_is_an_error_and_changes_nothing(slave):
    s, vr = slave
    _init(s)
    before = s.getReal([vr["theta"], vr["der(theta)"]])
    for h in (0.0, -1e-3):
        with pytest.raises(FMICallException):
            s.doStep(0.0, h)
    assert s.getReal([vr["theta"], vr["der(theta)"]]) == before
    s.doStep(0.0, 0.01)  # the FMU time did not move: t = 0 is still the communication point
    assert s.getReal([vr["theta"]])[0] > before[0]


def test_nan_input_is_an_error_and_changes_nothing(slave):
    s, vr = slave
    _init(s)
    with pytest.raises(FMICallException):
        s.setReal([vr["tau"]], [float("nan")])
    assert s.getReal([vr["tau"]]) == [6.0]
    s.doStep(0.0, 0.01)  # still usable
    assert s.getReal([vr["constraint_residual"]])[0] <= 1e-12


def test_nonpositive_internal_step_is_rejected(slave):
    s, vr = slave
    with pytest.raises(FMICallException):
        s.setReal([vr["internal_step"]], [0.0])
    _init(s)
    assert s.getReal([vr["internal_step"]]) == [1e-3]


def test_wrong_communication_point_is_an_error(slave):
    s, vr = slave
    _init(s)
    s.doStep(0.0, 0.01)
    with pytest.raises(FMICallException):
        s.doStep(0.5, 0.01)


def test_state_restore_reproduces_trajectory_bit_for_bit(slave):
    s, vr = slave
    _init(s)
    s.doStep(0.0, 0.1)
    state = s.getFMUstate()
    t, out = 0.1, []
    for _ in range(20):
        s.doStep(t, 0.01); t += 0.01
    first = s.getReal([vr["theta"], vr["alpha"], vr["der(phi)"]])
    s.setFMUstate(state)
    t = 0.1
    for _ in range(20):
        s.doStep(t, 0.01); t += 0.01
    assert s.getReal([vr["theta"], vr["alpha"], vr["der(phi)"]]) == first
    s.freeFMUstate(state)


def test_communication_step_not_a_multiple_of_internal_step(slave):
    """A 2.5 ms communication step with a 1 ms internal step is done as
    1 + 1 + 0.5 ms, so the state lands exactly on each communication point:
    40 such steps agree with one 0.1 s step of 100 full internal steps to
    RK4's error (measured 1.1e-14; dropping the 0.5 ms remainders, i.e.
    stopping at 0.08 s, differs by 2.6e-2)."""
    s, vr = slave
    _init(s)
    start = s.getFMUstate()
    t = 0.0
    for _ in range(40):
        s.doStep(t, 0.0025); t += 0.0025
    assert s.getReal([vr["constraint_residual"]])[0] <= 1e-12
    split = np.array(s.getReal([vr["theta"], vr["der(theta)"], vr["phi"]]))
    s.setFMUstate(start)
    s.doStep(0.0, 0.1)
    whole = np.array(s.getReal([vr["theta"], vr["der(theta)"], vr["phi"]]))
    s.freeFMUstate(start)
    assert whole[1] > 0.1                       # the crank really moved
    assert np.abs(split - whole).max() <= 1e-10, np.abs(split - whole).max()


def test_stepping_at_the_internal_step_is_bit_identical_to_one_long_step(slave):
    """At a communication interval of h each doStep commits its end state
    (kinematics, velocities) and the next step's first stage takes the
    kinematics from that commit (FmigenCore.solved) instead of solving again;
    one 128-step doStep solves every later stage itself (only its first
    stage reuses the assembly of ExitInitializationMode).  The two must agree bit
    for bit (h = 2⁻¹⁰ s, so every time and step size is exact in binary and
    both paths take the same steps), and the outputs read between steps
    must be those of each step's end (angles completed, residual of the new
    state)."""
    s, vr = slave
    h = 2.0 ** -10
    s.setReal([vr["internal_step"]], [h])
    _init(s)
    start = s.getFMUstate()
    names = ["theta", "der(theta)", "alpha", "der(alpha)", "phi", "der(phi)", "constraint_residual"]
    refs = [vr[n] for n in names]
    t, alphas = 0.0, []
    for _ in range(128):
        s.doStep(t, h); t += h
        alphas.append(s.getReal([vr["alpha"]])[0])
    stepped = s.getReal(refs)
    s.setFMUstate(start)
    s.doStep(0.0, 128 * h)
    whole = s.getReal(refs)
    s.freeFMUstate(start)
    assert stepped == whole, dict(zip(names, np.subtract(stepped, whole)))
    assert stepped[-1] <= 1e-15
    # alpha, a dependent angle, followed the crank step by step
    assert len(set(alphas)) == 128 and alphas[-1] == whole[2]
