"""The variable table (fmigen/fmi/variables.py) is the only source of the FMU's
variables and value references: the C runtime's group offsets
(sources/fmu_variables.h, and what the compiled instance reads at each value
reference), the FMI 2.0 and 3.0 modelDescriptions and the Python runtime all
agree with it, for every FMI version and interface type, with and without an
augmented formulation."""
import ast
import re
import zipfile

import fmpy
import pytest
import sympy as sp
from fmpy import read_model_description
from lxml import etree

from fmigen.fmi import fmu, variables
from fmigen.pyfmu import pyruntime
from fmigen.build.pipeline import build_fmus, load_mechanism

VARIANTS = [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")]
STEP = 2e-3
START_TIME = 0.5


def _mechanism():
    """The four-bar (an input, tunable parameters) with a user output, so that
    every group of the layout has members."""
    m = load_mechanism("fourbar")
    m.output("crank_cos", sp.cos(m.coordinate_by_name("theta").symbol))
    m.name = "fourbar_vartable"
    return m


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """{(formulation, fmi, kind): (FMU path, its variable table)} and the compiled embedded model."""
    d = tmp_path_factory.mktemp("vartable")
    out = {}
    for form_name, variants in [("groebner", VARIANTS), ("baumgarte", [("2", "me"), ("3", "cs")])]:
        targets = [(d / f"{form_name}_{fmi}{kind}.fmu", fmi, kind) for fmi, kind in variants]
        paths, compiled = build_fmus(_mechanism(), targets, step=STEP, windows=False, kinematics=form_name)
        for path, (fmi, kind) in zip(paths, variants):
            form = compiled.generated.formulation
            iface = fmu.Interface.of(compiled.embedding, form)
            out[form_name, fmi, kind] = path, variables.table(iface, STEP, kind, form)
        if form_name == "groebner":
            embedded = compiled
    return out, embedded


def _declared(path):
    """What the FMU's modelDescription.xml says of each variable, as the table's fields."""
    with zipfile.ZipFile(path) as z:
        root = etree.fromstring(z.read("modelDescription.xml"))
    if root.get("fmiVersion") == "2.0":
        elements = [(sv.attrib, sv.find("Real").attrib) for sv in root.find("ModelVariables")]
        names = {str(k): a["name"] for k, (a, _) in enumerate(elements, start=1)}   # derivative: an index
    else:
        elements = [(e.attrib, e.attrib) for e in root.find("ModelVariables")]
        names = {a["valueReference"]: a["name"] for a, _ in elements}
    return [(a["name"], int(a["valueReference"]), a["causality"], a["variability"], a.get("initial"),
             float(t["start"]) if "start" in t else None, t.get("unit", ""), a.get("description", ""),
             names.get(t.get("derivative"))) for a, t in elements]


def _rows(vars_):
    return [(v.name, v.vr, v.causality, v.variability, v.initial, v.start, v.unit, v.description, v.derivative)
            for v in vars_]


def _start_values(path, md, vars_):
    """{value reference: value} the compiled (or Python) instance reports
    in Initialization Mode for every variable with a start value, and time."""
    unzip = fmpy.extract(str(path))
    kind = "CoSimulation" if md.coSimulation else "ModelExchange"
    inst = fmpy.instantiate_fmu(unzip, md, fmi_type=kind)
    wanted = [v.vr for v in vars_ if v.start is not None or v.causality == "independent"]
    try:
        if md.fmiVersion == "2.0":
            inst.setupExperiment(startTime=START_TIME)
            inst.enterInitializationMode()
            values = inst.getReal(wanted)
        else:
            inst.enterInitializationMode(startTime=START_TIME)
            values = inst.getFloat64(wanted)
    finally:
        inst.freeInstance()
    return dict(zip(wanted, values))


def test_every_group_has_members_and_the_layout_is_consecutive(built):
    fmus, _ = built
    _, table = fmus["baumgarte", "3", "cs"]
    offsets = list(table.offsets.values())
    assert list(table.offsets) == ["VR_Q", "VR_V", "VR_RES", "VR_U", "VR_P", "VR_H", "VR_Y", "VR_A", "VR_TIME",
                                   "VR_F", "VR_END"]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)   # no empty group
    assert [v.vr for v in table.rows] == list(range(table.offsets["VR_END"]))


@pytest.mark.parametrize("form_name,fmi,kind", [("groebner", f, k) for f, k in VARIANTS]
                         + [("baumgarte", "2", "me"), ("baumgarte", "3", "cs")])
def test_c_fmu_agrees_with_the_table(built, form_name, fmi, kind):
    path, table = built[0][form_name, fmi, kind]
    md = read_model_description(str(path))
    declared = table.declared(fmi)
    # modelDescription: exactly the declared rows (FMI 3: the independent variable first)
    expected = _rows(declared)
    if fmi == "3":
        expected.sort(key=lambda r: r[2] != "independent")
    assert _declared(path) == expected
    # the C runtime's group offsets are the table's
    with zipfile.ZipFile(path) as z:
        header = z.read("sources/fmu_variables.h").decode()
    assert header == table.c_header()
    assert {k: int(v) for k, v in re.findall(r"^#define (VR_\w+) (\d+)$", header, re.M)} == table.offsets
    # and the compiled instance reads each variable at the table's value reference
    got = _start_values(path, md, declared)
    for v in declared:
        if v.vr in got:
            assert got[v.vr] == (START_TIME if v.causality == "independent" else v.start), v.name


def test_undeclared_slots_keep_their_value_references(built):
    """One model.c serves every variant: a slot's value reference does not
    depend on the FMI version or interface type that declares it."""
    fmus, _ = built
    tables = [table for (form, _, _), (_, table) in fmus.items() if form == "groebner"]
    assert all([v.name for v in t.rows] == [v.name for v in tables[0].rows] for t in tables)
    assert all(t.offsets == tables[0].offsets for t in tables)
    cs, me = fmus["groebner", "2", "cs"][1], fmus["groebner", "2", "me"][1]
    assert "internal_step" in {v.name for v in cs.declared("2")} - {v.name for v in me.declared("2")}
    assert "der(theta,2)" in {v.name for v in me.declared("2")} - {v.name for v in cs.declared("2")}
    assert "time" in {v.name for v in cs.declared("3")} - {v.name for v in cs.declared("2")}


def test_python_runtime_agrees_with_the_table(built, tmp_path):
    fmus, compiled = built
    _, table = fmus["groebner", "2", "cs"]
    src, _, _ = pyruntime.generate(compiled, step=STEP)
    line = next(ln for ln in src.splitlines() if ln.startswith("MODEL = SimpleNamespace(**"))
    model = ast.literal_eval(line[len("MODEL = SimpleNamespace(**"):-1])
    offsets = {k: v for k, v in model.items() if k.startswith("VR_")}
    assert offsets and offsets == {k: table.offsets[k] for k in offsets}
    path = pyruntime.package(compiled, tmp_path / "fourbar_vartable_py.fmu", step=STEP)
    md = read_model_description(str(path))
    declared = table.declared("2")
    assert _declared(path) == _rows(declared)
    got = _start_values(path, md, declared)
    assert got and all(got[v.vr] == v.start for v in declared if v.vr in got)
