"""The runtime's dense LU against numpy, on matrices that need row pivoting."""
import subprocess
from pathlib import Path

import numpy as np
import pytest

RUNTIME = Path(__file__).resolve().parent.parent / "fmigen" / "runtime"

HARNESS = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
int main(void) {
    int n; double A[400], b[20]; int piv[20];
    while (scanf("%d", &n) == 1) {
        for (int i = 0; i < n * n; i++) scanf("%lf", &A[i]);
        for (int i = 0; i < n; i++) scanf("%lf", &b[i]);
        if (fmigen_lu_factor(n, A, piv)) { printf("singular\n"); continue; }
        fmigen_lu_solve(n, A, piv, b);
        for (int i = 0; i < n; i++) printf("%.17g ", b[i]);
        printf("\n");
    }
    return 0;
}
"""


def runtime_harness(tmp_path, source, name, flags=()):
    """``source`` linked against the runtime alone (a one-coordinate
    model_config.h; the model's functions left unresolved, never called),
    compiled with -O2 and ``flags``."""
    (tmp_path / "model_config.h").write_text("#define NQ 1\n#define NC 0\n#define NI 1\n#define NP 0\n"
                                             "#define NU 0\n#define NY 0\n#define NSOL 0\n")
    (tmp_path / "h.c").write_text(source)
    exe = tmp_path / name
    subprocess.run(["gcc", "-O2", "-std=c99", *flags, f"-I{tmp_path}", f"-I{RUNTIME}", str(tmp_path / "h.c"),
                    str(RUNTIME / "fmigen_core.c"), "-o", str(exe), "-lm", "-no-pie",
                    "-Wl,--unresolved-symbols=ignore-all"], check=True)
    return exe


def test_lu_solve_matches_numpy(tmp_path):
    exe = runtime_harness(tmp_path, HARNESS, "lu")
    rng = np.random.default_rng(1)
    cases, expected = [], []
    for n in (2, 3, 5, 8, 18):
        for _ in range(5):
            A = rng.normal(size=(n, n))
            A[0, 0] = 1e-6  # force pivoting
            b = rng.normal(size=n)
            cases.append(f"{n} " + " ".join(repr(float(v)) for v in A.ravel()) + " " + " ".join(repr(float(v)) for v in b))
            expected.append(np.linalg.solve(A, b))
    out = subprocess.run([str(exe)], input="\n".join(cases), capture_output=True, text=True, check=True)
    assert len(out.stdout.splitlines()) == len(expected)
    for line, x in zip(out.stdout.splitlines(), expected):
        got = np.array([float(v) for v in line.split()])
        assert np.abs(got - x).max() <= 1e-10 * (1 + np.abs(x).max())


#: the runtime's LU as one loop for any n (before it was specialized per size)
GENERIC_HARNESS = r"""
#include <stdio.h>
#include <math.h>
#include <string.h>
#include "fmigen_runtime.h"
static int generic_factor(int n, double *A, int *piv)
{
    double scale = 0.0;
    for (int k = 0; k < n * n; k++) if (fabs(A[k]) > scale) scale = fabs(A[k]);
    if (!(scale > 0.0) || !isfinite(scale)) return 1;
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++) if (fabs(A[i * n + k]) > fabs(A[p * n + k])) p = i;
        if (!(fabs(A[p * n + k]) > 1e-13 * scale)) return 1;
        piv[k] = p;
        if (p != k) for (int j = 0; j < n; j++) {
            double tmp = A[k * n + j]; A[k * n + j] = A[p * n + j]; A[p * n + j] = tmp;
        }
        for (int i = k + 1; i < n; i++) {
            double l = A[i * n + k] /= A[k * n + k];
            for (int j = k + 1; j < n; j++) A[i * n + j] -= l * A[k * n + j];
        }
    }
    return 0;
}
static void generic_solve(int n, const double *LU, const int *piv, double *b)
{
    for (int k = 0; k < n; k++)
        if (piv[k] != k) { double tmp = b[k]; b[k] = b[piv[k]]; b[piv[k]] = tmp; }
    for (int k = 0; k < n; k++)
        for (int i = k + 1; i < n; i++) b[i] -= LU[i * n + k] * b[k];
    for (int k = n - 1; k >= 0; k--) {
        for (int j = k + 1; j < n; j++) b[k] -= LU[k * n + j] * b[j];
        b[k] /= LU[k * n + k];
    }
}
int main(void) {
    int n, cases = 0, same = 0; double A[400], B[400], b[20], c[20]; int piv[20], pv[20];
    while (scanf("%d", &n) == 1) {
        for (int i = 0; i < n * n; i++) scanf("%lf", &A[i]);
        for (int i = 0; i < n; i++) scanf("%lf", &b[i]);
        memcpy(B, A, sizeof A); memcpy(c, b, sizeof b);
        int s1 = fmigen_lu_factor(n, A, piv), s2 = generic_factor(n, B, pv);
        if (!s1) fmigen_lu_solve(n, A, piv, b);
        if (!s2) generic_solve(n, B, pv, c);
        cases++;
        same += s1 == s2 && (s1 || (!memcmp(A, B, sizeof(double) * n * n) && !memcmp(b, c, sizeof(double) * n)
                                    && !memcmp(piv, pv, sizeof(int) * n)));
    }
    printf("%d %d\n", cases, same);
    return 0;
}
"""


def test_lu_per_size_is_bit_for_bit_the_loop(tmp_path):
    """fmigen_lu_factor/_solve run 4x4 to 6x6 inlined with the size a
    constant and the loops unrolled: the same operations in the same order
    as the loop for any n, so the same bits (factors, pivots, solution), and
    the same singularity verdicts."""
    exe = runtime_harness(tmp_path, GENERIC_HARNESS, "generic")
    rng = np.random.default_rng(5)
    cases = []
    for n in (3, 4, 5, 6, 7):
        for k in range(40):
            A = rng.normal(size=(n, n)) * 10.0 ** rng.integers(-3, 4, size=(n, n))
            if k % 10 == 0:
                A[-1] = A[0] * 2.0          # singular
            cases.append(f"{n} " + " ".join(repr(float(v)) for v in A.ravel()) + " "
                         + " ".join(repr(float(v)) for v in rng.normal(size=n)))
    out = subprocess.run([str(exe)], input="\n".join(cases), capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(cases))] * 2

#: a step polynomial of the dynamic landing gear's Gröbner sequence
#: (s_theta_B, degree 6) as the kinematics met it at t = 0.47 s, and the
#: predicted root it started from
GEAR_POLY = [3.1647330189930409e+61, 7.969905221855419e+61, 4.1368197472874055e+61, -3.5150689261801078e+61,
             -2.855629055648803e+61, 5.2210658989373135e+60, 5.3104635731259424e+60]
GEAR_X0 = -0.67397783748306461

POLY_HARNESS = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
/* all_roots (the Aberth fallback) counts its runs here
 * (FMIGEN_ALL_ROOTS_ENTERED, POLY_FLAGS) */
int trig_calls = 0;
int main(void) {
    double a[7], x;
    for (int i = 0; i < 7; i++) scanf("%lf", &a[i]);
    scanf("%lf", &x);
    int st = fmigen_poly_root(6, a, &x);
    printf("%d %.17g %d\n", st, x, trig_calls);
    return 0;
}
"""

