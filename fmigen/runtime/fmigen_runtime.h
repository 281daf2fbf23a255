/* fmigen runtime: hand-written, shared by every generated FMU.
 *
 * The generated model.c provides the model functions declared below; this
 * runtime provides the embedded ODE (q̈_i from q_i, q̇_i), the fixed-step
 * integrators and the FMI glue.  No globals, no static mutable state: every
 * bit of state lives in FmigenCore, so instances are independent and the
 * whole state can be copied for fmi2GetFMUstate.
 */
#ifndef FMIGEN_RUNTIME_H
#define FMIGEN_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "model_config.h"
#include "fmigen_names.h"

#define FMIGEN_DIM(x) ((x) > 0 ? (x) : 1)

/* The same bits with any compiler and flags (docs/portability.md):
 * - no contraction of a*b + c into a fused multiply-add, which rounds once
 *   where the source rounds twice.  C99's pragma says so for every
 *   compiler that honours it (clang, and compilers that contract only when
 *   allowed); gcc ignores it (and contracts by default in its GNU modes on
 *   every target with an FMA: aarch64, powerpc, x86-64 with -mfma), but
 *   takes the optimize pragma, which sets -ffp-contract=off for the rest
 *   of the translation unit.  Every .c of the FMU includes this header
 *   first, before any function.
 * - no excess precision: a compiler that keeps doubles in x87 registers
 *   (FLT_EVAL_METHOD != 0: 32-bit x86 without SSE2) rounds differently;
 *   refused below rather than giving other bits in silence. */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER)
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#pragma fp_contract(off)
#elif !defined(__GNUC__) || defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif
#include <float.h>
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != -1 && !defined(FMIGEN_ALLOW_EXCESS_PRECISION)
#error "fmigen: doubles evaluated in a wider format (FLT_EVAL_METHOD != 0, e.g. x87): compile with SSE2 (gcc -msse2 -mfpmath=sse) or define FMIGEN_ALLOW_EXCESS_PRECISION to accept other bits"
#endif

/* Not inlined into its caller (a generated function kept out of line for
 * compile time and register pressure); with a compiler that has no way to
 * say so, an ordinary function. */
#if defined(__GNUC__) || defined(__TINYC__)
#define FMIGEN_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define FMIGEN_NOINLINE __declspec(noinline)
#else
#define FMIGEN_NOINLINE
#endif

/* Out of line and compiled at -O1 (gcc only; clang and others ignore or
 * reject the optimize attribute): for the Gröbner sequences' large
 * straight-line coefficient functions, where gcc's -O2 time is nearly all
 * register allocation that sums of products do not need.  IEEE arithmetic
 * either way (no contraction, no fast-math): the same bits.  An importer
 * may define it with -D to compile them at its own level. */
#ifndef FMIGEN_NOINLINE_COLD
#if defined(__GNUC__) && !defined(__clang__) && !defined(__TINYC__)
#define FMIGEN_NOINLINE_COLD __attribute__((noinline, optimize("O1")))
#else
#define FMIGEN_NOINLINE_COLD FMIGEN_NOINLINE
#endif
#endif

/* At most this many internal steps in one doStep (or fmigen_core_step):
 * beyond it doStep is an Error, never a silent hang or a skipped step.
 * Importers that compile the sources may set it with -D. */
#ifndef FMIGEN_MAX_STEPS_PER_CALL
#define FMIGEN_MAX_STEPS_PER_CALL 10000000
#endif

/* The last accepted kinematics solution, from which every solve predicts
 * and against which it checks continuity: the solution vector (per block its
 * polynomial variables, s and c of each angle and each length, or a Newton
 * block's coordinates), the velocities and the time it belongs to.
 * continuity = 0 before the first assembly: the prediction is then the
 * build-time start and only picks the nearest branch. */
typedef struct {
    int continuity;
    double t;
    double sol[FMIGEN_DIM(NSOL)];
    double q[NQ], v[NQ];
    /* Continuous angles.  A dependent angle the kinematics writes to q is
     * atan2 of its (sin, cos) moved by whole turns to the one nearest q of
     * this base (fmigen_unwrap).  A deferred one (fmigen_kinematic_angles)
     * is not in q here, so the base keeps its turns instead: turn[i] whole
     * turns added to atan2 at this state, wind_s[i] its sine here; a later
     * state adds one more turn when its sine has the other sign on the
     * cosine's negative side (it crossed ±π, fmigen_wind).  Updated at every
     * accept (generated fmigen_angle_turns), so part of the FMU state. */
    double turn[NQ], wind_s[NQ];
} FmigenBase;

#define FMIGEN_2PI 6.283185307179586

/* The whole number of turns k nearest (ref − a)/2π (half away from zero),
 * 0 when |ref − a| ≤ π: the common case (no turn yet) is one comparison,
 * and the rounding a conversion, one instruction where a call to round or
 * nearbyint is not.  NaN and distances beyond 2^52 give 0. */
static inline double fmigen_turns_near(double ref, double a)
{
    const double d = ref - a;
    if (!(fabs(d) > 3.141592653589793 && fabs(d) < 0x1p52)) return 0.0;
    const double x = d * (1.0 / FMIGEN_2PI);
    return (double)(long long)(x + copysign(0.5, x));
}

/* An angle a from atan2, in (−π, π], moved by whole turns to the
 * representative nearest ref (the last accepted value): a dependent angle
 * that turns is continuous, as the physical joint is. */
static inline double fmigen_unwrap(double a, double ref)
{
    const double k = fmigen_turns_near(ref, a);
    return k == 0.0 ? a : a + FMIGEN_2PI * k;
}

/* Whole turns (−1, 0 or +1) an angle gained from the state whose sine was
 * s0 to the one with (s, c): it crossed atan2's cut at ±π when the sine
 * changed sign on the cosine's negative side (steps are far below π: the
 * kinematics' continuity check bounds them). */
static inline double fmigen_wind(double s0, double s, double c)
{
    if (!(c < 0.0) || signbit(s0) == signbit(s)) return 0.0;
    return signbit(s) ? 1.0 : -1.0;
}

/* A deferred angle a = atan2(trig[2i], trig[2i + 1]) at the state trig
 * belongs to, with the turns base has for i and the one it gained since
 * (fmigen_wind; none when base is that state): the same a + 2π·k as
 * fmigen_unwrap. */
static inline double fmigen_turned(double a, const FmigenBase *b, const double *trig, int i)
{
    const double k = b->turn[i] + fmigen_wind(b->wind_s[i], trig[2 * i], trig[2 * i + 1]);
    return k == 0.0 ? a : a + FMIGEN_2PI * k;
}

/* ---- generated by fmigen (model.c) ---- */
/* q_d from q_i, every block verified and continued from `base`
 * (codegen.kinematics_code); the new solution vector goes to sol.  Also
 * trig[2k], trig[2k+1] = sin, cos of every angle the model functions use and
 * of every dependent angle a sequence recovers from its (sin, cos) pair.
 * Such an angle that nothing reads bare is left out of q:
 * fmigen_kinematic_angles(q, trig, base) completes q with it (atan2), for when q
 * itself is read (outputs, residual).  0, or a code k > 0 whose message is
 * fmigen_kinematics_failure[k] (the block). */
int fmigen_kinematics(double t, double *q, const double *p, const FmigenBase *base, double *sol, double *trig);
/* the deferred angles at the state trig belongs to, continued from base's
 * turns (FmigenBase) */
void fmigen_kinematic_angles(double *q, const double *trig, const FmigenBase *base);
/* at an accept, before base takes the new state: the deferred angles'
 * turns at the state trig belongs to (the first accept: the turns nearest
 * base->q, the start) */
void fmigen_angle_turns(FmigenBase *base, const double *trig);
extern const char *const fmigen_kinematics_failure[];
void fmigen_phi(double t, const double *q, const double *v, const double *p, const double *u, double *out);
void fmigen_outputs(double t, const double *q, const double *v, const double *p, const double *u, double *out);
/* The same with sin/cos of the angles the kinematics solved taken from its
 * trig hand-over (FMIGEN_RESIDUAL_ANGLES, FMIGEN_OUTPUTS_ANGLES: 1 when q
 * must still hold the deferred angles) */
void fmigen_phi_trig(double t, const double *q, const double *v, const double *p, const double *u,
                     const double *trig, double *out);
void fmigen_outputs_trig(double t, const double *q, const double *v, const double *p, const double *u,
                         const double *trig, double *out);
/* max_j |Φ_j| of fmigen_phi_trig's rows (a NaN row is not taken): the
 * residual an FMU reports (the rows in lanes are not stored) */
double fmigen_residual_trig(double t, const double *q, const double *v, const double *p, const double *u,
                            const double *trig);
/* The embedding (codegen_embedding.py): q complete, v_i set in v; fill v_d.
 * The right-hand side in two halves: prepare fills v_d and, in work
 * (FMIGEN_NWORK doubles), everything of q̈_i that does not read the inputs;
 * finish computes q̈_i from it and u.  0, or 1 when Φ_d is singular, 2 when
 * BᵀMB is not positive definite. */
