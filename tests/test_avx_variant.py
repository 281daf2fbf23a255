"""The model's AVX copy (runtime/fmigen_model_avx.c): a binary FMU for x86-64
Linux holds model.c and the numerical kernels twice, and runs the copy
compiled for AVX where the processor has it.  It may change the speed and
nothing else: the same IEEE operations in the same order (AVX, no FMA, no
contraction), so a run ends in the same bits as with the SSE2 copy.

Checked in the native harness (the benchmark's loop, the FMU's core_step
and the kinematic run) and in real FMUs run by fmpy, each against the same
model built without the AVX copy; and, under callgrind, that the AVX copy
is what runs, in the harness and in an FMU loaded with dlopen."""
import json
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest

from fmigen.fmi import fmu
from fmigen.tools.bench import compile_harness, run_kinematic
from fmigen.build.pipeline import build_fmu, load_mechanism
from conftest import compiled_model


def _has_avx():
    try:
        return "avx" in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


# without AVX both builds run the SSE2 copy: equal bits would prove nothing
pytestmark = [pytest.mark.skipif(not fmu.avx_target("gcc"), reason="gcc does not target x86-64 Linux here"),
              pytest.mark.skipif(not _has_avx(), reason="this processor has no AVX"),
              # the builds hold the AVX copy, as a user's do (not the suite's setting)
              pytest.mark.usefixtures("use_avx_copy")]
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


#: the harnesses compiled in this module, by (model, avx): the five-link's
#: AVX build runs in two tests
_harnesses = {}


def _harness_run(gen, workdir, avx, seconds="0.4"):
    key = (id(gen), avx)
    if key not in _harnesses:
        # gen is kept with its harness: its id stays its own while the key lives
        _harnesses[key] = (gen, compile_harness(gen, workdir, avx=avx))
    exe = _harnesses[key][1]
    r = subprocess.run([str(exe), seconds, "0.001", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return exe, json.loads(r.stdout)


@pytest.mark.parametrize("name", ["stewart", "five_link", "landing_gear_dynamic", "fourbar_chain", "stephenson3",
                                  "tests/data/quarter_car_trim_hard_point.py"])
def test_the_avx_copy_ends_in_the_same_bits_as_the_sse2_copy(name, tmp_path):
    """Stewart: the embedding's straight-line code; the five-link: its 5×5
    Newton block with the LU, and its kinematic run (q_i driven, q_d and v_d
    solved every step); the landing gear: polynomial roots and a
    Newton-first block; fourbar_chain: γ by forward differentiation; the
    Stephenson six-bar: sequence steps the AVX copy calls in the SSE2 copy;
    the trimmed quarter car: both runs start from the preload the runtime
    solved (an untrimmed one sags away from it).  The
    benchmark's loop (final_q, final_v) and one fmigen_core_step over the
    whole run (core_step_max_diff against that loop: 0 in both builds)."""
    mech = load_mechanism(name)
    gen = compiled_model(name).generated
    exe_avx, with_avx = _harness_run(gen, tmp_path / "avx", True)
    exe_plain, plain = _harness_run(gen, tmp_path / "plain", False)
    for key in ("final_q", "final_v", "peak_violation", "core_step_max_diff"):
        assert with_avx[key] == plain[key], key
    assert with_avx["core_step_max_diff"] == 0.0
    if mech.kinematic_drive:
        names = [c.name for c in mech.coordinates]
        drive = [float(mech.kinematic_drive_period)] + [float(mech.kinematic_drive.get(names[i], 0.0))
                                                         for i in gen.independent]
        a, b = (run_kinematic(exe, 0.3, 0.001, 1, drive) for exe in (exe_avx, exe_plain))
        for key in ("final_q", "final_v", "peak_violation"):
            assert a[key] == b[key], key


def _executed(callgrind_out: Path, identifier: str) -> set:
    """The model's functions (its identifier's prefix) that callgrind saw run."""
    text = callgrind_out.read_text()
    return set(re.findall(rf"\b{identifier}_(fmigen_\w+)", text))


@needs_valgrind
def test_the_avx_copy_is_what_runs_in_the_harness(tmp_path):
    """callgrind names the functions executed: the model's kinematics,
    embedding and LU with the _avx suffix, their SSE2 copies never.  The
    LU is a numerical kernel, which a binary build (and the harness, built
    as one) compiles without the model's prefix (fmigen_kernels.c)."""
    gen = compiled_model("five_link").generated
    exe, _ = _harness_run(gen, tmp_path, True, seconds="0.01")
    out = tmp_path / "cg.out"
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(exe), "0.01", "0.001", "1"],
                   capture_output=True, check=True)
    ran = _executed(out, "five_link")
    for fn in ("fmigen_kinematics", "fmigen_embedded_prepare", "fmigen_residual_trig"):
        assert f"{fn}_avx" in ran and fn not in ran, (fn, sorted(ran))
    lu = set(re.findall(r"\b(fmigen_lu_factor\w*)", out.read_text()))
    assert lu == {"fmigen_lu_factor_avx"}, lu


