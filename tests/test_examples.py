"""examples/vehicle_bump.py: the vehicle FMU in a 1 kHz driving-simulator
loop with Python tyres, over a bump under its left wheels.

The script runs as a user runs it (a subprocess, ``--json --plot``) on
conftest.py's ``vehicle_fmu``, the FMU built once per session for this
file, tests/test_masters.py's libcosim test and tests/test_vehicle.py.
What it asserts is physics the script does not compute itself: the tyres
carry the weight of every body the vehicle module declares, the bump
reaches each left wheel when the coasting car's geometry says, the first
milliseconds of contact follow the tyre's spring and damper on the road
profile (the wheel has not moved yet), and the right side feels the bump
only later, through the chassis."""
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "vehicle_bump.py"
SPEED = 10.0            # m/s
BUMP_AHEAD = 0.5        # m: the front-left wheel reaches the bump at 0.05 s
STOP_TIME = 0.45        # s: the rear-left one (2.8 m behind) at about 0.33 s
CORNERS = ("fl_", "fr_", "rl_", "rr_")


@pytest.fixture(scope="module")
def bump_run(vehicle_fmu, tmp_path_factory):
    png = tmp_path_factory.mktemp("bump") / "bump.png"
    proc = subprocess.run([sys.executable, str(EXAMPLE), "--fmu", str(vehicle_fmu), "--stop-time", str(STOP_TIME),
                           "--speed", str(SPEED), "--bump-ahead", str(BUMP_AHEAD), "--json", "--plot", str(png)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    series = {k: np.array(v) for k, v in result["series"].items()}
    return result["summary"], series, png


def example_module():
    """examples/vehicle_bump.py imported by path (examples/ is no package)."""
    spec = importlib.util.spec_from_file_location("vehicle_bump", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def vehicle_weight():
    """g · the mass of every body of ``mechanisms/vehicle.py`` (chassis,
    rack, and per corner carrier, wheel and five links), from its
    parameters."""
    from mechanisms.vehicle import build
    s = build()
    values = {p.symbol: p.value for p in s.parameters}
    g = next(p.value for p in s.parameters if p.name == "g")
    return g * sum(float(sp.sympify(b.mass).xreplace(values)) for b in s.bodies.values())


def test_the_loop_runs_the_horizon_at_1_khz_and_reports_its_real_time_factor(bump_run):
    """Every signal finite over the horizon, the plot drawn, and the
    real-time factors reported (finite, positive).  How fast the loop runs
    is measured, not asserted: a speed target does not belong in a test
    whose time depends on the machine's load (docs/validation.md, "A
    driving-simulator loop", has the measured factors)."""
    summary, series, png = bump_run
    assert summary["step"] == 1e-3 and summary["steps"] == round(STOP_TIME / 1e-3)
    assert len(series["t"]) == summary["steps"] + 1
    for name, values in series.items():
        assert np.all(np.isfinite(values)), name
    rtf = summary["real_time_factor"]
    assert all(math.isfinite(v) and v > 0 for v in rtf.values())
    assert png.stat().st_size > 20_000
    print(f"real-time factor: loop {rtf['loop_wall']:.1f}x wall, {rtf['loop_cpu']:.1f}x CPU; "
          f"doStep alone {rtf['dostep_wall']:.1f}x wall, {rtf['dostep_cpu']:.1f}x CPU")


def test_before_the_bump_the_tyres_carry_the_vehicles_weight(bump_run):
    """Until the front-left wheel reaches the bump, the four vertical loads
    sum to the weight of the model's bodies, and each stays at its start:
    the design pose is the FMU's static equilibrium for its start loads
    (balanced to 1e-9 of the weight, tests/test_joint_model.py), which the
    script's tyre trim reproduces on the flat road.  What moves the loads at
    all is the rolling: the carriers sit a few µm off their design axes, so
    the wheels have a toe of 1 to 3 µrad, the tyres pull 0.07 to 0.2 N
    sideways (C ≈ 58 kN/rad at 3.9 kN), and the suspension's geometry turns side
    forces into vertical ones (jacking) of the same order: measured 0.055 N
    on the sum (3.6e-6 of the weight) and 0.017 N on a wheel over the 50
    steps.  Bound: 1e-5 of the weight (0.15 N); a tyre trim off by 1 µm
    of radius would move a load by 0.25 N, a body's weight left out of the
    start loads (the 3 kg rack) by 29 N."""
    summary, series, _ = bump_run
    weight = vehicle_weight()
    before = series["t"] < BUMP_AHEAD / SPEED
    assert before.sum() == 50
    total = sum(series[c + "Fz"][before] for c in CORNERS)
    assert np.abs(total - weight).max() < 1e-5 * weight
    for c in CORNERS:
        fz = series[c + "Fz"][before]
        assert np.abs(fz - fz[0]).max() < 1e-5 * weight, c
        assert np.abs(series[c + "Fx"][before]).max() < 1.0 and np.abs(series[c + "Fy"][before]).max() < 1.0


def test_the_bump_reaches_each_left_wheel_when_the_geometry_says(bump_run):
    """A left wheel's load jumps (by more than 50 N in one step: the chassis'
    motion moves a load by a few N per step) first at the step after its
    centre passes the bump's start: for the front-left wheel BUMP_AHEAD /
    SPEED, for the rear-left one BUMP_AHEAD plus the wheelbase of
    mechanisms/vehicle.py over the speed (the carriers' x are within 2 µm of
    the axle lines, 0.2 µs at 10 m/s)."""
    from mechanisms.vehicle import WHEELBASE
    summary, series, _ = bump_run
    t = series["t"]
    arrival = {"fl_": BUMP_AHEAD / SPEED, "rl_": (BUMP_AHEAD + WHEELBASE) / SPEED}
    for c, expected in arrival.items():
        jumps = np.diff(series[c + "Fz"]) > 50.0
        assert jumps.any(), c
        first = t[1:][np.argmax(jumps)]
        assert expected < first <= expected + 1e-3 + 1e-6, (c, first, expected)


def test_first_contact_follows_the_tyres_spring_and_damper_on_the_profile(bump_run):
    """Over the first 5 ms on the bump the front-left wheel has barely moved,
    so the load's rise is the tyre's spring on the road's height plus its
    damper on the height's rate, k h + c v h', at the wheel's distance onto
    the bump at SPEED, with the (1 − cos) profile of the road the script
    reports in its summary (its defaults: 0.03 m high, 0.5 m long).  The
    wheel's own displacement, relative to h, grows as k t²/(6 m_u) +
    c t/(2 m_u) (the spring's and the damper's share; unsprung mass
    m_u ≈ 50 kg): 3.6 % at 5 ms, so within 5 % (measured 0.01 % at the
    first step, 2.7 % at the fifth).  Without the damper's term the first
    step would be off by 70 %."""
    summary, series, _ = bump_run
    tyre = summary["tyre"]
    k, c = tyre["vertical_stiffness"], tyre["vertical_damping"]
    height, length = summary["road"]["height"], summary["road"]["length"]
    t = series["t"]
    onto = (t - BUMP_AHEAD / SPEED) * SPEED
    window = (onto > 1e-9) & (t < BUMP_AHEAD / SPEED + 5e-3 + 1e-9)
    w = 2 * math.pi / length
    h = 0.5 * height * (1 - np.cos(w * onto[window]))
    rate = 0.5 * height * w * np.sin(w * onto[window]) * SPEED
    rise = series["fl_Fz"][window] - series["fl_Fz"][0]
    expected = k * h + c * rate
    assert window.sum() == 5
    assert np.all(np.abs(rise - expected) <= 0.05 * expected), (rise, expected)


def test_the_right_side_feels_the_bump_only_through_the_chassis(bump_run):
    """The bump is under the left wheels only.  Over the first 10 ms on it
    the front-left load rises by kN while the front-right one moves by less
    than 1e-3 of that (measured 5e-5: the chassis, 1400 kg, has hardly
    rolled yet); over the horizon the load transfer does reach the right
    side (measured 107 N)."""
    summary, series, _ = bump_run
    t = series["t"]
    arrival = BUMP_AHEAD / SPEED
    early = (t > arrival) & (t < arrival + 0.010 + 1e-9)
    rise_fl = series["fl_Fz"][early] - series["fl_Fz"][0]
    change_fr = series["fr_Fz"][early] - series["fr_Fz"][0]
    assert rise_fl.max() > 1000.0
    assert np.abs(change_fr).max() < 1e-3 * rise_fl.max()
    assert np.abs(series["fr_Fz"] - series["fr_Fz"][0]).max() > 50.0


def test_the_brush_model_is_the_integral_over_its_contact_patch():
    """The script's closed form of Pacejka's brush model (combined slip,
    parabolic pressure) against the patch integrated numerically: a tread
    element entering at the leading edge x = a deflects by σ (a − x) (σ the
    theoretical slip), its force per unit length is c_p σ (a − x) up to the
    friction limit μ q(x), q = 3 F_z/(4a) (1 − x²/a²); the total is the
    integral over −a ≤ x ≤ a.  Adhesion, partial sliding and full sliding,
    and the linear model as its small-slip limit."""
    vehicle_bump = example_module()
    c_p, a, fz, mu = 3.0e6, 0.1, 4000.0, 1.0
    stiffness = 2 * c_p * a ** 2
    x = np.linspace(-a, a, 200_001)
    pressure = 3 * fz / (4 * a) * (1 - (x / a) ** 2)
    for sigma_x, sigma_y in [(1e-4, 0.0), (0.0, 0.01), (0.02, -0.015), (-0.03, 0.04), (0.2, 0.1)]:
        sigma = math.hypot(sigma_x, sigma_y)
        line = np.minimum(c_p * sigma * (a - x), mu * pressure)
        magnitude = float(np.sum((line[1:] + line[:-1]) / 2) * (x[1] - x[0]))
        fx, fy = vehicle_bump._brush(stiffness, mu * fz, sigma_x, sigma_y)
        assert math.hypot(fx, fy) == pytest.approx(magnitude, rel=1e-6, abs=1e-6)
        assert fx * sigma_y == pytest.approx(fy * sigma_x, abs=1e-9)      # along the slip
    fx, _ = vehicle_bump._brush(stiffness, mu * fz, 1e-6, 0.0)
    assert fx == pytest.approx(stiffness * 1e-6, rel=1e-5)
