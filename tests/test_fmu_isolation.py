"""Two fmigen FMUs in one process, or in one binary, stay two models.

Binaries export only the FMI API (-fvisibility=hidden); every other
external symbol of the runtime and the generated model carries the model
identifier (runtime/fmigen_names.h), so source FMUs link together too."""
import json
import subprocess
import sys
import zipfile

import pytest

from fmigen.build.pipeline import build_fmu


@pytest.fixture(scope="module")
def slider_crank_fmu(fmu_dir):
    return build_fmu("slider_crank", fmu_dir / "slider_crank.fmu", solver="rk4", step=1e-3)[0]


def _binary(fmu, tmp_path):
    out = tmp_path / fmu.stem
    zipfile.ZipFile(fmu).extractall(out)
    return out, next((out / "binaries" / "linux64").glob("*.so"))


def test_a_binary_exports_only_the_fmi_api(fourbar_fmu, tmp_path):
    _, so = _binary(fourbar_fmu[0], tmp_path)
    out = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True, text=True, check=True).stdout
    exported = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert "fmi2DoStep" in exported and "fmi2Instantiate" in exported
    assert [s for s in exported if not s.startswith("fmi2")] == []


RUN = r"""
import ctypes, json, os, sys, zipfile
from fmpy import read_model_description, extract
from fmpy.fmi2 import FMU2Slave
preload, paths = sys.argv[1], sys.argv[2:]
if preload != "-":
    # what a master that loads libraries with RTLD_GLOBAL does
    ctypes.CDLL(preload, mode=os.RTLD_GLOBAL)
slaves = []
for p in paths:
    md = read_model_description(p)
    d = extract(p)
    s = FMU2Slave(guid=md.guid, unzipDirectory=d, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName=md.modelName)
    s.instantiate(); s.setupExperiment(startTime=0.0); s.enterInitializationMode(); s.exitInitializationMode()
    vr = {v.name: v.valueReference for v in md.modelVariables}
    slaves.append((s, vr))
out = [[] for _ in paths]
t = 0.0
for _ in range(50):              # interleaved calls
    for k, (s, vr) in enumerate(slaves):
        s.doStep(t, 0.01)        # fmpy raises on a status other than OK
        out[k].append(s.getReal([vr["theta"], vr["constraint_residual"]]))
    t += 0.01
print(json.dumps(out))
"""


def test_two_fmus_with_rtld_global_each_run_their_own_model(fourbar_fmu, slider_crank_fmu, tmp_path):
    fourbar = str(fourbar_fmu[0])
    _, slider_so = _binary(slider_crank_fmu, tmp_path)

    def run(preload, *paths):
        proc = subprocess.run([sys.executable, "-c", RUN, preload, *paths], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    alone_fourbar = run("-", fourbar)[0]
    alone_slider = run("-", str(slider_crank_fmu))[0]
    together = run(str(slider_so), fourbar, str(slider_crank_fmu))
    assert together[0] == alone_fourbar          # bit for bit
    assert together[1] == alone_slider
    assert alone_fourbar[-1][0] != alone_slider[-1][0]


def test_two_source_fmus_link_into_one_binary(fourbar_fmu, slider_crank_fmu, tmp_path):
    """The importer's build of two source FMUs into one library, each with
    its FMI2_FUNCTION_PREFIX: no duplicate symbols."""
    objects = []
    for fmu in (fourbar_fmu[0], slider_crank_fmu):
        root, _ = _binary(fmu, tmp_path)
        src = root / "sources"
        for c in sorted(src.glob("*.c")):
            if c.name == "fmi3.c":
                continue
            obj = tmp_path / f"{fmu.stem}_{c.stem}.o"
            subprocess.run(["gcc", "-c", "-O1", "-std=c99", "-fPIC", f"-I{src}",
                            f"-DFMI2_FUNCTION_PREFIX={fmu.stem}_", str(c), "-o", str(obj)], check=True)
            objects.append(str(obj))
    lib = tmp_path / "both.so"
    proc = subprocess.run(["gcc", "-shared", *objects, "-o", str(lib), "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True).stdout
    assert "fourbar_fmi2DoStep" in out and "slider_crank_fmi2DoStep" in out
