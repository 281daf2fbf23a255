/* fmigen runtime core: embedded ODE and fixed-step integrators.
 *
 * State x = [q_i, v_i] (2·NI).  For a state, the right-hand side
 *   1. solves the kinematics q_d = g(q_i) with the generated sequence (or
 *      takes it from the last assembly of the same t, q_i, p: FmigenSolved),
 *   2. solves Φ_d v_d = −(Φ_i v_i + Φ_t),
 *   3. solves (BᵀMB) q̈_i = Bᵀ(F − M a_c), B = [−Φ_d⁻¹Φ_i; I], a_c = [Φ_d⁻¹γ; 0].
 * Steps 2–3 are generated per model as straight-line code over the
 * structural non-zeros (fmigen/codegen_embedding.py): the matrices are tiny
 * and sparse, and generic loops cost several times the arithmetic.
 */
#include <float.h>
#include <stdio.h>
#include <string.h>
#include "fmigen_runtime.h"

/* LU, atan2, polynomial roots (compiled into the AVX copy of model.c too),
 * unless the build compiles them in a unit of their own (fmigen_kernels.c) */
#ifndef FMIGEN_SHARED_KERNELS
#include "fmigen_numeric.h"
#endif

void fmigen_core_init(FmigenCore *c, int solver)
{
    memset(c, 0, sizeof *c);
    memcpy(c->q, fmigen_q_start, sizeof c->q);
    memcpy(c->v, fmigen_v_start, sizeof c->v);
    if (NP) memcpy(c->p, fmigen_p_default, NP * sizeof(double));
    if (NU) memcpy(c->u, fmigen_u_default, NU * sizeof(double));
    /* the prediction of the first assembly is the build-time start */
    c->base.continuity = 0;
    if (NSOL) memcpy(c->base.sol, fmigen_sol_start, NSOL * sizeof(double));
    memcpy(c->base.q, fmigen_q_start, sizeof c->base.q);
    c->solver = solver;
    fmigen_formulation_init(c);
}

static int kinematics(FmigenCore *c, double t, double *q, double *trig, double *sol)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    int k = P->kinematics(t, q, c->p, &c->base, sol, trig);
    if (k) {
        /* the block and the configuration it was asked for, for the message */
        fmigen_core_fail(c, FMIGEN_ERR_KINEMATICS, k, t);
        for (int i = 0; i < NI; i++) c->err_q[i] = q[P->independent[i]];
    }
    return k;
}

void fmigen_base_accept(FmigenBase *b, const FmigenPartition *P, double t, const double *q, const double *v,
                        const double *sol, const double *trig)
{
    /* before continuity and q change: the first accept takes the turns
     * nearest the start in b->q */
    P->turns(b, trig);
    b->continuity = 1;
    b->t = t;
    if (NSOL) memcpy(b->sol, sol, NSOL * sizeof(double));
    memcpy(b->q, q, sizeof b->q);
    memcpy(b->v, v, sizeof b->v);
}

#if !FMIGEN_FORMULATION
/* Does the memo hold the kinematics of (t, q_i = x[0..NI), c->p)?  The
 * bits are compared (memcmp: −0.0 is not +0.0, atan2 tells them apart), and
 * a hit returns what that solve returned.  For a triangular sequence that is
 * bit for bit what a new solve would give; a Newton block or degree > 2 root
 * started again from the warm start that solve left behind could take one
 * more iteration and differ within its tolerance.  t counts only for rheonomic constraints: an
 * importer's communication points (start + n·H) differ from the FMU's
 * summed times in the last bit, and fmi2DoStep takes the importer's. */
static int same_bits(const double *a, const int *index, const double *x, int n)
{
    /* the XORs ORed, without a branch per entry (a Stewart step compares
     * twelve: 99 instructions with a memcmp and a branch each) */
    uint64_t differ = 0;
    FMIGEN_UNROLL for (int k = 0; k < n; k++) {
        uint64_t ua, ux;
        memcpy(&ua, &a[index[k]], sizeof ua);
        memcpy(&ux, &x[k], sizeof ux);
        differ |= ua ^ ux;
    }
    return differ == 0;
}

static int solved_matches(const FmigenCore *c, const FmigenPartition *P, double t, const double *x)
{
    const FmigenSolved *m = &c->solved;
    if (!m->valid || m->part != c->part || (FMIGEN_KINEMATICS_TIME && memcmp(&m->t, &t, sizeof t) != 0))
        return 0;
    return same_bits(m->q, P->independent, x, NI) &&
           (NP == 0 || memcmp(m->p, c->p, NP * sizeof(double)) == 0);
}

/* A memo hit whose embedding half (prepare) also holds for v_i = x[NI..2NI)
 * and, when the embedding depends on it, t. */
static int work_matches(const FmigenCore *c, const FmigenPartition *P, double t, const double *x)
{
    const FmigenSolved *m = &c->solved;
    return m->have_work && same_bits(m->v, P->independent, x + NI, NI) &&
           (!FMIGEN_EMBEDDING_TIME || memcmp(&m->t, &t, sizeof t) == 0);
}
#endif

static const char *embedding_failure(int code)
{
    return code == 1 ? "the constraint Jacobian with respect to the dependent coordinates is singular"
                     : "the reduced mass matrix B^T M B is not positive definite";
}