int fmigen_embedded_velocities(double t, const double *q, double *v, const double *p, const double *u,
                               const double *trig);
int fmigen_embedded_prepare(double t, const double *q, double *v, const double *p, const double *trig,
                            double *work);
int fmigen_embedded_finish(double t, const double *q, const double *v, const double *p, const double *u,
                           const double *trig, const double *work, double *qdd);
extern const int fmigen_independent[];
extern const int fmigen_dependent[];
extern const int fmigen_sol_layout[];
extern const double fmigen_q_start[];
extern const double fmigen_v_start[];
extern const double fmigen_p_default[];
extern const double fmigen_u_default[];
extern const double fmigen_sol_start[];
extern const char *const fmigen_coordinate_names[];
extern const double fmigen_unit_scale[];
/* Prescribed coordinates (model.Prescription, codegen._prescribed_tables):
 * per prescription the coordinate's index in q, the input it follows and its
 * driving force (indices in u), and the filter's omega = 1/time constant. */
#ifndef FMIGEN_NPRESCRIBED
#define FMIGEN_NPRESCRIBED 0
#endif
#if FMIGEN_NPRESCRIBED > 0
extern const int fmigen_prescribed_coordinate[];
extern const int fmigen_prescribed_input[];
extern const int fmigen_prescribed_drive[];
extern const double fmigen_prescribed_omega[];
#endif
/* A body's mass >= 0 and its central inertia positive semidefinite at the
 * tunable parameters p (generated from dae.mass_checks, the conditions that
 * read tunable parameters; a mass must also be finite): 0, or 1 + the first
 * that fails, with *value the mass or the principal minor that is negative
 * and *minor that minor's index (fmigen_psd3) or -1 for a mass.  The FMU
 * refuses parameter values that fail (fmigen_instance.c): BᵀMB can stay
 * positive definite with a negative mass on one body, and the motion is
 * then nonsense with fmi2OK. */
int fmigen_mass_check(const double *p, double *value, int *minor);
extern const char *const fmigen_mass_check_labels[];
extern const char *const fmigen_psd3_minors[];   /* (dae.PSD3_MINORS) */
#ifndef FMIGEN_NMASS_CHECKS
#define FMIGEN_NMASS_CHECKS 0
#endif

/* One partition (set of independent coordinates) with its generated
 * kinematics and embedding.  fmigen_partitions[0] is the declared one; more
 * come from Mechanism.switch_independent (coordinate switching, paper 004). */
#ifndef NPART
#define NPART 1
#endif
typedef struct {
    int (*kinematics)(double t, double *q, const double *p, const FmigenBase *base, double *sol, double *trig);
    void (*angles)(double *q, const double *trig, const FmigenBase *base);
    void (*turns)(FmigenBase *base, const double *trig);
    int (*velocities)(double t, const double *q, double *v, const double *p, const double *u,
                      const double *trig);
    int (*prepare)(double t, const double *q, double *v, const double *p, const double *trig, double *work);
    int (*finish)(double t, const double *q, const double *v, const double *p, const double *u,
                  const double *trig, const double *work, double *qdd);
    const int *independent, *dependent;
    const char *const *failure;
    const double *sol_start;
    const int *sol_layout;       /* per slot: coordinate, 0 sin / 1 cos / 2 the value; a slot of an
                                    angle sum has coordinate -1 - o, its terms at offset o: their
                                    count, then (coordinate, integer coefficient) pairs */
    int nsol;
} FmigenPartition;
extern const FmigenPartition fmigen_partitions[];

/* x^n for an integer 4 < n <= 64 of the generated code (codegen._Printer):
 * repeated squaring, which gcc unrolls for the constant n, instead of a pow()
 * call.  The Python runtime's fmigen_powi multiplies in the same order. */
static inline double fmigen_powi(double x, int n)
{
    double r = 1.0;
    for (;;) {
        if (n & 1) r *= x;
        n >>= 1;
        if (!n) return r;
        x *= x;
    }
}

/* A chunk of a large generated straight-line function (codegen_embedding.chunked):
 * not inlined back into its caller, and without gcc's SLP vectorization, whose
 * analysis of the chunks' many stores to their scratch struct took half of
 * gcc's time (the vehicle's model.c in chunks of 1,000: 22.2 s of CPU with
 * it, 11.6 s without; the instructions per step do not change). */
#if defined(__GNUC__) && !defined(__clang__)
#define FMIGEN_CHUNK static __attribute__((noinline, optimize("no-tree-slp-vectorize")))
#else
#define FMIGEN_CHUNK static FMIGEN_NOINLINE
#endif

/* max without libm's NaN rules (fmax is a library call at -O2) */
static inline double fmigen_max(double a, double b) { return a > b ? a : b; }

/* a short loop of known count unrolled (gcc -O2 does not by itself) */
#if defined(__GNUC__)
#define FMIGEN_UNROLL _Pragma("GCC unroll 8")
/* ... and a loop of any count four iterations at a time */
#define FMIGEN_UNROLL_4 _Pragma("GCC unroll 4")
#else
#define FMIGEN_UNROLL
#define FMIGEN_UNROLL_4
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
/* max |x_k| (0 for n = 0): the residual of rows computed one by one (the
 * generated fmigen_residual_trig where no row is in lanes; an augmented
 * formulation's fmigen_phi).  The max in a local, unrolled, two at a time
 * with SSE2 (maxpd, the max of each half, then of the two): measured when
 * Stewart's 18 rows came here, 189 -> 32 instructions.  A NaN |x_k| is not
 * taken (max(a, r) is a > r ? a : r, lane by lane), so the order does not
 * matter. */
static inline double fmigen_max_abs(const double *x, int n)
{
    int k = 0;
    double r = 0.0;
#if defined(__SSE2__)
    if (n >= 2) {
        const __m128d magnitude = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
        __m128d r2 = _mm_setzero_pd();
        FMIGEN_UNROLL for (; k + 2 <= n; k += 2) r2 = _mm_max_pd(_mm_and_pd(_mm_loadu_pd(x + k), magnitude), r2);
        r = _mm_cvtsd_f64(_mm_max_sd(_mm_unpackhi_pd(r2, r2), r2));
    }
#endif
    for (; k < n; k++) { const double a = fabs(x[k]); r = a > r ? a : r; }
    return r;
}
/* Every x[k] finite, by its bits: (bits & exponent) + 2^52 reaches 2^63
 * exactly when the exponent is all ones (±inf, NaN), so the OR of those sums
 * has bit 63 set iff some x[k] is not finite.  No floating-point operation:
 * it holds under any floating-point flags an importer compiles with (a sum
 * of x − x does not: -fassociative-math folds it) and raises no FE_INVALID.
 * Measured on a Stewart doStep, which tests 36 entries (the state, its
 * derivative, the independent coordinates and velocities): 171
 * instructions, where isfinite with a branch per entry took 253. */
static inline uint64_t fmigen_exponent_carry(double x)
{
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return (u & UINT64_C(0x7ff0000000000000)) + UINT64_C(0x0010000000000000);
}

static inline int fmigen_all_finite(const double *x, int n)
{
    uint64_t any = 0;
    FMIGEN_UNROLL for (int k = 0; k < n; k++) any |= fmigen_exponent_carry(x[k]);
    return !(any >> 63);
}

/* the same for x[index[0..n)] */
static inline int fmigen_all_finite_at(const double *x, const int *index, int n)
{
    uint64_t any = 0;
    FMIGEN_UNROLL for (int k = 0; k < n; k++) any |= fmigen_exponent_carry(x[index[k]]);
    return !(any >> 63);
}

/* Is the symmetric 3x3 matrix I = (xx, xy, xz, yy, yz, zz) positive
 * semidefinite?  Its seven principal minors (xx, yy, zz, the three 2x2, the
 * determinant) must be >= 0, to rounding: one of order k down to
 * -16·eps·s^k, s the largest |entry| (the rounding of this test, not noise
 * an inertia brings along: one computed as a difference of large terms, a
 * thin rod's by the parallel-axis theorem say, can fall below it).  Returns
 * -1 when it is, else the index of the first minor that is not, with its
 * value in *value.  The same operations as dae.psd3 (the Python runtime's
 * and the build's); a build that contracts them into FMAs (-ffp-contract=fast)
 * can decide differently within rounding of the boundary. */
static inline int fmigen_psd3(const double *I, double *value)
{
    const double xx = I[0], xy = I[1], xz = I[2], yy = I[3], yz = I[4], zz = I[5];
    double s = fabs(xx);
    for (int k = 1; k < 6; k++) s = fabs(I[k]) > s ? fabs(I[k]) : s;
    const double e = 16.0 * 2.220446049250313e-16 * s;
    const double m[7] = {xx, yy, zz, xx * yy - xy * xy, xx * zz - xz * xz, yy * zz - yz * yz,
                         xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * xz) + xz * (xy * yz - yy * xz)};
    const double floor[3] = {-e, -e * s, -e * s * s};
    for (int k = 0; k < 7; k++)
        if (!(m[k] >= floor[k < 3 ? 0 : k < 6 ? 1 : 2])) { *value = m[k]; return k; }
    return -1;
}