POLY_FLAGS = ["-DFMIGEN_ALL_ROOTS_ENTERED()={ extern int trig_calls; trig_calls++; }"]


def test_poly_root_stops_at_the_rounding_floor(tmp_path, monkeypatch):
    """Newton on a polynomial with coefficients near 1e61 oscillates at a few
    1e-15 around the root and never meets a 1e-15 relative step; it must
    stop when p(z) is within its own rounding error instead of falling
    through to every root by Aberth iteration (500 iterations of it made
    97 % of a landing-gear step).  C and the Python runtime alike."""
    from fmigen.pyfmu import numeric
    exe = runtime_harness(tmp_path, POLY_HARNESS, "poly", POLY_FLAGS)
    out = subprocess.run([str(exe)], input=" ".join(map(repr, GEAR_POLY + [GEAR_X0])), capture_output=True,
                         text=True, check=True).stdout.split()
    st, z, trig_calls = int(out[0]), float(out[1]), int(out[2])
    assert st == 0 and trig_calls == 0
    # a root to the precision the coefficients allow, on the predicted branch
    p, dp, mag = numeric.poly_eval(6, GEAR_POLY, z)
    assert abs(p) <= 4 * 6 * 2.220446049250313e-16 * mag
    assert abs(z - GEAR_X0) < 1e-6

    def no_fallback(*args):
        raise AssertionError("poly_root fell back to all_roots")
    monkeypatch.setattr(numeric, "all_roots", no_fallback)
    assert numeric.poly_root(6, GEAR_POLY, GEAR_X0) == (0, z)


ATAN2_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
/* |a − b| in units in the last place of b */
static double ulps(double a, double b)
{
    if (a == b) return 0.0;
    return fabs(a - b) / (nextafter(fabs(b), INFINITY) - fabs(b));
}
int main(void)
{
    double worst = 0.0;
    long sign = 0;
    srand(1);
    for (long k = 0; k < 1000000; k++) {
        double y, x;
        if (k % 2) {   /* a unit-circle pair, as the kinematics hands over */
            double ang = ((double)rand() / RAND_MAX * 2 - 1) * 3.2;
            y = sin(ang); x = cos(ang);
        } else {       /* any magnitudes */
            y = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 12 - 6);
            x = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 12 - 6);
        }
        double a = fmigen_atan2(y, x), b = atan2(y, x);
        if (ulps(a, b) > worst) worst = ulps(a, b);
        sign += signbit(a) != signbit(b);
    }
    /* signed zeros, axes, diagonals, subnormals, infinities, NaN */
    const double z = 0.0, inf = 1.0 / z;
    const double sp[][2] = {{0.0, 1.0}, {-0.0, 1.0}, {0.0, -1.0}, {-0.0, -1.0}, {0.0, 0.0}, {-0.0, -0.0},
                            {1.0, 0.0}, {-1.0, -0.0}, {1, 1}, {-1, -1}, {1, -1}, {1e-310, -1}, {1, 1e-310},
                            {inf, 1}, {1, -inf}, {-inf, inf}, {z / z, 1}};
    long special = 0;
    for (unsigned k = 0; k < sizeof sp / sizeof sp[0]; k++) {
        double a = fmigen_atan2(sp[k][0], sp[k][1]), b = atan2(sp[k][0], sp[k][1]);
        if (!(ulps(a, b) <= 1.0 && signbit(a) == signbit(b)) && !(a != a && b != b)) special++;
    }
    printf("%.17g %ld %ld\n", worst, sign, special);
    return 0;
}
"""


def test_runtime_atan2_within_an_ulp_of_libm(tmp_path):
    """fmigen_atan2 (the angles an FMU reports from its solved sin/cos) against
    glibc's atan2: within one ulp over a million points, the same sign
    everywhere (signed zeros included) and libm's special values."""
    exe = runtime_harness(tmp_path, ATAN2_HARNESS, "atan2")
    worst, sign, special = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert float(worst) <= 1.0 and int(sign) == 0 and int(special) == 0, (worst, sign, special)


#: a double at or next to a multiple n·π/2 (0 <= n < 2^19, from r): the double
#: nearest to it in long double arithmetic (64 bits, so that the nearest
#: doubles, where the reduction cancels most and takes its third round,
#: are among them), moved by k ulps
NEAREST_PIO2 = r"""
static double nearest_pio2(int r, int k)
{
    const long double half_pi = 1.570796326794896619231321691639751442L;
    double x = (double)((long double)(r % 509000) * half_pi);
    for (; k > 0; k--) x = nextafter(x, INFINITY);
    for (; k < 0; k++) x = nextafter(x, -INFINITY);
    return r & 1 ? -x : x;
}
"""

