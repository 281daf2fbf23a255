/* fmigen instance layer: the FMI-version-independent half of the glue (see
 * fmigen_instance.h).  No globals and no static mutable state. */
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmigen_instance.h"

const char *const fg_category_names[N_CATS] = {"logStatusError", "logStatusWarning", "logEvents"};

static const char *const state_names[] = {"instantiated", "initialization mode", "step mode", "event mode",
                                          "continuous-time mode", "step failed (discarded)", "terminated",
                                          "error"};

void fg_log(FgInstance *in, int status, int category, const char *fmt, ...)
{
    if (!in || !in->emit) return;
    fg_report(in);   /* what the last doStep left pending happened first */
    if (status == FG_OK && !(in->logging_on && in->category_on[category])) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    in->emit(in, status, fg_category_names[category], buf);
}

int fg_fail(FgInstance *in, const char *fmt, ...)
{
    if (!in) return FG_ERROR;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fg_log(in, FG_ERROR, CAT_ERROR, "%s", buf);
    return FG_ERROR;
}

int fg_allowed(FgInstance *in, const char *fn, unsigned mask)
{
    if (!in) return 0;
    fg_report(in);
    if (mask & M_(in->s.state)) return 1;
    fg_log(in, FG_ERROR, CAT_ERROR, "%s is not allowed in %s", fn, state_names[in->s.state]);
    in->s.state = S_ERROR;
    return 0;
}

/* The first time event after t: a breakpoint of a load piecewise in t
 * (fmigen_event_times, sorted), or INFINITY. */
static double next_time_event(double t)
{
#if FMIGEN_NEVENTS > 0 && FMIGEN_TIME_EVENTS
    for (int k = 0; k < FMIGEN_NEVENTS; k++)
        if (fmigen_event_times[k] > t) return fmigen_event_times[k];
#endif
    (void)t;
    return INFINITY;
}

static void defaults(FgInstance *in)
{
    memset(&in->s, 0, sizeof in->s);
    fmigen_core_init(&in->s.core, fmigen_default_solver);
    in->s.core.h = fmigen_default_step;
    in->s.state = S_INSTANTIATED;
    in->s.next_event = INFINITY;
}

/* The value-reference tables (FgInstance), once per instance: GetReal is
 * then one pass that ORs what the values need and one of loads, SetReal
 * writes through the same pointers.  Why: the two passes over the groups'
 * ranges (what to observe, then where each value is) took 1,432
 * instructions of a Stewart fmi2GetReal of its 62 reals. */
static void index_values(FgInstance *in)
{
    unsigned char independent[NPART][NQ > 0 ? NQ : 1] = {{0}};
    for (int part = 0; part < NPART; part++)
        for (int k = 0; k < NI; k++) independent[part][FMIGEN_MODEL_FN(fmigen_partitions)[part].independent[k]] = 1;
    FmigenCore *k = &in->s.core;
    for (unsigned r = 0; r < VR_END; r++) {
        double *src = NULL;
        unsigned char need = 0;
        if (r < VR_V) src = &k->q[r - VR_Q];
        else if (r < VR_RES) src = &k->v[r - VR_V];
        else if (r == VR_RES) { src = &k->residual; need = FMIGEN_OBSERVE_RESIDUAL; }
        else if (r >= VR_U && r < VR_P) src = &k->u[r - VR_U];
        else if (r >= VR_P && r < VR_H) src = &k->p[r - VR_P];
        else if (r == VR_H) src = &k->h;
        else if (r >= VR_Y && r < VR_A) { src = &k->y[r - VR_Y]; need = FMIGEN_OBSERVE_OUTPUTS; }
        else if (r == VR_TIME) src = &k->t;
        else if (r >= VR_F) src = &k->fp[r - VR_F];
        in->value_of[r] = src;
        for (int part = 0; part < NPART; part++)
            in->read_needs[part][r] = need | (src ? 0 : FG_READ_SLOW) |
                                      (r < VR_V && !independent[part][r - VR_Q] ? FMIGEN_OBSERVE_ANGLES : 0);
    }
}

FgInstance *fg_new(const char *name, int kind, int logging_on, FgEmit emit, const void *callbacks, void *env)
{
    if (!name) return NULL;
    FgInstance *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->name = malloc(strlen(name) + 1);
    if (!in->name) { free(in); return NULL; }
    strcpy(in->name, name);
    in->kind = kind;
    in->logging_on = logging_on != 0;
    for (int k = 0; k < N_CATS; k++) in->category_on[k] = 1;
    in->emit = emit;
    in->callbacks = callbacks;
    in->environment = env;
    defaults(in);
    index_values(in);
    return in;
}

void fg_free(FgInstance *in)
{
    if (!in) return;
    free(in->name);
    free(in);
}

int fg_set_debug_logging(FgInstance *in, int on, size_t n, const char *const categories[])
{
    if (!fg_allowed(in, "SetDebugLogging", ANY_LIVE)) return FG_ERROR;
    if (n && !categories) return fg_fail(in, "SetDebugLogging: NULL category array");
    int want[N_CATS] = {0};
    for (size_t i = 0; i < n; i++) {
        int found = -1;
        for (int k = 0; k < N_CATS; k++)
            if (categories[i] && strcmp(categories[i], fg_category_names[k]) == 0) found = k;
        if (found < 0)
            return fg_fail(in, "SetDebugLogging: unknown log category '%s'", categories[i] ? categories[i] : "(null)");
        want[found] = 1;
    }
    in->logging_on = on != 0;
    for (int k = 0; k < N_CATS; k++) in->category_on[k] = n ? want[k] : 1;
    return FG_OK;
}

