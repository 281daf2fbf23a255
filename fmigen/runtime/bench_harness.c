/* fmigen native benchmark harness (fmigen bench): paper 000's experiment.
 *
 * Compiled with a generated model.c and runtime/fmigen_core.c (-O2, like the
 * FMU), no FMI layer, no Python.  Runs T seconds of explicit Euler with step
 * h on the embedded ODE, exactly the arithmetic of fmigen_core_step (state
 * x = [q_i, v_i], k = fmigen_core_rhs(t, x), x += h·k, t = (s+1)·h), and
 * prints one JSON object on stdout:
 *
 *   cpu_ms_per_run[]   CPU time of each timed repeat (CLOCK_PROCESS_CPUTIME_ID
 *                      around the whole loop, no per-step timers inside)
 *   step_ns_median[], step_ns_max[]
 *                      per repeat of a second set of repeats that time every
 *                      step (CLOCK_MONOTONIC, through the vDSO);
 *                      step_ns_p99[] the 99th percentile
 *   step_cpu_ns_median[], step_cpu_ns_max[]
 *                      the same with CLOCK_THREAD_CPUTIME_ID (a system call
 *                      per reading; excludes time the thread is descheduled)
 *   peak_violation     max_j |Φ_j(q)| over every state the integrator
 *                      evaluates (q_d as the kinematics returns it at x_n,
 *                      with the same warm start), untimed run
 *   final_q[], final_v[]
 *                      assembled state at T
 *   core_step_max_diff max |Δ| between final_q/v and one call of
 *                      fmigen_core_step(T) from the start (the FMU's path)
 *
 * With an augmented formulation in model_config.h (FMIGEN_FORMULATION:
 * Baumgarte, penalty or virtual springs, runtime/fmigen_augmented.c) the
 * state is x = [q, v] of all n coordinates and fmigen_core_rhs is the
 * formulation's right-hand side; q_d is then integrated, not solved, and the
 * violation is max|Φ(q)| of the integrated q.  Everything else is the same
 * code path (fmigen_state_get/_set, fmigen_core_refresh) as the FMU's.
 *
 * usage: bench_harness T h repeats [mode]
 *   mode "full" (default): all of the above;
 *   mode "callgrind": one untimed run only; run_steps is the function to
 *   count with valgrind --tool=callgrind --toggle-collect=run_steps;
 *   mode "nort": "full" without the real-time setup (see realtime());
 *   mode "kinematic P A_1 .. A_NI": paper 000's kinematic simulation instead
 *   (see run_kinematic), CPU time per run and peak violation;
 *   mode "callgrind-kinematic P A_1 .. A_NI": one untimed kinematic run, to
 *   count with --toggle-collect=run_kinematic;
 *   mode "callgrind-fmu": one untimed run of T/h calls fmigen_core_step(h),
 *   what an FMU's doStep does when the importer communicates every internal
 *   step (HIL at 1 kHz), to count with --toggle-collect=run_fmu_steps;
 *   mode "worst-case SOLVER": the doSteps of `fmigen bench --worst-case`, one
 *   call of worst_case_step each (count each with valgrind --tool=callgrind
 *   --toggle-collect=worst_case_step --dump-after=worst_case_step): first
 *   T/h steps from the start with the default inputs (up to a step that
 *   fails), then the samples read
 *   from stdin, one a line: "P" starts a path again from the start
 *   assembly, "S q_i.. v_i.. u.." sets the independent coordinates,
 *   velocities and inputs (a workspace point, random velocities and inputs;
 *   solved outside the count, from the previous point's solution) and takes
 *   one step of h.  A kinematic FMU's (FMIGEN_KINEMATIC) independent
 *   coordinates and velocities are its inputs and its doStep solves the
 *   kinematics and velocities at them: there the sample sets them as
 *   fmi2SetReal does, and the counted step is that solve, from the previous
 *   point's solution (a point that does not assemble is a step that
 *   failed).  Prints "sample K" for each sample stepped (K counts the
 *   "S" lines from 0) and "failed N" for each counted step N (from 0) that
 *   failed, then {"motion": the motion's steps (up to one that
 *   failed), "steps": counted steps, "failed": steps that
 *   failed, "unset": samples whose state did not assemble, "iterations":
 *   the most each bounded loop took, with the hooks of fmigen_runtime.h
 *   defined to call fmigen_count_* (else zeros)}.  The counts include the
 *   work outside the counted steps (the samples' assembly).
 */
