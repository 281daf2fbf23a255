"""Deterministic builds: the same module gives the same model.c on an idle
machine and a loaded one (issue 33, item 1).

The triangular stage computes one lex basis per block, of the given or the
default order (no order search), and Singular runs under a CPU-time safety
limit that fails the build, never a wall-clock one.

``fourbar_double_crank`` is the smallest mechanism that goes through the
workspace cover: its primary sequence amplifies round-off 3.4e3-fold and
degenerates at 8 swept configurations (the exact completion covers them)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fmigen.kinematics import groebner, triangular
from fmigen.kinematics.groebner import singular_available
from fmigen.model import ModelError

pytestmark = pytest.mark.skipif(not singular_available(), reason="Singular not installed")

ROOT = Path(__file__).resolve().parents[1]
MECH = "fourbar_double_crank"


def _model_c(mech_name):
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    compiled = compile_model(prepare_mechanism(mech_name), use_cache=False)
    return compiled.generated.model_c, compiled.triangular


def test_a_slow_clock_changes_nothing(monkeypatch):
    """The derivation with a clock that runs 1000 s per reading (what a
    search bounded by wall time sees on a very busy machine) gives the same
    model.c, byte for byte, and the same sequences as with the real clock.
    (When the triangular stage still searched lex orders, the search once
    stopped at its first clock reading past 60 s, and this model.c lost its
    alternative sequence.)"""
    plain, tri = _model_c(MECH)
    [solved_block] = tri.blocks
    assert solved_block.completion is not None                            # the cover took the exact completion
    clock = [time.perf_counter()]

    def slow():
        clock[0] += 1000.0
        return clock[0]
    monkeypatch.setattr(time, "perf_counter", slow)
    monkeypatch.setattr(time, "monotonic", slow)
    monkeypatch.setattr(time, "time", slow)
    loaded, tri_slow = _model_c(MECH)
    assert [s.label for s in tri_slow.blocks[0].sequences] == [s.label for s in solved_block.sequences]
    assert loaded == plain


_DERIVE = """
import sys
from pathlib import Path
from fmigen.build.pipeline import compile_model, prepare_mechanism
compiled = compile_model(prepare_mechanism(sys.argv[1]), use_cache=True)
Path(sys.argv[2]).write_text(compiled.generated.model_c)
"""


def _cold_derivation(tmp_path, tag):
    """model.c of a derivation in its own process with an empty cache
    (FMIGEN_CACHE: Gröbner bases, start assemblies, derived models)."""
    env = dict(os.environ, FMIGEN_CACHE=str(tmp_path / f"cache-{tag}"),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = tmp_path / f"model-{tag}.c"
    proc = subprocess.run([sys.executable, "-c", _DERIVE, MECH, str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_bytes()


def test_cold_build_on_a_loaded_machine_gives_the_same_model_c(tmp_path):
    """Two cold derivations, one with two CPU-bound processes beside it
    (on this 2-core machine: every core busy), give byte-identical model.c.
    A guard, not the regression test: on the old code it passed too (this
    small mechanism never reached the 60 s wall-time budget); the slowed
    clock above is what fails there."""
    idle = _cold_derivation(tmp_path, "idle")
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        busy = _cold_derivation(tmp_path, "busy")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert len(idle) > 10_000
    assert busy == idle


def test_singular_stops_at_its_cpu_limit():
    """A script that needs more CPU time than the limit is stopped by the
    kernel (RLIMIT_CPU) and reported as GroebnerLimit; a short one runs."""
    busy_loop = "int i; int s; for (i = 0; i < 2000000000; i++) { s = s + 1; }\nprint(s);\nquit;\n"
    started = time.process_time()
    with pytest.raises(groebner.GroebnerLimit, match="1 s of CPU time"):
        groebner.run_singular(busy_loop, cpu_limit=1)
    assert time.process_time() - started < 1.0                 # the child's time, not ours
    assert groebner.run_singular("print(6 * 7);\nquit;\n", cpu_limit=1).strip() == "42"


def test_a_basis_at_the_cpu_limit_is_an_error_naming_the_block(monkeypatch):
    """Reaching Singular's limit fails the build with a message naming the
    block and what to do, instead of quietly solving the block by Newton
    (which made the C depend on the machine's speed)."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import prepare_mechanism

    def at_limit(*args, **kwargs):
        raise groebner.GroebnerLimit("Singular used up its safety limit of 600 s of CPU time")
    monkeypatch.setattr(triangular, "groebner_lex", at_limit)
    dae = build_dae(prepare_mechanism("fourbar"))
    with pytest.raises(ModelError, match=r"block \{.*\}: the Gröbner basis did not finish .*newton_blocks"):
        triangular.triangularize(dae, choose_partition(dae), use_cache=False, cover=False)


def test_a_block_too_large_for_a_lex_basis_is_newton_without_trying(monkeypatch):
    """Above MAX_GROEBNER_VARIABLES polynomial variables the block is solved
    by Newton, decided from the input alone (no Singular run)."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import prepare_mechanism

    def never(*args, **kwargs):
        raise AssertionError("Singular was run")
    monkeypatch.setattr(triangular, "groebner_lex", never)
    monkeypatch.setattr(triangular, "MAX_GROEBNER_VARIABLES", 3)      # the four-bar's block has 4
    dae = build_dae(prepare_mechanism("fourbar"))
    [solved_block] = triangular.triangularize(dae, choose_partition(dae), use_cache=False, cover=False).blocks
    assert solved_block.method == "newton"
    assert solved_block.reason == "4 polynomial variables > 3, too many for a lex Gröbner basis"


def test_two_builds_give_the_same_fmu_bytes(tmp_path, monkeypatch):
    """The whole FMU, not only model.c: two builds of the four-bar, into
    different directories and seconds apart, are the same archive byte for
    byte (no clock in modelDescription.xml or in the zip entries' dates);
    with SOURCE_DATE_EPOCH set, modelDescription.xml carries that date and
    every entry of the archive is dated by it."""
    import time
    import zipfile
    from fmigen.build.pipeline import build_fmu
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    first, _ = build_fmu("fourbar", tmp_path / "a" / "fourbar.fmu", windows=False, use_cache=True)
    time.sleep(2.1)                     # a zip entry's date has a 2 s resolution
    second, _ = build_fmu("fourbar", tmp_path / "b" / "fourbar.fmu", windows=False, use_cache=True)
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as z:
        assert b"generationDateAndTime" not in z.read("modelDescription.xml")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")          # 2023-11-14T22:13:20Z
    dated, _ = build_fmu("fourbar", tmp_path / "c" / "fourbar.fmu", windows=False, use_cache=True)
    with zipfile.ZipFile(dated) as z:
        assert b'generationDateAndTime="2023-11-14T22:13:20Z"' in z.read("modelDescription.xml")
        assert {i.date_time for i in z.infolist()} == {(2023, 11, 14, 22, 13, 20)}
        binaries = [i for i in z.infolist() if i.filename.startswith("binaries/")]
        assert binaries and all(i.external_attr >> 16 == 0o755 for i in binaries)