int fg_enter_initialization(FgInstance *in, double start_time)
{
    if (!fg_allowed(in, "EnterInitializationMode", M_(S_INSTANTIATED))) return FG_ERROR;
    if (!isfinite(start_time)) return fg_fail(in, "start time is not finite");
    in->s.core.t = start_time;
    in->s.assembled = 0;
    in->s.have_rhs = 0;
    in->s.state = S_INIT;
    return FG_OK;
}

#if FMIGEN_NMASS_CHECKS > 0 && NP > 0
/* Every body's mass >= 0 and its inertia positive semidefinite at the
 * tunable parameters p (generated fmigen_mass_check): 0, else 1 with the
 * message naming the first condition that fails.  Why: the embedding needs
 * only BᵀMB positive definite, which a negative mass on one body can keep
 * (a four-bar's coupler at -0.2 kg ran with fmi2OK). */
static int fg_check_masses(FgInstance *in, const char *fn, const double *p, const char *suffix)
{
    double bad = 0.0;
    int minor = -1;
    const int j = fmigen_mass_check(p, &bad, &minor);
    if (!j) return 0;
    if (minor < 0)
        fg_fail(in, "%s: these parameter values make %s %g; a mass must be >= 0%s", fn,
                fmigen_mass_check_labels[j - 1], bad, suffix);
    else
        fg_fail(in, "%s: these parameter values make %s not positive semidefinite: %s = %g < 0%s", fn,
                fmigen_mass_check_labels[j - 1], fmigen_psd3_minors[minor], bad, suffix);
    return 1;
}
#endif

int fg_exit_initialization(FgInstance *in)
{
    if (!fg_allowed(in, "ExitInitializationMode", M_(S_INIT))) return FG_ERROR;
#if FMIGEN_NMASS_CHECKS > 0 && NP > 0
    /* the parameters as the importer left them (fg_set_real tests them only
     * after initialization) */
    if (fg_check_masses(in, "ExitInitializationMode", in->s.core.p, "")) {
        in->s.state = S_ERROR;
        return FG_ERROR;
    }
#endif
    if (fmigen_core_assemble(&in->s.core)) {
        in->s.state = S_ERROR;
        return fg_fail(in, "the start cannot be assembled: %s", fmigen_core_message(&in->s.core));
    }
    in->s.assembled = 1;
    in->s.have_rhs = 0;
    in->s.last_successful_time = in->s.core.t;
    in->s.state = in->kind == FG_ME ? S_EVENT : S_STEP;
    in->s.next_event = next_time_event(in->s.core.t);
    fmigen_core_observe(&in->s.core);
    fg_log(in, FG_OK, CAT_EVENTS, "initialized at t=%.17g; constraint residual %.3g", in->s.core.t,
           in->s.core.residual);
    return FG_OK;
}

int fg_terminate(FgInstance *in)
{
    if (!fg_allowed(in, "Terminate", M_(S_STEP) | M_(S_DISCARDED) | M_(S_EVENT) | M_(S_CONT))) return FG_ERROR;
    in->s.state = S_TERMINATED;
    fg_log(in, FG_OK, CAT_EVENTS, "terminated at t=%.17g", in->s.core.t);
    return FG_OK;
}

int fg_reset(FgInstance *in)
{
    if (!fg_allowed(in, "Reset", ANY_LIVE)) return FG_ERROR;
    defaults(in);
    fg_log(in, FG_OK, CAT_EVENTS, "reset to the start values");
    return FG_OK;
}

/* ---- variable access ---- */

/* Dependent coordinates, velocities, residual and outputs are computed from
 * t, q_i, v_i, p, u on demand (initialization mode, Model Exchange, or after
 * an input change).  Done on a copy so a failure changes nothing. */
static int ensure_assembled(FgInstance *in)
{
    if (in->s.assembled) return 0;
    FmigenCore tmp = in->s.core;
    /* an augmented formulation solves q_d, v_d only for the start; after
     * initialization its q, v are the integrated states */
    const int project = !FMIGEN_FORMULATION || in->s.state == S_INIT;
    if (project ? fmigen_core_assemble(&tmp) : fmigen_core_refresh(&tmp)) {
        /* the error as recorded (formatted when read: eval_failure) */
        in->s.core.err_kind = tmp.err_kind;
        in->s.core.err_code = tmp.err_code;
        in->s.core.err_t = tmp.err_t;
        memcpy(in->s.core.err_x, tmp.err_x, sizeof tmp.err_x);
        memcpy(in->s.core.err_q, tmp.err_q, sizeof tmp.err_q);
        return 1;
    }
    /* Model Exchange outside initialization: the importer's integrator
     * evaluates trial states; the warm start moves only when it accepts
     * one (CompletedIntegratorStep), so an evaluation depends on (t, x)
     * and the last accepted state, never on the trials before it */
    if (in->kind == FG_ME && in->s.state != S_INIT) tmp.base = in->s.core.base;
    in->s.core = tmp;
    in->s.assembled = 1;
    return 0;
}