#define _GNU_SOURCE   /* sched_setaffinity, CPU_SET */
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fmigen_runtime.h"

#define NX FMIGEN_NX   /* [q_i, v_i], or [q, v] for an augmented formulation */

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void start_state(FmigenCore *c, double *x)
{
    fmigen_core_init(c, FMIGEN_EULER);
    if (fmigen_core_assemble(c) || fmigen_core_trim(c)) { fprintf(stderr, "assemble failed: %s\n", fmigen_core_message(c)); exit(2); }
    fmigen_state_get(c, x);
}

/* The time of step s, as fmigen_core_step computes it from c->t = 0. */
static double step_h(long s, long nsteps, double h, double T)
{
    return s == nsteps - 1 ? T - (double)s * h : h;
}

/* Residual max|Φ| at state x (untimed), on a copy of the core so the warm
 * start of the real run is untouched: the embedded formulation assembles q_d
 * as its kinematics returns it, an augmented one takes its integrated q. */
static double violation(const FmigenCore *c, const double *x, double t)
{
    FmigenCore s = *c;
    fmigen_state_set(&s, x);
    s.t = t;
    if (fmigen_core_refresh(&s)) return INFINITY;
    fmigen_core_observe(&s);
    return s.residual;
}

/* The integration loop.  step_ns (optional) receives each step's time,
 * peak (optional) the constraint violation.  noinline: callgrind counts it. */
__attribute__((noinline, noclone)) int run_steps(FmigenCore *c, double *x, long nsteps, double h, double T,
                                         double *step_ns, clockid_t clock, double *peak)
{
    double k1[NX];
    for (long s = 0; s < nsteps; s++) {
        const double t = (double)s * h, hs = step_h(s, nsteps, h, T);
        double t0 = 0.0;
        if (step_ns) t0 = seconds(clock);
        if (peak) { double r = violation(c, x, t); if (r > *peak) *peak = r; }
        if (fmigen_core_rhs_accept(c, t, x, k1)) { fprintf(stderr, "step %ld: %s\n", s, fmigen_core_message(c)); return 1; }
#if FMIGEN_LIMIT_TEST
        /* the FMU's test for a limit position ahead (one_step) */
        if (fmigen_core_limit(c)) { fprintf(stderr, "step %ld: %s\n", s, fmigen_core_message(c)); return 1; }
#endif
        for (int i = 0; i < NX; i++) x[i] += hs * k1[i];
        if (step_ns) step_ns[s] = 1e9 * (seconds(clock) - t0);
    }
    if (peak) { double r = violation(c, x, T); if (r > *peak) *peak = r; }
    return 0;
}

/* The co-simulation FMU's path at a communication interval of h, with an
 * importer that reads outputs after every step: fmigen_core_step integrates
 * one internal step and commits the state at t + h (kinematics, velocities),
 * as fmi2DoStep / fmi3DoStep do, and fmigen_core_observe completes angles,
 * residual and outputs, as the first fmi2GetReal after it does.  noinline:
 * callgrind counts it. */
__attribute__((noinline, noclone)) int run_fmu_steps(FmigenCore *c, long nsteps, double h)
{
    for (long s = 0; s < nsteps; s++) {
        if (fmigen_core_step(c, h)) { fprintf(stderr, "step %ld: %s\n", s, fmigen_core_message(c)); return 1; }
        fmigen_core_observe(c);
    }
    return 0;
}

/* One doStep of the FMU at a communication interval of h with the outputs
 * read after it (run_fmu_steps' body): what `fmigen bench --worst-case`
 * counts, one callgrind dump per call.  noinline: callgrind counts it. */
__attribute__((noinline, noclone)) int worst_case_step(FmigenCore *c, double h)
{
    const int e = fmigen_core_step(c, h);
    if (!e) fmigen_core_observe(c);
    return e;
}

