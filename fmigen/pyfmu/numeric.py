"""The Python runtime's numerics, the twins of the C runtime's
(runtime/fmigen_numeric.h, fmigen_runtime.h): its constants read from the C
headers, roots of a step's polynomial, sin/cos and atan2 as C computes them,
and the LU and LDLᵀ factorizations.  Every function here is copied verbatim
into a generated Python FMU (pyruntime.RUNTIME_OBJECTS).
"""

from __future__ import annotations

import math
import re
from math import fabs, isfinite
from pathlib import Path


def _c_define(name, path="fmigen_runtime.h"):
    """A constant #defined in the C runtime, so the Python FMU uses exactly
    the C FMU's value (the C default; a -D override is not seen here)."""
    text = (Path(__file__).parent.parent / "runtime" / path).read_text()
    m = re.search(rf"^#define {name} (\S+)\s*$", text, re.M)
    if m is None:
        raise RuntimeError(f"runtime/{path} defines no {name}")
    return int(m.group(1)) if re.fullmatch(r"\d+", m.group(1)) else float(m.group(1))


FMIGEN_NEWTON_MAX_ITER = _c_define("FMIGEN_NEWTON_MAX_ITER")
FMIGEN_MAX_DEGREE = _c_define("FMIGEN_MAX_DEGREE", "fmigen_numeric.h")
#: the run-time checks of every kinematics block (fmigen_runtime.h)
FMIGEN_SWITCH_COND = _c_define("FMIGEN_SWITCH_COND")
FMIGEN_SEQ_TOL = _c_define("FMIGEN_SEQ_TOL")
FMIGEN_POLISH_TOL = _c_define("FMIGEN_POLISH_TOL")
FMIGEN_BRANCH_TOL = _c_define("FMIGEN_BRANCH_TOL")
#: a limit position of the partition ahead (fmigen_runtime.h, fmigen_core_limit)
FMIGEN_LIMIT_GAIN = _c_define("FMIGEN_LIMIT_GAIN")
#: FmigenCore.message is char[512]: C truncates a longer message to 511 bytes
FMIGEN_MESSAGE_SIZE = 512
EULER, RK4, SYMPLECTIC = 0, 1, 2


def linear(a1, a0):
    """fmigen_linear: (status, x) of a1 x + a0 = 0."""
    if not (fabs(a1) > 1e-13 * fabs(a0)) or a1 == 0.0:
        return 1, 0.0
    return 0, -a0 / a1


def quadratic_near(a2, a1, a0, pred):
    """fmigen_quadratic_near: (status, root of a2 x² + a1 x + a0 nearest
    pred: the one on pred's side of −a1/(2 a2)), without cancellation.
    Status 1 or 2: no root (x is then pred, unused)."""
    scale = fabs(a2) + fabs(a1) + fabs(a0)
    if not (fabs(a2) > 1e-13 * scale):
        return 1, pred
    disc = a1 * a1 - 4.0 * a2 * a0
    if disc < 0.0:
        if disc < -1e-12 * (a1 * a1 + fabs(4.0 * a2 * a0)):
            return 2, pred
        disc = 0.0
    return quadratic_root(a2, a1, a0, math.sqrt(disc), pred, 0)


def quadratic_root(a2, a1, a0, r, pred, other):
    """fmigen_quadratic_root: (status, root of a2 x² + a1 x + a0 given r =
    √disc: the one on pred's side of −a1/(2 a2), or with ``other`` the far
    one), the same operations in the same order."""
    scale = fabs(a2) + fabs(a1) + fabs(a0)
    if not (fabs(a2) > 1e-13 * scale) or not (r >= 0.0):
        return 1, pred
    if (2.0 * a2 * pred + a1 >= 0.0) == (other != 0):
        r = -r
    if -a1 * r > 0.0 or a1 == 0.0:
        x = (-a1 + r) / (2.0 * a2)
    else:
        den = -a1 - r
        if den == 0.0:
            return 1, pred
        x = 2.0 * a0 / den
    return (0 if x == x else 1), x


def rotate(s, c, d, a):
    """fmigen_rotate: (sin, cos) of θ + d = a from (s, c) of θ, the same
    operations in the same order."""
    if fabs(d) <= 0.03125:
        z = d * d
        sd = d * (1.0 + z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040))))
        cd = 1.0 + z * (-0.5 + z * (1.0 / 24 + z * (-1.0 / 720 + z * (1.0 / 40320))))
        return s * cd + c * sd, c * cd - s * sd
    return fmigen_sincos(a)