SINCOS_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
""" + NEAREST_PIO2 + r"""
/* |a − b| in units in the last place of b rounded to double (b: long
 * double sinl/cosl, 64 bits, the reference) */
static double ulps(double a, long double b)
{
    const double bd = (double)b;
    return (double)(fabsl((long double)a - b) / (long double)(nextafter(fabs(bd), INFINITY) - fabs(bd)));
}
int main(void)
{
    double worst = 0.0, worst_libm = 0.0;
    srand(1);
    for (long k = 0; k < 1000000; k++) {
        double x;
        switch (k % 5) {
        case 0: x = ((double)rand() / RAND_MAX * 2 - 1) * 3.5; break;          /* an angle */
        case 1: x = ((double)rand() / RAND_MAX * 2 - 1) * 100; break;
        case 2: x = ((double)rand() / RAND_MAX * 2 - 1) * 8e5; break;          /* up to the range's end */
        case 3: x = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 16 - 12); break;
        default:   /* at or next to a multiple of π/2: the reduction's later rounds */
            x = k % 2 ? nearest_pio2(rand(), rand() % 5 - 2)
                      : (rand() % 2000 - 1000) * 1.5707963267948966 + ((double)rand() / RAND_MAX - 0.5) * 1e-9 * (rand() % 3);
        }
        double s, c;
        fmigen_sincos(x, &s, &c);
        const long double S = sinl((long double)x), C = cosl((long double)x);
        worst = fmax(worst, fmax(ulps(s, S), ulps(c, C)));
        worst_libm = fmax(worst_libm, fmax(ulps(sin(x), S), ulps(cos(x), C)));
    }
    /* signed zeros, subnormals, the kernels' and the range's bounds, beyond
     * it (libm), infinities, NaN: libm's values to an ulp, its sign, NaN */
    const double z = 0.0, inf = 1.0 / z;
    const double sp[] = {0.0, -0.0, 1e-310, -1e-310, 0.3, 0.78125, -1.5707963267948966, 3.141592653589793,
                         8e5, -8e5, 8.0000000000000012e5, 1e300, inf, -inf, z / z};
    long special = 0;
    for (unsigned k = 0; k < sizeof sp / sizeof sp[0]; k++) {
        double s, c;
        fmigen_sincos(sp[k], &s, &c);
        const double S = sin(sp[k]), C = cos(sp[k]);
        if (S != S) special += !(s != s && c != c);
        else special += !(fabs(s - S) <= 2.3e-16 * fabs(S) + 5e-324 && signbit(s) == signbit(S) &&
                          fabs(c - C) <= 2.3e-16 * fabs(C));
    }
    printf("%.17g %.17g %ld\n", worst, worst_libm, special);
    return 0;
}
"""


def test_runtime_sincos_within_an_ulp(tmp_path):
    """fmigen_sincos (the sin/cos of the independent angles every solve
    starts from) against long double sinl/cosl: within one ulp over a
    million points (measured 0.83; glibc's sin/cos 0.52 on the same
    points), among them doubles at and next to multiples of π/2 up to the
    range's end, where the reduction cancels and takes its later rounds;
    libm's values, signs and NaN at the special points and beyond the
    range."""
    exe = runtime_harness(tmp_path, SINCOS_HARNESS, "sincos")
    worst, worst_libm, special = subprocess.run([str(exe)], capture_output=True, text=True,
                                                check=True).stdout.split()
    assert float(worst) < 1.0 and float(worst_libm) < 1.0 and int(special) == 0, (worst, worst_libm, special)


#: reads (y, x), x or (s, c, d, a) in hex, prints the runtime's result in hex
PORT_HARNESS = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
int main(void) {
    char what[8];
    while (scanf("%7s", what) == 1) {
        if (what[0] == 'a') {
            double y, x;
            if (scanf("%la %la", &y, &x) != 2) return 1;
            printf("%a\n", fmigen_atan2(y, x));
        } else if (what[0] == 's') {
            double x, s, c;
            if (scanf("%la", &x) != 1) return 1;
            fmigen_sincos(x, &s, &c);
            printf("%a %a\n", s, c);
        } else {
            double s, c, d, a;
            if (scanf("%la %la %la %la", &s, &c, &d, &a) != 4) return 1;
            fmigen_rotate(&s, &c, d, a);
            printf("%a %a\n", s, c);
        }
    }
    return 0;
}
"""