static int ensure_rhs(FgInstance *in)
{
    if (in->s.have_rhs) return 0;
    double x[FMIGEN_DIM(FG_NX)];
    fmigen_state_get(&in->s.core, x);
    /* Model Exchange: the importer's integrator evaluates trial states; each
     * solve predicts from the last accepted state (CompletedIntegratorStep),
     * so equal (t, x) give equal derivatives whatever was evaluated between */
    const int accept = !(in->kind == FG_ME && in->s.state != S_INIT);
    /* A load piecewise in t switches at its breakpoint only in Event Mode:
     * in Continuous-Time Mode at or past the announced time event the
     * derivatives are those of the branch before it (evaluated just before
     * the breakpoint), so the integrator's last step up to the event (an
     * implicit method evaluates f at its end; CVode may also step past and
     * interpolate back) sees a continuous right-hand side. */
    double t = in->s.core.t;
    if (in->s.state == S_CONT && t >= in->s.next_event) t = nextafter(in->s.next_event, -INFINITY);
    if ((accept ? fmigen_core_rhs_accept : fmigen_core_rhs)(&in->s.core, t, x, in->s.dx)) return 1;
    in->s.have_rhs = 1;
    return 0;
}

/* A model evaluation that fails is a Discard in Model Exchange (the importer
 * may retry with a smaller step) and an Error elsewhere. */
static int eval_failure(FgInstance *in, const char *what)
{
    int st = (in->s.state == S_EVENT || in->s.state == S_CONT) ? FG_DISCARD : FG_ERROR;
    fg_log(in, st, CAT_ERROR, "%s: %s", what, fmigen_core_message(&in->s.core));
    return st;
}

/* A value reference's variable name, for messages (fmu_variables.h) */
static const char *fg_vr_name(unsigned r)
{
#ifdef FMIGEN_VR_NAMES
    static const char *const names[] = FMIGEN_VR_NAMES;
    return r < sizeof names / sizeof names[0] ? names[r] : "an unknown variable";
#else
    (void)r;
    return "a variable";
#endif
}

int fg_get_real(FgInstance *in, const unsigned vr[], size_t n, double value[])
{
    if (!fg_allowed(in, "GetReal/GetFloat64", ANY_LIVE & ~M_(S_INSTANTIATED))) return FG_ERROR;
    if (n && (!vr || !value)) return fg_fail(in, "GetReal/GetFloat64: NULL array");
    if (in->s.state != S_ERROR && in->s.state != S_DISCARDED && ensure_assembled(in))
        return eval_failure(in, in->s.state == S_INIT ? "the start cannot be assembled" : "GetReal");
    /* deferred angles, residual and outputs, each only when asked for: an
     * independent coordinate is at hand, a dependent one may be a deferred
     * angle (atan2 of its sin/cos).  Which coordinates are independent: the
     * partition of the solve the angles come from (after a failed step that
     * switched, c->part is the new one while the restored state is the
     * memo's). */
    const unsigned char *needs = in->read_needs[in->s.core.solved.part];
    int what = 0;
    /* unrolled: the loops' own counting and branches (this function, 62
     * reals: 1,050 -> 770 instructions) */
    FMIGEN_UNROLL_4 for (size_t i = 0; i < n; i++) {
        if (vr[i] >= VR_END) return fg_fail(in, "GetReal/GetFloat64: unknown value reference %u", vr[i]);
        what |= needs[vr[i]];
    }
    if (what & FMIGEN_OBSERVE_ALL) fmigen_core_observe_some(&in->s.core, what & FMIGEN_OBSERVE_ALL);
    if (!(what & FG_READ_SLOW)) {
        FMIGEN_UNROLL_4 for (size_t i = 0; i < n; i++) value[i] = *in->value_of[vr[i]];
        return FG_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned r = vr[i];
        if (in->value_of[r]) value[i] = *in->value_of[r];
        else if (r >= VR_A && r < VR_TIME && in->kind == FG_ME) {
            if (ensure_rhs(in)) return eval_failure(in, "GetReal (acceleration)");
            value[i] = in->s.dx[FG_NA + (r - VR_A)];
        }
        else return fg_fail(in, "GetReal/GetFloat64: unknown value reference %u", r);
    }
    return FG_OK;
}

/* Parameters of an augmented formulation (FMIGEN_FP_NAMES / _STRICT from
 * model_config.h): finite, > 0 (stiffness-like) or >= 0 (damping-like). */
#if FMIGEN_NFP > 0
static const char *const fg_fp_names[] = FMIGEN_FP_NAMES;
static const int fg_fp_strict[] = FMIGEN_FP_STRICT;
#else
static const char *const fg_fp_names[] = {""};
static const int fg_fp_strict[] = {1};
#endif

static int fg_formulation_parameter_ok(int k, double value)
{
    return isfinite(value) && (fg_fp_strict[k] ? value > 0.0 : value >= 0.0);
}

static int is_independent(int i)
{
    for (int k = 0; k < NI; k++) if (fmigen_independent[k] == i) return 1;
    return 0;
}

/* The inputs' values at the current time, their slopes kept: u + du (t − tu)
 * becomes u with tu = t, so that a new value or slope of one input does not
 * move the others. */
