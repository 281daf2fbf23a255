"""Python runtime: the same reduced model as a pure-Python FMU (pythonfmu).

``fmigen build MECH -o OUT.fmu --runtime python`` packages the model that
``codegen`` turns into C as one generated Python module instead, wrapped by
pythonfmu's prebuilt FMI 2.0 Co-Simulation binary.  It serves users without a
C compiler and is a comparison row for the C FMU.

The generated module mirrors the C operation for operation, so the two agree
to round-off:

- every model expression is printed by a subclass of codegen's C printer
  (integer powers as multiplications, rationals as double divisions, the same
  sympy CSE), and the C function names resolve to Python's ``math`` (the same
  libm on the same machine);
- the kinematics comes from model.c's own walker (``codegen.kinematics_walk``,
  spelled in Python by ``PyKinematics``), so it is the C statement for statement:
  per block the prediction from the last accepted solution (``Core.base``,
  FmigenBase: continuity, t, sol, q, v; updated after a successful assemble
  only, as ``fmigen_base_accept``), the primary and alternative sequences
  with the root nearest the prediction (``quadratic_near``, ``poly_root``),
  Newton from the prediction last, each result verified by the block's own
  polynomials with the same optional polish and continuity check, the same
  constants (read from ``runtime/fmigen_runtime.h``) and the same failure
  messages (block and independent coordinates);
- Euler / symplectic Euler / RK4 and the internal-step rule (full steps of h, one shorter last
  step, a remainder below 1e-9·h absorbed) are ports of
  ``runtime/fmigen_core.c``; the embedded ODE is the block LU with partial
  pivoting over the model's structure (``codegen_embedding.structure_tables``:
  block-triangular Φ_d, M's structural non-zeros) that the C runtime used before its embedding became
  generated straight-line code (``codegen_embedding.py``: adjugates, LDLᵀ) —
  the same equations, so the two FMUs agree to round-off, not bit for bit.

The runtime below (``linear`` ... ``Core``, and ``SlaveMethods``, the FMI
instance layer of ``fmigen_instance.c`` for Co-Simulation) is real Python,
copied verbatim into every generated module with ``inspect.getsource``; the
module needs only the standard library (no numpy) plus pythonfmu's own Python
files, which pythonfmu bundles into the FMU's resources.

Status codes: pythonfmu 0.7.0 returns fmi2Discard when ``do_step`` returns
False (a singular configuration, as the C FMU) but turns every Python
exception into fmi2Fatal (its ``handle_py_exception`` throws
``cppfmu::FatalError``); there is no path to fmi2Error from Python.  Bad calls
(NaN/Inf inputs, a step <= 0, a wrong communication point, setting a
calculated variable or a parameter after initialization, a call in the wrong
state) therefore raise, and the importer sees fmi2Fatal with the message in
its log.  After that status pythonfmu has freed the instance's Python objects:
the process must not use the FMU again (the standard's meaning of Fatal).

Variables, value references, units, start values and ModelStructure are those
of the C FMU (``variables.table`` / ``fmu.model_description``), so importers see
the same interface; the modelDescription differs in ``needsExecutionTool``
(a Python interpreter is needed), in having no ``<SourceFiles>``, and in its
GUID.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import tempfile
import time
import uuid
from math import fabs, isfinite
from pathlib import Path

import sympy as sp

from fmigen.generate import codegen
from fmigen.fmi import fmu, variables
from fmigen.generate.codegen import newton_system
from fmigen.generate.mass_checks import checked_value, mass_check_source
from fmigen.generate.printer import PythonRuntimeError, SymbolMap, pyexpr
from fmigen.generate.codegen_embedding import structure_tables
from fmigen.derive.dae import PSD3_MINORS, psd3
from fmigen.derive.workspace import mechanism_unit_scales


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


# --------------------------------------------------------------------------
# Runtime (copied into the generated module).  Ports of fmigen_runtime.h,
# fmigen_numeric.h and fmigen_core.c (the embedding: of its block-LU
# version, see the top).
# --------------------------------------------------------------------------

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
        re[k] = 0.5 * R * math.cos(ang)
        im[k] = 0.5 * R * math.sin(ang)
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


class Core:
    """FmigenCore and its functions (fmigen_core.c).  ``m`` is the model:
    sizes, index maps, start values, structure and generated functions."""

    def __init__(self, m, solver, h):
        self.m = m
        self.t = 0.0
        self.q = list(m.q_start)
        self.v = list(m.v_start)
        self.p = list(m.p_default)
        self.u = list(m.u_default)
        self.y = [0.0] * m.NY
        # FmigenBase: the last accepted kinematics solution, from which every
        # solve predicts and against which it checks continuity; before the
        # first assembly (continuity 0) the prediction is the build-time start
        self.base = {"continuity": 0, "t": 0.0, "sol": list(m.sol_start), "q": list(m.q_start),
                     "v": [0.0] * m.NQ}
        self.h = h
        self.residual = 0.0
        self.solver = solver
        self.message = ""
        # max|v_i|, max|v_d| of the last two accepted step starts ([0] the older)
        self.lim_vi, self.lim_vd, self.lim_n = [0.0, 0.0], [0.0, 0.0], 0

    # -- state snapshots (FMU state) --
    FIELDS = ("t", "q", "v", "p", "u", "y", "base", "h", "residual", "solver", "message",
              "lim_vi", "lim_vd", "lim_n")

    @staticmethod
    def _copy(x):
        if isinstance(x, dict):
            return {k: Core._copy(v) for k, v in x.items()}
        return list(x) if isinstance(x, list) else x

    def snapshot(self):
        return {k: Core._copy(getattr(self, k)) for k in self.FIELDS}

    def restore(self, s):
        for k in self.FIELDS:
            setattr(self, k, Core._copy(s[k]))

    def kinematics(self, t, q, sol):
        """fmigen_core.c's kinematics(): the generated solve from self.base,
        the new solution vector into sol; on failure the message names the
        configuration and the block (as C, cut to its char[512])."""
        m = self.m
        k = m.kinematics(t, q, self.p, self.base, sol)
        if k:
            at = ", ".join(f"{m.names[i]}={q[i]:.9g}" for i in m.independent)
            msg = f"singular configuration at t={t:.9g} ({at}): {m.failure[k]}"
            self.message = msg.encode()[:FMIGEN_MESSAGE_SIZE - 1].decode(errors="ignore")
        return k

    def base_accept(self, t, q, v, sol):
        """fmigen_base_accept: (t, q, v, sol) is what the next solve continues."""
        b = self.base
        b["continuity"] = 1
        b["t"] = t
        b["sol"] = list(sol)
        b["q"] = list(q)
        b["v"] = list(v)

    # Φ_d = ∂Φ/∂q_d and its factorization: per diagonal block
    # (codegen_embedding.structure_tables), or none without constraints.
    def phid_factor(self, J):
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if m.blocked:
            lus = []
            for b in range(m.nblocks):
                p0, nb = m.blk_ptr[b], m.blk_ptr[b + 1] - m.blk_ptr[b]
                A = [J[m.blk_rows[p0 + r] * NQ + dep[m.blk_cols[p0 + k]]] for r in range(nb) for k in range(nb)]
                piv = [0] * nb
                if lu_factor(nb, A, piv):
                    return None
                lus.append((A, piv))
            return lus
        A = [J[r * NQ + dep[k]] for r in range(ND) for k in range(ND)]
        piv = [0] * ND
        if lu_factor(ND, A, piv):
            return None
        return [(A, piv)]

    def phid_solve_cols(self, J, lus, b, ncol):
        """b (ND×ncol, rows by constraint) := Φ_d⁻¹ b (rows by dependent position)."""
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if not m.blocked:
            A, piv = lus[0]
            cols = [[b[r * ncol + j] for r in range(ND)] for j in range(ncol)]
            for col in cols:
                lu_solve(ND, A, piv, col)
            return [cols[j][r] for r in range(ND) for j in range(ncol)]
        tmp, x = [0.0] * (ND * ncol), [0.0] * (ND * ncol)
        c = 0
        for bl in range(m.nblocks):
            p0, nb = m.blk_ptr[bl], m.blk_ptr[bl + 1] - m.blk_ptr[bl]
            for r in range(nb):
                for j in range(ncol):
                    tmp[(p0 + r) * ncol + j] = b[m.blk_rows[p0 + r] * ncol + j]
            while c < m.ncouple and m.couple[2 * c] < p0 + nb:
                pr, pc = m.couple[2 * c], m.couple[2 * c + 1]
                a = J[m.blk_rows[pr] * NQ + dep[m.blk_cols[pc]]]
                for j in range(ncol):
                    tmp[pr * ncol + j] -= a * x[m.blk_cols[pc] * ncol + j]
                c += 1
            A, piv = lus[bl]
            for j in range(ncol):
                col = [tmp[(p0 + r) * ncol + j] for r in range(nb)]
                lu_solve(nb, A, piv, col)
                for r in range(nb):
                    x[m.blk_cols[p0 + r] * ncol + j] = col[r]
        return x

    def velocities(self, t, q, v):
        """Fill v_d from q and v_i; returns (status, J, lus, X) with
        X = Φ_d⁻¹Φ_i (ND×NI, row-major)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        if NC == 0:
            return 0, None, None, []
        J = [0.0] * (NC * NQ)
        pt = [0.0] * NC
        m.phi_q(t, q, v, self.p, self.u, J)
        m.phi_t(t, q, v, self.p, self.u, pt)
        lus = self.phid_factor(J)
        if lus is None:
            self.message = ("singular configuration at t=%.9g: the constraint Jacobian with respect to the "
                            "dependent coordinates is singular" % t)
            return 1, None, None, None
        ncol = NI + 1
        rhs = [0.0] * (ND * ncol)
        for r in range(ND):
            for k in range(NI):
                rhs[r * ncol + k] = J[r * NQ + m.independent[k]]
            rhs[r * ncol + NI] = pt[r]
        rhs = self.phid_solve_cols(J, lus, rhs, ncol)
        X = [0.0] * (ND * NI)
        for r in range(ND):
            for k in range(NI):
                X[r * NI + k] = rhs[r * ncol + k]
            s = rhs[r * ncol + NI]
            for k in range(NI):
                s += X[r * NI + k] * v[m.independent[k]]
            v[m.dependent[r]] = -s
        return 0, J, lus, X

    def rhs(self, t, x, accept=False):
        """fmigen_core_rhs: dx of x = [q_i, v_i], or None (message set).
        ``accept``: fmigen_core_rhs_accept, the solve becomes the base (the
        first stage of every internal step; no memo here, so always)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        q, v = [0.0] * NQ, [0.0] * NQ
        for k in range(NI):
            q[m.independent[k]] = x[k]
            v[m.independent[k]] = x[NI + k]
        sol = [0.0] * m.NSOL
        if self.kinematics(t, q, sol):
            return None
        st, J, lus, X = self.velocities(t, q, v)
        if st:
            return None
        ac = [0.0] * NQ
        if NC > 0:
            g = [0.0] * NC
            m.gamma(t, q, v, self.p, self.u, g)
            g = self.phid_solve_cols(J, lus, g, 1)
            for r in range(ND):
                ac[m.dependent[r]] = g[r]
        M, F = [0.0] * (NQ * NQ), [0.0] * NQ
        m.mass(t, q, v, self.p, self.u, M)
        m.forcing(t, q, v, self.p, self.u, F)
        B = [0.0] * (NQ * NI)
        for k in range(NI):
            B[m.independent[k] * NI + k] = 1.0
        for r in range(ND):
            for k in range(NI):
                B[m.dependent[r] * NI + k] = -X[r * NI + k]
        MB = [0.0] * (NQ * NI)
        res = list(F)
        for i, j in m.m_nz:   # M's structural non-zeros
            mij = M[i * NQ + j]
            res[i] -= mij * ac[j]
            for k in range(NI):
                MB[i * NI + k] += mij * B[j * NI + k]
        Mh, rh = [0.0] * (NI * NI), [0.0] * NI
        for a in range(NI):
            s = 0.0
            for i in range(NQ):
                s += B[i * NI + a] * res[i]
            rh[a] = s
            for b in range(NI):
                mm = 0.0
                for i in range(NQ):
                    mm += B[i * NI + a] * MB[i * NI + b]
                Mh[a * NI + b] = mm
        # solved as the C runtime solves it, which also refuses a matrix
        # that is not positive definite (an LU solved one with negative
        # masses)
        factor = ldlt_factor(NI, Mh)
        if factor is None:
            self.message = ("singular configuration at t=%.9g: the reduced mass matrix B^T M B is not "
                            "positive definite" % t)
            return None
        ldlt_solve(NI, *factor, rh)
        dx = [0.0] * (2 * NI)
        for k in range(NI):
            dx[k] = x[NI + k]
            dx[NI + k] = rh[k]
        for k in range(2 * NI):
            if not isfinite(dx[k]):
                self.message = "non-finite state derivative at t=%.9g" % t
                return None
        if accept:
            self.base_accept(t, q, v, sol)
        return dx

    def assemble(self):
        """fmigen_core_assemble: complete q, v from q_i, v_i; residual, outputs."""
        m = self.m
        for k in range(m.NI):
            if not isfinite(self.q[m.independent[k]]) or not isfinite(self.v[m.independent[k]]):
                self.message = "non-finite independent coordinate or velocity at t=%.9g" % self.t
                return 1
        sol = [0.0] * m.NSOL
        if self.kinematics(self.t, self.q, sol):
            return 1
        if self.velocities(self.t, self.q, self.v)[0]:
            return 1
        # the accepted solution: the next solve predicts from it
        self.base_accept(self.t, self.q, self.v, sol)
        if m.NC > 0:
            phi = [0.0] * m.NC
            m.phi(self.t, self.q, self.v, self.p, self.u, phi)
            self.residual = 0.0
            for j in range(m.NC):
                if fabs(phi[j]) > self.residual:
                    self.residual = fabs(phi[j])
        if m.NY > 0:
            m.outputs(self.t, self.q, self.v, self.p, self.u, self.y)
        return 0

    def limit(self):
        """fmigen_core_limit: is the accepted state in self.base at most
        about two steps short of a limit position of the partition
        (FMIGEN_LIMIT_GAIN, fmigen_runtime.h)?  Keeps its max|v_i| and
        max|v_d| (unit scales); 1 with the message when, against the state
        two accepted steps earlier, max|v_i| fell by the gain and
        max|v_d|/max|v_i| rose by it."""
        m, v, b = self.m, self.base["v"], self.base
        if m.NI != 1 or m.NQ == m.NI:     # FMIGEN_LIMIT_TEST: one degree of freedom, and a loop
            return 0
        vi, vd = 0.0, 0.0
        for i in m.independent:
            vi = fmax(vi, fabs(v[i]) / m.unit_scale[i])
        for i in m.dependent:
            vd = fmax(vd, fabs(v[i]) / m.unit_scale[i])
        vi0, vd0, full = self.lim_vi[0], self.lim_vd[0], self.lim_n >= 2
        self.lim_vi = [self.lim_vi[1], vi]
        self.lim_vd = [self.lim_vd[1], vd]
        self.lim_n = min(self.lim_n + 1, 2)
        if not (full and FMIGEN_LIMIT_GAIN * vi < vi0 and vd > 0.0 and vd * vi0 >= FMIGEN_LIMIT_GAIN * vd0 * vi):
            return 0
        at = ", ".join(f"{m.names[i]}={b['q'][i]:.9g}" for i in m.independent)
        msg = (f"limit position at t={b['t']:.9g} ({at}): the Jacobian of the constraints with respect to the "
               f"dependent coordinates is turning singular (in two steps max|v_i| fell {vi0 / vi:.3g}-fold while "
               f"max|v_d|/max|v_i| rose {vd * vi0 / (vd0 * vi):.3g}-fold, to {vd / vi:.3g}); the mechanism "
               "passes onto another assembly branch, which these independent coordinates do not parametrize: "
               "declare switch_independent to carry the motion through")
        self.message = msg.encode()[:FMIGEN_MESSAGE_SIZE - 1].decode(errors="ignore")
        return 1

    def one_step(self, x, t, h):
        n = len(x)
        k1 = self.rhs(t, x, accept=True)   # the step's start continues the trajectory
        if k1 is None:
            return 1
        if self.limit():
            return 1
        if self.solver == EULER:
            for i in range(n):
                x[i] += h * k1[i]
            return 0
        if self.solver == SYMPLECTIC:      # velocities first, then positions with them
            half = n // 2
            for i in range(half):
                x[half + i] += h * k1[half + i]
            for i in range(half):
                x[i] += h * x[half + i]
            return 0
        xs = [x[i] + 0.5 * h * k1[i] for i in range(n)]
        k2 = self.rhs(t + 0.5 * h, xs)
        if k2 is None:
            return 1
        xs = [x[i] + 0.5 * h * k2[i] for i in range(n)]
        k3 = self.rhs(t + 0.5 * h, xs)
        if k3 is None:
            return 1
        xs = [x[i] + h * k3[i] for i in range(n)]
        k4 = self.rhs(t + h, xs)
        if k4 is None:
            return 1
        for i in range(n):
            x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
        return 0

    def commit_or_restore(self, t, q_good, v_good, t_good):
        """fmigen_core.c's commit_or_restore: assemble the state at t (its
        independent coordinates already set); on failure put back the last
        good q, v and t, so GetReal never reports a half-solved state."""
        self.t = t
        if not self.assemble():
            return 0
        self.q, self.v, self.t = q_good, v_good, t_good
        return 1

    def step(self, H):
        """fmigen_core_step: full internal steps of h, then one shorter step."""
        m = self.m
        NI = m.NI
        q_good, v_good = list(self.q), list(self.v)
        if m.kinematic:
            # q_i, v_i are inputs held over the step: re-solve at its end
            return self.commit_or_restore(self.t + H, q_good, v_good, self.t)
        x = [self.q[m.independent[k]] for k in range(NI)] + [self.v[m.independent[k]] for k in range(NI)]
        t_end = self.t + H
        t = self.t
        nfull = int(math.floor(H / self.h))
        rem = H - nfull * self.h
        if rem < 1e-9 * self.h and nfull > 0:
            rem = 0.0
        elif self.h - rem < 1e-9 * self.h:
            nfull += 1
            rem = 0.0
        for s in range(nfull):
            h = t_end - t if (s == nfull - 1 and rem == 0.0) else self.h
            if self.one_step(x, t, h):
                return 1
            t = self.t + (s + 1) * self.h
        if rem > 0.0 and self.one_step(x, t, t_end - t):
            return 1
        # x finite: the commit's assembly tests it (the same values)
        for k in range(NI):
            self.q[m.independent[k]] = x[k]
            self.v[m.independent[k]] = x[NI + k]
        return self.commit_or_restore(t_end, q_good, v_good, self.t)


class FmuError(Exception):
    """Raised inside the FMU: pythonfmu turns it into fmi2Error with the message."""


class SlaveMethods:
    """The FMI 2.0 Co-Simulation instance (fmigen_instance.c, CS part) as
    methods of the generated ``Fmi2Slave`` subclass.  Value references: the
    group offsets of the variable table (fmigen/variables.py) in ``MODEL``."""

    def __init__(self, **kwargs):
        Fmi2Slave.__init__(self, **kwargs)  # noqa: F821 (names of the generated module)
        self.modelName = MODEL.identifier  # noqa: F821
        self.description = MODEL.description  # noqa: F821
        self._defaults()

    def _defaults(self):
        self.core = Core(MODEL, MODEL.default_solver, MODEL.default_step)  # noqa: F821
        self.fg_state = "instantiated"
        self.assembled = False
        self.terminated = False
        self.last_successful_time = 0.0

    def to_xml(self, model_options=None):
        from xml.etree import ElementTree
        return ElementTree.fromstring(MODEL.model_description)  # noqa: F821

    def _fail(self, msg):
        raise FmuError(msg)

    def _vr_name(self, r):
        """A value reference's variable name, for messages (fmigen_instance.c's fg_vr_name)."""
        names = MODEL.vr_names  # noqa: F821
        return names[r] if 0 <= r < len(names) else "an unknown variable"

    def _allowed(self, fn, states):
        if self.fg_state not in states:
            state = self.fg_state
            self.fg_state = "error"
            self._fail("%s is not allowed in state '%s'" % (fn, state))

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self._allowed("fmi2SetupExperiment", ("instantiated",))
        if not isfinite(start_time):
            self._fail("fmi2SetupExperiment: start time is not finite")
        self.core.t = float(start_time)

    def enter_initialization_mode(self):
        self._allowed("fmi2EnterInitializationMode", ("instantiated",))
        self.assembled = False
        self.fg_state = "init"

    def _check_masses(self, fn, p, suffix=""):
        """_fail unless every body's mass is >= 0 and its inertia positive
        semidefinite at p (fmigen_instance.c's fg_check_masses)."""
        m = MODEL  # noqa: F821
        if not m.mass_labels:
            return
        j, bad, minor = m.mass_check(p)
        if j and minor < 0:
            self._fail("%s: these parameter values make %s %g; a mass must be >= 0%s" % (
                fn, m.mass_labels[j - 1], bad, suffix))
        if j:
            self._fail("%s: these parameter values make %s not positive semidefinite: %s = %g < 0%s" % (
                fn, m.mass_labels[j - 1], m.psd3_minors[minor], bad, suffix))

    def exit_initialization_mode(self):
        self._allowed("fmi2ExitInitializationMode", ("init",))
        # the parameters as the importer left them: checked here, not at each
        # SetReal before, where a condition on two parameters set one per
        # call would fail in between
        try:
            self._check_masses("fmi2ExitInitializationMode", self.core.p)
        except FmuError:
            self.fg_state = "error"
            raise
        if self.core.assemble():
            self.fg_state = "error"
            self._fail("the start cannot be assembled: %s" % self.core.message)
        self.assembled = True
        self.last_successful_time = self.core.t
        self.fg_state = "step"

    def terminate(self):
        self._allowed("fmi2Terminate", ("step", "discarded"))
        self.fg_state = "terminated"

    def _ensure_assembled(self):
        if self.assembled:
            return
        snap = self.core.snapshot()
        if self.core.assemble():
            msg = self.core.message
            self.core.restore(snap)
            self._fail("%s: %s" % ("the start cannot be assembled" if self.fg_state == "init" else "GetReal", msg))
        self.assembled = True

    def get_real(self, vrs):
        if self.fg_state == "instantiated":
            self._allowed("fmi2GetReal", ())
        if self.fg_state not in ("error", "discarded"):
            self._ensure_assembled()
        c, m = self.core, MODEL  # noqa: F821
        out = []
        for r in vrs:
            if r < m.VR_V:
                out.append(c.q[r])
            elif r < m.VR_RES:
                out.append(c.v[r - m.VR_V])
            elif r == m.VR_RES:
                out.append(c.residual)
            elif r < m.VR_P:
                out.append(c.u[r - m.VR_U])
            elif r < m.VR_H:
                out.append(c.p[r - m.VR_P])
            elif r == m.VR_H:
                out.append(c.h)
            elif r < m.VR_A:
                out.append(c.y[r - m.VR_Y])
            else:
                self._fail("fmi2GetReal: unknown value reference %d" % r)   # (no name to give)
        return out

    def set_real(self, vrs, values):
        self._allowed("fmi2SetReal", ("instantiated", "init", "step"))
        m = MODEL  # noqa: F821
        before_init = self.fg_state in ("instantiated", "init")
        for r, val in zip(vrs, values):
            if not isfinite(val):
                self._fail("fmi2SetReal: %s (value reference %d) set to a non-finite value (NaN or Inf)"
                           % (self._vr_name(r), r))
            ok = False
            if r < m.VR_RES:
                i = r if r < m.VR_V else r - m.VR_V
                ok = (before_init or m.kinematic) and i in m.independent
            elif m.VR_U <= r < m.VR_P:
                ok = True
            elif m.VR_P <= r < m.VR_H:
                ok = True           # tunable: also between communication steps (fmigen_instance.c)
            elif r == m.VR_H:
                ok = before_init
                if ok and not (val > 0.0):
                    self._fail("internal_step must be > 0 (got %g)" % val)
            if not ok and r == m.VR_H:
                self._fail("fmi2SetReal: internal_step (value reference %d) is a fixed parameter: it can be set "
                           "only before fmi2ExitInitializationMode" % r)
            if not ok:
                self._fail("fmi2SetReal: %s (value reference %d) cannot be set %s" % (
                    self._vr_name(r), r, "(it is calculated or unknown)" if before_init else "after initialization"))
        if not before_init and any(m.VR_P <= r < m.VR_H for r in vrs):
            # the bodies' masses and inertias as the new values make them,
            # before anything changes (fmigen_instance.c's fg_set_real)
            p = list(self.core.p)
            for r, val in zip(vrs, values):
                if m.VR_P <= r < m.VR_H:
                    p[r - m.VR_P] = float(val)
            self._check_masses("fmi2SetReal", p, " (nothing was set)")
        c = self.core
        changed = False
        for r, val in zip(vrs, values):
            val = float(val)
            if r < m.VR_V:
                arr, i = c.q, r
            elif r < m.VR_RES:
                arr, i = c.v, r - m.VR_V
            elif r < m.VR_P:
                arr, i = c.u, r - m.VR_U
            elif r < m.VR_H:
                arr, i = c.p, r - m.VR_P
            else:
                if c.h != val:
                    changed = True
                c.h = val
                continue
            if arr[i] != val:
                changed = True
            arr[i] = val
        if changed:
            self.assembled = False

    def do_step(self, current_time, step_size):
        self._allowed("fmi2DoStep", ("step",))
        c = self.core
        H, t = step_size, current_time
        if not (H > 0.0) or not isfinite(H):
            self._fail("fmi2DoStep: communication step size must be > 0 (got %g)" % H)
        if not isfinite(t) or fabs(t - c.t) > 1e-9 * (1.0 + fabs(t)) + 1e-12 * H:
            self._fail("fmi2DoStep: currentCommunicationPoint %.17g does not match the FMU time %.17g" % (t, c.t))
        c.t = t
        if c.step(H):
            self.log(c.message, Fmi2Status.discard,  # noqa: F821
                     "logStatusError")
            self.fg_state = "discarded"
            self.last_successful_time = c.t
            self.terminated = True
            return False
        self.assembled = True
        self.last_successful_time = c.t
        return True

    def _get_fmu_state(self):
        return {"core": self.core.snapshot(), "fg_state": self.fg_state, "assembled": self.assembled,
                "terminated": self.terminated, "last_successful_time": self.last_successful_time}

    def _set_fmu_state(self, state):
        self.core.restore(state["core"])
        self.fg_state = state["fg_state"]
        self.assembled = state["assembled"]
        self.terminated = state["terminated"]
        self.last_successful_time = state["last_successful_time"]


RUNTIME_OBJECTS = [linear, quadratic_near, quadratic_root, rotate, fmigen_sincos, fmigen_sin, fmigen_cos, fmigen_atan2, fmigen_unwrap, fmigen_powi, fmax, fmin, lu_factor, lu_solve,
                   ldlt_factor, ldlt_solve, psd3, checked_value,
                   poly_eval, all_roots, poly_root,
                   Core, FmuError, SlaveMethods]
SLAVE_METHODS = ["__init__", "_defaults", "to_xml", "_fail", "_vr_name", "_check_masses", "_allowed", "setup_experiment",
                 "enter_initialization_mode", "exit_initialization_mode", "terminate", "_ensure_assembled",
                 "get_real", "set_real", "do_step", "_get_fmu_state", "_set_fmu_state"]

# --------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------

#: C function names the C printer emits -> Python (math module or the runtime)
MATH_NAMES = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
              "acosh", "atanh", "exp", "expm1", "log", "log1p", "log10", "log2", "sqrt", "cbrt", "pow",
              "fabs", "floor", "ceil", "fmod", "hypot", "erf", "erfc", "lgamma"]


