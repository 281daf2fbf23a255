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

#if defined(__GNUC__)
#define FMIGEN_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define FMIGEN_ALWAYS_INLINE static inline
#endif

/* LU with partial pivoting of the n×n row-major A in place (piv: the row
 * swaps); 1 when A is singular (a pivot not above 1e-13 of its largest
 * entry) or not finite.  One body, instantiated twice: for any n, and
 * inlined with n a constant and its loops unrolled (UNROLL) for the sizes a
 * Newton block or a diagonal block of Φ_d larger than 3×3 has (the
 * five-link's 5×5).  Both do the same operations in the same order (bit for
 * bit the same factors); a 5×5 costs 550 instead of 1,050 instructions (the
 * vehicle's step: 90,385 -> 81,795 instructions with the solve below). */
#define FMIGEN_LU_FACTOR_BODY(UNROLL)                                                          \
    {                                                                                          \
        double scale = 0.0;                                                                    \
        UNROLL for (int k = 0; k < n * n; k++) if (fabs(A[k]) > scale) scale = fabs(A[k]);     \
        if (!(scale > 0.0) || !isfinite(scale)) return 1;                                      \
        UNROLL for (int k = 0; k < n; k++) {                                                   \
            int p = k;                                                                         \
            UNROLL for (int i = k + 1; i < n; i++)                                             \
                if (fabs(A[i * n + k]) > fabs(A[p * n + k])) p = i;                            \
            if (!(fabs(A[p * n + k]) > 1e-13 * scale)) return 1;                               \
            piv[k] = p;                                                                        \
            if (p != k) UNROLL for (int j = 0; j < n; j++) {                                   \
                double tmp = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = tmp;    \
            }                                                                                  \
            UNROLL for (int i = k + 1; i < n; i++) {                                           \
                double l = A[i * n + k] /= A[k * n + k];                                       \
                UNROLL for (int j = k + 1; j < n; j++) A[i * n + j] -= l * A[k * n + j];       \
            }                                                                                  \
        }                                                                                      \
        return 0;                                                                              \
    }

/* b := A⁻¹ b from fmigen_lu_factor's factors.  It swaps whole rows, L
 * included, so LU = P·A with the final permutation: apply every swap to b
 * first, then substitute.  Instantiated like the factorization. */
#define FMIGEN_LU_SOLVE_BODY(UNROLL)                                                           \
    {                                                                                          \
        UNROLL for (int k = 0; k < n; k++)                                                     \
            if (piv[k] != k) { double tmp = b[k]; b[k] = b[piv[k]]; b[piv[k]] = tmp; }         \
        UNROLL for (int k = 0; k < n; k++)                                                     \
            UNROLL for (int i = k + 1; i < n; i++) b[i] -= LU[i * n + k] * b[k];               \
        UNROLL for (int k = n - 1; k >= 0; k--) {                                              \
            UNROLL for (int j = k + 1; j < n; j++) b[k] -= LU[k * n + j] * b[j];               \
            b[k] /= LU[k * n + k];                                                             \
        }                                                                                      \
    }

static int lu_factor_any(int n, double *A, int *piv) FMIGEN_LU_FACTOR_BODY()
FMIGEN_ALWAYS_INLINE int lu_factor_n(const int n, double *A, int *piv) FMIGEN_LU_FACTOR_BODY(FMIGEN_UNROLL)
static void lu_solve_any(int n, const double *LU, const int *piv, double *b) FMIGEN_LU_SOLVE_BODY()
FMIGEN_ALWAYS_INLINE void lu_solve_n(const int n, const double *LU, const int *piv, double *b)
    FMIGEN_LU_SOLVE_BODY(FMIGEN_UNROLL)

int fmigen_lu_factor(int n, double *A, int *piv)
{
    switch (n) {
    case 4: return lu_factor_n(4, A, piv);
    case 5: return lu_factor_n(5, A, piv);
    case 6: return lu_factor_n(6, A, piv);
    default: return lu_factor_any(n, A, piv);
    }
}

