"""What an importer sees of an FMU beyond its trajectory: a user output's
unit and description in modelDescription.xml (FMI 2 and 3), and a GUID /
instantiationToken that tells apart FMUs that behave differently."""
import importlib
import math

import fmpy
import pytest
import sympy as sp
from fmpy.validation import validate_fmu

from fmigen.joints import JointSystem
from fmigen.model import ModelError
from fmigen.build.pipeline import build_fmus


def fourbar_with_outputs() -> JointSystem:
    """The four-bar of mechanisms/fourbar_joints.py with the crank tip's
    height as an output in metres, and one output declared without either."""
    s = importlib.import_module("mechanisms.fourbar_joints").build()
    theta = s.coordinate_by_name("theta").symbol
    s.output("tip_y", sp.sin(theta), unit="m", description="height of the crank tip above the pivot")
    s.output("tip_x", sp.cos(theta))
    return s


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    d = tmp_path_factory.mktemp("iface")
    targets = [(d / "p2.fmu", "2", "cs"), (d / "p3.fmu", "3", "me")]
    build_fmus(fourbar_with_outputs(), targets, windows=False)
    return {fmi: path for path, fmi, _ in targets}


@pytest.mark.parametrize("fmi", ["2", "3"])
def test_an_output_carries_its_unit_and_description(both, fmi):
    md = fmpy.read_model_description(str(both[fmi]))
    v = {v.name: v for v in md.modelVariables}
    assert v["tip_y"].causality == "output"
    assert v["tip_y"].unit == "m"
    assert v["tip_y"].description == "height of the crank tip above the pivot"
    # declared for tip_y alone: the four-bar's lengths are structural, no FMU variable
    assert "m" in {u.name for u in md.unitDefinitions}
    # an output declared without them has neither
    assert v["tip_x"].unit is None and not v["tip_x"].description
    assert validate_fmu(str(both[fmi])) == []


def test_the_output_is_the_expression_with_its_unit(both):
    """The value behind the declaration: the crank tip's height, sin θ."""
    res = fmpy.simulate_fmu(str(both["2"]), stop_time=0.01, output_interval=0.01, output=["tip_y", "theta"])
    assert res["tip_y"][0] == pytest.approx(1.0, abs=1e-15)
    assert res["tip_y"][-1] == pytest.approx(math.sin(res["theta"][-1]), abs=1e-15)


@pytest.mark.parametrize("unit, description", [(1, ""), ("m", None)])
def test_an_output_unit_or_description_that_is_not_text_is_named(unit, description):
    s = JointSystem("x")
    with pytest.raises(ModelError, match="output 'y'"):
        s.output("y", 1, unit=unit, description=description)


# --- the GUID covers what the FMU does ------------------------------------------

def _token(path):
    md = fmpy.read_model_description(str(path))
    return md.guid      # fmpy reads FMI 3's instantiationToken into .guid too


@pytest.fixture(scope="module")
def solver_builds(tmp_path_factory):
    """{(build, fmi): path}: the low-level four-bar as FMI 2 and 3
    Co-Simulation FMUs that differ only in the solver or the internal step,
    and one build repeated."""
    d = tmp_path_factory.mktemp("guid")
    builds = {"rk4": ("rk4", 1e-3), "rk4_again": ("rk4", 1e-3), "euler": ("euler", 1e-3), "rk4_2ms": ("rk4", 2e-3)}
    out = {}
    for name, (solver, step) in builds.items():
        targets = [(d / f"{name}_{fmi}.fmu", fmi, "cs") for fmi in ("2", "3")]
        build_fmus("fourbar", targets, solver=solver, step=step, windows=False)
        out.update({(name, fmi): path for path, fmi, _ in targets})
    return out


@pytest.mark.parametrize("fmi", ["2", "3"])
def test_fmus_that_differ_only_in_solver_or_step_have_different_guids(solver_builds, fmi):
    """Only the solver, or only the internal step, differs: different GUIDs
    (instantiationToken in FMI 3).  The same build twice: the same GUID."""
    tokens = {name: _token(path) for (name, v), path in solver_builds.items() if v == fmi}
    assert tokens["rk4"] == tokens["rk4_again"]
    assert tokens["euler"] != tokens["rk4"]
    assert tokens["rk4_2ms"] != tokens["rk4"]
    assert tokens["rk4_2ms"] != tokens["euler"]


