/* FMI 2.0 glue (Co-Simulation and Model Exchange) for fmigen models.
 *
 * Every function of fmi2Functions.h is exported.  The kinds this binary may
 * be instantiated as are set in fmu_config.h (FMIGEN_HAS_CS, FMIGEN_HAS_ME;
 * fg_model.has_cs, has_me here), matching what modelDescription.xml
 * declares.  All logic lives in fmigen_instance.c; this file maps FMI 2
 * types and signatures onto it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi2Functions.h"
#include "fmigen_instance.h"

#define IN(c) ((FgInstance *)(c))
#define ST(x) ((fmi2Status)(x))

static void emit2(FgInstance *in, int status, const char *category, const char *message)
{
    const fmi2CallbackFunctions *cb = in->callbacks;
    if (!cb || !cb->logger) return;
    /* The message is passed as the format itself (with '%' doubled), so
     * importers that do not expand the variadic arguments — every ctypes or
     * cffi logger, e.g. fmpy's — still see the text. */
    char fmt[1024];
    size_t k = 0;
    for (const char *p = message; *p && k + 2 < sizeof fmt; p++) {
        if (*p == '%') fmt[k++] = '%';
        fmt[k++] = *p;
    }
    fmt[k] = '\0';
    cb->logger(cb->componentEnvironment, in->name, (fmi2Status)status, category, fmt);
}


const char *fmi2GetTypesPlatform(void) { return fmi2TypesPlatform; }
const char *fmi2GetVersion(void) { return fmi2Version; }

fmi2Component fmi2Instantiate(fmi2String name, fmi2Type type, fmi2String guid, fmi2String location,
                              const fmi2CallbackFunctions *cb, fmi2Boolean visible, fmi2Boolean loggingOn)
{
    (void)location; (void)visible;
    if (!cb || !name) return NULL;
    int ok = (type == fmi2CoSimulation && fg_model.has_cs) || (type == fmi2ModelExchange && fg_model.has_me);
    if (!ok) {
        if (cb->logger) cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError",
                                   type == fmi2CoSimulation ? "this FMU cannot be instantiated as Co-Simulation"
                                                            : "this FMU cannot be instantiated as Model Exchange");
        return NULL;
    }
    if (!guid || strcmp(guid, fmigen_model_guid) != 0) {
        /* formatted here: an importer's logger may print the message as it
         * comes (fmpy's does); a GUID holds no '%' */
        char message[64 + FMIGEN_GUID_SIZE];
        snprintf(message, sizeof message, "GUID mismatch: expected %s", fmigen_model_guid);
        if (cb->logger) cb->logger(cb->componentEnvironment, name, fmi2Error, "logStatusError", message);
        return NULL;
    }
    /* The callbacks struct is copied into the instance allocation. */
    fmi2CallbackFunctions *copy = malloc(sizeof *copy);
    if (!copy) return NULL;
    *copy = *cb;
    FgInstance *in = fg_new(name, type == fmi2ModelExchange ? FG_ME : FG_CS, loggingOn, emit2, copy,
                            cb->componentEnvironment);
    if (!in) { free(copy); return NULL; }
    return in;
}

void fmi2FreeInstance(fmi2Component c)
{
    FgInstance *in = IN(c);
    if (!in) return;
    fg_report(in);   /* with the callbacks still there */
    free((void *)in->callbacks);
    fg_free(in);
}

fmi2Status fmi2SetDebugLogging(fmi2Component c, fmi2Boolean on, size_t n, const fmi2String cats[])
{ return ST(fg_set_debug_logging(IN(c), on, n, cats)); }

fmi2Status fmi2SetupExperiment(fmi2Component c, fmi2Boolean tolDefined, fmi2Real tol,
                               fmi2Real startTime, fmi2Boolean stopDefined, fmi2Real stopTime)
{
    FgInstance *in = IN(c);
    (void)tolDefined; (void)tol; (void)stopDefined; (void)stopTime;
    if (!fg_allowed(in, "fmi2SetupExperiment", M_(S_INSTANTIATED))) return fmi2Error;
    if (!isfinite(startTime)) return ST(fg_fail(in, "fmi2SetupExperiment: start time is not finite"));
    in->s.core.t = startTime;
    return fmi2OK;
}

fmi2Status fmi2EnterInitializationMode(fmi2Component c)
{
    FgInstance *in = IN(c);
    if (!in) return fmi2Error;
    return ST(fg_enter_initialization(in, in->s.core.t));
}