/* The most iterations each bounded loop took (the hooks of
 * fmigen_runtime.h, defined on the worst-case build's command line to call
 * these): a Newton block's with the fallback's limit and with the polish's,
 * the polynomial root's Newton, the Aberth iteration, and how many times
 * that was entered.  `now` gathers them since the last fold; each doStep's
 * are folded into the motion's steps that succeeded, the workspace
 * samples' that succeeded, or the steps that failed, and what came before
 * a step (the assembly of the start or of a workspace sample) apart: a cap
 * must hold over the swept workspace, a motion that runs into a singular
 * configuration needs ever more Newton steps as it nears it (the Jacobian
 * loses rank), and a failed step runs its loops to the cap by design. */
typedef struct { int newton, polish, poly_newton, aberth; long aberth_runs; } Most;
static Most now, motion_ok, workspace_ok, failed_steps, assembly;
void fmigen_count_newton(int limit, int it)
{
    int *most = limit == FMIGEN_NEWTON_MAX_ITER ? &now.newton : &now.polish;
    if (it + 1 > *most) *most = it + 1;
}
void fmigen_count_poly_newton(int it) { if (it + 1 > now.poly_newton) now.poly_newton = it + 1; }
void fmigen_count_aberth(int it)
{
    if (it == 0) now.aberth_runs++;
    if (it + 1 > now.aberth) now.aberth = it + 1;
}
static void fold(Most *into)
{
    if (now.newton > into->newton) into->newton = now.newton;
    if (now.polish > into->polish) into->polish = now.polish;
    if (now.poly_newton > into->poly_newton) into->poly_newton = now.poly_newton;
    if (now.aberth > into->aberth) into->aberth = now.aberth;
    into->aberth_runs += now.aberth_runs;
    now = (Most){0, 0, 0, 0, 0};
}
static void print_most(const char *name, const Most *m, const char *sep)
{
    printf("\"%s\": {\"newton\": %d, \"polish\": %d, \"poly_newton\": %d, \"aberth\": %d, \"aberth_runs\": %ld}%s",
           name, m->newton, m->polish, m->poly_newton, m->aberth, m->aberth_runs, sep);
}
/* one counted doStep, its iterations folded by its outcome into `ok` or the failed steps' */
static int counted_step(FmigenCore *c, double h, Most *ok)
{
    fold(&assembly);
    const int e = worst_case_step(c, h);
    fold(e ? &failed_steps : ok);
    return e;
}