def test_the_fmu_refuses_the_guid_of_its_sibling_built_with_another_solver(solver_builds, tmp_path):
    """The runtime checks the GUID it is instantiated with: the Euler FMU's
    binary refuses the RK4 FMU's GUID (an importer that mixed the two
    modelDescriptions up is told so), and accepts its own."""
    from fmpy.fmi2 import FMU2Slave
    euler, rk4 = solver_builds[("euler", "2")], solver_builds[("rk4", "2")]
    unzip = fmpy.extract(str(euler), unzipdir=str(tmp_path / "euler"))
    own = FMU2Slave(guid=_token(euler), unzipDirectory=unzip, modelIdentifier="fourbar", instanceName="own")
    own.instantiate()
    own.freeInstance()
    other = FMU2Slave(guid=_token(rk4), unzipDirectory=unzip, modelIdentifier="fourbar", instanceName="other")
    with pytest.raises(Exception, match="Failed to instantiate"):
        other.instantiate()


def test_a_solver_or_step_change_compiles_only_the_config_unit(tmp_path, monkeypatch, compiled_sources):
    """Each variant has its own GUID, but model.c, the runtime and the FMI
    glue are the same: their object files (model.c's SSE2 and AVX copies
    too) come from the object cache for the next variant, and only
    fmu_config.c (the solver, step and GUID) is compiled again.  With these
    values in fmu_config.h, which fmigen_instance.c and the glue include,
    those two were compiled again for every solver and step."""
    from fmigen.fmi import fmu
    from fmigen.kinematics import groebner
    from conftest import compiled_model
    compiled = compiled_model("fourbar")
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    per_variant = []
    for name, solver, step in [("rk4", "rk4", 1e-3), ("euler", "euler", 1e-3), ("euler2", "euler", 2e-3)]:
        compiled_sources.clear()
        fmu.package(compiled.embedding, compiled.generated, tmp_path / f"{name}.fmu", solver=solver, step=step,
                    windows=False, use_cache=True)
        per_variant.append(sorted(compiled_sources))
    assert len({_token(tmp_path / f"{n}.fmu") for n in ("rk4", "euler", "euler2")}) == 3
    assert "model.c" in per_variant[0] and "fmigen_instance.c" in per_variant[0]
    assert per_variant[1:] == [["fmu_config.c"], ["fmu_config.c"]]


@pytest.mark.parametrize("hard_point", [False, True])
def test_the_start_and_config_units_include_no_system_header(tmp_path, hard_point):
    """model_start.c and fmu_config.c, the units a start, solver or step
    change compiles again for each binary, include model_config.h and
    fmigen_values.h (with its fmigen_names.h) only: through
    fmigen_runtime.h and fmigen_instance.h they read math.h, string.h and
    the SSE2 intrinsics, which were nearly all of the compiler's work on
    them.  Their definitions agree with the declarations the runtime reads
    (one header, strict C99), with hard points (the parameters' defaults in
    model_start.c) too, and the FMU runs from them."""
    import subprocess
    import zipfile
    from fmigen.build.pipeline import build_fmu
    mech = importlib.import_module("mechanisms.fourbar").build(l3_range=(2.0, 3.0) if hard_point else None)
    path, _ = build_fmu(mech, tmp_path / "fb.fmu", windows=False, use_cache=False)
    src = tmp_path / "src"
    zipfile.ZipFile(path).extractall(src)
    (src / "empty.c").write_text("")

    def dependencies(unit):   # every file gcc reads for ``unit`` (-M), system headers too
        deps = subprocess.run(["gcc", "-M", "-I.", unit], cwd=src / "sources", capture_output=True, text=True,
                              check=True).stdout
        return set(deps.replace("\\\n", " ").split()[1:])
    implicit = dependencies("../empty.c") - {"../empty.c"}   # what gcc reads for any unit (stdc-predef.h)
    for unit in ("model_start.c", "fmu_config.c"):
        assert dependencies(unit) - implicit == {unit, "model_config.h", "fmigen_values.h", "fmigen_names.h"}
    text = (src / "sources" / "model_start.c").read_text()
    assert ("fmigen_p_default" in text) == hard_point
    strict = ["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I.", "-fsyntax-only"]
    # each unit with the runtime's declarations in view: a definition that
    # disagreed with its extern declaration would not compile
    for unit in ("model_start.c", "fmu_config.c"):
        subprocess.run([*strict, "-include", "fmigen_runtime.h", "-include", "fmigen_instance.h", unit],
                       cwd=src / "sources", check=True)
    result = fmpy.simulate_fmu(str(path), stop_time=0.01, output=["theta"])
    assert result["theta"][0] == mech.coordinates[0].start