def assignments(targets, exprs, indent="    ", tmp="x"):
    """codegen.assignments with Python statements (the same sympy CSE call)."""
    exprs = [sp.sympify(e) for e in exprs]
    reps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(tmp))
    lines = [f"{indent}{s} = {pyexpr(e)}" for s, e in reps]
    lines += [f"{indent}{tg} = {pyexpr(e)}" for tg, e in zip(targets, reduced)]
    return lines


def _newton_lines(emb, tb, sm, tag, iterations, ind):
    """codegen._newton_code in Python: Newton on the block's own equations
    from the values in q, at most ``iterations`` steps, chord steps with the
    last LU factors near the solution in an exact block; leaves
    ``converged_<tag>`` true when the step passed the convergence test, false
    when it did not or the Jacobian was singular or the step not finite."""
    unk = tb.block.unknowns
    nb = len(unk)
    Phi_b, J_b, pairs = newton_system(emb, tb, "_ns", "_nc")
    exact = tb.tol is None
    inner = ind + ("        " if exact else "    ")
    phi = [sm(e) for e in Phi_b]
    body = assignments([f"_r[{k}]" for k in range(nb)] + [f"_J[{k}]" for k in range(nb * nb)],
                       phi + [sm(e) for e in J_b], indent=inner, tmp=f"n{tag}_")
    factor = [f"{inner}if lu_factor({nb}, _J, _piv): break"]

    def py(cond):
        return cond.replace("&&", "and")
    if exact:
        residual = assignments([f"_r[{k}]" for k in range(nb)], phi, indent=inner, tmp=f"nr{tag}_")
        evaluate = [f"{ind}    _fresh = not _reuse", f"{ind}    if _fresh:", *body, *factor,
                    f"{inner}_nfresh += 1", f"{ind}    else:", *residual]
        chord = py(codegen.CHORD_STOP.format(d="_dmax", p="_dprev", q="_qmax"))
        test = [f"{ind}    _conv = _dmax <= 1e-14 * (1.0 + _qmax) or (not _fresh and _chord_prev and ({chord}))",
                f"{ind}    _reuse = _dmax <= 1e-4 * (1.0 + _qmax) if _fresh else _dmax <= 1e-3 * _dprev",
                f"{ind}    _chord_prev = not _fresh"]
        state = [f"{ind}_reuse = False", f"{ind}_chord_prev = False", f"{ind}_nfresh = 0"]
        loop = (f"{ind}while (_reuse or _nfresh < {iterations}) and _it < {iterations} + {codegen.CHORD_EXTRA} "
                f"and not _conv:")
    else:
        evaluate = [*body, *factor]
        test = [f"{ind}    _conv = _dmax <= FMIGEN_NEWTON_TOL"]
        state = []
        loop = f"{ind}while _it < {iterations} and not _conv:"
    return [f"{ind}_idx = {list(unk)!r}",
            f"{ind}_J = [0.0] * {nb * nb}",
            f"{ind}_r = [0.0] * {nb}",
            f"{ind}_piv = [0] * {nb}",
            *([f"{ind}_ns{k}, _nc{k} = fmigen_sincos(q[{unk[k]}])" for k in pairs]
              if tb.method == "newton" else
              [line for j, k in enumerate(pairs) for line in (
                  f"{ind}_ns{k}, _nc{k} = _pr{tag}[{2 * j}], _pr{tag}[{2 * j + 1}]",
                  f"{ind}_rn = 1.0 / math.sqrt(_ns{k} * _ns{k} + _nc{k} * _nc{k})",
                  f"{ind}_ns{k}, _nc{k} = _ns{k} * _rn, _nc{k} * _rn")]),
            f"{ind}_conv = False",
            f"{ind}_dprev = 0.0",
            *state,
            f"{ind}_it = 0",
            loop,
            *evaluate,
            f"{ind}    lu_solve({nb}, _J, _piv, _r)",
            f"{ind}    _dmax = 0.0",
            f"{ind}    _qmax = 0.0",
            f"{ind}    for _i in range({nb}):",
            f"{ind}        q[_idx[_i]] -= _r[_i]",
            f"{ind}        if fabs(_r[_i]) > _dmax: _dmax = fabs(_r[_i])",
            f"{ind}        if fabs(q[_idx[_i]]) > _qmax: _qmax = fabs(q[_idx[_i]])",
            f"{ind}    if not (_dmax < math.inf): break",
            *[f"{ind}    _ns{k}, _nc{k} = rotate(_ns{k}, _nc{k}, -_r[{k}], q[{unk[k]}])" for k in pairs],
            *test,
            f"{ind}    _dprev = _dmax",
            f"{ind}    _it += 1",
            *[f"{ind}_pr{tag}[{2 * j}], _pr{tag}[{2 * j + 1}] = _ns{k}, _nc{k}" for j, k in enumerate(pairs)],
            f"{ind}converged_{tag} = _conv"]


