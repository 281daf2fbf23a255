/* fmigen runtime: the numerical kernels the generated model calls -- LU
 * with partial pivoting, atan2, polynomial roots.
 *
 * Definitions, not declarations (those are in fmigen_kernels.h): a header
 * so that an importer compiling every .c of sources/ does not compile it on
 * its own.  In a source FMU fmigen_core.c includes it, and so does
 * fmigen_model_avx.c, which compiles it with model.c for processors with
 * AVX (its copies end in _avx, fmigen_names.h): the five-link spends a
 * sixth of its step in the LU below.  A binary build compiles it in
 * fmigen_kernels.c instead, once for every model (FMIGEN_SHARED_KERNELS,
 * fmigen_names.h): nothing here reads a model's sizes, so it includes
 * fmigen_kernels.h, not fmigen_runtime.h. */
#ifndef FMIGEN_NUMERIC_H
#define FMIGEN_NUMERIC_H
#include <float.h>
#include "fmigen_kernels.h"

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

/* Never inlined, though the AVX copy compiles them with the model's Newton
 * blocks: fmigen bench counts a block's iterations and factorizations by
 * its calls of these two. */
#if defined(__GNUC__)
#define FMIGEN_COUNTED __attribute__((noinline))
#else
#define FMIGEN_COUNTED
#endif

FMIGEN_COUNTED int fmigen_lu_factor(int n, double *A, int *piv)
{
    switch (n) {
    case 4: return lu_factor_n(4, A, piv);
    case 5: return lu_factor_n(5, A, piv);
    case 6: return lu_factor_n(6, A, piv);
    default: return lu_factor_any(n, A, piv);
    }
}

