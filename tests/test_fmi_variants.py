"""Every FMU variant (FMI 2.0/3.0 x Co-Simulation/Model Exchange): standard
conformance, agreement with the FMI 2.0 CS reference variant, exact
ModelStructure, FMU state, source rebuild, Windows DLL exports."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy import extract, read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from fmigen.fmi import fmu as fmu_mod
from fmigen.derive.embed import embedded_rhs

VARIANTS = [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")]
COORDS = ["theta", "alpha", "phi", "der(theta)", "der(alpha)", "der(phi)"]


@pytest.fixture(scope="session")
def variant_fmus(fourbar_compiled, tmp_path_factory):
    """All four variants with RK4 at 1 ms, built as a user's build is (the
    environment without the suite's FMIGEN_WINDOWS=0 and FMIGEN_AVX=0,
    tests/conftest.py: with the win64 DLL when mingw-w64 is installed, and
    the model's AVX copy), plus an Euler CS build for the ME comparison
    (under the suite's settings: no DLL, no AVX copy).  With the object
    cache, as the CLI builds: model.c is compiled once per compiler."""
    d = tmp_path_factory.mktemp("variants")
    c = fourbar_compiled
    out = {}
    suite_settings = {name: os.environ.pop(name, None) for name in ("FMIGEN_WINDOWS", "FMIGEN_AVX")}
    try:
        for fmi, kind in VARIANTS:
            out[fmi, kind] = fmu_mod.package(c.embedding, c.generated, d / f"fourbar_{fmi}{kind}.fmu",
                                             solver="rk4", step=1e-3, fmi=fmi, kind=kind, use_cache=True)
    finally:
        for name, value in suite_settings.items():
            if value is not None:
                os.environ[name] = value
    for fmi in "23":
        out[fmi, "cs-euler"] = fmu_mod.package(c.embedding, c.generated, d / f"fourbar_{fmi}cs_euler.fmu",
                                               solver="euler", step=1e-3, fmi=fmi, kind="cs", use_cache=True)
    return out


@pytest.mark.parametrize("fmi,kind", VARIANTS)
def test_validate_fmu_is_empty_for_every_variant(variant_fmus, fmi, kind):
    assert validate_fmu(str(variant_fmus[fmi, kind])) == []


@pytest.mark.parametrize("fmi,kind", VARIANTS)
def test_interface_type_and_platform_layout(variant_fmus, fmi, kind):
    md = read_model_description(str(variant_fmus[fmi, kind]))
    assert md.fmiVersion == ("2.0" if fmi == "2" else "3.0")
    assert (md.coSimulation is not None) == (kind == "cs")
    assert (md.modelExchange is not None) == (kind == "me")
    import zipfile
    names = zipfile.ZipFile(variant_fmus[fmi, kind]).namelist()
    plat = "linux64" if fmi == "2" else "x86_64-linux"
    assert f"binaries/{plat}/fourbar.so" in names
    assert ("sources/buildDescription.xml" in names) == (fmi == "3")
    assert "sources/fmu_config.h" in names and "sources/fmu_config.c" in names


def test_fmi3_cs_declares_fixed_internal_step(variant_fmus):
    md = read_model_description(str(variant_fmus["3", "cs"]))
    assert float(md.coSimulation.fixedInternalStepSize) == 1e-3
    assert md.coSimulation.canHandleVariableCommunicationStepSize is True
    import zipfile
    xml = zipfile.ZipFile(variant_fmus["3", "cs"]).read("modelDescription.xml").decode()
    assert 'canGetAndSetFMUState="true"' in xml and 'canSerializeFMUState="true"' in xml


def _structure(md):
    """{unknown name: sorted dependency names} per ModelStructure section."""
    def table(unknowns):
        return {u.variable.name: sorted(d.name for d in u.dependencies) for u in unknowns}
    return table(md.outputs), table(md.derivatives), table(md.initialUnknowns)


def test_model_structure_cs_is_exact(variant_fmus):
    for fmi in "23":
        outs, ders, init = _structure(read_model_description(str(variant_fmus[fmi, "cs"])))
        # no output of the four-bar depends directly on the input torque
        assert set(outs) == set(COORDS) | {"constraint_residual"}
        assert all(d == [] for d in outs.values())
        assert ders == {}
        assert init == {"alpha": ["theta"], "phi": ["theta"],
                        "der(alpha)": ["der(theta)", "theta"], "der(phi)": ["der(theta)", "theta"],
                        "constraint_residual": ["theta"]}


def test_model_structure_me_is_exact(variant_fmus):
    for fmi in "23":
        md = read_model_description(str(variant_fmus[fmi, "me"]))
        outs, ders, init = _structure(md)
        assert outs["theta"] == ["theta"] and outs["der(theta)"] == ["der(theta)"]
        assert outs["alpha"] == ["theta"] and outs["der(phi)"] == ["der(theta)", "theta"]
        assert ders == {"der(theta)": ["der(theta)"], "der(theta,2)": ["der(theta)", "tau", "theta"]}
        assert init["der(theta,2)"] == ["der(theta)", "g", "m1", "m2", "m3", "tau", "theta"]
        states = [d.variable.derivative.name for d in md.derivatives]
        assert states == ["theta", "der(theta)"]


def _sim(path, output_interval=0.01, **kw):
    return simulate_fmu(str(path), stop_time=2.0, output_interval=output_interval,
                        output=COORDS + ["constraint_residual"], **kw)


def _maxdiff(a, b):
    return max(float(np.max(np.abs(a[n] - b[n]))) for n in COORDS)


def test_fmi3_cs_matches_fmi2_cs_exactly(variant_fmus):
    ref = _sim(variant_fmus["2", "cs"])
    r3 = _sim(variant_fmus["3", "cs"])
    assert len(ref) == len(r3) == 201
    assert np.array_equal(ref["time"], r3["time"])
    assert _maxdiff(ref, r3) == 0.0   # same core, same steps: identical bits


@pytest.mark.parametrize("fmi", "23")
def test_me_with_fixed_step_euler_matches_cs_euler(variant_fmus, fmi):
    """fmpy's Euler on the ME FMU and the CS FMU's internal Euler at the same
    1 ms step do the same arithmetic; only the step lengths differ by the
    rounding of fmpy's time grid.  (fmpy 0.3.32 steps its Euler solver by the
    output interval, so that is 1 ms here.)"""
    cs = _sim(variant_fmus["2", "cs-euler"], output_interval=1e-3)
    me = _sim(variant_fmus[fmi, "me"], output_interval=1e-3, solver="Euler", step_size=1e-3)
    assert len(cs) == len(me) == 2001
    assert _maxdiff(cs, me) <= 1e-12   # measured: 0.0
    assert me["constraint_residual"].max() <= 1e-12


@pytest.mark.parametrize("fmi", "23")
def test_me_with_cvode_matches_cs_rk4(variant_fmus, fmi):
    cs = _sim(variant_fmus["2", "cs"])
    me = _sim(variant_fmus[fmi, "me"], solver="CVode", relative_tolerance=1e-10)
    assert _maxdiff(cs, me) < 1e-5
    assert me["constraint_residual"].max() <= 1e-12


def test_me_derivatives_equal_the_python_embedded_rhs(variant_fmus, fourbar_compiled, tmp_path):
    """The ME derivatives at arbitrary states against fmigen.derive.embed.embedded_rhs
    (numpy, independent of the generated C)."""
    from fmpy.fmi2 import FMU2Model
    path = variant_fmus["2", "me"]
    md = read_model_description(str(path))
    unzip = extract(str(path), unzipdir=str(tmp_path / "me"))
    m = FMU2Model(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.modelExchange.modelIdentifier,
                  instanceName="me")
    m.instantiate()
    m.setupExperiment(startTime=0.0)
    m.enterInitializationMode()
    m.exitInitializationMode()
    m.newDiscreteStates()
    m.enterContinuousTimeMode()
    c = fourbar_compiled
    tri = c.triangular
    worst = 0.0
    for theta, dtheta in [(np.pi / 2, 0.0), (2.0, 1.5), (3.5, -2.0), (5.9, 7.0)]:
        x = np.array([theta, dtheta])
        from ctypes import POINTER, c_double
        m.setContinuousStates(x.ctypes.data_as(POINTER(c_double)), 2)
        dx = np.zeros(2)
        m.getDerivatives(dx.ctypes.data_as(POINTER(c_double)), 2)
        q = np.array(m.getReal([0, 1, 2]))
        _, _, qdd = embedded_rhs(c.embedding, 0.0, q, np.array([dtheta]), lambda qi, tt: q)
        assert dx[0] == dtheta
        worst = max(worst, abs(dx[1] - qdd[0]) / (1 + abs(qdd[0])))
    m.terminate()
    m.freeInstance()
    assert worst < 1e-12


# ---- FMU state: get/set/serialize/deserialize and reset, every variant ----

class _Driver:
    """Drive any variant through fmpy's ctypes classes with one interface."""

    def __init__(self, path, unzip):
        from fmpy.fmi2 import FMU2Model, FMU2Slave
        from fmpy.fmi3 import FMU3Model, FMU3Slave
        md = read_model_description(str(path))
        self.md, self.fmi, self.me = md, md.fmiVersion[0], md.modelExchange is not None
        self.vr = {v.name: v.valueReference for v in md.modelVariables}
        ident = (md.modelExchange or md.coSimulation).modelIdentifier
        cls = {("2", False): FMU2Slave, ("2", True): FMU2Model, ("3", False): FMU3Slave,
               ("3", True): FMU3Model}[self.fmi, self.me]
        self.f = cls(guid=md.guid, unzipDirectory=unzip, modelIdentifier=ident, instanceName="d")
        self.f.instantiate()
        self.t = 0.0

    def init(self):
        f = self.f
        if self.fmi == "2":
            f.setupExperiment(startTime=0.0)
            f.enterInitializationMode()
        else:
            f.enterInitializationMode(startTime=0.0)
        f.exitInitializationMode()
        if self.me:
            if self.fmi == "2":
                f.newDiscreteStates()
            else:
                f.updateDiscreteStates()
            f.enterContinuousTimeMode()
        self.t = 0.0

    def get(self, names):
        vrs = [self.vr[n] for n in names]
        return list(self.f.getReal(vrs) if self.fmi == "2" else self.f.getFloat64(vrs))

    def advance(self, n, h=0.01):
        """n communication steps (CS) or n RK4 steps of the ME derivatives."""
        from ctypes import POINTER, c_double
        for _ in range(n):
            if not self.me:
                self.f.doStep(self.t, h)
            else:
                x = np.zeros(2)
                dx = np.zeros(2)
                px, pdx = x.ctypes.data_as(POINTER(c_double)), dx.ctypes.data_as(POINTER(c_double))
                get_x = self.f.getContinuousStates
                get_dx = self.f.getDerivatives if self.fmi == "2" else self.f.getContinuousStateDerivatives
                get_x(px, 2)
                x0 = x.copy()
                ks = []
                for a, c in [(0, 0.0), (0.5, 0.5), (0.5, 0.5), (1.0, 1.0)]:
                    xs = x0 + a * h * (ks[-1] if ks else 0)
                    self.f.setTime(self.t + c * h)
                    self.f.setContinuousStates(xs.ctypes.data_as(POINTER(c_double)), 2)
                    get_dx(pdx, 2)
                    ks.append(dx.copy())
                xn = x0 + h / 6 * (ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3])
                self.f.setTime(self.t + h)
                self.f.setContinuousStates(xn.ctypes.data_as(POINTER(c_double)), 2)
                self.f.completedIntegratorStep()
            self.t += h

    def free(self):
        self.f.terminate()
        self.f.freeInstance()


