"""Robustness of the real FMU binaries (through fmpy's ctypes classes and a C
harness): bad calls give error statuses and change nothing, many
instantiate/free cycles, no leaks under valgrind, parallel instances,
logging categories, singular configurations reported as Discard."""
import ctypes
import math
import os
import shutil
import subprocess
import sys
import threading
import zipfile
from ctypes import POINTER, byref, c_double
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Model, FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2LastSuccessfulTime, fmi2Terminated
from fmpy.fmi3 import FMU3Model, FMU3Slave

from fmigen.fmi import fmu as fmu_mod
from conftest import compiled_model


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    d = tmp_path_factory.mktemp("robust")
    c = compiled_model("fourbar")
    out = {}
    for fmi in "23":
        for kind in ("cs", "me"):
            p = fmu_mod.package(c.embedding, c.generated, d / f"fb{fmi}{kind}.fmu", fmi=fmi, kind=kind,
                                windows=False, use_cache=True)
            out[fmi, kind] = (p, read_model_description(str(p)), extract(str(p), unzipdir=str(d / f"u{fmi}{kind}")))
    out["dae"] = c.embedding.dae
    return out


def _slave(fmus, fmi="2", kind="cs", name="r", **inst):
    path, md, unzip = fmus[fmi, kind]
    cls = {("2", "cs"): FMU2Slave, ("2", "me"): FMU2Model, ("3", "cs"): FMU3Slave, ("3", "me"): FMU3Model}[fmi, kind]
    ident = (md.coSimulation or md.modelExchange).modelIdentifier
    s = cls(guid=md.guid, unzipDirectory=unzip, modelIdentifier=ident, instanceName=name)
    s.instantiate(**inst)
    return s, {v.name: v.valueReference for v in md.modelVariables}


def _init(s, fmi="2"):
    if fmi == "2":
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
    else:
        s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()


def _status(excinfo):
    return excinfo.value.status


# ---- bad calls: error status, nothing changed ----

