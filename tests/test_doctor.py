"""Finding the Gröbner engine (fmigen/kinematics/engine.py) and `fmigen
doctor`: an explicit setting first, then PATH, then the passagemath wheel;
the engine's version in the cache key; one message that names both ways to
get an engine.  The real Singular runs here (the one setup installed), and a
missing one is made by a PATH without it, not by a mock.  The whole pip route
is tests/test_pip_install.py."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fmigen.kinematics import engine, groebner

SINGULAR = shutil.which("Singular")
pytestmark = pytest.mark.skipif(SINGULAR is None, reason="Singular not installed")


def banner_version():
    """Singular's version as its banner states it, read here independently."""
    out = subprocess.run([SINGULAR, "-v"], stdin=subprocess.DEVNULL, capture_output=True, text=True).stdout
    words = out.split()
    number = words[words.index("version") + 1]
    build = words[words.index("version") + 2].strip("(,")
    return f"{number} ({build})"


def cli(*argv, env=None):
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *argv], capture_output=True, text=True,
                          env=env, cwd=Path(__file__).resolve().parent.parent)


def empty_path(tmp_path) -> str:
    """A PATH with python and gcc but no Singular."""
    d = tmp_path / "bin"
    d.mkdir()
    for prog in ("gcc", "cc", "as", "ld"):
        if shutil.which(prog):
            (d / prog).symlink_to(shutil.which(prog))
    return str(d)


def test_singular_on_path_is_found_with_its_version(monkeypatch):
    monkeypatch.delenv(engine.ENV_VAR, raising=False)
    found = engine.find()
    assert found.source == "PATH" and found.path == SINGULAR
    assert found.version == banner_version()
    assert groebner.engine_key() == f"Singular {banner_version()}"


def test_explicit_setting_comes_first(tmp_path, monkeypatch):
    link = tmp_path / "MySingular"
    link.symlink_to(SINGULAR)
    monkeypatch.setenv(engine.ENV_VAR, str(link))
    found = engine.find()
    assert (found.source, found.path, found.version) == (engine.ENV_VAR, str(link), banner_version())
    # and it is what runs
    assert groebner.run_singular("print(6 * 7);\nquit;\n").strip() == "42"


def test_explicit_setting_that_is_no_executable_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(engine.ENV_VAR, str(tmp_path / "nothing"))
    with pytest.raises(groebner.GroebnerError, match=r"^FMIGEN_SINGULAR=.*/nothing is not an executable file$"):
        groebner.run_singular("quit;\n")


def test_no_engine_gets_one_message_with_both_ways_to_get_one(tmp_path, monkeypatch):
    monkeypatch.delenv(engine.ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", empty_path(tmp_path))
    # the wheel is not installed in the test environment: nothing to find
    assert engine.wheel_executable() is None
    assert engine.find() is None
    with pytest.raises(groebner.GroebnerError) as info:
        groebner.run_singular("quit;\n")
    message = str(info.value)
    assert "\n" not in message
    assert "pip install --no-deps passagemath-singular==10.8.13" in message
    assert "apt-get install singular" in message


def test_the_engine_version_keys_the_groebner_cache(tmp_path, monkeypatch):
    """The same ideal under another engine version is another cache entry:
    a fake 'Singular' that reports version 9.9.9 and runs the real one."""
    monkeypatch.setenv("FMIGEN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    import sympy as sp
    x, y = sp.symbols("x y")
    polys = [x**2 + y**2 - 1, x - y]
    groebner.groebner_lex(polys, [x, y])
    first = sorted(p.name for p in (tmp_path / "cache").iterdir())
    fake = tmp_path / "Singular999"
    fake.write_text(f'#!/bin/sh\nif [ "$1" = -v ]; then echo "Singular for x86_64-Linux version 9.9.9 '
                    f'(99999, 64 bit)"; exit 0; fi\nexec {SINGULAR} "$@"\n')
    fake.chmod(0o755)
    monkeypatch.setenv(engine.ENV_VAR, str(fake))
    assert groebner.engine_key() == "Singular 9.9.9 (99999)"
    again = groebner.groebner_lex(polys, [x, y])
    second = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(second) == len(first) + 1
    # a reduced lex basis is unique: the same basis, from the other entry
    assert [p.as_expr() for p in again] == [p.as_expr() for p in groebner.groebner_lex(polys, [x, y])]


def test_doctor_json_reports_the_engine_and_the_pieces():
    proc = cli("doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ready"] is True
    assert report["groebner_engine"] == {"name": "Singular", "version": banner_version(), "source": "PATH",
                                         "path": SINGULAR}
    pieces = {p["name"]: p for p in report["pieces"]}
    gcc = pieces["C compiler (gcc)"]
    assert gcc["found"] and gcc["where"] == shutil.which("gcc") and gcc["required"]
    import fmpy
    assert pieces["fmpy"]["version"] == fmpy.__version__
    for p in report["pieces"]:
        assert set(p) == {"name", "required", "found", "version", "where", "cost", "get"}
        assert p["cost"] and p["get"]


def test_doctor_without_engine_exits_1_and_says_what_it_costs(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != engine.ENV_VAR}
    env["PATH"] = empty_path(tmp_path)
    proc = cli("doctor", env=env)
    assert proc.returncode == 1
    line = next(ln for ln in proc.stdout.splitlines() if "Gröbner engine" in ln)
    assert line.strip().startswith("MISSING")
    assert "falls back to sympy" in line and "passagemath-singular==10.8.13" in line
    assert proc.stdout.rstrip().endswith("not ready: a required piece is missing (above)")


def test_build_log_and_json_name_the_engine(tmp_path):
    env = dict(os.environ, FMIGEN_CACHE=str(tmp_path / "cache"), FMIGEN_WINDOWS="0")
    proc = cli("build", "fourbar", "-o", str(tmp_path / "f.fmu"), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"Gröbner engine: Singular {banner_version()} (PATH: {SINGULAR})" in proc.stderr
    assert json.loads(proc.stdout)["groebner_engine"]["version"] == banner_version()