def test_python_ports_of_atan2_sincos_and_rotate_are_bit_identical(tmp_path):
    """The Python runtime's fmigen_atan2, fmigen_sincos and rotate
    (pyruntime.py) give the C runtime's bits: a Newton start, a solve's
    first sin/cos and a Newton iteration then agree between the two FMUs,
    not just within round-off.  fmigen_rotate itself: the
    rotated pair is sin and cos of θ + d to within 4.5e-16 (~2 ulps; measured one), on both its
    branches (|d| <= 1/32: Taylor series; beyond: fmigen_sincos)."""
    import math

    import mpmath

    from fmigen.generate.elementary import fmigen_atan2, fmigen_sincos
    from fmigen.pyfmu.numeric import rotate
    exe = runtime_harness(tmp_path, PORT_HARNESS, "ports")
    rng = np.random.default_rng(5)
    lines, expect = [], []
    for k in range(20000):
        if k % 2:
            a = rng.uniform(-3.2, 3.2)
            y, x = math.sin(a), math.cos(a)
        else:
            y, x = (float(rng.uniform(-1, 1) * 10.0 ** rng.integers(-6, 7)) for _ in range(2))
        lines.append(f"a {y.hex()} {x.hex()}")
        expect.append(("a", fmigen_atan2(y, x)))
    for y, x in [(0.0, 1.0), (-0.0, 1.0), (0.0, -1.0), (-0.0, -1.0), (0.0, 0.0), (1.0, 1.0), (-1.0, -1.0),
                 (1e-310, -1.0), (math.inf, 1.0)]:
        lines.append(f"a {y.hex()} {x.hex()}")
        expect.append(("a", fmigen_atan2(y, x)))
    # sin/cos: angles, any magnitudes, near multiples of π/2 (the second and
    # third rounds of the reduction), beyond the range (libm) and specials
    for k in range(20000):
        if k % 4 == 0:
            x = float(rng.uniform(-3.5, 3.5))
        elif k % 4 == 1:
            x = float(rng.uniform(-1, 1) * 10.0 ** rng.integers(-12, 7))
        elif k % 4 == 2:
            x = float(rng.integers(-1000, 1000) * 1.5707963267948966 + rng.uniform(-1e-9, 1e-9) * (k % 3))
        else:
            x = float(rng.uniform(-1, 1) * 8e5)
        lines.append(f"s {x.hex()}")
        expect.append(("s", *fmigen_sincos(x)))
    for x in (0.0, -0.0, 1e-310, 0.3, 0.78125, 8e5, 8.5e5, -1e300):
        lines.append(f"s {x.hex()}")
        expect.append(("s", *fmigen_sincos(x)))
    worst, taylor = 0.0, 0
    for k in range(20000):
        theta = float(rng.uniform(-3.2, 3.2))
        d = float(rng.uniform(-1, 1) * (0.03125 if k % 4 else 0.5) * 10.0 ** -rng.integers(0, 12))
        s, c = math.sin(theta), math.cos(theta)
        lines.append(f"r {s.hex()} {c.hex()} {d.hex()} {(theta + d).hex()}")
        rs, rc = rotate(s, c, d, theta + d)
        expect.append(("r", rs, rc))
        taylor += abs(d) <= 0.03125
        # θ + d exactly: at mpmath's default 53 bits the sum would be rounded
        # as in double, and the comparison would hide that rounding
        with mpmath.workprec(200):
            exact = mpmath.mpf(theta) + mpmath.mpf(d)
            worst = max(worst, abs(rs - float(mpmath.sin(exact))), abs(rc - float(mpmath.cos(exact))))
    # both branches ran (measured: 19,469 Taylor, 531 fmigen_sincos)
    assert 1000 < taylor < 19900, taylor
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert len(out) == len(expect)
    mismatches = 0
    for line, e in zip(out, expect):
        got = [float.fromhex(v) for v in line.split()]
        want = list(e[1:])
        mismatches += any(g != w or math.copysign(1, g) != math.copysign(1, w) for g, w in zip(got, want))
    assert mismatches == 0
    # against sin, cos of the exact θ + d: the rounding of libm's pair it
    # starts from and of the rotation's two products and sum, ~2 ulps of 1
    # (measured: 2.2e-16, one ulp, on both branches)
    assert worst <= 4.5e-16, worst