@needs_valgrind
def test_an_fmu_loaded_with_dlopen_runs_its_avx_copy(tmp_path):
    """Through the FMI layer (fmi2.c, the instance, the core) of a real
    binary: the crank-slider that switches its independent coordinate at
    the dead centre, so its second partition's functions run too; the
    model's exported functions run only as their _avx copies."""
    path, _ = build_fmu("slider_crank_from_slider", tmp_path / "s.fmu", windows=False)
    with zipfile.ZipFile(path) as z:
        so = next(n for n in z.namelist() if n.endswith(".so"))
        z.extract(so, tmp_path)
    guid = fmpy.read_model_description(str(path)).guid
    # fmigen/runtime/fmi2_driver.c: 300 steps of 1 ms, reading value references 0-2
    driver = tmp_path / "driver"
    subprocess.run(["gcc", "-O1", f"-I{fmu.RUNTIME_DIR / 'fmi2'}", str(fmu.RUNTIME_DIR / "fmi2_driver.c"), "-ldl",
                    "-o", str(driver)], check=True)
    out = tmp_path / "cg.out"
    r = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", str(driver),
                        str(tmp_path / so), guid, "300", "0", "1", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    ran = _executed(out, "slider_crank_from_slider")
    model = {fn for fn in ran if not fn.startswith(("fmigen_core", "fmigen_state", "fmigen_base"))}
    assert {"fmigen_kinematics_avx", "fmigen_embedded_prepare_avx", "fmigen_residual_trig_avx"} <= model, sorted(ran)
    assert not {fn for fn in model if not fn.endswith("_avx")} & {
        "fmigen_kinematics", "fmigen_embedded_prepare", "fmigen_embedded_finish", "fmigen_residual_trig",
        "fmigen_kinematic_angles", "fmigen_atan2"}, sorted(ran)


def _simulate(path, **kw):
    r = fmpy.simulate_fmu(str(path), **kw)
    return {name: r[name] for name in r.dtype.names}


@pytest.mark.parametrize("name, kw, settings", [
    # coordinate switching: partition 1's functions are the AVX copy's too
    ("slider_crank_from_slider", {}, dict(stop_time=0.5, output_interval=0.01, output=["theta", "x"])),
    # an augmented formulation (fmigen_augmented_accel)
    ("fourbar", dict(kinematics="baumgarte"), dict(stop_time=0.5, output_interval=0.01)),
    # outputs (fmigen_outputs_trig)
    ("quarter_car_joints", {}, dict(stop_time=0.3, output_interval=0.01)),
    ("five_link", dict(solver="euler"), dict(stop_time=0.3, output_interval=0.001)),
])
def test_an_fmu_with_the_avx_copy_gives_fmpy_the_same_bits(name, kw, settings, tmp_path, monkeypatch):
    # reuse: the second build packages the derivation the first recorded (as
    # fmigen build does), and it is the same model.c whichever copies link
    with_avx, _ = build_fmu(name, tmp_path / "avx.fmu", windows=False, reuse=True, **kw)
    monkeypatch.setattr(fmu, "avx_variant", lambda cc: False)
    plain, _ = build_fmu(name, tmp_path / "plain.fmu", windows=False, reuse=True, **kw)
    symbols = {}
    for label, path in (("avx", with_avx), ("plain", plain)):
        with zipfile.ZipFile(path) as z:
            so = next(n for n in z.namelist() if n.endswith(".so"))
            z.extract(so, tmp_path / label)
            assert "sources/fmigen_model_avx.c" not in z.namelist()
        symbols[label] = subprocess.run(["nm", str(tmp_path / label / so)], capture_output=True, text=True).stdout
    assert f"{name}_fmigen_kinematics_avx" in symbols["avx"]
    assert "_avx" not in symbols["plain"]
    a, b = _simulate(with_avx, **settings), _simulate(plain, **settings)
    assert a.keys() == b.keys() and len(a["time"]) > 10
    for key in a:
        assert np.array_equal(a[key], b[key]), key