def fmigen_sincos(x):
    """runtime/fmigen_numeric.h's fmigen_sincos (the sin/cos of the
    independent angles every kinematics solve starts from), the same
    operations in the same order: fdlibm's reduction by n·π/2 in up to three
    rounds, its kernels, the quadrant (the C's IEEE build; one with
    -ffast-math takes libm's).  The constants are the C's hex literals
    written as the shortest decimals that read back to the same doubles
    (float.fromhex at every call: 2.97 µs a call, measured, against 1.11)."""
    t = fabs(x)
    if not t <= 8.0e5:   # libm's, and NaN for an infinity (as C's, where math raises)
        return (math.sin(x), math.cos(x)) if isfinite(x) else (math.nan, math.nan)
    n = int(t * 0.6366197723675814 + 0.5)
    fn = float(n)
    p1, p1t = 1.5707963267341256, 6.077100506506192e-11
    r, w = t - fn * p1, fn * p1t
    # t's power of two (0 for 0 and subnormals, as the C's exponent bits)
    p2 = math.ldexp(1.0, math.frexp(t)[1] - 1) if t >= 2.2250738585072014e-308 else 0.0
    if fabs(r - w) < p2 * 2.0 ** -16:
        hi, lo = 6.077100506303966e-11, 2.0222662487959506e-21
        r0 = r
        r = r0 - fn * hi
        w = fn * lo - ((r0 - r) - fn * hi)
        if fabs(r - w) < p2 * 2.0 ** -49:
            hi, lo = 2.0222662487111665e-21, 8.4784276603689e-32
            r0 = r
            r = r0 - fn * hi
            w = fn * lo - ((r0 - r) - fn * hi)
    y0 = r - w
    y1 = (r - y0) - w
    z = y0 * y0
    rc = z * (0.0416666666666666 + z * (-0.001388888888887411 + z * (
        2.480158728947673e-05 + z * (-2.7557314351390663e-07 + z * (
            2.087572321298175e-09 + z * -1.1359647557788195e-11)))))
    ay = fabs(y0)
    ks = y0 - ((z * (0.5 * y1 - (z * y0) * (0.00833333333332249 + z * (
        -0.0001984126982985795 + z * (2.7557313707070068e-06 + z * (
            -2.5050760253406863e-08 + z * 1.58969099521155e-10))))) - y1) -
               (z * y0) * -0.16666666666666632)
    if ay < 0.3:
        kc = 1.0 - (0.5 * z - (z * rc - y0 * y1))
    else:
        if ay > 0.78125:
            qx = 0.28125
        else:   # ay/4 to its 21 leading bits (the C clears the low 32)
            m, e = math.frexp(ay * 0.25)
            qx = math.ldexp(math.floor(math.ldexp(m, 21)), e - 21)
        kc = (1.0 - qx) - ((0.5 * z - qx) - (z * rc - y0 * y1))
    sn, cs = ((ks, kc), (kc, -ks), (-ks, -kc), (-kc, ks))[n & 3]
    return (-sn if math.copysign(1.0, x) < 0 else sn), cs


def fmigen_sin(x):
    """fmigen_sin: the generated code's sin(e) (printer._Printer), fmigen_sincos's sine."""
    return fmigen_sincos(x)[0]


def fmigen_cos(x):
    """fmigen_cos: the generated code's cos(e), fmigen_sincos's cosine."""
    return fmigen_sincos(x)[1]


