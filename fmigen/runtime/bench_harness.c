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
 *                      step (CLOCK_MONOTONIC, vDSO, ~20 ns per call);
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
 * Compiled with -DFMIGEN_BENCH_STAB=1 (Baumgarte) or 2 (penalty), the harness
 * instead integrates all n coordinates of the augmented index-3 system with
 * a constraint stabilization (paper 000 eqs. 6-9), from the same generated
 * M, F, Φ, Φ_q, Φ_t, γ; q_d is then not solved but integrated, and
 * core_step_max_diff is null (there is no such FMU path).
 *   Baumgarte: M q̈ + Φ_qᵀλ = F, Φ_q q̈ = γ − 2αΦ̇ − β²Φ, through the Schur
 *     complement (Φ_q M⁻¹ Φ_qᵀ) λ = Φ_q M⁻¹ F − (γ − 2αΦ̇ − β²Φ), dense LU
 *     with partial pivoting of M (n×n) and of the m×m complement;
 *   penalty (one iteration, q̈⁽⁰⁾ = M⁻¹F): (M + ρΦ_qᵀΦ_q) q̈ =
 *     F − ρΦ_qᵀ(−γ + 2ζωΦ̇ + ω²Φ), dense LU of the n×n matrix;
 * with the paper's parameters α = 1, β = 18 and ρ = 10³, ζ = 1, ω = 18
 * (override with -DFMIGEN_STAB_ALPHA=..., _BETA, _RHO, _ZETA, _OMEGA).
 *
 * usage: bench_harness T h repeats [mode]
 *   mode "full" (default): all of the above;
 *   mode "callgrind": one untimed run only; run_steps is the function to
 *   count with valgrind --tool=callgrind --toggle-collect=run_steps.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "fmigen_runtime.h"

#ifndef FMIGEN_BENCH_STAB
#define FMIGEN_BENCH_STAB 0
#endif
#if FMIGEN_BENCH_STAB
#define NX (2 * NQ)   /* x = [q, v], all coordinates */
#else
#define NX (2 * NI)   /* x = [q_i, v_i] */
#endif
#ifndef FMIGEN_STAB_ALPHA
#define FMIGEN_STAB_ALPHA 1.0
#endif
#ifndef FMIGEN_STAB_BETA
#define FMIGEN_STAB_BETA 18.0
#endif
#ifndef FMIGEN_STAB_RHO
#define FMIGEN_STAB_RHO 1e3
#endif
#ifndef FMIGEN_STAB_ZETA
#define FMIGEN_STAB_ZETA 1.0
#endif
#ifndef FMIGEN_STAB_OMEGA
#define FMIGEN_STAB_OMEGA 18.0
#endif

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void start_state(FmigenCore *c, double *x)
{
    fmigen_core_init(c, FMIGEN_EULER);
    if (fmigen_core_assemble(c)) { fprintf(stderr, "assemble failed: %s\n", c->message); exit(2); }
#if FMIGEN_BENCH_STAB
    memcpy(x, c->q, NQ * sizeof(double));
    memcpy(x + NQ, c->v, NQ * sizeof(double));
    return;
#endif
    for (int k = 0; k < NI; k++) {
        x[k] = c->q[fmigen_independent[k]];
        x[NI + k] = c->v[fmigen_independent[k]];
    }
}

/* The time of step s, as fmigen_core_step computes it from c->t = 0. */
static double step_h(long s, long nsteps, double h, double T)
{
    return s == nsteps - 1 ? T - (double)s * h : h;
}

