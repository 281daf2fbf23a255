"""Open chains (no loop, no constraint: m = 0) through every stage.

The mechanisms are the corpus's textbook ones (tests/corpus/pendulum.py,
double_pendulum.py, serial_arm.py); each is checked against a reference
that shares no code with fmigen: the compound pendulum's exact period
(complete elliptic integral) and its energy, the double pendulum against
Spong et al.'s closed-form equations integrated by scipy, the arm's statics.
Until m = 0 was handled, the pendulum's build stopped in ``dae.Phi_q``
(sympy has no Jacobian of a 0 x 0 matrix).
"""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate
import scipy.special
from fmpy import simulate_fmu

from conftest import cached_validate
from fmigen.model import Mechanism
from fmigen.build.pipeline import build_fmus
from fmigen.verify.validate import validate

CORPUS = Path(__file__).resolve().parent / "corpus"
PENDULUM, DOUBLE, ARM = (str(CORPUS / f"{n}.py") for n in ("pendulum", "double_pendulum", "serial_arm"))


def cli(*args):
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def pendulum_fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("pendulum")
    targets = [(out / f"pendulum_{f}_{k}.fmu", f, k) for f in ("2", "3") for k in ("cs", "me")]
    paths, _ = build_fmus(PENDULUM, targets, solver="rk4", step=1e-3)
    return dict(zip([(f, k) for _, f, k in targets], paths))


def test_pendulum_exact_large_amplitude_period_and_energy(pendulum_fmus):
    L, g, m = 1.0, 9.81, 1.0
    theta0 = 2.0                               # amplitude from the bottom (pendulum.py's start)
    res = simulate_fmu(str(pendulum_fmus[("2", "cs")]), stop_time=3.0, output_interval=1e-3,
                       output=["theta", "der(theta)", "constraint_residual"])
    th, w, t = res["theta"], res["der(theta)"], res["time"]
    assert th[0] == pytest.approx(-math.pi / 2 + theta0, abs=1e-15)
    # passages through the bottom (θ = −π/2), either way, linearly
    # interpolated: the motion is nearly linear there (θ̈ = 0 at the
    # bottom); the first and the third are one period apart
    x = th + math.pi / 2
    i = np.nonzero(np.sign(x[:-1]) != np.sign(x[1:]))[0]
    crossings = t[i] - x[i] * (t[i + 1] - t[i]) / (x[i + 1] - x[i])
    assert len(crossings) == 3
    period = crossings[2] - crossings[0]
    # Thornton & Marion §4.4 with the equivalent length 2L/3; scipy's ellipk takes m = k²
    exact = 4 * math.sqrt(2 * L / (3 * g)) * scipy.special.ellipk(math.sin(theta0 / 2) ** 2)
    small = 2 * math.pi * math.sqrt(2 * L / (3 * g))
    assert small == pytest.approx(1.64, abs=5e-3)           # Halliday et al.'s meter stick
    assert exact / small == pytest.approx(1.329, abs=1e-3)   # the small-angle period is far off here
    assert period == pytest.approx(exact, rel=1e-6)
    # energy about the pivot: ½ (m L²/3) ω² + m g (L/2) sin θ
    E = 0.5 * m * L**2 / 3 * w**2 + m * g * L / 2 * np.sin(th)
    assert np.max(np.abs(E - E[0])) <= 1e-9 * m * g * L
    assert np.all(res["constraint_residual"] == 0.0)


def test_pendulum_fmi2_and_fmi3_cs_and_me_run_in_fmpy(pendulum_fmus):
    runs = {key: simulate_fmu(str(p), stop_time=0.5, output_interval=1e-2, output=["theta"])["theta"]
            for key, p in pendulum_fmus.items()}
    # the same generated step in both FMI versions: the same bytes out
    assert np.array_equal(runs[("2", "cs")], runs[("3", "cs")])
    # ME: fmpy's own integrator on the same right-hand side
    for f in ("2", "3"):
        assert np.max(np.abs(runs[(f, "me")] - runs[("2", "cs")])) < 1e-4


