"""The energy balance's arithmetic, shared by the Cartesian reference
(``cartesian.py``) and ``validate``: the relative drift of E = T + V against
the work W of the loads, and W = ∫ P dt from sampled power."""

from __future__ import annotations

import numpy as np


#: the smallest energy scale, relative to max |E|: E = T + V is computed to
#: about 1e-16 of itself, so a mechanism held at rest under loads (a car on
#: its springs, V ~ 4 kJ, moving 1e-13 m) must not have its rounding
#: measured against the ~1e-9 J its motion moves
ENERGY_SCALE_FLOOR = 1e-8


def energy_drift(kinetic, potential, work):
    """max |E(t) − E(0) − W(t)| (E = T + V) over the energy the motion moves
    around: the largest of max T, max |V − V(0)| and max |W| — so a motion
    that exchanges nothing (a steady precession) is measured against its
    kinetic energy, and a mechanism at rest with no loads reports 0 — but
    at least ``ENERGY_SCALE_FLOOR`` × max |E|, the precision E has."""
    T, V, W = (np.asarray(x, dtype=float) for x in (kinetic, potential, work))
    E = T + V
    err = np.abs(E - E[0] - W).max()
    scale = max(T.max(), np.abs(V - V[0]).max(), np.abs(W).max(), ENERGY_SCALE_FLOOR * np.abs(E).max())
    return float(err / scale) if scale > 0 else 0.0


#: samples per subinterval rule of ``work_integral``: the interpolant is of
#: degree WORK_POINTS − 1
WORK_POINTS = 8


def work_integral(power, times):
    """W(t_i) = ∫₀^t_i P dt at every sample, each subinterval [t_i, t_i+1]
    integrated exactly for the degree-7 polynomial through the 8 samples
    around it (centred where the ends allow).

    Not the cumulative Simpson rule: its odd-numbered values come from one
    subinterval of a parabola, a local error h⁴ P‴/24 that the next pair
    does not cancel, and where P changes fast — a damper's power in the
    first milliseconds of a suspension starting from rest — that error at
    the first samples (2.6e-4 of the work of a transient e^(−300 t) at a
    1 ms spacing) is larger than the RK4 FMU's own energy error, so the
    energy check measured the quadrature instead of the FMU.  Here the error
    is O(h⁸) for a smooth P (7e-8 on that transient), at every sample."""
    P = np.asarray(power, dtype=float)
    t = np.asarray(times, dtype=float)
    n = len(t)
    if n < 2:
        return np.zeros(n)
    m = min(WORK_POINTS, n)
    i = np.arange(n - 1)
    first = np.clip(i - (m // 2 - 1), 0, n - m)
    idx = first[:, None] + np.arange(m)[None, :]
    h = t[1:] - t[:-1]
    # the stencil in units of the subinterval, from its left end: the
    # weights solve Vᵀ w = ∫₀¹ sᵏ ds, the moments of the interval
    s = (t[idx] - t[:-1, None]) / h[:, None]
    vander = s[:, None, :] ** np.arange(m)[None, :, None]
    moments = np.broadcast_to(1.0 / (np.arange(m) + 1.0), (n - 1, m))[..., None]
    weights = np.linalg.solve(vander, moments)[..., 0]
    return np.concatenate([[0.0], np.cumsum(h * np.einsum("kl,kl->k", weights, P[idx]))])
