import json
import subprocess
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    # from the repository's root: the tests name mechanisms by relative path
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("verb", ["build", "validate", "check", "triangularize", "assemble", "bench"])
def test_help(verb):
    p = run(verb, "--help")
    assert p.returncode == 0 and "--json" in p.stdout


def test_validate_json_fourbar():
    p = run("validate", "fourbar", "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert set(out) == {"max_abs_error", "max_abs_velocity_error", "max_constraint_residual", "passed",
                        "references", "energy_drift"}
    assert out["passed"] is True
    # a low-level mechanism has no joint description: the IDA reference only
    assert set(out["references"]) == {"ida"}
    ida = out["references"]["ida"]
    assert ida["passed"] is True and ida["max_abs_error"] == out["max_abs_error"]
    assert ida["max_abs_velocity_error"] == out["max_abs_velocity_error"]
    assert 0 <= out["energy_drift"] <= 1e-6                          # measured 2.1e-8
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
    # --json: stdout is the JSON alone, the progress lines go to stderr, plain (not a terminal)
    assert "[5/5] compiling and packaging" in p.stderr and "\r" not in p.stderr
    p = run("build", "nosuch", "-o", str(tmp_path / "x.fmu"))
    assert p.returncode == 2 and "no mechanism 'nosuch'" in p.stderr
    # an existing directory as the output: refused before deriving, by name
    # (it was an IsADirectoryError traceback from zipfile once the build had
    # run to its last stage)
    p = run("build", "slider_crank", "-o", str(tmp_path))
    assert p.returncode == 2 and f"-o {tmp_path} is a directory" in p.stderr
    assert "Traceback" not in p.stderr and "[1/5]" not in p.stderr


@pytest.mark.parametrize("args", [("build", "fourbar", "-o", "x.fmu", "--step", "0"),
                                  ("build", "fourbar", "-o", "x.fmu", "--step", "inf"),
                                  ("validate", "fourbar", "--stop-time", "inf"),
                                  ("validate", "fourbar", "--step", "nan"),
                                  ("sweep", "fourbar", "--param", "tau=1", "--step", "0"),
                                  ("bundle", "fourbar", "--stop-time", "-1")])
def test_step_and_times_must_be_finite_and_positive(args):
    """Refused by the argument parser, naming the option: an infinite
    stop time ran until memory ran out, an infinite step failed in the C
    compiler, sweep's --step 0 and bundle's times were plain floats."""
    p = run(*args)
    assert p.returncode == 2 and "must be a finite number > 0" in p.stderr and args[-2] in p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args,message", [
    (("validate", "fourbar", "--output-interval", "5", "--stop-time", "0.1"), "must not exceed the stop time"),
    (("validate", "fourbar", "--step", "0.5", "--stop-time", "0.1"), "must not exceed the stop time"),
    (("assemble", "fourbar", "--inputs", "theta=nan"), "'nan' is not a finite number (for theta)"),
    (("bench", "fourbar", "--kinematics", "newton", "--tolerances", "abc"), "want numbers separated by commas"),
    (("bench", "fourbar", "--kinematics", "newton", "--tolerances", "0"), "want finite numbers > 0")])
def test_more_bad_input_is_an_error(args, message):
    """Each was a Python traceback (a review's list): an error naming the
    cause, exit 2."""
    p = run(*args)
    assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_start_that_is_not_finite_is_refused(tmp_path):
    src = (ROOT / "mechanisms" / "fourbar.py").read_text()
    assert 'm.coordinate("theta", math.pi / 2' in src
    (tmp_path / "fb_nan.py").write_text(src.replace('m.coordinate("theta", math.pi / 2', 'm.coordinate("theta", float("nan")'))
    p = run("build", str(tmp_path / "fb_nan.py"), "-o", str(tmp_path / "x.fmu"))
    assert p.returncode == 2 and "coordinate 'theta': start nan" in p.stderr and "Traceback" not in p.stderr


def test_clear_errors_for_files_and_orders(tmp_path):
    """A file the command line names that is missing, an --order naming
    no block's variable, an --fmu that is not an FMU: an error naming it,
    no traceback (an unknown order name was dropped without a word)."""
    (tmp_path / "text.fmu").write_text("not a zip")
    for args, message in ((("import-mjcf", str(tmp_path / "nosuch.xml")), "No such file or directory: "),
                          (("triangularize", "fourbar", "--order", "foo,bar"), "no block has the variable(s) foo, bar"),
                          (("validate", "fourbar", "--fmu", str(tmp_path / "text.fmu")),
                           "is not an FMU built by fmigen")):
        p = run(*args)
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)