static int worst_case_main(double T, double h, long nsteps, int solver)
{
    static FmigenCore c;
    long counted = 0, failed = 0, unset = 0;
    fmigen_core_init(&c, solver);
    c.h = h;
    if (fmigen_core_assemble(&c) || fmigen_core_trim(&c)) { fprintf(stderr, "assemble failed: %s\n", fmigen_core_message(&c)); return 2; }
#if FMIGEN_NTRIM > 0
    /* the trimmed preloads are inputs the runtime solved at the start: a
     * sample's inputs replace the others, never these */
    double trims[FMIGEN_NTRIM];
    for (int j = 0; j < FMIGEN_NTRIM; j++) trims[j] = c.u[fmigen_trim_input[j]];
#endif
    /* the motion: up to a step that fails (a motion that runs into a
     * singular configuration, the eight-link's at 0.94 s), which is counted */
    long motion = 0;
    while (motion < nsteps) {
        motion++;
        counted++;
        if (counted_step(&c, h, &motion_ok)) { printf("failed %ld\n", counted - 1); failed++; break; }
    }
    char tag[8];
    long sample = -1;
    int broken = 1;   /* after a failure: the next sample waits for a "P" */
    while (scanf("%7s", tag) == 1) {
        if (tag[0] == 'P') {
            fmigen_core_init(&c, solver);
            c.h = h;
            broken = fmigen_core_assemble(&c) != 0 || fmigen_core_trim(&c) != 0;
            continue;
        }
        double x[NX], u[FMIGEN_DIM(NU)];
        for (int i = 0; i < 2 * NI; i++) if (scanf("%lf", &x[i]) != 1) return 2;
        for (int k = 0; k < NU; k++) if (scanf("%lf", &u[k]) != 1) return 2;
        sample++;
        if (broken) continue;
        fmigen_state_set(&c, x);
        for (int k = 0; k < NU; k++) c.u[k] = u[k];
#if FMIGEN_NTRIM > 0
        for (int j = 0; j < FMIGEN_NTRIM; j++) c.u[fmigen_trim_input[j]] = trims[j];
#endif
#if !FMIGEN_KINEMATIC
        if (fmigen_core_refresh(&c)) { unset++; broken = 1; continue; }
#endif
        counted++;
        printf("sample %ld\n", sample);
        if (counted_step(&c, h, &workspace_ok)) { printf("failed %ld\n", counted - 1); failed++; broken = 1; }
    }
    fold(&assembly);
    Most all = assembly;
    now = motion_ok; fold(&all);
    now = workspace_ok; fold(&all);
    now = failed_steps; fold(&all);
    printf("{\"motion\": %ld, \"steps\": %ld, \"failed\": %ld, \"unset\": %ld, ", motion, counted, failed, unset);
    print_most("iterations", &all, ", ");
    print_most("iterations_motion", &motion_ok, ", ");
    print_most("iterations_workspace", &workspace_ok, ", ");
    print_most("iterations_failed", &failed_steps, ", ");
    print_most("iterations_assembly", &assembly, "}\n");
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void print_array(const char *name, const double *v, long n, const char *sep)
{
    printf("\"%s\": [", name);
    for (long i = 0; i < n; i++) printf("%s%.17g", i ? ", " : "", v[i]);
    printf("]%s", sep);
}

/* Real-time determinism as a HIL rig would set it up: pin to one CPU, run
 * SCHED_FIFO above every normal task, lock the pages.  Each is best effort
 * (needs root or CAP_SYS_NICE / CAP_IPC_LOCK); what was obtained is reported
 * ("realtime" in the JSON) so a number is never read as more than it is. */
static void realtime(int *pinned, int *fifo, int *locked)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    CPU_SET(ncpu > 1 ? (int)ncpu - 1 : 0, &set);
    *pinned = sched_setaffinity(0, sizeof set, &set) == 0;
    struct sched_param sp = { .sched_priority = sched_get_priority_max(SCHED_FIFO) / 2 };
    *fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    *locked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
}

/* Paper 000's kinematic simulation (Table 3): the independent coordinates are
 * driven, q_i(t) = q_i(0) + A_k sin(2πt/P) with v_i its derivative (the
 * trajectory tabulated before the timed loop), and every step solves the
 * dependent coordinates (kinematics) and velocities, as the kinematic part of
 * a dynamic step does.  peak gets max|Φ| over the run when non-NULL. */
__attribute__((noinline, noclone)) int run_kinematic(FmigenCore *c, long nsteps, const double *qi, const double *vi,
                                            double *peak)
{
#if FMIGEN_FORMULATION
    (void)c; (void)nsteps; (void)qi; (void)vi; (void)peak;
    fprintf(stderr, "the kinematic run is for the embedded formulations\n");
    return 1;
#else
    double trig[2 * NQ], sol[FMIGEN_DIM(NSOL)];
    for (long s = 0; s < nsteps; s++) {
        const double t = (double)s * c->h;
        for (int k = 0; k < NI; k++) {
            c->q[fmigen_independent[k]] = qi[s * NI + k];
            c->v[fmigen_independent[k]] = vi[s * NI + k];
        }
        int e = FMIGEN_MODEL_FN(fmigen_kinematics)(t, c->q, c->p, &c->base, sol, trig);
        if (!e) e = FMIGEN_MODEL_FN(fmigen_embedded_velocities)(t, c->q, c->v, c->p, c->u, trig);
        if (e) { fprintf(stderr, "kinematic step %ld (t=%g): failure %d\n", s, t, e); return 1; }
        fmigen_base_accept(&c->base, FMIGEN_PART(c), t, c->q, c->v, sol, trig);  /* as an FMU step's commit */
        FMIGEN_MODEL_FN(fmigen_kinematic_angles)(c->q, trig, &c->base);   /* every angle, as a Newton formulation gives */
        if (peak) {
            double phi[FMIGEN_DIM(NC)];
            FMIGEN_MODEL_FN(fmigen_phi)(t, c->q, c->v, c->p, c->u, phi);
            for (int j = 0; j < NC; j++) if (fabs(phi[j]) > *peak) *peak = fabs(phi[j]);
        }
    }
    return 0;
#endif
}