@pytest.mark.parametrize("fmi,kind", VARIANTS)
def test_state_restore_and_serialization_reproduce_bit_for_bit(variant_fmus, fmi, kind, tmp_path):
    path = variant_fmus[fmi, kind]
    d = _Driver(path, extract(str(path), unzipdir=str(tmp_path / "u")))
    d.init()
    d.advance(10)
    t_saved = d.t
    state = d.f.getFMUState()
    ser = d.f.serializeFMUState(state)
    d.advance(20)
    first = d.get(COORDS + ["constraint_residual"])
    # restore from the in-memory state
    d.f.setFMUState(state)
    d.t = t_saved
    assert d.get(["theta"]) != first[:1]
    d.advance(20)
    assert d.get(COORDS + ["constraint_residual"]) == first
    # restore from the serialized bytes
    state2 = d.f.deserializeFMUState(ser)
    d.f.setFMUState(state2)
    d.t = t_saved
    d.advance(20)
    assert d.get(COORDS + ["constraint_residual"]) == first
    d.f.freeFMUState(state)
    d.f.freeFMUState(state2)
    # reset: back to the start values, then the same trajectory from t = 0
    d.f.reset()
    d.init()
    d.advance(30)
    again = d.get(COORDS + ["constraint_residual"])
    assert again == first
    d.free()


