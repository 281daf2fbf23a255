/* MuJoCo peer row for docs/benchmarks.md (scripts/bench_mujoco.py): the
 * Stewart platform of paper 000 as an MJCF model (free platform, per leg two
 * hinges + a slide, `connect` equality constraints at the S-joints), 3 s at
 * h = 1 ms with MuJoCo's Euler integrator (semi-implicit), the paper's leg
 * forces as motor controls.  CPU time per run as fmigen/runtime/bench_harness.c
 * measures it; per-step times of the last repeat only, and without the
 * harness's pinning / SCHED_FIFO / mlockall.
 * usage: bench_mujoco model.xml T repeats [callgrind] */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mujoco/mujoco.h>

static double seconds(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double violation(const mjModel *m, mjData *d)
{
    mj_fwdPosition(m, d);
    double r = 0.0;
    for (int i = 0; i < d->nefc; i++)
        if (d->efc_type[i] == mjCNSTR_EQUALITY && fabs(d->efc_pos[i]) > r) r = fabs(d->efc_pos[i]);
    return r;
}

__attribute__((noinline)) void run_steps(const mjModel *m, mjData *d, long nsteps, double *step_ns, double *peak)
{
    for (long s = 0; s < nsteps; s++) {
        double t0 = step_ns ? seconds(CLOCK_MONOTONIC) : 0.0;
        const double f = 0.1 * sin(2.0 * 3.141592653589793 * d->time / 3.0);
        for (int k = 0; k < m->nu; k++) d->ctrl[k] = (k % 2 == 0) ? -f : f;   /* legs 1,3,5: -, 2,4,6: + */
        mj_step(m, d);
        if (step_ns) step_ns[s] = 1e9 * (seconds(CLOCK_MONOTONIC) - t0);
        if (peak) { double r = violation(m, d); if (r > *peak) *peak = r; }
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 4) return 2;
    char err[1000];
    mjModel *m = mj_loadXML(argv[1], NULL, err, sizeof err);
    if (!m) { fprintf(stderr, "%s\n", err); return 2; }
    mjData *d = mj_makeData(m);
    const double T = atof(argv[2]);
    const int repeats = atoi(argv[3]);
    const long nsteps = (long)floor(T / m->opt.timestep + 0.5);
    if (argc > 4) { mj_resetData(m, d); run_steps(m, d, nsteps, NULL, NULL); printf("{\"steps\": %ld}\n", nsteps); return 0; }
    mj_resetData(m, d); run_steps(m, d, nsteps, NULL, NULL);  /* warm-up */
    double *steps = malloc(sizeof(double) * nsteps);
    printf("{\"steps\": %ld, \"cpu_ms_per_run\": [", nsteps);
    for (int r = 0; r < repeats; r++) {
        mj_resetData(m, d);
        double t0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        run_steps(m, d, nsteps, NULL, NULL);
        printf("%s%.17g", r ? ", " : "", 1e3 * (seconds(CLOCK_PROCESS_CPUTIME_ID) - t0));
    }
    printf("], \"step_ns_max\": [");
    double med = 0.0;
    for (int r = 0; r < repeats; r++) {
        mj_resetData(m, d);
        run_steps(m, d, nsteps, steps, NULL);
        qsort(steps, nsteps, sizeof *steps, cmp);
        printf("%s%.17g", r ? ", " : "", steps[nsteps - 1]);
        med = steps[nsteps / 2];
    }
    double peak = 0.0;
    mj_resetData(m, d);
    peak = violation(m, d);
    run_steps(m, d, nsteps, NULL, &peak);
    printf("], \"step_ns_median_last\": %.17g, \"peak_violation\": %.17g, \"qpos\": [", med, peak);
    for (int i = 0; i < m->nq; i++) printf("%s%.17g", i ? ", " : "", d->qpos[i]);
    printf("]}\n");
    mj_deleteData(d); mj_deleteModel(m);
    return 0;
}
