/* The model's side of the FMI glue: its description fg_model (the sizes, the
 * value-reference groups of fmu_variables.h, where each group lives in
 * FmigenCore, the names) and the fg_core_* calls that need the model's code
 * (fmigen_instance.h declares both).  The glue itself (fmigen_instance.c,
 * fmi2.c, fmi3.c) reads no model's header, so a binary build compiles it
 * once for every model; this unit is the small part compiled with each. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "fmigen_runtime.h"
#include "fmigen_instance.h"
#include "fmu_config.h"
#include "fmu_variables.h"

#define FG_NX FMIGEN_NX
#define FG_NA (FG_NX / 2)   /* accelerations: NI, or NQ when augmented */

/* The instance indexes the model's arrays (q, v, u, p, y, dx, fp) by value
 * reference minus its group's first: a table that does not fit the
 * generated model's sizes must not compile. */
#if VR_V - VR_Q != NQ || VR_RES - VR_V != NQ || VR_P - VR_U != NU || VR_H - VR_P != NP || \
    VR_A - VR_Y != NY || VR_TIME - VR_A != FG_NA || VR_END - VR_F != FMIGEN_NFP
#error "fmu_variables.h (the variable table) does not fit the sizes in model_config.h"
#endif

#ifdef FMIGEN_VR_NAMES
static const char *const vr_names[] = FMIGEN_VR_NAMES;
#endif
/* Parameters of an augmented formulation (model_config.h) */
#if FMIGEN_NFP > 0
static const char *const fp_names[] = FMIGEN_FP_NAMES;
static const int fp_strict[] = FMIGEN_FP_STRICT;
#endif

const FgModel fg_model = {
    .nx = FG_NX, .ni = NI, .nu = NU, .np = NP, .nz = FMIGEN_NZ, .npart = NPART,
    .nevents = FMIGEN_NEVENTS, .kinematic = FMIGEN_KINEMATIC, .formulation = FMIGEN_FORMULATION,
    .has_cs = FMIGEN_HAS_CS, .has_me = FMIGEN_HAS_ME,
    .vr_q = VR_Q, .vr_v = VR_V, .vr_res = VR_RES, .vr_u = VR_U, .vr_p = VR_P, .vr_h = VR_H, .vr_y = VR_Y,
    .vr_a = VR_A, .vr_time = VR_TIME, .vr_f = VR_F, .vr_end = VR_END,
#ifdef FMIGEN_VR_NAMES
    .vr_names = vr_names,
#endif
    .core_size = sizeof(FmigenCore), .q = offsetof(FmigenCore, q), .v = offsetof(FmigenCore, v),
    .p = offsetof(FmigenCore, p), .u = offsetof(FmigenCore, u), .du = offsetof(FmigenCore, du),
    .y = offsetof(FmigenCore, y), .fp = offsetof(FmigenCore, fp), .memo_part = offsetof(FmigenCore, solved.part),
#if FMIGEN_NEVENTS > 0
    .event_times = fmigen_event_times,
#endif
#if FMIGEN_NFP > 0
    .fp_names = fp_names, .fp_strict = fp_strict,
#endif
    .coordinate_names = fmigen_coordinate_names,
#if FMIGEN_NHARD > 0
    .nhard = FMIGEN_NHARD, .hard_index = fmigen_hard_index,
    .hard_lower = fmigen_hard_lower, .hard_upper = fmigen_hard_upper,
#endif
};

int fg_core_assemble_trial(FmigenCore *c, int project, int keep_base, int trim)
{
    FmigenCore tmp = *c;
    if ((project ? fmigen_core_assemble(&tmp) : fmigen_core_refresh(&tmp)) || (trim && fmigen_core_trim(&tmp))) {
        c->err_kind = tmp.err_kind;
        c->err_code = tmp.err_code;
        c->err_t = tmp.err_t;
        memcpy(c->err_x, tmp.err_x, sizeof tmp.err_x);
        memcpy(c->err_q, tmp.err_q, sizeof tmp.err_q);
        return 1;
    }
    if (keep_base) tmp.base = c->base;
    *c = tmp;
    return 0;
}

int fg_core_derivatives(FmigenCore *c, double t, int accept, double *dx)
{
    double x[FMIGEN_DIM(FG_NX)];
    fmigen_state_get(c, x);
    return (accept ? fmigen_core_rhs_accept : fmigen_core_rhs)(c, t, x, dx);
}

void fg_core_get_states(const FmigenCore *c, double *x)
{
    fmigen_state_get(c, x);
}

void fg_core_set_states(FmigenCore *c, const double *x)
{
    fmigen_state_set(c, x);
}

void fg_core_event_indicators(FmigenCore *c, double *ei)
{
#if FMIGEN_NZ > 0
    fmigen_core_observe_some(c, FMIGEN_OBSERVE_ANGLES);
    double ubuf[FMIGEN_DIM(NU)];
    const double *u = fmigen_core_inputs(c, c->t, ubuf);
    FMIGEN_MODEL_FN(fmigen_event_indicators)(c->t, c->q, c->v, c->p, u, ei);
#else
    (void)c;
    (void)ei;
#endif
}

int fg_core_accept(FmigenCore *c)
{
#if !FMIGEN_FORMULATION
    fmigen_base_accept(&c->base, &FMIGEN_MODEL_FN(fmigen_partitions)[c->solved.part], c->t, c->q, c->v,
                       FMIGEN_MEMO_SOL(&c->solved), FMIGEN_MEMO_TRIG(&c->solved));
#if FMIGEN_LIMIT_TEST
    if (fmigen_core_limit(c)) return 1;
#endif
#endif
    (void)c;
    return 0;
}

int fg_core_mass_check(const double *p, double *value, const char **label, const char **minor)
{
#if FMIGEN_NMASS_CHECKS > 0 && NP > 0
    int which = -1;
    const int j = fmigen_mass_check(p, value, &which);
    if (!j) return 0;
    *label = fmigen_mass_check_labels[j - 1];
    *minor = which < 0 ? NULL : fmigen_psd3_minors[which];
    return 1;
#else
    (void)p; (void)value; (void)label; (void)minor;
    return 0;
#endif
}

const int *fg_core_independent(int part)
{
    return fmigen_partitions[part].independent;
}

const char *fg_core_invalid(const FmigenCore *c)
{
    if ((unsigned)c->part >= (unsigned)FMIGEN_DIM(NPART) || (unsigned)c->solved.part >= (unsigned)FMIGEN_DIM(NPART))
        return "partition index out of range";
    if ((unsigned)c->solved.side > 1u) return "memo half out of range";
    for (size_t i = 0; i < sizeof c->message; i++) if (!c->message[i]) return NULL;
    return "unterminated message";
}