@pytest.mark.parametrize("name", ["fourbar", "landing_gear_dynamic"])
def test_the_models_own_units_compile_alike_with_and_without_the_dispatch(name, tmp_path):
    """model.c and model_start.c are compiled without fmu.AVX_DISPATCH
    (fmu.copy_flags), so that a build with the AVX copy takes them from
    the object cache of one without: the define only declares the AVX
    copy's names and the runtime's FMIGEN_MODEL_FN, which the generated C
    never calls.  Compiled with it, as they were, both give the same object
    bytes (the landing gear: polynomial roots and a Newton-first block)."""
    from fmigen.fmi import variables
    c = compiled_model(name)
    src = tmp_path / "sources"
    fmu.write_sources(src, c.generated, variables.table(fmu.Interface.of(c.embedding), 1e-3))
    assert "FMIGEN_MODEL_FN" not in c.generated.model_c and "FMIGEN_PART" not in c.generated.model_c
    flags = [*fmu.CFLAGS, fmu.AVX_DISPATCH, fmu.SHARED_KERNELS, fmu.SHARED_GLUE, f"-I{src}"]
    assert fmu.AVX_DISPATCH not in fmu.copy_flags(flags)
    for source in fmu.MODEL_SOURCES:
        objects = [fmu._compile_object("gcc", fl, src / source, tmp_path / f"{k}_{source}.o")[0].read_bytes()
                   for k, fl in enumerate((flags, fmu.copy_flags(flags)))]
        assert objects[0] == objects[1], source


def test_a_rebuild_takes_both_copies_from_the_object_cache(tmp_path, monkeypatch):
    """The AVX wrapper is compiled from a temporary directory of its own:
    the object cache must key it by the files' names and contents, not
    their paths (ordered by path, a new temporary name reordered the key and
    the first warm build compiled model.c's AVX copy again)."""
    from fmigen.kinematics import groebner
    from fmigen.fmi import variables
    compiled = compiled_model("fourbar")
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    table = variables.table(fmu.Interface.of(compiled.embedding), 1e-3)
    counts = []
    # sources in directories whose paths sort before and after the wrapper's
    # (tempfile's "tmp..." in the same directory), as two builds' may
    for prefix in ("0fmigen", "zfmigen", "0fmigen"):
        root = Path(tempfile.mkdtemp(prefix=prefix))
        try:
            fmu.write_sources(root / "sources", compiled.generated, table)
            fmu.compile_shared(root / "sources", tmp_path / "m.so", use_cache=True)
        finally:
            shutil.rmtree(root)
        counts.append(len(list((tmp_path / "cache" / "objects").glob("*.o"))))
    # model.c, its AVX copy, model_start.c, four runtime sources, fmi2.c,
    # fmu_config.c and the numerical kernels' two copies, compiled once
    assert counts == [11, 11, 11]


def test_large_coefficient_steps_are_compiled_once(tmp_path):
    """A sequence step too large to inline (codegen_kinematics.NOINLINE_STATEMENTS) is
    compiled in the SSE2 copy only: the AVX copy calls it (it would give
    the same bits, and such steps are nearly all of a large model.c's
    compile time).  The Stephenson six-bar's sextic and linear steps: the
    SSE2 object defines them under the model's prefix (source FMUs of
    several models link together), the AVX object only refers to them.
    (test_the_avx_copy_ends_in_the_same_bits_as_the_sse2_copy runs it.)"""
    gen = compiled_model("stephenson3").generated
    (tmp_path / "model.c").write_text(gen.model_c)
    (tmp_path / "model_config.h").write_text(gen.config_h)
    flags = [*fmu.CFLAGS, "-fvisibility=hidden", "-DFMIGEN_AVX_DISPATCH=1", f"-I{tmp_path}", f"-I{fmu.RUNTIME_DIR}"]
    objs = {}
    for name, source, extra in (("sse2", tmp_path / "model.c", []),
                                ("avx", fmu.RUNTIME_DIR / fmu.AVX_SOURCE, fmu.AVX_FLAGS)):
        objs[name] = tmp_path / f"{name}.o"
        r = subprocess.run(["gcc", *flags, *extra, "-c", str(source), "-o", str(objs[name])],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

    def coeffs(obj, kind):
        out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
        return {line.split()[-1] for line in out.splitlines()
                if "fmigen_coeffs_" in line and line.split()[-2] == kind}
    defined = coeffs(objs["sse2"], "T")
    assert len(defined) == 8 and all(n.startswith("stephenson3_fmigen_coeffs_") for n in defined), defined
    assert coeffs(objs["avx"], "U") == defined
    assert not coeffs(objs["avx"], "T") and not coeffs(objs["avx"], "t")