def test_a_second_model_takes_the_numerical_kernels_from_the_object_cache(tmp_path, monkeypatch,
                                                                           compiled_sources, use_avx_copy):
    """The numerical kernels (LU, atan2, sin/cos, polynomial roots:
    runtime/fmigen_numeric.h) are the same code for every model.  A binary
    build compiles them in a unit that reads no model's header
    (fmigen_kernels.c), once more for the model's AVX copy, so the next
    model's build takes both from the object cache and compiles only its own
    units.  They were compiled into every model's fmigen_core.c and AVX copy
    of model.c.  The second FMU, whose kernels come from the first build,
    loads and runs."""
    from fmigen.fmi import fmu
    from fmigen.kinematics import groebner
    from conftest import compiled_model
    models = {name: compiled_model(name) for name in ("fourbar", "fourbar_toggle")}
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    compiled = []
    for name, c in models.items():
        compiled_sources.clear()
        fmu.package(c.embedding, c.generated, tmp_path / f"{name}.fmu", windows=False, use_cache=True)
        compiled.append(sorted(compiled_sources))
    copies = 2 if fmu.avx_variant("gcc") else 1
    assert [units.count(fmu.KERNELS_SOURCE) for units in compiled] == [copies, 0]
    assert {"model.c", "fmigen_core.c", "fmigen_instance_model.c"} <= set(compiled[1])
    result = fmpy.simulate_fmu(str(tmp_path / "fourbar_toggle.fmu"), stop_time=0.05, output_interval=0.01)
    assert len(result) == 6 and all(math.isfinite(v) for row in result for v in row)


def test_the_fmi_glue_is_compiled_once_for_every_model_and_interface_type(tmp_path, monkeypatch,
                                                                          compiled_sources):
    """The FMI glue (fmigen_instance.c and fmi2.c or fmi3.c) reads no
    model's header: what it needs of the model it reads from fg_model, which
    fmigen_instance_model.c makes with the model.  A binary build compiles
    the glue once per compiler, flags and FMI version, and every later
    model and interface type takes it from the object cache; they were
    compiled for each (about 0.75 s of gcc per variant and compiler).  An
    FMU linked from the cached glue gives the same bits as one compiled
    without the cache."""
    from fmigen.fmi import fmu
    from fmigen.kinematics import groebner
    from conftest import compiled_model
    models = {name: compiled_model(name) for name in ("fourbar", "fourbar_toggle")}
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    glue = {"fmigen_instance.c", "fmi2.c", "fmi3.c"}
    compiled = []
    for name, fmi, kind in [("fourbar", "2", "cs"), ("fourbar", "2", "me"), ("fourbar_toggle", "2", "cs"),
                            ("fourbar_toggle", "3", "me")]:
        c = models[name]
        compiled_sources.clear()
        fmu.package(c.embedding, c.generated, tmp_path / f"{name}_{fmi}{kind}.fmu", fmi=fmi, kind=kind,
                    windows=False, use_cache=True)
        compiled.append(sorted(glue & set(compiled_sources)))
        # the model's side of the glue, with each interface type
        assert "fmigen_instance_model.c" in compiled_sources
    assert compiled == [["fmi2.c", "fmigen_instance.c"], [], [], ["fmi3.c"]]
    fresh = tmp_path / "fresh.fmu"
    fmu.package(models["fourbar_toggle"].embedding, models["fourbar_toggle"].generated, fresh, windows=False,
                use_cache=False)
    results = [fmpy.simulate_fmu(str(f), stop_time=0.5, output_interval=0.01, output=["theta", "alpha", "phi"])
               for f in (tmp_path / "fourbar_toggle_2cs.fmu", fresh)]
    assert results[0].tobytes() == results[1].tobytes()