def fmigen_atan2(y, x):
    """runtime/fmigen_numeric.h's fmigen_atan2 (the angles of a Newton start and
    of the FMU's outputs), the same operations in the same order: atan r =
    atan(i/64) + atan t, the tables in two parts."""
    hi = (
        0.0, 0.015623728620476831, 0.031239833430268277, 0.046840712915969654, 0.06241880999595735,
        0.0779666338315423, 0.09347678115858947, 0.10894195698986579, 0.12435499454676144,
        0.13970887428916365, 0.15499674192394097, 0.1702119252854744, 0.18534794999569476,
        0.2003985538258785, 0.21535769969773805, 0.23021958727684372, 0.24497866312686414,
        0.2596296294082575, 0.2741674511196588, 0.2885873618940774, 0.3028848683749714, 0.31705575320914703,
        0.3310960767041321, 0.34500217720710513, 0.35877067027057225, 0.3723984466767542,
        0.38588266939807375, 0.39922076957525254, 0.4124104415973873, 0.42544963737004227,
        0.43833655985795783, 0.4510696559885235, 0.4636476090008061, 0.4760693303227612, 0.48833395105640554,
        0.5004408131472942, 0.5123894603107377, 0.5241796287829132, 0.5358112379604637, 0.5472843809874369,
        0.5585993153435624, 0.5697564534829784, 0.5807563535676704, 0.5915997103351114, 0.6022873461349642,
        0.6128202021652414, 0.6231993299340659, 0.6334258829691446, 0.6435011087932844, 0.6534263411807619,
        0.6632029927060933, 0.6728325475937632, 0.6823165548747481, 0.6916566218531999, 0.7008544078844502,
        0.7099116184635249, 0.7188299996216245, 0.7276113326265107, 0.7362574289814281, 0.7447701257160751,
        0.7531512809621944, 0.7614027698055784, 0.7695264804056583, 0.7775243103733478, 0.7853981633974483,)
    lo = (
        0.0, -4.913600136566304e-19, -1.188442711587748e-18, -1.655677442254952e-19, -1.5490756308295046e-18,
        5.804551873143357e-18, -6.2844725995420954e-18, 6.8267122072409585e-18, -3.1253241424539383e-18,
        -2.9579864247315813e-18, 9.585415594114324e-18, -3.541164079802125e-18, 4.180692268843079e-18,
        3.1399542871844493e-18, 4.738160130078733e-19, 1.2313404529142703e-17, 1.0698755618734451e-17,
        1.9238754924615304e-17, 8.261353575163773e-18, -1.428369957377257e-17, -1.1010827903001369e-17,
        -1.893928924292642e-17, -7.952610375793799e-18, -2.2938804755578304e-17, -2.4623815582638635e-17,
        1.9612311504845653e-17, 2.378822732491941e-17, 2.246598105617042e-17, -1.587652227770689e-17,
        2.3315530741892885e-17, -2.494277030626541e-17, -2.2703795229420475e-17, 2.2698777452961687e-17,
        1.4654487332256713e-17, -1.1373236189329585e-17, -4.7181675085518756e-17, -2.5462781472855804e-17,
        5.520094119641666e-18, -4.0637956834825575e-18, 4.923709671396255e-17, -5.4556305485916264e-18,
        1.2255062085054184e-17, -1.441464378193067e-17, 4.920495453686772e-17, 2.950430737228402e-17,
        -3.1552061848586226e-17, 2.672403885140095e-17, -2.7290767436015276e-17, 1.5834785051444286e-17,
        3.5800634857340095e-17, -3.076054864429649e-17, -1.899315009714705e-17, 6.943223671560008e-18,
        -8.117151192285796e-18, -1.987626234335816e-17, -4.597166450584887e-17, -2.1478388444456983e-17,
        2.569325697391839e-18, 3.473937648299457e-17, 3.708315849135547e-17, -2.4256934659182068e-17,
        9.850030332752822e-18, -3.704991905602721e-17, -2.6676490951944502e-17, 3.061616997868383e-17,)
    ax, ay = fabs(x), fabs(y)
    total = ax + ay
    if not (total > 0.0 and total < math.inf):
        return math.atan2(y, x)
    swap = ay > ax
    r = ax / ay if swap else ay / ax
    i = 0 if r < 0.015625 else int(r * 64.0 + 0.5)
    c = 0.015625 * i
    t = (r - c) / (1.0 + r * c)
    z = t * t
    s = z * (-1.0 / 3 + z * (1.0 / 5 + z * (-1.0 / 7 + z * (1.0 / 9))))
    a = hi[i] + (lo[i] + (t + t * s))
    if swap:
        a = (1.5707963267948966 - a) + 6.123233995736766e-17
    if x < 0.0:
        a = (3.141592653589793 - a) + 1.2246467991473532e-16
    return math.copysign(a, y)