#if FMIGEN_FORMULATION || FMIGEN_KINEMATIC
/* Given q (complete) and v_i in v, fill v_d (generated, codegen_embedding.py). */
static int velocities(FmigenCore *c, double t, const double *q, double *v, const double *trig)
{
    int k = FMIGEN_PART(c)->velocities(t, q, v, c->p, c->u, trig);
    if (k) fmigen_core_fail(c, FMIGEN_ERR_EMBEDDING, k, t);
    return k;
}
#endif

const double *fmigen_core_inputs(const FmigenCore *c, double t, double *buf)
{
    if (!NU || !c->interpolate) return c->u;
    for (int k = 0; k < NU; k++) buf[k] = c->u[k] + c->du[k] * (t - c->tu);
    return buf;
}

#if FMIGEN_NPRESCRIBED > 0 && !FMIGEN_FORMULATION
/* q̈_i with the prescribed coordinates following their inputs
 * (model.Prescription).  q̈_i is affine in the driving forces (they are
 * generalized forces, inputs of finish): finish at all drives 0 gives a0,
 * and at drive r = 1 gives a0 + s_r, exactly.  The drives λ solve
 * Σ_r λ_r s_r[j] = ω_j²(u_j − q_j) − 2ω_j q̇_j − a0[j] on the prescribed
 * rows j (the filter's acceleration), and q̈_i = a0 + Σ_r λ_r s_r.  Only
 * finish runs again (it reads the inputs; the kinematics and prepare are
 * shared).  A non-finite input or drive leaves non-finite q̈_i, which the
 * caller reports.  ``u`` gets the drives in their slots (for the outputs). */
static int prescribe(const FmigenCore *c, const FmigenPartition *P, double t, const double *x,
                     const double *q, const double *v, const double *trig, const double *work,
                     double *u, double *qdd)
{
    enum { NR = FMIGEN_NPRESCRIBED };
    double s[NR][NI], a[NR][NR + 1];
    int slot[NR];
    for (int r = 0; r < NR; r++) {
        u[fmigen_prescribed_drive[r]] = 0.0;
        slot[r] = -1;
        for (int i = 0; i < NI; i++)
            if (P->independent[i] == fmigen_prescribed_coordinate[r]) slot[r] = i;
        if (slot[r] < 0) return 1;   /* not independent in this partition (refused at build) */
    }
    int k = P->finish(t, q, v, c->p, u, trig, work, qdd);
    for (int r = 0; r < NR && !k; r++) {
        u[fmigen_prescribed_drive[r]] = 1.0;
        k = P->finish(t, q, v, c->p, u, trig, work, s[r]);
        u[fmigen_prescribed_drive[r]] = 0.0;
        for (int i = 0; i < NI; i++) s[r][i] -= qdd[i];
    }
    if (k) return k;
    for (int j = 0; j < NR; j++) {
        const double w = fmigen_prescribed_omega[j], qj = x[slot[j]], vj = x[NI + slot[j]];
        for (int r = 0; r < NR; r++) a[j][r] = s[r][slot[j]];
        a[j][NR] = w * w * (u[fmigen_prescribed_input[j]] - qj) - 2.0 * w * vj - qdd[slot[j]];
    }
    /* Gaussian elimination with partial pivoting on the NR x NR system (one
     * row per prescribed coordinate: a division for the usual single one) */
    for (int col = 0; col < NR; col++) {
        int piv = col;
        for (int j = col + 1; j < NR; j++)
            if (fabs(a[j][col]) > fabs(a[piv][col])) piv = j;
        for (int m = 0; m <= NR; m++) { double tmp = a[col][m]; a[col][m] = a[piv][m]; a[piv][m] = tmp; }
        for (int j = col + 1; j < NR; j++) {
            const double f = a[j][col] / a[col][col];
            for (int m = col; m <= NR; m++) a[j][m] -= f * a[col][m];
        }
    }
    double lambda[NR];
    for (int j = NR - 1; j >= 0; j--) {
        double b = a[j][NR];
        for (int m = j + 1; m < NR; m++) b -= a[j][m] * lambda[m];
        lambda[j] = b / a[j][j];
    }
    for (int r = 0; r < NR; r++) {
        u[fmigen_prescribed_drive[r]] = lambda[r];
        for (int i = 0; i < NI; i++) qdd[i] += lambda[r] * s[r][i];
    }
    return 0;
}
#endif

#if FMIGEN_NTRIM > 0 && !FMIGEN_FORMULATION && !FMIGEN_KINEMATIC
/* The static trims (model.Trim, fmigen/frontends/joint_trim.py) at the
 * assembled start: the preloads (hidden inputs) that make Nᵀ F = 0 on the
 * trimmed coordinates' rows, N = [I; −Φ_d⁻¹Φ_i], F the generalized force at
 * rest (fmigen_rest_forces).  N's column of an independent coordinate is
 * what the embedding completes v to from a unit rate of it, the other
 * independent rates 0, less what it completes from all 0 (Φ_t); F is affine
 * in the preloads: evaluated at preload 0 and at each unit preload. */
