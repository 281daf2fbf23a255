"""Small helpers of the spatial corpus modules (no build()).

Every spatial corpus module writes its hard points as short decimals (the
float rule makes them short exact rationals) and its rotations with
rational sines and cosines (Pythagorean triples), so the geometry the
Gröbner stage sees is the one described, exactly.  The start of a
dependent coordinate is only a guess; these helpers compute good guesses
from the described pose in floating point.
"""
import math

import numpy as np


def rod_inertia(m, length, radius=0.01):
    """Central principal inertia of a slim rod along the body's z axis."""
    t = m * length ** 2 / 12
    return (t, t, m * radius ** 2 / 2)


def rod_inertia_x(m, length, radius=0.01):
    """Central principal inertia of a slim rod along the body's x axis."""
    t = m * length ** 2 / 12
    return (m * radius ** 2 / 2, t, t)


def rot_x(c, s):
    """Rot(x) with cosine ``c`` and sine ``s`` (exact when they are)."""
    return [[1, 0, 0], [0, c, -s], [0, s, c]]


def universal_xy(d):
    """The angles (q1, q2) of a universal joint with axes x then y (frame
    of its parent marker) that turn the body's z axis onto the direction
    ``d``: Rot(x, q1) Rot(y, q2) z = (sin q2, −sin q1 cos q2, cos q1 cos q2)."""
    d = np.asarray(d, float)
    d = d / np.linalg.norm(d)
    return math.atan2(-d[1], d[2]), math.asin(max(-1.0, min(1.0, d[0])))


def universal_yx(d):
    """The same for axes y then x: Rot(y, q1) Rot(x, q2) z =
    (sin q1 cos q2, −sin q2, cos q1 cos q2)."""
    d = np.asarray(d, float)
    d = d / np.linalg.norm(d)
    return math.atan2(d[0], d[2]), math.asin(max(-1.0, min(1.0, -d[1])))


def tripod_directions():
    """Three radial unit directions in the base plane about 120° apart
    with exact rational components (0°, and ±120.5° from the triple
    33-56-65), and the tangent directions z × n: a three-legged platform's
    revolute or universal axes must be exact unit vectors."""
    import sympy as sp
    radial = [(sp.Integer(1), sp.Integer(0), sp.Integer(0)),
              (sp.Rational(-33, 65), sp.Rational(56, 65), sp.Integer(0)),
              (sp.Rational(-33, 65), sp.Rational(-56, 65), sp.Integer(0))]
    tangent = [(-n[1], n[0], sp.Integer(0)) for n in radial]
    return radial, tangent
