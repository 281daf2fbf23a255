"""FMU (fmpy) against the independent DAE reference, and convergence orders."""
import math

import numpy as np

import pytest

from conftest import cached_validate

MECHANISMS = ["fourbar", "slider_crank"]


@pytest.mark.parametrize("mech", MECHANISMS)
def test_rk4_1ms_matches_dae_reference_over_2s(mech):
    r = cached_validate(mech, stop_time=2.0, solver="rk4", step=1e-3)
    assert len(r.times) == 201 and r.times[-1] == pytest.approx(2.0)
    for name, err in r.max_abs_error.items():
        assert err <= 1e-6, f"{name}: {err}"
    # velocities too: der(q) against the reference's v (measured max 9.9e-8
    # four-bar, 2.9e-9 slider-crank)
    assert set(r.max_abs_velocity_error) == set(r.max_abs_error)
    for name, err in r.max_abs_velocity_error.items():
        assert err <= 1e-6, f"der({name}): {err}"
    assert r.passed


@pytest.mark.parametrize("mech", MECHANISMS)
def test_constraint_residual_at_every_output_point(mech):
    r = cached_validate(mech, stop_time=2.0, solver="rk4", step=1e-3)
    res = r.fmu_result["constraint_residual"]
    assert (abs(res) <= 1e-12).all(), max(abs(res))
    # and the FMU really moved: the crank turned through more than a radian
    assert abs(r.fmu_result["theta"][-1] - r.fmu_result["theta"][0]) > 1.0


# Convergence is measured up to a time where h = 5 ms is asymptotic for RK4.
# After t ≈ 1.55 s the four-bar's crank runs at > 10 rad/s through the
# rocker's reversal, where RK4's error constants are so large that the ratio of
# errors for h = 5 → 2.5 → 1.25 ms reads 20–27 (pre-asymptotic; the embedded
# ODE solved independently with DOP853 gives the same errors), while before it
# the ratio is 15.4–17.0.
ORDER_WINDOW = {"fourbar": 1.5, "slider_crank": 2.0}


def _order(mech, solver, h):
    """Observed order from halving h: the median over output points of
    log2(e(h) / e(h/2)), using points whose error is far above the
    reference's own (~1e-10)."""
    stop = ORDER_WINDOW[mech]
    r1 = cached_validate(mech, stop_time=stop, solver=solver, step=h, output_interval=0.01)
    r2 = cached_validate(mech, stop_time=stop, solver=solver, step=h / 2, output_interval=0.01)
    e1 = np.abs(r1.fmu_result["theta"] - r1.reference.q[:, 0])
    e2 = np.abs(r2.fmu_result["theta"] - r2.reference.q[:, 0])
    use = e2 > 2e-9
    assert use.sum() >= 20, "too few points above the reference error to measure an order"
    return float(np.median(np.log2(e1[use] / e2[use])))


@pytest.mark.parametrize("mech", MECHANISMS)
def test_explicit_euler_is_first_order(mech):
    p = _order(mech, "euler", 1e-3)
    assert 0.9 < p < 1.1, p


@pytest.mark.parametrize("mech", MECHANISMS)
def test_rk4_is_fourth_order(mech):
    p = _order(mech, "rk4", 5e-3)
    assert 3.8 < p < 4.2, p


def test_reference_starts_at_the_independent_start_velocity():
    """The FMU starts at θ̇(0) = 2 and solves α̇, φ̇ from the velocity
    constraint; the reference must do the same, not correct all three by
    minimum norm (which started it at θ̇ = 1.62 and made validate compare two
    different motions)."""
    from fmigen.build.pipeline import load_mechanism
    from fmigen.verify.validate import validate
    mech = load_mechanism("fourbar")
    mech.coordinate_by_name("theta").velocity_start = 2.0
    mech.name = "fourbar_spinning"
    r = validate(mech, stop_time=1.0, solver="rk4", step=1e-3)
    assert r.reference.v[0, 0] == 2.0
    assert r.fmu_result["der(theta)"][0] == pytest.approx(2.0, abs=1e-12)
    # the dependent start velocities satisfy Φ_q v = 0 at the start
    assert r.max_abs_velocity_error["alpha"] <= 1e-6 and r.max_abs_velocity_error["phi"] <= 1e-6
    assert r.passed, (r.max_abs_error, r.max_abs_velocity_error)