def _vars_from_q(layout, ind, sums=None, pairs=None, tag=None):
    """codegen._vars_from_q in Python."""
    lines = []
    pairs = pairs or {}
    for i, kind, vs, _ in layout:
        if i in (sums or {}):
            psi = pyexpr(sums[i][0])
            lines += [f"{ind}{vs[0]} = sin({psi})", f"{ind}{vs[1]} = cos({psi})"]
        elif kind == "angle" and i in pairs:
            j = pairs[i]
            lines += [f"{ind}{vs[0]} = _pr{tag}[{2 * j}]", f"{ind}{vs[1]} = _pr{tag}[{2 * j + 1}]"]
        elif kind == "angle":
            lines += [f"{ind}{vs[0]} = sin(q[{i}])", f"{ind}{vs[1]} = cos(q[{i}])"]
        else:
            lines.append(f"{ind}{vs[0]} = q[{i}]")
    return lines


class PyKinematics:
    """``codegen.kinematics_walk``'s statements in Python: one flat function
    (block scopes are C's only), the attempts a ``for`` over one-pass
    ``while True`` loops (C: a switch whose cases ``break`` with ok = 0),
    Newton inline, and every dependent angle written to q at once (the C
    defers one nobody reads bare to fmigen_kinematic_angles: the same atan2
    of the same pair).  The sin/cos hand-over ``trig`` is a local here (the
    Python embedding evaluates its own sin/cos), but later blocks read it as
    in C, so their coefficients see the sequence's (s, c), not
    sin(atan2(s, c))."""
    base_sol, base_v, base_q = "b_sol", "b_v", "b_q"
    defers_angles = False
    helpers = None   # codegen.step_code: coefficients inline
    #: the walker's statement depths, and the verification's own
    indent = {"top": "    ", "block": "    ", "case": " " * 16, "step": " " * 16, "polish": " " * 16,
              "polished": " " * 20, "verify": " " * 8, "failed": " " * 12}

    def __init__(self, emb, sm):
        self.emb, self.sm = emb, sm
        self.expr = pyexpr
        self.assignments = assignments

    def prelude(self, n, dq):
        return [f"    trig = [0.0] * {2 * n}", "    b_sol, b_q, b_v = base['sol'], base['q'], base['v']",
                "    dt = t - base['t']", "    check = base['continuity']", f"    dqi = {dq}"]

    def trig_from_q(self, depth, i):
        ind = self.indent[depth]
        return [f"{ind}trig[{2 * i}], trig[{2 * i + 1}] = fmigen_sincos(q[{i}])"]

    def trigs_from_q(self, ks):
        return [line for i in ks for line in self.trig_from_q("top", i)]

    def block_open(self, label):
        return [f"    # {label}"]

    def block_close(self):
        return []

    def let(self, depth, name, expr):
        return [f"{self.indent[depth]}{name} = {expr}"]

    set = let

    def newton_function(self, tb, bi):
        pass   # inline (newton)

    def newton(self, depth, tb, bi, tag, iterations):
        return _newton_lines(self.emb, tb, self.sm, tag, iterations, self.indent[depth])

    def return_unless_newton_continues(self, bi, continuity, code):
        return [f"    if not converged_{bi} or (check and not ({' and '.join(continuity)})): return {code}"]

    def attempts_open(self, allvars, nseq, newton_first=False):
        if not newton_first:
            return ["    _ok = 0", f"    for _attempt in range({nseq + 1}):"]
        return ["    _ok = 0", f"    for _pass in range({nseq + 1}):",
                f"        _attempt = (_pass + {nseq}) % {nseq + 1} if check else _pass"]

    def case_open(self, si, label):
        head = f"        {'if' if si == 0 else 'elif'} _attempt == {si}:" if si is not None else "        else:"
        return [f"{head}  # {label}", "            while True:"]

    def step_open(self, label):
        return [f"{self.indent['step']}# {label}"]

    def step_close(self):
        return []

    def break_unless(self, depth, cond, bare=False):
        return [f"{self.indent[depth]}if not {cond if bare else f'({cond})'}: break"]

    def break_unless_continuous(self, depth, tests):
        return [f"{self.indent[depth]}if check and not ({' and '.join(tests)}): break"]

    def solve_step(self, var, degree):
        ind = self.indent["step"]
        if degree == 1:
            solve = f"{ind}_st, {var} = linear(a1, a0)"
        elif degree == 2:
            solve = f"{ind}_st, {var} = quadratic_near(a2, a1, a0, P_{var})"
        else:
            coeffs = ", ".join(f"a{d}" for d in range(degree, -1, -1))
            solve = f"{ind}_st, {var} = poly_root({degree}, [{coeffs}], P_{var})"
        return [solve, f"{ind}if _st: break"]

    def case_close(self, ok):
        return [f"{self.indent['case']}_ok = {ok}", f"{self.indent['case']}break"]

    def cases_close(self):
        return ["        if not _ok: continue"]

    def vars_from_q(self, depth, layout, sums, pairs=None, tag=None):
        return _vars_from_q(layout, self.indent[depth], sums, pairs, tag)

    def newton_start(self, depth, items, tag, n=0):
        if items is None:   # returned pairs only
            return [f"{self.indent[depth]}_pr{tag} = [0.0] * {n}"]
        return [f"{self.indent[depth]}_pr{tag} = [{', '.join(items)}]"]

    def trig_from_pair(self, depth, i, tag, j):
        ind = self.indent[depth]
        return [f"{ind}trig[{2 * i}] = _pr{tag}[{2 * j}]", f"{ind}trig[{2 * i + 1}] = _pr{tag}[{2 * j + 1}]"]

    @staticmethod
    def _within(n, tol, r="_rv", s="_rs"):
        return " and ".join(f"fabs({r}[{k}]) <= {tol} * {s}[{k}]" for k in range(n))

    def verify_open(self, polys, pscales, tmp, polish_from=0):
        n, i1, i2 = len(polys), self.indent["verify"], self.indent["failed"]
        guard = f"_attempt >= {polish_from} and " if polish_from else ""
        return [f"{i1}_rv = [0.0] * {n}", f"{i1}_rs = [0.0] * {n}",
                *assignments([f"_rv[{k}]" for k in range(n)] + [f"_rs[{k}]" for k in range(n)],
                             polys + pscales, indent=i1, tmp=tmp),
                f"{i1}if not ({self._within(n, 'FMIGEN_SEQ_TOL')}):", f"{i2}_ok = 0",
                f"{i2}if {guard}{self._within(n, 'FMIGEN_POLISH_TOL')}:  # polish: Newton from the result"]

    def quadratic_root(self, depth, var, root, other, circle_of=None):
        ind = self.indent[depth]
        if circle_of is not None:      # var² + circle_of² − 1 = 0
            return [f"{ind}_st, {var} = quadratic_near(1.0, 0.0, {circle_of} * {circle_of} - 1.0, P_{var})",
                    f"{ind}if _st: break"]
        return [f"{ind}_st, {var} = quadratic_root(a2, a1, a0, {root}, P_{var}, {int(other)})", f"{ind}if _st: break"]

    def linear_solve(self, depth, n, A, b, targets):
        ind = self.indent[depth]
        return [f"{ind}_Ac = [{', '.join(A)}]", f"{ind}_bc = [{', '.join(b)}]", f"{ind}_pc = [0] * {n}",
                f"{ind}if lu_factor({n}, _Ac, _pc): break", f"{ind}lu_solve({n}, _Ac, _pc, _bc)",
                *[f"{ind}{v} = _bc[{k}]" for k, v in enumerate(targets)]]

    def linear_solve_array(self, depth, n, A, b, name):
        ind = self.indent[depth]
        return [f"{ind}_Ad = [{', '.join(A)}]", f"{ind}{name} = [{', '.join(b)}]", f"{ind}_pd = [0] * {n}",
                f"{ind}if lu_factor({n}, _Ad, _pd): break", f"{ind}lu_solve({n}, _Ad, _pd, {name})"]

    def break_unless_within(self, depth, polys, pscales, tmp):
        ind, n = self.indent[depth], len(polys)
        return [f"{ind}_rc = [0.0] * {n}", f"{ind}_sc = [0.0] * {n}",
                *assignments([f"_rc[{k}]" for k in range(n)] + [f"_sc[{k}]" for k in range(n)],
                             polys + pscales, indent=ind, tmp=tmp),
                f"{ind}if not ({self._within(n, 'FMIGEN_SEQ_TOL', '_rc', '_sc')}): break"]

    def polished_open(self, converged):
        return [f"{self.indent['polish']}if {converged}:"]

    def verify_close(self):
        return [f"{self.indent['polished']}_ok = 2"]

    def attempts_close(self, continuity, code):
        return [f"        if _ok == 2 and check and not ({' and '.join(continuity)}): _ok = 0",
                "        if _ok: break", f"    if not _ok: return {code}"]

    def angle_from_sums(self, i, sin_q, cos_q, to_trig, defer):
        trig = [f"    trig[{2 * i}] = _sq", f"    trig[{2 * i + 1}] = _cq"] if to_trig else []
        return [f"    _sq = {sin_q}", f"    _cq = {cos_q}", *trig,
                f"    q[{i}] = fmigen_unwrap(fmigen_atan2(_sq, _cq), b_q[{i}])"]

    def angle_from_pair(self, i, vs, to_trig, defer):
        trig = [f"    trig[{2 * i}] = {vs[0]}", f"    trig[{2 * i + 1}] = {vs[1]}"] if to_trig else []
        # continuous: the turns nearest the last accepted value (C: the
        # same a + 2π·k, by fmigen_unwrap or a deferred angle's turns)
        return [*trig, f"    q[{i}] = fmigen_unwrap(fmigen_atan2({vs[0]}, {vs[1]}), b_q[{i}])"]

    def finish(self, out):
        return "def fmigen_kinematics(t, q, p, base, sol):\n" + "\n".join(out + ["    return 0"]) + "\n"


