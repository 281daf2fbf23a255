/* FMI 3.0 glue (Co-Simulation and Model Exchange) for fmigen models.
 *
 * Every function of fmi3Functions.h is exported.  The interface types this
 * binary may be instantiated as are set in fmu_config.h (FMIGEN_HAS_CS,
 * FMIGEN_HAS_ME; fg_model.has_cs, has_me here), matching
 * modelDescription.xml.  Scheduled Execution, clocks, event mode in
 * Co-Simulation, configuration mode and directional/adjoint
 * derivatives are not provided; their functions return fmi3Error with a
 * message.  All logic lives in fmigen_instance.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmi3Functions.h"
#include "fmigen_instance.h"

#define IN(c) ((FgInstance *)(c))
#define ST(x) ((fmi3Status)(x))

typedef struct { fmi3LogMessageCallback log; } Callbacks3;

static void emit3(FgInstance *in, int status, const char *category, const char *message)
{
    const Callbacks3 *cb = in->callbacks;
    if (cb && cb->log) cb->log(in->environment, (fmi3Status)status, category, message);
}

const char *fmi3GetVersion(void) { return fmi3Version; }

fmi3Status fmi3SetDebugLogging(fmi3Instance c, fmi3Boolean on, size_t n, const fmi3String cats[])
{ return ST(fg_set_debug_logging(IN(c), on, n, cats)); }

static fmi3Instance instantiate(fmi3String name, fmi3String token, int kind, int supported,
                                fmi3Boolean loggingOn, fmi3InstanceEnvironment env, fmi3LogMessageCallback log)
{
    if (!name) return NULL;
    if (!supported) {
        if (log) log(env, fmi3Error, "logStatusError", kind == FG_ME
                     ? "this FMU cannot be instantiated for Model Exchange"
                     : "this FMU cannot be instantiated for Co-Simulation");
        return NULL;
    }
    if (!token || strcmp(token, fmigen_model_guid) != 0) {
        /* fmi3's logger takes a finished message, not a format */
        char message[64 + FMIGEN_GUID_SIZE];
        snprintf(message, sizeof message, "instantiationToken mismatch: expected %s", fmigen_model_guid);
        if (log) log(env, fmi3Error, "logStatusError", message);
        return NULL;
    }
    Callbacks3 *cb = malloc(sizeof *cb);
    if (!cb) return NULL;
    cb->log = log;
    FgInstance *in = fg_new(name, kind, loggingOn, emit3, cb, env);
    if (!in) { free(cb); return NULL; }
    return in;
}

fmi3Instance fmi3InstantiateModelExchange(fmi3String name, fmi3String token, fmi3String resourcePath,
                                          fmi3Boolean visible, fmi3Boolean loggingOn,
                                          fmi3InstanceEnvironment env, fmi3LogMessageCallback log)
{
    (void)resourcePath; (void)visible;
    return instantiate(name, token, FG_ME, fg_model.has_me, loggingOn, env, log);
}

fmi3Instance fmi3InstantiateCoSimulation(fmi3String name, fmi3String token, fmi3String resourcePath,
                                         fmi3Boolean visible, fmi3Boolean loggingOn, fmi3Boolean eventModeUsed,
                                         fmi3Boolean earlyReturnAllowed,
                                         const fmi3ValueReference requiredIntermediateVariables[],
                                         size_t nRequiredIntermediateVariables,
                                         fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                         fmi3IntermediateUpdateCallback intermediateUpdate)
{
    /* hasEventMode=false: no events ever occur, so eventModeUsed changes
     * nothing; early return and intermediate updates are never used. */
    (void)resourcePath; (void)visible; (void)eventModeUsed; (void)earlyReturnAllowed;
    (void)requiredIntermediateVariables; (void)nRequiredIntermediateVariables; (void)intermediateUpdate;
    return instantiate(name, token, FG_CS, fg_model.has_cs, loggingOn, env, log);
}

fmi3Instance fmi3InstantiateScheduledExecution(fmi3String name, fmi3String token, fmi3String resourcePath,
                                               fmi3Boolean visible, fmi3Boolean loggingOn,
                                               fmi3InstanceEnvironment env, fmi3LogMessageCallback log,
                                               fmi3ClockUpdateCallback clockUpdate,
                                               fmi3LockPreemptionCallback lockPreemption,
                                               fmi3UnlockPreemptionCallback unlockPreemption)
{
    (void)token; (void)resourcePath; (void)visible; (void)loggingOn; (void)clockUpdate;
    (void)lockPreemption; (void)unlockPreemption;
    if (log) log(env, fmi3Error, "logStatusError", "this FMU does not support Scheduled Execution");
    (void)name;
    return NULL;
}