int fmigen_core_trim(FmigenCore *c)
{
    enum { NT = FMIGEN_NTRIM };
    const FmigenPartition *P = FMIGEN_PART(c);
    const double *trig = FMIGEN_MEMO_TRIG(&c->solved);
    double N[NT][NQ], zero[NQ], F0[NQ], F[NQ], A[NT * NT], b[NT], u[NU];
    int piv[NT];
    /* q complete: fmigen_rest_forces reads the angles the kinematics
     * defers (held in trig only until observed) */
    fmigen_core_observe_some(c, FMIGEN_OBSERVE_ANGLES);
    /* the inputs at their declared starts: the design loads the trim
     * balances (a tire load set before initialization is a disturbance
     * the preload does not absorb) */
    memcpy(u, fmigen_u_default, sizeof u);
    for (int j = 0; j < NT; j++) u[fmigen_trim_input[j]] = 0.0;
    memset(zero, 0, sizeof zero);
    int k = P->velocities(c->t, c->q, zero, c->p, u, trig);
    for (int i = 0; i < NT && !k; i++) {
        memset(N[i], 0, sizeof N[i]);
        N[i][fmigen_trim_coordinate[i]] = 1.0;
        k = P->velocities(c->t, c->q, N[i], c->p, u, trig);
        for (int m = 0; m < NQ; m++) N[i][m] -= zero[m];
    }
    if (k) return fmigen_core_fail(c, FMIGEN_ERR_EMBEDDING, k, c->t);
    memset(zero, 0, sizeof zero);
    FMIGEN_MODEL_FN(fmigen_rest_forces)(c->t, c->q, zero, c->p, u, F0);
    for (int i = 0; i < NT; i++) {
        double s = 0.0;
        for (int m = 0; m < NQ; m++) s += N[i][m] * F0[m];
        b[i] = -s;
    }
    for (int j = 0; j < NT; j++) {
        u[fmigen_trim_input[j]] = 1.0;
        FMIGEN_MODEL_FN(fmigen_rest_forces)(c->t, c->q, zero, c->p, u, F);
        u[fmigen_trim_input[j]] = 0.0;
        for (int i = 0; i < NT; i++) {
            double s = 0.0;
            for (int m = 0; m < NQ; m++) s += N[i][m] * (F[m] - F0[m]);
            A[i * NT + j] = s;
        }
    }
    /* LU with partial pivoting: a pivot below 1e-13 of the largest entry,
     * or a non-finite one, is a trim the start leaves singular */
    if (fmigen_lu_factor(NT, A, piv)) return fmigen_core_fail(c, FMIGEN_ERR_TRIM, 0, c->t);
    fmigen_lu_solve(NT, A, piv, b);
    if (!fmigen_all_finite(b, NT)) return fmigen_core_fail(c, FMIGEN_ERR_TRIM, 1, c->t);
    for (int j = 0; j < NT; j++) c->u[fmigen_trim_input[j]] = b[j];
    /* the outputs read the preloads */
    c->observe_pending |= FMIGEN_OBSERVE_RESIDUAL | FMIGEN_OBSERVE_OUTPUTS;
    return 0;
}
#else
int fmigen_core_trim(FmigenCore *c)
{
    (void)c;
    return 0;
}
#endif

/* ``uout`` (NULL: not wanted) receives the inputs the accelerations used,
 * the prescribed coordinates' drives included. */
static int rhs(FmigenCore *c, double t, const double *x, double *dx, int accept, double *uout)
{
#if FMIGEN_FORMULATION
    (void)accept;
    (void)uout;
    return fmigen_augmented_rhs(c, t, x, dx);   /* fmigen_augmented.c, x = [q, v] */
#else
    const FmigenPartition *P = FMIGEN_PART(c);
    const FmigenSolved *m = &c->solved;
    double q[NQ], v[NQ], trig[2 * NQ], sol[FMIGEN_DIM(NSOL)], work[FMIGEN_DIM(FMIGEN_NWORK)];
    const int hit = solved_matches(c, P, t, x);
    const double *qs = q, *ts = trig, *vs = v, *ws = work;
    if (hit) {
        qs = m->q;
        ts = FMIGEN_MEMO_TRIG(m);
    } else {
        for (int k = 0; k < NI; k++) q[P->independent[k]] = x[k];
        if (kinematics(c, t, q, trig, sol)) return 1;
    }
    /* the generated embedding (codegen_embedding.py): v_d and the input-free
     * part of q̈_i (or what the commit of this state left: first-same-as-last),
     * then q̈_i with the inputs */
    int k = 0;
    if (hit && work_matches(c, P, t, x)) { vs = m->v; ws = m->work; }
    else {
        /* v_i into v: prepare completes v_d there, and the base takes it
         * (a miss on the kinematics is a miss on the embedding half too) */
        FMIGEN_UNROLL for (int i = 0; i < NI; i++) v[P->independent[i]] = x[NI + i];
        k = P->prepare(t, qs, v, c->p, ts, work);
    }
    double ubuf[FMIGEN_DIM(NU)];
#if FMIGEN_NPRESCRIBED > 0
    double u[NU];
    memcpy(u, fmigen_core_inputs(c, t, ubuf), sizeof u);
    if (!k) k = prescribe(c, P, t, x, qs, vs, ts, ws, u, dx + NI);
    if (uout) memcpy(uout, u, sizeof u);
#else
    if (uout && NU) memcpy(uout, fmigen_core_inputs(c, t, ubuf), NU * sizeof(double));
    if (!k) k = P->finish(t, qs, vs, c->p, fmigen_core_inputs(c, t, ubuf), ts, ws, dx + NI);
#endif
    if (k) return fmigen_core_fail(c, FMIGEN_ERR_EMBEDDING, k, t);
    memcpy(dx, x + NI, NI * sizeof(double));
    if (!fmigen_all_finite(dx, FMIGEN_NX)) return fmigen_core_fail(c, FMIGEN_ERR_DERIVATIVE, 0, t);
    /* (a memo hit's solution is the base already) */
    if (accept && !hit) fmigen_base_accept(&c->base, P, t, q, v, sol, trig);
#if FMIGEN_LIMIT_SLOT >= 0
    if (accept) c->lim_b2 = ws[FMIGEN_LIMIT_SLOT];
#endif
#if FMIGEN_SWITCHING
    /* the state's angles complete (deferred ones from trig), for a switch */
    if (accept) P->angles(c->base.q, ts, &c->base);
#endif
    return 0;
#endif
}