def test_pendulum_cli_check_triangularize_assemble():
    p = cli("check", PENDULUM, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["passed"] and r["independent"] == ["theta"] and r["sequences"] == {}
    p = cli("triangularize", PENDULUM, "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["blocks"] == []
    p = cli("assemble", PENDULUM, "--inputs", "theta=0.3", "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["real_count"] == 1 and r["variables"] == [] and r["inputs"] == {"theta": 0.3}
    p = cli("assemble", PENDULUM, "--hidden", "theta")
    assert p.returncode != 0 and "no constraint" in p.stderr and "Traceback" not in p.stderr


def _spong_double_pendulum(l1=1.0, l2=0.7, m1=1.0, m2=0.5, g=9.81):
    """Spong, Hutchinson & Vidyasagar (2006) §7.4.2, τ = 0, as numpy."""
    lc1, lc2, I1, I2 = l1 / 2, l2 / 2, m1 * l1**2 / 12, m2 * l2**2 / 12

    def rhs(_, y):
        q1, q2, w1, w2 = y
        d11 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * math.cos(q2)) + I1 + I2
        d12 = m2 * (lc2**2 + l1 * lc2 * math.cos(q2)) + I2
        d22 = m2 * lc2**2 + I2
        h = -m2 * l1 * lc2 * math.sin(q2)
        phi2 = m2 * lc2 * g * math.cos(q1 + q2)
        phi1 = (m1 * lc1 + m2 * l1) * g * math.cos(q1) + phi2
        rhs_ = [-(2 * h * w1 * w2 + h * w2**2 + phi1), -(-h * w1**2 + phi2)]
        a = np.linalg.solve([[d11, d12], [d12, d22]], rhs_)
        return [w1, w2, a[0], a[1]]
    return rhs


def test_double_pendulum_against_ida_cartesian_and_spong():
    rep = cached_validate(DOUBLE, stop_time=1.0)
    assert rep.passed
    for ref in ("ida", "cartesian"):
        assert rep.references[ref]["passed"]
        assert max(rep.references[ref]["max_abs_error"].values()) < 1e-8   # measured ≤ 1.7e-9 over 2 s
    assert rep.max_constraint_residual == 0.0
    sol = scipy.integrate.solve_ivp(_spong_double_pendulum(), (0, 1.0), [0.0, -0.5, 0.0, 0.0],
                                    t_eval=rep.times, rtol=1e-12, atol=1e-12, method="DOP853")
    for k, name in enumerate(("q1", "q2")):
        assert np.max(np.abs(rep.fmu_result[name] - sol.y[k])) < 1e-8


def test_serial_arm_holds_its_pose_and_follows_a_torque():
    from corpus.serial_arm import Q0, holding_torques
    # the inputs' starts are the statics φ(q0) computed by hand: it stays put
    held = cached_validate(ARM, stop_time=0.5)
    assert held.passed
    for k, name in enumerate(("q1", "q2", "q3")):
        assert np.max(np.abs(held.fmu_result[name] - Q0[k])) < 1e-12
    # 5 N·m more at the shoulder from the start (a constant signal: the FMU
    # gets it without interpolation error) swings the arm; the references agree
    rep = validate_arm(f"tau1={holding_torques()[0] + 5.0!r}")
    assert rep.passed
    assert np.max(np.abs(rep.fmu_result["q1"] - Q0[0])) > 0.05
    for ref in ("ida", "cartesian"):
        assert max(rep.references[ref]["max_abs_error"].values()) < 1e-8


def validate_arm(signal):
    return cached_validate(ARM, stop_time=0.5, input_signals=(signal,))


def test_low_level_mechanism_with_no_constraint(tmp_path):
    """The same rod as a hand-written Mechanism (no joint description)."""
    from sympy import cos, sin

    mech = Mechanism("pendulum_low_level")
    th = mech.coordinate("theta", -math.pi / 2 + 0.5, "rad")
    L = mech.parameter("L", 1.0, "m")
    mech.planar_body("rod", 1.0, L**2 / 12, (L / 2 * cos(th), L / 2 * sin(th)), th)
    mech.gravity = (0, -9.81, 0)
    rep = validate(mech, stop_time=0.5)
    assert rep.passed and set(rep.references) == {"ida"}
    assert rep.max_abs_error["theta"] < 1e-9
    assert rep.max_constraint_residual == 0.0