void fmi3FreeInstance(fmi3Instance c)
{
    FgInstance *in = IN(c);
    if (!in) return;
    fg_report(in);   /* with the callbacks still there */
    free((void *)in->callbacks);
    fg_free(in);
}

fmi3Status fmi3EnterInitializationMode(fmi3Instance c, fmi3Boolean toleranceDefined, fmi3Float64 tolerance,
                                       fmi3Float64 startTime, fmi3Boolean stopTimeDefined, fmi3Float64 stopTime)
{
    (void)toleranceDefined; (void)tolerance; (void)stopTimeDefined; (void)stopTime;
    return ST(fg_enter_initialization(IN(c), startTime));
}

fmi3Status fmi3ExitInitializationMode(fmi3Instance c) { return ST(fg_exit_initialization(IN(c))); }

fmi3Status fmi3EnterEventMode(fmi3Instance c)
{
    FgInstance *in = IN(c);
    if (!in) return fmi3Error;
    if (in->kind != FG_ME) {
        fg_allowed(in, "fmi3EnterEventMode (Co-Simulation without event mode)", 0);
        return fmi3Error;
    }
    return ST(fg_enter_event_mode(in));
}

fmi3Status fmi3Terminate(fmi3Instance c) { return ST(fg_terminate(IN(c))); }
fmi3Status fmi3Reset(fmi3Instance c) { return ST(fg_reset(IN(c))); }

/* ---- variables: only Float64 ---- */

fmi3Status fmi3GetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, fmi3Float64 v[], size_t nv)
{
    if (!IN(c)) return fmi3Error;
    if (nv != nvr) return ST(fg_fail(IN(c), "fmi3GetFloat64: nValues (%lu) != nValueReferences (%lu); "
                                     "this FMU has no arrays", (unsigned long)nv, (unsigned long)nvr));
    return ST(fg_get_real(IN(c), vr, nvr, v));
}

fmi3Status fmi3SetFloat64(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, const fmi3Float64 v[], size_t nv)
{
    if (!IN(c)) return fmi3Error;
    if (nv != nvr) return ST(fg_fail(IN(c), "fmi3SetFloat64: nValues (%lu) != nValueReferences (%lu); "
                                     "this FMU has no arrays", (unsigned long)nv, (unsigned long)nvr));
    return ST(fg_set_real(IN(c), vr, nvr, v));
}