/* (s, c) = (sin θ, cos θ) of a Newton block's angle, moved with its step:
 * θ + d = a.  Why: every Newton iteration evaluated sin and cos of every
 * angle of its block again (libm, ~100 instructions a pair; the landing gear
 * spends more on them than on its LU), while a step after the first is
 * small.  For |d| <= 1/32 the pair is rotated by d with sin d and cos d from
 * their Taylor series to d^7 and d^8 (the next terms, d^9/9! and d^10/10!,
 * are at most 2.5e-18 of sin d and 2.5e-22 of cos d); a larger step takes
 * fmigen_sincos of a, called, not inlined (inlined here in the AVX copy it
 * cost the landing gear's step 47 instructions, measured); not libm's,
 * whose bits differ between C libraries. */
void fmigen_sincos_call(double x, double *s, double *c);   /* fmigen_sincos, never inlined */
static inline void fmigen_rotate(double *s, double *c, double d, double a)
{
    if (fabs(d) <= 0.03125) {
        const double z = d * d;
        const double sd = d * (1.0 + z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040))));
        const double cd = 1.0 + z * (-0.5 + z * (1.0 / 24 + z * (-1.0 / 720 + z * (1.0 / 40320))));
        const double s0 = *s, c0 = *c;
        *s = s0 * cd + c0 * sd;
        *c = c0 * cd - s0 * sd;
    } else {
        fmigen_sincos_call(a, s, c);
    }
}

/* ---- solution-sequence helpers used by the generated kinematics ----
 * Each returns non-zero at a singularity (vanishing leading coefficient or a
 * negative discriminant), which the FMU reports as fmi2Discard. */
static inline int fmigen_linear(double a1, double a0, double *x)
{
    if (!(fabs(a1) > 1e-13 * fabs(a0)) || a1 == 0.0) return 1;
    *x = -a0 / a1;
    return 0;
}

/* A root of a2 x² + a1 x + a0 given r = √disc, which the caller computed
 * from the discriminant's factored form (an exact completion,
 * fmigen.triangular.Completion: where the two roots meet, the plain a1² −
 * 4 a2 a0 cancels and costs the roots half their digits): the one on pred's
 * side of −a1/(2 a2), or with `other` the one on the far side; without
 * cancellation, as fmigen_quadratic_near. */
static inline int fmigen_quadratic_root(double a2, double a1, double a0, double r, double pred, int other, double *x)
{
    double scale = fabs(a2) + fabs(a1) + fabs(a0);
    if (!(fabs(a2) > 1e-13 * scale) || !(r >= 0.0)) return 1;
    if ((2.0 * a2 * pred + a1 >= 0.0) == (other != 0)) r = -r;
    if (-a1 * r > 0.0 || a1 == 0.0) *x = (-a1 + r) / (2.0 * a2);
    else {
        const double den = -a1 - r;
        if (den == 0.0) return 1;
        *x = 2.0 * a0 / den;
    }
    return !(*x == *x);
}

/* The root of a2 x² + a1 x + a0 nearest `pred` (the value predicted from
 * the previous solution: the branch is continued, never fixed).  The roots
 * (−a1 ± √disc)/(2 a2) lie symmetric about −a1/(2 a2), so the nearest is the
 * one on pred's side: sign = sgn(2 a2 pred + a1), no second root needed.  It
 * is computed without cancellation: when −a1 and sign·√disc have opposite
 * signs, as the equivalent 2 a0 / (−a1 − sign·√disc).  A slightly negative
 * discriminant is round-off at a double root. */
static inline int fmigen_quadratic_near(double a2, double a1, double a0, double pred, double *x)
{
    double scale = fabs(a2) + fabs(a1) + fabs(a0);
    if (!(fabs(a2) > 1e-13 * scale)) return 1;
    double disc = a1 * a1 - 4.0 * a2 * a0;
    if (disc < 0.0) {
        if (disc < -1e-12 * (a1 * a1 + fabs(4.0 * a2 * a0))) return 2;
        disc = 0.0;
    }
    return fmigen_quadratic_root(a2, a1, a0, sqrt(disc), pred, 0, x);
}

/* Real root of a univariate polynomial (coefficients highest power first)
 * continuing the branch of the prediction *x: Newton from *x, and if that does
 * not converge or jumps away, all roots (Aberth iteration, i.e. the
 * eigenvalues of the companion matrix) and the real one nearest *x. */
int fmigen_poly_root(int degree, const double *coeffs, double *x);

/* Integer polynomials from tables (a large Gröbner sequence step's
 * coefficients, generated by fmigen.generate.statements.poly_table):
 * v[0] = 1 and the generators v[1..first-1] set by the caller; monomial k
 * becomes v[first + k] = v[monomials[2k]] * v[monomials[2k + 1]]; then
 * polynomial i is sum_t coefficients[t] * v[terms[t]] over its counts[i]
 * terms, in order, the first starting the sum (0 without terms), into a[i].
 * The operations, in the order, of the straight-line sums this replaces:
 * the same bits, for a model.c gcc compiles in a fraction of the time. */
void fmigen_poly_table(double *v, int first, int n_monomials, const int *monomials, int n_polys,
                       const int *counts, const int *terms, const double *coefficients, double *a);

/* atan2(y, x) within about one unit in the last place of libm's, for the
 * angles an FMU reports from the sin/cos its kinematics solved
 * (fmigen_kinematic_angles): a twelfth of glibc's instructions.  NaN,
 * infinities and (±0, ±0) go to libm's atan2 and its conventions. */
double fmigen_atan2(double y, double x);
/* atan(i/64), i = 0..64, the correctly rounded double and the rest */
extern const double fmigen_atan_64ths[65], fmigen_atan_64ths_lo[65];
/* fmigen_atan2's arithmetic, written once for its scalar form
 * (fmigen_numeric.h) and its four lanes (fmigen_atan2_4), so both do the
 * same operations in the same order: t from r and its 64th c, atan t by its
 * series in z = t², and π/2 − a and π − a in two parts */
#define FMIGEN_ATAN_REDUCE(r, c) (((r) - (c)) / (1.0 + (r) * (c)))
#define FMIGEN_ATAN_SERIES(t, z) ((t) + (t) * ((z) * (-1.0 / 3 + (z) * (1.0 / 5 + (z) * (-1.0 / 7 + (z) * (1.0 / 9))))))
#define FMIGEN_HALF_PI_MINUS(a) ((0x1.921fb54442d18p+0 - (a)) + 0x1.1a62633145c07p-54)
#define FMIGEN_PI_MINUS(a) ((0x1.921fb54442d18p+1 - (a)) + 0x1.1a62633145c07p-53)

/* sin x and cos x within one unit in the last place (fdlibm's constants,
 * reduction and kernel polynomials: x less the nearest multiple of π/2,
 * with π/2 in up to three parts of 33 bits; its branch tests on whole
 * values rather than high words, so not fdlibm's bits everywhere), for the
 * sin/cos of the independent angles every kinematics solve starts from and
 * of a Newton block's start.  Why not libm's: glibc's sincos is ~100
 * instructions a call, and the Stewart platform needs three a step (6 % of
 * it); with them four at a time in vector lanes (fmigen_sincos_4) the
 * harness step went 4,784 -> 4,631 instructions (measured).
 * |x| > FMIGEN_SINCOS_MAX, NaN and infinities go to libm, and so does every
 * x in a build with -ffast-math (__FAST_MATH__): it folds the reduction's
 * compensation terms ((u − r) − w) to zero, and a review measured errors of
 * 8e6 ulp near the zeros of sin and cos and lanes unequal to the scalar
 * code.  -funsafe-math-optimizations alone defines no macro and is not
 * caught: the same loss of accuracy (still under ulp(x) absolute). */
void fmigen_sincos(double x, double *s, double *c);
/* Its sine and cosine alone: the generated code's sin(e) and cos(e)
 * (printer.c), never libm's, whose bits differ between C libraries (glibc,
 * mingw-w64's, musl) and so between platforms.  const: a repeated
 * fmigen_sin(q[3]) is computed once. */
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_sin(double x);
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_cos(double x);
#define FMIGEN_SINCOS_MAX 8.0e5   /* < 2^19·π/2: n < 2^19, so n·PIO2_k is exact */
#define FMIGEN_INVPIO2 0x1.45f306dc9c883p-1
/* π/2 = PIO2_1 + PIO2_1T; PIO2_1T = PIO2_2 + PIO2_2T; PIO2_2T = PIO2_3 + PIO2_3T
 * (fdlibm's; PIO2_1, _2, _3 of 33 bits) */