@pytest.mark.parametrize("fmi", "23")
def test_bad_doStep_arguments_are_errors_and_change_nothing(fmus, fmi):
    s, vr = _slave(fmus, fmi)
    _init(s, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    s.doStep(0.0, 0.01)
    before = get([vr["theta"], vr["der(theta)"], vr["alpha"]])
    for t, h in [(0.01, 0.0), (0.01, -1e-3), (0.01, math.nan), (0.01, math.inf), (0.5, 0.01),
                 (0.0, 0.01), (math.nan, 0.01)]:
        with pytest.raises(FMICallException) as e:
            s.doStep(t, h)
        assert _status(e) == 3   # Error
        assert get([vr["theta"], vr["der(theta)"], vr["alpha"]]) == before
    s.doStep(0.01, 0.01)   # still usable at the right point
    assert get([vr["theta"]]) != before[:1]
    s.terminate()
    s.freeInstance()


@pytest.mark.parametrize("fmi,kind", [("2", "cs"), ("3", "cs"), ("2", "me"), ("3", "me")])
def test_nan_and_inf_inputs_are_errors_and_change_nothing(fmus, fmi, kind):
    s, vr = _slave(fmus, fmi, kind)
    _init(s, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    set_ = s.setReal if fmi == "2" else s.setFloat64
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(FMICallException) as e:
            set_([vr["tau"], vr["tau"]], [1.0, bad])   # the whole call is rejected
        assert _status(e) == 3
        assert get([vr["tau"]]) == [6.0]
    if kind == "me":
        x = np.array([1.0, math.nan])
        with pytest.raises(FMICallException):
            s.setContinuousStates(x.ctypes.data_as(POINTER(c_double)), 2)
    s.terminate()
    s.freeInstance()


@pytest.mark.parametrize("fmi", "23")
def test_calls_in_the_wrong_state_are_errors(fmus, fmi):
    s, vr = _slave(fmus, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    with pytest.raises(FMICallException) as e:
        s.doStep(0.0, 0.01)                       # before initialization
    assert _status(e) == 3
    s.reset()                                     # reset leaves the error state
    with pytest.raises(FMICallException):
        s.exitInitializationMode()                # not in initialization mode
    s.reset()
    _init(s, fmi)
    with pytest.raises(FMICallException):
        if fmi == "2":
            s.setupExperiment(startTime=0.0)      # after initialization
        else:
            s.enterInitializationMode(startTime=0.0)
    with pytest.raises(FMICallException):
        s.doStep(0.0, 0.01)                       # the instance is now in the error state
    s.reset()
    _init(s, fmi)
    s.doStep(0.0, 0.01)
    with pytest.raises(FMICallException):
        (s.setReal if fmi == "2" else s.setFloat64)([vr["internal_step"]], [2e-3])   # fixed parameter after init
    s.terminate()
    with pytest.raises(FMICallException):
        s.doStep(0.01, 0.01)                      # after terminate
    s.freeInstance()


@pytest.mark.parametrize("fmi,kind", [("2", "cs"), ("2", "me"), ("3", "cs")])
def test_get_real_reads_every_slot_and_refuses_unknown_references(fmus, fmi, kind):
    """GetReal's tables (fmigen_instance.c, index_values): one call for every
    declared variable gives what one call per variable gives; a value
    reference past the table, and the acceleration slot a Co-Simulation FMU
    leaves undeclared, are errors naming it; a Model Exchange FMU solves
    its accelerations when read (the rhs, through the slow path)."""
    s, vr = _slave(fmus, fmi, kind)
    _init(s, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    md = fmus[fmi, kind][1]
    reals = [v for v in md.modelVariables if v.type in ("Real", "Float64") and v.causality != "independent"]
    declared = [v.valueReference for v in reals]
    # at the start, each slot holds what the modelDescription starts it at
    # (the crank angle and velocity, the input, the parameters): a table
    # pointing a group at another's array fails here
    at_start = dict(zip(declared, get(declared)))
    exact = [v for v in reals if v.start is not None and (v.initial == "exact" or v.causality in
                                                         ("input", "parameter"))]
    # the crank angle and velocity, the torque, g, m1..m3 (and internal_step in CS)
    assert len(exact) == (8 if kind == "cs" else 7)
    for v in exact:
        assert at_start[v.valueReference] == float(v.start), v.name
    assert at_start[vr["constraint_residual"]] <= 1e-12
    # one value at a time first (each read observes what it needs itself:
    # a dependent coordinate its deferred angle), all together after, and
    # after the next step the other way round
    if kind == "cs":
        s.doStep(0.0, 0.01)
    singles = [get([r])[0] for r in declared]
    assert get(declared) == singles
    if kind == "cs":
        s.doStep(0.01, 0.01)
        together = get(declared)
        assert together == [get([r])[0] for r in declared] and together != singles
    assert all(math.isfinite(x) for x in singles)
    if kind == "me":
        # the crank under its 6 N·m torque accelerates from rest
        assert get([vr["der(theta,2)"]])[0] > 0
    for bad in (max(declared) + 1000, 2 ** 31):
        with pytest.raises(FMICallException) as e:
            get([declared[0], bad])
        assert _status(e) == 3
    if kind == "cs":
        # the slot of der(theta,2) (value reference 13 in Model Exchange):
        # undeclared in Co-Simulation, an error there
        acc = next(v.valueReference for v in fmus[fmi, "me"][1].modelVariables if v.name == "der(theta,2)")
        assert acc not in declared
        with pytest.raises(FMICallException) as e:
            get([acc])
        assert _status(e) == 3
    s.terminate()
    s.freeInstance()


def test_me_functions_check_state_and_sizes(fmus):
    s, vr = _slave(fmus, "2", "me")
    dx = np.zeros(2)
    with pytest.raises(FMICallException):
        s.getDerivatives(dx.ctypes.data_as(POINTER(c_double)), 2)   # before initialization
    s.reset()
    _init(s, "2")
    with pytest.raises(FMICallException):
        s.getDerivatives(dx.ctypes.data_as(POINTER(c_double)), 3)   # wrong number of states
    s.reset()
    _init(s, "2")
    s.enterContinuousTimeMode()
    s.getDerivatives(dx.ctypes.data_as(POINTER(c_double)), 2)
    assert dx[0] == 0.0 and dx[1] > 0     # at rest, the torque accelerates the crank
    s.terminate()
    s.freeInstance()


# ---- many instances ----

def test_1000_instantiate_free_cycles_in_one_process(fmus):
    path, md, unzip = fmus["2", "cs"]
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar", instanceName="cyc")
    vr = {v.name: v.valueReference for v in md.modelVariables}

    def rss_kb():
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

    first = None
    for k in range(1000):
        s.instantiate()
        _init(s)
        s.doStep(0.0, 0.01)
        state = s.getFMUstate()
        s.freeFMUstate(state)
        val = s.getReal([vr["theta"], vr["alpha"]])
        if first is None:
            first = val
            rss0 = rss_kb()
        assert val == first
        s.terminate()
        s.fmi2FreeInstance(s.component)   # fmpy's freeInstance() would also unload the library
    s.freeLibrary()
    growth = rss_kb() - rss0
    print(f"1000 cycles: resident memory grew by {growth} kB")
    assert growth < 512, f"resident memory grew by {growth} kB over 1000 cycles"


def test_four_instances_in_parallel_threads_match_sequential_runs(fmus):
    path, md, unzip = fmus["2", "cs"]
    vr = {v.name: v.valueReference for v in md.modelVariables}
    torques = [6.0, 3.0, -4.0, 10.0]

    def run(k, out):
        s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar", instanceName=f"p{k}")
        s.instantiate()
        s.setReal([vr["tau"]], [torques[k]])
        _init(s)
        t, traj = 0.0, []
        for _ in range(300):
            s.doStep(t, 0.005)
            t += 0.005
            traj.append(s.getReal([vr["theta"], vr["alpha"], vr["phi"], vr["der(phi)"]]))
        s.terminate()
        s.freeInstance()
        out[k] = np.array(traj)

    sequential = {}
    for k in range(4):
        run(k, sequential)
    parallel = {}
    threads = [threading.Thread(target=run, args=(k, parallel)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k in range(4):
        assert np.array_equal(parallel[k], sequential[k])
    assert not np.array_equal(sequential[0], sequential[1])   # the torques matter


# ---- logging ----

@pytest.mark.parametrize("fmi", "23")
def test_logging_categories_reach_the_logger(fmus, fmi):
    messages = []
    if fmi == "2":
        def log(env, name, status, category, message):
            messages.append((status, category.decode(), message.decode()))
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(log)
        s, vr = _slave(fmus, fmi, callbacks=cb, loggingOn=True)
    else:
        path, md, unzip = fmus["3", "cs"]
        s = FMU3Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar", instanceName="log")

        def log3(env, status, category, message):
            messages.append((status, category.decode(), message.decode()))
        s.instantiate(loggingOn=True, logMessage=log3)
        vr = {v.name: v.valueReference for v in md.modelVariables}
    _init(s, fmi)
    assert any(c == "logEvents" and st == 0 and "initialized at t=0" in m for st, c, m in messages)
    # a rejected value names its variable, not only its value reference
    messages.clear()
    with pytest.raises(FMICallException):
        (s.setReal if fmi == "2" else s.setFloat64)([vr["tau"]], [float("nan")])
    assert messages == [(3, "logStatusError", f"SetReal/SetFloat64: tau (value reference {vr['tau']}) set to a "
                                              "non-finite value (NaN or Inf)")]
    messages.clear()
    with pytest.raises(FMICallException):
        s.doStep(0.0, -1.0)
    assert messages == [(3, "logStatusError", "DoStep: communication step size must be > 0 (got -1)")]
    # only errors: informational messages are filtered, errors still arrive
    s.setDebugLogging(True, ["logStatusError"])
    messages.clear()
    s.terminate()
    assert messages == []
    with pytest.raises(FMICallException):
        s.setDebugLogging(True, ["noSuchCategory"])
    assert messages and messages[-1][1] == "logStatusError" and "noSuchCategory" in messages[-1][2]
    s.freeInstance()


# ---- singular configuration: Discard, Terminated, LastSuccessfulTime ----

@pytest.fixture(scope="module")
def toggle_fmus(tmp_path_factory):
    """conftest.toggle_fourbar as C FMUs (FMI 2 and 3)."""
    c = compiled_model("fourbar_toggle")
    d = tmp_path_factory.mktemp("toggle")
    return {fmi: fmu_mod.package(c.embedding, c.generated, d / f"toggle{fmi}.fmu", fmi=fmi, windows=False,
                                 use_cache=True) for fmi in "23"}


def test_singular_configuration_gives_discard_with_status_functions(toggle_fmus, tmp_path):
    path = toggle_fmus["2"]
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "u"))
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar_toggle", instanceName="tg")
    s.instantiate()
    vr = {v.name: v.valueReference for v in md.modelVariables}
    _init(s)
    t, h = 0.0, 0.01
    with pytest.raises(FMICallException) as e:
        for _ in range(300):
            s.doStep(t, h)
            assert s.getBooleanStatus(fmi2Terminated) is False
            t += h
    assert _status(e) == 2                      # fmi2Discard
    assert 0.8 < t < 0.9
    assert s.getBooleanStatus(fmi2Terminated) is True
    assert s.getRealStatus(fmi2LastSuccessfulTime) == pytest.approx(t, abs=1e-12)
    theta, r = s.getReal([vr["theta"], vr["constraint_residual"]])
    assert theta < math.acos(-29 / 48) and theta > 2.2 and r <= 1e-12   # the last good state
    with pytest.raises(FMICallException):
        s.doStep(t, h)                          # no stepping after a Discard
    s.freeInstance()
    # fmpy's own master handles it and stops at the last successful time
    res = simulate_fmu(str(path), stop_time=3.0, output_interval=0.01, output=["theta"])
    assert 0.8 < res["time"][-1] < 0.9


def test_a_commit_that_fails_loses_nothing_of_the_last_good_state(tmp_path):
    """Explicit Euler at the communication step: each doStep's one stage
    reuses the last commit's solve (the memo), so the toggle's singular
    configuration is met by the commit's kinematics at the step's end.
    That solve goes into the memo's other half (FmigenSolved.side); the good
    state's deferred angles, residual and outputs, never read before the
    failure, must still come from the half it left: after the Discard every
    value is, bit for bit, what an instance that stops at the last good time
    without failing reads."""
    c = compiled_model("fourbar_toggle")
    h = 0.01
    path = fmu_mod.package(c.embedding, c.generated, tmp_path / "toggle_euler.fmu", solver="euler", step=h,
                           windows=False, use_cache=True)
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "u"))
    every = [v.valueReference for v in md.modelVariables if v.type == "Real"]

    def instance(name):
        s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar_toggle", instanceName=name)
        s.instantiate()
        _init(s)
        return s

    s, t = instance("fails"), 0.0
    with pytest.raises(FMICallException) as e:
        for _ in range(300):
            s.doStep(t, h)
            t += h
    assert _status(e) == 2 and 0.8 < t < 0.9
    after = s.getReal(every)
    twin, tt = instance("twin"), 0.0
    for _ in range(round(t / h)):
        twin.doStep(tt, h)
        tt += h
    assert tt == t
    assert after == twin.getReal(every)
    s.freeInstance()
    twin.freeInstance()


def test_singular_configuration_fmi3_reports_last_successful_time(toggle_fmus, tmp_path):
    path = toggle_fmus["3"]
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "u"))
    s = FMU3Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar_toggle", instanceName="tg3")
    s.instantiate()
    _init(s, "3")
    from fmpy.fmi3 import fmi3Boolean, fmi3Float64
    ev, term, early, last = fmi3Boolean(), fmi3Boolean(), fmi3Boolean(), fmi3Float64()
    raw = s.dll.fmi3DoStep
    t, h, status = 0.0, 0.01, 0
    while status == 0 and t < 3.0:
        status = raw(s.component, c_double(t), c_double(h), fmi3Boolean(True), byref(ev), byref(term),
                     byref(early), byref(last))
        if status == 0:
            t += h
    assert status == 2 and term.value and not ev.value and not early.value
    assert 0.8 < t < 0.9 and last.value == pytest.approx(t, abs=1e-12)
    s.terminate()
    s.freeInstance()