void fmigen_lu_solve(int n, const double *LU, const int *piv, double *b)
{
    switch (n) {
    case 4: lu_solve_n(4, LU, piv, b); return;
    case 5: lu_solve_n(5, LU, piv, b); return;
    case 6: lu_solve_n(6, LU, piv, b); return;
    default: lu_solve_any(n, LU, piv, b);
    }
}

/* p(z), p'(z) by Horner, and mag = Σ|a_k||z|^(degree−k), which bounds the
 * rounding error of the computed p: |p̂ − p(z)| ≤ γ_2d·mag (Higham, Accuracy
 * and Stability, §5.1). */
static void poly_eval(int degree, const double *a, double z, double *p, double *dp, double *mag)
{
    double pv = a[0], d = 0.0, m = fabs(a[0]), az = fabs(z);
    for (int k = 1; k <= degree; k++) { d = d * z + pv; pv = pv * z + a[k]; m = m * az + fabs(a[k]); }
    *p = pv; *dp = d; *mag = m;
}

/* atan(i/64), i = 0..64, in two parts: the correctly rounded double and the
 * rest (mpmath, 200 bits) */
static const double atan_64ths[65] = {
    0.0, 0x1.fff555bbb729bp-7, 0x1.ffd55bba97625p-6, 0x1.7fb818430da2ap-5, 0x1.ff55bb72cfdeap-5,
    0x1.3f59f0e7c559dp-4, 0x1.7ee182602f10fp-4, 0x1.be39ebe6f07c3p-4, 0x1.fd5ba9aac2f6ep-4,
    0x1.1e1fafb043727p-3, 0x1.3d6eee8c6626cp-3, 0x1.5c9811e3ec26ap-3, 0x1.7b97b4bce5b02p-3,
    0x1.9a6a8e96c8626p-3, 0x1.b90d7529260a2p-3, 0x1.d77d5df205736p-3, 0x1.f5b75f92c80ddp-3,
    0x1.09dc597d86362p-2, 0x1.18bf5a30bf178p-2, 0x1.278372057ef46p-2, 0x1.362773707ebccp-2,
    0x1.44aa436c2af0ap-2, 0x1.530ad9951cd4ap-2, 0x1.614840309cfe2p-2, 0x1.6f61941e4def1p-2,
    0x1.7d5604b63b3f7p-2, 0x1.8b24d394a1b25p-2, 0x1.98cd5454d6b18p-2, 0x1.a64eec3cc23fdp-2,
    0x1.b3a911da65c6cp-2, 0x1.c0db4c94ec9f0p-2, 0x1.cde53432c1351p-2, 0x1.dac670561bb4fp-2,
    0x1.e77eb7f175a34p-2, 0x1.f40dd0b541418p-2, 0x1.0039c73c1a40cp-1, 0x1.0657e94db30d0p-1,
    0x1.0c6145b5b43dap-1, 0x1.1255d9bfbd2a9p-1, 0x1.1835a88be7c13p-1, 0x1.1e00babdefeb4p-1,
    0x1.23b71e2cc9e6ap-1, 0x1.2958e59308e31p-1, 0x1.2ee628406cbcap-1, 0x1.345f01cce37bbp-1,
    0x1.39c391cd4171ap-1, 0x1.3f13fb89e96f4p-1, 0x1.445065b795b56p-1, 0x1.4978fa3269ee1p-1,
    0x1.4e8de5bb6ec04p-1, 0x1.538f57b89061fp-1, 0x1.587d81f732fbbp-1, 0x1.5d58987169b18p-1,
    0x1.6220d115d7b8ep-1, 0x1.66d663923e087p-1, 0x1.6b798920b3d99p-1, 0x1.700a7c5784634p-1,
    0x1.748978fba8e0fp-1, 0x1.78f6bbd5d315ep-1, 0x1.7d528289fa093p-1, 0x1.819d0b7158a4dp-1,
    0x1.85d69576cc2c5p-1, 0x1.89ff5ff57f1f8p-1, 0x1.8e17aa99cc05ep-1, 0x1.921fb54442d18p-1};
