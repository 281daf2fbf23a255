"""Stage 7 — fmu: modelDescription.xml (lxml), gcc, and the zip.

Layout of the FMU:

    modelDescription.xml
    binaries/linux64/<id>.so        (FMI 3: binaries/x86_64-linux/)
    binaries/win64/<id>.dll         (FMI 3: binaries/x86_64-windows/; only when
                                     x86_64-w64-mingw32-gcc is installed and
                                     FMIGEN_WINDOWS is not 0)
    sources/  model.c model_start.c model_config.h fmu_config.h fmu_variables.h
              fmigen_runtime.h fmigen_kernels.h fmigen_names.h fmigen_instance.h
              fmigen_numeric.h fmigen_core_head.h fmigen_values.h
              fmigen_core.c fmigen_augmented.c fmigen_instance.c
              fmigen_instance_model.c fmi2.c | fmi3.c fmu_config.c
              + the FMI headers (FMI 2.0.5: the standard's own, in runtime/fmi2;
                FMI 3.0: fmpy's copy)
              + buildDescription.xml (FMI 3)
    documentation/index.html

``--fmi 2|3`` picks the standard, ``--kind cs|me`` the interface type; the
modelDescription declares exactly that one.  Model Exchange states are the
independent coordinates and their velocities; with an augmented formulation
(``--kinematics baumgarte|penalty|spring``, fmigen/generate/formulation.py) every
coordinate and velocity, and the formulation's parameters are declared as
fixed parameters (after ``time`` in the value references).

The variables, their value references and the C runtime's group offsets
(sources/fmu_variables.h) all come from one table, fmigen/fmi/variables.py.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import time
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from fmigen.generate.codegen import GeneratedModel, define_lines
from fmigen.derive.embed import Embedding
from fmigen.fmi import description, structure, variables
from fmigen.fmi.description import description_root, structure_lists, units_categories_experiment
from fmigen.fmi.fmi3 import model_description_3
from fmigen.fmi.variables import VariableTable

RUNTIME_DIR = Path(__file__).parent.parent / "runtime"
RUNTIME_SOURCES = ["fmigen_core.c", "fmigen_augmented.c", "fmigen_instance.c", "fmigen_instance_model.c"]
RUNTIME_HEADERS = ["fmigen_runtime.h", "fmigen_kernels.h", "fmigen_names.h", "fmigen_instance.h",
                   "fmigen_numeric.h", "fmigen_core_head.h", "fmigen_values.h"]
#: model.c again for processors with AVX (compile_shared); not in source FMUs
AVX_SOURCE = "fmigen_model_avx.c"
#: the numerical kernels in a unit that reads nothing of the model
#: (compile_shared, with SHARED_KERNELS for every unit): its object is the
#: same for every model, so the object cache compiles it once per compiler and
#: flags; not in source FMUs, whose fmigen_core.c includes the kernels
KERNELS_SOURCE = "fmigen_kernels.c"
#: the define under which the runtime calls the model copy the processor runs
#: (runtime/fmigen_runtime.h: FMIGEN_MODEL_FN)
AVX_DISPATCH = "-DFMIGEN_AVX_DISPATCH=1"
SHARED_KERNELS = "-DFMIGEN_SHARED_KERNELS=1"
#: the kernels' AVX copy (for the model's: its names end in _avx)
AVX_KERNEL_FLAGS = ["-DFMIGEN_MODEL_VARIANT=1"]

#: its flags beside CFLAGS, last (after any caller's flags).  AVX, not FMA,
#: and no contraction whatever the compiler's default: the same bits as the
#: SSE2 copy (fmigen_runtime.h, FMIGEN_MODEL_FN).  Without gcc's vectorizer, whose
#: packing of scalar code cost more than it saved, and with unrolled loops
#: (the Newton blocks' and the LU's); docs/benchmarks.md, "Measurements
#: behind the code's choices".
AVX_FLAGS = ["-mavx", "-mno-fma", "-ffp-contract=off", "-fno-tree-vectorize", "-funroll-loops"]
GLUE = {"2": "fmi2.c", "3": "fmi3.c"}
#: the FMI glue's units read no model's header (fmigen_instance.h says how):
#: compile_shared compiles them from the runtime's own directory with
#: SHARED_GLUE for every unit, so that their objects are the same for every
#: model and variant, and the object cache compiles them once per compiler,
#: flags and FMI version; their model is fmigen_instance_model.c's fg_model
GLUE_MODEL_SOURCE = "fmigen_instance_model.c"
SHARED_GLUE = "-DFMIGEN_SHARED_GLUE=1"
#: the start values' translation unit (``GeneratedModel.start_c``, codegen.finish)
START_SOURCE = "model_start.c"
#: the model's own translation units: its SSE2 copy and its start values
MODEL_SOURCES = ("model.c", START_SOURCE)
#: the translation unit of this build's values (``fmu_config_source``)
CONFIG_SOURCE = "fmu_config.c"
FMI_HEADERS = {"2": ["fmi2Functions.h", "fmi2FunctionTypes.h", "fmi2TypesPlatform.h"],
               "3": ["fmi3Functions.h", "fmi3FunctionTypes.h", "fmi3PlatformTypes.h"]}
FMI2_HEADERS = FMI_HEADERS["2"]
PLATFORMS = {"2": {"linux": "linux64", "windows": "win64"},
             "3": {"linux": "x86_64-linux", "windows": "x86_64-windows"}}
MINGW_CC = "x86_64-w64-mingw32-gcc"
KINDS = ("cs", "me")
SOLVERS = {"euler": 0, "rk4": 1, "symplectic": 2}   # runtime/fmigen_runtime.h
#: -fno-math-errno: nothing reads errno, and sqrt's errno branch (a compare,
#: a jump to libm's sqrt and the spills around that cold call) costs every
#: normalization of a sin/cos pair for the same bits (vsqrtsd either way).
OPT_FLAGS = ["-O2", "-fno-math-errno"]
CFLAGS = [*OPT_FLAGS, "-std=c99", "-fPIC", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-unused-variable"]


class BuildError(RuntimeError):
    pass


@dataclass
class Interface:
    """What packaging needs of a derived model: the mechanism (names, units,
    starts, parameters, inputs), the independent coordinates, the output
    names and the ModelStructure dependencies.  Made from an embedding
    (``of``) or read from the derived-model cache (fmigen/build/derived.py), which
    has no symbolic model."""
    mechanism: object
    independent: tuple
    outputs: list
    dependencies: structure.Dependencies

    @classmethod
    def of(cls, emb: Embedding, form=None) -> "Interface":
        deps = structure.dependencies(emb) if form is None else structure.augmented_dependencies(emb, form)
        return cls(emb.dae.mechanism, tuple(emb.independent), list(emb.dae.outputs), deps)

    @property
    def n(self) -> int:
        return len(self.mechanism.coordinates)

    @property
    def f(self) -> int:
        return len(self.independent)


def realtime_config(config_h: Path) -> bool:
    """Whether a model_config.h is a realtime build's (it defines the
    caps the kernels' loops read, so the kernels cannot be shared)."""
    return config_h.exists() and "#define FMIGEN_REALTIME " in config_h.read_text()