def kinematics_source(emb, tri, sm):
    """The kinematics in Python: ``codegen.kinematics_walk`` (model.c's
    walker) with ``PyKinematics``.  Returns (source, failure table, start of
    the solution vector ``sol``)."""
    src, failures, sol_start = codegen.kinematics_walk(emb, tri, sm, codegen.trig_plan(emb), PyKinematics(emb, sm))
    return src, [""] + failures, sol_start


def _check_against_c(model_c, failures, sol_start):
    """The failure table and the start of ``sol`` must be model.c's
    (fmigen_kinematics_failure, fmigen_sol_start): a guard against the two
    generators drifting apart."""
    m_ = re.search(r"const double fmigen_sol_start\[\] = \{(.*)\};", model_c)
    c_start = [float(x) for x in m_.group(1).split(",")] if m_ else None
    if c_start != ([float(x) for x in sol_start] or [0.0]):
        raise PythonRuntimeError("the Python kinematics' solution vector does not match model.c's "
                                 "fmigen_sol_start (pyruntime.kinematics_source out of step with codegen)")
    m_ = re.search(r"fmigen_kinematics_failure\[\] = \{\n(.*?)\n\};", model_c, re.S)
    c_fail = re.findall(r'^\s*"(.*)",?$', m_.group(1), re.M) if m_ else []
    # (without any block, model.c pads its table with a second "")
    if [f for f in c_fail if f] != failures[1:]:
        raise PythonRuntimeError("the Python kinematics' failure messages do not match model.c's "
                                 "(pyruntime.kinematics_source out of step with codegen)")


