"""Hard points: a tunable parameter with a declared range that enters the
constraints (``docs/writing-mechanisms.md``, "Hard points").  A four-bar
whose rocker length is a hard point, re-tuned in fmpy, against the same
four-bar built with that length structural and against IDA on the DAE at
that length; the FMU refuses a value outside the range, a change after
initialization, and a value at which the start cannot be assembled."""
import importlib.util
from pathlib import Path

import fmpy
import numpy as np
import pytest

from fmigen.build.derived import dae_of
from fmigen.build.pipeline import build_fmu, compile_model, prepare_mechanism
from fmigen.model import Mechanism, ModelError
from fmigen.verify.reference import assemble_newton, solve_reference

STOP, DT = 2.0, 0.01
NAMES = ["theta", "alpha", "phi"]
RETUNED = 2.6


def _module(name="fourbar_hard_point"):
    """A mechanism module of tests/data (not a package), by its name."""
    path = Path(__file__).parent / "data" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    from fmigen.pyfmu.pyruntime import build_python_fmu
    tmp = tmp_path_factory.mktemp("hard_points")
    fourbar = _module()
    hard, _ = build_fmu(fourbar.build(), tmp / "hard.fmu")
    fixed, _ = build_fmu(fourbar.build(l3=RETUNED), tmp / "fixed.fmu")
    python, _ = build_python_fmu(fourbar.build(), tmp / "hard_py.fmu")
    return {"hard": hard, "fixed": fixed, "python": python}


def _run(path, **start):
    return fmpy.simulate_fmu(str(path), stop_time=STOP, output_interval=DT, start_values=start,
                             output=[*NAMES, "constraint_residual"])


def test_retuned_hard_point_matches_the_structural_build(fmus):
    fixed = _run(fmus["fixed"])
    for runtime in ("hard", "python"):
        got = _run(fmus[runtime], l3=RETUNED)
        # the start was assembled again at the new length (not the build's)
        assert abs(got["alpha"][0] - 0.353281) > 0.02, runtime
        for name in NAMES:
            err = float(np.max(np.abs(got[name] - fixed[name])))
            # measured: C 4.4e-16, Python 3.6e-15 (the same sequences, K_j
            # evaluated from p[] instead of folded into numbers)
            assert err < 1e-12, f"{runtime}: max |{name} - structural l3={RETUNED}| = {err:.3g}"
        assert float(np.max(got["constraint_residual"])) < 1e-13, runtime


def test_retuned_hard_point_matches_ida(fmus):
    """IDA on the hard-point DAE at the new length (its Φ, M and F evaluated
    with l3 = RETUNED; nothing of the triangularization or the C)."""
    mech = prepare_mechanism(_module().build())
    # the DAE the builds of the fixture derived (derived.dae_of: the same
    # equations, read from the DAE cache)
    dae = dae_of(mech).at_hard_points({"l3": RETUNED})
    q0 = assemble_newton(dae, dae.start_guess(), ["theta"])
    times = np.linspace(0.0, STOP, round(STOP / DT) + 1)
    ref = solve_reference(dae, q0, dae.start_velocity_guess(), times, ["theta"], rtol=1e-12)
    got = _run(fmus["hard"], l3=RETUNED)
    for name in NAMES:
        err = float(np.max(np.abs(got[name] - ref.q[:, ref.names.index(name)])))
        # RK4 at the default 1 ms step against IDA at rtol 1e-12
        assert err < 1e-7, f"max |{name} - IDA| = {err:.3g}"


@pytest.mark.parametrize("runtime", ["hard", "python"])
def test_value_outside_the_range_is_refused(fmus, runtime):
    md = fmpy.read_model_description(str(fmus[runtime]))
    l3 = next(v for v in md.modelVariables if v.name == "l3")
    assert (l3.variability, float(l3.min), float(l3.max)) == ("fixed", 2.3, 2.7)
    with pytest.raises(Exception, match="fmi2SetReal failed"):
        _run(fmus[runtime], l3=2.71)