int fmigen_core_rhs(FmigenCore *c, double t, const double *x, double *dx)
{
    return rhs(c, t, x, dx, 0, NULL);
}

int fmigen_core_rhs_accept(FmigenCore *c, double t, const double *x, double *dx)
{
    return rhs(c, t, x, dx, 1, NULL);
}

int fmigen_core_assemble(FmigenCore *c)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    if (!fmigen_all_finite_at(c->q, P->independent, NI) || !fmigen_all_finite_at(c->v, P->independent, NI))
        return fmigen_core_fail(c, FMIGEN_ERR_STATE, 0, c->t);
#if FMIGEN_FORMULATION
    /* zeroed: the sequence fills the entries of angles only (the augmented
     * formulation reads its start's angles from them) */
    double trig[2 * NQ] = {0}, sol[FMIGEN_DIM(NSOL)] = {0};
#else
    FmigenSolved *m = &c->solved;
    /* the solve goes into the memo's other half (its entries start zeroed
     * with the core, so the FMU state never carries stack bytes); the
     * memo's kinematics stays valid until the flip below, its embedding half
     * not: prepare writes into it */
    double *trig = m->trigs[!m->side], *sol = m->sols[!m->side];
    m->have_work = 0;
#endif
    if (kinematics(c, c->t, c->q, trig, sol)) return 1;
#if FMIGEN_FORMULATION || FMIGEN_KINEMATIC
    /* v_d only: nothing integrates this state with the embedded ODE */
    if (velocities(c, c->t, c->q, c->v, trig)) return 1;
#else
    /* v_d with the first half of the right-hand side, for the next step's
     * first stage (FmigenSolved).  A state whose reduced mass matrix is
     * not positive definite (2, found after v_d) still assembles, as with
     * v_d alone; the stage that integrates from it reports it. */
    const int kw = P->prepare(c->t, c->q, c->v, c->p, trig, m->work);
    if (kw == 1) return fmigen_core_fail(c, FMIGEN_ERR_EMBEDDING, 1, c->t);
#if FMIGEN_LIMIT_SLOT >= 0
    /* prepare stops at 2 after v_d, before the norm's place is written */
    c->lim_b2 = kw == 0 ? m->work[FMIGEN_LIMIT_SLOT] : NAN;
#endif
#endif
    /* the accepted solution: the next solve predicts from it */
    fmigen_base_accept(&c->base, P, c->t, c->q, c->v, sol, trig);
#if FMIGEN_FORMULATION
    /* the start of an augmented formulation: it integrates every angle */
    P->angles(c->q, trig, &c->base);
#else
#if FMIGEN_SWITCHING
    P->angles(c->base.q, trig, &c->base);
#endif
    m->valid = 1;
    m->side = !m->side;
    m->part = c->part;
    m->t = c->t;
    if (NP) memcpy(m->p, c->p, NP * sizeof(double));
    memcpy(m->q, c->q, sizeof m->q);
    memcpy(m->v, c->v, sizeof m->v);
#if !FMIGEN_KINEMATIC
    m->have_work = kw == 0;
#endif
#endif
    c->observe_pending = FMIGEN_OBSERVE_ALL;
    return 0;
}

void fmigen_core_observe(FmigenCore *c)
{
    fmigen_core_observe_some(c, FMIGEN_OBSERVE_ALL);
}

