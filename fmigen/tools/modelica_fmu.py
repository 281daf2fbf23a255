"""The FMU wrapper: ``fmigen export-modelica MECH --fmu X.fmu`` writes a
Modelica package whose model imports the mechanism's FMI 2.0 Co-Simulation
FMU (external "C" functions, their C in the wrapper's ``Include``
annotation, that load the FMU's binary and co-simulate it), where
``fmigen.tools.modelica`` writes the equations themselves."""

from __future__ import annotations

from fmigen.model import ModelError
from fmigen.tools.modelica import _mods, _string, _unit, identifier

#: The C the wrapper's external functions call, carried in the wrapper's
#: ``Include`` annotation so the .mo file is all a tool needs besides the
#: unzipped FMU: it opens the FMU's binary for the platform
#: (binaries/<platform>/<modelIdentifier>.so|.dll|.dylib), looks up its
#: FMI 2.0 functions by their standard names and drives one Co-Simulation
#: instance per handle.  A handle is an Integer index into a static table, not
#: an ExternalObject, so the functions are plain Modelica external functions
#: (an instance lives until the process ends).  Errors go to ModelicaError,
#: which every Modelica tool's runtime provides (ModelicaUtilities.h).
FMI2_IMPORT_C = r"""
#ifndef FMIGEN_FMI2_IMPORT_C
#define FMIGEN_FMI2_IMPORT_C
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ModelicaUtilities.h"
#ifdef _WIN32
#include <windows.h>
#define FMIGEN_PLATFORM "win64"
#define FMIGEN_SUFFIX ".dll"
typedef HMODULE fmigen_lib;
#define fmigen_open(p) LoadLibraryA(p)
#define fmigen_sym(l, n) ((void *)GetProcAddress((l), (n)))
#else
#include <dlfcn.h>
#ifdef __APPLE__
#define FMIGEN_PLATFORM "darwin64"
#define FMIGEN_SUFFIX ".dylib"
#else
#define FMIGEN_PLATFORM "linux64"
#define FMIGEN_SUFFIX ".so"
#endif
typedef void *fmigen_lib;
#define fmigen_open(p) dlopen((p), RTLD_NOW | RTLD_LOCAL)
#define fmigen_sym(l, n) dlsym((l), (n))
#endif

/* the FMI 2.0 types and signatures this file calls (fmi2FunctionTypes.h) */
typedef void *fmi2Component;
typedef void *fmi2ComponentEnvironment;
typedef unsigned int fmi2ValueReference;
typedef double fmi2Real;
typedef int fmi2Boolean;
typedef enum { fmi2OK, fmi2Warning, fmi2Discard, fmi2Error, fmi2Fatal, fmi2Pending } fmi2Status;
typedef enum { fmi2ModelExchange, fmi2CoSimulation } fmi2Type;
typedef struct {
  void (*logger)(fmi2ComponentEnvironment, const char *, fmi2Status, const char *, const char *, ...);
  void *(*allocateMemory)(size_t, size_t);
  void (*freeMemory)(void *);
  void (*stepFinished)(fmi2ComponentEnvironment, fmi2Status);
  fmi2ComponentEnvironment componentEnvironment;
} fmi2CallbackFunctions;
typedef fmi2Component (*fmigen_instantiate_t)(const char *, fmi2Type, const char *, const char *,
                                              const fmi2CallbackFunctions *, fmi2Boolean, fmi2Boolean);
typedef fmi2Status (*fmigen_setup_t)(fmi2Component, fmi2Boolean, fmi2Real, fmi2Real, fmi2Boolean, fmi2Real);
typedef fmi2Status (*fmigen_mode_t)(fmi2Component);
typedef fmi2Status (*fmigen_real_t)(fmi2Component, const fmi2ValueReference *, size_t, fmi2Real *);
typedef fmi2Status (*fmigen_step_t)(fmi2Component, fmi2Real, fmi2Real, fmi2Boolean);

typedef struct {
  fmi2Component c;
  fmigen_mode_t enter_init, exit_init;
  fmigen_real_t set_real, get_real;
  fmigen_step_t do_step;
} fmigen_fmu;

#define FMIGEN_MAX_INSTANCES 64
static fmigen_fmu fmigen_instances[FMIGEN_MAX_INSTANCES];
static int fmigen_count = 0;

static void fmigen_logger(fmi2ComponentEnvironment env, const char *name, fmi2Status status,
                          const char *category, const char *message, ...) {
  char text[1024];
  va_list args;
  va_start(args, message);
  vsnprintf(text, sizeof text, message, args);
  va_end(args);
  ModelicaFormatMessage("%s [%s]: %s\n", name, category, text);
}

static fmi2CallbackFunctions fmigen_callbacks = {fmigen_logger, calloc, free, NULL, NULL};

static void *fmigen_need(fmigen_lib lib, const char *name, const char *path) {
  void *f = fmigen_sym(lib, name);
  if (!f) ModelicaFormatError("%s does not export %s", path, name);
  return f;
}

static void fmigen_check(fmi2Status status, const char *call) {
  if (status > fmi2Warning) ModelicaFormatError("the FMU's %s returned status %d", call, (int)status);
}

static fmigen_fmu *fmigen_get(int handle) {
  if (handle < 1 || handle > fmigen_count) ModelicaFormatError("no FMU instance %d", handle);
  return &fmigen_instances[handle - 1];
}

/* loads binaries/<platform>/<modelIdentifier> from the unzipped FMU, instantiates it for
   Co-Simulation, sets the parameters and the inputs' start values, initializes it at
   startTime; returns the instance's handle (1, 2, ...) */
int fmigen_fmi2_instantiate(const char *dir, const char *identifier, const char *guid, const char *name,
                            double startTime, const int *vr, size_t nvr, const double *values, size_t nvalues) {
  char path[4096], uri[4200];
  fmigen_fmu *f;
  fmigen_lib lib;
  fmigen_instantiate_t instantiate;
  if (fmigen_count == FMIGEN_MAX_INSTANCES) ModelicaError("too many FMU instances");
  snprintf(path, sizeof path, "%s/binaries/" FMIGEN_PLATFORM "/%s" FMIGEN_SUFFIX, dir, identifier);
  lib = fmigen_open(path);
  if (!lib) ModelicaFormatError("cannot load %s (is fmuDirectory the unzipped FMU?)", path);
  f = &fmigen_instances[fmigen_count];
  instantiate = (fmigen_instantiate_t)fmigen_need(lib, "fmi2Instantiate", path);
  f->enter_init = (fmigen_mode_t)fmigen_need(lib, "fmi2EnterInitializationMode", path);
  f->exit_init = (fmigen_mode_t)fmigen_need(lib, "fmi2ExitInitializationMode", path);
  f->set_real = (fmigen_real_t)fmigen_need(lib, "fmi2SetReal", path);
  f->get_real = (fmigen_real_t)fmigen_need(lib, "fmi2GetReal", path);
  f->do_step = (fmigen_step_t)fmigen_need(lib, "fmi2DoStep", path);
  snprintf(uri, sizeof uri, "file://%s/resources", dir);
  f->c = instantiate(name, fmi2CoSimulation, guid, uri, &fmigen_callbacks, 0, 0);
  if (!f->c) ModelicaFormatError("fmi2Instantiate of %s failed", path);
  fmigen_check(((fmigen_setup_t)fmigen_need(lib, "fmi2SetupExperiment", path))(f->c, 0, 0.0, startTime, 0, 0.0),
               "fmi2SetupExperiment");
  if (nvr != nvalues) ModelicaError("fmigen_fmi2_instantiate: as many values as value references");
  fmigen_check(f->enter_init(f->c), "fmi2EnterInitializationMode");
  fmigen_check(f->set_real(f->c, (const fmi2ValueReference *)vr, nvr, (fmi2Real *)values), "fmi2SetReal");
  fmigen_check(f->exit_init(f->c), "fmi2ExitInitializationMode");
  return ++fmigen_count;
}

/* one communication step: the inputs at t set, the outputs at t read, then fmi2DoStep from t to t + h */
void fmigen_fmi2_step(int handle, double t, double h, const int *uvr, size_t nu, const double *u, size_t nuv,
                      const int *yvr, size_t ny, double *y, size_t nyv) {
  fmigen_fmu *f = fmigen_get(handle);
  if (nu != nuv || ny != nyv) ModelicaError("fmigen_fmi2_step: as many values as value references");
  if (nu) fmigen_check(f->set_real(f->c, (const fmi2ValueReference *)uvr, nu, (fmi2Real *)u), "fmi2SetReal");
  if (ny) fmigen_check(f->get_real(f->c, (const fmi2ValueReference *)yvr, ny, y), "fmi2GetReal");
  fmigen_check(f->do_step(f->c, t, h, 1), "fmi2DoStep");
}
#endif
"""