def model_description(iface: Interface, gen: GeneratedModel, table: VariableTable, kind: str = "cs",
                      step: float = 1e-3) -> bytes:
    """FMI 2.0 modelDescription.xml declaring exactly one interface type
    (``kind``) with the variables of ``table`` that FMI 2 declares."""
    deps = iface.dependencies
    vars_ = table.declared("2")
    mech = iface.mechanism
    # Model Exchange: the state events of loads that switch with the state
    # (stops, derive/events.py); Co-Simulation handles them inside the step
    nz = gen.macros.get("FMIGEN_NZ", 0) if kind == "me" else 0
    root = description_root("2.0", mech, gen.guid, numberOfEventIndicators=str(nz))
    common = dict(modelIdentifier=gen.identifier, needsExecutionTool="false",
                  canGetAndSetFMUstate="true", canSerializeFMUstate="true",
                  canNotUseMemoryManagementFunctions="true",
                  canBeInstantiatedOnlyOncePerProcess="false",
                  providesDirectionalDerivative="false")
    if kind == "me":
        # needed: the kinematics solves continue the branch of the last
        # accepted state (fmigen_instance.c), which moves only there; an
        # importer that skips it (fmpy does when told it may) predicts from
        # the start for the whole run, and far from it a solve fails
        # continuity or lands on the mirror branch
        cs = etree.SubElement(root, "ModelExchange", **common, completedIntegratorStepNotNeeded="false")
    else:
        # first input derivatives (fmi2SetRealInputDerivatives) make the
        # inputs linear over a communication step (fmigen_core_inputs); a
        # kinematic FMU's inputs are its coordinates, set, not interpolated
        cs = etree.SubElement(root, "CoSimulation", **common,
                              canHandleVariableCommunicationStepSize="true",
                              canInterpolateInputs="false" if mech.kinematic else "true",
                              maxOutputDerivativeOrder="0",
                              canRunAsynchronuously="false")
    files = etree.SubElement(cs, "SourceFiles")
    for src in source_files("2"):
        etree.SubElement(files, "File", name=src)
    units_categories_experiment(root, {v.unit for v in vars_ if v.unit}, step)
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
        if v.minimum is not None:
            real.set("min", repr(float(v.minimum)))
        if v.maximum is not None:
            real.set("max", repr(float(v.maximum)))
        index[v.name] = k
    for k, v in enumerate(vars_, start=1):
        if v.derivative:
            mv[k - 1].find("Real").set("derivative", str(index[v.derivative]))
    ms = etree.SubElement(root, "ModelStructure")
    for tag, group, names in structure_lists(vars_, deps, kind):
        el = etree.SubElement(ms, tag)
        for name in names:
            etree.SubElement(el, "Unknown", index=str(index[name]),
                             dependencies=" ".join(str(index[d]) for d in group[name]))
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")