def fmigen_asin(x):
    """runtime/fmigen_numeric.h's fmigen_asin, the generated code's asin(e):
    fmigen_atan2(x, sqrt((1 - x)(1 + x))), the same operations."""
    d = (1.0 - x) * (1.0 + x)
    return fmigen_atan2(x, math.sqrt(d) if d >= 0.0 else math.nan)


def fmigen_acos(x):
    """fmigen_acos, the generated code's acos(e): fmigen_atan2(sqrt((1 - x)(1 + x)), x)."""
    d = (1.0 - x) * (1.0 + x)
    return fmigen_atan2(math.sqrt(d) if d >= 0.0 else math.nan, x)


def fmigen_atan(x):
    """fmigen_atan, the generated code's atan(e): fmigen_atan2(x, 1)."""
    return fmigen_atan2(x, 1.0)


def fmigen_unwrap(a, ref):
    """runtime/fmigen_runtime.h's fmigen_unwrap: the angle a from atan2 moved
    by whole turns k to the representative nearest ref (the last accepted
    value, or the start), so a dependent angle that turns is continuous;
    a + 2π·k as C computes it (k by a truncating conversion of x ± 0.5)."""
    d = ref - a
    if not (fabs(d) > 3.141592653589793 and fabs(d) < 4503599627370496.0):
        return a
    x = d * (1.0 / 6.283185307179586)
    k = float(int(x + math.copysign(0.5, x)))
    return a if k == 0.0 else a + 6.283185307179586 * k


def fmigen_powi(x, n):
    """runtime/fmigen_runtime.h's fmigen_powi: x**n by repeated squaring,
    the same multiplications in the same order."""
    r = 1.0
    while True:
        if n & 1:
            r *= x
        n >>= 1
        if not n:
            return r
        x *= x


def fmax(a, b):
    """C99 fmax: a NaN argument is ignored."""
    if a != a:
        return b
    if b != b:
        return a
    return a if a >= b else b


def fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    return a if a <= b else b


def lu_factor(n, A, piv):
    """fmigen_lu_factor: in-place LU with partial pivoting, row-major n×n."""
    scale = 0.0
    for k in range(n * n):
        if fabs(A[k]) > scale:
            scale = fabs(A[k])
    if not (scale > 0.0) or not isfinite(scale):
        return 1
    for k in range(n):
        p = k
        for i in range(k + 1, n):
            if fabs(A[i * n + k]) > fabs(A[p * n + k]):
                p = i
        if not (fabs(A[p * n + k]) > 1e-13 * scale):
            return 1
        piv[k] = p
        if p != k:
            for j in range(n):
                A[k * n + j], A[p * n + j] = A[p * n + j], A[k * n + j]
        for i in range(k + 1, n):
            A[i * n + k] /= A[k * n + k]
            l_ = A[i * n + k]
            for j in range(k + 1, n):
                A[i * n + j] -= l_ * A[k * n + j]
    return 0


def ldlt_factor(n, A):
    """The C runtime's unrolled LDLᵀ (codegen_embedding._ldlt_factor) of the
    symmetric n×n A (row-major, lower triangle read): (L, d), or None where
    a pivot d_k is not above 1e-13·|A_kk| (not positive definite: a
    negative mass, say)."""
    L = [0.0] * (n * n)
    d = [0.0] * n
    for k in range(n):
        for i in range(k):
            s = A[k * n + i]
            for j in range(i):
                s -= L[k * n + j] * L[i * n + j] * d[j]
            L[k * n + i] = s / d[i]
        dk = A[k * n + k]
        for j in range(k):
            dk -= L[k * n + j] * L[k * n + j] * d[j]
        if not (dk > 1e-13 * fabs(A[k * n + k])):
            return None
        d[k] = dk
    return L, d


def ldlt_solve(n, L, d, b):
    """L D Lᵀ x = b for ``ldlt_factor``'s factors (b in place)."""
    for k in range(n):
        for j in range(k):
            b[k] -= L[k * n + j] * b[j]
    for k in range(n):
        b[k] /= d[k]
    for k in range(n - 1, -1, -1):
        for j in range(k + 1, n):
            b[k] -= L[j * n + k] * b[j]


def lu_solve(n, LU, piv, b):
    """fmigen_lu_solve: all row swaps first, then substitution (b in place)."""
    for k in range(n):
        if piv[k] != k:
            b[k], b[piv[k]] = b[piv[k]], b[k]
    for k in range(n):
        for i in range(k + 1, n):
            b[i] -= LU[i * n + k] * b[k]
    for k in range(n - 1, -1, -1):
        for j in range(k + 1, n):
            b[k] -= LU[k * n + j] * b[j]
        b[k] /= LU[k * n + k]