#if FMIGEN_BENCH_STAB
/* q̈ of the stabilized augmented system at x = [q, v] (see the top). */
static int stab_rhs(FmigenCore *c, double t, const double *x, double *dx)
{
    const double *q = x, *v = x + NQ;
    double M[NQ * NQ], F[NQ], J[NC * NQ], g[NC], phi[NC], pt[NC], s[NC];
    int piv[NQ];
    fmigen_mass(t, q, v, c->p, c->u, M);
    fmigen_forcing(t, q, v, c->p, c->u, F);
    fmigen_phi_q(t, q, v, c->p, c->u, J);
    fmigen_gamma(t, q, v, c->p, c->u, g);
    fmigen_phi(t, q, v, c->p, c->u, phi);
    fmigen_phi_t(t, q, v, c->p, c->u, pt);
    for (int j = 0; j < NC; j++) {
        double pd = pt[j];                                   /* Φ̇ = Φ_q v + Φ_t */
        for (int i = 0; i < NQ; i++) pd += J[j * NQ + i] * v[i];
#if FMIGEN_BENCH_STAB == 1
        s[j] = g[j] - 2.0 * FMIGEN_STAB_ALPHA * pd - FMIGEN_STAB_BETA * FMIGEN_STAB_BETA * phi[j];
#else
        s[j] = -g[j] + 2.0 * FMIGEN_STAB_ZETA * FMIGEN_STAB_OMEGA * pd
               + FMIGEN_STAB_OMEGA * FMIGEN_STAB_OMEGA * phi[j];
#endif
    }
    double *a = dx + NQ;
#if FMIGEN_BENCH_STAB == 1
    double MiJt[NQ * NC], S[NC * NC], lam[NC], col[NQ];
    int pivs[NC];
    if (fmigen_lu_factor(NQ, M, piv)) return 1;
    memcpy(a, F, sizeof F);
    fmigen_lu_solve(NQ, M, piv, a);                          /* a = M⁻¹F */
    for (int j = 0; j < NC; j++) {
        for (int i = 0; i < NQ; i++) col[i] = J[j * NQ + i];
        fmigen_lu_solve(NQ, M, piv, col);
        for (int i = 0; i < NQ; i++) MiJt[i * NC + j] = col[i];
    }
    for (int j = 0; j < NC; j++) {
        double r = -s[j];
        for (int i = 0; i < NQ; i++) r += J[j * NQ + i] * a[i];
        lam[j] = r;
        for (int k = 0; k < NC; k++) {
            double m = 0.0;
            for (int i = 0; i < NQ; i++) m += J[j * NQ + i] * MiJt[i * NC + k];
            S[j * NC + k] = m;
        }
    }
    if (fmigen_lu_factor(NC, S, pivs)) return 1;
    fmigen_lu_solve(NC, S, pivs, lam);
    for (int i = 0; i < NQ; i++) {
        double r = a[i];
        for (int j = 0; j < NC; j++) r -= MiJt[i * NC + j] * lam[j];
        a[i] = r;
    }
#else
    for (int i = 0; i < NQ; i++) {
        double r = F[i];
        for (int j = 0; j < NC; j++) r -= FMIGEN_STAB_RHO * J[j * NQ + i] * s[j];
        a[i] = r;
        for (int k = 0; k < NQ; k++) {
            double m = 0.0;
            for (int j = 0; j < NC; j++) m += J[j * NQ + i] * J[j * NQ + k];
            M[i * NQ + k] += FMIGEN_STAB_RHO * m;
        }
    }
    if (fmigen_lu_factor(NQ, M, piv)) return 1;
    fmigen_lu_solve(NQ, M, piv, a);
#endif
    memcpy(dx, v, NQ * sizeof(double));
    for (int i = 0; i < NX; i++) if (!isfinite(dx[i])) return 1;
    return 0;
}

static double violation(const FmigenCore *c, const double *x, double t)
{
    double phi[NC], r = 0.0;
    fmigen_phi(t, x, x + NQ, c->p, c->u, phi);
    for (int j = 0; j < NC; j++) if (fabs(phi[j]) > r) r = fabs(phi[j]);
    return r;
}
#define RHS(c, t, x, dx) stab_rhs(c, t, x, dx)
#else
#define RHS(c, t, x, dx) fmigen_core_rhs(c, t, x, dx)

