"""fmigen build --realtime: each bounded loop capped at what the mechanism's
workspace sweep needs plus the margin (fmigen/generate/realtime.py), a step
that needs more returning Discard.

The eight-link is the mechanism: its kinematics runs a Newton block at every
step, and its motion from the start runs into a singular configuration
(docs/benchmarks.md, "Are the caps what the workspace needs?"), where its
Newton steps reach their round-off floor; there they end the iteration
(codegen_newton.STALL_STOP) within the caps the sweep sets."""
import re
import zipfile

import pytest

fmpy = pytest.importorskip("fmpy")
from fmpy import extract, read_model_description  # noqa: E402
from fmpy.fmi1 import FMICallException  # noqa: E402
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE  # noqa: E402

MECH = "eight_link"


#: a Newton cap below what the eight-link's motion needs before its end (5
#: iterations from t = 0.92 s; its start assembles in 1): the realtime
#: model's Discard where a solve needs more than its cap
TIGHT_NEWTON = 4


def tight_caps(*args, **kwargs):
    """``realtime_caps`` with the Newton block's cap lowered to TIGHT_NEWTON."""
    from fmigen.generate import realtime as rt
    from fmigen.tools.bench import realtime_caps
    model, info = realtime_caps(*args, **kwargs)
    caps = {**info["caps"], "newton": TIGHT_NEWTON}
    return rt.realtime_model(model, caps), {**info, "caps": caps}


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    from fmigen.build.pipeline import build_fmu
    from fmigen.tools.bench import realtime_caps
    d = tmp_path_factory.mktemp("realtime")
    return {rt: build_fmu(MECH, d / f"{MECH}_{rt}.fmu", windows=False, realtime=measure)[0]
            for rt, measure in ((False, None), (True, realtime_caps), ("tight", tight_caps))}


def _member(fmu, name):
    with zipfile.ZipFile(fmu) as z:
        return z.read(name).decode()


def test_realtime_caps_are_the_sweeps_measured_need_plus_the_margin(fmus):
    """The caps in the realtime FMU's model_config.h and documentation
    against a separate run of `fmigen bench --worst-case`'s harness (its own
    derivation, the C from the derived-model cache as a build reads it): each loop's is 2 × the most iterations it took over the
    workspace samples' steps and their assembly, + 2, at most the global
    cap.  The sweep does run Newton, so the Newton cap is below the global
    one: a build with the global caps fails this.  model.c is the default
    build's text.  Before: no --realtime."""
    from fmigen.generate.realtime import MACROS
    from fmigen.generate.codegen_newton import iteration_caps
    from fmigen.tools import bench
    w = bench.worst_case(MECH, instructions=False)
    ws, assembly, glob = w["iterations_workspace"], w["iterations_assembly"], iteration_caps()
    expected = {k: min(glob[k], 2 * max(ws[k], assembly[k]) + 2) for k in MACROS}
    config = _member(fmus[True], "sources/model_config.h")
    caps = {k: int(re.search(rf"#define {m} (\d+)", config).group(1)) for k, m in MACROS.items()}
    assert caps == expected, (caps, w)
    assert ws["newton"] >= 1 and caps["newton"] < glob["newton"], (caps, glob)
    assert "FMIGEN_REALTIME" not in _member(fmus[False], "sources/model_config.h")
    doc = _member(fmus[True], "documentation/index.html")
    assert f"Newton at most {caps['newton']} iterations" in doc and "Realtime build" in doc
    assert "Realtime build" not in _member(fmus[False], "documentation/index.html")
    assert _member(fmus[True], "sources/model.c") == _member(fmus[False], "sources/model.c")


def test_no_loop_of_a_realtime_model_runs_past_its_cap():
    """`fmigen bench --worst-case --realtime`'s harness, counting every
    iteration of the realtime model over the motion and the sweep: no loop
    runs past its realtime cap, and the motion runs as far as the default
    model's: the caps the sweep sets hold up to the singular configuration
    the motion runs into, where the default model fails too.  Before: the
    Newton solves near it wandered at their round-off floor, and the
    realtime model (Newton cap 14) failed a doStep before the default one,
    whose failed step ran its Newton block to the global cap of 28."""
    from fmigen.tools import bench
    w = bench.worst_case(MECH, instructions=False, realtime=True)
    default = bench.worst_case(MECH, instructions=False)
    caps = w["caps"]
    assert all(w["iterations"][k] <= caps[k] for k in bench.LOOPS), w
    assert caps["newton"] < 28 and w["failed"] == default["failed"] == 1, (w, default)
    assert w["motion_steps"] == default["motion_steps"], (w, default)