static const double atan_64ths_lo[65] = {
    0.0, -0x1.220c39d4dff50p-61, -0x1.5ec431444912cp-60, -0x1.86ef8f794f105p-63, -0x1.c934d86d23f1dp-60,
    0x1.ac4ce285df847p-58, -0x1.cfb654c0c3d98p-58, 0x1.f7b8f29a05987p-58, -0x1.cd37686760c17p-59,
    -0x1.b485914dacf8cp-59, 0x1.61a3b0ce9281bp-57, -0x1.054ab2c010f3dp-58, 0x1.347b0b4f881cap-58,
    0x1.cf601e7b4348ep-59, 0x1.17b10d2e0e5abp-61, 0x1.c648d1534597ep-57, 0x1.8ab6e3cf7afbdp-57,
    0x1.62e47390cb865p-56, 0x1.30ca4748b1bf9p-57, -0x1.077cdd36dfc81p-56, -0x1.963a544b672d8p-57,
    -0x1.5d5e43c55b3bap-56, -0x1.2566480884082p-57, -0x1.a725715711f00p-56, -0x1.c63aae6f6e918p-56,
    0x1.69c885c2b249ap-56, 0x1.b6d0ba3748fa8p-56, 0x1.9e6c988fd0a77p-56, -0x1.24dec1b50b7ffp-56,
    0x1.ae187b1ca5040p-56, -0x1.cc1ce70934c34p-56, -0x1.a2cfa4418f1adp-56, 0x1.a2b7f222f65e2p-56,
    0x1.0e53dc1bf3435p-56, -0x1.a3992dc382a23p-57, -0x1.b32c949c9d593p-55, -0x1.d5b495f6349e6p-56,
    0x1.974fa13b5404fp-58, -0x1.2bdaee1c0ee35p-58, 0x1.c621cec00c301p-55, -0x1.928df287a668fp-58,
    0x1.c421c9f38224ep-57, -0x1.09e73b0c6c087p-56, 0x1.c5d5e9ff0cf8dp-55, 0x1.1021137c71102p-55,
    -0x1.2304331d8bf46p-55, 0x1.ecf8b492644f0p-56, -0x1.f76d0163f79c8p-56, 0x1.2419a87f2a458p-56,
    0x1.4a33dbeb3796cp-55, -0x1.1bb74abda520cp-55, -0x1.5e5c9d8c5a950p-56, 0x1.0028e4bc5e7cap-57,
    -0x1.2b785350ee8c1p-57, -0x1.6ea6febe8bbbap-56, -0x1.a80386188c50ep-55, -0x1.8c34d25aadef6p-56,
    0x1.7b2a6165884a1p-59, 0x1.406a089803740p-55, 0x1.560821e2f3aa9p-55, -0x1.bf76229d3b917p-56,
    0x1.6b66e7fc8b8c3p-57, -0x1.55b9a5e177a1bp-55, -0x1.ec182ab042f61p-56, 0x1.1a62633145c07p-55};

/* Why not libm's: reading every coordinate of the Stewart platform's FMU
 * after a step takes twelve atan2 (the leg angles from their solved sin/cos
 * pairs), ~150 instructions each in glibc — 11 % of a doStep.  Here: the
 * octant by |y| <= |x| (r = the smaller over the larger, in [0, 1]), then
 * atan r = atan c + atan t with c = i/64 the nearest 64th (c = 0 below
 * 1/64, so that atan t never cancels most of atan c) and
 * t = (r − c)/(1 + r c) (r − c exact: Sterbenz), |t| <= 1/64, whose Taylor
 * series to t^9 is exact to 2^-63 relative (the next term t^11/11 <=
 * t·2^-60/11); atan c, π/2 and π are added in two parts.  The 64ths (with
 * eighths the series needed terms to t^19) save ten operations per call.
 * Error: within about one ulp of libm's (tests/test_runtime_lu.py, a
 * million points). */