static void fold_inputs(FmigenCore *k)
{
    if (!k->interpolate) { k->tu = k->t; return; }
    for (int j = 0; j < NU; j++) k->u[j] += k->du[j] * (k->t - k->tu);
    k->tu = k->t;
}

static void update_interpolate(FmigenCore *k)
{
    k->interpolate = 0;
    for (int j = 0; j < NU; j++) if (k->du[j] != 0.0) k->interpolate = 1;
}

/* The hard point (model.Parameter.range) that tunable parameter k is, or -1. */
static int hard_point_of(int k)
{
#if FMIGEN_NHARD > 0
    for (int h = 0; h < FMIGEN_NHARD; h++)
        if (fmigen_hard_index[h] == k) return h;
#endif
    (void)k;
    return -1;
}

int fg_set_real(FgInstance *in, const unsigned vr[], size_t n, const double value[])
{
    if (!fg_allowed(in, "SetReal/SetFloat64",
                    M_(S_INSTANTIATED) | M_(S_INIT) | M_(S_STEP) | M_(S_EVENT) | M_(S_CONT)))
        return FG_ERROR;
    if (n && (!vr || !value)) return fg_fail(in, "SetReal/SetFloat64: NULL array");
    const int before_init = in->s.state == S_INSTANTIATED || in->s.state == S_INIT;
    /* Tunable parameters (masses, inertias, gravity, force amplitudes: the
     * variables of VR_P) change between communication steps (Co-Simulation)
     * or in Event Mode (Model Exchange), never while the importer integrates
     * (FMI: a parameter is constant in Continuous-Time Mode, and a jump there
     * would break its error control). */
    const int tunable_now = before_init || in->s.state == S_STEP || in->s.state == S_EVENT;
    /* Validate everything first so a rejected call changes nothing. */
    for (size_t i = 0; i < n; i++) {
        unsigned r = vr[i];
        if (!isfinite(value[i]))
            return fg_fail(in, "SetReal/SetFloat64: %s (value reference %u) set to a non-finite value (NaN or Inf)",
                           fg_vr_name(r), r);
        int ok = 0;
        if (r < VR_RES) ok = (before_init || FMIGEN_KINEMATIC) && is_independent(r < VR_V ? (int)r : (int)(r - VR_V));
        else if (r >= VR_U && r < VR_P) ok = 1;
        else if (r >= VR_P && r < VR_H && hard_point_of((int)(r - VR_P)) >= 0) {
            /* geometry: the start is assembled from it at ExitInitializationMode,
             * and only the declared range was swept at build time */
            const int h = hard_point_of((int)(r - VR_P));
            if (!before_init)
                return fg_fail(in, "SetReal/SetFloat64: hard point %s (value reference %u) is a fixed parameter: it "
                               "can be set only before ExitInitializationMode, which assembles the start from it",
                               fg_vr_name(r), r);
#if FMIGEN_NHARD > 0
            if (!(value[i] >= fmigen_hard_lower[h] && value[i] <= fmigen_hard_upper[h]))
                return fg_fail(in, "SetReal/SetFloat64: hard point %s (value reference %u) set to %.17g, outside its "
                               "declared range [%.17g, %.17g], the only values the build swept (nothing was set)",
                               fg_vr_name(r), r, value[i], fmigen_hard_lower[h], fmigen_hard_upper[h]);
#endif
            ok = 1;
        }
        else if (r >= VR_P && r < VR_H) {
            if (!tunable_now)
                return fg_fail(in, "SetReal/SetFloat64: tunable parameter %s (value reference %u) can be set between "
                               "steps (Co-Simulation) or in Event Mode (Model Exchange), not in %s", fg_vr_name(r), r,
                               state_names[in->s.state]);
            ok = 1;
        }
        else if (r == VR_H) {
            ok = before_init;
            if (ok && !(value[i] > 0.0))
                return fg_fail(in, "internal_step must be > 0 (got %g)", value[i]);
        }
        else if (r >= VR_F && r < VR_END) {
            ok = before_init;
            if (ok && !fg_formulation_parameter_ok((int)(r - VR_F), value[i]))
                return fg_fail(in, "formulation parameter %s must be %s (got %g)",
                               fg_fp_names[r - VR_F], fg_fp_strict[r - VR_F] ? "> 0" : ">= 0", value[i]);
        }
        /* internal_step and a formulation's parameters are fixed: the step
         * belongs to the integrator's state (and FMI 3's
         * fixedInternalStepSize), and geometry is not a variable at all (it
         * is baked into the Gröbner basis) */
        if (!ok && !before_init && (r == VR_H || (r >= VR_F && r < VR_END)))
            return fg_fail(in, "SetReal/SetFloat64: %s (value reference %u) is a fixed parameter: it can be set "
                           "only before ExitInitializationMode", r == VR_H ? "internal_step" : fg_fp_names[r - VR_F], r);
        if (!ok)
            return fg_fail(in, "SetReal/SetFloat64: %s (value reference %u) cannot be set %s", fg_vr_name(r), r,
                           before_init ? "(it is calculated or unknown)" : "after initialization");
    }
    FmigenCore *k = &in->s.core;
#if FMIGEN_NMASS_CHECKS > 0 && NP > 0
    if (!before_init) {
        /* the bodies' masses and inertias as the new values make them, before
         * anything changes (before initialization ExitInitializationMode
         * tests them: a condition on two parameters set one per call would
         * fail in between) */
        double p[NP];
        int any = 0;
        memcpy(p, k->p, sizeof p);
        for (size_t i = 0; i < n; i++)
            if (vr[i] >= VR_P && vr[i] < VR_H) { p[vr[i] - VR_P] = value[i]; any = 1; }
        if (any && fg_check_masses(in, "SetReal/SetFloat64", p, " (nothing was set)")) return FG_ERROR;
    }
#endif
    /* Coordinates or velocities about to change: complete the current
     * state's pending angles, residual and outputs from the state they
     * belong to, so that a step that then fails and restores this state
     * (with the new inputs) still reports its own. */
    for (size_t i = 0; i < n; i++)
        if (vr[i] < VR_RES) { fmigen_core_observe(k); break; }
    int changed = 0;
    fold_inputs(k);
    for (size_t i = 0; i < n; i++) {
        const unsigned r = vr[i];
        double *dst = in->value_of[r];   /* validated above: a settable slot */
        /* a new input value starts without a slope until the importer gives one */
        if (r >= VR_U && r < VR_P && k->du[r - VR_U] != 0.0) { k->du[r - VR_U] = 0.0; changed = 1; }
        if (*dst != value[i]) changed = 1;
        *dst = value[i];
    }
    update_interpolate(k);
    if (changed) { in->s.assembled = 0; in->s.have_rhs = 0; }
    return FG_OK;
}

