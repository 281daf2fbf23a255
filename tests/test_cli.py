import json
import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *args], capture_output=True, text=True)


@pytest.mark.parametrize("verb", ["build", "validate", "triangularize"])
def test_help(verb):
    p = run(verb, "--help")
    assert p.returncode == 0 and "--json" in p.stdout


def test_validate_json_fourbar():
    p = run("validate", "fourbar", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"max_abs_error", "max_abs_velocity_error", "max_constraint_residual", "passed"}
    assert out["passed"] is True
    assert set(out["max_abs_error"]) == set(out["max_abs_velocity_error"]) == {"theta", "alpha", "phi"}
    assert out["max_abs_error"]["theta"] <= 1e-6
    assert out["max_abs_velocity_error"]["theta"] <= 1e-6          # measured 9.9e-8
    assert out["max_constraint_residual"] <= 1e-12


def test_validate_fails_with_exit_1_when_tolerance_not_met():
    # Euler at 10 ms is ~0.1 rad off after 2 s: a tolerance of 1e-6 must fail.
    p = run("validate", "fourbar", "--solver", "euler", "--step", "0.01", "--json")
    assert p.returncode == 1
    assert json.loads(p.stdout)["passed"] is False


def test_build_by_path_and_bad_mechanism(tmp_path):
    p = run("build", "mechanisms/slider_crank.py", "-o", str(tmp_path / "sc.fmu"), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["independent"] == ["theta"]
    p = run("build", "nosuch", "-o", str(tmp_path / "x.fmu"))
    assert p.returncode == 2 and "no mechanism 'nosuch'" in p.stderr


def test_step_must_be_positive():
    p = run("build", "fourbar", "-o", "x.fmu", "--step", "0")
    assert p.returncode == 2 and "must be > 0" in p.stderr