def reaction_source(dae, sm) -> str:
    """model.c's joint reactions (``codegen.reaction_c``) in Python: K [q̈; λ]
    = [F; γ] (``codegen.reaction_system``) by the runtime's LU, then the
    reaction outputs; ``fmigen_outputs_with_reactions`` is the outputs
    function the runtime calls."""
    entries, rhs, outs = codegen.reaction_system(dae)
    nk = dae.n + dae.m
    fill = assignments([f"K[{r * nk + c_}]" for r, c_, _ in entries] + [f"b[{k}]" for k in range(nk)],
                       [sm(e) for _, _, e in entries] + [sm(e) for e in rhs])
    body = assignments([f"out[{k}]" for k, _ in outs], [sm(e) for _, e in outs])
    return "\n".join([
        "def fmigen_reactions(t, q, v, p, u, out):",
        f"    K, b, piv = [0.0] * {nk * nk}, [0.0] * {nk}, [0] * {nk}",
        *fill,
        f"    if lu_factor({nk}, K, piv):",
        *(f"        out[{k}] = NAN" for k, _ in outs),
        "        return",
        f"    lu_solve({nk}, K, piv, b)",
        f"    a, lam = b[:{dae.n}], b[{dae.n}:]",
        *body, "",
        "def fmigen_outputs_with_reactions(t, q, v, p, u, out):",
        "    fmigen_outputs(t, q, v, p, u, out)",
        "    fmigen_reactions(t, q, v, p, u, out)", ""])


