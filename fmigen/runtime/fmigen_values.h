/* fmigen runtime: the values a rebuild changes without changing model.c,
 * declared for the units that define them and for the runtime that reads
 * them (fmigen_runtime.h and fmigen_instance.h include this header):
 * - model_start.c: the start of the coordinates and of the primary
 *   partition's solution vector, and with hard points the parameters'
 *   defaults (codegen.finish);
 * - fmu_config.c: the build's GUID, solver and internal step
 *   (fmu.fmu_config_source).
 *
 * Why a header of its own: a rebuild after a start, solver or step change
 * compiles those two units again, for each binary, and takes every other
 * object from the cache.  They include model_config.h and this header
 * only, no system header: fmigen_runtime.h's (through fmigen_kernels.h:
 * math.h, string.h, the SSE2 intrinsics) were nearly all of the compiler's
 * work on them.  They hold constant data and no arithmetic, so the
 * floating-point pragmas and the excess-precision check of fmigen_kernels.h
 * have nothing to act on there: a literal initializes its double the same
 * way under any of them.  The names are model-prefixed as everywhere
 * (fmigen_names.h, after model_config.h where the unit has it). */
#ifndef FMIGEN_VALUES_H
#define FMIGEN_VALUES_H

#include "fmigen_names.h"

/* fmu_config.c: a GUID as written in modelDescription.xml (braces, 36
 * characters, NUL), the solver and the internal step */
#define FMIGEN_GUID_SIZE 39
extern const char fmigen_model_guid[FMIGEN_GUID_SIZE];
extern const int fmigen_default_solver;
extern const double fmigen_default_step;

/* model_start.c (fmigen_p_default there with hard points, else in model.c);
 * declared in every unit, as fmigen_runtime.h did: a unit that defines no
 * model (the shared FMI glue, the tests' stand-in model_config.h) reads
 * none of them */
extern const double fmigen_q_start[];
extern const double fmigen_sol_start[];
extern const double fmigen_p_default[];

#endif /* FMIGEN_VALUES_H */
