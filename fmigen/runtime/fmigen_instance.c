/* fmigen instance layer: the FMI-version-independent half of the glue (see
 * fmigen_instance.h).  No globals and no static mutable state; no model's
 * header: the model's sizes and tables come from fg_model. */
#include <float.h>
#include <stdarg.h>
#include <stddef.h>
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

/* ---- where the model's parts of an instance are ---- */

/* the whole core, which the snapshot holds from its head on */
static FmigenCore *core_of(FgInstance *in)
{
    return (FmigenCore *)(void *)&in->s.core;
}

/* the core's group of doubles at `offset` (FgModel: q, v, p, u, du, y, fp) */
static double *core_array(FgInstance *in, size_t offset)
{
    return (double *)(void *)((char *)&in->s.core + offset);
}

/* the partition the memo's solve belongs to (FmigenSolved.part) */
static int memo_part(const FgInstance *in)
{
    int part;
    memcpy(&part, (const char *)&in->s.core + fg_model.memo_part, sizeof part);
    return part;
}

/* The core's bytes rounded up to whole doubles: the state derivatives
 * follow it in the snapshot. */
static size_t core_bytes(void)
{
    return (fg_model.core_size + sizeof(double) - 1) / sizeof(double) * sizeof(double);
}

static size_t fg_snapshot_size(void)
{
    return offsetof(FgSnapshot, core) + core_bytes() + (size_t)fg_model.nx * sizeof(double);
}

/* Model Exchange: the state derivatives (fg_model.nx) of the snapshot's state */
static double *snapshot_dx(FgSnapshot *s)
{
    return (double *)(void *)((char *)&s->core + core_bytes());
}

/* The first time event after t: a breakpoint of a load piecewise in t
 * (fg_model.event_times, sorted), or INFINITY. */
static double next_time_event(double t)
{
#if FMIGEN_TIME_EVENTS
    for (int k = 0; k < fg_model.nevents; k++)
        if (fg_model.event_times[k] > t) return fg_model.event_times[k];
#endif
    (void)t;
    return INFINITY;
}

static void defaults(FgInstance *in)
{
    memset(&in->s, 0, fg_snapshot_size());
    fmigen_core_init(core_of(in), fmigen_default_solver);
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
    const FgModel *m = &fg_model;
    FmigenCoreHead *k = &in->s.core;
    for (unsigned r = 0; r < m->vr_end; r++) {
        double *src = NULL;
        unsigned char need = 0;
        if (r < m->vr_v) src = core_array(in, m->q) + (r - m->vr_q);
        else if (r < m->vr_res) src = core_array(in, m->v) + (r - m->vr_v);
        else if (r == m->vr_res) { src = &k->residual; need = FMIGEN_OBSERVE_RESIDUAL; }
        else if (r >= m->vr_u && r < m->vr_p) src = core_array(in, m->u) + (r - m->vr_u);
        else if (r >= m->vr_p && r < m->vr_h) src = core_array(in, m->p) + (r - m->vr_p);
        else if (r == m->vr_h) src = &k->h;
        else if (r >= m->vr_y && r < m->vr_a) { src = core_array(in, m->y) + (r - m->vr_y); need = FMIGEN_OBSERVE_OUTPUTS; }
        else if (r == m->vr_time) src = &k->t;
        else if (r >= m->vr_f) src = core_array(in, m->fp) + (r - m->vr_f);
        in->value_of[r] = src;
        for (int part = 0; part < m->npart; part++)
            in->read_needs[(size_t)part * m->vr_end + r] = need | (src ? 0 : FG_READ_SLOW) |
                                                          (r < m->vr_v ? FMIGEN_OBSERVE_ANGLES : 0);
    }
    /* a dependent coordinate may be a deferred angle, an independent one is at hand */
    for (int part = 0; part < m->npart; part++) {
        const int *independent = fg_core_independent(part);
        for (int i = 0; i < m->ni; i++)
            in->read_needs[(size_t)part * m->vr_end + m->vr_q + (unsigned)independent[i]] &=
                (unsigned char)~FMIGEN_OBSERVE_ANGLES;
    }
}