def generate(compiled, solver="rk4", step=1e-3) -> tuple[str, str, str]:
    """The Python FMU module for a compiled model: (module source, model identifier, GUID)."""
    emb, tri, gen = compiled.embedding, compiled.triangular, compiled.generated
    dae = emb.dae
    mech = dae.mechanism
    if gen.formulation is not None:
        raise PythonRuntimeError(f"the Python runtime builds the embedded formulations only; "
                                 f"--kinematics {gen.formulation.name} needs the C runtime")
    if solver not in fmu.SOLVERS:
        raise PythonRuntimeError(f"unknown solver '{solver}' (choose from {sorted(fmu.SOLVERS)})")
    if not (step > 0):
        raise PythonRuntimeError(f"internal step must be > 0 (got {step})")
    identifier = mech.name
    if not identifier.isidentifier():
        raise PythonRuntimeError(f"mechanism name '{identifier}' is not a Python identifier")
    sm = SymbolMap(emb)
    n, m = dae.n, dae.m
    kin_src, failures, sol_start = kinematics_source(emb, tri, sm)
    _check_against_c(gen.model_c, failures, sol_start)

    def matrix_fn(name, M):
        flat = [sm(e) for e in M]
        body = assignments([f"out[{k}]" for k in range(len(flat))], flat)
        return f"def {name}(t, q, v, p, u, out):\n" + ("\n".join(body) if body else "    pass") + "\n"

    fns = [matrix_fn("fmigen_phi", dae.Phi), matrix_fn("fmigen_phi_q", emb.Phi_q),
           matrix_fn("fmigen_phi_t", emb.Phi_t), matrix_fn("fmigen_gamma", emb.gamma),
           matrix_fn("fmigen_mass", emb.M), matrix_fn("fmigen_forcing", emb.F),
           matrix_fn("fmigen_outputs", sp.Matrix([0 if k in mech.reactions else e for k, e in dae.outputs.items()])
                     if dae.outputs else sp.Matrix([]))]
    if mech.reactions:
        fns.append(reaction_source(dae, sm))
    checks, labels = mass_check_source(mech)
    fns.append(checks)
    tols = {tb.tol for tb in tri.blocks if tb.method == "newton" and tb.tol is not None}

    # variables and modelDescription: the C FMU's (one variable table), adapted to pythonfmu
    iface = fmu.Interface.of(emb)
    table = variables.table(iface, step, "cs")
    xml = fmu.model_description(iface, gen, table, "cs", step)
    nu, np_ = len(dae.inputs), len(dae.tunable)
    # the group offsets SlaveMethods dispatches on (a Co-Simulation FMU declares no later group)
    vr = {g: table.offsets[g] for g in ("VR_V", "VR_RES", "VR_U", "VR_P", "VR_H", "VR_Y", "VR_A")}

    model = dict(
        identifier=identifier, description=mech.description or mech.name,
        NQ=n, NC=m, NI=emb.f, ND=n - emb.f, NP=np_, NU=nu, NY=len(dae.outputs), NSOL=len(sol_start),
        independent=list(emb.independent), dependent=list(emb.dependent),
        q_start=[float(tri.start[nm]) for nm in dae.names],
        v_start=[float(c_.velocity_start) for c_ in mech.coordinates],
        p_default=[float(x) for x in dae.tunable_values], u_default=[float(x) for x in dae.input_values],
        sol_start=[float(x) for x in sol_start], failure=failures, names=list(dae.names),
        unit_scale=[float(x) for x in mechanism_unit_scales(mech)],
        mass_labels=labels, psd3_minors=list(PSD3_MINORS),
        vr_names=[v.name for v in sorted(table.rows, key=lambda v: v.vr)],
        kinematic=bool(mech.kinematic), default_solver=fmu.SOLVERS[solver], default_step=float(step),
        **structure_tables(emb, tri), **vr)
    runtime = "\n\n".join(inspect.getsource(o) for o in RUNTIME_OBJECTS)
    methods = "\n".join(f"    {name} = SlaveMethods.{name}" for name in SLAVE_METHODS)
    parts = [
        f'"""fmigen Python FMU of mechanism \'{mech.name}\' (generated; do not edit).\n\n'
        f"The same reduced model as the C FMU ({solver}, internal step {step!r} s): kinematic\n"
        "solution sequence, embedded ODE and fixed-step integrator, in pure Python.\n\"\"\"",
        "import math",
        "from math import fabs, isfinite, inf as INFINITY, nan as NAN",
        "@@MATH_IMPORT@@",
        "from types import SimpleNamespace",
        "",
        "from pythonfmu import Fmi2Slave",
        "from pythonfmu.enums import Fmi2Status",
        "",
        f"FMIGEN_NEWTON_MAX_ITER = {FMIGEN_NEWTON_MAX_ITER}",
        f"FMIGEN_MAX_DEGREE = {FMIGEN_MAX_DEGREE}",
        f"FMIGEN_SWITCH_COND = {FMIGEN_SWITCH_COND!r}",
        f"FMIGEN_SEQ_TOL = {FMIGEN_SEQ_TOL!r}",
        f"FMIGEN_POLISH_TOL = {FMIGEN_POLISH_TOL!r}",
        f"FMIGEN_BRANCH_TOL = {FMIGEN_BRANCH_TOL!r}",
        f"FMIGEN_LIMIT_GAIN = {FMIGEN_LIMIT_GAIN!r}",
        f"FMIGEN_MESSAGE_SIZE = {FMIGEN_MESSAGE_SIZE}",
        f"FMIGEN_NEWTON_TOL = {min(tols)!r}" if tols else "",
        f"EULER, RK4, SYMPLECTIC = {EULER}, {RK4}, {SYMPLECTIC}",
        "",
        "# ---- runtime (fmigen/pyruntime.py, a port of runtime/fmigen_core.c) ----",
        "",
        runtime,
        "",
        "# ---- model (generated from the same triangularization and embedding as model.c) ----",
        "",
        kin_src,
        *fns,
        f"MODEL = SimpleNamespace(**{model!r})",
        "MODEL.kinematics = fmigen_kinematics",
        "MODEL.phi, MODEL.phi_q, MODEL.phi_t = fmigen_phi, fmigen_phi_q, fmigen_phi_t",
        "MODEL.gamma, MODEL.mass, MODEL.forcing = fmigen_gamma, fmigen_mass, fmigen_forcing",
        "MODEL.outputs = fmigen_outputs_with_reactions" if mech.reactions else "MODEL.outputs = fmigen_outputs",
        "MODEL.mass_check = fmigen_mass_check",
        "MODEL.model_description = MODEL_DESCRIPTION = '@@XML@@'",
        "",
        "",
        f"class {identifier}(Fmi2Slave):",
        f'    """FMI 2.0 Co-Simulation slave of \'{mech.name}\'."""',
        methods,
        "",
    ]
    src = "\n".join(parts)
    # import only the math functions the model uses (math.cbrt is Python 3.11+)
    model_src = kin_src + "".join(fns)
    used = [n_ for n_ in MATH_NAMES if re.search(rf"\b{n_}\(", model_src)]
    missing = [n_ for n_ in used if not hasattr(math, n_)]
    if missing:
        raise PythonRuntimeError(f"no Python math function for {missing} used by the model")
    src = src.replace("@@MATH_IMPORT@@", f"from math import {', '.join(used)}" if used else "")
    # over the source (model, runtime, solver, step) and the declared
    # variables, whose units and descriptions the source does not hold
    guid = str(uuid.UUID(hashlib.md5((src + "\0" + fmu.variable_list(table, "2")).encode()).hexdigest()))
    xml = _adapt_model_description(xml, guid)
    src = src.replace("'@@XML@@'", repr(xml.decode()))
    try:
        compile(src, f"{identifier}.py", "exec")
    except SyntaxError as e:
        raise PythonRuntimeError(f"generated Python does not compile: {e}") from e
    return src, identifier, guid