def fmi_header_dir(fmi: str) -> Path:
    """The standard's headers: FMI 2.0.5 as the Modelica Association
    publishes them (runtime/fmi2, BSD-2, from modelica/fmi-standard's v2.0.x),
    because fmpy's copy drops FMI2_FUNCTION_PREFIX, which an importer needs
    to link several source FMUs into one binary; FMI 3.0 from fmpy, found
    without importing it: packaging needs only this directory, and every
    build, a warm rebuild too, would otherwise wait for fmpy's imports."""
    if str(fmi) == "2":
        return RUNTIME_DIR / "fmi2"
    return Path(importlib.util.find_spec("fmpy").origin).parent / "c-code"


def copy_flags(flags: list) -> list:
    """``flags`` for the model's own units (MODEL_SOURCES): without
    AVX_DISPATCH, which only the runtime's units that call into the model
    read (FMIGEN_MODEL_FN); model.c is the SSE2 copy itself and compiles to
    the same object either way, so a build with the AVX copy and one without
    share its object in the cache instead of compiling it twice."""
    return [f for f in flags if f != AVX_DISPATCH]


def source_files(fmi: str = "2") -> list[str]:
    """The C files an importer compiles, in <SourceFiles> / buildDescription.xml order."""
    return ["model.c", START_SOURCE, *RUNTIME_SOURCES, GLUE[fmi], CONFIG_SOURCE]


def glue_sources(fmi: str = "2") -> list[str]:
    """The FMI glue's C files, which no model's header enters (SHARED_GLUE)."""
    return ["fmigen_instance.c", GLUE[fmi]]


def fmu_config(kind: str) -> str:
    """sources/fmu_config.h: the interface type, which decides which of the
    glue's instantiate functions succeed (through fg_model,
    fmigen_instance_model.c, the one unit that includes this header)."""
    return "\n".join([
        "/* Generated by fmigen: interface type of this FMU build; solver, step and GUID in fmu_config.c. */",
        "#ifndef FMIGEN_FMU_CONFIG_H", "#define FMIGEN_FMU_CONFIG_H",
        f"#define FMIGEN_HAS_CS {int(kind == 'cs')}",
        f"#define FMIGEN_HAS_ME {int(kind == 'me')}",
        "#endif", ""])


def fmu_config_source(solver: str, step: float, guid: str | None = None) -> str:
    """sources/fmu_config.c: the build values that change from variant to
    variant (solver, internal step) and the FMU's GUID (``behaviour_guid``;
    None: without it, the text the GUID is computed over).  A translation
    unit of its own, so that a rebuild after a solver or step change
    compiles these few lines and takes the other units (model.c, the
    runtime, the FMI glue) from the object cache; a rebuild from sources
    alone (which passes no -D flags) still behaves as the binary."""
    return "\n".join([
        "/* Generated by fmigen: solver, internal step and GUID of this FMU build. */",
        '#include "model_config.h"', '#include "fmigen_values.h"',
        *([f'const char fmigen_model_guid[FMIGEN_GUID_SIZE] = "{{{guid}}}";'] if guid is not None else []),
        f"const int fmigen_default_solver = {SOLVERS[solver]}; /* {solver} */",
        f"const double fmigen_default_step = {float(step)!r};", ""])