double fmigen_atan2(double y, double x)
{
    const double ax = fabs(x), ay = fabs(y), sum = ax + ay;
    /* one test for NaN, an infinity (or a sum that overflows) and (±0, ±0) */
    if (!(sum > 0.0 && sum < INFINITY)) return atan2(y, x);
    const int swap = ay > ax;
    const double r = swap ? ax / ay : ay / ax;
    const int i = r < 0.015625 ? 0 : (int)(r * 64.0 + 0.5);
    const double c = 0.015625 * i;
    const double t = (r - c) / (1.0 + r * c), z = t * t;
    const double s = z * (-1.0 / 3 + z * (1.0 / 5 + z * (-1.0 / 7 + z * (1.0 / 9))));
    double a = atan_64ths[i] + (atan_64ths_lo[i] + (t + t * s));
    if (swap) a = (0x1.921fb54442d18p+0 - a) + 0x1.1a62633145c07p-54;   /* π/2 − a */
    if (x < 0.0) a = (0x1.921fb54442d18p+1 - a) + 0x1.1a62633145c07p-53;  /* π − a */
    return copysign(a, y);
}

/* All complex roots by Aberth–Ehrlich iteration (simultaneous Newton with
 * repulsion; converges cubically to every root, the same roots as the
 * companion-matrix eigenvalues).  Returns 0 when converged. */
#define FMIGEN_MAX_DEGREE 32
static int all_roots(int degree, const double *a, double *re, double *im)
{
    if (degree > FMIGEN_MAX_DEGREE || a[0] == 0.0) return 1;
    /* initial points on a circle of the Cauchy-bound radius, rotated off the axes */
    double R = 0.0;
    for (int k = 1; k <= degree; k++) { double r = fabs(a[k] / a[0]); if (r > R) R = r; }
    R = 1.0 + R;
    for (int k = 0; k < degree; k++) {
        double ang = 6.283185307179586 * k / degree + 0.4;
        re[k] = 0.5 * R * cos(ang); im[k] = 0.5 * R * sin(ang);
    }
    for (int it = 0; it < 500; it++) {
        double worst = 0.0;
        for (int k = 0; k < degree; k++) {
            /* p(z) and p'(z) in complex arithmetic (Horner) */
            double pr = a[0], pi = 0.0, dr = 0.0, di = 0.0, zr = re[k], zi = im[k];
            for (int j = 1; j <= degree; j++) {
                double ndr = dr * zr - di * zi + pr, ndi = dr * zi + di * zr + pi;
                dr = ndr; di = ndi;
                double npr = pr * zr - pi * zi + a[j], npi = pr * zi + pi * zr;
                pr = npr; pi = npi;
            }
            double den = dr * dr + di * di;
            if (den == 0.0) { re[k] += 1e-8 * R; continue; }
            double nr = (pr * dr + pi * di) / den, ni = (pi * dr - pr * di) / den; /* p/p' */
            double sr = 0.0, si = 0.0; /* sum 1/(z_k - z_j) */
            for (int j = 0; j < degree; j++) if (j != k) {
                double ar = zr - re[j], ai = zi - im[j], d2 = ar * ar + ai * ai;
                if (d2 > 0.0) { sr += ar / d2; si -= ai / d2; }
            }
            /* w = N / (1 - N*S) */
            double br = 1.0 - (nr * sr - ni * si), bi = -(nr * si + ni * sr), b2 = br * br + bi * bi;
            if (b2 == 0.0) continue;
            double wr = (nr * br + ni * bi) / b2, wi = (ni * br - nr * bi) / b2;
            re[k] -= wr; im[k] -= wi;
            double step = sqrt(wr * wr + wi * wi) / (1.0 + sqrt(re[k] * re[k] + im[k] * im[k]));
            if (step > worst) worst = step;
        }
        if (worst < 1e-15) return 0;
    }
    return 0; /* best effort: the caller verifies the chosen root by Newton polishing */
}

