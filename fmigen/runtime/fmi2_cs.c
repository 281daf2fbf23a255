/* FMI 2.0 Co-Simulation glue for fmigen models.
 *
 * Value references (mirrored by fmigen/fmu.py):
 *   [0, NQ)            coordinates q            (independent: initial=exact)
 *   [NQ, 2NQ)          velocities der(q)
 *   2NQ                constraint_residual
 *   VR_U + k           inputs
 *   VR_P + k           tunable parameters
 *   VR_H               internal_step
 *   VR_Y + k           user outputs
 *   VR_CONST + k       structural geometry (constants, read-only)
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"
#include "fmigen_runtime.h"

#define VR_Q 0
#define VR_V NQ
#define VR_RES (2 * NQ)
#define VR_U (VR_RES + 1)
#define VR_P (VR_U + NU)
#define VR_H (VR_P + NP)
#define VR_Y (VR_H + 1)
#define VR_END (VR_Y + NY)

#ifndef FMIGEN_DEFAULT_SOLVER
#define FMIGEN_DEFAULT_SOLVER FMIGEN_RK4
#endif
#ifndef FMIGEN_DEFAULT_STEP
#define FMIGEN_DEFAULT_STEP 1e-3
#endif

typedef enum { S_INSTANTIATED, S_INIT, S_STEP, S_DISCARDED, S_TERMINATED, S_ERROR } State;

typedef struct {
    FmigenCore core;
    State state;
    double last_successful_time;
    fmi2Boolean terminated;
    fmi2Boolean logging_on;
    fmi2CallbackFunctions cb;
    char *instance_name;
} Instance;

#define CAT_ERROR "logStatusError"
#define CAT_WARNING "logStatusWarning"
#define CAT_EVENTS "logEvents"

static void logf_(Instance *in, fmi2Status st, const char *cat, const char *fmt, ...)
{
    if (!in || !in->cb.logger) return;
    if (!in->logging_on && st == fmi2OK) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    in->cb.logger(in->cb.componentEnvironment, in->instance_name, st, cat, "%s", buf);
}

static fmi2Status fail(Instance *in, const char *fmt, const char *what)
{
    logf_(in, fmi2Error, CAT_ERROR, fmt, what);
    return fmi2Error;
}

static int allowed(Instance *in, const char *fn, unsigned mask)
{
    if (!in) return 0;
    if (mask & (1u << in->state)) return 1;
    logf_(in, fmi2Error, CAT_ERROR, "%s is not allowed in the current state (%d)", fn, (int)in->state);
    in->state = S_ERROR;
    return 0;
}
#define M_(s) (1u << (s))
#define ANY_LIVE (M_(S_INSTANTIATED) | M_(S_INIT) | M_(S_STEP) | M_(S_DISCARDED) | M_(S_TERMINATED) | M_(S_ERROR))

const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String location,
                              const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)location; (void)visible;
    if (!cb || !name) return NULL;
    if (type != fmi2CoSimulation) {
        if (cb->logger) cb->logger(cb->componentEnvironment, name, fmi2Error, CAT_ERROR,
                                   "this FMU supports Co-Simulation only");
        return NULL;
    }
    if (!guid || strcmp(guid, MODEL_GUID) != 0) {
        if (cb->logger) cb->logger(cb->componentEnvironment, name, fmi2Error, CAT_ERROR,
                                   "GUID mismatch: expected %s", MODEL_GUID);
        return NULL;
    }
    Instance *in = calloc(1, sizeof *in);
    if (!in) return NULL;
    in->instance_name = malloc(strlen(name) + 1);
    if (!in->instance_name) { free(in); return NULL; }
    strcpy(in->instance_name, name);
    in->cb = *cb;
    in->logging_on = loggingOn;
    fmigen_core_init(&in->core, FMIGEN_DEFAULT_SOLVER);
    in->core.h = FMIGEN_DEFAULT_STEP;
    in->state = S_INSTANTIATED;
    return in;
}

void fmi2FreeInstance(fmi2Component c)
{
    Instance *in = c;
    if (!in) return;
    free(in->instance_name);
    free(in);
}

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[])
{
    Instance *in = c;
    (void)n; (void)cats;
    if (!allowed(in, "fmi2SetDebugLogging", ANY_LIVE)) return fmi2Error;
    in->logging_on = on;
    return fmi2OK;
}

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDefined, fmi2Real tol,
                               fmi2Real startTime, fmi2Boolean stopDefined, fmi2Real stopTime)
{
    Instance *in = c;
    (void)tolDefined; (void)tol; (void)stopDefined; (void)stopTime;
    if (!allowed(in, "fmi2SetupExperiment", M_(S_INSTANTIATED))) return fmi2Error;
    if (!isfinite(startTime)) return fail(in, "%s", "start time is not finite");
    in->core.t = startTime;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    Instance *in = c;
    if (!allowed(in, "fmi2EnterInitializationMode", M_(S_INSTANTIATED))) return fmi2Error;
    in->state = S_INIT;
    return fmi2OK;
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c)
{
    Instance *in = c;
    if (!allowed(in, "fmi2ExitInitializationMode", M_(S_INIT))) return fmi2Error;
    if (fmigen_core_assemble(&in->core)) {
        in->state = S_ERROR;
        logf_(in, fmi2Error, CAT_ERROR, "the start cannot be assembled: %s", in->core.message);
        return fmi2Error;
    }
    in->last_successful_time = in->core.t;
    in->state = S_STEP;
    return fmi2OK;
}

fmi2Status fmi2Terminate(fmi2Component c)
{
    Instance *in = c;
    if (!allowed(in, "fmi2Terminate", M_(S_STEP) | M_(S_DISCARDED))) return fmi2Error;
    in->state = S_TERMINATED;
    return fmi2OK;
}

fmi2Status fmi2Reset(fmi2Component c)
{
    Instance *in = c;
    if (!allowed(in, "fmi2Reset", ANY_LIVE)) return fmi2Error;
    fmigen_core_init(&in->core, FMIGEN_DEFAULT_SOLVER);
    in->core.h = FMIGEN_DEFAULT_STEP;
    in->state = S_INSTANTIATED;
    in->terminated = fmi2False;
    in->last_successful_time = 0.0;
    return fmi2OK;
}

/* ---- variable access ---- */