# ---- source FMUs: rebuild the binary from sources/ alone ----

@pytest.mark.skipif(shutil.which("cmake") is None and not (Path(fmpy.__file__).parents[3] / "bin" / "cmake").exists(),
                    reason="cmake is not installed (pip install cmake)")
@pytest.mark.parametrize("fmi", "23")
def test_binary_rebuilt_from_sources_gives_identical_results(variant_fmus, fmi, tmp_path, monkeypatch):
    import os
    import sys
    from fmpy.build import build_platform_binary
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    path = variant_fmus[fmi, "cs"]
    unzip = Path(extract(str(path), unzipdir=str(tmp_path / "src")))
    shutil.rmtree(unzip / "binaries")   # nothing left but sources/ and the XML
    (tmp_path / "build").mkdir()
    build_platform_binary(unzip, build_dir=tmp_path / "build")
    plat = fmpy.platform if fmi == "2" else fmpy.platform_tuple
    assert (unzip / "binaries" / plat / "fourbar.so").exists()
    ref = _sim(path)
    rebuilt = _sim(unzip)
    assert np.array_equal(ref["time"], rebuilt["time"])
    assert _maxdiff(ref, rebuilt) == 0.0


def test_source_build_keeps_the_build_options(fourbar_compiled, tmp_path):
    """The solver and step live in sources/fmu_config.c, a source file of
    the FMU (buildDescription.xml), so a rebuild from sources of an Euler FMU
    is still Euler."""
    c = fourbar_compiled
    p = fmu_mod.package(c.embedding, c.generated, tmp_path / "e.fmu", solver="euler", step=0.002, fmi="3",
                        use_cache=True)
    import zipfile
    cfg = zipfile.ZipFile(p).read("sources/fmu_config.c").decode()
    assert "const int fmigen_default_solver = 0;" in cfg and "const double fmigen_default_step = 0.002;" in cfg
    assert "fmu_config.c" in fmu_mod.source_files("3")
    bd = zipfile.ZipFile(p).read("sources/buildDescription.xml").decode()
    for f in fmu_mod.source_files("3"):
        assert f'<SourceFile name="{f}"/>' in bd