#define FMIGEN_PIO2_1 0x1.921fb54400000p+0
#define FMIGEN_PIO2_1T 0x1.0b4611a626331p-34
#define FMIGEN_PIO2_2 0x1.0b4611a600000p-34
#define FMIGEN_PIO2_2T 0x1.3198a2e037073p-69
#define FMIGEN_PIO2_3 0x1.3198a2e000000p-69
#define FMIGEN_PIO2_3T 0x1.b839a252049c1p-104
/* The arithmetic, written once for the scalar form (fmigen_numeric.h) and
 * the lanes, so both do the same operations in the same order.  fdlibm's
 * __ieee754_rem_pio2 for t = |x| < 2^19·π/2: r − w = t − n·π/2 with π/2 in
 * two parts (ROUND1, 85 bits), and where that cancels more than 16 bits a
 * second round from r with PIO2_1T in two parts (118 bits), and where that
 * cancels more than 49 bits a third (151 bits); then y0 = r − w and
 * y1 = (r − y0) − w. */
#define FMIGEN_SINCOS_ROUND1(t, fn, r, w) r = (t) - (fn) * FMIGEN_PIO2_1; w = (fn) * FMIGEN_PIO2_1T;
#define FMIGEN_SINCOS_ROUND(r0, fn, hi, lo, r, w) r = (r0) - (fn) * (hi); w = (fn) * (lo) - (((r0) - r) - (fn) * (hi));
/* fdlibm's __kernel_sin(y0, y1, 1) and __kernel_cos(y0, y1), |y0| <= π/4:
 * z = y0², the polynomials, and cos for |y0| < 0.3 (SMALL) or with
 * qx = 0.28125 or |y0|/4 to 21 bits, so that 1 − qx is exact (LARGE) */
#define FMIGEN_KSIN(y0, y1, z)                                                          \
    ((y0) - (((z) * (0.5 * (y1) - ((z) * (y0)) *                                        \
               (0x1.111111110f8a6p-7 + (z) * (-0x1.a01a019c161d5p-13 + (z) * (0x1.71de357b1fe7dp-19 + \
                (z) * (-0x1.ae5e68a2b9cebp-26 + (z) * 0x1.5d93a5acfd57cp-33))))) - (y1)) -            \
             ((z) * (y0)) * -0x1.5555555555549p-3))
#define FMIGEN_KCOS_R(z)                                                                \
    ((z) * (0x1.555555555554cp-5 + (z) * (-0x1.6c16c16c15177p-10 + (z) * (0x1.a01a019cb1590p-16 + \
     (z) * (-0x1.27e4f809c52adp-22 + (z) * (0x1.1ee9ebdb4b1c4p-29 + (z) * -0x1.8fae9be8838d4p-37))))))
#define FMIGEN_KCOS_SMALL(y0, y1, z, r) (1.0 - (0.5 * (z) - ((z) * (r) - (y0) * (y1))))
#define FMIGEN_KCOS_LARGE(y0, y1, z, r, qx) ((1.0 - (qx)) - ((0.5 * (z) - (qx)) - ((z) * (r) - (y0) * (y1))))
#define FMIGEN_KCOS_QX_MASK 0xffffffff00000000ULL   /* |y0|/4 to its high 32 bits */

/* Four angles at once, bit for bit fmigen_atan2's: q[a] = atan2(trig[2a],
 * trig[2a + 1]) for a = a0..a3, the generated fmigen_kinematic_angles' call
 * with constant indices (inlined, so the gathers are plain loads).  Why:
 * reading every coordinate of the Stewart platform after a step completes
 * twelve leg angles: 711 instructions one at a time (a third of what the
 * FMU's doStep added to the harness step), 323 four at a time in the AVX
 * copy.  The lanes do fmigen_atan2's IEEE operations in its order (the
 * masks select, never compute; r < 1/64 zeroes r·64 + 0.5 before its
 * truncation, which gives the same i = 0); a group with a NaN, an infinity
 * or (±0, ±0) goes to fmigen_atan2 lane by lane, whose libm call handles
 * it.  Vector types are GCC's (9 and later: __builtin_convertvector) and
 * clang's; another compiler takes the four calls. */
#if defined(__GNUC__)
#define FMIGEN_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define FMIGEN_ALWAYS_INLINE static inline
#endif
#ifndef FMIGEN_VECTORS   /* -DFMIGEN_VECTORS=0: the fallback (its test) */
#if defined(__i386__) && !defined(__SSE2_MATH__)
/* 32-bit x87 arithmetic: the scalar code keeps extended precision in its
 * registers and the lanes do not (a review measured 111,082 of 400,000
 * lanes off with gcc -m32), so the four calls */
#define FMIGEN_VECTORS 0
#elif defined(__has_builtin)
#if __has_builtin(__builtin_convertvector)
#define FMIGEN_VECTORS 1
#else
#define FMIGEN_VECTORS 0
#endif
#elif defined(__GNUC__) && __GNUC__ >= 9 && !defined(__INTEL_COMPILER)
#define FMIGEN_VECTORS 1
#else
#define FMIGEN_VECTORS 0
#endif
#endif
#if FMIGEN_VECTORS
typedef double fmigen_v4d __attribute__((vector_size(32)));
typedef long long fmigen_v4l __attribute__((vector_size(32)));
typedef int fmigen_v4i __attribute__((vector_size(16)));
/* m ? a : b lane by lane (m: all ones or zeros): one blend with AVX */
#if defined(__AVX__)
#define FMIGEN_SELECT(m, a, b) __builtin_ia32_blendvpd256((b), (a), (fmigen_v4d)(m))
#else
#define FMIGEN_SELECT(m, a, b) ((fmigen_v4d)(((m) & (fmigen_v4l)(a)) | (~(m) & (fmigen_v4l)(b))))
#endif
#endif
FMIGEN_ALWAYS_INLINE void fmigen_atan2_4(double *q, const double *trig, int a0, int a1, int a2, int a3)
{
#if FMIGEN_VECTORS
    const fmigen_v4d y = {trig[2 * a0], trig[2 * a1], trig[2 * a2], trig[2 * a3]};
    const fmigen_v4d x = {trig[2 * a0 + 1], trig[2 * a1 + 1], trig[2 * a2 + 1], trig[2 * a3 + 1]};
    /* the sign bits, a constant in memory (an integer constant was built
     * in a register and stored to be broadcast, in every group) */
    const fmigen_v4l sign = (fmigen_v4l)(fmigen_v4d){-0.0, -0.0, -0.0, -0.0};
    const fmigen_v4d ax = (fmigen_v4d)((fmigen_v4l)x & ~sign), ay = (fmigen_v4d)((fmigen_v4l)y & ~sign);
    const fmigen_v4d sum = ax + ay;
    const fmigen_v4l ok = (sum > 0.0) & (sum < INFINITY);
#if defined(__AVX__)
    const int all_ok = __builtin_ia32_movmskpd256((fmigen_v4d)ok) == 15;   /* one instruction, not eight */
#else
    const int all_ok = (ok[0] & ok[1] & ok[2] & ok[3]) != 0;
#endif
    if (!all_ok) {
        q[a0] = fmigen_atan2(y[0], x[0]);
        q[a1] = fmigen_atan2(y[1], x[1]);
        q[a2] = fmigen_atan2(y[2], x[2]);
        q[a3] = fmigen_atan2(y[3], x[3]);
        return;
    }
    const fmigen_v4l swap = ay > ax;
    const fmigen_v4d r = FMIGEN_SELECT(swap, ax, ay) / FMIGEN_SELECT(swap, ay, ax);
    const fmigen_v4l small = r < 0.015625;
    const fmigen_v4i i = __builtin_convertvector((fmigen_v4d)(~small & (fmigen_v4l)(r * 64.0 + 0.5)), fmigen_v4i);
    const fmigen_v4d c = 0.015625 * __builtin_convertvector(i, fmigen_v4d);
    const fmigen_v4d t = FMIGEN_ATAN_REDUCE(r, c), z = t * t;
    /* unsigned: a lane moved to a 32-bit register is zero-extended already,
     * an int index took a sign extension each */
    const unsigned i0 = (unsigned)i[0], i1 = (unsigned)i[1], i2 = (unsigned)i[2], i3 = (unsigned)i[3];
    const fmigen_v4d hi = {fmigen_atan_64ths[i0], fmigen_atan_64ths[i1], fmigen_atan_64ths[i2], fmigen_atan_64ths[i3]};
    const fmigen_v4d lo = {fmigen_atan_64ths_lo[i0], fmigen_atan_64ths_lo[i1], fmigen_atan_64ths_lo[i2],
                           fmigen_atan_64ths_lo[i3]};
    fmigen_v4d v = hi + (lo + FMIGEN_ATAN_SERIES(t, z));
    v = FMIGEN_SELECT(swap, FMIGEN_HALF_PI_MINUS(v), v);
    v = FMIGEN_SELECT(x < 0.0, FMIGEN_PI_MINUS(v), v);
    /* copysign: v >= +0 here (no lane is −0), its sign bit clear */
    v = (fmigen_v4d)((fmigen_v4l)v | ((fmigen_v4l)y & sign));
    q[a0] = v[0];
    q[a1] = v[1];
    q[a2] = v[2];
    q[a3] = v[3];
#else
    q[a0] = fmigen_atan2(trig[2 * a0], trig[2 * a0 + 1]);
    q[a1] = fmigen_atan2(trig[2 * a1], trig[2 * a1 + 1]);
    q[a2] = fmigen_atan2(trig[2 * a2], trig[2 * a2 + 1]);
    q[a3] = fmigen_atan2(trig[2 * a3], trig[2 * a3 + 1]);
#endif
}

