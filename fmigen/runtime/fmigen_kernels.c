/* The numerical kernels (fmigen_numeric.h: LU, atan2, sin/cos, polynomial
 * roots) in a unit of their own, for a binary build: it defines
 * FMIGEN_SHARED_KERNELS for every unit, so that these names carry no model
 * prefix (fmigen_names.h) and no model's header is read here.  The object
 * is then the same for every model, and the build's object cache compiles
 * it once per compiler and flags (fmigen.fmi.fmu.compile_shared; once more
 * with AVX_FLAGS and FMIGEN_MODEL_VARIANT for the model's AVX copy).  Not
 * part of a source FMU: there fmigen_core.c and fmigen_model_avx.c include
 * the kernels with the model's prefixed names. */
#ifndef FMIGEN_SHARED_KERNELS
#error "fmigen_kernels.c is compiled with -DFMIGEN_SHARED_KERNELS (fmigen.fmi.fmu.compile_shared)"
#endif
#include "fmigen_numeric.h"