void fmigen_core_observe_some(FmigenCore *c, int what)
{
    int todo = c->observe_pending & what;
    if (!todo) return;
    if (((todo & FMIGEN_OBSERVE_RESIDUAL) && FMIGEN_RESIDUAL_ANGLES) ||
        ((todo & FMIGEN_OBSERVE_OUTPUTS) && FMIGEN_OUTPUTS_ANGLES))
        todo |= FMIGEN_OBSERVE_ANGLES;
    todo &= c->observe_pending;
    c->observe_pending &= ~todo;
    double ubuf[FMIGEN_DIM(NU)];
    const double *u = fmigen_core_inputs(c, c->t, ubuf);
    (void)u;
#if FMIGEN_NPRESCRIBED > 0 && !FMIGEN_FORMULATION
    /* the outputs (drive_<coordinate>, reactions) read the drives at this
     * state: the right-hand side solves them (its kinematics from the memo) */
    double uo[NU], x[FMIGEN_NX], dx[FMIGEN_NX];
    if (todo & FMIGEN_OBSERVE_OUTPUTS) {
        const FmigenPartition *P = FMIGEN_PART(c);
        for (int i = 0; i < NI; i++) { x[i] = c->q[P->independent[i]]; x[NI + i] = c->v[P->independent[i]]; }
        if (rhs(c, c->t, x, dx, 0, uo) == 0) u = uo;
        else {   /* no drive at this state (a non-finite input): the outputs say so */
            memcpy(uo, u, sizeof uo);
            for (int r = 0; r < FMIGEN_NPRESCRIBED; r++) uo[fmigen_prescribed_drive[r]] = NAN;
            u = uo;
        }
    }
#endif
#if !FMIGEN_FORMULATION
    if (todo & FMIGEN_OBSERVE_ANGLES)
        FMIGEN_MODEL_FN(fmigen_partitions)[c->solved.part].angles(c->q, FMIGEN_MEMO_TRIG(&c->solved), &c->base);
#endif
#if NC > 0
    if (todo & FMIGEN_OBSERVE_RESIDUAL) {
#if FMIGEN_FORMULATION
        double phi[NC];
        FMIGEN_MODEL_FN(fmigen_phi)(c->t, c->q, c->v, c->p, u, phi);
        c->residual = fmigen_max_abs(phi, NC);
#else
        /* from the sin/cos the kinematics solved, not sin/cos of their atan2 */
        c->residual = FMIGEN_MODEL_FN(fmigen_residual_trig)(c->t, c->q, c->v, c->p, u, FMIGEN_MEMO_TRIG(&c->solved));
#endif
    }
#endif
#if NY > 0
    if (todo & FMIGEN_OBSERVE_OUTPUTS) {
#if FMIGEN_FORMULATION
        FMIGEN_MODEL_FN(fmigen_outputs)(c->t, c->q, c->v, c->p, u, c->y);
#else
        FMIGEN_MODEL_FN(fmigen_outputs_trig)(c->t, c->q, c->v, c->p, u, FMIGEN_MEMO_TRIG(&c->solved), c->y);
#endif
    }
#endif
}

#if FMIGEN_SWITCHING
/* max|v_d| / max|v_i| over the partition's dependent and independent
 * coordinates, in unit scales; < 0 when nothing moves. */
static double amplification(const FmigenPartition *P, const double *v)
{
    double vi = 0.0, vd = 0.0;
    for (int k = 0; k < NI; k++) vi = fmigen_max(vi, fabs(v[P->independent[k]]) / fmigen_unit_scale[P->independent[k]]);
    for (int k = 0; k < NQ - NI; k++) vd = fmigen_max(vd, fabs(v[P->dependent[k]]) / fmigen_unit_scale[P->dependent[k]]);
    if (!(vi + vd > 1e-12)) return -1.0;
    return vi > 0.0 ? vd / vi : INFINITY;
}

/* Coordinate switching (paper 004) at the start of an internal step, on the
 * state the base holds (complete q, v, just solved): when another partition's
 * amplification is FMIGEN_SWITCH_GAIN times smaller, it becomes the active
 * one; x is re-gathered from q, v (the same configuration, so nothing
 * jumps) and the base's solution vector rewritten in its layout.  Returns 1
 * when it switched (the caller evaluates the step's first stage again). */
static int switch_partition(FmigenCore *c, double *x)
{
    const double *v = c->base.v, *q = c->base.q;
    double a = amplification(FMIGEN_PART(c), v);
    if (!(a > 0.0)) return 0;
    int best = c->part;
    double best_a = a;
    for (int p = 0; p < NPART; p++) {
        double ap = amplification(&FMIGEN_MODEL_FN(fmigen_partitions)[p], v);
        if (ap >= 0.0 && ap * FMIGEN_SWITCH_GAIN < best_a) { best = p; best_a = ap * FMIGEN_SWITCH_GAIN; }
    }
    if (best == c->part) return 0;
    c->part = best;
    c->switches++;
    const FmigenPartition *P = FMIGEN_PART(c);
    for (int k = 0; k < NI; k++) { x[k] = q[P->independent[k]]; x[NI + k] = v[P->independent[k]]; }
    for (int s = 0; s < P->nsol; s++) {
        const int i = P->sol_layout[2 * s], kind = P->sol_layout[2 * s + 1];
        double a;
        if (i >= 0) a = q[i];
        else {   /* an angle sum Σ k·q_j: its terms at -1 - i, count then (j, k) pairs */
            const int *term = P->sol_layout + (-1 - i);
            a = 0.0;
            for (int r = 0; r < term[0]; r++) a += term[2 + 2 * r] * q[term[1 + 2 * r]];
        }
        double sa, ca;
        FMIGEN_MODEL_FN(fmigen_sincos)(a, &sa, &ca);   /* fmigen's, not libm's: the same bits on every platform */
        c->base.sol[s] = kind == 0 ? sa : kind == 1 ? ca : a;
    }
    /* the turns of the new partition's deferred angles, from the complete
     * (continuous) q; for any other coordinate they are never read */
    for (int i = 0; i < NQ; i++) {
        double s, cq;
        FMIGEN_MODEL_FN(fmigen_sincos)(q[i], &s, &cq);
        c->base.turn[i] = fmigen_turns_near(q[i], FMIGEN_MODEL_FN(fmigen_atan2)(s, cq));
        c->base.wind_s[i] = s;
    }
    return 1;
}
#endif