def build_description(identifier: str) -> bytes:
    """sources/buildDescription.xml (FMI 3.0 source FMUs)."""
    root = etree.Element("fmiBuildDescription", fmiVersion="3.0")
    bc = etree.SubElement(root, "BuildConfiguration", modelIdentifier=identifier,
                          description="any C99 compiler; link with the math library where it is separate")
    fs = etree.SubElement(bc, "SourceFileSet", language="C99")
    for f in source_files("3"):
        etree.SubElement(fs, "SourceFile", name=f)
    etree.SubElement(fs, "IncludeDirectory", name=".")
    return etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")


def variable_list(table: VariableTable, fmi: str) -> str:
    """The variables the FMI ``fmi`` modelDescription declares, one line
    each with every attribute, as text for ``behaviour_guid``."""
    return "\n".join(repr(dataclasses.astuple(v)) for v in table.declared(fmi))


def behaviour_guid(gen: GeneratedModel, table: VariableTable, fmi: str, kind: str, solver: str,
                   step: float) -> str:
    """The FMU's GUID (FMI 2 ``guid``, FMI 3 ``instantiationToken``): a
    hash of everything that decides how it behaves — model.c, its macros
    (sizes, formulation), the build options (solver, internal step,
    interface type: fmu_config.h and fmu_config.c), the FMI version, the runtime sources it
    is compiled with and the variable list of its modelDescription (value
    references, causality, starts, units).  Two FMUs that differ in any of
    these, e.g. only in the solver, do not share a GUID, so an importer's
    saved state or parameter set of one is refused by the other; the same
    build repeated gives the same GUID (no date, no path enters it)."""
    h = hashlib.sha256()
    runtime = [RUNTIME_DIR / f for f in [*RUNTIME_SOURCES, *RUNTIME_HEADERS, GLUE[fmi]]]
    parts = [("fmi", fmi), ("kind", kind), ("identifier", gen.identifier), ("model.c", gen.model_c),
             (START_SOURCE, gen.start_c),
             ("macros", "\n".join(define_lines(gen.macros))), ("fmu_config.h", fmu_config(kind)),
             ("fmu_config.c", fmu_config_source(solver, step)),
             ("fmu_variables.h", table.c_header()), ("variables", variable_list(table, fmi)),
             *((f.name, f.read_text()) for f in runtime)]
    for name, text in parts:
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return str(uuid.UUID(bytes=h.digest()[:16]))


def write_sources(dest: Path, gen: GeneratedModel, table: VariableTable, fmi: str = "2", kind: str = "cs",
                  solver: str = "rk4", step: float = 1e-3):
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "model.c").write_text(gen.model_c)
    (dest / START_SOURCE).write_text(gen.start_c)
    (dest / "model_config.h").write_text(gen.config_h)
    (dest / "fmu_config.h").write_text(fmu_config(kind))
    (dest / CONFIG_SOURCE).write_text(fmu_config_source(solver, step, gen.guid))
    (dest / "fmu_variables.h").write_text(table.c_header())
    for f in RUNTIME_SOURCES + RUNTIME_HEADERS + [GLUE[fmi]]:
        shutil.copy(RUNTIME_DIR / f, dest / f)
    for f in FMI_HEADERS[fmi]:
        shutil.copy(fmi_header_dir(fmi) / f, dest / f)
    if fmi == "3":
        (dest / "buildDescription.xml").write_bytes(build_description(gen.identifier))


def mingw_available() -> bool:
    return shutil.which(MINGW_CC) is not None


def windows_by_default() -> bool:
    """Whether a build cross-compiles the win64 DLL when not told
    (``package``'s ``windows=None``): when mingw-w64 is installed, unless
    the environment sets FMIGEN_WINDOWS=0.  The test suite sets it
    (tests/conftest.py): the DLL is a third compilation of every new
    model.c, and only the tests of the DLL itself need it."""
    return os.environ.get("FMIGEN_WINDOWS", "1") != "0" and mingw_available()


