/* fmigen runtime: the part of its headers that no model's sizes enter --
 * the floating-point rules every unit of an FMU is compiled under, the
 * numerical kernels' declarations (defined in fmigen_numeric.h) and the
 * inline helpers the generated code and the runtime share.
 *
 * Why a header of its own: fmigen_numeric.h includes only this one, so a
 * binary build compiles the kernels once for every model
 * (fmigen_kernels.c, FMIGEN_SHARED_KERNELS) and takes them from the object
 * cache afterwards; fmigen_runtime.h includes it after model_config.h.
 */
#ifndef FMIGEN_KERNELS_H
#define FMIGEN_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fmigen_names.h"

/* The same bits with any compiler and flags (docs/portability.md):
 * - no contraction of a*b + c into a fused multiply-add, which rounds once
 *   where the source rounds twice.  C99's pragma says so for every
 *   compiler that honours it (clang, and compilers that contract only when
 *   allowed); gcc ignores it (and contracts by default in its GNU modes on
 *   every target with an FMA: aarch64, powerpc, x86-64 with -mfma), but
 *   takes the optimize pragma, which sets -ffp-contract=off for the rest
 *   of the translation unit.  Every .c of the FMU includes this header
 *   (through fmigen_runtime.h) first, before any function.
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
 * v[0] = 1 and the generators v[1..first-1] set by the caller; the
 * monomials v[first], v[first + 1], ... in runs, run r being runs[3r + 2]
 * monomials, the generator v[runs[3r]] times the parents v[runs[3r + 1]],
 * v[runs[3r + 1] + 1], ... in turn; then polynomial i is
 * sum_t coefficients[t] * v[terms[t]] over its counts[i] terms, in order,
 * the first starting the sum (0 without terms), into a[i].
 * The operations, in the order, of the straight-line sums this replaces:
 * the same bits, for a model.c gcc compiles in a fraction of the time. */
void fmigen_poly_table(double *v, int first, int n_runs, const int *runs, int n_polys,
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
/* asin, acos and atan of the generated code (printer._Printer), by
 * fmigen_atan2 and sqrt, for the same reason: C libraries round them
 * differently (glibc's asin and the Windows C runtime's, msvcrt.dll's,
 * which the win64 DLL calls, disagree in the last bit;
 * docs/portability.md).  Within two ulps of the exact value
 * (tests/test_runtime_lu.py). */
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_asin(double x);
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_acos(double x);
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_atan(double x);
/* tan, exp and log of the generated code (printer._Printer), for the same
 * reason: tan by fmigen_sincos, exp and log after fdlibm's, plain IEEE
 * arithmetic in a fixed order (fmigen_numeric.h).  Their accuracy against
 * mpmath: tests/test_runtime_lu.py and docs/portability.md. */
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_tan(double x);
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_exp(double x);
#if defined(__GNUC__)
__attribute__((const))
#endif
double fmigen_log(double x);
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
 * step fails as at the global caps.  The caps live in the model's
 * model_config.h, so a realtime build compiles the kernels with the model
 * (fmu.compile_shared: no shared kernels unit). */
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

#endif