def _adapt_model_description(xml: bytes, guid: str) -> bytes:
    """The C FMU's modelDescription for pythonfmu's binary: no SourceFiles,
    an execution tool (a Python interpreter) needed, GUID of the Python source
    and the variables."""
    from lxml import etree
    root = etree.fromstring(xml)
    root.set("guid", "{" + guid + "}")
    cs = root.find("CoSimulation")
    for sf in cs.findall("SourceFiles"):
        cs.remove(sf)
    cs.set("needsExecutionTool", "true")
    root.set("generationTool", root.get("generationTool") + " (Python runtime, pythonfmu)")
    return etree.tostring(root, xml_declaration=False, encoding="unicode").encode()


def check_pythonfmu():
    """pythonfmu's builder and its prebuilt binary for this platform, or a
    PythonRuntimeError that says what is missing."""
    try:
        from pythonfmu.builder import FmuBuilder
    except ImportError as e:
        raise PythonRuntimeError(
            f"--runtime python needs pythonfmu ({e}); install it with `pip install pythonfmu` "
            "or build the C FMU (--runtime c)") from e
    if not FmuBuilder.has_binary():
        from pythonfmu.osutil import get_platform
        raise PythonRuntimeError(
            f"pythonfmu has no prebuilt FMI binary for this platform ({get_platform()}); "
            "build the C FMU instead (--runtime c)")
    return FmuBuilder


