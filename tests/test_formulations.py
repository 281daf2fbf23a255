"""The augmented formulations (``fmigen build --kinematics baumgarte|penalty|spring``)
as FMUs against the IDA reference of the four-bar, their FMI conformance and
ModelStructure, parameter validation, and the bench harness on the same code.

All numbers: RK4, h = 1 ms, 2 s, output every 10 ms, four-bar of paper 003
(fmpy 0.3, gcc -O2); the measured values are quoted next to each bound."""
import contextlib
import io
import math
from pathlib import Path

import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Slave, fmi2CallbackFunctions, fmi2CallbackLoggerTYPE
from fmpy.validation import validate_fmu

from fmigen.fmi import fmu as fmu_mod
from fmigen.generate import formulation
from fmigen.cli import main as cli_main
from fmigen.model import ModelError
from fmigen.verify.reference import assemble_newton, solve_reference
from fmigen.verify.validate import coordinate_errors
from conftest import compiled_model

NAMES = ["theta", "alpha", "phi"]
OUTPUTS = NAMES + [f"der({n})" for n in NAMES] + ["constraint_residual"]


@pytest.fixture(scope="module")
def fourbar():
    return compiled_model("fourbar")


@pytest.fixture(scope="module")
def reference(fourbar):
    dae = fourbar.dae
    q0 = assemble_newton(dae, dae.start_guess(), ["theta"])
    times = np.round(np.arange(201) * 0.01, 12)
    return solve_reference(dae, q0, dae.start_velocity_guess(), times, ["theta"], rtol=1e-12)


@pytest.fixture(scope="module")
def build(fourbar, tmp_path_factory):
    d = tmp_path_factory.mktemp("formulations")
    cache = {}

    def make(name, fmi="2", kind="cs", **values):
        key = (name, fmi, kind, tuple(sorted(values.items())))
        if key not in cache:
            gen = formulation.apply(fourbar.generated, formulation.make(name, **values), fourbar.embedding)
            cache[key] = fmu_mod.package(fourbar.embedding, gen, d / f"{name}_{len(cache)}.fmu", solver="rk4",
                                         step=1e-3, fmi=fmi, kind=kind, windows=False, use_cache=True)
        return cache[key]
    return make


def run(path, **start_values):
    r = simulate_fmu(str(path), stop_time=2.0, output_interval=0.01, output=OUTPUTS, start_values=start_values)
    assert len(r) == 201 and r["time"][-1] == pytest.approx(2.0)
    return r


def error_and_drift(fourbar, reference, r):
    err = max(coordinate_errors(fourbar.dae, r, reference).values())
    return err, float(np.abs(r["constraint_residual"]).max())


def test_baumgarte_converges_to_the_constrained_solution(fourbar, reference, build):
    err, drift = error_and_drift(fourbar, reference, run(build("baumgarte")))
    assert err <= 2e-7      # measured 6.2e-8 (theta); the embedded RK4 FMU: < 1e-6 (test_validation)
    assert drift <= 1e-8    # measured 3.7e-9
    assert drift > 0        # integrated, not projected: Φ(q) is not zero to round-off


def test_penalty_error_is_of_order_one_over_rho(fourbar, reference, build):
    path = build("penalty")
    e1, d1 = error_and_drift(fourbar, reference, run(path))
    e2, d2 = error_and_drift(fourbar, reference, run(path, penalty_rho=2e3))   # the fixed parameter
    assert e1 <= 3e-2 and d1 <= 1e-3          # measured 1.16e-2 and 3.6e-4 at rho = 1e3
    assert 1.8 < e1 / e2 < 2.2                # measured 2.00
    assert 1.8 < d1 / d2 < 2.2                # measured 2.00


def test_spring_error_is_of_order_one_over_k(fourbar, reference, build):
    # k = 4e5 and 8e5 (b = 60): below ~2e5 the error is not yet asymptotic
    # (k = 5e4 -> 1e5 -> 2e5 reduce it 3.5x and 3.7x), from 4e5 it is O(1/k)
    path = build("spring")
    e1, d1 = error_and_drift(fourbar, reference, run(path, spring_k=4e5))
    e2, d2 = error_and_drift(fourbar, reference, run(path, spring_k=8e5))
    assert e1 <= 2e-2 and d1 <= 3e-3          # measured 6.6e-3 and 1.2e-3
    assert 1.7 < e1 / e2 < 2.7                # measured 2.16
    assert 1.7 < d1 / d2 < 2.6                # measured 2.11
    # the default k = 5e4 (chosen for explicit Euler at 1 ms, see formulation.py) is coarse
    e0, d0 = error_and_drift(fourbar, reference, run(path))
    assert e0 <= 0.5 and d0 <= 3e-2           # measured 0.23 and 1.1e-2


def test_parameter_baked_in_equals_parameter_set(build):
    # --spring-k 4e5 at build time and spring_k = 4e5 set before initialization
    # run the same arithmetic
    a = run(build("spring", k=4e5))
    b = run(build("spring"), spring_k=4e5)
    for n in OUTPUTS:
        assert np.array_equal(a[n], b[n]), n


@pytest.mark.parametrize("fmi,kind", [("2", "me"), ("3", "cs")])
def test_validate_fmu_is_empty(build, fmi, kind):
    assert validate_fmu(str(build("spring", fmi, kind))) == []