#define NO_VARIABLES(T)                                                                                 \
    fmi3Status fmi3Get##T(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, fmi3##T v[], size_t nv) \
    { (void)vr; (void)v; (void)nv; return ST(fg_no_variables(IN(c), "fmi3Get" #T, #T, nvr)); }        \
    fmi3Status fmi3Set##T(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, const fmi3##T v[], size_t nv) \
    { (void)vr; (void)v; (void)nv; return ST(fg_no_variables(IN(c), "fmi3Set" #T, #T, nvr)); }

NO_VARIABLES(Float32)
NO_VARIABLES(Int8)
NO_VARIABLES(UInt8)
NO_VARIABLES(Int16)
NO_VARIABLES(UInt16)
NO_VARIABLES(Int32)
NO_VARIABLES(UInt32)
NO_VARIABLES(Int64)
NO_VARIABLES(UInt64)
NO_VARIABLES(Boolean)
NO_VARIABLES(String)

fmi3Status fmi3GetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, size_t sizes[],
                         fmi3Binary v[], size_t nv)
{ (void)vr; (void)sizes; (void)v; (void)nv; return ST(fg_no_variables(IN(c), "fmi3GetBinary", "Binary", nvr)); }
fmi3Status fmi3SetBinary(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, const size_t sizes[],
                         const fmi3Binary v[], size_t nv)
{ (void)vr; (void)sizes; (void)v; (void)nv; return ST(fg_no_variables(IN(c), "fmi3SetBinary", "Binary", nvr)); }
fmi3Status fmi3GetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, fmi3Clock v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi3GetClock", "Clock", nvr)); }
fmi3Status fmi3SetClock(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr, const fmi3Clock v[])
{ (void)vr; (void)v; return ST(fg_no_variables(IN(c), "fmi3SetClock", "Clock", nvr)); }

fmi3Status fmi3GetNumberOfVariableDependencies(fmi3Instance c, fmi3ValueReference vr, size_t *n)
{
    (void)vr; (void)n;
    return ST(fg_fail(IN(c), "fmi3GetNumberOfVariableDependencies: not provided "
                             "(providesPerElementDependencies=false; see ModelStructure)"));
}

fmi3Status fmi3GetVariableDependencies(fmi3Instance c, fmi3ValueReference dependent, size_t elementIndicesOfDependent[],
                                       fmi3ValueReference independents[], size_t elementIndicesOfIndependents[],
                                       fmi3DependencyKind dependencyKinds[], size_t nDependencies)
{
    (void)dependent; (void)elementIndicesOfDependent; (void)independents; (void)elementIndicesOfIndependents;
    (void)dependencyKinds; (void)nDependencies;
    return ST(fg_fail(IN(c), "fmi3GetVariableDependencies: not provided "
                             "(providesPerElementDependencies=false; see ModelStructure)"));
}

/* ---- FMU state ---- */

fmi3Status fmi3GetFMUState(fmi3Instance c, fmi3FMUState *s) { return ST(fg_get_state(IN(c), s)); }
fmi3Status fmi3SetFMUState(fmi3Instance c, fmi3FMUState s) { return ST(fg_set_state(IN(c), s)); }
fmi3Status fmi3FreeFMUState(fmi3Instance c, fmi3FMUState *s) { return ST(fg_free_state(IN(c), s)); }

fmi3Status fmi3SerializedFMUStateSize(fmi3Instance c, fmi3FMUState s, size_t *size)
{
    if (!IN(c)) return fmi3Error;
    if (!s || !size) return ST(fg_fail(IN(c), "fmi3SerializedFMUStateSize: NULL argument"));
    *size = fg_serialized_size();
    return fmi3OK;
}

fmi3Status fmi3SerializeFMUState(fmi3Instance c, fmi3FMUState s, fmi3Byte bytes[], size_t size)
{ return ST(fg_serialize(IN(c), s, bytes, size)); }
fmi3Status fmi3DeserializeFMUState(fmi3Instance c, const fmi3Byte bytes[], size_t size, fmi3FMUState *s)
{ return ST(fg_deserialize(IN(c), bytes, size, s)); }

fmi3Status fmi3GetDirectionalDerivative(fmi3Instance c, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                        const fmi3ValueReference knowns[], size_t nKnowns,
                                        const fmi3Float64 seed[], size_t nSeed,
                                        fmi3Float64 sensitivity[], size_t nSensitivity)
{
    (void)unknowns; (void)nUnknowns; (void)knowns; (void)nKnowns; (void)seed; (void)nSeed;
    (void)sensitivity; (void)nSensitivity;
    return ST(fg_fail(IN(c), "fmi3GetDirectionalDerivative: not provided (providesDirectionalDerivatives=false)"));
}

fmi3Status fmi3GetAdjointDerivative(fmi3Instance c, const fmi3ValueReference unknowns[], size_t nUnknowns,
                                    const fmi3ValueReference knowns[], size_t nKnowns,
                                    const fmi3Float64 seed[], size_t nSeed,
                                    fmi3Float64 sensitivity[], size_t nSensitivity)
{
    (void)unknowns; (void)nUnknowns; (void)knowns; (void)nKnowns; (void)seed; (void)nSeed;
    (void)sensitivity; (void)nSensitivity;
    return ST(fg_fail(IN(c), "fmi3GetAdjointDerivative: not provided (providesAdjointDerivatives=false)"));
}

/* ---- configuration mode and clocks: none ---- */

fmi3Status fmi3EnterConfigurationMode(fmi3Instance c)
{ return ST(fg_fail(IN(c), "fmi3EnterConfigurationMode: this FMU has no structural parameters")); }
fmi3Status fmi3ExitConfigurationMode(fmi3Instance c)
{ return ST(fg_fail(IN(c), "fmi3ExitConfigurationMode: this FMU has no structural parameters")); }

fmi3Status fmi3GetIntervalDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                  fmi3Float64 intervals[], fmi3IntervalQualifier qualifiers[])
{ (void)vr; (void)intervals; (void)qualifiers; return ST(fg_no_variables(IN(c), "fmi3GetIntervalDecimal", "Clock", n ? n : 1)); }
fmi3Status fmi3GetIntervalFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                   fmi3UInt64 counters[], fmi3UInt64 resolutions[], fmi3IntervalQualifier qualifiers[])
{ (void)vr; (void)counters; (void)resolutions; (void)qualifiers; return ST(fg_no_variables(IN(c), "fmi3GetIntervalFraction", "Clock", n ? n : 1)); }
fmi3Status fmi3GetShiftDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t n, fmi3Float64 shifts[])
{ (void)vr; (void)shifts; return ST(fg_no_variables(IN(c), "fmi3GetShiftDecimal", "Clock", n ? n : 1)); }
fmi3Status fmi3GetShiftFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                fmi3UInt64 counters[], fmi3UInt64 resolutions[])
{ (void)vr; (void)counters; (void)resolutions; return ST(fg_no_variables(IN(c), "fmi3GetShiftFraction", "Clock", n ? n : 1)); }
fmi3Status fmi3SetIntervalDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3Float64 intervals[])
{ (void)vr; (void)intervals; return ST(fg_no_variables(IN(c), "fmi3SetIntervalDecimal", "Clock", n ? n : 1)); }
fmi3Status fmi3SetIntervalFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                   const fmi3UInt64 counters[], const fmi3UInt64 resolutions[])
{ (void)vr; (void)counters; (void)resolutions; return ST(fg_no_variables(IN(c), "fmi3SetIntervalFraction", "Clock", n ? n : 1)); }
fmi3Status fmi3SetShiftDecimal(fmi3Instance c, const fmi3ValueReference vr[], size_t n, const fmi3Float64 shifts[])
{ (void)vr; (void)shifts; return ST(fg_no_variables(IN(c), "fmi3SetShiftDecimal", "Clock", n ? n : 1)); }
fmi3Status fmi3SetShiftFraction(fmi3Instance c, const fmi3ValueReference vr[], size_t n,
                                const fmi3UInt64 counters[], const fmi3UInt64 resolutions[])
{ (void)vr; (void)counters; (void)resolutions; return ST(fg_no_variables(IN(c), "fmi3SetShiftFraction", "Clock", n ? n : 1)); }