# ---- leaks: a C harness against the FMU sources, under valgrind ----

HARNESS_FMI2 = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "fmi2Functions.h"
#include "fmigen_instance.h"
#include "fmu_variables.h"
static int nlog = 0;
static void logger(fmi2ComponentEnvironment e, fmi2String n, fmi2Status s, fmi2String c, fmi2String m, ...)
{ (void)e; (void)n; (void)s; (void)c; (void)m; nlog++; }
int main(void)
{
    fmi2CallbackFunctions cb = {logger, NULL, NULL, NULL, NULL};
    double theta0 = 0.0;
    for (int k = 0; k < 40; k++) {
        fmi2Component c = fmi2Instantiate("h", fmi2CoSimulation, fmigen_model_guid, "", &cb, fmi2False, fmi2True);
        fmi2Component other = fmi2Instantiate("h2", fmi2CoSimulation, fmigen_model_guid, "", &cb, fmi2False, fmi2False);
        if (!c || !other) return 2;
        if (fmi2Instantiate("bad", fmi2CoSimulation, "{wrong}", "", &cb, fmi2False, fmi2False)) return 2;
        fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0);
        fmi2EnterInitializationMode(c);
        fmi2ExitInitializationMode(c);
        double t = 0.0;
        for (int i = 0; i < 10; i++) { if (fmi2DoStep(c, t, 0.01, fmi2True) != fmi2OK) return 3; t += 0.01; }
        fmi2FMUstate s = NULL, s2 = NULL;
        size_t n = 0;
        fmi2GetFMUstate(c, &s);
        fmi2SerializedFMUstateSize(c, s, &n);
        fmi2Byte *buf = malloc(n);
        fmi2SerializeFMUstate(c, s, buf, n);
        fmi2DeSerializeFMUstate(c, buf, n, &s2);
        fmi2SetFMUstate(c, s2);
        free(buf);
        fmi2FreeFMUstate(c, &s);
        fmi2FreeFMUstate(c, &s2);
        fmi2ValueReference vr[2] = {0, VR_U};
        double x[2] = {0.0, NAN};
        if (fmi2DoStep(c, t, -1.0, fmi2True) != fmi2Error) return 4;
        if (fmi2SetReal(c, &vr[1], 1, &x[1]) != fmi2Error) return 4;
        fmi2GetReal(c, vr, 1, x);
        if (k == 0) theta0 = x[0]; else if (x[0] != theta0) return 5;
        fmi2Reset(c);
        fmi2FreeInstance(c);
        fmi2FreeInstance(other);   /* freed without initialization */
    }
    printf("ok %d log messages\n", nlog);
    return nlog > 0 ? 0 : 6;
}
"""

HARNESS_FMI3_ME = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "fmi3Functions.h"
#include "fmigen_instance.h"
static void logger(fmi3InstanceEnvironment e, fmi3Status s, fmi3String c, fmi3String m)
{ (void)e; (void)s; (void)c; (void)m; }
int main(void)
{
    for (int k = 0; k < 40; k++) {
        fmi3Instance c = fmi3InstantiateModelExchange("h", fmigen_model_guid, "", fmi3False, fmi3True, NULL, logger);
        if (!c) return 2;
        if (fmi3InstantiateCoSimulation("cs", fmigen_model_guid, "", fmi3False, fmi3False, fmi3False, fmi3False,
                                         NULL, 0, NULL, logger, NULL)) return 2;  /* ME-only FMU */
        fmi3EnterInitializationMode(c, fmi3False, 0.0, 0.0, fmi3False, 0.0);
        fmi3ExitInitializationMode(c);
        fmi3Boolean a, b, d, e; fmi3Float64 f;
        fmi3UpdateDiscreteStates(c, &a, &b, &d, &e, &d, &f);
        fmi3EnterContinuousTimeMode(c);
        double x[2], dx[2], t = 0.0, h = 1e-3;
        fmi3GetContinuousStates(c, x, 2);
        fmi3FMUState s = NULL;
        for (int i = 0; i < 100; i++) {
            if (fmi3GetContinuousStateDerivatives(c, dx, 2) != fmi3OK) return 3;
            x[0] += h * dx[0]; x[1] += h * dx[1]; t += h;
            fmi3SetTime(c, t);
            fmi3SetContinuousStates(c, x, 2);
            fmi3CompletedIntegratorStep(c, fmi3True, &a, &b);
            if (i == 50) fmi3GetFMUState(c, &s);
        }
        fmi3SetFMUState(c, s);
        size_t n = 0;
        fmi3SerializedFMUStateSize(c, s, &n);
        fmi3Byte *buf = malloc(n);
        fmi3SerializeFMUState(c, s, buf, n);
        fmi3FMUState s2 = NULL;
        fmi3DeserializeFMUState(c, buf, n, &s2);
        free(buf);
        fmi3FreeFMUState(c, &s);
        fmi3FreeFMUState(c, &s2);
        fmi3Terminate(c);
        fmi3Reset(c);
        fmi3FreeInstance(c);
    }
    printf("ok\n");
    return 0;
}
"""


