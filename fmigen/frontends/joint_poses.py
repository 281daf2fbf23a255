"""Body poses along a joint model's spanning tree: a joint's transform
(``joint_transform``), each body placed from its parent (``_place``; a body
turning about the world z axis only keeps one angle), the tree of frames
(``_Tree``) and the world poses of the bodies (``_world_poses``).
"""

from __future__ import annotations

import sympy as sp
from fmigen.mechanics import me

from fmigen.model import ModelError


def rot(a, q) -> sp.Matrix:
    """Rot(a, q): right-handed rotation by q about the unit vector a (Rodrigues)."""
    a = sp.Matrix(a)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return (sp.cos(q) * sp.eye(3) + sp.sin(q) * K + (1 - sp.cos(q)) * a * a.T).applyfunc(sp.expand)


def rz(angle) -> sp.Matrix:
    c, s = sp.cos(angle), sp.sin(angle)
    return sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def joint_transform(joint, q):
    """(R_J(q), p_J(q)) of the table in ``joints.py``."""
    a, b, k = joint.axis, joint.axis2, joint.kind
    zero = sp.zeros(3, 1)
    if k == "revolute":
        return rot(a, q[0]), zero
    if k == "prismatic":
        return sp.eye(3), q[0] * sp.Matrix(a)
    if k == "cylindrical":
        return rot(a, q[0]), q[1] * sp.Matrix(a)
    if k == "universal":
        return rot(a, q[0]) * rot(b, q[1]), zero
    if k == "spherical":
        return rz(q[0]) * rot((0, 1, 0), q[1]) * rot((1, 0, 0), q[2]), zero
    if k == "planar":
        return rz(q[2]), sp.Matrix([q[0], q[1], 0])
    if k == "free":
        return rz(q[5]) * rot((0, 1, 0), q[4]) * rot((1, 0, 0), q[3]), sp.Matrix(q[:3])
    if k == "fixed":
        return sp.eye(3), zero
    raise ModelError(f"joint '{joint.name}': unknown kind '{k}'")


def _z_angle(R):
    """The angle of a constant rotation about z, or None when R is not one."""
    R = sp.Matrix(R)
    if R[2, 2] != 1 or any(R[i, j] != 0 for i, j in ((0, 2), (1, 2), (2, 0), (2, 1))):
        return None
    if R == sp.eye(3):
        return sp.Integer(0)
    return sp.atan2(R[1, 0], R[0, 0])


def _joint_z_angle(joint, q, reverse):
    """The joint rotation as an angle about z (sign for a reversed traversal),
    or None when it is not a rotation about ±z."""
    k, a = joint.kind, tuple(joint.axis)
    if k in ("prismatic", "fixed"):
        return sp.Integer(0)
    if k == "planar":
        ang = q[2]
    elif k in ("revolute", "cylindrical") and a in ((0, 0, 1), (0, 0, -1)):
        ang = q[0] * a[2]
    else:
        return None
    return -ang if reverse else ang


class _Pose:
    """A body's world pose: position r (3x1), orientation R (body -> world),
    its sympy frame, and, for a body that only turns about world z, the angle."""

    def __init__(self, r, R, frame, angle=None):
        self.r, self.R, self.frame, self.angle = r, R, frame, angle

    def point(self, p):
        return self.r + self.R * sp.Matrix(p)


def _oriented(frame, R, name):
    """A frame whose axes are ``frame``'s rotated by the constant R (columns:
    the new axes in ``frame``); ``frame`` itself when R is the identity."""
    R = sp.Matrix(R)
    return frame if R == sp.eye(3) else frame.orientnew(name, "DCM", R)


def _joint_frame(frame, joint, q, reverse, name):
    """The frame after the joint's rotation (R_J, or R_Jᵀ when reversed)."""
    k = joint.kind

    def axis(f, a):
        return a[0] * f.x + a[1] * f.y + a[2] * f.z

    if k in ("prismatic", "fixed"):
        return frame
    if k in ("revolute", "cylindrical"):
        s = -1 if reverse else 1
        return frame.orientnew(name, "Axis", (s * q[0], axis(frame, joint.axis)))
    if k == "universal":
        if not reverse:
            f1 = frame.orientnew(name + "_1", "Axis", (q[0], axis(frame, joint.axis)))
            return f1.orientnew(name, "Axis", (q[1], axis(f1, joint.axis2)))
        # R_Jᵀ = Rot(b, −q2) Rot(a, −q1): b and a keep their components in the
        # frames they rotate (a rotation leaves its own axis fixed)
        f1 = frame.orientnew(name + "_1", "Axis", (-q[1], axis(frame, joint.axis2)))
        return f1.orientnew(name, "Axis", (-q[0], axis(f1, joint.axis)))
    if k in ("spherical", "free"):
        a1, a2, a3 = (q[0], q[1], q[2]) if k == "spherical" else (q[5], q[4], q[3])
        f = me.ReferenceFrame(name)
        if not reverse:
            f.orient_body_fixed(frame, (a1, a2, a3), "321")
        else:
            f.orient_body_fixed(frame, (-a3, -a2, -a1), "123")
        return f
    if k == "planar":
        return frame.orientnew(name, "Axis", ((-1 if reverse else 1) * q[2], frame.z))
    raise ModelError(f"joint '{joint.name}': unknown kind '{k}'")


