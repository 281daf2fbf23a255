"""`pip install fmigen` as a user on another machine does it (README, "Install
with pip"): the sdist and the wheel made by `python -m build`, the wheel
installed into a fresh virtual environment, Singular from the pinned
passagemath wheel (`fmigen doctor --install-singular`) with Debian's Singular
*off PATH*, then the four-bar built and validated against the DAE reference
through that environment's own `fmigen`.

Nothing of the checkout is on the environment's path: the mechanism comes
from the wheel (fmigen/mechanisms), the C runtime from the wheel, the
Gröbner cache is empty.  PATH holds the venv's bin and a mirror of the
system's bin directories without any Singular, so the only engine there is
the wheel's.  pip reads the package registries (the wheel's dependencies from
pip's cache where setup left them)."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(argv, **kw):
    proc = subprocess.run(argv, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{argv} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def path_without_singular(where: Path) -> str:
    """A directory of links to every program on the system's bin directories
    except Singular's: the system's compilers stay, apt's Singular goes."""
    where.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for f in sorted(Path(d).iterdir()) if Path(d).is_dir() else []:
            if "Singular" in f.name or (where / f.name).exists():
                continue
            (where / f.name).symlink_to(f)
    return str(where)


def clean_env() -> dict:
    """The environment without what would reach into the checkout or the
    test's own environment: with PYTHONPATH on the checkout, pip takes the
    fmigen.egg-info that `python -m build` leaves there for an installed
    fmigen and skips the wheel."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "FMIGEN_SINGULAR", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    egg_info = ROOT / "fmigen.egg-info"
    had_egg_info = egg_info.exists()
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=ROOT, env=clean_env())
    if not had_egg_info:
        # setuptools leaves its egg-info in the checkout
        shutil.rmtree(egg_info, ignore_errors=True)
    return out


def test_sdist_and_wheel_hold_the_c_runtime_and_the_mechanisms(dist):
    wheel = next(dist.glob("fmigen-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    runtime = {p.name for p in (ROOT / "fmigen" / "runtime").glob("*.[ch]")}
    assert runtime and {f"fmigen/runtime/{n}" for n in runtime} <= names
    assert "fmigen/runtime/fmi2/fmi2Functions.h" in names
    shipped = {p.name for p in (ROOT / "mechanisms").glob("*.py")}
    assert {f"fmigen/mechanisms/{n}" for n in shipped} <= names
    meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert "License-Expression: MIT" in text and "Provides-Extra: singular" in text
    assert "Requires-Dist: passagemath-singular==10.8.13; extra == \"singular\"" in text
    sdist = next(dist.glob("fmigen-*.tar.gz"))
    members = {m.split("/", 1)[1] for m in tarfile.open(sdist).getnames() if "/" in m}
    assert {f"fmigen/runtime/{n}" for n in runtime} <= members
    assert "mechanisms/fourbar.py" in members and "LICENSE" in members


def test_wheel_in_a_fresh_venv_with_the_singular_wheel_builds_and_validates_the_fourbar(dist, tmp_path):
    wheel = next(dist.glob("fmigen-*.whl"))
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], env=clean_env())
    # --no-compile: the .pyc of numpy, scipy, sympy and matplotlib are most of
    # an install's CPU time, and Python writes those it needs when it runs
    # (unless PYTHONDONTWRITEBYTECODE says not to: env below)
    run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-compile", str(wheel)], env=clean_env(), cwd=tmp_path)
    assert (venv / "bin" / "fmigen").exists()
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env()
    # Python's default, as on a user's machine: the first run writes the .pyc
    # that --no-compile left out and the later runs read them.  Without it
    # (PYTHONDONTWRITEBYTECODE set around the suite) each of the four fmigen
    # processes below compiled sympy, numpy and scipy from source again.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{path_without_singular(tmp_path / 'bin')}"
    env["FMIGEN_CACHE"] = str(tmp_path / "cache")
    fmigen = str(venv / "bin" / "fmigen")

    # no engine yet: doctor says so, names both ways to get one, exit status 1
    before = subprocess.run([fmigen, "doctor", "--json"], capture_output=True, text=True, cwd=work, env=env)
    assert before.returncode == 1, before.stderr
    report = json.loads(before.stdout)
    assert report["ready"] is False and report["groebner_engine"] is None
    engine = report["pieces"][0]
    assert engine["found"] is False and engine["required"] is True
    assert "pip install --no-deps passagemath-singular==10.8.13" in engine["get"]
    assert "apt-get install singular" in engine["get"]

    after = run([fmigen, "doctor", "--install-singular", "--json"], cwd=work, env=env)
    report = json.loads(after.stdout)
    assert report["ready"] is True
    assert report["groebner_engine"]["source"] == "passagemath-singular wheel"
    assert report["groebner_engine"]["version"].startswith("4.4.1")
    assert report["groebner_engine"]["path"].startswith(str(venv))

    built = run([fmigen, "build", "fourbar", "-o", "fourbar.fmu", "--json"], cwd=work, env=env)
    info = json.loads(built.stdout)
    assert info["groebner_engine"]["source"] == "passagemath-singular wheel"
    # the build log names the engine it ran
    assert "Gröbner engine: Singular 4.4.1" in built.stderr and "passagemath-singular wheel" in built.stderr
    # it was a cold build: Singular computed the bases into the empty cache
    assert list((tmp_path / "cache").rglob("*.json"))

    validated = run([fmigen, "validate", "fourbar", "--fmu", "fourbar.fmu", "--json"], cwd=work, env=env)
    result = json.loads(validated.stdout)
    assert result["passed"] is True
    # the four-bar's numbers as the checkout's own build gives them (README):
    # the coordinates within 1e-6 of IDA, the loops closed to round-off
    assert max(result["max_abs_error"].values()) < 1e-6
    assert result["max_constraint_residual"] < 1e-12