# Every bad call of the catalogue on one instance (FMI 2 Co-Simulation, the
# four-bar): each must return the status it documents, and the instance must
# then still restore a saved state and continue exactly like an instance that
# never saw a bad call.  Built with ASan/UBSan (test_*_under_sanitizers), a
# bad call that reads out of bounds, converts an out-of-range double to an
# integer or uses freed memory aborts the run.
HARNESS_BAD_CALLS = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"
#include "fmigen_instance.h"
#include "fmu_variables.h"
static void logger(fmi2ComponentEnvironment e, fmi2String n, fmi2Status s, fmi2String c, fmi2String m, ...)
{ (void)e; (void)n; (void)s; (void)c; (void)m; }
static int fails = 0;
#define EXPECT(call, st) do { int r_ = (call); if (r_ != (st)) { \
    fprintf(stderr, "line %d: %s returned %d, expected %d\n", __LINE__, #call, r_, (st)); fails++; } } while (0)
static fmi2Component start(const fmi2CallbackFunctions *cb, const char *name, double h)
{
    fmi2Component c = fmi2Instantiate(name, fmi2CoSimulation, fmigen_model_guid, "", cb, fmi2False, fmi2True);
    if (!c) exit(2);
    fmi2ValueReference vh = VR_H;
    if (h > 0) fmi2SetReal(c, &vh, 1, &h);
    fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0);
    fmi2EnterInitializationMode(c);
    if (fmi2ExitInitializationMode(c) != fmi2OK) exit(2);
    return c;
}
int main(void)
{
    fmi2CallbackFunctions cb = {logger, NULL, NULL, NULL, NULL};
    fmi2Component c = start(&cb, "bad", 0);
    fmi2ValueReference all[VR_A];
    for (unsigned i = 0; i < VR_A; i++) all[i] = i;
    double t = 0.0, x[VR_A], y[VR_A];
    EXPECT(fmi2DoStep(c, t, 0.01, fmi2True), fmi2OK);
    t += 0.01;
    fmi2FMUstate saved = NULL;
    EXPECT(fmi2GetFMUstate(c, &saved), fmi2OK);
    /* the way back from every Error below: restore and go on */
#define RECOVER() EXPECT(fmi2SetFMUstate(c, saved), fmi2OK)
    const double bad_H[] = {1e17, 1e300, NAN, -1e-3, 0.0, INFINITY, -INFINITY, 5e-324};
    for (size_t k = 0; k < sizeof bad_H / sizeof bad_H[0]; k++) {
        int st = fmi2DoStep(c, t, bad_H[k], fmi2True);
        /* 5e-324 is a valid (tiny) step: OK; everything else an Error */
        if (bad_H[k] == 5e-324) { if (st != fmi2OK) { fprintf(stderr, "tiny step: %d\n", st); fails++; } }
        else if (st != fmi2Error) { fprintf(stderr, "H=%g: %d\n", bad_H[k], st); fails++; }
        RECOVER();
    }
    EXPECT(fmi2DoStep(c, NAN, 0.01, fmi2True), fmi2Error); RECOVER();
    EXPECT(fmi2DoStep(c, 1e300, 0.01, fmi2True), fmi2Error); RECOVER();
    /* values and value references */
    fmi2ValueReference vu = VR_U, vbad[] = {VR_END, VR_END + 1000u, 0xffffffffu};
    double nan_ = NAN, inf_ = INFINITY, one = 1.0;
    EXPECT(fmi2SetReal(c, &vu, 1, &nan_), fmi2Error); RECOVER();
    EXPECT(fmi2SetReal(c, &vu, 1, &inf_), fmi2Error); RECOVER();
    for (int k = 0; k < 3; k++) {
        EXPECT(fmi2GetReal(c, &vbad[k], 1, x), fmi2Error); RECOVER();
        EXPECT(fmi2SetReal(c, &vbad[k], 1, &one), fmi2Error); RECOVER();
        fmi2Integer iv = 0; fmi2Boolean bv = 0; fmi2String sv = NULL;
        EXPECT(fmi2GetInteger(c, &vbad[k], 1, &iv), fmi2Error); RECOVER();
        EXPECT(fmi2GetBoolean(c, &vbad[k], 1, &bv), fmi2Error); RECOVER();
        EXPECT(fmi2GetString(c, &vbad[k], 1, &sv), fmi2Error); RECOVER();
    }
    /* NULL pointers */
    EXPECT(fmi2GetReal(c, NULL, 1, x), fmi2Error); RECOVER();
    EXPECT(fmi2GetReal(c, all, 1, NULL), fmi2Error); RECOVER();
    EXPECT(fmi2SetReal(c, &vu, 1, NULL), fmi2Error); RECOVER();
    EXPECT(fmi2SetReal(c, NULL, 1, &one), fmi2Error); RECOVER();
    EXPECT(fmi2GetFMUstate(c, NULL), fmi2Error); RECOVER();
    EXPECT(fmi2SetFMUstate(c, NULL), fmi2Error); RECOVER();
    size_t n = 0;
    EXPECT(fmi2SerializedFMUstateSize(c, saved, &n), fmi2OK);
    EXPECT(fmi2SerializeFMUstate(c, saved, NULL, n), fmi2Error); RECOVER();
    EXPECT(fmi2SerializeFMUstate(c, NULL, (fmi2Byte *)x, n), fmi2Error); RECOVER();
    fmi2FMUstate out = NULL;
    EXPECT(fmi2DeSerializeFMUstate(c, NULL, n, &out), fmi2Error); RECOVER();
    EXPECT(fmi2DeSerializeFMUstate(c, (const fmi2Byte *)x, n, NULL), fmi2Error); RECOVER();
    EXPECT(fmi2DoStep(NULL, t, 0.01, fmi2True), fmi2Error);
    EXPECT(fmi2GetReal(NULL, all, 1, x), fmi2Error);
    EXPECT(fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0), fmi2Error); RECOVER();
    /* untrusted bytes: garbage, truncated, one byte too many, flipped */
    fmi2Byte *good = malloc(n), *bad = malloc(n + 1);
    EXPECT(fmi2SerializeFMUstate(c, saved, good, n), fmi2OK);
    srand(7);
    for (int k = 0; k < 200; k++) {
        for (size_t i = 0; i < n; i++) bad[i] = (fmi2Byte)(rand() & 0xff);
        EXPECT(fmi2DeSerializeFMUstate(c, bad, n, &out), fmi2Error);
    }
    for (size_t len = 0; len < n; len += 1 + len / 3) {
        memcpy(bad, good, len);
        EXPECT(fmi2DeSerializeFMUstate(c, bad, len, &out), fmi2Error);
    }
    memcpy(bad, good, n); bad[n] = 0;
    EXPECT(fmi2DeSerializeFMUstate(c, bad, n + 1, &out), fmi2Error);
    for (int k = 0; k < 2000; k++) {        /* one byte flipped in the snapshot */
        memcpy(bad, good, n);
        bad[sizeof(unsigned) * 4 + (size_t)rand() % (n - sizeof(unsigned) * 4)] = (fmi2Byte)(rand() & 0xff);
        fmi2FMUstate s = NULL;
        if (fmi2DeSerializeFMUstate(c, bad, n, &s) == fmi2OK) {
            fmi2SetFMUstate(c, s);          /* a valid-looking state: it may step or fail, never crash */
            double tt = 0.0;
            fmi2GetReal(c, all, VR_A, x);
            fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &tt);
            fmi2DoStep(c, tt, 1e-3, fmi2True);
            fmi2FreeFMUstate(c, &s);
        }
    }
    RECOVER();
    /* deserialized good bytes restore the saved state */
    fmi2FMUstate back = NULL;
    EXPECT(fmi2DeSerializeFMUstate(c, good, n, &back), fmi2OK);
    /* the Error state (a call in the wrong state puts it there; a bad
     * argument is refused and changes nothing), then SetFMUState from the
     * deserialized copy, then continue */
    EXPECT(fmi2EnterInitializationMode(c), fmi2Error);
    EXPECT(fmi2DoStep(c, t, 0.01, fmi2True), fmi2Error);   /* refused in the Error state */
    EXPECT(fmi2SetFMUstate(c, back), fmi2OK);
    /* the same time arguments as the clean instance below: the branch
     * prediction extrapolates over t - t_base, so other roundings of the grid
     * would differ in the last bit */
    for (int i = 1; i <= 20; i++) { EXPECT(fmi2DoStep(c, 0.01 * i, 0.01, fmi2True), fmi2OK); }
    EXPECT(fmi2GetReal(c, all, VR_A, x), fmi2OK);
    /* the same 21 steps on an instance that saw no bad call */
    fmi2Component ref = start(&cb, "ref", 0);
    for (int i = 0; i < 21; i++) EXPECT(fmi2DoStep(ref, 0.01 * i, 0.01, fmi2True), fmi2OK);
    EXPECT(fmi2GetReal(ref, all, VR_A, y), fmi2OK);
    for (unsigned i = 0; i < VR_A; i++)
        if (x[i] != y[i]) { fprintf(stderr, "vr %u: %.17g after recovery, %.17g clean\n", i, x[i], y[i]); fails++; }
    /* internal_step 1e-12, then doStep: refused (1e10 steps), not a hang */
    fmi2Component tiny = start(&cb, "tiny", 1e-12);
    EXPECT(fmi2DoStep(tiny, 0.0, 0.01, fmi2True), fmi2Error);
    fmi2FreeFMUstate(c, &saved);
    fmi2FreeFMUstate(c, &back);
    free(good); free(bad);
    fmi2FreeInstance(tiny);
    fmi2FreeInstance(ref);
    fmi2FreeInstance(c);
    fmi2FreeInstance(NULL);
    if (fails) { fprintf(stderr, "%d bad-call checks failed\n", fails); return 1; }
    printf("ok\n");
    return 0;
}
"""


def _build_harness(fmus, fmi, kind, harness, tmp_path, flags, name="harness"):
    path, md, unzip = fmus[fmi, kind]
    src = Path(unzip) / "sources"
    (tmp_path / f"{name}.c").write_text(harness)
    exe = tmp_path / name
    files = [str(src / f) for f in fmu_mod.source_files(fmi)]
    proc = subprocess.run(["gcc", *flags, "-std=c99", "-Wall", f"-I{src}", str(tmp_path / f"{name}.c"), *files,
                           "-o", str(exe), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return exe


SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]


def _sanitizers_available():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "a.c").write_text("int main(void){return 0;}\n")
        proc = subprocess.run(["gcc", *SANITIZE, str(Path(d) / "a.c"), "-o", str(Path(d) / "a")],
                              capture_output=True, text=True)
        return proc.returncode == 0 and subprocess.run([str(Path(d) / "a")]).returncode == 0


@pytest.mark.sanitizers
@pytest.mark.parametrize("fmi,kind,harness", [("2", "cs", HARNESS_FMI2), ("3", "me", HARNESS_FMI3_ME),
                                              ("2", "cs", HARNESS_BAD_CALLS)],
                         ids=["fmi2-cs-lifecycle", "fmi3-me-lifecycle", "fmi2-cs-bad-calls"])
def test_c_harnesses_pass_under_address_and_undefined_behaviour_sanitizers(fmus, fmi, kind, harness, tmp_path):
    """The harnesses against the FMU's own sources built with ASan + UBSan
    (-fno-sanitize-recover: any finding aborts).  Skip with -m 'not sanitizers'."""
    if not _sanitizers_available():
        pytest.skip("gcc cannot build and run -fsanitize=address,undefined programs here (libasan/libubsan missing)")
    exe = _build_harness(fmus, fmi, kind, harness, tmp_path, SANITIZE)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.startswith("ok")
    assert "runtime error" not in proc.stderr and "AddressSanitizer" not in proc.stderr


def test_bad_call_harness_passes_without_sanitizers(fmus, tmp_path):
    """The same catalogue at -O2, as the FMU's binary is built."""
    exe = _build_harness(fmus, "2", "cs", HARNESS_BAD_CALLS, tmp_path, ["-O2", "-g"])
    proc = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.skipif(shutil.which("valgrind") is None,
                    reason="valgrind is not installed (scripts/setup.sh installs it): leak check not run")