int fmigen_poly_root(int degree, const double *coeffs, double *x)
{
    const double x0 = *x;
    double z = x0, p, dp, mag;
    /* Newton from the previous value: a few iterations, and the result must
     * stay close to it (continuity), otherwise the branch may have been lost.
     * Converged when the step is below 1e-15 relative, or when p(z) is
     * already within the rounding error of its own evaluation: the
     * polynomial's large coefficients (the landing gear's reach 1e55) leave
     * Newton oscillating at a few 1e-15 — near a double root at 1e-9 — and
     * without the second test every such solve fell through to all_roots'
     * 500 Aberth iterations (97 % of a landing-gear step).  The caller
     * verifies the block's own polynomials at the result either way. */
    for (int it = 0; it < 8; it++) {
        poly_eval(degree, coeffs, z, &p, &dp, &mag);
        if (dp == 0.0 || !isfinite(dp)) break;
        double dz = p / dp, zp = z;
        z -= dz;
        int converged = fabs(dz) <= 1e-15 * (1.0 + fabs(z));
        if (!converged && fabs(p) <= 4.0 * degree * DBL_EPSILON * mag) { z = zp; converged = 1; }
        if (converged) {
            if (fabs(z - x0) <= 0.05 * (1.0 + fabs(x0))) { *x = z; return 0; }
            break;
        }
    }
    /* Fallback: every root, then the real one nearest the previous value. */
    double re[FMIGEN_MAX_DEGREE], im[FMIGEN_MAX_DEGREE];
    if (all_roots(degree, coeffs, re, im)) return 3;
    int best = -1;
    for (int k = 0; k < degree; k++) {
        if (fabs(im[k]) > 1e-7 * (1.0 + fabs(re[k]))) continue;
        if (best < 0 || fabs(re[k] - x0) < fabs(re[best] - x0)) best = k;
    }
    if (best < 0) return 3;  /* no real root left: singular configuration */
    z = re[best];
    for (int it = 0; it < 5; it++) {  /* polish */
        poly_eval(degree, coeffs, z, &p, &dp, &mag);
        if (dp == 0.0) break;
        z -= p / dp;
    }
    if (!isfinite(z)) return 3;
    *x = z;
    return 0;
}

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
        /* name the block and the configuration it was asked for */
        int n = snprintf(c->message, sizeof c->message, "singular configuration at t=%.9g (", t);
        for (int i = 0; i < NI && n > 0 && (size_t)n < sizeof c->message; i++)
            n += snprintf(c->message + n, sizeof c->message - (size_t)n, "%s%s=%.9g", i ? ", " : "",
                          fmigen_coordinate_names[P->independent[i]], q[P->independent[i]]);
        if (n > 0 && (size_t)n < sizeof c->message)
            snprintf(c->message + n, sizeof c->message - (size_t)n, "): %s", P->failure[k]);
    }
    return k;
}

void fmigen_base_accept(FmigenBase *b, double t, const double *q, const double *v, const double *sol)
{
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
    for (int k = 0; k < n; k++)
        if (memcmp(&a[index[k]], &x[k], sizeof(double)) != 0) return 0;
    return 1;
}

static int solved_matches(const FmigenCore *c, double t, const double *x)
{
    const FmigenSolved *m = &c->solved;
    if (!m->valid || m->part != c->part || (FMIGEN_KINEMATICS_TIME && memcmp(&m->t, &t, sizeof t) != 0))
        return 0;
    return same_bits(m->q, FMIGEN_PART(c)->independent, x, NI) &&
           (NP == 0 || memcmp(m->p, c->p, NP * sizeof(double)) == 0);
}