#if FMIGEN_LIMIT_TEST
/* Is the state the base holds (just accepted: complete q and v) at most
 * about two steps short of a limit position of the active partition
 * (FMIGEN_LIMIT_GAIN)?  The velocity map v_d = B v_i, B = −Φ_d⁻¹Φ_i, grows
 * like 1/|t − t*| there while v_d stays finite.  The test keeps the state's
 * max|v_d| and w = max|v_d| / ‖B‖ (the independent velocity along what B
 * amplifies; for one independent coordinate ‖B‖ = max|v_d| / |v_i|, so w =
 * |v_i|; for two, Euclidean |v_d| and Frobenius ‖B‖, velocity_gain) and
 * compares them with the ones two accepted states earlier: w fell by the
 * gain or more, and ‖B‖ = max|v_d| / w rose by it (products, so that a
 * state at rest, w = 0, compares without a division).  A
 * Co-Simulation step from there would turn the independent coordinates
 * back on the same branch of the solution and carry on with a motion the
 * mechanism does not make; so the step fails (Discard) with a message
 * naming the coordinates.  Returns 1 then. */
/* the numbers the message quotes (fmigen_core_message formats them) */
static void limit_record(FmigenCore *c, double vi0, double vd0, double vi, double vd)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    fmigen_core_fail(c, FMIGEN_ERR_LIMIT, 0, c->base.t);
    c->err_x[0] = vi0; c->err_x[1] = vd0; c->err_x[2] = vi; c->err_x[3] = vd;
    for (int i = 0; i < NI; i++) c->err_q[i] = c->base.q[P->independent[i]];
}

#if NI == 2
/* ‖B‖ at the base's state, in unit scales (B̃ = S_d⁻¹ B S_i), Frobenius:
 * Σ ‖B̃e‖² over an orthonormal basis of the two independent velocities.
 * Its first vector is the state's own direction of motion u = ṽ_i / |ṽ_i|
 * (B̃u = ṽ_d / |ṽ_i|, known); the second the one across it, (−u_1, u_0):
 * one solve with Φ_d (the generated velocities at v_i + |ṽ_i| S_i (−u_1,
 * u_0), less the state's v_d: Φ_t cancels).  At a fold the motion's own direction
 * runs along it, so the second is the one B amplifies.  NaN when the solve
 * fails. */
static double velocity_gain(FmigenCore *c, double nvi, double nvd)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    const double *v = c->base.v;
    const int i0 = P->independent[0], i1 = P->independent[1];
    const double u0 = v[i0] / fmigen_unit_scale[i0] / nvi, u1 = v[i1] / fmigen_unit_scale[i1] / nvi;
    double w[NQ];
    memcpy(w, v, sizeof w);
    w[i0] -= nvi * fmigen_unit_scale[i0] * u1;
    w[i1] += nvi * fmigen_unit_scale[i1] * u0;
    if (P->velocities(c->base.t, c->base.q, w, c->p, c->u, FMIGEN_MEMO_TRIG(&c->solved))) return NAN;
    double bp = 0.0;
    for (int k = 0; k < NQ - NI; k++) {
        const int i = P->dependent[k];
        const double d = (w[i] - v[i]) / fmigen_unit_scale[i] / nvi;
        bp += d * d;
    }
    const double bu = nvd / nvi;
    return sqrt(bu * bu + bp);
}
#endif

FMIGEN_ALWAYS_INLINE int core_limit(FmigenCore *c)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    const double *v = c->base.v;
    double vi = 0.0, vd = 0.0;
#if NI == 1
    FMIGEN_UNROLL for (int k = 0; k < NI; k++)
        vi = fmigen_max(vi, fabs(v[P->independent[k]]) / fmigen_unit_scale[P->independent[k]]);
    FMIGEN_UNROLL for (int k = 0; k < NQ - NI; k++)
        vd = fmigen_max(vd, fabs(v[P->dependent[k]]) / fmigen_unit_scale[P->dependent[k]]);
#else
    /* two or more: Euclidean, like the Frobenius ‖B‖; vi = |ṽ_d| / ‖B‖, 0
     * at rest (no direction of motion, nothing that could pass a limit).
     * ‖B‖ from velocity_gain for two, from the embedding for more (it
     * forms Φ_d⁻¹Φ_i anyway; the runtime would need a solve per
     * independent coordinate) */
    double vi2 = 0.0, vd2 = 0.0;
    for (int k = 0; k < NI; k++) {
        const double x = v[P->independent[k]] / fmigen_unit_scale[P->independent[k]];
        vi2 += x * x;
    }
    for (int k = 0; k < NQ - NI; k++) {
        const double x = v[P->dependent[k]] / fmigen_unit_scale[P->dependent[k]];
        vd2 += x * x;
    }
    vd = sqrt(vd2);
    if (vi2 > 0.0) {
#if NI == 2
        const double g = velocity_gain(c, sqrt(vi2), vd);
#else
        const double g = sqrt(c->lim_b2);
#endif
        if (g > 0.0) vi = vd / g;
        else vd = 0.0;   /* B = 0 (nothing depends on v_i) or no solve: no limit */
    }