/* An instance is one allocation: FgInstance (its snapshot the model's
 * size), then SetReal's trial parameters, GetReal's pointers and what
 * reading each needs. */
static FgInstance *allocate_instance(void)
{
    const FgModel *m = &fg_model;
    const size_t head = (offsetof(FgInstance, s) + fg_snapshot_size() + sizeof(double) - 1) / sizeof(double) *
                        sizeof(double);
    const size_t params = (size_t)m->np * sizeof(double), pointers = m->vr_end * sizeof(double *);
    char *block = calloc(1, head + params + pointers + (size_t)m->npart * m->vr_end);
    if (!block) return NULL;
    FgInstance *in = (FgInstance *)(void *)block;
    in->trial_p = (double *)(void *)(block + head);
    in->value_of = (double **)(void *)(block + head + params);
    in->read_needs = (unsigned char *)(block + head + params + pointers);
    return in;
}

FgInstance *fg_new(const char *name, int kind, int logging_on, FgEmit emit, const void *callbacks, void *env)
{
    if (!name) return NULL;
    FgInstance *in = allocate_instance();
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

/* Every body's mass >= 0 and its inertia positive semidefinite at the
 * tunable parameters p (fg_core_mass_check): 0, else 1 with the message
 * naming the first condition that fails.  Why: the embedding needs only
 * BᵀMB positive definite, which a negative mass on one body can keep (a
 * four-bar's coupler at -0.2 kg ran with fmi2OK). */
static int fg_check_masses(FgInstance *in, const char *fn, const double *p, const char *suffix)
{
    double bad = 0.0;
    const char *label = NULL, *minor = NULL;
    if (!fg_core_mass_check(p, &bad, &label, &minor)) return 0;
    if (!minor)
        fg_fail(in, "%s: these parameter values make %s %g; a mass must be >= 0%s", fn, label, bad, suffix);
    else
        fg_fail(in, "%s: these parameter values make %s not positive semidefinite: %s = %g < 0%s", fn, label,
                minor, bad, suffix);
    return 1;
}

int fg_exit_initialization(FgInstance *in)
{
    if (!fg_allowed(in, "ExitInitializationMode", M_(S_INIT))) return FG_ERROR;
    /* the parameters as the importer left them (fg_set_real tests them only
     * after initialization) */
    if (fg_check_masses(in, "ExitInitializationMode", core_array(in, fg_model.p), "")) {
        in->s.state = S_ERROR;
        return FG_ERROR;
    }
    if (fmigen_core_assemble(core_of(in))) {
        in->s.state = S_ERROR;
        return fg_fail(in, "the start cannot be assembled: %s", fmigen_core_message(core_of(in)));
    }
    /* the static trims at the start just assembled, from the parameters
     * set (hard points included): fixed from here on */
    if (fmigen_core_trim(core_of(in))) {
        in->s.state = S_ERROR;
        return fg_fail(in, "ExitInitializationMode: %s", fmigen_core_message(core_of(in)));
    }
    in->s.assembled = 1;
    in->s.have_rhs = 0;
    in->s.last_successful_time = in->s.core.t;
    in->s.state = in->kind == FG_ME ? S_EVENT : S_STEP;
    in->s.next_event = next_time_event(in->s.core.t);
    fmigen_core_observe(core_of(in));
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
    /* an augmented formulation solves q_d, v_d only for the start; after
     * initialization its q, v are the integrated states */
    const int project = !fg_model.formulation || in->s.state == S_INIT;
    /* Model Exchange outside initialization: the importer's integrator
     * evaluates trial states; the warm start moves only when it accepts
     * one (CompletedIntegratorStep), so an evaluation depends on (t, x)
     * and the last accepted state, never on the trials before it */
    const int keep_base = in->kind == FG_ME && in->s.state != S_INIT;
    /* on failure the error as recorded (formatted when read: eval_failure) */
    /* in initialization the trims follow the start (ExitInitializationMode
     * solves them once more) */
    if (fg_core_assemble_trial(core_of(in), project, keep_base, in->s.state == S_INIT)) return 1;
    in->s.assembled = 1;
    return 0;
}

static int ensure_rhs(FgInstance *in)
{
    if (in->s.have_rhs) return 0;
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
    if (fg_core_derivatives(core_of(in), t, accept, snapshot_dx(&in->s))) return 1;
    in->s.have_rhs = 1;
    return 0;
}

/* A model evaluation that fails is a Discard in Model Exchange (the importer
 * may retry with a smaller step) and an Error elsewhere. */
static int eval_failure(FgInstance *in, const char *what)
{
    int st = (in->s.state == S_EVENT || in->s.state == S_CONT) ? FG_DISCARD : FG_ERROR;
    fg_log(in, st, CAT_ERROR, "%s: %s", what, fmigen_core_message(core_of(in)));
    return st;
}

/* A value reference's variable name, for messages (fmu_variables.h) */
static const char *fg_vr_name(unsigned r)
{
    if (!fg_model.vr_names) return "a variable";
    return r < fg_model.vr_end ? fg_model.vr_names[r] : "an unknown variable";
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
    const unsigned vr_end = fg_model.vr_end;
    const unsigned char *needs = in->read_needs + (size_t)memo_part(in) * vr_end;
    int what = 0;
    /* unrolled: the loops' own counting and branches (this function, 62
     * reals: 1,050 -> 770 instructions) */
    FMIGEN_UNROLL_4 for (size_t i = 0; i < n; i++) {
        if (vr[i] >= vr_end) return fg_fail(in, "GetReal/GetFloat64: unknown value reference %u", vr[i]);
        what |= needs[vr[i]];
    }
    if (what & FMIGEN_OBSERVE_ALL) fmigen_core_observe_some(core_of(in), what & FMIGEN_OBSERVE_ALL);
    if (!(what & FG_READ_SLOW)) {
        FMIGEN_UNROLL_4 for (size_t i = 0; i < n; i++) value[i] = *in->value_of[vr[i]];
        return FG_OK;
    }
    for (size_t i = 0; i < n; i++) {
        const unsigned r = vr[i];
        if (in->value_of[r]) value[i] = *in->value_of[r];
        else if (r >= fg_model.vr_a && r < fg_model.vr_time && in->kind == FG_ME) {
            if (ensure_rhs(in)) return eval_failure(in, "GetReal (acceleration)");
            /* the accelerations: the second half of the state derivatives */
            value[i] = snapshot_dx(&in->s)[fg_model.nx / 2 + (int)(r - fg_model.vr_a)];
        }
        else return fg_fail(in, "GetReal/GetFloat64: unknown value reference %u", r);
    }
    return FG_OK;
}

/* Parameters of an augmented formulation (fg_model.fp_names, fp_strict):
 * finite, > 0 (stiffness-like) or >= 0 (damping-like). */
static int fg_formulation_parameter_ok(int k, double value)
{
    return isfinite(value) && (fg_model.fp_strict[k] ? value > 0.0 : value >= 0.0);
}

/* coordinate i is an independent one of the declared partition */
static int is_independent(int i)
{
    const int *independent = fg_core_independent(0);
    for (int k = 0; k < fg_model.ni; k++) if (independent[k] == i) return 1;
    return 0;
}

/* The inputs' values at the current time, their slopes kept: u + du (t − tu)
 * becomes u with tu = t, so that a new value or slope of one input does not
 * move the others. */
static void fold_inputs(FgInstance *in)
{
    FmigenCoreHead *k = &in->s.core;
    if (!k->interpolate) { k->tu = k->t; return; }
    double *u = core_array(in, fg_model.u);
    const double *du = core_array(in, fg_model.du);
    for (int j = 0; j < fg_model.nu; j++) u[j] += du[j] * (k->t - k->tu);
    k->tu = k->t;
}

static void update_interpolate(FgInstance *in)
{
    const double *du = core_array(in, fg_model.du);
    in->s.core.interpolate = 0;
    for (int j = 0; j < fg_model.nu; j++) if (du[j] != 0.0) in->s.core.interpolate = 1;
}

/* The hard point (model.Parameter.range) that tunable parameter k is, or -1. */
static int hard_point_of(int k)
{
    for (int h = 0; h < fg_model.nhard; h++)
        if (fg_model.hard_index[h] == k) return h;
    return -1;
}

int fg_set_real(FgInstance *in, const unsigned vr[], size_t n, const double value[])
{
    if (!fg_allowed(in, "SetReal/SetFloat64",
                    M_(S_INSTANTIATED) | M_(S_INIT) | M_(S_STEP) | M_(S_EVENT) | M_(S_CONT)))
        return FG_ERROR;
    if (n && (!vr || !value)) return fg_fail(in, "SetReal/SetFloat64: NULL array");
    const FgModel *m = &fg_model;
    const int before_init = in->s.state == S_INSTANTIATED || in->s.state == S_INIT;
    /* Tunable parameters (masses, inertias, gravity, force amplitudes: the
     * variables of vr_p) change between communication steps (Co-Simulation)
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
        int ok = 0, hard = -1;
        if (r < m->vr_res)
            ok = (before_init || m->kinematic) && is_independent(r < m->vr_v ? (int)r : (int)(r - m->vr_v));
        else if (r >= m->vr_u && r < m->vr_p) ok = 1;
        else if (r >= m->vr_p && r < m->vr_h && (hard = hard_point_of((int)(r - m->vr_p))) >= 0) {
            /* geometry: the start is assembled from it at ExitInitializationMode,
             * and only the declared range was swept at build time */
            if (!before_init)
                return fg_fail(in, "SetReal/SetFloat64: hard point %s (value reference %u) is a fixed parameter: it "
                               "can be set only before ExitInitializationMode, which assembles the start from it",
                               fg_vr_name(r), r);
            if (!(value[i] >= m->hard_lower[hard] && value[i] <= m->hard_upper[hard]))
                return fg_fail(in, "SetReal/SetFloat64: hard point %s (value reference %u) set to %.17g, outside its "
                               "declared range [%.17g, %.17g], the only values the build swept (nothing was set)",
                               fg_vr_name(r), r, value[i], m->hard_lower[hard], m->hard_upper[hard]);
            ok = 1;
        }
        else if (r >= m->vr_p && r < m->vr_h) {
            if (!tunable_now)
                return fg_fail(in, "SetReal/SetFloat64: tunable parameter %s (value reference %u) can be set between "
                               "steps (Co-Simulation) or in Event Mode (Model Exchange), not in %s", fg_vr_name(r), r,
                               state_names[in->s.state]);
            ok = 1;
        }
        else if (r == m->vr_h) {
            ok = before_init;
            if (ok && !(value[i] > 0.0))
                return fg_fail(in, "internal_step must be > 0 (got %g)", value[i]);
        }
        else if (r >= m->vr_f && r < m->vr_end) {
            ok = before_init;
            if (ok && !fg_formulation_parameter_ok((int)(r - m->vr_f), value[i]))
                return fg_fail(in, "formulation parameter %s must be %s (got %g)",
                               m->fp_names[r - m->vr_f], m->fp_strict[r - m->vr_f] ? "> 0" : ">= 0", value[i]);
        }
        /* internal_step and a formulation's parameters are fixed: the step
         * belongs to the integrator's state (and FMI 3's
         * fixedInternalStepSize); structural geometry is not a variable (it is
         * baked into the Gröbner basis), and a hard point is set only before
         * initialization (above) */
        if (!ok && !before_init && (r == m->vr_h || (r >= m->vr_f && r < m->vr_end)))
            return fg_fail(in, "SetReal/SetFloat64: %s (value reference %u) is a fixed parameter: it can be set "
                           "only before ExitInitializationMode", r == m->vr_h ? "internal_step" : m->fp_names[r - m->vr_f], r);
        if (!ok)
            return fg_fail(in, "SetReal/SetFloat64: %s (value reference %u) cannot be set %s", fg_vr_name(r), r,
                           before_init ? "(it is calculated or unknown)" : "after initialization");
    }
    if (!before_init) {
        /* the bodies' masses and inertias as the new values make them, before
         * anything changes (before initialization ExitInitializationMode
         * tests them: a condition on two parameters set one per call would
         * fail in between) */
        double *p = in->trial_p;
        int any = 0;
        memcpy(p, core_array(in, m->p), (size_t)m->np * sizeof(double));
        for (size_t i = 0; i < n; i++)
            if (vr[i] >= m->vr_p && vr[i] < m->vr_h) { p[vr[i] - m->vr_p] = value[i]; any = 1; }
        if (any && fg_check_masses(in, "SetReal/SetFloat64", p, " (nothing was set)")) return FG_ERROR;
    }
    /* Coordinates or velocities about to change: complete the current
     * state's pending angles, residual and outputs from the state they
     * belong to, so that a step that then fails and restores this state
     * (with the new inputs) still reports its own. */
    for (size_t i = 0; i < n; i++)
        if (vr[i] < m->vr_res) { fmigen_core_observe(core_of(in)); break; }
    int changed = 0;
    double *du = core_array(in, m->du);
    fold_inputs(in);
    for (size_t i = 0; i < n; i++) {
        const unsigned r = vr[i];
        double *dst = in->value_of[r];   /* validated above: a settable slot */
        /* a new input value starts without a slope until the importer gives one */
        if (r >= m->vr_u && r < m->vr_p && du[r - m->vr_u] != 0.0) { du[r - m->vr_u] = 0.0; changed = 1; }
        if (*dst != value[i]) changed = 1;
        *dst = value[i];
    }
    update_interpolate(in);
    if (changed) { in->s.assembled = 0; in->s.have_rhs = 0; }
    return FG_OK;
}

