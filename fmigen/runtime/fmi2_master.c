/* A minimal FMI 2.0 Co-Simulation master for the portability checks (not
 * part of any FMU; scripts/portability.py, tests/test_portability.py).  It
 * is linked with the FMU itself, never loads it: with the FMU's sources
 * compiled for the platform under test (a cross-compiler, run under
 * qemu-user; tcc; clang), with a shipped linux64 .so, or with a shipped
 * win64 DLL (mingw-w64's linker takes a DLL directly; run under wine).
 *
 *     fmi2_master GUID STEPS H VR...
 *
 * Instantiates, initializes, and takes STEPS doSteps of H seconds; after
 * each it reads the given value references and prints one line of their
 * IEEE-754 bit patterns in hexadecimal (an integer, so the text is the same
 * on a big-endian machine and no printf rounds a value).  Exit status: 0,
 * 2 (instantiation or initialization failed), 3 (a step failed), 4 (a read
 * failed), 1 (bad arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"

#define MAX_VR 4096

static void logger(fmi2ComponentEnvironment env, fmi2String name, fmi2Status status, fmi2String category,
                   fmi2String message, ...)
{
    (void)env; (void)name; (void)status; (void)category;
    fprintf(stderr, "%s\n", message);
}

int main(int argc, char **argv)
{
    static fmi2ValueReference vr[MAX_VR];
    static double value[MAX_VR];
    fmi2CallbackFunctions cb = {logger, 0, 0, 0, 0};
    size_t n = 0;
    long steps, k;
    double h, t = 0.0;
    fmi2Component c;
    if (argc < 4) { fprintf(stderr, "usage: %s GUID STEPS H [VR ...]\n", argv[0]); return 1; }
    steps = atol(argv[2]);
    h = strtod(argv[3], NULL);
    for (k = 4; k < argc && n < MAX_VR; k++) vr[n++] = (fmi2ValueReference)strtoul(argv[k], NULL, 10);
    c = fmi2Instantiate("master", fmi2CoSimulation, argv[1], "", &cb, fmi2False, fmi2False);
    if (!c || fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) != fmi2OK ||
        fmi2EnterInitializationMode(c) != fmi2OK || fmi2ExitInitializationMode(c) != fmi2OK)
        return 2;
    for (k = 0; k < steps; k++) {
        size_t i;
        /* t as k·h, not summed: the same times on every platform anyway, but
         * no drift for a long run */
        t = (double)k * h;
        if (fmi2DoStep(c, t, h, fmi2True) != fmi2OK) return 3;
        if (n && fmi2GetReal(c, vr, n, value) != fmi2OK) return 4;
        for (i = 0; i < n; i++) {
            unsigned long long u;
            memcpy(&u, &value[i], sizeof u);
            printf("%s%016llx", i ? " " : "", u);
        }
        printf("\n");
    }
    fmi2FreeInstance(c);
    return 0;
}