#endif
    const double vi0 = c->lim_vi[0], vd0 = c->lim_vd[0];
    const int full = c->lim_n >= 2;
    c->lim_vi[0] = c->lim_vi[1]; c->lim_vd[0] = c->lim_vd[1];
    c->lim_vi[1] = vi; c->lim_vd[1] = vd;
    c->lim_n += !full;
    /* vd > 0: dependent coordinates that stand still are no limit (at a
     * limit they move on while v_i vanishes) */
    if (!(full && FMIGEN_LIMIT_GAIN * vi < vi0 && vd > 0.0 && vd * vi0 >= FMIGEN_LIMIT_GAIN * vd0 * vi)) return 0;
    limit_record(c, vi0, vd0, vi, vd);
    return 1;
}

int fmigen_core_limit(FmigenCore *c)
{
    return core_limit(c);
}
#endif

#if !FMIGEN_KINEMATIC   /* a kinematic FMU integrates nothing (fmigen_core_step) */
/* x has FMIGEN_NX entries: [q_i, v_i], or [q, v] for an augmented formulation */
static int one_step(FmigenCore *c, double *x, double t, double h)
{
    double k1[FMIGEN_NX];
    /* the step's start is a state of the trajectory: its solve becomes the
     * base the later stages and the next step continue (a memo hit, after
     * a commit, is that base already) */
    if (rhs(c, t, x, k1, 1, NULL)) return 1;
#if FMIGEN_SWITCHING
    if (switch_partition(c, x)) {
        /* the amplification history was the old partition's */
        c->lim_n = 0;
        if (rhs(c, t, x, k1, 1, NULL)) return 1;
    }
#endif
#if FMIGEN_LIMIT_TEST
    if (core_limit(c)) return 1;
#endif
    if (c->solver == FMIGEN_EULER) {
        FMIGEN_UNROLL for (int i = 0; i < FMIGEN_NX; i++) x[i] += h * k1[i];
        return 0;
    }
    if (c->solver == FMIGEN_SYMPLECTIC) {
        /* x = [positions, velocities] (independent q_i, v_i; augmented: all
         * q, v): v += h·a(q, v), then q += h·v with the new v.  One
         * evaluation, like explicit Euler, but the energy error stays bounded
         * instead of growing: what real-time simulators integrate with. */
        const int half = FMIGEN_NX / 2;
        for (int i = 0; i < half; i++) x[half + i] += h * k1[half + i];
        for (int i = 0; i < half; i++) x[i] += h * x[half + i];
        return 0;
    }
    double k2[FMIGEN_NX], k3[FMIGEN_NX], k4[FMIGEN_NX], xs[FMIGEN_NX];
    for (int i = 0; i < FMIGEN_NX; i++) xs[i] = x[i] + 0.5 * h * k1[i];
    if (fmigen_core_rhs(c, t + 0.5 * h, xs, k2)) return 1;
    for (int i = 0; i < FMIGEN_NX; i++) xs[i] = x[i] + 0.5 * h * k2[i];
    if (fmigen_core_rhs(c, t + 0.5 * h, xs, k3)) return 1;
    for (int i = 0; i < FMIGEN_NX; i++) xs[i] = x[i] + h * k3[i];
    if (fmigen_core_rhs(c, t + h, xs, k4)) return 1;
    for (int i = 0; i < FMIGEN_NX; i++) x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    return 0;
}
#endif

/* Make the state at time t from the (already set) independent or integrated
 * coordinates consistent; on failure restore the last good state (q, v, t),
 * so fmi2LastSuccessfulTime and what GetReal returns stay honest. */
static int commit_or_restore(FmigenCore *c, double t, const double *q_good, const double *v_good,
                             double t_good)
{
    c->t = t;
    /* embedded: assemble q_d, v_d; augmented: the integrated q, v as they are */
#if FMIGEN_FORMULATION
    if (!fmigen_core_refresh(c)) return 0;
#else
    if (!fmigen_core_assemble(c)) return 0;   /* what refresh calls, without the call */
#endif
    memcpy(c->q, q_good, NQ * sizeof(double));
    memcpy(c->v, v_good, NQ * sizeof(double));
    c->t = t_good;
    return 1;
}

