"""Rotations and joint motions for the Cartesian reference, in plain numpy:
rotation matrices from axis and angle and quaternions, a joint's relative
pose inverted to its coordinates, and its motion subspace.
"""

from __future__ import annotations

import math

import numpy as np


def cross(a, b):
    """a × b for 3-vectors (np.cross costs ~20x more on single vectors, and
    the right-hand side calls it ~60 times per evaluation)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rot(a, q):
    """Rot(a, q): the right-handed rotation by q about the unit vector a."""
    x, y, z = (float(e) for e in a)
    c, s = math.cos(q), math.sin(q)
    k = 1 - c
    # c I + s [a]x + (1 − c) a aᵀ, entry by entry in that order (three
    # array temporaries cost more than the arithmetic)
    return np.array([[c + k * (x * x), -s * z + k * (x * y), s * y + k * (x * z)],
                     [s * z + k * (y * x), c + k * (y * y), -s * x + k * (y * z)],
                     [-s * y + k * (z * x), s * x + k * (z * y), c + k * (z * z)]])


EX, EY, EZ = np.eye(3)


def quat_to_rot(p):
    w, x, y, z = p / np.linalg.norm(p)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def rot_to_quat(R):
    """Shepperd's method: the branch with the largest pivot."""
    tr = np.trace(R)
    k = int(np.argmax([tr, R[0, 0], R[1, 1], R[2, 2]]))
    if k == 0:
        w = math.sqrt(1 + tr) / 2
        q = [w, (R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w)]
    elif k == 1:
        x = math.sqrt(1 + 2 * R[0, 0] - tr) / 2
        q = [(R[2, 1] - R[1, 2]) / (4 * x), x, (R[0, 1] + R[1, 0]) / (4 * x), (R[0, 2] + R[2, 0]) / (4 * x)]
    elif k == 2:
        y = math.sqrt(1 + 2 * R[1, 1] - tr) / 2
        q = [(R[0, 2] - R[2, 0]) / (4 * y), (R[0, 1] + R[1, 0]) / (4 * y), y, (R[1, 2] + R[2, 1]) / (4 * y)]
    else:
        z = math.sqrt(1 + 2 * R[2, 2] - tr) / 2
        q = [(R[1, 0] - R[0, 1]) / (4 * z), (R[0, 2] + R[2, 0]) / (4 * z), (R[1, 2] + R[2, 1]) / (4 * z), z]
    return np.array(q)


def quat_times_rotvec(p, phi):
    """p ⊗ exp(φ/2): p followed by the body-frame rotation vector φ."""
    ang = np.linalg.norm(phi)
    if ang < 1e-300:
        return p
    h = np.r_[math.cos(ang / 2), math.sin(ang / 2) * phi / ang]
    w1, v1 = p[0], p[1:]
    w2, v2 = h[0], h[1:]
    out = np.r_[w1 * w2 - v1 @ v2, w1 * v2 + w2 * v1 + cross(v1, v2)]
    return out / np.linalg.norm(out)


def _angle_about(R, a, u1, u2):
    """The angle of the rotation R about a (R a = a), measured from u1 to u2."""
    r = R @ u1
    return math.atan2(r @ u2, r @ u1)


def _zyx(R):
    """(q_z, q_y, q_x) with R = Rot(z, q_z) Rot(y, q_y) Rot(x, q_x)."""
    return (math.atan2(R[1, 0], R[0, 0]), math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0])),
            math.atan2(R[2, 1], R[2, 2]))


def inverse_joint(kind, a, b, u1, u2, R, p):
    """The joint coordinates from the child marker relative to the parent one
    (R = R_Pᵀ R_C, p = R_Pᵀ (r_C − r_P)); angles in (−π, π]."""
    if kind == "revolute":
        return [_angle_about(R, a, u1, u2)]
    if kind == "prismatic":
        return [a @ p]
    if kind == "cylindrical":
        return [_angle_about(R, a, u1, u2), a @ p]
    if kind == "universal":
        c = cross(a, b)
        q1 = math.atan2(c @ (R @ b), b @ (R @ b))
        Ra = R @ a
        # R a = cos q2 a − sin q2 (cos q1 c − sin q1 b)
        s2 = -(c @ Ra) * math.cos(q1) + (b @ Ra) * math.sin(q1)
        return [q1, math.atan2(s2, a @ Ra)]
    if kind == "spherical":
        return list(_zyx(R))
    if kind == "planar":
        return [p[0], p[1], math.atan2(R[1, 0], R[0, 0])]
    if kind == "free":
        qz, qy, qx = _zyx(R)
        return [p[0], p[1], p[2], qx, qy, qz]
    return []


def motion_subspace(kind, a, b, q):
    """S(q) (6 x k, parent marker frame): the relative twist of the child
    marker, [velocity of its origin relative to the parent-fixed point there;
    angular velocity], is S(q) q̇."""
    S = np.zeros((6, len(q)))
    if kind == "revolute":
        S[3:, 0] = a
    elif kind == "prismatic":
        S[:3, 0] = a
    elif kind == "cylindrical":
        S[3:, 0] = a
        S[:3, 1] = a
    elif kind == "universal":
        S[3:, 0] = a
        S[3:, 1] = rot(a, q[0]) @ b
    elif kind == "spherical":
        Rz = rot(EZ, q[0])
        S[3:, 0] = EZ
        S[3:, 1] = Rz @ EY
        S[3:, 2] = Rz @ rot(EY, q[1]) @ EX
    elif kind == "planar":
        S[0, 0] = 1.0
        S[1, 1] = 1.0
        S[3:, 2] = EZ
    elif kind == "free":
        S[:3, :3] = np.eye(3)
        Rz = rot(EZ, q[5])
        S[3:, 3] = Rz @ rot(EY, q[4]) @ EX
        S[3:, 4] = Rz @ EY
        S[3:, 5] = EZ
    return S


def _perpendicular_pair(a):
    """Two unit vectors u1, u2 with (u1, u2, a) right-handed and orthonormal."""
    e = np.eye(3)[int(np.argmin(np.abs(a)))]
    u1 = e - (e @ a) * a
    u1 /= np.linalg.norm(u1)
    return u1, cross(a, u1)