/* Residual max|Φ| the kinematics gives at state x (untimed): on a copy of the
 * core, so the warm start of the real run is untouched. */
static double violation(const FmigenCore *c, const double *x, double t)
{
    FmigenCore s = *c;
    for (int k = 0; k < NI; k++) {
        s.q[fmigen_independent[k]] = x[k];
        s.v[fmigen_independent[k]] = x[NI + k];
    }
    s.t = t;
    if (fmigen_core_assemble(&s)) return INFINITY;
    return s.residual;
}
#endif

/* The integration loop.  step_ns (optional) receives each step's time,
 * peak (optional) the constraint violation.  noinline: callgrind counts it. */
__attribute__((noinline)) int run_steps(FmigenCore *c, double *x, long nsteps, double h, double T,
                                         double *step_ns, clockid_t clock, double *peak)
{
    double k1[NX];
    for (long s = 0; s < nsteps; s++) {
        const double t = (double)s * h, hs = step_h(s, nsteps, h, T);
        double t0 = 0.0;
        if (step_ns) t0 = seconds(clock);
        if (peak) { double r = violation(c, x, t); if (r > *peak) *peak = r; }
        if (RHS(c, t, x, k1)) { fprintf(stderr, "step %ld: %s\n", s, c->message); return 1; }
        for (int i = 0; i < NX; i++) x[i] += hs * k1[i];
        if (step_ns) step_ns[s] = 1e9 * (seconds(clock) - t0);
    }
    if (peak) { double r = violation(c, x, T); if (r > *peak) *peak = r; }
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

int main(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: %s T h repeats [full|callgrind]\n", argv[0]); return 2; }
    const double T = atof(argv[1]), h = atof(argv[2]);
    const int repeats = atoi(argv[3]);
    const int callgrind = argc > 4 && strcmp(argv[4], "callgrind") == 0;
    /* as fmigen_core_step: full steps of h, the last one landing on T */
    long nsteps = (long)floor(T / h + 0.5);
    if (nsteps < 1 || repeats < 1) { fprintf(stderr, "need T >= h and repeats >= 1\n"); return 2; }
    static FmigenCore c;
    double x[NX];

    if (callgrind) {
        start_state(&c, x);
        if (run_steps(&c, x, nsteps, h, T, NULL, CLOCK_MONOTONIC, NULL)) return 1;
        printf("{\"steps\": %ld}\n", nsteps);
        return 0;
    }

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
#if FMIGEN_BENCH_STAB
    memcpy(c.q, x, NQ * sizeof(double));
    memcpy(c.v, x + NQ, NQ * sizeof(double));
    const char *diff_json = "null";
#else
    for (int k = 0; k < NI; k++) {
        c.q[fmigen_independent[k]] = x[k];
        c.v[fmigen_independent[k]] = x[NI + k];
    }
    c.t = T;
    if (fmigen_core_assemble(&c)) { fprintf(stderr, "final assemble: %s\n", c.message); return 1; }
    /* the FMU's path: one fmigen_core_step over the whole run */
    static FmigenCore f;
    fmigen_core_init(&f, FMIGEN_EULER);
    f.h = h;
    if (fmigen_core_assemble(&f) || fmigen_core_step(&f, T)) { fprintf(stderr, "core step: %s\n", f.message); return 1; }
    double diff = 0.0;
    for (int i = 0; i < NQ; i++) {
        if (fabs(c.q[i] - f.q[i]) > diff) diff = fabs(c.q[i] - f.q[i]);
        if (fabs(c.v[i] - f.v[i]) > diff) diff = fabs(c.v[i] - f.v[i]);
    }
    char diff_json[32];
    snprintf(diff_json, sizeof diff_json, "%.17g", diff);
#endif

    printf("{\"T\": %.17g, \"h\": %.17g, \"steps\": %ld, \"repeats\": %d, ", T, h, nsteps, repeats);
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