/* A memo hit whose embedding half (prepare) also holds for v_i = x[NI..2NI)
 * and, when the embedding depends on it, t. */
static int work_matches(const FmigenCore *c, double t, const double *x)
{
    const FmigenSolved *m = &c->solved;
    return m->have_work && same_bits(m->v, FMIGEN_PART(c)->independent, x + NI, NI) &&
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
    if (k) snprintf(c->message, sizeof c->message, "singular configuration at t=%.9g: %s", t,
                    embedding_failure(k));
    return k;
}
#endif

const double *fmigen_core_inputs(const FmigenCore *c, double t, double *buf)
{
    if (!NU || !c->interpolate) return c->u;
    for (int k = 0; k < NU; k++) buf[k] = c->u[k] + c->du[k] * (t - c->tu);
    return buf;
}

static int rhs(FmigenCore *c, double t, const double *x, double *dx, int accept)
{
#if FMIGEN_FORMULATION
    (void)accept;
    return fmigen_augmented_rhs(c, t, x, dx);   /* fmigen_augmented.c, x = [q, v] */
#else
    const FmigenPartition *P = FMIGEN_PART(c);
    const FmigenSolved *m = &c->solved;
    double q[NQ], v[NQ], trig[2 * NQ], sol[FMIGEN_DIM(NSOL)], work[FMIGEN_DIM(FMIGEN_NWORK)];
    for (int k = 0; k < NI; k++) v[P->independent[k]] = x[NI + k];
    const int hit = solved_matches(c, t, x);
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
    if (hit && work_matches(c, t, x)) { vs = m->v; ws = m->work; }
    else k = P->prepare(t, qs, v, c->p, ts, work);
    double ubuf[FMIGEN_DIM(NU)];
    if (!k) k = P->finish(t, qs, vs, c->p, fmigen_core_inputs(c, t, ubuf), ts, ws, dx + NI);
    if (k) {
        snprintf(c->message, sizeof c->message, "singular configuration at t=%.9g: %s", t,
                 embedding_failure(k));
        return 1;
    }
    for (int i = 0; i < NI; i++) dx[i] = x[NI + i];
    if (!fmigen_all_finite(dx, FMIGEN_NX)) {
        snprintf(c->message, sizeof c->message, "non-finite state derivative at t=%.9g", t);
        return 1;
    }
    /* (a memo hit's solution is the base already) */
    if (accept && !hit) fmigen_base_accept(&c->base, t, q, v, sol);
#if FMIGEN_SWITCHING
    /* the state's angles complete (deferred ones from trig), for a switch */
    if (accept) P->angles(c->base.q, ts);
#endif
    return 0;
#endif
}

int fmigen_core_rhs(FmigenCore *c, double t, const double *x, double *dx)
{
    return rhs(c, t, x, dx, 0);
}

int fmigen_core_rhs_accept(FmigenCore *c, double t, const double *x, double *dx)
{
    return rhs(c, t, x, dx, 1);
}

