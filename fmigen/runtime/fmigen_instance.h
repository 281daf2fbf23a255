/* fmigen instance layer: everything an FMU instance does that does not depend
 * on the FMI version (state machine, variable access, Co-Simulation stepping,
 * Model Exchange state/derivative access, FMU state snapshots, logging).
 *
 * fmi2.c and fmi3.c are thin wrappers that map the standard's types and
 * function signatures onto these calls.  Status codes are numbered like
 * fmi2Status and fmi3Status (OK 0, Warning 1, Discard 2, Error 3, Fatal 4).
 *
 * No model's size enters this header, fmigen_instance.c or the wrappers:
 * what they need of the model they read from its description, fg_model
 * (FgModel: the sizes, the value-reference groups, where each group lives
 * in the core, the names), and what needs the model's code they ask of the
 * fg_core_* calls; fmigen_instance_model.c defines both with the model.  So
 * a binary build compiles the glue once for every model, with
 * FMIGEN_SHARED_GLUE defined for every unit (fmigen.fmi.fmu.compile_shared),
 * and takes its objects from the object cache afterwards.  A source FMU
 * compiles it like every other unit, its names prefixed with the model's
 * identifier (fmigen_names.h), the one thing read of model_config.h here.
 *
 * Value references: the groups of the variable table (fmigen/variables.py),
 * each from its first value reference in the generated fmu_variables.h
 * (VR_Q, VR_V, ..., VR_END) to the next group's, in FgModel.
 */
#ifndef FMIGEN_INSTANCE_H
#define FMIGEN_INSTANCE_H

#ifndef FMIGEN_SHARED_GLUE
#include "model_config.h"
#endif
#include "fmigen_values.h"
#include "fmigen_kernels.h"
#include "fmigen_core_head.h"

/* The model as the glue sees it (fmigen_instance_model.c). */
typedef struct {
    int nx;                      /* continuous states (Model Exchange): 2·NI, or 2·NQ when augmented */
    int ni, nu, np, nz, npart, nevents;
    int kinematic;               /* FMIGEN_KINEMATIC: the independent coordinates are inputs */
    int formulation;             /* FMIGEN_FORMULATION: 0 embedded, else augmented */
    int has_cs, has_me;          /* the interface types this build instantiates (fmu_config.h) */
    /* each group's first value reference (fmu_variables.h) */
    unsigned vr_q, vr_v, vr_res, vr_u, vr_p, vr_h, vr_y, vr_a, vr_time, vr_f, vr_end;
    const char *const *vr_names; /* per value reference, for messages */
    /* sizeof(FmigenCore), and where in it q, v, p, u, du, y, fp and the
     * memo's partition (solved.part) are, in bytes */
    size_t core_size, q, v, p, u, du, y, fp, memo_part;
    const double *event_times;   /* nevents breakpoints of loads piecewise in t, sorted */
    const char *const *fp_names; /* an augmented formulation's parameters: names, */
    const int *fp_strict;        /* and 1: must be > 0, 0: >= 0 */
    const char *const *coordinate_names;
    /* hard points (tunable geometry): their indices in p and declared ranges */
    int nhard;
    const int *hard_index;
    const double *hard_lower, *hard_upper;
} FgModel;
extern const FgModel fg_model;

/* this build's values (fmu_config.c): fmigen_values.h */

/* ---- what needs the model's code (fmigen_instance_model.c) ---- */
/* q_d, v_d for c's t, q_i, v_i, p (an augmented formulation after
 * initialization: its check of the integrated q, v; project = 0), on a
 * copy: on failure only c's error record changes.  keep_base: c's
 * accepted kinematics solution stays (the warm start moves only where the
 * importer accepts a state).  trim: then the static trims at that start
 * (fmigen_core_trim; in initialization).  0, or 1 on failure. */
int fg_core_assemble_trial(FmigenCore *c, int project, int keep_base, int trim);
/* the state derivative at (t, c's x) into dx (nx entries); accept: the
 * solve becomes the base the next one continues.  0, or 1 on failure. */
int fg_core_derivatives(FmigenCore *c, double t, int accept, double *dx);
/* x (nx entries) from / into c's q, v: [q_i, v_i] or, augmented, [q, v] */
void fg_core_get_states(const FmigenCore *c, double *x);
void fg_core_set_states(FmigenCore *c, const double *x);
/* the nz event indicators of c's complete state (assembled) */
void fg_core_event_indicators(FmigenCore *c, double *ei);
/* The importer accepted c's (assembled) state: the next solves predict
 * from it.  1 when it is at a limit position of the partition (c's error
 * record says so), else 0. */
int fg_core_accept(FmigenCore *c);
/* 0 when every body's mass is >= 0 and its inertia positive semidefinite
 * at the parameters p; else 1 with *label naming the body's condition,
 * *minor the principal minor that is negative (NULL: the mass) and *value
 * its value. */
int fg_core_mass_check(const double *p, double *value, const char **label, const char **minor);
/* partition part's ni independent coordinates (indices in q) */
const int *fg_core_independent(int part);
/* why c cannot be a state of this model (an index out of range, an
 * unterminated message), or NULL */
const char *fg_core_invalid(const FmigenCore *c);

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

/* Everything that an FMU state snapshot holds: these fields, the model's
 * core (fg_model.core_size bytes from `core`, which has only its head's
 * fields by name here) and after it, at fg_snapshot_dx, the state
 * derivatives (Model Exchange: fg_model.nx).  Its size is
 * fg_snapshot_size() (fmigen_instance.c). */
typedef struct {
    FgState state;
    double last_successful_time;
    int terminated;
    int assembled;      /* ME: q_d, v_d are solved for t, x (outputs: core.observe_pending) */
    int have_rhs;       /* ME: dx is up to date */
    double next_event;  /* ME: the time event announced last (fg_update_discrete_states); INFINITY: none */
    FmigenCoreHead core;   /* last: the whole core starts here */
} FgSnapshot;

typedef struct FgInstance {
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
     * value_of is NULL.  Both in the instance's allocation, after s. */
    double **value_of;                /* fg_model.vr_end entries */
    unsigned char *read_needs;        /* fg_model.npart rows of fg_model.vr_end */
    double *trial_p;                  /* fg_model.np: SetReal's parameters before they are set */
    FgSnapshot s;                     /* last: its core is the model's size */
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
 * it, so every FMI call that can change the state (all but the FMU-state
 * calls) reports it first; FreeInstance calls it before the callbacks go. */
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