fmi3Status fmi3EvaluateDiscreteStates(fmi3Instance c)
{ return ST(fg_fail(IN(c), "fmi3EvaluateDiscreteStates: not provided (providesEvaluateDiscreteStates=false)")); }

fmi3Status fmi3UpdateDiscreteStates(fmi3Instance c, fmi3Boolean *discreteStatesNeedUpdate,
                                    fmi3Boolean *terminateSimulation, fmi3Boolean *nominalsChanged,
                                    fmi3Boolean *valuesChanged, fmi3Boolean *nextEventTimeDefined,
                                    fmi3Float64 *nextEventTime)
{
    FgInstance *in = IN(c);
    if (!in) return fmi3Error;
    int defined = 0;
    double next = 0.0;
    int st = fg_update_discrete_states(in, &defined, &next);
    if (st != FG_OK) return ST(st);
    if (discreteStatesNeedUpdate) *discreteStatesNeedUpdate = fmi3False;
    if (terminateSimulation) *terminateSimulation = fmi3False;
    if (nominalsChanged) *nominalsChanged = fmi3False;
    if (valuesChanged) *valuesChanged = fmi3False;
    if (nextEventTimeDefined) *nextEventTimeDefined = defined ? fmi3True : fmi3False;
    if (nextEventTime) *nextEventTime = next;
    return fmi3OK;
}

/* ---- Model Exchange ---- */

fmi3Status fmi3EnterContinuousTimeMode(fmi3Instance c) { return ST(fg_enter_continuous_time_mode(IN(c))); }

fmi3Status fmi3CompletedIntegratorStep(fmi3Instance c, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                                       fmi3Boolean *enterEventMode, fmi3Boolean *terminateSimulation)
{
    FgInstance *in = IN(c);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!in) return fmi3Error;
    if (!enterEventMode || !terminateSimulation)
        return ST(fg_fail(in, "fmi3CompletedIntegratorStep: NULL argument"));
    int due = 0;
    int st = fg_completed_integrator_step(in, &due);
    *enterEventMode = due ? fmi3True : fmi3False;
    *terminateSimulation = st == FG_DISCARD ? fmi3True : fmi3False;
    return ST(st);
}