def _step_until_discard(path, tmp_path, name):
    """Steps of 1 ms from the start until one is not OK: (the time of the
    step that failed, its status, the coordinates after every step before
    it, the messages logged)."""
    md = read_model_description(str(path))
    coords = [v.valueReference for v in md.modelVariables if v.causality == "output" or v.name.startswith("der(")]
    messages = []

    def log(env, instance, status, category, message):
        messages.append((status, message.decode()))
    callbacks = fmi2CallbackFunctions()
    callbacks.logger = fmi2CallbackLoggerTYPE(log)
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path), unzipdir=str(tmp_path / name)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName=name)
    s.instantiate(loggingOn=True, callbacks=callbacks)
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    t, h, states = 0.0, 1e-3, []
    with pytest.raises(FMICallException) as e:
        for _ in range(2000):
            s.doStep(t, h)
            t += h
            states.append(s.getReal(coords))
    s.freeInstance()
    return t, e.value.status, states, messages


def test_a_motion_needing_more_iterations_than_the_cap_discards(fmus, tmp_path):
    """A realtime model whose Newton cap (TIGHT_NEWTON) is below what the
    eight-link's motion needs as it nears its singular configuration: it
    returns Discard (status 2, not OK, no crash) at a step the default build
    still takes, and the default one discards later (at the limit position
    its Newton block nears).  Before that step both give the same bits: the
    cap changes nothing where it is not reached.  The logged reason names
    the realtime caps only in the realtime build."""
    t_default, st_default, default, log_default = _step_until_discard(fmus[False], tmp_path, "default")
    t_rt, st_rt, rt, log_rt = _step_until_discard(fmus["tight"], tmp_path, "rt")
    assert st_default == 2 and st_rt == 2
    assert 0.5 < t_rt < t_default, (t_rt, t_default)
    n = len(rt)
    assert rt == default[:n] and len(default) > n
    discard_rt = [m for st, m in log_rt if st == 2]
    assert len(discard_rt) == 1 and "realtime build's cap (Newton " in discard_rt[0], log_rt
    discard_default = [m for st, m in log_default if st == 2]
    assert len(discard_default) == 1 and "realtime" not in discard_default[0], log_default


def test_a_realtime_build_compiles_the_kernels_with_its_model(tmp_path, monkeypatch, compiled_sources):
    """A binary build compiles the numerical kernels once for every model
    (runtime/fmigen_kernels.c, without any model's header).  Their loops
    (the polynomial root's Newton and Aberth) read a realtime build's caps
    from its model_config.h, so a realtime build must compile them with
    its model, in fmigen_core.c: from the shared unit they would run to the
    global caps.  The default build of the same model does take the shared
    unit.  (The object cache is empty, so every unit a build uses is
    compiled and recorded.)"""
    from fmigen.build.pipeline import build_fmu
    from fmigen.kinematics import groebner
    from fmigen.tools.bench import realtime_caps
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")

    def measured(*args, **kwargs):
        caps = realtime_caps(*args, **kwargs)
        # what the measurement's harness compiled (bench.compile_harness, the
        # default model's units with the shared kernels) is not the FMU's
        compiled_sources.clear()
        return caps
    build_fmu("fourbar", tmp_path / "realtime.fmu", windows=False, realtime=measured)
    assert "fmigen_core.c" in compiled_sources and "fmigen_kernels.c" not in compiled_sources, compiled_sources
    assert "#define FMIGEN_REALTIME_ABERTH" in _member(tmp_path / "realtime.fmu", "sources/model_config.h")
    compiled_sources.clear()
    build_fmu("fourbar", tmp_path / "default.fmu", windows=False)
    assert "fmigen_kernels.c" in compiled_sources, compiled_sources