@pytest.mark.parametrize("mech", MECHANISMS)
def test_symplectic_euler_is_first_order(mech):
    p = _order(mech, "symplectic", 1e-3)
    assert 0.9 < p < 1.1, p


def test_symplectic_euler_keeps_the_energy_that_explicit_euler_loses():
    """Same cost per step (one evaluation).  On the slider-crank over 5 s at
    1 ms its energy balance drifts 12x less than explicit Euler's (measured
    2.9e-3 against 3.5e-2) and its coordinates are 15x closer to the reference.
    Not a law: in (q, v) with a configuration-dependent mass matrix the
    scheme is not symplectic, and on the four-bar spinning at 3 rad/s it
    drifts more than explicit Euler (0.22 against 0.06 over 20 s)."""
    explicit = cached_validate("slider_crank", stop_time=5.0, solver="euler", step=1e-3)
    symplectic = cached_validate("slider_crank", stop_time=5.0, solver="symplectic", step=1e-3)
    assert symplectic.energy_drift < explicit.energy_drift / 5, (symplectic.energy_drift, explicit.energy_drift)
    assert max(symplectic.max_abs_error.values()) < max(explicit.max_abs_error.values()) / 5


def test_input_signals_are_read_and_checked():
    """``validate --input NAME=EXPR``: the expression in t (smoothstep is the
    C² step), only the mechanism's inputs, only t as a symbol; the DAE the
    references integrate has the signal in place of the input."""
    import sympy as sp
    from fmigen.derive.dae import build_dae
    from fmigen.model import ModelError, t
    from fmigen.build.pipeline import load_mechanism
    from fmigen.verify.validate import parse_input_signals, with_input_signals
    mech = load_mechanism("fourbar")
    sig = parse_input_signals(mech, ["tau = 6 + 2*smoothstep(t, 1/10, 3/10)"])
    f = sp.lambdify(t, sig["tau"])
    assert [f(x) for x in (0.0, 0.1, 0.2, 0.3, 1.0)] == pytest.approx([6, 6, 7, 8, 8], abs=1e-15)
    # C²: value, slope and curvature of the pieces meet exactly at both ends
    (before, _), (ramp, _), (after, _) = sig["tau"].atoms(sp.Piecewise).pop().args
    for end, outside in ((sp.Rational(1, 10), before), (sp.Rational(3, 10), after)):
        for d in range(3):
            assert sp.diff(ramp, t, d).subs(t, end) == sp.diff(outside, t, d).subs(t, end), (end, d)
    dae = build_dae(mech)
    driven = with_input_signals(dae, sig)
    assert driven.inputs == [] and not driven.F.has(dae.inputs[0]) and driven.F.has(t)
    for bad, why in ((["torque=1"], "no such input"), (["tau=2*x"], "only t may appear"),
                     (["tau"], "NAME=EXPRESSION"), (["tau=2*("], "cannot read"),
                     (["tau=foo(t)"], "unknown function"), (["tau=1/(t-t)"], "is not finite"),
                     # the text is checked before sympify evaluates it: no code runs
                     (['tau=__import__("os").system("false")'], "unknown function"),
                     (["tau=t.__class__"], "may appear")):
        with pytest.raises(ModelError, match=why):
            parse_input_signals(mech, bad)
    # finite as an expression, not at the samples: refused before the run,
    # with the time (the FMU refused it mid-run, as a failed fmi2SetReal)
    from fmigen.verify.validate import _check_signals, _signal_functions
    fns = _signal_functions(parse_input_signals(mech, ["tau=log(t - 1/2)"]))
    with pytest.raises(ModelError, match="not a finite real number at t = 0 s"):
        _check_signals(fns, 1.0, 0.1)
    _check_signals(_signal_functions(sig), 1.0, 0.1)


def test_an_fmu_that_stops_before_its_first_output_is_a_clear_error():
    """The toggle four-bar's FMU returns Discard at its crank limit (t ≈
    0.85 s), before the first output time 1 s: validate says so (it handed
    the references a single time, and IDA raised "'tspan' must strictly
    increase", a traceback)."""
    from conftest import toggle_fourbar
    from fmigen.model import ModelError
    from fmigen.verify.validate import validate
    with pytest.raises(ModelError, match=r"the FMU stopped at t=0\.8\d* .*before the first output time 1"):
        validate(toggle_fourbar(), stop_time=2.0, output_interval=1.0)