int fmigen_core_assemble(FmigenCore *c)
{
    const FmigenPartition *P = FMIGEN_PART(c);
    if (!fmigen_all_finite_at(c->q, P->independent, NI) || !fmigen_all_finite_at(c->v, P->independent, NI)) {
        snprintf(c->message, sizeof c->message, "non-finite independent coordinate or velocity");
        return 1;
    }
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
    if (kw == 1) {
        snprintf(c->message, sizeof c->message, "singular configuration at t=%.9g: %s", c->t, embedding_failure(1));
        return 1;
    }
#endif
    /* the accepted solution: the next solve predicts from it */
    fmigen_base_accept(&c->base, c->t, c->q, c->v, sol);
#if FMIGEN_FORMULATION
    /* the start of an augmented formulation: it integrates every angle */
    P->angles(c->q, trig);
#else
#if FMIGEN_SWITCHING
    P->angles(c->base.q, trig);
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
#if !FMIGEN_FORMULATION
    if (todo & FMIGEN_OBSERVE_ANGLES) fmigen_partitions[c->solved.part].angles(c->q, FMIGEN_MEMO_TRIG(&c->solved));
#endif
#if NC > 0
    if (todo & FMIGEN_OBSERVE_RESIDUAL) {
        double phi[NC];
#if FMIGEN_FORMULATION
        fmigen_phi(c->t, c->q, c->v, c->p, u, phi);
#else
        /* from the sin/cos the kinematics solved, not sin/cos of their atan2 */
        fmigen_phi_trig(c->t, c->q, c->v, c->p, u, FMIGEN_MEMO_TRIG(&c->solved), phi);
#endif
        /* in a local: through c-> every comparison reloads and stores it */
        double r = 0.0;
        for (int j = 0; j < NC; j++) if (fabs(phi[j]) > r) r = fabs(phi[j]);
        c->residual = r;
    }
#endif
#if NY > 0
    if (todo & FMIGEN_OBSERVE_OUTPUTS) {
#if FMIGEN_FORMULATION
        fmigen_outputs(c->t, c->q, c->v, c->p, u, c->y);
#else
        fmigen_outputs_trig(c->t, c->q, c->v, c->p, u, FMIGEN_MEMO_TRIG(&c->solved), c->y);
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
        double ap = amplification(&fmigen_partitions[p], v);
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
        c->base.sol[s] = kind == 0 ? sin(a) : kind == 1 ? cos(a) : a;
    }
    return 1;
}
#endif

/* x has FMIGEN_NX entries: [q_i, v_i], or [q, v] for an augmented formulation */
static int one_step(FmigenCore *c, double *x, double t, double h)
{
    double k1[FMIGEN_NX];
    /* the step's start is a state of the trajectory: its solve becomes the
     * base the later stages and the next step continue (a memo hit, after
     * a commit, is that base already) */
    if (rhs(c, t, x, k1, 1)) return 1;
#if FMIGEN_SWITCHING
    if (switch_partition(c, x) && rhs(c, t, x, k1, 1)) return 1;
#endif
    if (c->solver == FMIGEN_EULER) {
        for (int i = 0; i < FMIGEN_NX; i++) x[i] += h * k1[i];
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

/* Make the state at time t from the (already set) independent or integrated
 * coordinates consistent; on failure restore the last good state (q, v, t),
 * so fmi2LastSuccessfulTime and what GetReal returns stay honest. */
static int commit_or_restore(FmigenCore *c, double t, const double *q_good, const double *v_good,
                             double t_good)
{
    c->t = t;
    /* embedded: assemble q_d, v_d; augmented: the integrated q, v as they are */
    if (!fmigen_core_refresh(c)) return 0;
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
    /* Full internal steps of h, then one shorter step to land on t_end.  A
     * remainder below 1e-9·h is rounding in the communication points (fmpy
     * computes them as start + n·interval), not a real step: it is absorbed
     * into the last full step. */
    const double steps = floor(H / c->h);
    if (!(steps < FMIGEN_MAX_STEPS_PER_CALL)) {
        /* the instance layer refuses such calls first; this keeps the
         * integer below in range for any caller */
        snprintf(c->message, sizeof c->message, "a step of %g s needs more than %.0f internal steps", H,
                 (double)FMIGEN_MAX_STEPS_PER_CALL);
        return 1;
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
    if (!fmigen_all_finite(x, FMIGEN_NX)) {
        snprintf(c->message, sizeof c->message, "state became non-finite before t=%.9g", t_end);
        return 1;
    }
    const double t_good = c->t;
    fmigen_state_set(c, x);
    return commit_or_restore(c, t_end, q_good, v_good, t_good);
#endif
}