def test_hard_point_cannot_change_after_initialization(fmus):
    md = fmpy.read_model_description(str(fmus["hard"]))
    vr = next(v.valueReference for v in md.modelVariables if v.name == "l3")
    unzipped = fmpy.extract(str(fmus["hard"]))
    fmu = fmpy.fmi2.FMU2Slave(guid=md.guid, unzipDirectory=unzipped,
                              modelIdentifier=md.coSimulation.modelIdentifier, instanceName="a")
    fmu.instantiate()
    fmu.setReal([vr], [2.4])
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    with pytest.raises(Exception, match="fmi2SetReal failed"):
        fmu.setReal([vr], [2.45])
    fmu.doStep(0.0, 0.01)
    assert fmu.getReal([vr]) == [2.4]
    fmu.terminate()
    fmu.freeInstance()


def test_start_that_cannot_be_assembled_is_refused(tmp_path):
    """A range that holds rocker lengths too short to close the loop at the
    start (|AD| = √10 > l2 − l3 needs l3 > 0.838): the build's range sweep
    says so, and the FMU fails ExitInitializationMode there."""
    lines = []
    path, compiled = build_fmu(_module().build(l3_range=(0.5, 2.7)), tmp_path / "wide.fmu", log=lines.append,
                               use_cache=False)
    records = {r["at"]["l3"]: r["assembled"] for r in compiled.triangular.hard_point_range}
    assert records == {0.5: False, 1.5: True, 2.6: True, 2.7: True}, records
    assert any("l3=0.5" in x and "refuses" in x for x in lines)
    _run(path, l3=0.9)         # in range and closable: runs
    with pytest.raises(Exception, match="fmi2ExitInitializationMode failed"):
        _run(path, l3=0.7)


def test_declaration_errors():
    m = Mechanism("x")
    with pytest.raises(ModelError, match="must be tunable=True"):
        m.parameter("a", 1.0, "m", range=(0.5, 1.5))
    with pytest.raises(ModelError, match="strictly inside"):
        m.parameter("b", 2.0, "m", tunable=True, range=(0.5, 1.5))
    fourbar = _module().build()
    fourbar.parameters[[p.name for p in fourbar.parameters].index("l3")].range = None
    with pytest.raises(ModelError, match="constraint 'loop_x' depends on \\['l3'\\].*hard points"):
        compile_model(fourbar)


def test_quarter_car_chassis_point_retuned_matches_ida(tmp_path):
    """The shipped quarter car (five-link corner under a heaving chassis)
    with link 1's chassis point height C1z a hard point of ±10 mm: moved by
    5 mm in fmpy, against IDA on the DAE at that height (the move changes
    the motion by up to 5e-3, so the comparison sees it)."""
    module = _module("quarter_car_hard_point")
    fmu_path, compiled = build_fmu(module.build(), tmp_path / "quarter_car.fmu")
    assert all(r["assembled"] and r["branch"] == "kept" for r in compiled.triangular.hard_point_range)
    mech = prepare_mechanism(module.build())
    design = float(next(p.value for p in mech.parameters if p.name == "C1z"))
    moved = design + 0.005
    stop, dt, independent = 0.5, 0.01, ["zc", "z", "spin"]
    names = ["zc", "z", "spin", "x", "y", "psi", "theta", "phi"]
    got = fmpy.simulate_fmu(str(fmu_path), stop_time=stop, output_interval=dt, start_values={"C1z": moved},
                            output=[*names, "constraint_residual"])
    dae = dae_of(mech).at_hard_points({"C1z": moved})      # the build's DAE, from the DAE cache
    q0 = assemble_newton(dae, dae.start_guess(), independent)
    times = np.linspace(0.0, stop, round(stop / dt) + 1)
    ref = solve_reference(dae, q0, dae.start_velocity_guess(), times, independent, rtol=1e-12)
    for name in names:
        err = float(np.max(np.abs(got[name] - ref.q[:, ref.names.index(name)])))
        # measured: 4.9e-11 (spin), RK4 at 1 ms against IDA at rtol 1e-12
        assert err < 1e-9, f"max |{name} - IDA| = {err:.3g}"
    assert float(np.max(got["constraint_residual"])) < 1e-13