def poly_eval(degree, a, z):
    """p(z), p'(z) and Σ|a_k||z|^(degree−k), p's rounding-error scale (fmigen_numeric.h)."""
    pv, d, m, az = a[0], 0.0, fabs(a[0]), fabs(z)
    for k in range(1, degree + 1):
        d = d * z + pv
        pv = pv * z + a[k]
        m = m * az + fabs(a[k])
    return pv, d, m


def all_roots(degree, a):
    """Aberth–Ehrlich iteration as in fmigen_numeric.h; (status, re, im)."""
    if degree > FMIGEN_MAX_DEGREE or a[0] == 0.0:
        return 1, None, None
    R = 0.0
    for k in range(1, degree + 1):
        r = fabs(a[k] / a[0])
        if r > R:
            R = r
    R = 1.0 + R
    re, im = [0.0] * degree, [0.0] * degree
    for k in range(degree):
        ang = 6.283185307179586 * k / degree + 0.4
        s, c = fmigen_sincos(ang)   # as the C: not libm's, the same start everywhere
        re[k] = 0.5 * R * c
        im[k] = 0.5 * R * s
    for _it in range(500):
        worst = 0.0
        for k in range(degree):
            pr, pi, dr, di, zr, zi = a[0], 0.0, 0.0, 0.0, re[k], im[k]
            for j in range(1, degree + 1):
                ndr = dr * zr - di * zi + pr
                ndi = dr * zi + di * zr + pi
                dr, di = ndr, ndi
                npr = pr * zr - pi * zi + a[j]
                npi = pr * zi + pi * zr
                pr, pi = npr, npi
            den = dr * dr + di * di
            if den == 0.0:
                re[k] += 1e-8 * R
                continue
            nr = (pr * dr + pi * di) / den
            ni = (pi * dr - pr * di) / den
            sr, si = 0.0, 0.0
            for j in range(degree):
                if j != k:
                    ar, ai = zr - re[j], zi - im[j]
                    d2 = ar * ar + ai * ai
                    if d2 > 0.0:
                        sr += ar / d2
                        si -= ai / d2
            br = 1.0 - (nr * sr - ni * si)
            bi = -(nr * si + ni * sr)
            b2 = br * br + bi * bi
            if b2 == 0.0:
                continue
            wr = (nr * br + ni * bi) / b2
            wi = (ni * br - nr * bi) / b2
            re[k] -= wr
            im[k] -= wi
            step = math.sqrt(wr * wr + wi * wi) / (1.0 + math.sqrt(re[k] * re[k] + im[k] * im[k]))
            if step > worst:
                worst = step
        if worst < 1e-15:
            return 0, re, im
    return 0, re, im


def poly_root(degree, coeffs, x0):
    """fmigen_poly_root: (status, root) continuing the branch of x0."""
    z = x0
    for _it in range(8):
        p, dp, mag = poly_eval(degree, coeffs, z)
        if dp == 0.0 or not isfinite(dp):
            break
        dz = p / dp
        zp = z
        z -= dz
        converged = fabs(dz) <= 1e-15 * (1.0 + fabs(z))
        # or p(z) within its own rounding error (2.22e-16 = DBL_EPSILON), as fmigen_poly_root
        if not converged and fabs(p) <= 4.0 * degree * 2.220446049250313e-16 * mag:
            z, converged = zp, True
        if converged:
            if fabs(z - x0) <= 0.05 * (1.0 + fabs(x0)):
                return 0, z
            break
    st, re, im = all_roots(degree, coeffs)
    if st:
        return 3, x0
    best = -1
    for k in range(degree):
        if fabs(im[k]) > 1e-7 * (1.0 + fabs(re[k])):
            continue
        if best < 0 or fabs(re[k] - x0) < fabs(re[best] - x0):
            best = k
    if best < 0:
        return 3, x0
    z = re[best]
    for _it in range(5):
        p, dp, _mag = poly_eval(degree, coeffs, z)
        if dp == 0.0:
            break
        z -= p / dp
    if not isfinite(z):
        return 3, x0
    return 0, z