/* Four sin/cos pairs at once, bit for bit fmigen_sincos's: trig[2a] =
 * sin q[a], trig[2a + 1] = cos q[a] for a = a0..a3 (the generated
 * kinematics' independent angles; fewer than four repeat the last).  Every
 * branch of the scalar code is computed and selected; a group with a lane
 * beyond FMIGEN_SINCOS_MAX, NaN or an infinity takes the four scalar calls
 * (their libm fallback). */
FMIGEN_ALWAYS_INLINE void fmigen_sincos_4(const double *q, double *trig, int a0, int a1, int a2, int a3)
{
#if FMIGEN_VECTORS && !defined(__FAST_MATH__)
    const fmigen_v4d x = {q[a0], q[a1], q[a2], q[a3]};
    const fmigen_v4l sign = (fmigen_v4l)(fmigen_v4d){-0.0, -0.0, -0.0, -0.0};
    const fmigen_v4d t = (fmigen_v4d)((fmigen_v4l)x & ~sign);
    const fmigen_v4l ok = t <= FMIGEN_SINCOS_MAX;
#if defined(__AVX__)
    const int all_ok = __builtin_ia32_movmskpd256((fmigen_v4d)ok) == 15;
#else
    const int all_ok = (ok[0] & ok[1] & ok[2] & ok[3]) != 0;
#endif
    if (!all_ok) {
        fmigen_sincos(q[a0], &trig[2 * a0], &trig[2 * a0 + 1]);
        fmigen_sincos(q[a1], &trig[2 * a1], &trig[2 * a1 + 1]);
        fmigen_sincos(q[a2], &trig[2 * a2], &trig[2 * a2 + 1]);
        fmigen_sincos(q[a3], &trig[2 * a3], &trig[2 * a3 + 1]);
        return;
    }
    /* n = the nearest multiple of π/2 (t >= 0: truncating t·2/π + 1/2) */
    const fmigen_v4i n = __builtin_convertvector(t * FMIGEN_INVPIO2 + 0.5, fmigen_v4i);
    const fmigen_v4d fn = __builtin_convertvector(n, fmigen_v4d);
    fmigen_v4d r1, w1, r2, w2, r3, w3;
    FMIGEN_SINCOS_ROUND1(t, fn, r1, w1)
    FMIGEN_SINCOS_ROUND(r1, fn, FMIGEN_PIO2_2, FMIGEN_PIO2_2T, r2, w2)
    FMIGEN_SINCOS_ROUND(r2, fn, FMIGEN_PIO2_3, FMIGEN_PIO2_3T, r3, w3)
    /* "cancels more than k bits": |r − w| below 2^-k times t's power of two
     * (t with its mantissa cleared) */
    const fmigen_v4l expo = {0x7ff0000000000000LL, 0x7ff0000000000000LL, 0x7ff0000000000000LL,
                             0x7ff0000000000000LL};
    const fmigen_v4d p2 = (fmigen_v4d)((fmigen_v4l)t & expo), e1 = r1 - w1, e2 = r2 - w2;
    const fmigen_v4l second = (fmigen_v4d)((fmigen_v4l)e1 & ~sign) < p2 * 0x1p-16;
    const fmigen_v4l third = second & ((fmigen_v4d)((fmigen_v4l)e2 & ~sign) < p2 * 0x1p-49);
    const fmigen_v4d r = FMIGEN_SELECT(third, r3, FMIGEN_SELECT(second, r2, r1));
    const fmigen_v4d w = FMIGEN_SELECT(third, w3, FMIGEN_SELECT(second, w2, w1));
    const fmigen_v4d y0 = r - w, y1 = (r - y0) - w;
    const fmigen_v4d z = y0 * y0, rc = FMIGEN_KCOS_R(z), ay = (fmigen_v4d)((fmigen_v4l)y0 & ~sign);
    const fmigen_v4d ks = FMIGEN_KSIN(y0, y1, z);
    const fmigen_v4l high = {(long long)FMIGEN_KCOS_QX_MASK, (long long)FMIGEN_KCOS_QX_MASK,
                             (long long)FMIGEN_KCOS_QX_MASK, (long long)FMIGEN_KCOS_QX_MASK};
    const fmigen_v4d quarter = (fmigen_v4d)((fmigen_v4l)(ay * 0.25) & high), big = {0.28125, 0.28125, 0.28125, 0.28125};
    const fmigen_v4d qx = FMIGEN_SELECT(ay > 0.78125, big, quarter);
    const fmigen_v4d kc = FMIGEN_SELECT(ay < 0.3, FMIGEN_KCOS_SMALL(y0, y1, z, rc), FMIGEN_KCOS_LARGE(y0, y1, z, rc, qx));
    /* the quadrant n mod 4: (sin, cos) = (ks, kc), (kc, −ks), (−ks, −kc), (−kc, ks) */
    const fmigen_v4d m = __builtin_convertvector(n & 3, fmigen_v4d);
    const fmigen_v4l odd = (m == 1.0) | (m == 3.0);
    fmigen_v4d sn = FMIGEN_SELECT(odd, kc, ks), cs = FMIGEN_SELECT(odd, ks, kc);
    sn = (fmigen_v4d)((fmigen_v4l)sn ^ ((m >= 2.0) & sign));
    cs = (fmigen_v4d)((fmigen_v4l)cs ^ (((m == 1.0) | (m == 2.0)) & sign));
    /* sin(−x) = −sin x */
    sn = (fmigen_v4d)((fmigen_v4l)sn ^ ((fmigen_v4l)x & sign));
    trig[2 * a0] = sn[0]; trig[2 * a0 + 1] = cs[0];
    trig[2 * a1] = sn[1]; trig[2 * a1 + 1] = cs[1];
    trig[2 * a2] = sn[2]; trig[2 * a2 + 1] = cs[2];
    trig[2 * a3] = sn[3]; trig[2 * a3 + 1] = cs[3];
#else
    fmigen_sincos(q[a0], &trig[2 * a0], &trig[2 * a0 + 1]);
    fmigen_sincos(q[a1], &trig[2 * a1], &trig[2 * a1 + 1]);
    fmigen_sincos(q[a2], &trig[2 * a2], &trig[2 * a2 + 1]);
    fmigen_sincos(q[a3], &trig[2 * a3], &trig[2 * a3 + 1]);
#endif
}

#if FMIGEN_VECTORS
/* Four blocks' sequence steps at once (the generated fmigen_lanes<k>,
 * codegen_lanes.py): the root helpers above lane by lane, bit for bit,
 * adding a lane mask (all ones) to *fail where the scalar helper fails.
 * Every branch of the scalar code is computed and selected; a failed lane's
 * value is not used (the block's scalar code solves it again).  Vectors go
 * in and out through pointers (always inlined: the same code): passed by
 * value without AVX they change the ABI, which gcc and clang warn of in
 * every SSE2 build (-Wpsabi). */
#define FMIGEN_ABS_4(x) ((fmigen_v4d)((fmigen_v4l)(x) & ~(fmigen_v4l)(fmigen_v4d){-0.0, -0.0, -0.0, -0.0}))
/* fmigen_max lane by lane (a > b ? a : b, NaN as fmigen_max has it) */
#define FMIGEN_MAX_4(a, b) FMIGEN_SELECT((a) > (b), (a), (b))
/* four consecutive doubles as one vector, unaligned (codegen_slp: prepare
 * stores a group to work whole, finish loads it whole) */
typedef double fmigen_v4du __attribute__((vector_size(32), aligned(8), may_alias));
#define FMIGEN_LOAD_4(p) ((fmigen_v4d)*(const fmigen_v4du *)(p))
#define FMIGEN_STORE_4(p, v) (*(fmigen_v4du *)(p) = (v))
/* (v0 + v2) + (v1 + v3): a sum over the lanes, the halves added first
 * (codegen_slp's reductions; its scalar build adds in the same order) */
typedef double fmigen_v2d __attribute__((vector_size(16)));
FMIGEN_ALWAYS_INLINE double fmigen_hsum_4(const fmigen_v4d *v)
{
    const fmigen_v2d lo = {(*v)[0], (*v)[1]}, hi = {(*v)[2], (*v)[3]};
    const fmigen_v2d s = lo + hi;
    return s[0] + s[1];
}

FMIGEN_ALWAYS_INLINE void fmigen_sqrt_4(fmigen_v4d *x)
{
#if defined(__AVX__)
    *x = __builtin_ia32_sqrtpd256(*x);
#elif defined(__SSE2__)
    typedef double v2d __attribute__((vector_size(16)));
    const v2d lo = __builtin_ia32_sqrtpd((v2d){(*x)[0], (*x)[1]}), hi = __builtin_ia32_sqrtpd((v2d){(*x)[2], (*x)[3]});
    *x = (fmigen_v4d){lo[0], lo[1], hi[0], hi[1]};
#else
    *x = (fmigen_v4d){sqrt((*x)[0]), sqrt((*x)[1]), sqrt((*x)[2]), sqrt((*x)[3])};
#endif
}