def fmu_wrapper(fmu_path, unzipdir, package: str | None = None) -> tuple[str, str]:
    """(Modelica text, the model's qualified name) of a wrapper for an FMI 2.0
    Co-Simulation FMU, the layout Modelica tools use to import an FMU
    (OpenModelica's importFMU, Dymola, FMPy's Modelica export): external "C"
    functions that load the FMU's binary from ``unzipdir`` (the FMU
    unzipped), instantiate and initialize it as a parameter binding, and in a
    ``when sample(...)`` equation each communication step set the inputs, read
    the outputs and call fmi2DoStep.  The outputs are held between
    communication points, as a co-simulation master holds them.  The tunable
    parameters are Modelica parameters passed to the FMU at initialization;
    inputs are ``input Real``, outputs ``output Real``, with the FMU's units."""
    from fmpy import read_model_description
    try:
        md = read_model_description(str(fmu_path))
    except Exception as e:   # not a zip, no modelDescription.xml, bad XML
        raise ModelError(f"{fmu_path} is not a readable FMU: {e}") from None
    if md.fmiVersion != "2.0":
        raise ModelError(f"{fmu_path} is an FMI {md.fmiVersion} FMU; the Modelica wrapper drives FMI 2.0 "
                         "(build it with --fmi 2)")
    if md.coSimulation is None:
        raise ModelError(f"{fmu_path} has no Co-Simulation interface; the Modelica wrapper drives "
                         "Co-Simulation (build it with --kind cs)")
    ident = md.coSimulation.modelIdentifier
    model = identifier(md.modelName, "")
    pkg = identifier(package, "--package") if package else model + "_fmu"
    used = {}

    def claim(name, what):
        mname = identifier(name, what)
        if mname in used:
            raise ModelError(f"{what} and {used[mname]} are both '{mname}' in Modelica; rename one")
        used[mname] = what
        return mname

    for reserved in ("fmuDirectory", "communicationStepSize", "fmigen_fmu", "fmigen_y"):
        used[reserved] = "the wrapper's own variable"
    real = [v for v in md.modelVariables if v.type == "Real"]
    params = [v for v in real if v.causality == "parameter" and v.variability == "tunable"]
    inputs = [v for v in real if v.causality == "input"]
    outputs = [v for v in real if v.causality == "output"]
    pn = [claim(v.name, f"parameter {v.name}") for v in params]
    un = [claim(v.name, f"input {v.name}") for v in inputs]
    on = [claim(v.name, f"output {v.name}") for v in outputs]
    h = float(md.defaultExperiment.stepSize) if md.defaultExperiment and md.defaultExperiment.stepSize else 1e-3

    def ints(vs):
        return "{" + ", ".join(str(v.valueReference) for v in vs) + "}" if vs else "fill(0, 0)"

    def reals(names):
        return "{" + ", ".join(names) + "}" if names else "fill(0.0, 0)"

    include = _string(FMI2_IMPORT_C)
    ext = f'annotation(Include={include}, Library="dl")'
    ny = len(outputs)
    lines = [f"package {pkg} {_string(f'{md.modelName}: Modelica wrapper of its FMI 2.0 Co-Simulation FMU, by fmigen')}",
             "",
             "  impure function fmigen_fmi2_instantiate \"loads and initializes the FMU; returns its handle\"",
             "    input String dir \"the unzipped FMU\";",
             "    input String identifier;",
             "    input String guid;",
             "    input String name;",
             "    input Real startTime;",
             "    input Integer vr[:] \"value references set at initialization\";",
             "    input Real values[:];",
             "    output Integer handle;",
             "  external \"C\" handle = fmigen_fmi2_instantiate(dir, identifier, guid, name, startTime, vr, size(vr, 1), "
             f"values, size(values, 1))\n      {ext};",
             "  end fmigen_fmi2_instantiate;",
             "",
             "  impure function fmigen_fmi2_step \"sets the inputs, returns the outputs at t, steps to t + h\"",
             "    input Integer handle;",
             "    input Real t;",
             "    input Real h;",
             "    input Integer uvr[:];",
             "    input Real u[:];",
             "    input Integer yvr[:];",
             "    output Real y[size(yvr, 1)];",
             "  external \"C\" fmigen_fmi2_step(handle, t, h, uvr, size(uvr, 1), u, size(u, 1), yvr, size(yvr, 1), y, "
             f"size(y, 1))\n      {ext};",
             "  end fmigen_fmi2_step;",
             "",
             f"  model {model} {_string((md.description or md.modelName) + ' (the FMU, imported)')}",
             f"    parameter String fmuDirectory = {_string(str(unzipdir))} \"the FMU unzipped\";",
             f"    parameter Real communicationStepSize(unit=\"s\") = {float(h)!r} \"the FMU's communication step\";"]
    for v, name in zip(params, pn):
        lines.append(f"    parameter Real {name}{_mods(_unit(v.unit or ''))} = {float(v.start)!r} "
                     f"{_string(v.description or 'tunable parameter')};")
    for v, name in zip(inputs, un):
        lines.append(f"    input Real {name}{_mods(_unit(v.unit or ''))} = {float(v.start)!r} "
                     f"{_string(v.description or 'input')};")
    for v, name in zip(outputs, on):
        lines.append(f"    output Real {name}{_mods(_unit(v.unit or ''))} {_string(v.description or 'output')};")
    start = "0.0"
    if md.defaultExperiment and md.defaultExperiment.startTime:
        start = repr(float(md.defaultExperiment.startTime))
    lines += [
        "  protected",
        f"    parameter Integer fmigen_fmu = fmigen_fmi2_instantiate(fmuDirectory, {_string(ident)}, "
        f"{_string(md.guid)}, {_string(model)}, {start}, {ints(params + inputs)}, {reals(pn + un)}) "
        "\"the FMU instance's handle\";",
    ]
    if ny:
        lines.append(f"    discrete Real fmigen_y[{ny}] \"the outputs at the last communication point\";")
    lines.append("  equation")
    call = f"fmigen_fmi2_step(fmigen_fmu, time, communicationStepSize, {ints(inputs)}, {reals(un)}, {ints(outputs)})"
    lines.append(f"    when sample({start}, communicationStepSize) then")
    lines.append(f"      {'fmigen_y = ' if ny else ''}{call};")
    lines.append("    end when;")
    for k, name in enumerate(on):
        lines.append(f"    {name} = fmigen_y[{k + 1}];")
    doc = (f"<p>The FMU <b>{md.modelName}</b> (FMI 2.0 Co-Simulation, GUID {md.guid}) behind external C "
           "functions: the C in the <code>Include</code> annotation loads "
           f"<code>binaries/&lt;platform&gt;/{ident}</code> from <code>fmuDirectory</code> (the FMU unzipped) and "
           "calls fmi2DoStep every <code>communicationStepSize</code>; the outputs hold their values "
           "between communication points.</p>")
    lines.append(f"    annotation(Documentation(info={_string('<html>' + doc + '</html>')}));")
    lines += [f"  end {model};", f"end {pkg};"]
    return "\n".join(lines) + "\n", f"{pkg}.{model}"
