"""The Python runtime's numerics, the twins of the C runtime's
(runtime/fmigen_numeric.h, fmigen_runtime.h): its constants read from the C
headers, roots of a step's polynomial, and the LU and LDLᵀ factorizations
(sin, cos, atan2, ... as C computes them: generate/elementary.py).  Every
function here is copied verbatim into a generated Python FMU
(pyruntime.RUNTIME_OBJECTS).
"""

from __future__ import annotations

import math
import re
from math import fabs, isfinite
from pathlib import Path

from fmigen.generate.elementary import fmigen_sincos


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