fmi3Status fmi3SetTime(fmi3Instance c, fmi3Float64 t) { return ST(fg_set_time(IN(c), t)); }
fmi3Status fmi3SetContinuousStates(fmi3Instance c, const fmi3Float64 x[], size_t nx)
{ return ST(fg_set_states(IN(c), x, nx)); }
fmi3Status fmi3GetContinuousStateDerivatives(fmi3Instance c, fmi3Float64 dx[], size_t nx)
{ return ST(fg_get_derivatives(IN(c), dx, nx)); }
fmi3Status fmi3GetEventIndicators(fmi3Instance c, fmi3Float64 ei[], size_t ni)
{ return ST(fg_get_event_indicators(IN(c), ei, ni)); }
fmi3Status fmi3GetContinuousStates(fmi3Instance c, fmi3Float64 x[], size_t nx)
{ return ST(fg_get_states(IN(c), x, nx)); }
fmi3Status fmi3GetNominalsOfContinuousStates(fmi3Instance c, fmi3Float64 x[], size_t nx)
{ return ST(fg_get_nominals(IN(c), x, nx)); }

fmi3Status fmi3GetNumberOfEventIndicators(fmi3Instance c, size_t *n)
{
    if (!fg_allowed(IN(c), "fmi3GetNumberOfEventIndicators", ANY_LIVE)) return fmi3Error;
    if (!n) return ST(fg_fail(IN(c), "fmi3GetNumberOfEventIndicators: NULL argument"));
    *n = 0;
    return fmi3OK;
}

fmi3Status fmi3GetNumberOfContinuousStates(fmi3Instance c, size_t *n)
{
    if (!fg_allowed(IN(c), "fmi3GetNumberOfContinuousStates", ANY_LIVE)) return fmi3Error;
    if (!n) return ST(fg_fail(IN(c), "fmi3GetNumberOfContinuousStates: NULL argument"));
    *n = IN(c)->kind == FG_ME ? fg_model.nx : 0;
    return fmi3OK;
}

/* ---- Co-Simulation ---- */

fmi3Status fmi3EnterStepMode(fmi3Instance c)
{
    /* Only reachable from event mode, which Co-Simulation here never uses. */
    fg_allowed(IN(c), "fmi3EnterStepMode (no event mode: the FMU is in step mode after initialization)", 0);
    return fmi3Error;
}

fmi3Status fmi3GetOutputDerivatives(fmi3Instance c, const fmi3ValueReference vr[], size_t nvr,
                                    const fmi3Int32 orders[], fmi3Float64 values[], size_t nValues)
{
    (void)vr; (void)nvr; (void)orders; (void)values; (void)nValues;
    return ST(fg_fail(IN(c), "fmi3GetOutputDerivatives: not provided (maxOutputDerivativeOrder=0)"));
}

fmi3Status fmi3DoStep(fmi3Instance c, fmi3Float64 t, fmi3Float64 H, fmi3Boolean noSetFMUStatePriorToCurrentPoint,
                      fmi3Boolean *eventHandlingNeeded, fmi3Boolean *terminateSimulation,
                      fmi3Boolean *earlyReturn, fmi3Float64 *lastSuccessfulTime)
{
    FgInstance *in = IN(c);
    (void)noSetFMUStatePriorToCurrentPoint;
    if (!in) return fmi3Error;
    int st = fg_do_step(in, t, H);
    if (eventHandlingNeeded) *eventHandlingNeeded = fmi3False;
    if (earlyReturn) *earlyReturn = fmi3False;
    if (terminateSimulation) *terminateSimulation = st == FG_DISCARD ? fmi3True : fmi3False;
    if (lastSuccessfulTime) *lastSuccessfulTime = in->s.last_successful_time;
    return ST(st);
}

/* ---- Scheduled Execution ---- */

fmi3Status fmi3ActivateModelPartition(fmi3Instance c, fmi3ValueReference clockReference, fmi3Float64 activationTime)
{
    (void)clockReference; (void)activationTime;
    return ST(fg_fail(IN(c), "fmi3ActivateModelPartition: this FMU does not support Scheduled Execution"));
}
