/* model.c once more, compiled for processors with AVX: a binary FMU for
 * x86-64 Linux links both copies and runs this one where the processor has
 * AVX (FMIGEN_MODEL_FN, fmigen_runtime.h, says why, and why not FMA).  Its
 * external symbols end in _avx (fmigen_names.h).  Compiled with
 * fmigen.fmu.AVX_FLAGS; not part of a source FMU. */
#ifndef __AVX__
#error "fmigen_model_avx.c is compiled with -mavx (fmigen.fmu.AVX_FLAGS)"
#endif
#define FMIGEN_MODEL_VARIANT 1
#include "model.c"
/* and the numerical kernels it calls (LU, atan2, polynomial roots), unless
 * the build compiles them in a unit of their own (fmigen_kernels.c) */
#ifndef FMIGEN_SHARED_KERNELS
#include "fmigen_numeric.h"
#endif