/* the lanes set in *m (all ones or zeros per lane) as bits 0..3 */
FMIGEN_ALWAYS_INLINE unsigned fmigen_lane_bits(const fmigen_v4l *m)
{
#if defined(__AVX__)
    return (unsigned)__builtin_ia32_movmskpd256((fmigen_v4d)*m);
#else
    return (unsigned)(((*m)[0] & 1) | ((*m)[1] & 2) | ((*m)[2] & 4) | ((*m)[3] & 8));
#endif
}

/* fmigen_linear */
FMIGEN_ALWAYS_INLINE void fmigen_linear_4(const fmigen_v4d *a1, const fmigen_v4d *a0, fmigen_v4d *x, fmigen_v4l *fail)
{
    *x = -*a0 / *a1;
    *fail |= ~(FMIGEN_ABS_4(*a1) > 1e-13 * FMIGEN_ABS_4(*a0)) | (*a1 == 0.0);
}

/* fmigen_quadratic_near: the same operations in the same order */
FMIGEN_ALWAYS_INLINE void fmigen_quadratic_near_4(const fmigen_v4d *a2_, const fmigen_v4d *a1_, const fmigen_v4d *a0_,
                                                  const fmigen_v4d *pred, fmigen_v4d *x, fmigen_v4l *fail)
{
    const fmigen_v4d a2 = *a2_, a1 = *a1_, a0 = *a0_, zero = {0.0, 0.0, 0.0, 0.0};
    const fmigen_v4d scale = FMIGEN_ABS_4(a2) + FMIGEN_ABS_4(a1) + FMIGEN_ABS_4(a0);
    *fail |= ~(FMIGEN_ABS_4(a2) > 1e-13 * scale);
    fmigen_v4d disc = a1 * a1 - 4.0 * a2 * a0;
    const fmigen_v4l negative = disc < 0.0;
    *fail |= negative & (disc < -1e-12 * (a1 * a1 + FMIGEN_ABS_4(4.0 * a2 * a0)));
    disc = FMIGEN_SELECT(negative, zero, disc);
    fmigen_sqrt_4(&disc);
    const fmigen_v4d r = FMIGEN_SELECT(2.0 * a2 * *pred + a1 >= 0.0, disc, -disc);
    const fmigen_v4l plus = (-a1 * r > 0.0) | (a1 == 0.0);
    const fmigen_v4d den = -a1 - r;
    *fail |= ~plus & (den == 0.0);
    const fmigen_v4d v = FMIGEN_SELECT(plus, (-a1 + r) / (2.0 * a2), 2.0 * a0 / den);
    *x = v;
    *fail |= v != v;
}
#endif

/* Dense LU with partial pivoting (row-major n×n), shared by the embedding and
 * the Newton blocks.  factor returns non-zero when the matrix is singular. */
int fmigen_lu_factor(int n, double *A, int *piv);
void fmigen_lu_solve(int n, const double *LU, const int *piv, double *b);

#define FMIGEN_NEWTON_MAX_ITER 20
/* Hooks run at the start of every iteration of the bounded loops (an
 * iteration a realtime cap ends is not counted): a generated Newton
 * block's (its limit `limit` fresh steps: FMIGEN_NEWTON_MAX_ITER or the
 * polish's 4; CHORD_EXTRA chord steps more), the polynomial root's Newton
 * from the prediction and the Aberth iteration of its fallback
 * (fmigen_numeric.h).  FMIGEN_COUNT_*: empty (no code), or what `fmigen
 * bench --worst-case` defines to record the most iterations each loop took
 * over the motion and the workspace sweep.  A realtime build (`fmigen build
 * --realtime`; model_config.h sets FMIGEN_REALTIME and the caps) also ends
 * each loop at its own cap, the most iterations the workspace sweep needed
 * plus a margin, below the caps above: the loop stops unconverged, and the
 * step fails as at the global caps. */
#ifndef FMIGEN_COUNT_NEWTON
#define FMIGEN_COUNT_NEWTON(limit, it)
#endif
#ifndef FMIGEN_COUNT_POLY_NEWTON
#define FMIGEN_COUNT_POLY_NEWTON(it)
#endif
#ifndef FMIGEN_COUNT_ABERTH
#define FMIGEN_COUNT_ABERTH(it)
#endif
#ifdef FMIGEN_REALTIME
#define FMIGEN_NEWTON_STEP(limit, it) { \
    if ((it) >= ((limit) == FMIGEN_NEWTON_MAX_ITER ? FMIGEN_REALTIME_NEWTON : FMIGEN_REALTIME_POLISH)) break; \
    FMIGEN_COUNT_NEWTON(limit, it); }
#define FMIGEN_POLY_NEWTON_STEP(it) { if ((it) >= FMIGEN_REALTIME_POLY_NEWTON) break; FMIGEN_COUNT_POLY_NEWTON(it); }
#define FMIGEN_ABERTH_STEP(it) { if ((it) >= FMIGEN_REALTIME_ABERTH) break; FMIGEN_COUNT_ABERTH(it); }
#else
#define FMIGEN_NEWTON_STEP(limit, it) FMIGEN_COUNT_NEWTON(limit, it)
#define FMIGEN_POLY_NEWTON_STEP(it) FMIGEN_COUNT_POLY_NEWTON(it)
#define FMIGEN_ABERTH_STEP(it) FMIGEN_COUNT_ABERTH(it)
#endif
/* The run-time checks of every kinematics block (codegen.kinematics_code):
 * - a linear or leading coefficient below FMIGEN_SWITCH_COND of the sum of
 *   its terms' magnitudes is a representation singularity of that sequence:
 *   the next sequence takes over (triangular.COVER_CONDITION, the same value,
 *   chose the alternatives at build time);
 * - the block's own polynomials must vanish to FMIGEN_SEQ_TOL relative to
 *   the sum of their terms' magnitudes; up to FMIGEN_POLISH_TOL a Newton
 *   polish from the result gets there;
 * - continuity: each polynomial variable within FMIGEN_BRANCH_TOL of its
 *   prediction (a chord of the unit circle for s, c of an angle, i.e. about
 *   radians; a fraction of the mechanism's size for a length), plus the
 *   predicted motion.  A mirror assembly is O(1) away; a 1 ms step moves the
 *   prediction error by ~½·α·dt², far below. */
#ifndef FMIGEN_SWITCH_COND
#define FMIGEN_SWITCH_COND 1e-3
#endif
#ifndef FMIGEN_SEQ_TOL
#define FMIGEN_SEQ_TOL 1e-13
#endif
#ifndef FMIGEN_POLISH_TOL
#define FMIGEN_POLISH_TOL 1e-2
#endif
#ifndef FMIGEN_BRANCH_TOL
#define FMIGEN_BRANCH_TOL 0.05
#endif
/* Coordinate switching (Co-Simulation, NPART > 1): at the start of every
 * internal step, each partition's amplification max|v_d| / max|v_i| (unit
 * scales) is evaluated on the state's velocities; it is a lower bound of
 * ‖Φ_d⁻¹Φ_i‖ and grows without bound where the active Φ_d turns singular (a
 * dead centre: the independent coordinate turns back while the mechanism
 * moves on).  The partition switches when another one's is smaller by this
 * factor (the hysteresis keeps it from chattering). */
#ifndef FMIGEN_SWITCH_GAIN
#define FMIGEN_SWITCH_GAIN 4.0
#endif
/* Limit positions of the partition (a toggle: the crank of a non-Grashof
 * four-bar at its extreme angle).  There Φ_d turns singular while the
 * mechanism moves on: the independent velocities fall to zero and turn
 * back, the dependent ones do not, and the motion continues on the other
 * assembly branch, which these independent coordinates do not
 * parametrize.  On the approach ‖Φ_d⁻¹Φ_i‖ grows like 1/|t − t*| (the
 * dependent coordinates go like a square root of the distance to the
 * limit), so between two accepted states two internal steps apart the
 * amplification max|v_d| / max|v_i| grows by (τ + 2h)/τ ≥ 3 once the
 * limit is less than a step ahead (τ ≤ h), while max|v_i| falls by as
 * much.  A regular configuration cannot do that: with v_d = B v_i and B
 * smooth, max|v_i| falling means the configuration barely moves, and B
 * (the amplification, for one degree of freedom) with it.  A step that
 * sees both change by this factor or more is refused (fmigen_core.c,
 * fmigen_core_limit).  With two independent coordinates (a five-bar's two
 * cranks at its dyad's fold) only the component of v_i across the fold
 * vanishes; the motion along it goes on, and max|v_d| / max|v_i| stays
 * bounded.  There the test measures ‖B‖ itself (its Frobenius norm in unit
 * scales, one more solve with Φ_d), and |v_d| / ‖B‖ takes the place of
 * max|v_i|: it falls like |t − t*| at a fold, and stays put where B rises
 * from zero (v_d rises with it).  With more, the exact norm needs NI − 1
 * solves per step, and an estimate on a plane of them changes with the
 * direction of motion, which a test two steps apart cannot tell from a
 * limit: no test (the kinematics stops at a limit). */