fmi2Status fmi2ExitInitializationMode(fmi2Component c) { return ST(fg_exit_initialization(IN(c))); }
fmi2Status fmi2Terminate(fmi2Component c) { return ST(fg_terminate(IN(c))); }
fmi2Status fmi2Reset(fmi2Component c) { return ST(fg_reset(IN(c))); }

fmi2Status fmi2GetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Real value[])
{ return ST(fg_get_real(IN(c), vr, n, value)); }
fmi2Status fmi2SetReal(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Real value[])
{ return ST(fg_set_real(IN(c), vr, n, value)); }

fmi2Status fmi2GetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Integer v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2GetInteger", "Integer", n)); }
fmi2Status fmi2GetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2Boolean v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2GetBoolean", "Boolean", n)); }
fmi2Status fmi2GetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, fmi2String v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2GetString", "String", n)); }
fmi2Status fmi2SetInteger(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Integer v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2SetInteger", "Integer", n)); }
fmi2Status fmi2SetBoolean(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2Boolean v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2SetBoolean", "Boolean", n)); }
fmi2Status fmi2SetString(fmi2Component c, const fmi2ValueReference vr[], size_t n, const fmi2String v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi2SetString", "String", n)); }

/* ---- FMU state ---- */

fmi2Status fmi2GetFMUstate(fmi2Component c, fmi2FMUstate *s) { return ST(fg_get_state(IN(c), s)); }
fmi2Status fmi2SetFMUstate(fmi2Component c, fmi2FMUstate s) { return ST(fg_set_state(IN(c), s)); }
fmi2Status fmi2FreeFMUstate(fmi2Component c, fmi2FMUstate *s) { return ST(fg_free_state(IN(c), s)); }

fmi2Status fmi2SerializedFMUstateSize(fmi2Component c, fmi2FMUstate s, size_t *size)
{
    if (!IN(c)) return fmi2Error;
    if (!s || !size) return ST(fg_fail(IN(c), "fmi2SerializedFMUstateSize: NULL argument"));
    *size = fg_serialized_size();
    return fmi2OK;
}

fmi2Status fmi2SerializeFMUstate(fmi2Component c, fmi2FMUstate s, fmi2Byte bytes[], size_t size)
{ return ST(fg_serialize(IN(c), s, (unsigned char *)bytes, size)); }

fmi2Status fmi2DeSerializeFMUstate(fmi2Component c, const fmi2Byte bytes[], size_t size, fmi2FMUstate *s)
{ return ST(fg_deserialize(IN(c), (const unsigned char *)bytes, size, s)); }

fmi2Status fmi2GetDirectionalDerivative(fmi2Component c, const fmi2ValueReference u[], size_t nu,
                                        const fmi2ValueReference z[], size_t nz,
                                        const fmi2Real du[], fmi2Real dz[])
{
    (void)u; (void)nu; (void)z; (void)nz; (void)du; (void)dz;
    return ST(fg_fail(IN(c), "fmi2GetDirectionalDerivative: not provided (providesDirectionalDerivative=false)"));
}

/* ---- Model Exchange ---- */

fmi2Status fmi2EnterEventMode(fmi2Component c) { return ST(fg_enter_event_mode(IN(c))); }

fmi2Status fmi2NewDiscreteStates(fmi2Component c, fmi2EventInfo *info)
{
    FgInstance *in = IN(c);
    if (!in) return fmi2Error;
    if (!info) return ST(fg_fail(in, "fmi2NewDiscreteStates: NULL event info"));
    int defined = 0;
    double next = 0.0;
    int st = fg_update_discrete_states(in, &defined, &next);
    if (st != FG_OK) return ST(st);
    info->newDiscreteStatesNeeded = fmi2False;
    info->terminateSimulation = fmi2False;
    info->nominalsOfContinuousStatesChanged = fmi2False;
    info->valuesOfContinuousStatesChanged = fmi2False;
    info->nextEventTimeDefined = defined ? fmi2True : fmi2False;
    info->nextEventTime = next;
    return fmi2OK;
}

fmi2Status fmi2EnterContinuousTimeMode(fmi2Component c) { return ST(fg_enter_continuous_time_mode(IN(c))); }

fmi2Status fmi2CompletedIntegratorStep(fmi2Component c, fmi2Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi2Boolean *enterEventMode, fmi2Boolean *terminateSimulation)
{
    FgInstance *in = IN(c);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!in) return fmi2Error;
    if (!enterEventMode || !terminateSimulation)
        return ST(fg_fail(in, "fmi2CompletedIntegratorStep: NULL argument"));
    int due = 0;
    int st = fg_completed_integrator_step(in, &due);
    *enterEventMode = due ? fmi2True : fmi2False;
    *terminateSimulation = st == FG_DISCARD ? fmi2True : fmi2False;
    return ST(st);
}

fmi2Status fmi2SetTime(fmi2Component c, fmi2Real t) { return ST(fg_set_time(IN(c), t)); }
fmi2Status fmi2SetContinuousStates(fmi2Component c, const fmi2Real x[], size_t nx)
{ return ST(fg_set_states(IN(c), x, nx)); }
fmi2Status fmi2GetDerivatives(fmi2Component c, fmi2Real dx[], size_t nx)
{ return ST(fg_get_derivatives(IN(c), dx, nx)); }
fmi2Status fmi2GetEventIndicators(fmi2Component c, fmi2Real ei[], size_t ni)
{ return ST(fg_get_event_indicators(IN(c), ei, ni)); }
fmi2Status fmi2GetContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{ return ST(fg_get_states(IN(c), x, nx)); }
fmi2Status fmi2GetNominalsOfContinuousStates(fmi2Component c, fmi2Real x[], size_t nx)
{ return ST(fg_get_nominals(IN(c), x, nx)); }

/* ---- Co-Simulation ---- */

fmi2Status fmi2SetRealInputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                       const fmi2Integer order[], const fmi2Real value[])
{
    return ST(fg_set_input_derivatives(IN(c), vr, n, order, value));
}

fmi2Status fmi2GetRealOutputDerivatives(fmi2Component c, const fmi2ValueReference vr[], size_t n,
                                        const fmi2Integer order[], fmi2Real value[])
{
    (void)vr; (void)n; (void)order; (void)value;
    return ST(fg_fail(IN(c), "fmi2GetRealOutputDerivatives: not provided (maxOutputDerivativeOrder=0)"));
}

fmi2Status fmi2DoStep(fmi2Component c, fmi2Real t, fmi2Real H, fmi2Boolean noSetPrior)
{
    (void)noSetPrior;
    return ST(fg_do_step(IN(c), t, H));
}

fmi2Status fmi2CancelStep(fmi2Component c)
{
    if (!fg_allowed(IN(c), "fmi2CancelStep", M_(S_STEP) | M_(S_DISCARDED))) return fmi2Error;
    return ST(fg_fail(IN(c), "fmi2CancelStep: doStep is synchronous and never pending"));
}

fmi2Status fmi2GetStatus(fmi2Component c, const fmi2StatusKind s, fmi2Status *value)
{
    FgInstance *in = IN(c);
    if (!in) return fmi2Error;
    if (s == fmi2DoStepStatus && value) {
        /* doStep is synchronous; report the outcome of the last one */
        *value = in->s.state == S_DISCARDED ? fmi2Discard : fmi2OK;
        return fmi2OK;
    }
    return ST(fg_fail(in, "fmi2GetStatus: only fmi2DoStepStatus is available"));
}

fmi2Status fmi2GetRealStatus(fmi2Component c, const fmi2StatusKind s, fmi2Real *value)
{
    FgInstance *in = IN(c);
    if (!in) return fmi2Error;
    if (s == fmi2LastSuccessfulTime && value) { *value = in->s.last_successful_time; return fmi2OK; }
    return ST(fg_fail(in, "fmi2GetRealStatus: only fmi2LastSuccessfulTime is available"));
}

fmi2Status fmi2GetIntegerStatus(fmi2Component c, const fmi2StatusKind s, fmi2Integer *value)
{
    (void)s; (void)value;
    return ST(fg_fail(IN(c), "fmi2GetIntegerStatus: no integer status is available"));
}

fmi2Status fmi2GetBooleanStatus(fmi2Component c, const fmi2StatusKind s, fmi2Boolean *value)
{
    FgInstance *in = IN(c);
    if (!in) return fmi2Error;
    if (s == fmi2Terminated && value) { *value = in->s.terminated ? fmi2True : fmi2False; return fmi2OK; }
    return ST(fg_fail(in, "fmi2GetBooleanStatus: only fmi2Terminated is available"));
}

fmi2Status fmi2GetStringStatus(fmi2Component c, const fmi2StatusKind s, fmi2String *value)
{
    (void)s; (void)value;
    return ST(fg_fail(IN(c), "fmi2GetStringStatus: no string status is available"));
}
