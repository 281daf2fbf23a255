"""Planar corpus mechanisms against a textbook's worked example.

Norton's Example 4-1 (``tests/corpus/fourbar_crank_rocker.py``: a = 40,
b = 120, c = 80, d = 100 mm, θ2 = 40°) solves the four-bar's position in
closed form from Freudenstein's equation.  The FMU built from the joint
description must start on the example's open configuration: its absolute
coupler and rocker angles (θ3 = θ + A, θ4 = φ in the joint coordinates)
equal the closed form's open root, and differ from the crossed root.  The
closed form here shares nothing with fmigen (no Gröbner basis, no
assembly, no joint model): the half-angle solution of Freudenstein's
equation and of its coupler counterpart, in Norton's K1–K5.
"""
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from corpus import fourbar_crank_rocker  # noqa: E402

from fmigen.build.pipeline import build_fmu  # noqa: E402
from fmigen.verify.validate import simulate  # noqa: E402


def _wrap(x):
    return math.atan2(math.sin(x), math.cos(x))


def freudenstein(a, b, c, d, t2):
    """Both assemblies (θ3, θ4) of the four-bar at crank angle θ2: θ4 from
    K1 cos θ4 − K2 cos θ2 + K3 = cos(θ2 − θ4) and θ3 from its coupler form
    K1 cos θ3 + K4 cos θ2 + K5 = cos(θ2 − θ3), each by tan-half-angle; the
    open configuration takes the minus root of both (Norton's convention),
    returned first."""
    K1, K2, K3 = d / a, d / c, (a * a - b * b + c * c + d * d) / (2 * a * c)
    K4, K5 = d / b, (c * c - d * d - a * a - b * b) / (2 * a * b)
    A = math.cos(t2) - K1 - K2 * math.cos(t2) + K3
    B = -2 * math.sin(t2)
    C = K1 - (K2 + 1) * math.cos(t2) + K3
    D = math.cos(t2) - K1 + K4 * math.cos(t2) + K5
    E = -2 * math.sin(t2)
    F = K1 + (K4 - 1) * math.cos(t2) + K5
    out = []
    for sgn in (-1, +1):
        t4 = 2 * math.atan((-B + sgn * math.sqrt(B * B - 4 * A * C)) / (2 * A))
        t3 = 2 * math.atan((-E + sgn * math.sqrt(E * E - 4 * D * F)) / (2 * D))
        out.append((_wrap(t3), _wrap(t4)))
    return out


def test_closed_form_closes_the_loop():
    # the closed form is a reference only if it solves the loop: a cos θ2 +
    # b cos θ3 − c cos θ4 − d = 0 and the same in sin, for both roots
    m = fourbar_crank_rocker
    for t3, t4 in freudenstein(m.A, m.B, m.C, m.D, m.THETA2):
        assert abs(m.A * math.cos(m.THETA2) + m.B * math.cos(t3) - m.C * math.cos(t4) - m.D) < 1e-15
        assert abs(m.A * math.sin(m.THETA2) + m.B * math.sin(t3) - m.C * math.sin(t4)) < 1e-15


def test_norton_example_4_1_start(tmp_path):
    m = fourbar_crank_rocker
    (t3_open, t4_open), (t3_crossed, t4_crossed) = freudenstein(m.A, m.B, m.C, m.D, m.THETA2)
    path, _ = build_fmu(m.build(), tmp_path / "fourbar_crank_rocker.fmu", reuse=True)
    row = simulate(path, ["theta", "A", "phi"], 1e-3, 1e-3)[0]
    assert row["theta"] == m.THETA2
    t3, t4 = _wrap(row["theta"] + row["A"]), _wrap(row["phi"])
    assert abs(t3 - t3_open) < 1e-12 and abs(t4 - t4_open) < 1e-12, (t3, t4, t3_open, t4_open)
    # and the two configurations are far apart, so the test tells them apart
    assert abs(_wrap(t3_open - t3_crossed)) > 1 and abs(_wrap(t4_open - t4_crossed)) > 1