#ifndef FMIGEN_LIMIT_GAIN
#define FMIGEN_LIMIT_GAIN 2.0
#endif

/* ---- core state and stepping ---- */
/* explicit Euler, classical RK4, semi-implicit (symplectic) Euler: the
 * velocities first, then the positions with the new velocities */
enum { FMIGEN_EULER = 0, FMIGEN_RK4 = 1, FMIGEN_SYMPLECTIC = 2 };

/* Formulation (fmigen_augmented.c): 0 the embedded ODE, x = [q_i, v_i];
 * 1 Baumgarte, 2 penalty, 3 virtual springs: all coordinates, x = [q, v]. */
#ifndef FMIGEN_FORMULATION
#define FMIGEN_FORMULATION 0
#endif
/* 1 when Φ depends on t (rheonomic constraints): the kinematics memo then
 * keys on t too; the safe default for a model_config.h that does not say. */
#ifndef FMIGEN_KINEMATICS_TIME
#define FMIGEN_KINEMATICS_TIME 1
#endif
/* Time events: the breakpoints of loads piecewise in t (codegen.py,
 * fmigen/events.py), sorted, in fmigen_event_times[FMIGEN_NEVENTS].  A
 * model_config.h that does not say has none.  FMIGEN_TIME_EVENTS=0 (with
 * -D) builds the runtime that does not announce them, for comparison. */
#ifndef FMIGEN_NEVENTS
#define FMIGEN_NEVENTS 0
#endif
#ifndef FMIGEN_TIME_EVENTS
#define FMIGEN_TIME_EVENTS 1
#endif
#if FMIGEN_NEVENTS > 0
extern const double fmigen_event_times[];
#endif
/* State events: FMIGEN_NZ event indicators, each changing sign where a load
 * switches with the state (a stop's contact: derive/events.py), from the
 * complete q and v; a model_config.h that does not say has none. */
#ifndef FMIGEN_NZ
#define FMIGEN_NZ 0
#endif
#if FMIGEN_NZ > 0
void fmigen_event_indicators(double t, const double *q, const double *v, const double *p, const double *u,
                             double *out);
#endif
#ifndef FMIGEN_NFP
#define FMIGEN_NFP 0
#endif
#define FMIGEN_NX (FMIGEN_FORMULATION ? 2 * NQ : 2 * NI)
#define FMIGEN_SWITCHING (NPART > 1 && !FMIGEN_KINEMATIC && !FMIGEN_FORMULATION)
/* where the embedding's prepare leaves ‖Φ_d⁻¹Φ_i‖² in unit scales for the
 * limit test with more than two independent coordinates
 * (codegen_embedding.py, _RightHandSide.norm); -1: it does not */
#ifndef FMIGEN_LIMIT_SLOT
#define FMIGEN_LIMIT_SLOT (-1)
#endif
/* the test for a limit position ahead (FMIGEN_LIMIT_GAIN): one or two
 * independent coordinates, or more with the norm from the embedding, and
 * dependent ones (an open chain has no such limit) */
#define FMIGEN_LIMIT_TEST ((NI <= 2 || FMIGEN_LIMIT_SLOT >= 0) && NQ > NI && !FMIGEN_KINEMATIC && !FMIGEN_FORMULATION)
#define FMIGEN_PART(c) (&FMIGEN_MODEL_FN(fmigen_partitions)[(c)->part])

#ifndef FMIGEN_RESIDUAL_ANGLES
#define FMIGEN_RESIDUAL_ANGLES 1
#endif
#ifndef FMIGEN_OUTPUTS_ANGLES
#define FMIGEN_OUTPUTS_ANGLES 1
#endif
#ifndef FMIGEN_NWORK
#define FMIGEN_NWORK 1
#endif
/* 1 when the embedding depends on t (rheonomic constraints, loads in t):
 * its memo then keys on t; the safe default. */
#ifndef FMIGEN_EMBEDDING_TIME
#define FMIGEN_EMBEDDING_TIME 1
#endif

/* The last successful kinematics solve: its input (t, q_i, p) and what it
 * returned (q with q_d, and the sin/cos hand-over).  Why: an FMU stepped at
 * its internal step (HIL at 1 kHz) commits each state at t + h (kinematics,
 * velocities), and the next step's first stage needs the kinematics of the
 * very same t, q_i, p; the memo returns it instead of solving it again.
 * The commit also runs the embedding's first half (prepare: v_d, the reduced
 * mass matrix factored, everything but the inputs' forces), which it needs
 * for v_d anyway: first-same-as-last, the next step's first stage only runs
 * finish, with whatever inputs the importer set in between.  It holds for
 * v_i = vi too (have_work; and t when FMIGEN_EMBEDDING_TIME), with v the
 * complete velocities it gave.  A pure cache keyed by value, so no setter
 * has to invalidate it. */
typedef struct {
    int valid, part, have_work;
    /* which half of trigs/sols holds the solve: the next one writes into
     * the other half, so a commit that fails leaves the memo (and the
     * sin/cos a pending observation reads) as it was, and the kinematics
     * writes its hand-over in place instead of into a zeroed local copied
     * afterwards (Stewart: 160 instructions a doStep) */
    int side;
    double t, p[FMIGEN_DIM(NP)];
    double q[NQ], trigs[2][2 * NQ], sols[2][FMIGEN_DIM(NSOL)];
    double v[NQ], work[FMIGEN_DIM(FMIGEN_NWORK)];
} FmigenSolved;
/* the memo's sin/cos hand-over and solution vector */
#define FMIGEN_MEMO_TRIG(m) ((m)->trigs[(m)->side])
#define FMIGEN_MEMO_SOL(m) ((m)->sols[(m)->side])

typedef struct {
    double t;                    /* time of the current state */
    double q[NQ], v[NQ];         /* all coordinates and velocities, consistent
                                    (deferred angles: see observe_pending) */
    double p[FMIGEN_DIM(NP)];    /* tunable parameters */
    double u[FMIGEN_DIM(NU)];    /* inputs at time tu, held constant unless du is set */
    double du[FMIGEN_DIM(NU)];   /* their first derivatives (fmi2SetRealInputDerivatives):
                                    u(t) = u + du (t − tu) between communication points */
    double tu;                   /* the time u and du refer to */
    int interpolate;             /* some du is non-zero */
    double y[FMIGEN_DIM(NY)];    /* user outputs */
    FmigenBase base;             /* the last accepted kinematics solution */
    int part;                    /* active partition (fmigen_partitions), 0 unless switched */
    int switches;                /* how many times the partition was switched */
    /* max|v_i| and max|v_d| (unit scales) of the last two accepted
     * internal-step starts, [0] the older, and how many of them are set
     * (limit_position) */
    double lim_vi[2], lim_vd[2];
    int lim_n;
    /* ‖Φ_d⁻¹Φ_i‖² (unit scales) at the last accepted state, from the
     * embedding's prepare (FMIGEN_LIMIT_SLOT); NaN when it failed */
    double lim_b2;
    double h;                    /* internal step */
    double residual;             /* max |Φ_j(q)| of the state last observed */
    double fp[FMIGEN_DIM(FMIGEN_NFP)]; /* parameters of an augmented formulation */
    int solver;
    FmigenSolved solved;         /* memo of the kinematics (see FmigenSolved) */
    /* FMIGEN_OBSERVE_* bits: what of q's deferred angles, the residual and
     * y is not computed yet (the state was assembled and the memo's trig half holds
     * its sin/cos); fmigen_core_observe_some computes each at its first
     * read, so a step after which the importer reads none of them does not
     * pay, and reading one does not pay for the others. */
    int observe_pending;
    /* The last error, recorded where it happens as numbers (a kind
     * FMIGEN_ERR_*, a code: the block or the embedding's; the time; the
     * independent coordinates and up to four values the message quotes) and
     * formatted into message only when it is read, by fmigen_core_message,
     * at the FMI boundary: no snprintf inside a step, whose work a HIL
     * target budgets. */
    int err_kind, err_code;
    double err_t, err_x[4], err_q[FMIGEN_DIM(NI)];
    char message[512];           /* the last error as text, for the logger (fmigen_core_message) */
} FmigenCore;
enum {
    FMIGEN_ERR_NONE = 0,
    FMIGEN_ERR_KINEMATICS,        /* no solution at err_q: failure text err_code */
    FMIGEN_ERR_EMBEDDING,         /* Φ_d singular (1) or BᵀMB not positive definite (2) */
    FMIGEN_ERR_DERIVATIVE,        /* non-finite state derivative */
    FMIGEN_ERR_STATE,             /* non-finite independent coordinate or velocity */
    FMIGEN_ERR_LIMIT,             /* limit position: err_x = max|v_i| (or max|v_d|/‖B‖), max|v_d|, 2 steps apart */
    FMIGEN_ERR_STEPS,             /* a step of err_x[0] s over FMIGEN_MAX_STEPS_PER_CALL internal steps */
    FMIGEN_ERR_AUGMENTED_STATE,   /* augmented formulation: non-finite coordinate or velocity */
    FMIGEN_ERR_AUGMENTED_SINGULAR /* augmented formulation: matrix err_code singular */
};
/* Record an error of `kind` at time t (the step's side: numbers only) */
static inline int fmigen_core_fail(FmigenCore *c, int kind, int code, double t)
{
    c->err_kind = kind;
    c->err_code = code;
    c->err_t = t;
    return 1;
}
/* The last error as text (formatted now into c->message, which it returns) */
const char *fmigen_core_message(FmigenCore *c);