int fg_set_input_derivatives(FgInstance *in, const unsigned vr[], size_t n, const int order[], const double value[])
{
    if (!in) return FG_ERROR;
    if (FMIGEN_KINEMATIC)
        return fg_fail(in, "SetRealInputDerivatives: a kinematic FMU's inputs are its coordinates and velocities; "
                       "set the velocities instead");
    for (size_t i = 0; i < n; i++) {
        if (!(vr[i] >= VR_U && vr[i] < VR_P))
            return fg_fail(in, "SetRealInputDerivatives: %s (value reference %u) is not an input",
                           fg_vr_name(vr[i]), vr[i]);
        if (order[i] != 1)
            return fg_fail(in, "SetRealInputDerivatives: order %d for %s (value reference %u): only first "
                           "derivatives are used (the inputs are interpolated linearly)", order[i],
                           fg_vr_name(vr[i]), vr[i]);
        if (!isfinite(value[i]))
            return fg_fail(in, "SetRealInputDerivatives: %s (value reference %u) given a non-finite derivative",
                           fg_vr_name(vr[i]), vr[i]);
    }
    FmigenCore *k = &in->s.core;
    fold_inputs(k);
    for (size_t i = 0; i < n; i++) k->du[vr[i] - VR_U] = value[i];
    update_interpolate(k);
    in->s.have_rhs = 0;
    return FG_OK;
}

int fg_no_variables(FgInstance *in, const char *fn, const char *type, size_t n)
{
    if (!in) return FG_ERROR;
    if (!n) return FG_OK;
    return fg_fail(in, "%s: this FMU has no %s variables", fn, type);
}

/* ---- Co-Simulation ---- */

int fg_do_step(FgInstance *in, double t, double H)
{
    if (!fg_allowed(in, "DoStep", M_(S_STEP))) return FG_ERROR;
    FmigenCore *c = &in->s.core;
    if (!(H > 0.0) || !isfinite(H))
        return fg_fail(in, "DoStep: communication step size must be > 0 (got %g)", H);
    /* The importer's grid (start + n·H) and the FMU's summed time differ by
     * rounding: a few ulps of t, relative, plus a tiny part of the step. */
    const double grid_tol = 64 * DBL_EPSILON * fmax(fabs(t), fabs(c->t)) + 1e-9 * H + 1e-300;
    if (!isfinite(t) || fabs(t - c->t) > grid_tol)
        return fg_fail(in, "DoStep: currentCommunicationPoint %.17g does not match the FMU time %.17g", t, c->t);
    /* H/h in double: a huge H must be refused, not cast to an integer out of
     * range (undefined behaviour) and skipped with OK */
    const double internal_steps = ceil(H / c->h);
    if (!(internal_steps <= FMIGEN_MAX_STEPS_PER_CALL))
        return fg_fail(in, "DoStep: a communication step of %g s at the internal step %g s needs %.3g internal "
                       "steps, more than the %.0f one call may take (FMIGEN_MAX_STEPS_PER_CALL); use shorter "
                       "communication steps or a larger internal_step", H, c->h, internal_steps,
                       (double)FMIGEN_MAX_STEPS_PER_CALL);
    c->t = t;  /* absorb rounding of the importer's time grid */
    const int switches = c->switches;
    if (fmigen_core_step(c, H)) {
        /* The step recorded its error as numbers; the message is formatted
         * here, after it, and not deferred like a switch: FMI 2 and 3 say
         * that when a function returns Discard the logger has been called,
         * and an importer may call nothing more (fmpy's FMI 3 master raises
         * at once).  It is the run's last doStep. */
        fg_log(in, FG_DISCARD, CAT_ERROR, "%s", fmigen_core_message(c));
        in->s.state = S_DISCARDED;
        in->s.last_successful_time = c->t;
        in->s.terminated = 1;
        return FG_DISCARD;
    }
    in->s.assembled = 1;
    in->s.last_successful_time = c->t;
    if (c->switches != switches) in->report_pending |= FG_REPORT_SWITCH;
    return FG_OK;
}

