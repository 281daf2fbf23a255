"""Aircraft landing gear (paper 000, eqs. 16-19 and Table 4)."""
import numpy as np
import pytest
import sympy as sp
from fmpy import simulate_fmu
from scipy.optimize import fsolve

from fmigen.cli import main as cli_main
from fmigen.pipeline import build_fmu
from mechanisms.landing_gear import GUESSES, constraints

PAPER_ORDER = "c_theta_F,s_theta_F,c_theta_A,s_theta_A,c_theta_D,s_theta_D,c_theta_B,s_theta_B,p_BC"
ANGLES = ["theta_A", "theta_B", "theta_D", "theta_F"]


def test_triangular_system_matches_table_4(capsys):
    import json
    assert cli_main(["triangularize", "landing_gear", "--order", PAPER_ORDER, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [block] = out["blocks"]
    seq = block["sequence"]
    assert block["method"] == "groebner"
    assert [s["variable"] for s in seq] == ["s_theta_B", "c_theta_B", "s_theta_D", "c_theta_D",
                                             "s_theta_A", "c_theta_A", "s_theta_F", "c_theta_F"]
    assert [s["degree"] for s in seq] == [6, 1, 1, 1, 1, 1, 1, 1]
    # Table 4 of paper 000: number of terms and longest coefficient (digits)
    assert [s["terms"] for s in seq] == [28, 40, 37, 6, 37, 37, 37, 37]
    assert [s["max_coeff_digits"] for s in seq] == [62, 132, 245, 9, 264, 264, 252, 254]


def _independent_solution(p, guess):
    """scipy's fsolve on the paper's four equations, continued from ``guess``."""
    a = sp.symbols("a b d f")
    F = sp.lambdify([a], list(constraints(*a, p).values()))
    x, info, ier, msg = fsolve(lambda x: F(x), guess, full_output=True, xtol=1e-14)
    assert np.abs(F(x)).max() < 1e-10, msg  # ier 3 = "xtol too small": converged to round-off
    return x


@pytest.fixture(scope="module")
def gear_fmu(tmp_path_factory):
    path, _ = build_fmu("landing_gear", tmp_path_factory.mktemp("lg") / "landing_gear.fmu")
    return path


def test_stroke_sweep_stays_on_one_branch(gear_fmu):
    # drive the piston at 10 cm/s from 200 to 300 (p_BC'' = 0 without force)
    r = simulate_fmu(str(gear_fmu), stop_time=10.0, output_interval=0.05,
                     start_values={"der(p_BC)": 10.0}, output=["p_BC", *ANGLES, "constraint_residual"])
    assert r["p_BC"][-1] == pytest.approx(300.0, abs=1e-9)
    # Fig. 7 branch: main strut counter-clockwise, drag strut clockwise
    assert (np.diff(r["theta_A"]) > 0).all()
    assert (np.diff(r["theta_D"]) > 0).all()
    guess = np.array([GUESSES[n] for n in ANGLES])
    for k in range(0, len(r), 20):
        guess = _independent_solution(r["p_BC"][k], guess)
        got = np.array([r[n][k] for n in ANGLES])
        assert np.abs(got - guess).max() < 1e-9, (r["p_BC"][k], got, guess)
    # constraints to round-off except near p = 302, see the closing note
    assert np.abs(r["constraint_residual"]).max() <= 1e-10


def test_end_of_stroke_is_reported_as_singular(gear_fmu):
    """Retracting below p ≈ 178.7 the two real branches of the sextic merge:
    the FMU stops with fmi2Discard at the last good point instead of jumping."""
    r = simulate_fmu(str(gear_fmu), stop_time=5.0, output_interval=0.01,
                     start_values={"der(p_BC)": -10.0}, output=["p_BC", *ANGLES, "constraint_residual"])
    assert r["time"][-1] < 2.2 and 178.0 < r["p_BC"][-1] < 179.5
    assert np.abs(r["constraint_residual"]).max() <= 1e-12