void fmigen_core_init(FmigenCore *c, int solver);
/* Make (t, q, v, sol) the solution the next kinematics solve continues;
 * trig: that solve's sin/cos hand-over, for the turns of P's deferred
 * angles. */
void fmigen_base_accept(FmigenBase *b, const FmigenPartition *P, double t, const double *q, const double *v,
                        const double *sol, const double *trig);
/* Complete q, v from q_i, v_i (kinematics + velocity solve); the angles
 * nobody reads bare, residual and outputs follow in fmigen_core_observe.  0
 * on success, else an error with c->message set. */
int fmigen_core_assemble(FmigenCore *c);
/* Before q, residual or y are read: complete them for the assembled (or,
 * augmented, integrated) q, v, unless that was done already.  _some: only
 * `what` (FMIGEN_OBSERVE_* bits), and what that needs (the residual and the
 * outputs come from the kinematics' sin/cos, and need the deferred angles
 * only when FMIGEN_RESIDUAL_ANGLES / FMIGEN_OUTPUTS_ANGLES say so). */
enum { FMIGEN_OBSERVE_ANGLES = 1, FMIGEN_OBSERVE_RESIDUAL = 2, FMIGEN_OBSERVE_OUTPUTS = 4, FMIGEN_OBSERVE_ALL = 7 };
void fmigen_core_observe(FmigenCore *c);
void fmigen_core_observe_some(FmigenCore *c, int what);
/* Advance by H with fixed internal steps of c->h; the last one is shortened
 * so the state lands exactly on t + H.  0 on success. */
int fmigen_core_step(FmigenCore *c, double H);
/* 1 when the accepted state in c->base is at a limit position of the
 * active partition (c->message says so); keeps its velocities' history */
int fmigen_core_limit(FmigenCore *c);
int fmigen_core_rhs(FmigenCore *c, double t, const double *x, double *dx);
/* The inputs at time t: c->u, or u + du (t − tu) in buf when the importer
 * gave input derivatives. */
const double *fmigen_core_inputs(const FmigenCore *c, double t, double *buf);
/* The same, and the solve at (t, x) becomes the base the next solve
 * continues: for a loop of explicit Euler steps over fmigen_core_rhs (the
 * benchmark harness), where each step's state is evaluated once. */
int fmigen_core_rhs_accept(FmigenCore *c, double t, const double *x, double *dx);

/* fmigen_augmented.c */
void fmigen_formulation_init(FmigenCore *c);
void fmigen_formulation_message(FmigenCore *c);
/* fmigen_state_get, fmigen_state_set: at the end of this header */
/* After a step or a state change: the embedded formulation assembles (solves
 * q_d, v_d); an augmented one only checks its q, v.  Either way residual and
 * outputs are left to fmigen_core_observe. */
int fmigen_core_refresh(FmigenCore *c);
int fmigen_augmented_rhs(FmigenCore *c, double t, const double *x, double *dx);
#if FMIGEN_FORMULATION
/* generated with the formulation (codegen_embedding.augmented_code): q̈ of
 * all coordinates; 0, 2 when M (penalty: M + ρΦ_qᵀΦ_q) is not positive
 * definite, 3 when Φ_q M⁻¹ Φ_qᵀ is singular. */
int fmigen_augmented_accel(double t, const double *q, const double *v, const double *p, const double *u,
                           const double *fp, double *a);
#endif

/* ---- model.c for processors with AVX (FMIGEN_AVX_DISPATCH) ----
 * A binary FMU for x86-64 Linux holds model.c twice: as built for every
 * x86-64 processor (SSE2) and, from fmigen_model_avx.c, compiled for AVX,
 * its symbols ending in _avx (fmigen_names.h).  FMIGEN_MODEL_FN(f) is the
 * copy this processor runs.  Why: SSE2's arithmetic overwrites an operand,
 * so gcc copies registers around most operations (1,308 movapd of a
 * Stewart step's 10,377 instructions); AVX's three-operand
 * forms need no copies, and a step takes ~20 % fewer instructions and ~20 %
 * less CPU time (Stewart: 1.08 -> 0.85 ms per simulated second,
 * docs/benchmarks.md).  AVX, not FMA: the same IEEE operations in the same
 * order, so both copies end in the same bits (tests/test_avx_variant.py); a fused a*b + c
 * rounds once, and gcc fuses wherever contraction is on (GNU C modes).  A
 * source FMU builds one copy with the importer's flags. */
#if FMIGEN_AVX_DISPATCH && !defined(FMIGEN_MODEL_VARIANT)
#define FMIGEN_AVX_NAME(name) FMIGEN_PASTE(name, avx)
extern const FmigenPartition FMIGEN_AVX_NAME(fmigen_partitions)[];
extern __typeof__(fmigen_kinematics) FMIGEN_AVX_NAME(fmigen_kinematics);
extern __typeof__(fmigen_kinematic_angles) FMIGEN_AVX_NAME(fmigen_kinematic_angles);
extern __typeof__(fmigen_angle_turns) FMIGEN_AVX_NAME(fmigen_angle_turns);
extern __typeof__(fmigen_embedded_velocities) FMIGEN_AVX_NAME(fmigen_embedded_velocities);
extern __typeof__(fmigen_embedded_prepare) FMIGEN_AVX_NAME(fmigen_embedded_prepare);
extern __typeof__(fmigen_embedded_finish) FMIGEN_AVX_NAME(fmigen_embedded_finish);
extern __typeof__(fmigen_phi) FMIGEN_AVX_NAME(fmigen_phi);
extern __typeof__(fmigen_phi_trig) FMIGEN_AVX_NAME(fmigen_phi_trig);
extern __typeof__(fmigen_residual_trig) FMIGEN_AVX_NAME(fmigen_residual_trig);
extern __typeof__(fmigen_outputs) FMIGEN_AVX_NAME(fmigen_outputs);
extern __typeof__(fmigen_outputs_trig) FMIGEN_AVX_NAME(fmigen_outputs_trig);
#if FMIGEN_NZ > 0
extern __typeof__(fmigen_event_indicators) FMIGEN_AVX_NAME(fmigen_event_indicators);
#endif
extern __typeof__(fmigen_atan2) FMIGEN_AVX_NAME(fmigen_atan2);
extern __typeof__(fmigen_sincos) FMIGEN_AVX_NAME(fmigen_sincos);
#if FMIGEN_FORMULATION
extern __typeof__(fmigen_augmented_accel) FMIGEN_AVX_NAME(fmigen_augmented_accel);
#endif
/* libgcc's cpuid flags (which also check that the OS saves the AVX registers) */
#define FMIGEN_MODEL_FN(f) (__builtin_cpu_supports("avx") ? FMIGEN_AVX_NAME(f) : (f))
#else
#define FMIGEN_MODEL_FN(f) (f)
#endif


/* x (FMIGEN_NX) from / into c->q, c->v: [q_i, v_i] or, augmented, [q, v].
 * Inline: a doStep calls both, and the calls and the partition's dispatch
 * were a third of their instructions.  The index table is this translation
 * unit's copy, without the dispatch (the SSE2 and AVX copies hold the same
 * numbers). */
static inline void fmigen_state_get(const FmigenCore *c, double *x)
{
#if FMIGEN_FORMULATION
    memcpy(x, c->q, NQ * sizeof(double));
    memcpy(x + NQ, c->v, NQ * sizeof(double));
#else
    const int *independent = fmigen_partitions[c->part].independent;
    FMIGEN_UNROLL for (int k = 0; k < NI; k++) {
        x[k] = c->q[independent[k]];
        x[NI + k] = c->v[independent[k]];
    }
#endif
}

static inline void fmigen_state_set(FmigenCore *c, const double *x)
{
#if FMIGEN_FORMULATION
    memcpy(c->q, x, NQ * sizeof(double));
    memcpy(c->v, x + NQ, NQ * sizeof(double));
#else
    const int *independent = fmigen_partitions[c->part].independent;
    FMIGEN_UNROLL for (int k = 0; k < NI; k++) {
        c->q[independent[k]] = x[k];
        c->v[independent[k]] = x[NI + k];
    }
#endif
}

#endif