def avx_variant(cc: str) -> bool:
    """Whether a binary built with ``cc`` also holds model.c compiled for
    processors with AVX (AVX_SOURCE; fmigen_runtime.h, FMIGEN_MODEL_FN, says
    why): where ``avx_target`` allows it, unless the environment sets
    FMIGEN_AVX=0.  The test suite sets it (tests/conftest.py): the copy is a
    second compilation of every new model.c that ends in the same bits, and
    the tests of the copy itself (tests/test_avx_variant.py) and of its
    compilation set it back."""
    return os.environ.get("FMIGEN_AVX", "1") != "0" and avx_target(cc)


@functools.lru_cache(maxsize=None)
def avx_target(cc: str) -> bool:
    """Whether ``cc`` can build the AVX copy: gcc or clang targeting x86-64
    Linux.  Not the Windows DLL: mingw-w64's gcc keeps the stack 16-byte
    aligned, and AVX's 32-byte spills then fault (GCC bug 54412)."""
    if "mingw" in Path(cc).name:
        return False
    try:
        target = subprocess.run([cc, "-dumpmachine"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return target.startswith("x86_64") and "linux" in target


def model_copy_units(avx_wrapper: Path, flags: list, avx: bool, shared_kernels: bool) -> list:
    """The units a binary links beside the model's own sources, as
    (source, its flags, its object's name): with ``avx``, model.c's AVX copy
    (``avx_wrapper``, a copy of AVX_SOURCE that includes model.c) first;
    with ``shared_kernels``, the numerical kernels' unit, and its AVX copy
    with ``avx``.  ``compile_shared`` and the benchmark harness both build
    from this list, so a harness times the binary an FMU ships."""
    units = [(avx_wrapper, [*flags, *AVX_FLAGS], AVX_SOURCE)] if avx else []
    if shared_kernels:
        kernels = RUNTIME_DIR / KERNELS_SOURCE
        units.append((kernels, flags, KERNELS_SOURCE))
        if avx:
            units.append((kernels, [*flags, *AVX_FLAGS, *AVX_KERNEL_FLAGS], "fmigen_kernels_avx.c"))
    return units


def compile_shared(src: Path, out: Path, fmi: str = "2", cc="gcc", extra=(), use_cache=False, avx=None,
                   extra_sources=()):
    """Compile the FMU's sources in ``src`` into the shared library ``out``
    (``extra``: more flags, for compiling and linking); the compiler's
    warnings are returned.  ``avx``: link the model's AVX copy too (default:
    ``avx_variant``, when ``src`` has the runtime that can).  ``use_cache``:
    compile each source to an object file, reusing one
    compiled earlier from the same source, local headers (``cc -MM``),
    compiler and flags (under the Gröbner cache's root, ``objects/``): gcc
    -O2 on a large model.c is most of a rebuild's time, and model.c does not change with the FMI version, kind,
    solver or step.  The numerical kernels (KERNELS_SOURCE) and the FMI glue
    (``glue_sources``) are compiled from the runtime's own directory, not
    ``src``, without the model's headers: with ``use_cache`` every model
    after the first takes them from the cache.
    ``extra_sources``: further C files linked in, compiled
    with the same flags (``fmigen check``'s exports)."""
    windows = "mingw32" in Path(cc).name
    base = [f for f in CFLAGS if not (windows and f == "-fPIC")]
    # only the FMI API leaves the binary (FMI2_Export / FMI3_Export mark it):
    # an importer that loads several FMUs with RTLD_GLOBAL must not bind one
    # model's internal calls to another's
    base += ["-fvisibility=hidden"] + (["-static-libgcc"] if windows else [])
    if avx is None:
        # sources written by an older fmigen have no kernels header (and no
        # _avx names): they build with one copy
        avx = avx_variant(cc) and (src / "fmigen_numeric.h").exists()
    # sources written before the kernels had a unit of their own compile
    # them in fmigen_core.c; so does a realtime build, whose caps on the
    # kernels' loops are the model's own (model_config.h)
    shared_kernels = (src / "fmigen_kernels.h").exists() and not realtime_config(src / "model_config.h")
    # sources written before the glue read its model from fg_model compile
    # it with the model's headers, as the other units
    glue = glue_sources(fmi) if (src / GLUE_MODEL_SOURCE).exists() else []
    flags = [*base, *([AVX_DISPATCH] if avx else []), *([SHARED_KERNELS] if shared_kernels else []),
             *([SHARED_GLUE] if glue else []), f"-I{src}", *extra]
    with tempfile.TemporaryDirectory() as tmp:
        # (source, its flags, its object's name without the cache)
        units = [(src / f, copy_flags(flags) if f in MODEL_SOURCES else flags, f)
                 for f in source_files(fmi) if f not in glue] + [(Path(f), flags, f) for f in extra_sources]
        # the AVX wrapper has next to nothing of its own: model.c and the
        # kernels it includes come from src through -I, as the SSE2 copy's do
        wrapper = Path(tmp) / AVX_SOURCE
        if avx:
            shutil.copyfile(RUNTIME_DIR / AVX_SOURCE, wrapper)
        copies = model_copy_units(wrapper, flags, avx, shared_kernels)
        if avx:
            # second, so that the two long compiles run at once
            units.insert(1, copies.pop(0))
        units += copies
        # the glue with no flag that depends on the model or the build's
        # other choices (AVX, shared kernels): one object for all
        glue_flags = [*base, SHARED_GLUE, f"-I{RUNTIME_DIR}", f"-I{fmi_header_dir(fmi)}", *extra]
        units += [(RUNTIME_DIR / f, glue_flags, f) for f in glue]

        def compile_one(unit):
            f, fl, name = unit
            if use_cache:
                return _cached_object(cc, fl, f, out.parent), ""
            return _compile_object(cc, fl, f, Path(tmp) / f"{Path(name).stem}.o")

        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            compiled = list(pool.map(compile_one, units))
        # a PE linker stamps the link time into the DLL and derives its
        # preferred base from a hash of the output path; both made two builds
        # of the same sources differ.  The fixed base is MSVC's default (the
        # DLL stays relocatable: Windows' ASLR moves it anyway)
        reproducible = ["-Wl,--no-insert-timestamp,--disable-auto-image-base"] if windows else []
        cmd = [cc, *base, "-shared", *(str(o) for o, _ in compiled), "-o", str(out), "-lm",
               *reproducible, *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"C compilation failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return "".join(w for _, w in compiled) + proc.stderr


def _compile_object(cc: str, flags: list, source: Path, obj: Path):
    """(the object file, the compiler's warnings)"""
    cmd = [cc, *flags, "-c", str(source), "-o", str(obj)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"C compilation failed:\n{' '.join(cmd)}\n{proc.stderr}")
    return obj, proc.stderr


_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def _local_includes(source: Path, flags) -> list[Path]:
    """The files ``source`` includes with #include "...", transitively, found
    beside the including file or in the -I directories (the compiler's own
    search); a name found in neither is a system header.  Every such line
    counts, also one an #if leaves out: a superset of what the compiler
    reads, so a cache key over it misses nothing.  Read here rather than
    by ``cc -MM``, which preprocesses the source (model.c: hundreds of kB)
    once more per compile."""
    dirs = [Path(f[2:]) for f in flags if f.startswith("-I")]
    seen, todo, out = {source.resolve()}, [source], []
    while todo:
        f = todo.pop()
        for name in _INCLUDE.findall(f.read_bytes()):
            name = name.decode()
            found = next((d / name for d in [f.parent, *dirs] if (d / name).is_file()), None)
            if found is not None and found.resolve() not in seen:
                seen.add(found.resolve())
                out.append(found)
                todo.append(found)
    return out


@functools.lru_cache(maxsize=None)
def _compiler_version(cc: str) -> str:
    return subprocess.run([cc, "--version"], capture_output=True, text=True).stdout


def _cached_object(cc: str, flags: list, source: Path, workdir: Path) -> Path:
    """``source`` compiled with ``flags`` (-c), from the cache when the
    source, the local headers it includes, the compiler's --version and the
    flags are the same."""
    from fmigen.kinematics.groebner import CACHE_DIR, write_atomically
    # by name, not by path: the AVX wrapper sits in a temporary directory of
    # its own, and ordering by path would key the same files differently
    # from build to build
    headers = sorted((d.name, d.read_bytes()) for d in _local_includes(source, flags))
    h = hashlib.sha256()
    h.update("\0".join([cc, _compiler_version(cc), *[f for f in flags if not f.startswith("-I")]]).encode())
    for name, text in [(source.name, source.read_bytes()), *headers]:
        h.update(b"\0" + name.encode() + b"\0" + text)
    cached = CACHE_DIR / "objects" / f"{h.hexdigest()}.o"
    if not cached.exists():
        obj, _ = _compile_object(cc, flags, source, workdir / f"{source.stem}.{h.hexdigest()[:8]}.o")
        write_atomically(cached, obj.read_bytes())
        obj.unlink()
    return cached


def bounded_work_html(realtime=None) -> str:
    """The FMU documentation's statement of its work per step: every loop's
    cap (codegen_newton.iteration_caps), and no text made inside a step;
    with ``realtime`` (``bench.realtime_caps``) the caps of a
    realtime build and what they were measured from."""
    from fmigen.generate.codegen_newton import iteration_caps
    cap = iteration_caps()
    return ("<h2>Work per step</h2><p>Every iterative loop of a step has a fixed cap, whatever the input: "
            f"a kinematic block solved by Newton (a fallback, or a block without a closed-form sequence) takes at "
            f"most {cap['newton']} iterations per attempt, the polish of a closed-form result at most "
            f"{cap['polish']}; a univariate polynomial's root at most {cap['poly_newton']} Newton steps from "
            f"the prediction and, where those fail, at most {cap['aberth']} Aberth iterations and 5 polishing "
            "steps; each block tries a fixed number of attempts. The caps are what a step may take, not what "
            "it needs: over the swept workspace of every dynamic mechanism shipped with fmigen a step took at "
            "most 6 Newton iterations, 3 Newton steps of a root and no polish or Aberth iteration (the "
            "iterations table of fmigen's docs/benchmarks.md). A Newton iteration also ends where its steps "
            "stop contracting: converged once a step that does not halve the one before follows a step below "
            "1e-12 (1 + max|q|), the round-off floor that a nearly singular Jacobian raises above the "
            "1e-14 test, and unconverged where a full Newton step is no shorter than the full step before it. "
            "A step whose attempts all fail fails. A communication step of H takes at most "
            "ceil(H / internal_step) internal steps. "
            "Errors are recorded inside the step as numbers and formatted into the log message only after it "
            "returns (FMI has the logger called before a function returns Discard); a doStep that succeeds "
            "formats and logs nothing: a coordinate switch is logged (logEvents) by the next call into the FMU. "
            "<code>fmigen bench MECH --worst-case</code> measures "
            "the instructions of every doStep over the motion and the swept workspace "
            "(fmigen's docs/benchmarks.md).</p>" + (realtime_html(realtime) if realtime else ""))


def realtime_html(realtime: dict) -> str:
    """The documentation's paragraph on a realtime build's caps."""
    cap, need = realtime["caps"], realtime["need"]
    factor, extra = realtime["margin"]
    return ("<h2>Realtime build: iteration caps</h2><p>Built with <code>fmigen build --realtime</code>: each "
            "loop stops at a cap of its own, measured for this mechanism, instead of the caps above. Per call: "
            f"a kinematic block's Newton at most {cap['newton']} iterations, the polish of a closed-form result "
            f"at most {cap['polish']}, a polynomial root's Newton at most {cap['poly_newton']} steps, the Aberth "
            f"iteration at most {cap['aberth']}. Each cap is {factor} &times; the most iterations that "
            f"loop took over this mechanism's workspace sweep ({realtime['samples']} points stepped with random "
            f"velocities and inputs, and the assembly of each and of the start) + {extra}; the sweep "
            f"needed {need['newton']} / {need['polish']} / {need['poly_newton']} / {need['aberth']}. A step "
            "that would need more returns Discard, its reason recorded as numbers inside the step and formatted "
            "into the log message after it returns.</p>")


def package(model, gen: GeneratedModel, out: Path, solver="rk4", step=1e-3, fmi="2",
            kind="cs", windows=None, use_cache=False, realtime=None) -> Path:
    """Write the FMU of ``model``, an Embedding or an Interface (a
    derived-model cache hit).  ``windows``: cross-compile the win64 DLL
    (default: ``windows_by_default``); ``use_cache``: reuse the
    object files of identical sources (``compile_shared``); ``realtime``:
    the caps of a realtime build (``bench.realtime_caps``), which ``gen``
    carries, for the documentation."""
    fmi, kind = str(fmi), str(kind).lower()
    form = gen.formulation
    if isinstance(model, Interface):
        iface = model
    else:
        if form is not None:
            from fmigen.generate.formulation import check_model
            check_model(model, form)
        iface = Interface.of(model, form)
    mech = iface.mechanism
    if fmi not in GLUE:
        raise BuildError(f"unknown FMI version '{fmi}' (choose 2 or 3)")
    if kind not in KINDS:
        raise BuildError(f"unknown interface type '{kind}' (choose cs or me)")
    if mech.kinematic and kind != "cs":
        raise BuildError(f"'{mech.name}' is a kinematic mechanism (independent coordinates "
                         "are inputs, no dynamics): it builds as Co-Simulation only")
    if windows is None:
        windows = windows_by_default()
    if solver not in SOLVERS:
        raise BuildError(f"unknown solver '{solver}' (choose from {sorted(SOLVERS)})")
    if not (step > 0):
        raise BuildError(f"internal step must be > 0 (got {step})")
    identifier = gen.identifier
    table = variables.table(iface, step, kind, form)
    # the model's provisional GUID (over model.c) becomes the FMU's, over
    # everything this variant's behaviour depends on
    gen = dataclasses.replace(gen, guid=behaviour_guid(gen, table, fmi, kind, solver, step))
    if fmi == "2":
        xml = model_description(iface, gen, table, kind, step)
    else:
        xml = model_description_3(iface, gen, table, kind, step)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_sources(root / "sources", gen, table, fmi, kind, solver, step)
        plat = PLATFORMS[fmi]
        jobs = [(root / "binaries" / plat["linux"] / f"{identifier}.so", "gcc")]
        if windows:
            jobs.append((root / "binaries" / plat["windows"] / f"{identifier}.dll", MINGW_CC))
        for lib, _ in jobs:
            lib.parent.mkdir(parents=True)
        # the Linux and the Windows compile at once (each a gcc process; the
        # threads only wait for them): on a large model.c each takes seconds
        # to tens of seconds, and with two cores neither waits for the other
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            for done in [pool.submit(compile_shared, root / "sources", lib, fmi, cc=cc, use_cache=use_cache)
                         for lib, cc in jobs]:
                done.result()
        (root / "modelDescription.xml").write_bytes(xml)
        doc = root / "documentation"
        doc.mkdir()
        (doc / "index.html").write_text(
            f"<html><body><h1>{identifier}</h1><p>{mech.description}</p>"
            f"<p>Generated by fmigen: FMI {fmi}.0 {'Model Exchange' if kind == 'me' else 'Co-Simulation'}; "
            + (f"{solver} with internal step {step} s (parameter internal_step). " if kind == "cs" else
               "continuous states: the independent coordinates and their velocities. "
               if form is None else "continuous states: all coordinates and velocities. ")
            + (f"Formulation: {form.name} ({', '.join(f'{n} = {v:g}' for n, v, _, _ in form.parameters())}); "
               "the coordinates are integrated, not projected onto the constraints. " if form is not None
               else "") +
            "Geometry is structural (baked into the Gröbner basis); masses, inertias, gravity and "
            "force amplitudes are tunable parameters.</p>" + bounded_work_html(realtime) + "</body></html>")
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        # every entry with the same date and mode (SOURCE_DATE_EPOCH's date,
        # else the earliest a zip can hold), so the archive's bytes follow
        # from its files' and not from when they were written
        stamp = description.build_time()
        when = (1980, 1, 1, 0, 0, 0) if stamp is None else \
            max((1980, 1, 1, 0, 0, 0), time.gmtime(stamp)[:6])
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted(root.rglob("*")):
                if f.is_file():
                    entry = zipfile.ZipInfo(f.relative_to(root).as_posix(), date_time=when)
                    entry.compress_type = zipfile.ZIP_DEFLATED
                    binary = f.relative_to(root).parts[0] == "binaries"
                    entry.external_attr = (0o755 if binary else 0o644) << 16
                    z.writestr(entry, f.read_bytes())
    return out