int fg_set_input_derivatives(FgInstance *in, const unsigned vr[], size_t n, const int order[], const double value[])
{
    if (!in) return FG_ERROR;
    const FgModel *m = &fg_model;
    if (m->kinematic)
        return fg_fail(in, "SetRealInputDerivatives: a kinematic FMU's inputs are its coordinates and velocities; "
                       "set the velocities instead");
    for (size_t i = 0; i < n; i++) {
        if (!(vr[i] >= m->vr_u && vr[i] < m->vr_p))
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
    double *du = core_array(in, m->du);
    fold_inputs(in);
    for (size_t i = 0; i < n; i++) du[vr[i] - m->vr_u] = value[i];
    update_interpolate(in);
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

/* A doStep that failed: the state is the last good one (fmigen_core_step
 * restored it).  Out of line: the step's path then keeps no pointer to
 * the core beyond the call, one instruction fewer a doStep. */
static FMIGEN_NOINLINE int step_discarded(FgInstance *in)
{
    fg_log(in, FG_DISCARD, CAT_ERROR, "%s", fmigen_core_message(core_of(in)));
    in->s.state = S_DISCARDED;
    in->s.last_successful_time = in->s.core.t;
    in->s.terminated = 1;
    return FG_DISCARD;
}

int fg_do_step(FgInstance *in, double t, double H)
{
    if (!fg_allowed(in, "DoStep", M_(S_STEP))) return FG_ERROR;
    FmigenCoreHead *c = &in->s.core;
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
    if (fmigen_core_step(core_of(in), H)) return step_discarded(in);
    in->s.assembled = 1;
    in->s.last_successful_time = c->t;
    if (c->switches != switches) in->report_pending |= FG_REPORT_SWITCH;
    return FG_OK;
}

/* The coordinate switch of the last doStep, as an event (logEvents): the
 * partition and count are still the step's, since every call that can
 * change the state reports it first.  Formatted only when the category is
 * logged. */
static void report_switch(FgInstance *in)
{
    if (!(in->logging_on && in->category_on[CAT_EVENTS])) return;
    const int *independent = fg_core_independent(in->s.core.part);
    char names[256] = "";
    for (int k = 0, n = 0; k < fg_model.ni && n >= 0 && (size_t)n < sizeof names; k++)
        n += snprintf(names + n, sizeof names - (size_t)n, "%s%s", k ? ", " : "",
                      fg_model.coordinate_names[independent[k]]);
    fg_log(in, FG_OK, CAT_EVENTS, "coordinate switching: independent coordinates now %s "
           "(the previous set neared a singular configuration); %d switch(es) so far", names, in->s.core.switches);
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
    if (nx != (size_t)fg_model.nx)
        return fg_fail(in, "SetContinuousStates: expected %d states, got %lu", fg_model.nx, (unsigned long)nx);
    if (nx && !x) return fg_fail(in, "SetContinuousStates: NULL array");
    for (size_t i = 0; i < nx; i++)
        if (!isfinite(x[i])) return fg_fail(in, "SetContinuousStates: state %lu is not finite", (unsigned long)i);
    fg_core_set_states(core_of(in), x);
    in->s.assembled = 0;
    in->s.have_rhs = 0;
    return FG_OK;
}

#define ME_READ (M_(S_INIT) | M_(S_EVENT) | M_(S_CONT) | M_(S_TERMINATED) | M_(S_ERROR))

int fg_get_states(FgInstance *in, double x[], size_t nx)
{
    if (!fg_allowed(in, "GetContinuousStates", ME_READ)) return FG_ERROR;
    if (nx != (size_t)fg_model.nx)
        return fg_fail(in, "GetContinuousStates: expected %d states, got %lu", fg_model.nx, (unsigned long)nx);
    if (nx && !x) return fg_fail(in, "GetContinuousStates: NULL array");
    fg_core_get_states(core_of(in), x);
    return FG_OK;
}

int fg_get_derivatives(FgInstance *in, double dx[], size_t nx)
{
    if (!fg_allowed(in, "GetDerivatives", ME_READ)) return FG_ERROR;
    if (nx != (size_t)fg_model.nx)
        return fg_fail(in, "GetDerivatives: expected %d derivatives, got %lu", fg_model.nx, (unsigned long)nx);
    if (nx && !dx) return fg_fail(in, "GetDerivatives: NULL array");
    if (ensure_rhs(in)) return eval_failure(in, "GetDerivatives");
    memcpy(dx, snapshot_dx(&in->s), nx * sizeof(double));
    return FG_OK;
}

int fg_get_nominals(FgInstance *in, double x[], size_t nx)
{
    if (!fg_allowed(in, "GetNominalsOfContinuousStates", ANY_LIVE)) return FG_ERROR;
    if (nx != (size_t)fg_model.nx)
        return fg_fail(in, "GetNominalsOfContinuousStates: expected %d states, got %lu", fg_model.nx, (unsigned long)nx);
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
    if (ni != (size_t)fg_model.nz)
        return fg_fail(in, "GetEventIndicators: this FMU has %d event indicators (got %lu)", fg_model.nz,
                       (unsigned long)ni);
    if (!ei) return fg_fail(in, "GetEventIndicators: NULL array");
    /* of the complete q, v of the current state (the deferred angles too) */
    if (ensure_assembled(in)) return eval_failure(in, "GetEventIndicators");
    fg_core_event_indicators(core_of(in), ei);
    return FG_OK;
}

int fg_completed_integrator_step(FgInstance *in, int *enter_event)
{
    *enter_event = 0;
    if (!fg_allowed(in, "CompletedIntegratorStep", M_(S_CONT))) return FG_ERROR;
    /* The importer's step is accepted here: the kinematics must assemble. */
    if (ensure_assembled(in)) return eval_failure(in, "CompletedIntegratorStep");
    /* the importer accepted this state: the next solves predict from it;
     * its velocities may show a limit position of the partition ahead,
     * where the embedded ODE is singular and the importer's next steps
     * would cross it on a guess */
    if (fg_core_accept(core_of(in))) return eval_failure(in, "CompletedIntegratorStep");
    in->s.last_successful_time = in->s.core.t;
    *enter_event = in->s.core.t >= in->s.next_event;
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
    FgSnapshot *snap = *state ? *state : calloc(1, fg_snapshot_size());
    if (!snap) return fg_fail(in, "GetFMUState: out of memory");
    memcpy(snap, &in->s, fg_snapshot_size());
    *state = snap;
    return FG_OK;
}

int fg_set_state(FgInstance *in, const void *state)
{
    if (!fg_allowed(in, "SetFMUState", ANY_LIVE)) return FG_ERROR;
    if (!state) return fg_fail(in, "SetFMUState: NULL state");
    const char *why = snapshot_invalid(state);
    if (why) return fg_fail(in, "SetFMUState: not a valid state of this FMU (%s)", why);
    memcpy(&in->s, state, fg_snapshot_size());
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
#define FG_STATE_VERSION 8u   /* 2: next_event; 3: the embedding half in the memo; 4: its two halves; 5: the angles' turns in the base; 6: the limit test's velocity history; 7: the error record; 8: the instance's fields first, then the core from its head */
typedef struct {
    unsigned magic, version;
    unsigned long long size;
    char guid[FMIGEN_GUID_SIZE];
} FgStateHeader;

size_t fg_serialized_size(void) { return sizeof(FgStateHeader) + fg_snapshot_size(); }

static const char *snapshot_invalid(const FgSnapshot *s)
{
    const FmigenCoreHead *c = &s->core;
    if ((unsigned)s->state > (unsigned)S_ERROR) return "unknown life-cycle state";
    if (c->solver != FMIGEN_EULER && c->solver != FMIGEN_RK4 && c->solver != FMIGEN_SYMPLECTIC)
        return "unknown solver";
    if (!(c->h > 0.0) || !isfinite(c->h)) return "internal step not > 0";
    if (!isfinite(c->t) || !isfinite(s->last_successful_time)) return "non-finite time";
    if (isnan(s->next_event)) return "time event is NaN";
    if (c->switches < 0) return "negative switch count";
    if ((unsigned)c->err_kind > (unsigned)FMIGEN_ERR_AUGMENTED_SINGULAR) return "error kind out of range";
    /* the partitions, the memo's half and the message */
    return fg_core_invalid((const FmigenCore *)(const void *)c);
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
    memcpy(bytes + sizeof h, state, fg_snapshot_size());
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
    FgSnapshot *tmp = malloc(fg_snapshot_size());
    if (!tmp) return fg_fail(in, "DeserializeFMUState: out of memory");
    memcpy(tmp, bytes + sizeof h, fg_snapshot_size());
    const char *why = snapshot_invalid(tmp);
    if (why) {
        free(tmp);
        return fg_fail(in, "DeserializeFMUState: corrupt state (%s)", why);
    }
    /* the last error's record indexes a table (the block's failure text)
     * when formatted; a restored state has none pending */
    tmp->core.err_kind = FMIGEN_ERR_NONE;
    if (*state) {
        memcpy(*state, tmp, fg_snapshot_size());
        free(tmp);
    }
    else *state = tmp;
    return FG_OK;
}