def package(compiled, out, solver="rk4", step=1e-3) -> Path:
    """Write the Python FMU (FMI 2.0 Co-Simulation) with pythonfmu."""
    FmuBuilder = check_pythonfmu()
    src, identifier, guid = generate(compiled, solver, step)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fmigen_py_") as tmp:
        # the module name is unique per generated source (pythonfmu imports it
        # by name and Python caches modules by name), so several Python FMUs,
        # even two builds of one mechanism, can share one interpreter
        script = Path(tmp) / f"fmigen_{identifier}_{guid.replace('-', '')[:12]}.py"
        script.write_text(src)
        # pythonfmu imports the script (sys.modules caches it by name): drop a
        # stale module of an earlier build in this process
        import sys
        sys.modules.pop(script.stem, None)
        try:
            FmuBuilder.build_FMU(script, dest=out, canGetAndSetFMUstate="true", canSerializeFMUstate="true",
                                 needsExecutionTool="true")
        finally:
            sys.modules.pop(script.stem, None)
            if tmp in sys.path:
                sys.path.remove(tmp)
    return out


def build_python_fmu(spec_or_mech, out, solver="rk4", step=1e-3, order=None, use_cache=True, log=None,
                     kinematics="groebner", newton_tol=None, compiled=None):
    """``pipeline.build_fmu`` for the Python runtime: same stages, pythonfmu at the end."""
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    log = log or (lambda msg: None)
    check_pythonfmu()
    if compiled is None:
        mech = prepare_mechanism(spec_or_mech, log, use_cache)
        compiled = compile_model(mech, order=order, use_cache=use_cache, log=log, kinematics=kinematics,
                                 newton_tol=newton_tol)
    if compiled.mechanism.switch_independent:
        # the Python twin mirrors one partition's kinematics and embedding
        log("warning: the Python runtime does not switch coordinates (switch_independent); near a "
            "singularity of the declared partition it returns fmi2Discard naming the block")
    t0 = time.perf_counter()
    log(f"[5/5] generating Python and packaging {out} with pythonfmu")
    path = package(compiled, Path(out), solver=solver, step=step)
    compiled.seconds["fmu"] = time.perf_counter() - t0
    return path, compiled