def test_validate_an_existing_fmu(tmp_path):
    """validate --fmu runs a built FMU against the reference without
    building: the same numbers as the build-and-validate path (same FMU
    bits, same fmpy run), and an FMU of another mechanism is a clear error."""
    from conftest import cached_validate
    fmu = tmp_path / "fourbar.fmu"
    assert run("build", "fourbar", "-o", str(fmu)).returncode == 0
    p = run("validate", "fourbar", "--fmu", str(fmu), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    ref = cached_validate("fourbar", stop_time=2.0, solver="rk4", step=1e-3)
    assert out["max_abs_error"] == ref.max_abs_error
    assert out["max_abs_velocity_error"] == ref.max_abs_velocity_error
    other = tmp_path / "slider.fmu"
    assert run("build", "slider_crank", "-o", str(other)).returncode == 0
    p = run("validate", "fourbar", "--fmu", str(other))
    assert p.returncode == 2 and "is not an FMU of 'fourbar'" in p.stderr
    # the FMU's own integrator, not --step: a 2 ms Euler FMU sampled every
    # 1 ms took 1 ms steps and reported half its error (6.7e-4, not 1.3e-3)
    euler = tmp_path / "euler.fmu"
    assert run("build", "fourbar", "--solver", "euler", "--step", "0.002", "-o", str(euler)).returncode == 0
    p = run("validate", "fourbar", "--fmu", str(euler), "--stop-time", "0.5", "--step", "0.001")
    assert "FMU (euler, h = 0.002 s)" in p.stdout, p.stdout
    from fmigen.verify.validate import fmu_integrator
    assert fmu_integrator(euler) == ("euler", 0.002)


def test_build_several_variants_from_one_derivation(tmp_path):
    """--fmi 2,3 --kind cs,me: four FMUs from one derivation, each a valid
    FMU of its variant (fmpy's validate_fmu finds nothing), named
    <stem>_fmi<v>_<kind>.fmu."""
    import fmpy.validation
    out = tmp_path / "fourbar.fmu"
    p = run("build", "fourbar", "--fmi", "2,3", "--kind", "cs,me", "-o", str(out), "--json")
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    expected = [tmp_path / f"fourbar_fmi{f}_{k}.fmu" for f in "23" for k in ("cs", "me")]
    assert info["fmus"] == [str(e) for e in expected]
    for e in expected:
        assert fmpy.validation.validate_fmu(str(e)) == []
        md = fmpy.read_model_description(str(e))
        assert md.fmiVersion.startswith(e.name.split("_fmi")[1][0])
        assert (md.coSimulation is not None) == e.name.endswith("_cs.fmu")
    assert run("build", "fourbar", "--fmi", "4", "-o", str(out)).returncode == 2


def test_progress_spinner_on_a_terminal_only(monkeypatch):
    import io
    import time
    from fmigen.build import progress
    monkeypatch.setattr(progress, "DELAY", 0.05)
    streams = {}
    for tty in (True, False):
        streams[tty] = io.StringIO()
        with progress.Progress(streams[tty], spinner=tty) as log:
            log("[1/5] a stage")
            time.sleep(0.5)
            log("[2/5] the next")
    assert streams[False].getvalue() == "[1/5] a stage\n[2/5] the next\n"
    shown = streams[True].getvalue()
    # the spinner with the elapsed time, erased before the next line
    assert "\r\033[K      |" in shown and " 0 s" in shown
    assert shown.count("\n") == 2 and "\r\033[K[2/5] the next\n" in shown


def test_a_stage_shows_the_time_it_took_last_build(monkeypatch, tmp_path):
    import io
    import time
    from fmigen.build import progress
    monkeypatch.setattr(progress, "DELAY", 0.05)
    history = progress.StageTimes(tmp_path / "stage_times.json")
    assert history.last("vehicle", "dae") is None          # no history: no claim
    history.remember("vehicle", {"dae": 155.234, "codegen": 3.0})
    history.remember("fourbar", {"dae": 1.0})
    assert history.last("vehicle", "dae") == 155.23 and history.last("fourbar", "dae") == 1.0
    stream = io.StringIO()
    with progress.Progress(stream, spinner=True) as log:
        progress.stage(log, "[1/5] deriving", history.last("vehicle", "dae"))
        time.sleep(0.4)
        progress.stage(log, "[4/5] generating C", history.last("vehicle", "codegen"))
    shown = stream.getvalue()
    # on the line when it matters (≥ 5 s), and the spinner counts up to it
    assert "[1/5] deriving (last build: 155 s)\n" in shown and " 0 s of about 155 s" in shown
    assert "[4/5] generating C\n" in shown
    (tmp_path / "stage_times.json").write_text("{not json")
    assert history.last("vehicle", "dae") is None          # a broken file is no history


def test_a_build_records_its_stage_times(monkeypatch, tmp_path):
    from fmigen.kinematics import groebner
    from fmigen.build import progress
    from fmigen.build.pipeline import build_fmu
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path)
    lines = []
    build_fmu("fourbar", tmp_path / "fb.fmu", log=lines.append, use_cache=False)
    history = progress.StageTimes(tmp_path / "stage_times.json")
    for stage in ("dae", "triangular", "codegen", "fmu_2_cs"):
        assert history.last("fourbar", stage) is not None, stage


def test_build_help_explains_the_dynamics_choice():
    from fmigen.generate.codegen_recursive import RECURSIVE_FROM_F
    p = run("build", "--help")
    text = " ".join(p.stdout.split())
    assert "--dynamics {auto,embedded,recursive}" in text
    assert "without forming B" in text and f"from f = {RECURSIVE_FROM_F} independent coordinates on" in text


def test_recursive_dynamics_refused_with_the_python_runtime(tmp_path):
    p = run("build", "fourbar", "-o", str(tmp_path / "x.fmu"), "--runtime", "python", "--dynamics", "recursive")
    assert p.returncode != 0 and "--dynamics recursive is generated C" in p.stderr