static int kinematic_main(double T, double h, long nsteps, int repeats, int callgrind, int argc, char **argv)
{
    if (argc != 6 + NI) { fprintf(stderr, "kinematic run: need the period and %d amplitudes\n", NI); return 2; }
    const double P = atof(argv[5]), w = 6.283185307179586 / P;
    double *qi = malloc(sizeof(double) * (size_t)(nsteps * NI)), *vi = malloc(sizeof(double) * (size_t)(nsteps * NI));
    for (long s = 0; s < nsteps; s++)
        for (int k = 0; k < NI; k++) {
            const double A = atof(argv[6 + k]), t = (double)s * h;
            qi[s * NI + k] = fmigen_q_start[fmigen_independent[k]] + A * sin(w * t);
            vi[s * NI + k] = A * w * cos(w * t);
        }
    static FmigenCore c;
    fmigen_core_init(&c, FMIGEN_EULER);
    c.h = h;
    if (fmigen_core_assemble(&c) || fmigen_core_trim(&c)) { fprintf(stderr, "assemble failed: %s\n", fmigen_core_message(&c)); return 2; }
    const FmigenCore start = c;
    if (callgrind) {
        if (run_kinematic(&c, nsteps, qi, vi, NULL)) return 1;
        printf("{\"steps\": %ld}\n", nsteps);
        return 0;
    }
    if (run_kinematic(&c, nsteps, qi, vi, NULL)) return 1;  /* warm-up */
    printf("{\"T\": %.17g, \"h\": %.17g, \"steps\": %ld, \"cpu_ms_per_run\": [", T, h, nsteps);
    for (int r = 0; r < repeats; r++) {
        c = start;
        double t0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (run_kinematic(&c, nsteps, qi, vi, NULL)) return 1;
        printf("%s%.17g", r ? ", " : "", 1e3 * (seconds(CLOCK_PROCESS_CPUTIME_ID) - t0));
    }
    double peak = 0.0;
    c = start;
    if (run_kinematic(&c, nsteps, qi, vi, &peak)) return 1;
    printf("], \"peak_violation\": %.17g, ", peak);
    print_array("final_q", c.q, NQ, ", ");
    print_array("final_v", c.v, NQ, "}\n");
    free(qi); free(vi);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s T h repeats [full|callgrind|callgrind-fmu|nort|kinematic P A...|"
                "callgrind-kinematic P A...]\n",
                argv[0]);
        return 2;
    }
    const double T = atof(argv[1]), h = atof(argv[2]);
    const int repeats = atoi(argv[3]);
    const int callgrind = argc > 4 && strcmp(argv[4], "callgrind") == 0;
    /* as fmigen_core_step: full steps of h, the last one landing on T */
    long nsteps = (long)floor(T / h + 0.5);
    if (nsteps < 1 || repeats < 1) { fprintf(stderr, "need T >= h and repeats >= 1\n"); return 2; }
    if (argc > 4 && strstr(argv[4], "kinematic"))
        return kinematic_main(T, h, nsteps, repeats, strcmp(argv[4], "callgrind-kinematic") == 0, argc, argv);
    if (argc > 5 && strcmp(argv[4], "worst-case") == 0) return worst_case_main(T, h, nsteps, atoi(argv[5]));
    static FmigenCore c;
    double x[NX];

    if (argc > 4 && strcmp(argv[4], "callgrind-fmu") == 0) {
        start_state(&c, x);
        c.h = h;
        if (run_fmu_steps(&c, nsteps, h)) return 1;
        printf("{\"steps\": %ld}\n", nsteps);
        return 0;
    }
    if (callgrind) {
        start_state(&c, x);
        if (run_steps(&c, x, nsteps, h, T, NULL, CLOCK_MONOTONIC, NULL)) return 1;
        printf("{\"steps\": %ld}\n", nsteps);
        return 0;
    }

    int pinned = 0, fifo = 0, locked = 0;
    if (!(argc > 4 && strcmp(argv[4], "nort") == 0)) realtime(&pinned, &fifo, &locked);
    /* warm-up (page faults, caches) */
    start_state(&c, x);
    if (run_steps(&c, x, nsteps, h, T, NULL, CLOCK_MONOTONIC, NULL)) return 1;

    double *cpu = malloc(sizeof(double) * (size_t)repeats);
    double *smed = malloc(sizeof(double) * (size_t)repeats), *smax = malloc(sizeof(double) * (size_t)repeats);
    double *sp99 = malloc(sizeof(double) * (size_t)repeats);
    double *cmed = malloc(sizeof(double) * (size_t)repeats), *cmax = malloc(sizeof(double) * (size_t)repeats);
    double *steps = malloc(sizeof(double) * (size_t)nsteps);
    for (int r = 0; r < repeats; r++) {
        start_state(&c, x);
        double t0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (run_steps(&c, x, nsteps, h, T, NULL, CLOCK_MONOTONIC, NULL)) return 1;
        cpu[r] = 1e3 * (seconds(CLOCK_PROCESS_CPUTIME_ID) - t0);
    }
    for (int r = 0; r < repeats; r++) {
        start_state(&c, x);
        if (run_steps(&c, x, nsteps, h, T, steps, CLOCK_MONOTONIC, NULL)) return 1;
        double mx = 0.0;
        for (long s = 0; s < nsteps; s++) if (steps[s] > mx) mx = steps[s];
        smax[r] = mx;
        smed[r] = median(steps, nsteps);   /* sorts steps */
        sp99[r] = steps[(long)(0.99 * (double)(nsteps - 1))];
        /* the same with the thread's CPU clock (a system call per reading,
         * but time while the process is descheduled does not count) */
        start_state(&c, x);
        if (run_steps(&c, x, nsteps, h, T, steps, CLOCK_THREAD_CPUTIME_ID, NULL)) return 1;
        mx = 0.0;
        for (long s = 0; s < nsteps; s++) if (steps[s] > mx) mx = steps[s];
        cmax[r] = mx;
        cmed[r] = median(steps, nsteps);
    }

    /* untimed: peak violation and the final state */
    double peak = 0.0;
    start_state(&c, x);
    if (run_steps(&c, x, nsteps, h, T, NULL, CLOCK_MONOTONIC, &peak)) return 1;
    fmigen_state_set(&c, x);
    c.t = T;
    if (fmigen_core_refresh(&c)) { fprintf(stderr, "final assemble: %s\n", fmigen_core_message(&c)); return 1; }
    fmigen_core_observe(&c);
    /* the FMU's path: one fmigen_core_step over the whole run */
    static FmigenCore f;
    fmigen_core_init(&f, FMIGEN_EULER);
    f.h = h;
    if (fmigen_core_assemble(&f) || fmigen_core_trim(&f) || fmigen_core_step(&f, T)) { fprintf(stderr, "core step: %s\n", fmigen_core_message(&f)); return 1; }
    fmigen_core_observe(&f);
    double diff = 0.0;
    for (int i = 0; i < NQ; i++) {
        if (fabs(c.q[i] - f.q[i]) > diff) diff = fabs(c.q[i] - f.q[i]);
        if (fabs(c.v[i] - f.v[i]) > diff) diff = fabs(c.v[i] - f.v[i]);
    }
    char diff_json[32];
    snprintf(diff_json, sizeof diff_json, "%.17g", diff);

    printf("{\"T\": %.17g, \"h\": %.17g, \"steps\": %ld, \"repeats\": %d, ", T, h, nsteps, repeats);
    printf("\"realtime\": {\"pinned\": %d, \"fifo\": %d, \"mlocked\": %d}, ", pinned, fifo, locked);
    print_array("cpu_ms_per_run", cpu, repeats, ", ");
    print_array("step_ns_median", smed, repeats, ", ");
    print_array("step_ns_max", smax, repeats, ", ");
    print_array("step_ns_p99", sp99, repeats, ", ");
    print_array("step_cpu_ns_median", cmed, repeats, ", ");
    print_array("step_cpu_ns_max", cmax, repeats, ", ");
    printf("\"peak_violation\": %.17g, \"core_step_max_diff\": %s, ", peak, diff_json);
    print_array("final_q", c.q, NQ, ", ");
    print_array("final_v", c.v, NQ, "}\n");
    free(cpu); free(smed); free(smax); free(cmed); free(sp99); free(cmax); free(steps);
    return 0;
}