FINITE = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
int main(void) {
    double x[5] = {1.0, -0.0, 4.9e-324, 1.7976931348623157e308, 2.0};
    const int at[2] = {0, 3};
    const double bad[4] = {INFINITY, -INFINITY, NAN, -NAN};
    printf("%d %d", fmigen_all_finite(x, 5), fmigen_all_finite_at(x, at, 2));
    for (int k = 0; k < 4; k++) {
        x[3] = bad[k];
        printf(" %d %d %d", fmigen_all_finite(x, 5), fmigen_all_finite_at(x, at, 2),
               fmigen_all_finite_at(x, at, 1));
    }
    printf("\n");
    return 0;
}
"""


def test_the_finiteness_test_holds_under_an_importers_fast_math_flags(tmp_path):
    """fmigen_all_finite (the state, derivative and independent-coordinate
    checks of every step) reads the exponent bits, so an importer rebuilding
    the source FMU with value-changing floating-point flags keeps it: the sum
    of x − x it replaced was folded to "finite" by -fassociative-math
    (-ffast-math -fno-finite-math-only, -funsafe-math-optimizations; a
    review's reproduction).  Subnormals, −0 and the largest double are
    finite; ±inf and ±NaN are not, in every position asked about."""
    (tmp_path / "model_config.h").write_text("#define NQ 1\n#define NC 0\n#define NI 1\n#define NP 0\n"
                                             "#define NU 0\n#define NY 0\n#define NSOL 0\n")
    (tmp_path / "f.c").write_text(FINITE)
    for flags in (["-O2"], ["-O0"], ["-O3", "-march=native"], ["-O2", "-ffast-math", "-fno-finite-math-only"],
                  ["-O2", "-funsafe-math-optimizations"]):
        exe = tmp_path / "finite"
        subprocess.run(["gcc", *flags, "-std=c99", f"-I{tmp_path}", f"-I{RUNTIME}", str(tmp_path / "f.c"),
                        "-o", str(exe), "-lm"], check=True)
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
        assert out == ["1", "1"] + ["0", "0", "1"] * 4, (flags, out)


#: fmigen_atan2_4's lanes against fmigen_atan2, one by one: prints the count
#: of results whose bits differ, and of groups that took the scalar fallback
ATAN2_4_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
int main(void)
{
    const double z = 0.0, inf = 1.0 / z;
    const double sp[][2] = {{0.0, 1.0}, {-0.0, 1.0}, {0.0, -1.0}, {-0.0, -1.0}, {0.0, 0.0}, {-0.0, -0.0},
                            {1.0, 0.0}, {-1.0, -0.0}, {1, 1}, {-1, -1}, {1, -1}, {1e-310, -1}, {1, 1e-310},
                            {inf, 1}, {1, -inf}, {-inf, inf}, {z / z, 1}, {0.01, 1}, {0.0078125, 1},
                            {0.015625, 1}, {-0.0155, -1}, {1, 0.0156}, {3e-200, 1e-200}, {1e300, -1e300}};
    const long nsp = sizeof sp / sizeof sp[0];
    long differ = 0, groups = 0;
    double trig[16], q[8], ref[8];
    srand(3);
    for (long g = 0; g < 400000; g++) {
        for (int j = 0; j < 4; j++) {
            double y, x;
            const int kind = rand() % 8;
            if (kind == 0) {   /* a special value in a lane of an otherwise ordinary group */
                y = sp[rand() % nsp][0]; x = sp[rand() % nsp][1];
            } else if (kind < 5) {   /* a unit-circle pair, as the kinematics hands over */
                double ang = ((double)rand() / RAND_MAX * 2 - 1) * 3.2;
                y = sin(ang); x = cos(ang);
            } else {   /* any magnitudes */
                y = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 12 - 6);
                x = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 12 - 6);
            }
            /* angle a = 3 - j (the lanes out of order) at trig[2a], trig[2a + 1] */
            trig[2 * (3 - j)] = y; trig[2 * (3 - j) + 1] = x;
            ref[3 - j] = fmigen_atan2(y, x);
        }
        fmigen_atan2_4(q, trig, 3, 2, 1, 0);
        for (int a = 0; a < 4; a++) differ += memcmp(&q[a], &ref[a], sizeof(double)) != 0 && !(q[a] != q[a] && ref[a] != ref[a]);
        groups++;
    }
    printf("%ld %ld\n", differ, groups);
    return 0;
}
"""



def _lanes_match_one_at_a_time(tmp_path, flags, source):
    """``source`` (a harness printing the count of lanes whose bits differ
    from the scalar function's, and of groups) compiled with ``flags``
    against the runtime alone: 400,000 groups, none differing."""
    import platform
    if "-mavx" in flags and (platform.machine() != "x86_64" or "avx" not in Path("/proc/cpuinfo").read_text()):
        pytest.skip("no AVX here")
    (tmp_path / "model_config.h").write_text("#define NQ 1\n#define NC 0\n#define NI 1\n#define NP 0\n"
                                             "#define NU 0\n#define NY 0\n#define NSOL 0\n")
    (tmp_path / "h.c").write_text(source)
    exe = tmp_path / "lanes"
    r = subprocess.run(["gcc", "-O2", "-std=c99", *flags, f"-I{tmp_path}", f"-I{RUNTIME}", str(tmp_path / "h.c"),
                        str(RUNTIME / "fmigen_core.c"), "-o", str(exe), "-lm", "-no-pie",
                        "-Wl,--unresolved-symbols=ignore-all"], capture_output=True, text=True)
    if r.returncode and "-m32" in flags and ("cannot find" in r.stderr or "No such file" in r.stderr):
        pytest.skip("no 32-bit C library here (gcc-multilib)")
    assert r.returncode == 0, r.stderr
    differ, groups = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    assert int(groups) == 400000 and int(differ) == 0, (differ, groups)


@pytest.mark.parametrize("flags", [[], ["-mavx", "-mno-fma", "-ffp-contract=off"], ["-DFMIGEN_VECTORS=0"],
                                   ["-m32", "-DFMIGEN_ALLOW_EXCESS_PRECISION"]],
                         ids=["sse2", "avx", "no-vector-types", "x87"])
def test_atan2_four_at_a_time_is_bit_identical_to_one_at_a_time(tmp_path, flags):
    """fmigen_atan2_4 (the generated fmigen_kinematic_angles' groups of four)
    returns fmigen_atan2's bits in every lane, on unit-circle pairs, any
    magnitudes and, in one lane of a group, the special values (signed zeros,
    infinities, NaN, subnormals, the 1/64 boundary) whose group takes the
    scalar fallback; compiled for SSE2 (its vectors lowered in halves), as
    the model's AVX copy (AVX, no contraction), as for a compiler without
    vector types (four scalar calls) and for 32-bit x86 with x87 arithmetic
    (gcc -m32, the FMU's own flags there: the lanes would round differently
    from the scalar code's extended precision, so the header takes the four
    calls; with the lanes, 111,082 of the 400,000 differed)."""
    _lanes_match_one_at_a_time(tmp_path, flags, ATAN2_4_HARNESS)


#: fmigen_sincos_4's lanes against fmigen_sincos, one by one: prints the
#: count of results whose bits differ, and of groups
SINCOS_4_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
""" + NEAREST_PIO2 + r"""
int main(void)
{
    const double z = 0.0, inf = 1.0 / z;
    const double sp[] = {0.0, -0.0, 1e-310, -1e-310, 0.3, -0.3, 0.78125, 1.5707963267948966, -1.5707963267948966,
                         3.141592653589793, 4.71238898038469, 7.0e5, -7.9e5, 8.0e5, 8.0000000000000012e5, 1e6,
                         -1e300, inf, -inf, z / z, 0.29999999999999999, 1.8707963267948966, 1.2707963267948966};
    const long nsp = sizeof sp / sizeof sp[0];
    long differ = 0, groups = 0;
    double q[4], trig[8], ref[8];
    srand(3);
    for (long g = 0; g < 400000; g++) {
        for (int j = 0; j < 4; j++) {
            double x;
            const int kind = rand() % 8;
            if (kind == 0) x = sp[rand() % nsp];   /* a special value in some lane: the group falls back */
            else if (kind < 3) x = ((double)rand() / RAND_MAX * 2 - 1) * 3.5;
            else if (kind < 5) x = ((double)rand() / RAND_MAX * 2 - 1) * pow(10, rand() % 12 - 6);
            else if (kind < 7) x = (rand() % 2000 - 1000) * 1.5707963267948966 + ((double)rand() / RAND_MAX - 0.5) * 1e-9 * (rand() % 3);
            else x = nearest_pio2(rand(), rand() % 5 - 2);
            /* angle a = 3 - j (the lanes out of order) */
            q[3 - j] = x;
            fmigen_sincos(x, &ref[2 * (3 - j)], &ref[2 * (3 - j) + 1]);
        }
        fmigen_sincos_4(q, trig, 3, 2, 1, 0);
        for (int a = 0; a < 8; a++)
            differ += memcmp(&trig[a], &ref[a], sizeof(double)) != 0 && !(trig[a] != trig[a] && ref[a] != ref[a]);
        groups++;
    }
    printf("%ld %ld\n", differ, groups);
    return 0;
}
"""


@pytest.mark.parametrize("flags", [[], ["-mavx", "-mno-fma", "-ffp-contract=off"], ["-DFMIGEN_VECTORS=0"],
                                   ["-m32", "-DFMIGEN_ALLOW_EXCESS_PRECISION"]],
                         ids=["sse2", "avx", "no-vector-types", "x87"])
def test_sincos_four_at_a_time_is_bit_identical_to_one_at_a_time(tmp_path, flags):
    """fmigen_sincos_4 (the generated kinematics' independent angles)
    returns fmigen_sincos's bits in every lane: angles, any magnitudes,
    doubles at and next to multiples of π/2, the nearest among them (the
    lanes select the reduction's rounds and the kernels' branches the
    scalar code takes) and, in some lane of a group, the special values
    whose group takes the scalar fallback; for SSE2 and AVX.  Without
    vector types and with x87 arithmetic the header takes four scalar
    calls, so those builds check that it does and that they compile."""
    _lanes_match_one_at_a_time(tmp_path, flags, SINCOS_4_HARNESS)


#: how many of 200,000 finite angles (at and next to multiples of π/2
#: among them) get other bits from fmigen_sincos, and from fmigen_sincos_4,
#: than from libm's sin and cos
SINCOS_LIBM_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
""" + NEAREST_PIO2 + r"""
int main(void)
{
    long scalar = 0, lanes = 0;
    double q[4], trig[8];
    srand(5);
    for (long g = 0; g < 50000; g++) {
        for (int j = 0; j < 4; j++)
            q[j] = j % 2 ? ((double)rand() / RAND_MAX * 2 - 1) * 3.5 : nearest_pio2(rand(), rand() % 5 - 2);
        fmigen_sincos_4(q, trig, 0, 1, 2, 3);
        for (int j = 0; j < 4; j++) {
            const double s = sin(q[j]), c = cos(q[j]);
            double fs, fc;
            fmigen_sincos(q[j], &fs, &fc);
            scalar += memcmp(&fs, &s, sizeof s) != 0 || memcmp(&fc, &c, sizeof c) != 0;
            lanes += memcmp(&trig[2 * j], &s, sizeof s) != 0 || memcmp(&trig[2 * j + 1], &c, sizeof c) != 0;
        }
    }
    printf("%ld %ld\n", scalar, lanes);
    return 0;
}
"""


def test_a_fast_math_build_takes_libms_sin_and_cos(tmp_path):
    """-ffast-math folds the reduction's compensation terms away (a review
    measured 8e6 ulp near the zeros of sin and cos), so a build with it
    (__FAST_MATH__) takes libm's sin and cos, one at a time and in lanes:
    there every pair is libm's to the bit, while the IEEE build's own
    arithmetic differs from glibc's in the last bit of some (measured:
    6,122 of the 200,000)."""
    counts = {}
    for name, flags in (("ieee", []), ("fast", ["-ffast-math"])):
        (tmp_path / name).mkdir()
        exe = runtime_harness(tmp_path / name, SINCOS_LIBM_HARNESS, "libm", flags)
        counts[name] = [int(v) for v in subprocess.run([str(exe)], capture_output=True, text=True,
                                                       check=True).stdout.split()]
    assert counts["ieee"][0] > 100 and counts["ieee"][1] > 100, counts
    assert counts["fast"] == [0, 0], counts


#: an augmented formulation's core stepped natively with steps of argv[2]
#: seconds; the input at step 2 is argv[1]
OVERFLOW_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
int main(int argc, char **argv)
{
    static FmigenCore c;
    fmigen_core_init(&c, FMIGEN_EULER);
    const double h = atof(argv[2]);
    c.h = h;
    if (fmigen_core_assemble(&c)) { printf("assemble: %s\n", fmigen_core_message(&c)); return 1; }
    for (int s = 0; s < 5; s++) {
        c.u[0] = s == 2 ? atof(argv[1]) : 0.0;
        const double t = c.t, q0 = c.q[0];
        if (fmigen_core_step(&c, h)) {
            /* refused, and the state is the last good one; the step
             * recorded the error, and only reading it formats the text */
            const int unformatted = c.message[0] == 0;
            printf("refused %d %d %d %d %s\n", s, c.t == t, c.q[0] == q0, unformatted, fmigen_core_message(&c));
            return 0;
        }
    }
    printf("accepted q0=%g v0=%g\n", c.q[0], c.v[0]);
    return 0;
}
"""


def test_an_augmented_step_refuses_a_non_finite_state_under_fast_math(tmp_path):
    """An augmented formulation (Baumgarte, slider_crank_from_slider) rebuilt
    with -ffast-math, which folds isfinite to "true": a force whose
    acceleration overflows fails that step (the derivative's test), and so
    does one whose acceleration is finite but whose velocity after a step of
    1e10 s is not (the commit's test of the integrated state); the state
    stays the last good one, and the step leaves the message unformatted
    (an error code and its numbers; the text is made when it is read, out of
    the step: before, snprintf ran inside it).  Both tests read the exponent bits
    (fmigen_all_finite); with isfinite in them (a review's reproduction) the
    step returned OK with v = -inf, then NaN."""
    from fmigen.generate import formulation
    from fmigen.tools.bench import generate_sources
    from fmigen.build.pipeline import load_mechanism
    mech = load_mechanism("slider_crank_from_slider")
    gen = generate_sources(mech, ["groebner"], augmented=[formulation.make("baumgarte")])["baumgarte"][0]
    (tmp_path / "model.c").write_text(gen.whole_c)
    (tmp_path / "model_config.h").write_text(gen.config_h)
    (tmp_path / "drv.c").write_text(OVERFLOW_DRIVER)
    exe = tmp_path / "drv"
    subprocess.run(["gcc", "-O2", "-ffast-math", "-std=c99", f"-I{tmp_path}", f"-I{RUNTIME}",
                    str(tmp_path / "model.c"), str(RUNTIME / "fmigen_core.c"), str(RUNTIME / "fmigen_augmented.c"),
                    str(tmp_path / "drv.c"), "-o", str(exe), "-lm"], check=True)
    def run(force, h):
        return subprocess.run([str(exe), force, h], capture_output=True, text=True, check=True).stdout
    out = run("1e308", "1e-3")
    assert out.startswith("refused 2 1 1 1 non-finite state derivative at t=0.002"), out
    out = run("1e300", "1e10")
    assert out.startswith("refused 2 1 1 1 non-finite coordinate or velocity at t=3e+10"), out
    # an ordinary force is integrated, and with steps of 1e10 s not refused
    # at step 2 (the refusals are the overflows'; such steps blow up later)
    assert run("10", "1e-3").startswith("accepted"), run("10", "1e-3")
    assert not run("10", "1e10").startswith("refused 2"), run("10", "1e10")


SIN_COS_ALONE_HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
int main(void) {
    long bad = 0;
    srand(3);
    for (long k = 0; k < 1000000; k++) {
        const double u = (double)rand() / RAND_MAX - 0.5;
        const double x = k % 4 == 0 ? u * 7.0 : k % 4 == 1 ? u * 1.7e6
                         : k % 4 == 2 ? (rand() % 2000 - 1000) * 1.5707963267948966 + u * 1e-9 : u * 1e-3;
        double s, c;
        fmigen_sincos(x, &s, &c);
        const double s1 = fmigen_sin(x), c1 = fmigen_cos(x);
        bad += memcmp(&s, &s1, sizeof s) != 0 || memcmp(&c, &c1, sizeof c) != 0;
    }
    printf("%ld\n", bad);
    return 0;
}
"""


@pytest.mark.parametrize("flags", [[], ["-mavx", "-mno-fma"]], ids=["sse2", "avx"])
def test_sin_and_cos_alone_are_fmigen_sincos_bits(tmp_path, flags):
    """fmigen_sin and fmigen_cos (the generated code's sin(e) and cos(e))
    compute only the kernel their quadrant needs, and give fmigen_sincos's
    bits: a million angles, in range, beyond it (libm) and near multiples
    of π/2 (the reduction's later rounds)."""
    import platform
    if "-mavx" in flags and (platform.machine() != "x86_64" or "avx" not in Path("/proc/cpuinfo").read_text()):
        pytest.skip("no AVX here")
    exe = runtime_harness(tmp_path, SIN_COS_ALONE_HARNESS, "sincos_alone", flags)
    assert subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split() == ["0"]


#: reads "asin|acos|atan x" in hex, prints the runtime's result in hex
INVERSE_TRIG_HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "fmigen_runtime.h"
int main(void) {
    char what[8];
    double x;
    while (scanf("%7s %la", what, &x) == 2)
        printf("%a\n", !strcmp(what, "asin") ? fmigen_asin(x) : !strcmp(what, "acos") ? fmigen_acos(x)
                       : fmigen_atan(x));
    return 0;
}
"""


def test_asin_acos_atan_within_two_ulps_and_the_python_ports_bits(tmp_path):
    """fmigen_asin, fmigen_acos and fmigen_atan (the generated code's asin,
    acos and atan: libm's differ between C libraries, glibc's and
    msvcrt's asin in the vehicle's wheel pitch) against mpmath at 200
    bits: within two ulps over 60,000 points, near ±1 and 0 included; the
    exact values at ±0, ±1 (asin ±π/2, acos 0 and π rounded); NaN beyond
    ±1; and the Python runtime's ports give the C's bits."""
    import math

    import mpmath

    from fmigen.generate.elementary import fmigen_acos, fmigen_asin, fmigen_atan
    exe = runtime_harness(tmp_path, INVERSE_TRIG_HARNESS, "inverse_trig")
    rng = np.random.default_rng(7)
    xs = [float(rng.uniform(-1, 1)) for _ in range(10000)] + \
         [float(math.copysign(1.0 - 10.0 ** -rng.uniform(1, 16), rng.uniform(-1, 1))) for _ in range(5000)] + \
         [float(rng.uniform(-1, 1) * 10.0 ** -rng.integers(0, 300)) for _ in range(5000)]
    atans = [float(rng.uniform(-1, 1) * 10.0 ** rng.integers(-300, 300)) for _ in range(20000)]
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 5e-324, 1.0000000000000002, -1.5, math.nan]
    cases = [(f, x) for f in ("asin", "acos") for x in xs + specials] + \
            [("atan", x) for x in atans + specials + [math.inf, -math.inf, 1e308]]
    out = subprocess.run([str(exe)], input="".join(f"{f} {x.hex()}\n" for f, x in cases), capture_output=True,
                         text=True, check=True).stdout.split()
    assert len(out) == len(cases)
    port = {"asin": fmigen_asin, "acos": fmigen_acos, "atan": fmigen_atan}
    exact = {"asin": mpmath.asin, "acos": mpmath.acos, "atan": mpmath.atan}
    worst, mismatches = {}, 0
    with mpmath.workprec(200):
        for (f, x), line in zip(cases, out):
            got, py = float.fromhex(line), port[f](x)
            mismatches += not (got == py and math.copysign(1, got) == math.copysign(1, py)
                               or math.isnan(got) and math.isnan(py))
            if math.isnan(x) or abs(x) > 1 and f != "atan":
                assert math.isnan(got), (f, x, got)
                continue
            e = exact[f](mpmath.mpf(x))
            ulp = math.ulp(float(e)) if e != 0 else 5e-324
            worst[f] = max(worst.get(f, 0.0), float(abs(mpmath.mpf(got) - e)) / ulp)
    assert mismatches == 0
    assert all(w <= 2.0 for w in worst.values()), worst
    assert (fmigen_asin(0.0), fmigen_asin(1.0), fmigen_asin(-1.0)) == (0.0, math.pi / 2, -math.pi / 2)
    assert math.copysign(1, fmigen_asin(-0.0)) == -1 and fmigen_acos(1.0) == 0.0 and fmigen_acos(-1.0) == math.pi


#: reads "tan|exp|log x" in hex, prints the runtime's result in hex
TAN_EXP_LOG_HARNESS = r"""
#include <stdio.h>
#include <string.h>
#include "fmigen_runtime.h"
int main(void) {
    char what[8];
    double x;
    while (scanf("%7s %la", what, &x) == 2)
        printf("%a\n", !strcmp(what, "tan") ? fmigen_tan(x) : !strcmp(what, "exp") ? fmigen_exp(x) : fmigen_log(x));
    return 0;
}
"""


def test_tan_exp_log_within_their_bounds_and_the_python_ports_bits(tmp_path):
    """fmigen_tan, fmigen_exp and fmigen_log (the generated code's tan, exp
    and log: libm's differ between C libraries; a four-bar with them
    differed under wine in 110 of 32,000 values, tests/test_portability.py)
    against mpmath at 200 bits over 105,000 points: exp within 1 ulp over
    its whole range (subnormal results and the edge of overflow included),
    log within 1 ulp from the least subnormal to the largest double and
    near 1, tan within 2.5 ulps to 8e5 rad, near its poles and zeros
    included (a quotient of fmigen_sincos's sine and cosine, each within
    0.83 ulp measured, then rounded: 2.04 measured at 520,000 points,
    docs/portability.md); the special values C99's Annex F gives; and the
    Python runtime's ports give the C's bits, every one."""
    import math

    import mpmath

    from fmigen.generate.elementary import fmigen_exp, fmigen_log, fmigen_tan
    exe = runtime_harness(tmp_path, TAN_EXP_LOG_HARNESS, "tan_exp_log")
    rng = np.random.default_rng(11)
    u = rng.uniform
    exps = [float(u(-745.2, 709.8)) for _ in range(10000)] + [float(u(-1, 1) * 10.0 ** -rng.integers(0, 20))
                                                              for _ in range(10000)] + \
        [float(u(-3, 3)) for _ in range(5000)] + [float(u(-745.2, -708)) for _ in range(5000)] + \
        [float(u(700, 709.78)) for _ in range(5000)]
    logs = [float(10.0 ** u(-323, 308)) for _ in range(10000)] + \
        [float(1 + u(-1, 1) * 10.0 ** -rng.integers(1, 16)) for _ in range(10000)] + \
        [float(u(0.5, 2)) for _ in range(5000)] + [float(u(0, 1) * 2.0 ** -1022) for _ in range(5000)]
    tans = [float(u(-10, 10)) for _ in range(10000)] + [float(u(-1, 1) * 10.0 ** -rng.integers(0, 300))
                                                        for _ in range(10000)] + \
        [float(rng.integers(-1000, 1000) * math.pi / 2 + u(-1, 1) * 1e-6) for _ in range(10000)] + \
        [float(u(-8e5, 8e5)) for _ in range(5000)]
    cases = [("exp", x) for x in exps] + [("log", x) for x in logs] + [("tan", x) for x in tans]
    specials = [("exp", x, e) for x, e in ((0.0, 1.0), (-0.0, 1.0), (math.inf, math.inf), (-math.inf, 0.0),
                                           (710.0, math.inf), (-746.0, 0.0))] + \
        [("log", x, e) for x, e in ((1.0, 0.0), (0.0, -math.inf), (-0.0, -math.inf), (math.inf, math.inf),
                                    (-1.0, math.nan), (-math.inf, math.nan), (5e-324, math.log(5e-324)),
                                    (1.7976931348623157e308, math.log(1.7976931348623157e308)))] + \
        [("tan", x, e) for x, e in ((0.0, 0.0), (-0.0, -0.0), (math.inf, math.nan))] + \
        [(f, math.nan, math.nan) for f in ("exp", "log", "tan")]
    lines = "".join(f"{f} {x.hex()}\n" for f, x in cases) + "".join(f"{f} {x.hex()}\n" for f, x, _ in specials)
    out = subprocess.run([str(exe)], input=lines, capture_output=True, text=True, check=True).stdout.split()
    assert len(out) == len(cases) + len(specials)
    port = {"exp": fmigen_exp, "log": fmigen_log, "tan": fmigen_tan}
    for (f, x, e), line in zip(specials, out[len(cases):]):
        got, py = float.fromhex(line), port[f](x)
        for v in (got, py):
            assert (math.isnan(v) and math.isnan(e)) or (v == e and math.copysign(1, v) == math.copysign(1, e)), \
                (f, x, v, e)
    exact = {"exp": mpmath.exp, "log": mpmath.log, "tan": mpmath.tan}
    worst, mismatches = {}, []
    with mpmath.workprec(200):
        for (f, x), line in zip(cases, out):
            got = float.fromhex(line)
            if port[f](x) != got:
                mismatches.append((f, x))
            e = exact[f](mpmath.mpf(x))
            worst[f] = max(worst.get(f, 0.0), float(abs(mpmath.mpf(got) - e)) / math.ulp(float(e)))
    assert not mismatches, mismatches[:5]
    assert worst["exp"] <= 1.0 and worst["log"] <= 1.0 and worst["tan"] <= 2.5, worst