static int refresh(Instance *in)
{
    /* Before initialization the dependent values are only defined after
     * assembly; computing them on demand lets importers read consistent
     * start values (initial="calculated") in initialization mode. */
    if (in->state == S_INIT || in->state == S_INSTANTIATED) {
        FmigenCore tmp = in->core;
        if (fmigen_core_assemble(&tmp)) return 1;
        in->core = tmp;
    }
    return 0;
}

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[])
{
    Instance *in = c;
    if (!allowed(in, "fmi2GetReal", M_(S_INIT) | M_(S_STEP) | M_(S_DISCARDED) | M_(S_TERMINATED) | M_(S_ERROR)))
        return fmi2Error;
    if (n && (!vr || !value)) return fail(in, "%s", "fmi2GetReal: NULL array");
    if (in->state == S_INIT && refresh(in)) {
        logf_(in, fmi2Error, CAT_ERROR, "the start cannot be assembled: %s", in->core.message);
        return fmi2Error;
    }
    const FmigenCore *k = &in->core;
    for (size_t i = 0; i < n; i++) {
        fmi2ValueReference r = vr[i];
        if (r < VR_V) value[i] = k->q[r - VR_Q];
        else if (r < VR_RES) value[i] = k->v[r - VR_V];
        else if (r == VR_RES) value[i] = k->residual;
        else if (r < VR_P) value[i] = k->u[r - VR_U];
        else if (r < VR_H) value[i] = k->p[r - VR_P];
        else if (r == VR_H) value[i] = k->h;
        else if (r < VR_END) value[i] = k->y[r - VR_Y];
        else { logf_(in, fmi2Error, CAT_ERROR, "fmi2GetReal: unknown value reference %u", r); return fmi2Error; }
    }
    return fmi2OK;
}