@pytest.mark.parametrize("fmi,kind,harness", [("2", "cs", HARNESS_FMI2), ("3", "me", HARNESS_FMI3_ME)])
def test_c_harness_has_no_leaks_under_valgrind(fmus, fmi, kind, harness, tmp_path):
    path, md, unzip = fmus[fmi, kind]
    src = Path(unzip) / "sources"
    (tmp_path / "harness.c").write_text(harness)
    exe = tmp_path / "harness"
    files = [str(src / f) for f in fmu_mod.source_files(fmi)]
    subprocess.run(["gcc", "-g", "-O1", "-std=c99", "-Wall", f"-I{src}", str(tmp_path / "harness.c"), *files,
                    "-o", str(exe), "-lm"], check=True, capture_output=True, text=True)
    proc = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                           "--errors-for-leak-kinds=definite,indirect,possible,reachable",
                           "--error-exitcode=1", str(exe)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("ok")
    assert "All heap blocks were freed -- no leaks are possible" in proc.stderr
    assert "ERROR SUMMARY: 0 errors" in proc.stderr


# ---- step semantics: huge steps, tiny internal steps, late start times ----

@pytest.mark.parametrize("fmi", "23")
def test_an_overlong_doStep_is_an_error_not_ok_without_integrating(fmus, fmi):
    s, vr = _slave(fmus, fmi)
    _init(s, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    before = get([vr["theta"]])
    for H in (1e17, 1e300):          # (long)floor(H/h) was out of range: OK with nothing done
        with pytest.raises(FMICallException) as e:
            s.doStep(0.0, H)
        assert _status(e) == 3
        assert get([vr["theta"]]) == before
    s.terminate()
    s.freeInstance()


def test_an_internal_step_that_needs_too_many_steps_is_refused(fmus):
    s, vr = _slave(fmus)
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.setReal([vr["internal_step"]], [1e-12])     # 1e10 internal steps per 10 ms: a hang before
    s.exitInitializationMode()
    with pytest.raises(FMICallException) as e:
        s.doStep(0.0, 0.01)
    assert _status(e) == 3
    s.freeInstance()


def test_a_late_start_time_steps_like_an_early_one(fmus):
    """The communication-point tolerance is relative to t: at t = 1e6 s the
    importer's grid (start + n·H) is still accepted, and the time-invariant
    four-bar moves exactly as it does from t = 0."""
    path = fmus["2", "cs"][0]
    early = simulate_fmu(str(path), start_time=0.0, stop_time=0.5, output_interval=0.01, output=["theta"])
    late = simulate_fmu(str(path), start_time=1e6, stop_time=1e6 + 0.5, output_interval=0.01, output=["theta"])
    assert len(late) == len(early)
    assert np.abs(late["theta"] - early["theta"]).max() < 1e-9


# ---- FMU state: restore after an error, untrusted bytes ----

def test_restoring_a_state_recovers_from_the_error_state(fmus):
    s, vr = _slave(fmus)
    _init(s)
    s.doStep(0.0, 0.1)
    saved = s.getFMUstate()
    with pytest.raises(FMICallException):
        s.enterInitializationMode()               # not allowed while stepping: Error state
    with pytest.raises(FMICallException):
        s.doStep(0.1, 0.1)                          # refused in the Error state
    s.setFMUstate(saved)                            # FMI 2: the way back
    s.doStep(0.1, 0.1)
    recovered = s.getReal([vr["theta"], vr["alpha"]])
    ref, _ = _slave(fmus, name="ref")
    _init(ref)
    ref.doStep(0.0, 0.1)
    ref.doStep(0.1, 0.1)
    assert recovered == ref.getReal([vr["theta"], vr["alpha"]])
    s.freeFMUstate(saved)
    for x in (s, ref):
        x.terminate()
        x.freeInstance()


def test_corrupt_or_foreign_state_bytes_give_error_never_a_crash(fmus):
    s, vr = _slave(fmus)
    _init(s)
    s.doStep(0.0, 0.05)
    good = bytes(s.serializeFMUstate(s.getFMUstate()))
    rng = np.random.default_rng(7)
    header = 4 + 4 + 8 + 39                       # magic, version, size, GUID (+ padding after it)
    cases = [b"", good[:10], good[:-1], good + b"\0", bytes(len(good)),
             rng.integers(0, 256, len(good), dtype=np.uint8).tobytes(),
             b"XXXX" + good[4:],                                     # magic
             good[:4] + (int.from_bytes(good[4:8], sys.byteorder) + 1).to_bytes(4, sys.byteorder)
             + good[8:],                                             # a format version after this one
             good[:20] + bytes([good[20] ^ 1]) + good[21:],          # GUID
             good[:header + 1] + b"\xff" * (len(good) - header - 1)]  # every field out of range
    for bad in cases:
        with pytest.raises(FMICallException) as e:
            s.deSerializeFMUstate(bad)
        assert _status(e) == 3
    # random single-byte flips in the snapshot: each either is refused or
    # restores to a state the FMU can still report on
    for _ in range(300):
        b = bytearray(good)
        i = int(rng.integers(header, len(b)))
        b[i] = int(rng.integers(0, 256))
        try:
            st = s.deSerializeFMUstate(bytes(b))
        except FMICallException as e:
            assert e.status == 3
            continue
        s.setFMUstate(st)
        s.freeFMUstate(st)
    state = s.deSerializeFMUstate(good)
    s.setFMUstate(state)
    s.freeFMUstate(state)
    s.freeInstance()


# ---- Model Exchange: derivatives are a function of (t, x) ----

def _continuous_time(s, fmi):
    """Put an initialized ME instance of the four-bar (two states) in
    Continuous-Time Mode: (its states, f(t, x) -> its derivatives there)."""
    s.enterContinuousTimeMode()
    get_dx = s.getDerivatives if fmi == "2" else s.getContinuousStateDerivatives
    buf = (c_double * 2)()
    s.getContinuousStates(buf, 2)

    def f(t, x):
        s.setTime(t)
        s.setContinuousStates((c_double * 2)(*x), 2)
        d = (c_double * 2)()
        get_dx(d, 2)
        return np.array(d)

    return np.array(buf), f


@pytest.mark.parametrize("fmi", "23")
def test_me_derivatives_do_not_depend_on_what_was_evaluated_before(fmus, fmi):
    s, vr = _slave(fmus, fmi, "me")
    _init(s, fmi)
    x0, f = _continuous_time(s, fmi)

    def derivatives(t, x):
        return f(t, x).tobytes()

    first = derivatives(0.01, x0 + [0.02, 0.1])
    for k in range(1, 30):                       # trial states an integrator might visit
        derivatives(0.01 * k / 3, x0 + [0.03 * k, 0.2 * np.sin(k)])
    assert derivatives(0.01, x0 + [0.02, 0.1]) == first
    s.freeInstance()


# ---- tunable parameters: settable between steps (CS) and in Event Mode (ME) ----

def _reference_with_mass_step(dae, q0, v0, times, t_switch, name, value):
    """The four-bar's DAE reference (IDA, independent theta) in two pieces: up to ``t_switch`` with the
    default parameters, then from that piece's end state with ``name`` set to
    ``value`` in the DAE's numeric functions."""
    from fmigen.verify.reference import solve_reference
    k = [str(s) for s in dae.tunable].index(name)
    first = times[times <= t_switch + 1e-12]
    second = times[times >= t_switch - 1e-12]
    num = dae.numeric
    default = num.pu[k]
    try:
        a = solve_reference(dae, q0, v0, first, dae.mechanism.independent)
        num.pu[k] = value
        b = solve_reference(dae, a.q[-1], a.v[-1], second, dae.mechanism.independent)
    finally:
        num.pu[k] = default
    return np.vstack([a.q, b.q[1:]])


@pytest.mark.parametrize("fmi", "23")
def test_a_mass_changed_between_communication_steps_matches_the_dae_reference(fmus, fmi):
    """m2 (the coupler's mass, a tunable parameter) goes from 1 to 3 kg at
    t = 0.5 s between two doSteps; the trajectory matches the IDA reference
    of the DAE with the same step change.  Before, SetReal of a parameter
    after initialization was an Error."""
    s, vr = _slave(fmus, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    set_ = s.setReal if fmi == "2" else s.setFloat64
    _init(s, fmi)
    names = ["theta", "alpha", "phi"]
    q0 = get([vr[n] for n in names])
    v0 = get([vr[f"der({n})"] for n in names])
    H, t = 0.01, 0.0
    times = np.round(np.arange(0, 101) * H, 12)
    traj = [q0]
    for k in range(100):
        if k == 50:
            set_([vr["m2"]], [3.0])
            assert get([vr["m2"]]) == [3.0]
        s.doStep(t, H)
        t += H
        traj.append(get([vr[n] for n in names]))
    s.terminate()
    s.freeInstance()
    traj = np.array(traj)
    dae = fmus["dae"]
    ref = _reference_with_mass_step(dae, q0, v0, times, 0.5, "m2", 3.0)
    unchanged = _reference_with_mass_step(dae, q0, v0, times, 0.5, "m2", 1.0)
    err = np.abs(traj - ref).max()
    assert err < 1e-9, f"FMU vs reference with the step change: {err:.3g}"
    # the change matters far above that tolerance
    assert np.abs(unchanged - ref).max() > 1e-3


def _logged_slave(fmus, fmi, kind, messages, name="r"):
    """_slave with the FMU's log messages appended to ``messages``."""
    if fmi == "2":
        def log(env, name_, status, category, message):
            messages.append(message.decode())
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(log)
        s, vr = _slave(fmus, fmi, kind, name=name, callbacks=cb, loggingOn=True)
        s._log = log   # kept alive with the instance
        s._cb = cb
        return s, vr
    return _slave(fmus, fmi, kind, name=name, loggingOn=True,
                  logMessage=lambda env, status, category, message: messages.append(message.decode()))


@pytest.mark.parametrize("fmi,kind", [("2", "cs"), ("3", "cs"), ("2", "me")])
def test_a_negative_mass_is_refused_and_changes_nothing(fmus, fmi, kind):
    """m2 = -0.2 kg on the coupler, with 1 kg on crank and rocker, leaves BᵀMB
    positive definite (a fresh instance built with it ran with OK before this
    check), so only the masses themselves can tell.  Before initialization
    the values are free (a condition on two parameters set one per call
    must not fail in between) and ExitInitializationMode refuses them; after
    it SetReal refuses them, naming the body and the parameter, and changes
    nothing: the run goes on bit for bit like an instance that never saw the
    call.  m2 = 0 (a massless coupler) is physical and accepted."""
    messages = []
    early, vr = _logged_slave(fmus, fmi, kind, messages, name="early")
    set_early = early.setReal if fmi == "2" else early.setFloat64
    if fmi == "2":
        early.setupExperiment(startTime=0.0)
        early.enterInitializationMode()
    else:
        early.enterInitializationMode(startTime=0.0)
    set_early([vr["m2"]], [-0.2])               # accepted for now ...
    with pytest.raises(FMICallException) as e:
        early.exitInitializationMode()          # ... refused here
    assert _status(e) == 3
    assert ("ExitInitializationMode: these parameter values make the mass of body 'coupler' (m2) -0.2; a mass "
            "must be >= 0") in messages[-1], messages
    early.freeInstance()
    s, vr = _logged_slave(fmus, fmi, kind, messages)
    ref, _ = _slave(fmus, fmi, kind, name="ref")
    get = s.getReal if fmi == "2" else s.getFloat64
    set_ = s.setReal if fmi == "2" else s.setFloat64
    for x in (s, ref):
        _init(x, fmi)
    names = [vr[n] for n in ("theta", "alpha", "phi", "der(theta)")]
    if kind == "cs":
        t = 0.0
        for k in range(20):
            if k == 10:
                with pytest.raises(FMICallException) as e:
                    set_([vr["tau"], vr["m2"]], [2.0, -0.2])
                assert _status(e) == 3
                assert ("these parameter values make the mass of body 'coupler' (m2) -0.2; a mass must be >= 0 "
                        "(nothing was set)") in messages[-1], messages
                assert get([vr["tau"], vr["m2"]]) == [6.0, 1.0]
            s.doStep(t, 0.01)
            ref.doStep(t, 0.01)
            t += 0.01
            assert get(names) == (ref.getReal if fmi == "2" else ref.getFloat64)(names)
    else:
        with pytest.raises(FMICallException):
            set_([vr["m2"]], [-0.2])          # Event Mode after initialization
        assert get([vr["m2"]]) == [1.0]
    set_([vr["m2"]], [0.0])
    assert get([vr["m2"]]) == [0.0]
    for x in (s, ref):
        x.terminate()
        x.freeInstance()


@pytest.mark.parametrize("fmi", "23")
def test_me_parameters_are_set_in_event_mode_not_in_continuous_time_mode(fmus, fmi):
    """In Event Mode a new mass changes the derivatives at once (the
    right-hand side is recomputed, not the one cached for the old mass); in
    Continuous-Time Mode the call is an Error."""
    def instance(name, m2=None):
        s, vr = _slave(fmus, fmi, "me", name=name)
        set_ = s.setReal if fmi == "2" else s.setFloat64
        if m2 is not None:
            set_([vr["m2"]], [m2])
        _init(s, fmi)
        return s, vr, set_

    def derivatives(s):
        d = (c_double * 2)()
        (s.getDerivatives if fmi == "2" else s.getContinuousStateDerivatives)(d, 2)
        return list(d)

    s, vr, set_ = instance("a")
    before = derivatives(s)
    set_([vr["m2"]], [3.0])                     # Event Mode after initialization
    after = derivatives(s)
    fresh, _, _ = instance("b", m2=3.0)
    assert after == derivatives(fresh) and after != before
    s.enterContinuousTimeMode()
    with pytest.raises(FMICallException) as e:
        set_([vr["m2"]], [2.0])
    assert _status(e) == 3
    for x in (s, fresh):
        x.freeInstance()


@pytest.mark.parametrize("fmi", "23")
def test_fixed_parameters_name_themselves_when_set_after_initialization(fmus, fmi):
    messages = []
    if fmi == "2":
        def log(env, name, status, category, message):
            messages.append(message.decode())
        cb = fmi2CallbackFunctions()
        cb.logger = fmi2CallbackLoggerTYPE(log)
        s, vr = _slave(fmus, fmi, callbacks=cb, loggingOn=True)
    else:
        s, vr = _slave(fmus, fmi, loggingOn=True,
                       logMessage=lambda env, status, category, message: messages.append(message.decode()))
    _init(s, fmi)
    with pytest.raises(FMICallException):
        (s.setReal if fmi == "2" else s.setFloat64)([vr["internal_step"]], [2e-3])
    assert any("internal_step" in m and "fixed parameter" in m for m in messages), messages
    s.freeInstance()


def test_model_descriptions_declare_tunable_and_fixed_parameters(fmus):
    from fmpy.validation import validate_fmu
    for fmi in "23":
        for kind in ("cs", "me"):
            path, md, _ = fmus[fmi, kind]
            assert validate_fmu(str(path)) == []
            params = {v.name: v.variability for v in md.modelVariables if v.causality == "parameter"}
            expected = {"g": "tunable", "m1": "tunable", "m2": "tunable", "m3": "tunable"}
            if kind == "cs":
                expected["internal_step"] = "fixed"
            assert params == expected
            # the masses (each alone a body's mass) declare min="0"; gravity none
            minima = {v.name: v.min for v in md.modelVariables if v.causality == "parameter"}
            assert {k: (float(v) if v is not None else None) for k, v in minima.items()} == {
                "g": None, "m1": 0.0, "m2": 0.0, "m3": 0.0, **({"internal_step": None} if kind == "cs" else {})}


@pytest.mark.parametrize("fmi", "23")
def test_an_input_changed_at_every_step_enters_the_next_step(fmus, fmi):
    """Each doStep of one internal step (RK4, h = 1 ms) starts from what the
    previous step's commit prepared (first-same-as-last, FmigenSolved); the
    torque set between the steps must still enter its first stage.  Against
    the same RK4 step by step on the Model Exchange FMU's derivatives, which
    evaluates every stage afresh."""
    s, vr = _slave(fmus, fmi)
    get = s.getReal if fmi == "2" else s.getFloat64
    set_ = s.setReal if fmi == "2" else s.setFloat64
    _init(s, fmi)
    me, _ = _slave(fmus, fmi, "me", name="me")
    _init(me, fmi)
    me_set = me.setReal if fmi == "2" else me.setFloat64
    x, f = _continuous_time(me, fmi)

    h, t = 1e-3, 0.0
    for k in range(200):
        tau = 6.0 + 4.0 * math.sin(0.1 * k)
        set_([vr["tau"]], [tau])
        s.doStep(t, h)
        # ME: inputs are set in Event Mode or Continuous-Time Mode alike
        me_set([vr["tau"]], [tau])
        k1 = f(t, x)
        k2 = f(t + 0.5 * h, x + 0.5 * h * k1)
        k3 = f(t + 0.5 * h, x + 0.5 * h * k2)
        k4 = f(t + h, x + h * k3)
        x = x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        t += h
        assert np.abs(np.array(get([vr["theta"], vr["der(theta)"]])) - x).max() <= 1e-13, k
    s.terminate()
    s.freeInstance()
    me.terminate()
    me.freeInstance()


def test_input_derivatives_make_the_input_linear_over_the_step(fmus):
    """fmi2SetRealInputDerivatives (canInterpolateInputs): over a doStep the
    torque is τ + τ̇ (t − t_c).  Against RK4 step by step on the Model
    Exchange FMU's derivatives with the torque set to that line at each
    stage; a slope left in place keeps extrapolating from where it was given,
    and a new value without a slope holds."""
    path, md, _ = fmus["2", "cs"]
    assert md.coSimulation.canInterpolateInputs
    s, vr = _slave(fmus)
    _init(s)
    me, _ = _slave(fmus, "2", "me", name="me")
    _init(me)
    x, f = _continuous_time(me, "2")

    def me_step(t, x, h, tau):
        def g(tt, xx):
            me.setReal([vr["tau"]], [tau(tt)])
            return f(tt, xx)
        k1 = g(t, x)
        k2 = g(t + 0.5 * h, x + 0.5 * h * k1)
        k3 = g(t + 0.5 * h, x + 0.5 * h * k2)
        k4 = g(t + h, x + h * k3)
        return x + h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)

    h, t = 1e-3, 0.0
    last = None
    for k in range(150):
        if k < 100:      # value and slope every step
            tau0, slope = 6.0 + 4.0 * math.sin(0.1 * k), 40.0 * math.cos(0.1 * k)
            s.setReal([vr["tau"]], [tau0])
            s.fmi2SetRealInputDerivatives(s.component, (ctypes.c_uint * 1)(vr["tau"]), 1,
                                          (ctypes.c_int * 1)(1), (ctypes.c_double * 1)(slope))
            last = (t, tau0, slope)
        elif k == 120:   # a new value: its slope is gone
            s.setReal([vr["tau"]], [5.0])
            last = (t, 5.0, 0.0)
        t0, tau0, slope = last     # 100 ≤ k < 120: the last slope keeps extrapolating
        x = me_step(t, x, h, lambda tt: tau0 + slope * (tt - t0))
        s.doStep(t, h)
        t += h
        assert np.abs(np.array(s.getReal([vr["theta"], vr["der(theta)"]])) - x).max() <= 1e-13, k
    # only first derivatives of inputs, finite, of inputs
    for order, ref, value in ((2, vr["tau"], 1.0), (1, vr["theta"], 1.0), (1, vr["tau"], math.nan)):
        with pytest.raises(FMICallException):
            s.fmi2SetRealInputDerivatives(s.component, (ctypes.c_uint * 1)(ref), 1,
                                          (ctypes.c_int * 1)(order), (ctypes.c_double * 1)(value))
    for inst in (s, me):
        inst.terminate()
        inst.freeInstance()