def test_model_structure_of_the_augmented_states(build):
    md = read_model_description(str(build("spring", "2", "me")))

    def table(unknowns):
        return {u.variable.name: sorted(d.name for d in u.dependencies) for u in unknowns}
    outs, ders, init = table(md.outputs), table(md.derivatives), table(md.initialUnknowns)
    assert [d.variable.derivative.name for d in md.derivatives] == NAMES + [f"der({n})" for n in NAMES]
    every_state = sorted(NAMES + [f"der({n})" for n in NAMES])
    # M is block diagonal ({theta, alpha}, {phi}) and the torque acts on theta:
    # the rocker's acceleration sees the torque only through the spring, i.e. not at all
    assert ders["der(theta,2)"] == ders["der(alpha,2)"] == sorted(every_state + ["tau"])
    assert ders["der(phi,2)"] == every_state
    assert outs["alpha"] == ["alpha"] and outs["constraint_residual"] == ["alpha", "phi", "theta"]
    # the start is assembled from theta, as in the embedded FMU
    assert init["alpha"] == ["theta"] and init["der(phi)"] == ["der(theta)", "theta"]
    assert init["der(phi,2)"] == ["der(theta)", "g", "m3", "spring_b", "spring_k", "theta"]
    params = {v.name: (v.causality, v.variability, float(v.start)) for v in md.modelVariables
              if v.name.startswith("spring_")}
    assert params == {"spring_k": ("parameter", "fixed", 5e4), "spring_b": ("parameter", "fixed", 60.0)}


def test_me_with_cvode_matches_cs_rk4(build):
    cs = run(build("baumgarte"))
    me = simulate_fmu(str(build("baumgarte", "2", "me")), stop_time=2.0, output_interval=0.01, output=OUTPUTS,
                      solver="CVode", relative_tolerance=1e-10)
    assert max(float(np.abs(cs[n] - me[n]).max()) for n in NAMES) < 4e-7    # measured 1.5e-7


@pytest.mark.parametrize("values,option", [({"k": 0.0}, "--spring-k"), ({"k": math.nan}, "--spring-k"),
                                           ({"k": -1e5}, "--spring-k"), ({"b": -1.0}, "--spring-b"),
                                           ({"b": math.inf}, "--spring-b")])
def test_bad_spring_parameter_is_a_clear_error(values, option):
    with pytest.raises(ModelError, match=f"{option} must be a finite number"):
        formulation.make("spring", **values)


def test_bad_parameters_on_the_command_line(tmp_path, capsys):
    assert cli_main(["build", "fourbar", "--kinematics", "spring", "--spring-k", "nan",
                     "-o", str(tmp_path / "x.fmu")]) == 2
    assert "--spring-k must be a finite number > 0 (got nan)" in capsys.readouterr().err
    assert cli_main(["build", "fourbar", "--kinematics", "penalty", "--penalty-rho", "0",
                     "-o", str(tmp_path / "x.fmu")]) == 2
    assert "--penalty-rho must be a finite number > 0 (got 0.0)" in capsys.readouterr().err
    assert cli_main(["build", "fourbar", "--spring-k", "1e5", "-o", str(tmp_path / "x.fmu")]) == 2
    assert "--spring-k applies to --kinematics spring only" in capsys.readouterr().err
    assert not (tmp_path / "x.fmu").exists()


def _slave(path, tmp_path, messages):
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "u"))
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier="fourbar", instanceName="f")
    cb = fmi2CallbackFunctions()
    cb.logger = fmi2CallbackLoggerTYPE(lambda env, name, status, cat, msg: messages.append(msg.decode()))
    s.instantiate(callbacks=cb, loggingOn=True)
    s.setupExperiment(startTime=0.0)
    return s, {v.name: v.valueReference for v in md.modelVariables}


def test_bad_parameter_set_in_the_fmu_is_rejected(build, tmp_path):
    messages = []
    s, vr = _slave(build("spring"), tmp_path, messages)
    with pytest.raises(FMICallException):
        s.setReal([vr["spring_k"]], [-1.0])
    assert "formulation parameter spring_k must be > 0 (got -1)" in messages[-1]
    s.freeInstance()


def test_singular_mass_matrix_is_a_clear_error_at_run_time(build, tmp_path):
    messages = []
    s, vr = _slave(build("spring"), tmp_path, messages)
    s.setReal([vr["m1"], vr["m2"], vr["m3"]], [0.0, 0.0, 0.0])   # M = 0
    s.enterInitializationMode()
    s.exitInitializationMode()
    with pytest.raises(FMICallException):
        s.doStep(0.0, 0.01)
    assert any("singular mass matrix M at t=0" in m and "spring formulation" in m for m in messages), messages
    s.freeInstance()


def test_structurally_zero_mass_row_is_a_build_error(fourbar):
    from sympy import zeros
    emb = fourbar.embedding

    class Massless:       # the four-bar with a massless rocker (M's phi row zero)
        dae, independent = emb.dae, emb.independent
        M = emb.M.copy()
    Massless.M[2, :] = zeros(1, 3)
    Massless.M[:, 2] = zeros(3, 1)
    for name in ("baumgarte", "spring"):
        with pytest.raises(ModelError, match=r"needs an invertible mass matrix M.*row of phi"):
            formulation.check_model(Massless, formulation.make(name))
    formulation.check_model(Massless, formulation.make("penalty"))   # M + ρΦ_qᵀΦ_q can be regular


def test_bench_runs_spring_through_the_fmu_core():
    from fmigen.tools.bench import bench
    # explicit Euler needs h·k < b (formulation.py): k = 5e4, b = 80
    out = bench("fourbar", kinematics=["spring"], stop_time=1.0, repeats=1, callgrind=False,
                formulation_params={"spring": {"b": 80.0}})
    (row,) = out["rows"]
    assert row["kinematics"] == "spring" and row["parameters"] == {"k": 5e4, "b": 80.0}
    assert row["core_step_max_diff"] == 0          # the harness is fmigen_core_step bit for bit
    assert math.isfinite(row["peak_constraint_violation"]) and row["peak_constraint_violation"] > 0
    assert row["kinematics_instructions_per_step"] is None