def _trimmed_pendulum_file(tmp_path):
    """tests/test_trim.py's sprung pendulum (a trimmed spring) as a mechanism
    file for the command line."""
    path = tmp_path / "trim_pendulum.py"
    path.write_text("from test_trim import sprung_pendulum\n\n\ndef build():\n    return sprung_pendulum()\n")
    return str(path)


def _validate_cli(capsys, *args):
    from fmigen import cli
    code = cli.main(["validate", *args, "--stop-time", "0.05", "--step", "1e-3"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_reference_that_fails_before_its_trims_is_a_failed_entry_with_its_cause(tmp_path, capsys, monkeypatch):
    """The Cartesian reference failing in its assembly (before it solves the
    trims) by a numerical library's error, and MuJoCo failing by an error of
    its own kind: each entry fails naming the cause, the energy balance
    still solves the trim itself at the FMU's start and closes, and
    validate ends FAILED, exit 1 — no traceback."""
    pytest.importorskip("mujoco")
    from fmigen.verify import cartesian, mujoco_peer

    def no_assembly(*args, **kwargs):
        raise np.linalg.LinAlgError("SVD did not converge")

    def no_peer(*args, **kwargs):
        raise ValueError("mj_forward: mass matrix is not positive definite")

    monkeypatch.setattr(cartesian.CartesianModel, "assemble", no_assembly)
    monkeypatch.setattr(mujoco_peer, "run_mujoco", no_peer)
    code, out, err = _validate_cli(capsys, _trimmed_pendulum_file(tmp_path), "--peer", "mujoco")
    assert code == 1 and "Traceback" not in err
    assert "vs the DAE reference (IDA on the model's M, F, Φ), rtol 1e-12: passed" in out
    assert "could not run: LinAlgError: SVD did not converge (raised at test_validation.py:" in out
    assert "could not run: ValueError: mj_forward: mass matrix is not positive definite" in out
    drift = float(out.split("energy drift             = ")[1].split()[0])
    assert drift < 1e-6
    assert out.rstrip().endswith("FAILED")


def test_an_energy_balance_that_cannot_solve_its_trims_fails_with_its_cause(tmp_path, monkeypatch):
    """The trims unsolvable in the joint description's equations: the
    Cartesian reference and the energy balance both fail with that
    message, and the report says so (JSON: energy_drift null and
    energy_error) instead of raising."""
    from fmigen.verify import cartesian
    from fmigen.verify.validate import validate
    from test_trim import sprung_pendulum

    def unsolvable(*args, **kwargs):
        raise cartesian.CartesianError("the trims of 'trim_pendulum' do not determine their preloads")

    monkeypatch.setattr(cartesian, "cartesian_trims", unsolvable)
    r = validate(sprung_pendulum(), stop_time=0.05, step=1e-3)
    assert not r.passed and r.references["ida"]["passed"]
    assert r.references["cartesian"]["error"] == "the trims of 'trim_pendulum' do not determine their preloads"
    assert r.energy_error == "the trims of 'trim_pendulum' do not determine their preloads"
    out = r.as_json()
    assert out["energy_drift"] is None and out["energy_error"] == r.energy_error


def test_an_ida_reference_that_fails_at_its_start_ends_validate_with_its_cause(tmp_path, capsys, monkeypatch):
    """IDA failing before its first output time (no trajectory to compare
    with): validate ends with one line naming the DAE reference and the
    cause, exit 2."""
    from fmigen.verify import validate as validate_module
    from fmigen.verify.reference import ReferenceSolverError

    def fails(*args, **kwargs):
        raise ReferenceSolverError("IDA failed at t = 0: the corrector could not converge")

    monkeypatch.setattr(validate_module, "solve_reference", fails)
    code, out, err = _validate_cli(capsys, _trimmed_pendulum_file(tmp_path))
    assert code == 2 and "Traceback" not in err
    assert ("fmigen: error: the DAE reference (IDA) failed before its first output time: "
            "IDA failed at t = 0: the corrector could not converge") in err