/* The coordinate switch of the last doStep, as an event (logEvents): the
 * partition and count are still the step's, since every call after it
 * reports it first.  Formatted only when the category is logged. */
static void report_switch(FgInstance *in)
{
    if (!(in->logging_on && in->category_on[CAT_EVENTS])) return;
    const FmigenCore *c = &in->s.core;
    const FmigenPartition *P = FMIGEN_PART(c);
    char names[256] = "";
    for (int k = 0, n = 0; k < NI && n >= 0 && (size_t)n < sizeof names; k++)
        n += snprintf(names + n, sizeof names - (size_t)n, "%s%s", k ? ", " : "",
                      fmigen_coordinate_names[P->independent[k]]);
    fg_log(in, FG_OK, CAT_EVENTS, "coordinate switching: independent coordinates now %s "
           "(the previous set neared a singular configuration); %d switch(es) so far", names, c->switches);
}

void fg_report(FgInstance *in)
{
    if (!in || !in->report_pending) return;
    const int pending = in->report_pending;
    in->report_pending = 0;   /* first: fg_log reports what is pending, too */
    if (pending & FG_REPORT_SWITCH) report_switch(in);
}

/* ---- Model Exchange ---- */

#define ME_MODES (M_(S_EVENT) | M_(S_CONT))

int fg_enter_event_mode(FgInstance *in)
{
    if (!fg_allowed(in, "EnterEventMode", ME_MODES)) return FG_ERROR;
    in->s.state = S_EVENT;
    return FG_OK;
}

int fg_enter_continuous_time_mode(FgInstance *in)
{
    if (!fg_allowed(in, "EnterContinuousTimeMode", M_(S_EVENT))) return FG_ERROR;
    in->s.state = S_CONT;
    return FG_OK;
}

int fg_update_discrete_states(FgInstance *in, int *defined, double *next_time)
{
    if (!fg_allowed(in, "NewDiscreteStates/UpdateDiscreteStates", M_(S_EVENT))) return FG_ERROR;
    /* no discrete states; a breakpoint at or before t has now been passed, so
     * the continuous-time derivatives take the branch after it */
    const double next = next_time_event(in->s.core.t);
    if (next != in->s.next_event) { in->s.next_event = next; in->s.have_rhs = 0; }
    *defined = isfinite(next);
    *next_time = isfinite(next) ? next : 0.0;
    if (*defined) fg_log(in, FG_OK, CAT_EVENTS, "t=%.17g: next time event at t=%.17g", in->s.core.t, next);
    return FG_OK;
}

int fg_set_time(FgInstance *in, double t)
{
    if (!fg_allowed(in, "SetTime", ME_MODES)) return FG_ERROR;
    if (!isfinite(t)) return fg_fail(in, "SetTime: time is not finite");
    if (t != in->s.core.t) { in->s.core.t = t; in->s.assembled = 0; in->s.have_rhs = 0; }
    return FG_OK;
}

int fg_set_states(FgInstance *in, const double x[], size_t nx)
{
    if (!fg_allowed(in, "SetContinuousStates", ME_MODES)) return FG_ERROR;
    if (nx != FG_NX) return fg_fail(in, "SetContinuousStates: expected %d states, got %lu", FG_NX, (unsigned long)nx);
    if (nx && !x) return fg_fail(in, "SetContinuousStates: NULL array");
    for (size_t i = 0; i < nx; i++)
        if (!isfinite(x[i])) return fg_fail(in, "SetContinuousStates: state %lu is not finite", (unsigned long)i);
    fmigen_state_set(&in->s.core, x);
    in->s.assembled = 0;
    in->s.have_rhs = 0;
    return FG_OK;
}

#define ME_READ (M_(S_INIT) | M_(S_EVENT) | M_(S_CONT) | M_(S_TERMINATED) | M_(S_ERROR))

int fg_get_states(FgInstance *in, double x[], size_t nx)
{
    if (!fg_allowed(in, "GetContinuousStates", ME_READ)) return FG_ERROR;
    if (nx != FG_NX) return fg_fail(in, "GetContinuousStates: expected %d states, got %lu", FG_NX, (unsigned long)nx);
    if (nx && !x) return fg_fail(in, "GetContinuousStates: NULL array");
    fmigen_state_get(&in->s.core, x);
    return FG_OK;
}

int fg_get_derivatives(FgInstance *in, double dx[], size_t nx)
{
    if (!fg_allowed(in, "GetDerivatives", ME_READ)) return FG_ERROR;
    if (nx != FG_NX) return fg_fail(in, "GetDerivatives: expected %d derivatives, got %lu", FG_NX, (unsigned long)nx);
    if (nx && !dx) return fg_fail(in, "GetDerivatives: NULL array");
    if (ensure_rhs(in)) return eval_failure(in, "GetDerivatives");
    memcpy(dx, in->s.dx, nx * sizeof(double));
    return FG_OK;
}

