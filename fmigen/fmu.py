"""Stage 7 — fmu: modelDescription.xml (lxml), gcc, and the zip.

Layout of the FMU:

    modelDescription.xml
    binaries/linux64/<id>.so
    sources/  model.c model_config.h fmigen_runtime.h fmigen_core.c fmi2_cs.c
              + the FMI 2.0 headers (from fmpy's copy of the standard headers)
    documentation/index.html

Variable names follow DESIGN.md: coordinates by name, velocities as
``der(name)``, ``constraint_residual``, inputs and parameters by name.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import fmpy
from lxml import etree

from .codegen import GeneratedModel
from .dae import DAE
from .embed import Embedding

RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_SOURCES = ["fmigen_core.c", "fmi2_cs.c"]
RUNTIME_HEADERS = ["fmigen_runtime.h"]
FMI2_HEADERS = ["fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h"]
SOLVERS = {"euler": 0, "rk4": 1}
CFLAGS = ["-O2", "-std=c99", "-fPIC", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unused-variable"]


class BuildError(RuntimeError):
    pass


@dataclass
class Variable:
    name: str
    vr: int
    causality: str
    variability: str
    initial: str | None
    start: float | None
    unit: str = ""
    description: str = ""


def variables(emb: Embedding, gen_start: dict, step: float) -> list[Variable]:
    """All model variables with value references matching fmi2_cs.c."""
    dae = emb.dae
    mech = dae.mechanism
    n = dae.n
    out = []
    for i, c in enumerate(mech.coordinates):
        indep = i in emb.independent
        out.append(Variable(c.name, i, "output", "continuous", "exact" if indep else "calculated",
                            gen_start[c.name] if indep else None, c.unit,
                            c.description + (" (independent)" if indep else " (dependent)")))
    for i, c in enumerate(mech.coordinates):
        indep = i in emb.independent
        vunit = c.unit + "/s" if c.unit else ""
        out.append(Variable(f"der({c.name})", n + i, "output", "continuous",
                            "exact" if indep else "calculated",
                            c.velocity_start if indep else None, vunit, f"velocity of {c.name}"))
    out.append(Variable("constraint_residual", 2 * n, "output", "continuous", "calculated", None, "",
                        "max |Phi_j(q)| after the last internal step"))
    vr = 2 * n + 1
    for inp in mech.inputs:
        out.append(Variable(inp.name, vr, "input", "continuous", None, inp.start, inp.unit, inp.description))
        vr += 1
    for p in mech.parameters:
        if p.tunable:
            out.append(Variable(p.name, vr, "parameter", "fixed", "exact", float(p.value), p.unit,
                                p.description))
            vr += 1
    out.append(Variable("internal_step", vr, "parameter", "fixed", "exact", step, "s",
                        "fixed internal integration step; a communication step that is not a multiple "
                        "ends with one shorter step"))
    vr += 1
    for name in dae.outputs:
        out.append(Variable(name, vr, "output", "continuous", "calculated", None))
        vr += 1
    return out


def model_description(emb: Embedding, gen: GeneratedModel, identifier: str, vars_: list[Variable],
                      solver: str) -> bytes:
    mech = emb.dae.mechanism
    root = etree.Element("fmiModelDescription", fmiVersion="2.0", modelName=mech.name,
                         guid="{" + gen.guid + "}",
                         description=mech.description or mech.name,
                         generationTool=f"fmigen {__import__('fmigen').__version__}",
                         generationDateAndTime=datetime.datetime.now(datetime.timezone.utc)
                         .strftime("%Y-%m-%dT%H:%M:%SZ"),
                         variableNamingConvention="structured",
                         numberOfEventIndicators="0")
    cs = etree.SubElement(root, "CoSimulation", modelIdentifier=identifier,
                          canHandleVariableCommunicationStepSize="true",
                          canGetAndSetFMUstate="true", canSerializeFMUstate="true",
                          canNotUseMemoryManagementFunctions="true",
                          canBeInstantiatedOnlyOncePerProcess="false",
                          providesDirectionalDerivative="false")
    files = etree.SubElement(cs, "SourceFiles")
    for src in ["model.c", *RUNTIME_SOURCES]:
        etree.SubElement(files, "File", name=src)
    units = sorted({v.unit for v in vars_ if v.unit})
    if units:
        ud = etree.SubElement(root, "UnitDefinitions")
        for u in units:
            etree.SubElement(ud, "Unit", name=u)
    cats = etree.SubElement(root, "LogCategories")
    for name, desc in [("logStatusError", "errors: singular configurations, bad input, wrong calls"),
                       ("logStatusWarning", "warnings"), ("logEvents", "informational messages")]:
        etree.SubElement(cats, "Category", name=name, description=desc)
    etree.SubElement(root, "DefaultExperiment", startTime="0", stopTime="2",
                     stepSize=repr(float(vars_[[v.name for v in vars_].index("internal_step")].start)))
    mv = etree.SubElement(root, "ModelVariables")
    index = {}
    for k, v in enumerate(vars_, start=1):
        attrs = dict(name=v.name, valueReference=str(v.vr), causality=v.causality,
                     variability=v.variability)
        if v.description:
            attrs["description"] = v.description
        if v.initial:
            attrs["initial"] = v.initial
        sv = etree.SubElement(mv, "ScalarVariable", **attrs)
        real = etree.SubElement(sv, "Real")
        if v.unit:
            real.set("unit", v.unit)
        if v.start is not None:
            real.set("start", repr(float(v.start)))
        index[v.name] = k
    ms = etree.SubElement(root, "ModelStructure")
    outs = etree.SubElement(ms, "Outputs")
    for v in vars_:
        if v.causality == "output":
            etree.SubElement(outs, "Unknown", index=str(index[v.name]))
    init = etree.SubElement(ms, "InitialUnknowns")
    for v in vars_:
        if v.causality == "output" and v.initial in ("calculated", "approx"):
            etree.SubElement(init, "Unknown", index=str(index[v.name]))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")


def fmi2_header_dir() -> Path:
    return Path(fmpy.__file__).parent / "c-code"


def write_sources(dest: Path, gen: GeneratedModel):
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.c").write_text(gen.model_c)
    (dest / "model_config.h").write_text(gen.config_h)
    for f in RUNTIME_SOURCES + RUNTIME_HEADERS:
        shutil.copy(RUNTIME_DIR / f, dest / f)
    for f in FMI2_HEADERS:
        shutil.copy(fmi2_header_dir() / f, dest / f)


def compile_shared(src: Path, out: Path, solver: str, step: float, cc="gcc", extra=()):
    cmd = [cc, *CFLAGS, "-shared", f"-I{src}", f"-DFMIGEN_DEFAULT_SOLVER={SOLVERS[solver]}",
           f"-DFMIGEN_DEFAULT_STEP={step!r}", "-fvisibility=default",
           *[str(src / f) for f in ["model.c", *RUNTIME_SOURCES]], "-o", str(out), "-lm", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"C compilation failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return proc.stderr


def package(emb: Embedding, gen: GeneratedModel, out: Path, solver="rk4", step=1e-3) -> Path:
    if solver not in SOLVERS:
        raise BuildError(f"unknown solver '{solver}' (choose from {sorted(SOLVERS)})")
    if not (step > 0):
        raise BuildError(f"internal step must be > 0 (got {step})")
    identifier = emb.dae.mechanism.name
    dae: DAE = emb.dae
    start = {c.name: c.start for c in dae.mechanism.coordinates}
    vars_ = variables(emb, start, step)
    xml = model_description(emb, gen, identifier, vars_, solver)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_sources(root / "sources", gen)
        (root / "binaries" / "linux64").mkdir(parents=True)
        compile_shared(root / "sources", root / "binaries" / "linux64" / f"{identifier}.so", solver, step)
        (root / "modelDescription.xml").write_bytes(xml)
        doc = root / "documentation"
        doc.mkdir()
        (doc / "index.html").write_text(
            f"<html><body><h1>{identifier}</h1><p>{dae.mechanism.description}</p>"
            f"<p>Generated by fmigen: {solver} with internal step {step} s (parameter internal_step). "
            "Geometry is structural (baked into the Gröbner basis); masses, inertias, gravity and "
            "force amplitudes are tunable parameters.</p></body></html>")
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(root.rglob("*")):
                if f.is_file():
                    z.write(f, f.relative_to(root).as_posix())
    return out