static int is_independent(int i)
{
    for (int k = 0; k < NI; k++) if (fmigen_independent[k] == i) return 1;
    return 0;
}

fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[])
{
    Instance *in = c;
    if (!allowed(in, "fmi2SetReal", M_(S_INSTANTIATED) | M_(S_INIT) | M_(S_STEP))) return fmi2Error;
    if (n && (!vr || !value)) return fail(in, "%s", "fmi2SetReal: NULL array");
    const int before_init = in->state != S_STEP;
    /* Validate everything first so a rejected call changes nothing. */
    for (size_t i = 0; i < n; i++) {
        fmi2ValueReference r = vr[i];
        if (!isfinite(value[i])) {
            logf_(in, fmi2Error, CAT_ERROR, "fmi2SetReal: value reference %u set to a non-finite value (NaN or Inf)", r);
            return fmi2Error;
        }
        int ok = 0;
        if (r < VR_RES) ok = before_init && is_independent(r < VR_V ? (int)r : (int)(r - VR_V));
        else if (r >= VR_U && r < VR_P) ok = 1;
        else if (r >= VR_P && r < VR_H) ok = before_init;
        else if (r == VR_H) {
            ok = before_init;
            if (ok && !(value[i] > 0.0)) {
                logf_(in, fmi2Error, CAT_ERROR, "internal_step must be > 0 (got %g)", value[i]);
                return fmi2Error;
            }
        }
        if (!ok) {
            logf_(in, fmi2Error, CAT_ERROR, "fmi2SetReal: value reference %u cannot be set %s", r,
                  before_init ? "(it is calculated or unknown)" : "after initialization");
            return fmi2Error;
        }
    }
    FmigenCore *k = &in->core;
    for (size_t i = 0; i < n; i++) {
        fmi2ValueReference r = vr[i];
        if (r < VR_V) k->q[r] = value[i];
        else if (r < VR_RES) k->v[r - VR_V] = value[i];
        else if (r < VR_P) k->u[r - VR_U] = value[i];
        else if (r < VR_H) k->p[r - VR_P] = value[i];
        else k->h = value[i];
    }
    return fmi2OK;
}

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no Integer variables") : fmi2OK; }
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no Boolean variables") : fmi2OK; }
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no String variables") : fmi2OK; }
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no Integer variables") : fmi2OK; }
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no Boolean variables") : fmi2OK; }
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[])
{ (void)vr; (void)v; return n ? fail(c, "%s", "this FMU has no String variables") : fmi2OK; }

/* ---- FMU state: the whole instance state is one fixed-size struct ---- */

typedef struct { FmigenCore core; State state; double last_successful_time; fmi2Boolean terminated; } Snapshot;

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s)
{
    Instance *in = c;
    if (!allowed(in, "fmi2GetFMUstate", ANY_LIVE & ~M_(S_ERROR))) return fmi2Error;
    if (!s) return fail(in, "%s", "fmi2GetFMUstate: NULL pointer");
    Snapshot *snap = *s ? *s : malloc(sizeof *snap);
    if (!snap) return fail(in, "%s", "out of memory");
    snap->core = in->core; snap->state = in->state;
    snap->last_successful_time = in->last_successful_time; snap->terminated = in->terminated;
    *s = snap;
    return fmi2OK;
}

fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s)
{
    Instance *in = c;
    if (!allowed(in, "fmi2SetFMUstate", ANY_LIVE & ~M_(S_ERROR))) return fmi2Error;
    if (!s) return fail(in, "%s", "fmi2SetFMUstate: NULL state");
    const Snapshot *snap = s;
    in->core = snap->core; in->state = snap->state;
    in->last_successful_time = snap->last_successful_time; in->terminated = snap->terminated;
    return fmi2OK;
}

fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s)
{
    (void)c;
    if (s && *s) { free(*s); *s = NULL; }
    return fmi2OK;
}

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size)
{
    (void)c; (void)s;
    *size = sizeof(Snapshot) + sizeof(MODEL_GUID);
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte bytes[], size_t size)
{
    Instance *in = c;
    if (!s || size < sizeof(Snapshot) + sizeof(MODEL_GUID)) return fail(in, "%s", "fmi2SerializeFMUstate: bad state or buffer size");
    memcpy(bytes, MODEL_GUID, sizeof(MODEL_GUID));
    memcpy(bytes + sizeof(MODEL_GUID), s, sizeof(Snapshot));
    return fmi2OK;
}

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate *s)
{
    Instance *in = c;
    if (size != sizeof(Snapshot) + sizeof(MODEL_GUID) || memcmp(bytes, MODEL_GUID, sizeof(MODEL_GUID)) != 0)
        return fail(in, "%s", "fmi2DeSerializeFMUstate: the bytes are not a state of this FMU");
    Snapshot *snap = *s ? *s : malloc(sizeof *snap);
    if (!snap) return fail(in, "%s", "out of memory");
    memcpy(snap, bytes + sizeof(MODEL_GUID), sizeof *snap);
    *s = snap;
    return fmi2OK;
}

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference z[], size_t nz,
                                        const fmi2Real du[], fmi2Real dz[])
{
    (void)u; (void)nu; (void)z; (void)nz; (void)du; (void)dz;
    return fail(c, "%s", "directional derivatives are not provided (providesDirectionalDerivative=false)");
}

/* ---- Co-Simulation ---- */

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return fail(c, "%s", "input derivatives are not supported (canInterpolateInputs=false)");
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return fail(c, "%s", "output derivatives are not provided (maxOutputDerivativeOrder=0)");
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real H, fmi2Boolean noSetPrior)
{
    Instance *in = c;
    (void)noSetPrior;
    if (!allowed(in, "fmi2DoStep", M_(S_STEP))) return fmi2Error;
    if (!(H > 0.0) || !isfinite(H)) {
        logf_(in, fmi2Error, CAT_ERROR, "fmi2DoStep: communication step size must be > 0 (got %g)", H);
        return fmi2Error;
    }
    if (!isfinite(t) || fabs(t - in->core.t) > 1e-9 * (1.0 + fabs(t)) + 1e-12 * H) {
        logf_(in, fmi2Error, CAT_ERROR,
              "fmi2DoStep: currentCommunicationPoint %.17g does not match the FMU time %.17g", t, in->core.t);
        return fmi2Error;
    }
    in->core.t = t;  /* absorb rounding of the importer's time grid */
    if (fmigen_core_step(&in->core, H)) {
        logf_(in, fmi2Discard, CAT_ERROR, "%s", in->core.message);
        in->state = S_DISCARDED;
        in->last_successful_time = in->core.t;
        in->terminated = fmi2True;
        return fmi2Discard;
    }
    in->last_successful_time = in->core.t;
    return fmi2OK;
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    return fail(c, "%s", "fmi2CancelStep: doStep is synchronous and never pending");
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    (void)s; (void)value;
    return fail(c, "%s", "fmi2GetStatus: no asynchronous step is pending");
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    Instance *in = c;
    if (!in) return fmi2Error;
    if (s == fmi2LastSuccessfulTime) { *value = in->last_successful_time; return fmi2OK; }
    return fail(in, "%s", "fmi2GetRealStatus: only fmi2LastSuccessfulTime is available");
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    (void)s; (void)value;
    return fail(c, "%s", "fmi2GetIntegerStatus: no integer status is available");
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    Instance *in = c;
    if (!in) return fmi2Error;
    if (s == fmi2Terminated) { *value = in->terminated; return fmi2OK; }
    return fail(in, "%s", "fmi2GetBooleanStatus: only fmi2Terminated is available");
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    (void)s; (void)value;
    return fail(c, "%s", "fmi2GetStringStatus: no asynchronous step is pending");
}