int fg_get_nominals(FgInstance *in, double x[], size_t nx)
{
    if (!fg_allowed(in, "GetNominalsOfContinuousStates", ANY_LIVE)) return FG_ERROR;
    if (nx != FG_NX) return fg_fail(in, "GetNominalsOfContinuousStates: expected %d states, got %lu", FG_NX, (unsigned long)nx);
    if (nx && !x) return fg_fail(in, "GetNominalsOfContinuousStates: NULL array");
    for (size_t i = 0; i < nx; i++) x[i] = 1.0;
    return FG_OK;
}

int fg_get_event_indicators(FgInstance *in, double ei[], size_t ni)
{
    if (!fg_allowed(in, "GetEventIndicators", ME_READ)) return FG_ERROR;
    /* ni = 0 is always accepted: FMI 3 declares no indicators yet (its
     * EventIndicator elements need variables to refer to) */
    if (ni == 0) return FG_OK;
    if (ni != FMIGEN_NZ)
        return fg_fail(in, "GetEventIndicators: this FMU has %d event indicators (got %lu)", FMIGEN_NZ, (unsigned long)ni);
    if (!ei) return fg_fail(in, "GetEventIndicators: NULL array");
#if FMIGEN_NZ > 0
    /* the complete q, v of the current state (the deferred angles too) */
    if (ensure_assembled(in)) return eval_failure(in, "GetEventIndicators");
    FmigenCore *c = &in->s.core;
    fmigen_core_observe_some(c, FMIGEN_OBSERVE_ANGLES);
    double ubuf[FMIGEN_DIM(NU)];
    const double *u = fmigen_core_inputs(c, c->t, ubuf);
    FMIGEN_MODEL_FN(fmigen_event_indicators)(c->t, c->q, c->v, c->p, u, ei);
#endif
    return FG_OK;
}

int fg_completed_integrator_step(FgInstance *in, int *enter_event)
{
    *enter_event = 0;
    if (!fg_allowed(in, "CompletedIntegratorStep", M_(S_CONT))) return FG_ERROR;
    /* The importer's step is accepted here: the kinematics must assemble. */
    if (ensure_assembled(in)) return eval_failure(in, "CompletedIntegratorStep");
    /* the importer accepted this state: the next solves predict from it */
    FmigenCore *c = &in->s.core;
#if !FMIGEN_FORMULATION
    fmigen_base_accept(&c->base, &FMIGEN_MODEL_FN(fmigen_partitions)[c->solved.part], c->t, c->q, c->v,
                       FMIGEN_MEMO_SOL(&c->solved), FMIGEN_MEMO_TRIG(&c->solved));
#if FMIGEN_LIMIT_TEST
    /* the accepted states' velocities show a limit position of the
     * partition ahead (fmigen_core_limit): the embedded ODE is singular
     * there, and the importer's next steps would cross it on a guess */
    if (fmigen_core_limit(c)) return eval_failure(in, "CompletedIntegratorStep");
#endif
#endif
    in->s.last_successful_time = c->t;
    *enter_event = c->t >= in->s.next_event;
    return FG_OK;
}

/* ---- FMU state: one fixed-size struct ---- */

static const char *snapshot_invalid(const FgSnapshot *s);

/* FMI lets a master recover from an Error by restoring a saved state, so
 * Get/SetFMUState work in every state, S_ERROR included. */
int fg_get_state(FgInstance *in, void **state)
{
    if (!fg_allowed(in, "GetFMUState", ANY_LIVE)) return FG_ERROR;
    if (!state) return fg_fail(in, "GetFMUState: NULL pointer");
    FgSnapshot *snap = *state ? *state : calloc(1, sizeof *snap);
    if (!snap) return fg_fail(in, "GetFMUState: out of memory");
    *snap = in->s;
    *state = snap;
    return FG_OK;
}

int fg_set_state(FgInstance *in, const void *state)
{
    if (!fg_allowed(in, "SetFMUState", ANY_LIVE)) return FG_ERROR;
    if (!state) return fg_fail(in, "SetFMUState: NULL state");
    const char *why = snapshot_invalid(state);
    if (why) return fg_fail(in, "SetFMUState: not a valid state of this FMU (%s)", why);
    in->s = *(const FgSnapshot *)state;
    return FG_OK;
}

int fg_free_state(FgInstance *in, void **state)
{
    if (!in) return FG_ERROR;
    if (state && *state) { free(*state); *state = NULL; }
    return FG_OK;
}

/* Serialized layout: a header (magic, format version, total size, GUID)
 * and the snapshot.  The snapshot is this build's struct, so the GUID (which
 * changes with the model) and the size tie the bytes to this binary; the
 * fields are then checked one by one, because bytes from a file or a network
 * are never trusted to index a table. */
#define FG_STATE_MAGIC 0x53474d46u   /* "FMGS" */
#define FG_STATE_VERSION 7u   /* 2: next_event; 3: the embedding half in the memo; 4: its two halves; 5: the angles' turns in the base; 6: the limit test's velocity history; 7: the error record */
typedef struct {
    unsigned magic, version;
    unsigned long long size;
    char guid[FMIGEN_GUID_SIZE];
} FgStateHeader;

size_t fg_serialized_size(void) { return sizeof(FgStateHeader) + sizeof(FgSnapshot); }

