"""The C runtime's elementary functions in Python: fmigen_sincos,
fmigen_sin, fmigen_cos, fmigen_tan, fmigen_atan2, fmigen_asin, fmigen_acos,
fmigen_atan, fmigen_exp, fmigen_log and fmigen_powi, the same operations in
the same order as runtime/fmigen_numeric.h and fmigen_kernels.h, so the
same bits.  They are the names the printer writes for sin, cos, tan, ...
(printer._Printer), in model.c and in the Python expressions it prints
(``pyexpr``): the Python runtime copies them into a generated Python FMU
(pyfmu.pyruntime.RUNTIME_OBJECTS), and the build's mass check evaluates
its expressions with them (mass_checks.mass_check_defaults).
"""

from __future__ import annotations

import math
from math import fabs, isfinite


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


def fmigen_tan(x):
    """fmigen_tan, the generated code's tan(e): fmigen_sincos's sine over its cosine."""
    s, c = fmigen_sincos(x)
    return s / c


def fmigen_exp(x):
    """runtime/fmigen_numeric.h's fmigen_exp (fdlibm's e_exp.c), the
    generated code's exp(e): the same operations in the same order, 2^k as
    ``2.0 ** k`` (exact) where the C writes its exponent bits."""
    if x != x:
        return x
    if x > 709.782712893384:
        return math.inf
    if x < -745.1332191019411:
        return 0.0
    k, hi, lo = 0, x, 0.0
    if fabs(x) > 0.34657359027997264:
        k = int(1.4426950408889634 * x + (-0.5 if x < 0.0 else 0.5))
        hi = x - float(k) * 0.6931471803691238
        lo = float(k) * 1.9082149292705877e-10
    r = hi - lo
    t = r * r
    c = r - t * (0.16666666666666602 + t * (-0.0027777777777015593 + t * (6.613756321437934e-05 + t * (
        -1.6533902205465252e-06 + t * 4.1381367970572385e-08))))
    if k == 0:
        return 1.0 - ((r * c) / (c - 2.0) - r)
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    if k > 1023:
        return (y * 2.0) * 2.0 ** 1023
    if k < -1021:
        return (y * 2.0 ** (k + 1000)) * 2.0 ** -1000
    return y * 2.0 ** k


def fmigen_log(x):
    """runtime/fmigen_numeric.h's fmigen_log (fdlibm's e_log.c), the
    generated code's log(e): the same operations in the same order; the
    exponent and the mantissa's 20 leading bits, which the C reads from the
    high word, from math.frexp (exact, subnormals included)."""
    if x != x or x == math.inf:
        return x
    if x == 0.0:
        return -math.inf
    if x < 0.0:
        return math.nan
    m, e = math.frexp(x)             # x = m 2^e, m in [1/2, 1)
    mant = int((2.0 * m - 1.0) * 4503599627370496.0)   # the 52 mantissa bits
    hx = mant >> 32
    i = (hx + 0x95f64) & 0x100000    # 1.f >= √2: halve it
    k = e - 1 + (i >> 20)
    x = (1.0 + mant / 4503599627370496.0) * (0.5 if i else 1.0)
    f = x - 1.0
    dk = float(k)
    ln2_hi, ln2_lo = 0.6931471803691238, 1.9082149292705877e-10
    if ((2 + hx) & 0x000fffff) < 3:
        if f == 0.0:
            return 0.0 if k == 0 else dk * ln2_hi + dk * ln2_lo
        R = f * f * (0.5 - 0.33333333333333333 * f)
        return f - R if k == 0 else dk * ln2_hi - ((R - dk * ln2_lo) - f)
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (0.3999999999940942 + w * (0.22222198432149784 + w * 0.15313837699209373))
    t2 = z * (0.6666666666666735 + w * (0.2857142874366239 + w * (0.1818357216161805 + w * 0.14798198605116586)))
    R = t2 + t1
    if 0x6147a <= hx <= 0x6b851:
        hfsq = 0.5 * f * f
        if k == 0:
            return f - (hfsq - s * (hfsq + R))
        return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f)
    return f - s * (f - R) if k == 0 else dk * ln2_hi - ((s * (f - R) - dk * ln2_lo) - f)


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
