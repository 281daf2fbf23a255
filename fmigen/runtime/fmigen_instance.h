/* fmigen instance layer: everything an FMU instance does that does not depend
 * on the FMI version (state machine, variable access, Co-Simulation stepping,
 * Model Exchange state/derivative access, FMU state snapshots, logging).
 *
 * fmi2.c and fmi3.c are thin wrappers that map the standard's types and
 * function signatures onto these calls.  Status codes are numbered like
 * fmi2Status and fmi3Status (OK 0, Warning 1, Discard 2, Error 3, Fatal 4).
 *
 * Value references: the groups of the variable table (fmigen/variables.py),
 * each from its first value reference in the generated fmu_variables.h
 * (VR_Q, VR_V, ..., VR_END) to the next group's.
 */
#ifndef FMIGEN_INSTANCE_H
#define FMIGEN_INSTANCE_H

#include "fmigen_runtime.h"
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


enum { FG_OK = 0, FG_WARNING = 1, FG_DISCARD = 2, FG_ERROR = 3, FG_FATAL = 4 };
enum { FG_CS = 0, FG_ME = 1 };

/* Life cycle.  CS: INSTANTIATED -> INIT -> STEP -> (DISCARDED) -> TERMINATED.
 * ME: INSTANTIATED -> INIT -> EVENT <-> CONT -> TERMINATED. */
typedef enum { S_INSTANTIATED, S_INIT, S_STEP, S_EVENT, S_CONT, S_DISCARDED, S_TERMINATED, S_ERROR } FgState;
#define M_(s) (1u << (s))
#define ANY_LIVE (M_(S_INSTANTIATED) | M_(S_INIT) | M_(S_STEP) | M_(S_EVENT) | M_(S_CONT) | \
                  M_(S_DISCARDED) | M_(S_TERMINATED) | M_(S_ERROR))

/* Log categories, as declared in modelDescription.xml. */
enum { CAT_ERROR = 0, CAT_WARNING = 1, CAT_EVENTS = 2, N_CATS = 3 };
extern const char *const fg_category_names[N_CATS];

struct FgInstance;
typedef void (*FgEmit)(struct FgInstance *in, int status, const char *category, const char *message);

/* Everything that an FMU state snapshot holds. */
typedef struct {
    FmigenCore core;
    FgState state;
    double last_successful_time;
    int terminated;
    int assembled;      /* ME: q_d, v_d are solved for t, x (outputs: core.observe_pending) */
    int have_rhs;       /* ME: dx is up to date */
    double next_event;  /* ME: the time event announced last (fg_update_discrete_states); INFINITY: none */
    double dx[FMIGEN_DIM(FG_NX)];
} FgSnapshot;

typedef struct FgInstance {
    FgSnapshot s;
    int kind;
    int logging_on;
    int category_on[N_CATS];
    FgEmit emit;
    const void *callbacks;   /* the FMI version's callback data, owned by the wrapper */
    void *environment;
    char *name;
    /* FG_REPORT_* bits: what a doStep that succeeded recorded for the
     * logger, formatted and logged by the next call into the instance
     * (fg_report), not inside that doStep */
    int report_pending;
    /* GetReal's and SetReal's tables, made once per instance
     * (index_values).  value_of: per value reference, where the value is
     * (in s, so an FMU state restored into this instance is read and set
     * the same way); NULL for the accelerations, read otherwise (Model
     * Exchange: solved on demand; Co-Simulation: refused).  The slots one
     * interface does not declare (internal_step in Model Exchange, time in
     * FMI 2) read as before, from the core.  read_needs: per partition and
     * value reference, what reading it needs: the FMIGEN_OBSERVE_* bits (a
     * dependent coordinate may be a deferred angle), FG_READ_SLOW where
     * value_of is NULL */
    double *value_of[VR_END > 0 ? VR_END : 1];
    unsigned char read_needs[NPART][VR_END > 0 ? VR_END : 1];
} FgInstance;

enum { FG_READ_SLOW = 0x80 };

FgInstance *fg_new(const char *name, int kind, int logging_on, FgEmit emit, const void *callbacks, void *env);
void fg_free(FgInstance *in);
void fg_log(FgInstance *in, int status, int category, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int fg_fail(FgInstance *in, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* 1 when the current state is in `mask`; otherwise logs, moves to S_ERROR and returns 0.
 * First reports what the last doStep left pending (fg_report). */
int fg_allowed(FgInstance *in, const char *fn, unsigned mask);
/* What a doStep recorded and left for after it (report_pending: a
 * coordinate switch), formatted and logged now.  fg_allowed and fg_log call
 * it, so every FMI call after the doStep reports it first; FreeInstance
 * calls it before the callbacks go. */
enum { FG_REPORT_SWITCH = 1 };
void fg_report(FgInstance *in);

int fg_set_debug_logging(FgInstance *in, int on, size_t n, const char *const categories[]);
int fg_enter_initialization(FgInstance *in, double start_time);
int fg_exit_initialization(FgInstance *in);
int fg_terminate(FgInstance *in);
int fg_reset(FgInstance *in);

int fg_get_real(FgInstance *in, const unsigned vr[], size_t n, double value[]);
int fg_set_real(FgInstance *in, const unsigned vr[], size_t n, const double value[]);
int fg_set_input_derivatives(FgInstance *in, const unsigned vr[], size_t n, const int order[], const double value[]);
int fg_no_variables(FgInstance *in, const char *fn, const char *type, size_t n);

/* Co-Simulation */
int fg_do_step(FgInstance *in, double t, double H);

/* Model Exchange */
int fg_enter_event_mode(FgInstance *in);
int fg_enter_continuous_time_mode(FgInstance *in);
/* Event Mode: the next time event after the current time (the breakpoints
 * of loads piecewise in t, fmigen_event_times) in *next_time, and 1 in
 * *defined, or 0 when there is none. */
int fg_update_discrete_states(FgInstance *in, int *defined, double *next_time);
int fg_set_time(FgInstance *in, double t);
int fg_set_states(FgInstance *in, const double x[], size_t nx);
int fg_get_states(FgInstance *in, double x[], size_t nx);
int fg_get_derivatives(FgInstance *in, double dx[], size_t nx);
int fg_get_nominals(FgInstance *in, double x[], size_t nx);
int fg_get_event_indicators(FgInstance *in, double ei[], size_t ni);
/* *enter_event = 1 when the accepted time has reached the announced time
 * event (an importer that integrated past it without stopping learns it here). */
int fg_completed_integrator_step(FgInstance *in, int *enter_event);

/* FMU state */
int fg_get_state(FgInstance *in, void **state);
int fg_set_state(FgInstance *in, const void *state);
int fg_free_state(FgInstance *in, void **state);
size_t fg_serialized_size(void);
int fg_serialize(FgInstance *in, const void *state, unsigned char bytes[], size_t size);
int fg_deserialize(FgInstance *in, const unsigned char bytes[], size_t size, void **state);

#endif