static const char *snapshot_invalid(const FgSnapshot *s)
{
    const FmigenCore *c = &s->core;
    if ((unsigned)s->state > (unsigned)S_ERROR) return "unknown life-cycle state";
    if ((unsigned)c->part >= (unsigned)FMIGEN_DIM(NPART) || (unsigned)c->solved.part >= (unsigned)FMIGEN_DIM(NPART))
        return "partition index out of range";
    if ((unsigned)c->solved.side > 1u) return "memo half out of range";
    if (c->solver != FMIGEN_EULER && c->solver != FMIGEN_RK4 && c->solver != FMIGEN_SYMPLECTIC)
        return "unknown solver";
    if (!(c->h > 0.0) || !isfinite(c->h)) return "internal step not > 0";
    if (!isfinite(c->t) || !isfinite(s->last_successful_time)) return "non-finite time";
    if (isnan(s->next_event)) return "time event is NaN";
    if (c->switches < 0) return "negative switch count";
    if ((unsigned)c->err_kind > (unsigned)FMIGEN_ERR_AUGMENTED_SINGULAR) return "error kind out of range";
    for (size_t i = 0; i < sizeof c->message; i++) if (!c->message[i]) return NULL;
    return "unterminated message";
}

int fg_serialize(FgInstance *in, const void *state, unsigned char bytes[], size_t size)
{
    if (!in) return FG_ERROR;
    if (!state || !bytes || size < fg_serialized_size())
        return fg_fail(in, "SerializeFMUState: NULL state or buffer smaller than %lu bytes", (unsigned long)fg_serialized_size());
    FgStateHeader h;
    memset(&h, 0, sizeof h);
    h.magic = FG_STATE_MAGIC;
    h.version = FG_STATE_VERSION;
    h.size = fg_serialized_size();
    memcpy(h.guid, fmigen_model_guid, FMIGEN_GUID_SIZE);
    memcpy(bytes, &h, sizeof h);
    memcpy(bytes + sizeof h, state, sizeof(FgSnapshot));
    return FG_OK;
}

int fg_deserialize(FgInstance *in, const unsigned char bytes[], size_t size, void **state)
{
    if (!in) return FG_ERROR;
    if (!bytes || !state) return fg_fail(in, "DeserializeFMUState: NULL bytes or state pointer");
    FgStateHeader h;
    if (size < sizeof h) return fg_fail(in, "DeserializeFMUState: %lu bytes are too few for a state", (unsigned long)size);
    memcpy(&h, bytes, sizeof h);
    /* The snapshot is this platform's struct as it lies in memory: doubles
     * and integers in its byte order, fields at its C layout.  Bytes from a
     * machine of the other byte order show it in the magic, read swapped;
     * they are refused, not converted (a conversion would need every
     * field's type), and so are bytes of another layout (the size). */
    const unsigned swapped = (FG_STATE_MAGIC >> 24) | ((FG_STATE_MAGIC >> 8) & 0xff00u) |
                             ((FG_STATE_MAGIC << 8) & 0xff0000u) | (FG_STATE_MAGIC << 24);
    if (h.magic == swapped) {
        const unsigned one = 1;
        unsigned char low;
        memcpy(&low, &one, 1);
        const char *here = low ? "little" : "big", *there = low ? "big" : "little";
        return fg_fail(in, "DeserializeFMUState: the state was serialized on a %s-endian platform and this one is "
                       "%s-endian; an FMU state holds the platform's own bytes and restores only on a platform of "
                       "the same byte order and data layout (for another, replay the inputs from the start or "
                       "set the state variables with SetReal)", there, here);
    }
    if (h.magic != FG_STATE_MAGIC) return fg_fail(in, "DeserializeFMUState: the bytes are not an fmigen FMU state");
    if (h.version != FG_STATE_VERSION)
        return fg_fail(in, "DeserializeFMUState: state format version %u, this FMU reads %u", h.version, FG_STATE_VERSION);
    if (memcmp(h.guid, fmigen_model_guid, FMIGEN_GUID_SIZE) != 0)
        return fg_fail(in, "DeserializeFMUState: the state belongs to another model or build (GUID differs)");
    if (h.size != fg_serialized_size())
        return fg_fail(in, "DeserializeFMUState: the state was serialized by a build of this FMU with another data "
                       "layout (%lu bytes, here %lu: a 32-bit against a 64-bit platform, say); it restores only "
                       "on a platform of the same layout", (unsigned long)h.size, (unsigned long)fg_serialized_size());
    if (size != fg_serialized_size())
        return fg_fail(in, "DeserializeFMUState: %lu bytes, a state of this FMU has %lu", (unsigned long)size,
                       (unsigned long)fg_serialized_size());
    FgSnapshot tmp;
    memcpy(&tmp, bytes + sizeof h, sizeof tmp);
    const char *why = snapshot_invalid(&tmp);
    if (why) return fg_fail(in, "DeserializeFMUState: corrupt state (%s)", why);
    /* the last error's record indexes a table (the block's failure text)
     * when formatted; a restored state has none pending */
    tmp.core.err_kind = FMIGEN_ERR_NONE;
    FgSnapshot *snap = *state ? *state : calloc(1, sizeof *snap);
    if (!snap) return fg_fail(in, "DeserializeFMUState: out of memory");
    *snap = tmp;
    *state = snap;
    return FG_OK;
}