FMIGEN_COUNTED void fmigen_lu_solve(int n, const double *LU, const int *piv, double *b)
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
const double fmigen_atan_64ths[65] = {
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
const double fmigen_atan_64ths_lo[65] = {
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
    const double t = FMIGEN_ATAN_REDUCE(r, c), z = t * t;
    double a = fmigen_atan_64ths[i] + (fmigen_atan_64ths_lo[i] + FMIGEN_ATAN_SERIES(t, z));
    if (swap) a = FMIGEN_HALF_PI_MINUS(a);
    if (x < 0.0) a = FMIGEN_PI_MINUS(a);
    return copysign(a, y);
}

/* sin and cos after fdlibm (declared in fmigen_runtime.h, which says why
 * and how far after), the operations of fmigen_sincos_4's lanes in their
 * order.  Error: within one ulp of the exact value (tests/test_runtime_lu.py,
 * against long double sinl/cosl at a million points: 0.83).
 * want: 1 sin, 2 cos, 3 both; a constant in each caller below, so that
 * fmigen_sin and fmigen_cos compute only the kernel their quadrant needs
 * (the same expressions: the same bits as fmigen_sincos) */
FMIGEN_ALWAYS_INLINE void fmigen_sincos_body(double x, double *s, double *c, const int want)
{
    const double t = fabs(x);
#if defined(__FAST_MATH__)
    /* the reduction's compensation would be folded away (fmigen_runtime.h) */
    if (want & 1) *s = sin(x);
    if (want & 2) *c = cos(x);
    return;
#endif
    if (!(t <= FMIGEN_SINCOS_MAX)) {
        if (want & 1) *s = sin(x);
        if (want & 2) *c = cos(x);
        return;
    }
    const int n = (int)(t * FMIGEN_INVPIO2 + 0.5);
    const double fn = (double)n;
    double r, w;
    FMIGEN_SINCOS_ROUND1(t, fn, r, w)
    /* t's power of two: cancellation by r − w's exponent, as fdlibm's */
    double p2;
    {
        uint64_t u;
        memcpy(&u, &t, sizeof u);
        u &= 0x7ff0000000000000ULL;
        memcpy(&p2, &u, sizeof p2);
    }
    if (fabs(r - w) < p2 * 0x1p-16) {
        const double r1 = r;
        FMIGEN_SINCOS_ROUND(r1, fn, FMIGEN_PIO2_2, FMIGEN_PIO2_2T, r, w)
        if (fabs(r - w) < p2 * 0x1p-49) {
            const double r2 = r;
            FMIGEN_SINCOS_ROUND(r2, fn, FMIGEN_PIO2_3, FMIGEN_PIO2_3T, r, w)
        }
    }
    const double y0 = r - w, y1 = (r - y0) - w;
    const double z = y0 * y0, ay = fabs(y0);
    /* sin x takes ks in even quadrants and kc in odd ones, cos x the other */
    const int odd = n & 1;
    const int need_ks = want == 3 || (want == 1) != odd, need_kc = want == 3 || (want == 2) != odd;
    const double ks = need_ks ? FMIGEN_KSIN(y0, y1, z) : 0.0;
    double kc = 0.0;
    if (need_kc) {
        const double rc = FMIGEN_KCOS_R(z);
        if (ay < 0.3) kc = FMIGEN_KCOS_SMALL(y0, y1, z, rc);
        else {
            double qx = 0.28125;
            if (!(ay > 0.78125)) {
                uint64_t u;
                qx = ay * 0.25;
                memcpy(&u, &qx, sizeof u);
                u &= FMIGEN_KCOS_QX_MASK;
                memcpy(&qx, &u, sizeof qx);
            }
            kc = FMIGEN_KCOS_LARGE(y0, y1, z, rc, qx);
        }
    }
    double sn, cs;
    switch (n & 3) {
    case 0: sn = ks; cs = kc; break;
    case 1: sn = kc; cs = -ks; break;
    case 2: sn = -ks; cs = -kc; break;
    default: sn = -kc; cs = ks; break;
    }
    if (want & 1) *s = signbit(x) ? -sn : sn;
    if (want & 2) *c = cs;
}

void fmigen_sincos(double x, double *s, double *c) { fmigen_sincos_body(x, s, c, 3); }

FMIGEN_NOINLINE void fmigen_sincos_call(double x, double *s, double *c) { fmigen_sincos(x, s, c); }
double fmigen_sin(double x) { double s = 0.0; fmigen_sincos_body(x, &s, &s, 1); return s; }
double fmigen_cos(double x) { double c = 0.0; fmigen_sincos_body(x, &c, &c, 2); return c; }

/* asin x = atan2(x, √((1 − x)(1 + x))), acos x = atan2(√(…), x),
 * atan x = atan2(x, 1), all by fmigen_atan2 and the correctly rounded sqrt.
 * (1 − x)(1 + x) rather than 1 − x²: 1 − x is exact for |x| >= 1/2
 * (Sterbenz), so the root keeps its relative accuracy near ±1, where
 * 1 − x² cancels.  |x| > 1 and NaN give NaN, as libm's; ±0 and ±1 the
 * exact results (±0, ±π/2 rounded, 0, π rounded). */
double fmigen_asin(double x) { return fmigen_atan2(x, sqrt((1.0 - x) * (1.0 + x))); }
double fmigen_acos(double x) { return fmigen_atan2(sqrt((1.0 - x) * (1.0 + x)), x); }
double fmigen_atan(double x) { return fmigen_atan2(x, 1.0); }

/* tan x = sin x / cos x of fmigen_sincos: one more rounding on its two
 * results, each within one ulp.  cos x of a double x is never 0. */
double fmigen_tan(double x)
{
    double s, c;
    fmigen_sincos(x, &s, &c);
    return s / c;
}

/* 2^k as a double, -1022 <= k <= 1023: its exponent bits */
static double fmigen_pow2(int k)
{
    const uint64_t u = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* exp x after fdlibm's e_exp.c (Sun Microsystems, 1993): x = k·ln2 + r,
 * |r| <= ln2/2, with ln2 in two parts (LN2_HI of 32 bits: k·LN2_HI and
 * x − k·LN2_HI exact), exp r by fdlibm's rational form of a degree-5
 * Remez polynomial in r², then 2^k by exponent bits (in two factors where
 * 2^k or the result is not a normal double, so that a subnormal result
 * rounds once).  Its branch tests on values rather than high words.
 * Overflow gives +inf, underflow below the least subnormal's half +0, NaN
 * NaN; exp(±0) = 1.  Error: tests/test_runtime_lu.py. */
#define FMIGEN_LN2_HI 0x1.62e42feep-1
#define FMIGEN_LN2_LO 0x1.a39ef35793c76p-33
double fmigen_exp(double x)
{
#if defined(__FAST_MATH__)
    /* the reduction's two-part subtraction would be reassociated */
    return exp(x);
#endif
    if (x != x) return x + x;
    if (x > 0x1.62e42fefa39efp+9) return INFINITY;   /* exp x > DBL_MAX */
    if (x < -0x1.74910d52d3051p+9) return 0.0;       /* exp x < 2^-1075 */
    int k = 0;
    double hi = x, lo = 0.0;
    if (fabs(x) > 0x1.62e42fefa39efp-2) {             /* ln2/2 */
        k = (int)(0x1.71547652b82fep+0 * x + (x < 0.0 ? -0.5 : 0.5));
        const double dk = (double)k;
        hi = x - dk * FMIGEN_LN2_HI;
        lo = dk * FMIGEN_LN2_LO;
    }
    const double r = hi - lo, t = r * r;
    const double c = r - t * (0x1.555555555553ep-3 + t * (-0x1.6c16c16bebd93p-9 + t * (0x1.1566aaf25de2cp-14
                     + t * (-0x1.bbd41c5d26bf1p-20 + t * 0x1.6376972bea4d0p-25))));
    if (k == 0) return 1.0 - ((r * c) / (c - 2.0) - r);
    const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    if (k > 1023) return (y * 2.0) * 0x1p1023;
    if (k < -1021) return (y * fmigen_pow2(k + 1000)) * 0x1p-1000;
    return y * fmigen_pow2(k);
}

/* log x after fdlibm's e_log.c: x = 2^k (1 + f), 1 + f in [√2/2, √2) by
 * the high word's leading mantissa bits (fdlibm's test), then with
 * s = f/(2 + f) log(1 + f) = f − s(f − R), R by fdlibm's degree-14
 * polynomial in s, and k·ln2 in two parts; 2^-20 around 1 a short series.
 * +0 and −0 give −inf, x < 0 NaN, +inf +inf, NaN NaN, log 1 = +0.
 * Error: tests/test_runtime_lu.py. */
double fmigen_log(double x)
{
#if defined(__FAST_MATH__)
    return log(x);
#endif
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int k = 0;
    if (u >> 52 == 0 || u >> 63) {                   /* ±0, subnormal, negative */
        if ((u << 1) == 0) return -INFINITY;
        if (u >> 63) return NAN;
        k = -54;
        x *= 0x1p54;
        memcpy(&u, &x, sizeof u);
    }
    if (u >> 52 >= 0x7ff) return x + x;               /* +inf, NaN */
    k += (int)(u >> 52) - 1023;
    const uint32_t hx = (uint32_t)(u >> 32) & 0x000fffffu;
    const uint32_t i = (hx + 0x95f64u) & 0x100000u;   /* 1.f >= √2: halve it */
    u = (u & 0x000fffffffffffffULL) | ((uint64_t)(i ^ 0x3ff00000u) << 32);
    memcpy(&x, &u, sizeof x);
    k += (int)(i >> 20);
    const double f = x - 1.0, dk = (double)k;
    if (((2 + hx) & 0x000fffffu) < 3) {               /* -2^-20 <= f < 2^-20 */
        if (f == 0.0) return k == 0 ? 0.0 : dk * FMIGEN_LN2_HI + dk * FMIGEN_LN2_LO;
        const double R = f * f * (0.5 - 0.33333333333333333 * f);
        return k == 0 ? f - R : dk * FMIGEN_LN2_HI - ((R - dk * FMIGEN_LN2_LO) - f);
    }
    const double s = f / (2.0 + f), z = s * s, w = z * z;
    const double t1 = w * (0x1.999999997fa04p-2 + w * (0x1.c71c51d8e78afp-3 + w * 0x1.39a09d078c69fp-3));
    const double t2 = z * (0x1.5555555555593p-1 + w * (0x1.2492494229359p-2 + w * (0x1.7466496cb03dep-3
                      + w * 0x1.2f112df3e5244p-3)));
    const double R = t2 + t1;
    if (hx >= 0x6147au && hx <= 0x6b851u) {           /* |f| largest: 1.f near √2 */
        const double hfsq = 0.5 * f * f;
        return k == 0 ? f - (hfsq - s * (hfsq + R))
                      : dk * FMIGEN_LN2_HI - ((hfsq - (s * (hfsq + R) + dk * FMIGEN_LN2_LO)) - f);
    }
    return k == 0 ? f - s * (f - R) : dk * FMIGEN_LN2_HI - ((s * (f - R) - dk * FMIGEN_LN2_LO) - f);
}

/* All complex roots by Aberth–Ehrlich iteration (simultaneous Newton with
 * repulsion; converges cubically to every root, the same roots as the
 * companion-matrix eigenvalues).  Returns 0 when converged. */
#define FMIGEN_MAX_DEGREE 32
/* the iteration caps of fmigen_poly_root: its Newton from the prediction,
 * and all_roots' Aberth iteration */
#define FMIGEN_POLY_NEWTON_MAX_ITER 8
#define FMIGEN_ABERTH_MAX_ITER 500
/* a statement run on entry: empty, or a test's counter of the fallback's
 * runs (tests/test_runtime_lu.py defines it on the command line) */
#ifndef FMIGEN_ALL_ROOTS_ENTERED
#define FMIGEN_ALL_ROOTS_ENTERED()
#endif
static int all_roots(int degree, const double *a, double *re, double *im)
{
    FMIGEN_ALL_ROOTS_ENTERED();
    if (degree > FMIGEN_MAX_DEGREE || a[0] == 0.0) return 1;
    /* initial points on a circle of the Cauchy-bound radius, rotated off the axes */
    double R = 0.0;
    for (int k = 1; k <= degree; k++) { double r = fabs(a[k] / a[0]); if (r > R) R = r; }
    R = 1.0 + R;
    for (int k = 0; k < degree; k++) {
        double ang = 6.283185307179586 * k / degree + 0.4;
        double s, c;
        fmigen_sincos(ang, &s, &c);   /* not libm's: the same start, so the same roots, everywhere */
        re[k] = 0.5 * R * c; im[k] = 0.5 * R * s;
    }
    for (int it = 0; it < FMIGEN_ABERTH_MAX_ITER; it++) {
        FMIGEN_ABERTH_STEP(it);
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
    for (int it = 0; it < FMIGEN_POLY_NEWTON_MAX_ITER; it++) {
        FMIGEN_POLY_NEWTON_STEP(it);
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

/* Compiled once, with the runtime (fmigen_core.c): the tables it reads are
 * in the SSE2 copy of model.c only, whose functions the AVX copy calls. */
#ifndef FMIGEN_MODEL_VARIANT
void fmigen_poly_table(double *v, int first, int n_runs, const int *runs, int n_polys,
                       const int *counts, const int *terms, const double *coefficients, double *a)
{
    /* Unrolled by four by hand (the same operations in the same order):
     * the loop's own counting and branching would otherwise be a third of
     * its instructions, and the build's -O2 does not unroll. */
    double *out = v + first;
    for (int r = 0; r < n_runs; r++) {
        const double g = v[runs[3 * r]];
        const double *parent = v + runs[3 * r + 1];
        const int n = runs[3 * r + 2];
        int k = 0;
        for (; k + 4 <= n; k += 4) {
            out[k] = parent[k] * g;
            out[k + 1] = parent[k + 1] * g;
            out[k + 2] = parent[k + 2] * g;
            out[k + 3] = parent[k + 3] * g;
        }
        for (; k < n; k++)
            out[k] = parent[k] * g;
        out += n;
    }
    for (int i = 0; i < n_polys; i++) {
        const int n = counts[i];
        double sum = 0.0;
        if (n > 0) {
            sum = coefficients[0] * v[terms[0]];
            int t = 1;
            for (; t + 4 <= n; t += 4) {
                sum += coefficients[t] * v[terms[t]];
                sum += coefficients[t + 1] * v[terms[t + 1]];
                sum += coefficients[t + 2] * v[terms[t + 2]];
                sum += coefficients[t + 3] * v[terms[t + 3]];
            }
            for (; t < n; t++)
                sum += coefficients[t] * v[terms[t]];
        }
        a[i] = sum;
        terms += n;
        coefficients += n;
    }
}
#endif

#endif
