/* A minimal FMI 2.0 Co-Simulation master for the portability checks (not
 * part of any FMU; scripts/portability.py, tests/test_portability.py).  It
 * is linked with the FMU itself, never loads it: with the FMU's sources
 * compiled for the platform under test (a cross-compiler, run under
 * qemu-user; tcc; clang), with a shipped linux64 .so, or with a shipped
 * win64 DLL (mingw-w64's linker takes a DLL directly; run under wine).
 *
 *     fmi2_master [--save K FILE | --load K FILE] GUID STEPS H VR...
 *
 * Instantiates, initializes, and takes STEPS doSteps of H seconds; after
 * each it reads the given value references and prints one line of their
 * IEEE-754 bit patterns in hexadecimal (an integer, so the text is the same
 * on a big-endian machine and no printf rounds a value).  --save K FILE
 * writes the FMU state after K steps (fmi2SerializeFMUstate) to FILE and
 * goes on; --load K FILE sets the state read from FILE
 * (fmi2DeSerializeFMUstate, fmi2SetFMUstate) after initialization and
 * takes steps K+1..STEPS from it: a state carried to another platform.
 * Exit status: 0, 2 (instantiation or initialization failed), 3 (a step
 * failed), 4 (a read failed), 5 (saving or restoring the state failed; the
 * FMU's message is on stderr), 1 (bad arguments). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"

#define MAX_VR 4096
#define MAX_STATE (1 << 24)

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
    static fmi2Byte bytes[MAX_STATE];
    size_t n = 0, size = 0;
    long steps, k, save_at = -1, load_at = -1;
    double h, t = 0.0;
    fmi2Component c;
    const char *file = NULL;
    FILE *f;
    fmi2FMUstate state = NULL;
    if (argc > 3 && (strcmp(argv[1], "--save") == 0 || strcmp(argv[1], "--load") == 0)) {
        if (argv[1][2] == 's') save_at = atol(argv[2]); else load_at = atol(argv[2]);
        file = argv[3];
        argv += 3;
        argc -= 3;
    }
    if (argc < 4) { fprintf(stderr, "usage: fmi2_master [--save K FILE | --load K FILE] GUID STEPS H [VR ...]\n"); return 1; }
    steps = atol(argv[2]);
    h = strtod(argv[3], NULL);
    for (k = 4; k < argc && n < MAX_VR; k++) vr[n++] = (fmi2ValueReference)strtoul(argv[k], NULL, 10);
    /* logging on where a state is carried: a refused one names why */
    c = fmi2Instantiate("master", fmi2CoSimulation, argv[1], "", &cb, fmi2False, file ? fmi2True : fmi2False);
    if (!c || fmi2SetupExperiment(c, fmi2False, 0.0, 0.0, fmi2False, 0.0) != fmi2OK ||
        fmi2EnterInitializationMode(c) != fmi2OK || fmi2ExitInitializationMode(c) != fmi2OK)
        return 2;
    if (load_at >= 0) {
        if (!(f = fopen(file, "rb"))) { fprintf(stderr, "cannot read %s\n", file); return 5; }
        size = fread(bytes, 1, sizeof bytes, f);
        fclose(f);
        if (fmi2DeSerializeFMUstate(c, bytes, size, &state) != fmi2OK || fmi2SetFMUstate(c, state) != fmi2OK)
            return 5;
        fmi2FreeFMUstate(c, &state);
    }
    for (k = load_at >= 0 ? load_at : 0; k < steps; k++) {
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
        if (k + 1 == save_at) {
            if (fmi2GetFMUstate(c, &state) != fmi2OK || fmi2SerializedFMUstateSize(c, state, &size) != fmi2OK ||
                size > sizeof bytes || fmi2SerializeFMUstate(c, state, bytes, size) != fmi2OK)
                return 5;
            fmi2FreeFMUstate(c, &state);
            if (!(f = fopen(file, "wb")) || fwrite(bytes, 1, size, f) != size || fclose(f) != 0) {
                fprintf(stderr, "cannot write %s\n", file);
                return 5;
            }
        }
    }
    fmi2FreeInstance(c);
    return 0;
}
