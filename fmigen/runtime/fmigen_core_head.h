/* fmigen runtime: the part of the core that no model's sizes enter -- the
 * fields every model's FmigenCore starts with, and the calls into the core
 * that the FMI glue makes.
 *
 * Why a header of its own: the glue (fmigen_instance.c, fmi2.c, fmi3.c)
 * includes this one of the core, never model_config.h, so a binary build
 * compiles the glue once for every model (FMIGEN_SHARED_GLUE,
 * fmigen.fmi.fmu.compile_shared) and takes it from the object cache
 * afterwards.  What the glue needs of a model's sizes and tables it reads
 * from the model's description (FgModel, fmigen_instance.h), made in
 * fmigen_instance_model.c with the model.  fmigen_runtime.h includes this
 * header after model_config.h.
 */
#ifndef FMIGEN_CORE_HEAD_H
#define FMIGEN_CORE_HEAD_H

#include "fmigen_names.h"

/* At most this many internal steps in one doStep (or fmigen_core_step):
 * beyond it doStep is an Error, never a silent hang or a skipped step.
 * Importers that compile the sources may set it with -D. */
#ifndef FMIGEN_MAX_STEPS_PER_CALL
#define FMIGEN_MAX_STEPS_PER_CALL 10000000
#endif

/* Time events: FMIGEN_TIME_EVENTS=0 (with -D, for every unit) builds the
 * runtime that does not announce the breakpoints of loads piecewise in t
 * (fmigen_event_times), for comparison. */
#ifndef FMIGEN_TIME_EVENTS
#define FMIGEN_TIME_EVENTS 1
#endif

/* explicit Euler, classical RK4, semi-implicit (symplectic) Euler: the
 * velocities first, then the positions with the new velocities */
enum { FMIGEN_EULER = 0, FMIGEN_RK4 = 1, FMIGEN_SYMPLECTIC = 2 };

/* What of the assembled state is not computed yet (FmigenCore.observe_pending) */
enum { FMIGEN_OBSERVE_ANGLES = 1, FMIGEN_OBSERVE_RESIDUAL = 2, FMIGEN_OBSERVE_OUTPUTS = 4, FMIGEN_OBSERVE_ALL = 7 };

enum {
    FMIGEN_ERR_NONE = 0,
    FMIGEN_ERR_KINEMATICS,        /* no solution at err_q: failure text err_code */
    FMIGEN_ERR_EMBEDDING,         /* Φ_d singular (1) or BᵀMB not positive definite (2) */
    FMIGEN_ERR_DERIVATIVE,        /* non-finite state derivative */
    FMIGEN_ERR_STATE,             /* non-finite independent coordinate or velocity */
    FMIGEN_ERR_LIMIT,             /* limit position: err_x = max|v_i| (or max|v_d|/‖B‖), max|v_d|, 2 steps apart */
    FMIGEN_ERR_STEPS,             /* a step of err_x[0] s over FMIGEN_MAX_STEPS_PER_CALL internal steps */
    FMIGEN_ERR_AUGMENTED_STATE,   /* augmented formulation: non-finite coordinate or velocity */
    FMIGEN_ERR_AUGMENTED_SINGULAR, /* augmented formulation: matrix err_code singular */
    FMIGEN_ERR_TRIM               /* static trim singular (0) or not finite (1) at the start */
};

/* The first fields of every model's FmigenCore (fmigen_runtime.h), the same
 * in FmigenCoreHead: the ones the glue reads and writes by name.  The
 * model's arrays follow them; the glue reaches those through the offsets in
 * its FgModel. */
#define FMIGEN_CORE_HEAD                                                                        \
    double t;            /* time of the current state */                                        \
    double h;            /* internal step */                                                    \
    double residual;     /* max |Φ_j(q)| of the state last observed */                          \
    double tu;           /* the time the inputs u and their slopes du refer to */               \
    int interpolate;     /* some du is non-zero */                                              \
    int part;            /* active partition (fmigen_partitions), 0 unless switched */          \
    int switches;        /* how many times the partition was switched */                        \
    int solver;          /* FMIGEN_EULER, FMIGEN_RK4 or FMIGEN_SYMPLECTIC */                     \
    int err_kind;        /* the last error's FMIGEN_ERR_* (the rest of its record: FmigenCore) */

typedef struct { FMIGEN_CORE_HEAD } FmigenCoreHead;
typedef struct FmigenCore FmigenCore;

void fmigen_core_init(FmigenCore *c, int solver);
/* Complete q, v from q_i, v_i (kinematics + velocity solve); the angles
 * nobody reads bare, residual and outputs follow in fmigen_core_observe.  0
 * on success, else an error recorded in c (fmigen_core_message). */
int fmigen_core_assemble(FmigenCore *c);
/* After the start is assembled (initialization): the static trims' preloads
 * (model.Trim) at it, into their inputs; 0, else an error recorded in c.
 * Nothing to do (0) for a model without trims. */
int fmigen_core_trim(FmigenCore *c);
/* Before q, residual or y are read: complete them for the assembled (or,
 * augmented, integrated) q, v, unless that was done already.  _some: only
 * `what` (FMIGEN_OBSERVE_* bits), and what that needs (the residual and the
 * outputs come from the kinematics' sin/cos, and need the deferred angles
 * only when FMIGEN_RESIDUAL_ANGLES / FMIGEN_OUTPUTS_ANGLES say so). */
void fmigen_core_observe(FmigenCore *c);
void fmigen_core_observe_some(FmigenCore *c, int what);
/* Advance by H with fixed internal steps of c->h; the last one is shortened
 * so the state lands exactly on t + H.  0 on success. */
int fmigen_core_step(FmigenCore *c, double H);
/* The last error as text (formatted now into c->message, which it returns) */
const char *fmigen_core_message(FmigenCore *c);

#endif
