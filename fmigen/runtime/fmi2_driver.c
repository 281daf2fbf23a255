/* A minimal FMI 2.0 Co-Simulation importer for measurements and tests (not
 * part of any FMU): loads a binary with dlopen, instantiates it, and steps
 * it STEPS times by 1 ms, each step followed by one fmi2GetReal of the
 * given value references; prints their last values (%.17g).
 *
 *     fmi2_driver BINARY GUID STEPS [VR ...]
 *
 * run() is noinline so callgrind can count the loop alone
 * (--toggle-collect=run): scripts/bench_fmi_api.py's instructions per
 * communication step, and tests/test_avx_variant.py's check of which
 * copy of the model a real binary runs.  Exit status: 0, or 1 (cannot
 * load), 2 (instantiation or initialization failed), 3 (a step failed),
 * 4 (a read failed). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "fmi2Functions.h"

#define MAX_VR 4096

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                   fmi2String message, ...)
{
    (void)env; (void)name; (void)status; (void)category;
    fprintf(stderr, "%s\n", message);
}

static fmi2DoStepTYPE *do_step;
static fmi2GetRealTYPE *get_real;

__attribute__((noinline)) int run(fmi2Component c, long steps, const fmi2ValueReference *vr, size_t n,
                                  double *value)
{
    double t = 0.0;
    for (long k = 0; k < steps; k++, t += 1e-3) {
        if (do_step(c, t, 1e-3, fmi2True) != fmi2OK) return 3;
        if (n && get_real(c, vr, n, value) != fmi2OK) return 4;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: %s BINARY GUID STEPS [VR ...]\n", argv[0]); return 1; }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    fmi2InstantiateTYPE *instantiate = (fmi2InstantiateTYPE *)dlsym(h, "fmi2Instantiate");
    fmi2SetupExperimentTYPE *setup = (fmi2SetupExperimentTYPE *)dlsym(h, "fmi2SetupExperiment");
    fmi2EnterInitializationModeTYPE *enter = (fmi2EnterInitializationModeTYPE *)dlsym(h, "fmi2EnterInitializationMode");
    fmi2ExitInitializationModeTYPE *leave = (fmi2ExitInitializationModeTYPE *)dlsym(h, "fmi2ExitInitializationMode");
    do_step = (fmi2DoStepTYPE *)dlsym(h, "fmi2DoStep");
    get_real = (fmi2GetRealTYPE *)dlsym(h, "fmi2GetReal");
    if (!instantiate || !setup || !enter || !leave || !do_step || !get_real) { fprintf(stderr, "not an FMI 2.0 binary\n"); return 1; }
    static fmi2ValueReference vr[MAX_VR];
    static double value[MAX_VR];
    size_t n = 0;
    for (int a = 4; a < argc && n < MAX_VR; a++) vr[n++] = (fmi2ValueReference)strtoul(argv[a], NULL, 10);
    fmi2CallbackFunctions cb = {logger, 0, 0, 0, 0};
    fmi2Component c = instantiate("driver", fmi2CoSimulation, argv[2], "", &cb, fmi2False, fmi2False);
    if (!c || setup(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) || enter(c) || leave(c)) return 2;
    const int status = run(c, atol(argv[3]), vr, n, value);
    if (status) return status;
    for (size_t i = 0; i < n; i++) printf("%s%.17g", i ? " " : "", value[i]);
    printf("\n");
    return 0;
}