int fmigen_core_step(FmigenCore *c, double H)
{
    double q_good[NQ], v_good[NQ];
    memcpy(q_good, c->q, sizeof q_good);
    memcpy(v_good, c->v, sizeof v_good);
#if FMIGEN_KINEMATIC
    /* Kinematic FMU: q_i and v_i are inputs held over the step; the step
     * re-solves the dependent coordinates and velocities at its end. */
    return commit_or_restore(c, c->t + H, q_good, v_good, c->t);
#else
    double x[FMIGEN_NX];
    fmigen_state_get(c, x);
    const double t_end = c->t + H;
    double t = c->t;
    if (H == c->h) {
        /* one internal step: the communication step a HIL rig or a driving
         * simulator uses, without the division, floor and remainder below
         * (what their loop does for H = h: one step of t_end − t).  The
         * loop alone costs a Stewart doStep 52 instructions more (9,228
         * against 9,176, with the floor replaced by a conversion) */
        if (one_step(c, x, t, t_end - t)) return 1;
    } else {
        /* Full internal steps of h, then one shorter step to land on t_end.
         * A remainder below 1e-9·h is rounding in the communication points
         * (fmpy computes them as start + n·interval), not a real step: it
         * is absorbed into the last full step. */
        const double steps = floor(H / c->h);
        if (!(steps < FMIGEN_MAX_STEPS_PER_CALL)) {
            /* the instance layer refuses such calls first; this keeps the
             * integer below in range for any caller */
            c->err_x[0] = H;
            return fmigen_core_fail(c, FMIGEN_ERR_STEPS, 0, c->t);
        }
        long long nfull = (long long)steps;
        double rem = H - (double)nfull * c->h;
        if (rem < 1e-9 * c->h && nfull > 0) { rem = 0.0; }
        else if (c->h - rem < 1e-9 * c->h) { nfull += 1; rem = 0.0; }
        for (long long s = 0; s < nfull; s++) {
            double h = (s == nfull - 1 && rem == 0.0) ? t_end - t : c->h;
            if (one_step(c, x, t, h)) return 1;
            t = c->t + (double)(s + 1) * c->h;
        }
        if (rem > 0.0 && one_step(c, x, t, t_end - t)) return 1;
    }
    /* x finite: the commit's assembly tests it (the same values, in q and
     * v), and restores the state on failure */
    const double t_good = c->t;
    fmigen_state_set(c, x);
    return commit_or_restore(c, t_end, q_good, v_good, t_good);
#endif
}

/* The last error as text: formatted here, when the FMI layer (or a test's
 * harness) reads it after the step returned, from the numbers the step
 * recorded (fmigen_core_fail).  The partition is the current one: a failed
 * step does not switch it. */
const char *fmigen_core_message(FmigenCore *c)
{
    const size_t size = sizeof c->message;
    char *m = c->message;
    int n = 0;
    const double t = c->err_t;
#if !FMIGEN_FORMULATION
    const FmigenPartition *P = FMIGEN_PART(c);
#endif
    switch (c->err_kind) {
#if !FMIGEN_FORMULATION
    case FMIGEN_ERR_KINEMATICS:
    case FMIGEN_ERR_LIMIT:
        n = snprintf(m, size, "%s at t=%.9g (", c->err_kind == FMIGEN_ERR_LIMIT ? "limit position"
                                                 : "singular configuration", t);
        for (int i = 0; i < NI && n > 0 && (size_t)n < size; i++)
            n += snprintf(m + n, size - (size_t)n, "%s%s=%.9g", i ? ", " : "",
                          fmigen_coordinate_names[P->independent[i]], c->err_q[i]);
        if (n <= 0 || (size_t)n >= size) break;
        if (c->err_kind == FMIGEN_ERR_KINEMATICS)
#ifdef FMIGEN_REALTIME
            /* the loops' caps stop a solve as a singular configuration does */
            snprintf(m + n, size - (size_t)n, "): %s, or a loop reached this realtime build's cap (Newton %d, "
                     "polish %d, root's Newton %d, Aberth %d iterations: the FMU's documentation)",
                     P->failure[c->err_code], FMIGEN_REALTIME_NEWTON, FMIGEN_REALTIME_POLISH,
                     FMIGEN_REALTIME_POLY_NEWTON, FMIGEN_REALTIME_ABERTH);
#else
            snprintf(m + n, size - (size_t)n, "): %s", P->failure[c->err_code]);
#endif
        else {
            const double vi0 = c->err_x[0], vd0 = c->err_x[1], vi = c->err_x[2], vd = c->err_x[3];
            snprintf(m + n, size - (size_t)n,
                     "): the Jacobian of the constraints with respect to the dependent coordinates is turning "
                     "singular (in two steps %s fell %.3g-fold while %s rose %.3g-fold, "
                     "to %.3g); the mechanism passes onto another assembly branch, which these independent "
                     "coordinates do not parametrize: declare switch_independent to carry the motion through",
                     NI == 1 ? "max|v_i|" : "|v_d|/|B|", vi0 / vi,
                     NI == 1 ? "max|v_d|/max|v_i|" : "|B| = |dq_d/dq_i|", vd * vi0 / (vd0 * vi), vd / vi);
        }
        break;
#endif
    case FMIGEN_ERR_EMBEDDING:
        snprintf(m, size, "singular configuration at t=%.9g: %s", t, embedding_failure(c->err_code));
        break;
    case FMIGEN_ERR_DERIVATIVE:
        snprintf(m, size, "non-finite state derivative at t=%.9g", t);
        break;
    case FMIGEN_ERR_STATE:
        snprintf(m, size, "non-finite independent coordinate or velocity at t=%.9g", t);
        break;
    case FMIGEN_ERR_STEPS:
        snprintf(m, size, "a step of %g s needs more than %.0f internal steps", c->err_x[0],
                 (double)FMIGEN_MAX_STEPS_PER_CALL);
        break;
    case FMIGEN_ERR_TRIM:
        snprintf(m, size, "the static trim has no unique solution at the start (t=%.9g): %s", t,
                 c->err_code ? "the solved preloads are not finite"
                             : "a trimmed spring does not act on its coordinate there, or two act alike");
        break;
    default:
        fmigen_formulation_message(c);   /* fmigen_augmented.c's kinds */
        break;
    }
    return m;
}