# ---- Windows: cross-compiled DLL exports every FMI function ----

OBJDUMP = "x86_64-w64-mingw32-objdump"


def _declared_functions(header):
    text = (Path(fmpy.__file__).parent / "c-code" / header).read_text()
    return set(re.findall(r"FMI[23]_Export\s+(fmi[23]\w+)TYPE", text))


@pytest.mark.skipif(not fmu_mod.mingw_available() or shutil.which(OBJDUMP) is None,
                    reason="mingw-w64 (gcc-mingw-w64-x86-64) is not installed; scripts/setup.sh installs it")
@pytest.mark.parametrize("fmi,kind", VARIANTS)
def test_windows_dll_exports_every_fmi_function(variant_fmus, fmi, kind, tmp_path):
    import zipfile
    plat = "win64" if fmi == "2" else "x86_64-windows"
    dll = tmp_path / "fourbar.dll"
    dll.write_bytes(zipfile.ZipFile(variant_fmus[fmi, kind]).read(f"binaries/{plat}/fourbar.dll"))
    dump = subprocess.run([OBJDUMP, "-p", str(dll)], capture_output=True, text=True, check=True).stdout
    exported = set(re.findall(r"\]\s+(fmi[23]\w+)", dump))
    declared = _declared_functions("fmi2Functions.h" if fmi == "2" else "fmi3Functions.h")
    assert len(declared) == (44 if fmi == "2" else 75)
    assert declared - exported == set()
    # no runtime DLL beyond what every Windows has
    dlls = set(re.findall(r"DLL Name: (\S+)", dump))
    assert dlls <= {"KERNEL32.dll", "msvcrt.dll"}


@pytest.mark.skipif(not fmu_mod.mingw_available(), reason="mingw-w64 is not installed")
@pytest.mark.parametrize("fmi", "23")
def test_fmigen_windows_0_builds_no_dll(variant_fmus, fmi, monkeypatch):
    """FMIGEN_WINDOWS=0 (the suite's setting) leaves the DLL out: the Euler
    builds have none, the default builds above have one."""
    import zipfile
    plat = "win64" if fmi == "2" else "x86_64-windows"
    assert f"binaries/{plat}/fourbar.dll" in zipfile.ZipFile(variant_fmus[fmi, "cs"]).namelist()
    assert not any(n.endswith(".dll") for n in zipfile.ZipFile(variant_fmus[fmi, "cs-euler"]).namelist())
    monkeypatch.setenv("FMIGEN_WINDOWS", "0")
    assert fmu_mod.windows_by_default() is False
    monkeypatch.delenv("FMIGEN_WINDOWS")
    assert fmu_mod.windows_by_default() is True


@pytest.mark.skipif(not fmu_mod.mingw_available(), reason="mingw-w64 is not installed")
def test_the_windows_dll_is_the_same_bytes_from_build_to_build(fourbar_compiled, tmp_path):
    """Deterministic builds hold for the DLL too: the PE linker used to stamp
    the link time into it and derive its preferred base from the output
    path, so two builds of one model differed (by 663 bytes for a one-line
    DLL).  Two builds into different directories, a second apart."""
    import time
    import zipfile
    c = fourbar_compiled
    dlls = []
    for k in range(2):
        d = tmp_path / f"build{k}"
        d.mkdir()
        fmu = fmu_mod.package(c.embedding, c.generated, d / "fourbar.fmu", solver="rk4", step=1e-3,
                              windows=True, use_cache=True)
        dlls.append(zipfile.ZipFile(fmu).read("binaries/win64/fourbar.dll"))
        time.sleep(1.1)
    assert dlls[0] == dlls[1]