def _place(kp: _Pose, joint, reverse):
    """(r, R, angle) of the body a tree joint places, from the pose ``kp`` of
    the body it hangs from (any frame: the world, or an ancestor body's)."""
    known_mk, new_mk = (joint.child, joint.parent) if reverse else (joint.parent, joint.child)
    q = [c.symbol for c in joint.coordinates]
    RJ, pJ = joint_transform(joint, q)
    # the known marker's pose, then the new marker's through the joint
    mk_angle = _z_angle(known_mk.rotation)
    new_angle = _z_angle(new_mk.rotation)
    jz = _joint_z_angle(joint, q, reverse)
    RMk = kp.R * known_mk.rotation
    rMk = kp.point(known_mk.position)
    if not reverse:
        R_new_mk = RMk * RJ
        r_new_mk = rMk + RMk * pJ
    else:
        R_new_mk = RMk * RJ.T
        r_new_mk = rMk - R_new_mk * pJ
    if kp.angle is not None and mk_angle is not None and new_angle is not None and jz is not None:
        # a body turning about the frame's z only: keep its angle as one sum,
        # and the point written with it (no expanded DCM products)
        angle = sp.Add(kp.angle, mk_angle, jz, -new_angle)
        return r_new_mk - rz(angle) * sp.Matrix(new_mk.position), rz(angle), angle
    R = (R_new_mk * new_mk.rotation.T).applyfunc(sp.expand)
    return r_new_mk - R * sp.Matrix(new_mk.position), R, None


class _Tree:
    """The spanning tree as parent links, for poses relative to a body.

    A loop whose joints all hang below a moving body A (a suspension below a
    chassis) closes in A's frame: its closure equations written there contain
    only the loop's own coordinates, not A's pose (a chassis' six free-joint
    coordinates would otherwise enter every row, and with them products of
    its rotation and the loop's — a basis that is not the loop's own)."""

    def __init__(self, system, tree):
        self.ground = system.ground.name
        self.up = {}           # body -> (joint, reversed) placing it
        for j, reverse in tree:
            self.up[(j.parent if reverse else j.child).body.name] = (j, reverse)

    def parent(self, body):
        j, reverse = self.up[body]
        return (j.child if reverse else j.parent).body.name

    def path(self, body):
        """Bodies from ``body`` up to ground, both included."""
        out = [body]
        while out[-1] != self.ground:
            out.append(self.parent(out[-1]))
        return out

    def common_ancestor(self, a, b):
        above_a = set(self.path(a))
        return next(x for x in self.path(b) if x in above_a)

    def relative_pose(self, body, frame, cache):
        """(r, R) of ``body`` in the frame of the body ``frame``, composed
        along the tree path between them: down from an ancestor as the world
        poses are, and up a joint (traversed the other way) where ``body``
        is above ``frame`` or on another branch.  So a planar body's angle
        stays one sum of joint angles relative to ``frame``'s."""
        key = (body, frame)
        if key not in cache:
            if body == frame:
                cache[key] = _Pose(sp.zeros(3, 1), sp.eye(3), None, sp.Integer(0))
            else:
                above = self.path(frame)
                if body in above:
                    # placed from the body below it on frame's path
                    below = above[above.index(body) - 1]
                    j, reverse = self.up[below]
                    r, R, angle = _place(self.relative_pose(below, frame, cache), j, not reverse)
                else:
                    j, reverse = self.up[body]
                    r, R, angle = _place(self.relative_pose(self.parent(body), frame, cache), j, reverse)
                cache[key] = _Pose(r, R, None, angle)
        return cache[key]

    def depth(self, body):
        return len(self.path(body)) - 1


def _world_poses(system, m, tree):
    """Every body's pose in the world (``_Pose``), walking the spanning tree
    from the ground; a body's frame a planar or an oriented frame of ``m``."""
    N = m.world
    poses = {system.ground.name: _Pose(sp.zeros(3, 1), sp.eye(3), N, sp.Integer(0))}
    for j, reverse in tree:
        known_mk, new_mk = (j.child, j.parent) if reverse else (j.parent, j.child)
        kp = poses[known_mk.body.name]
        r, R, angle = _place(kp, j, reverse)
        name = new_mk.body.name
        if angle is not None:
            frame = m.planar_frame(name, angle) if angle != 0 else N
        else:
            f = _oriented(kp.frame, known_mk.rotation, f"{name}_at_{known_mk.name}")
            f = _joint_frame(f, j, [c.symbol for c in j.coordinates], reverse, f"{name}_joint")
            frame = _oriented(f, new_mk.rotation.T, name)
        poses[name] = _Pose(r, R, frame, angle)
    return poses
