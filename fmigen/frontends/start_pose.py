"""The FMU starts where the joint description says, or the build stops.

A joint description states its start: the joints' ``start`` values (exact
for independent coordinates, guesses for dependent ones), the front end's
own assembly for coordinates left at ``start=None``, and with branch hints
the hinted assembly (``Mechanism.described_start``).  The kinematics the
FMU runs are assembled by other code (the triangular sequence's root
choice, the all-assemblies solver), and a wrong branch there closes the
loops just as well: a tie rod on its mirror side passes every residual
test.  So after the assembly this module compares poses, not coordinates:

1. The described configuration q_d is projected onto the constraints by
   Gauss–Newton over the dependent coordinates (minimum-norm steps, the
   independent ones fixed): q_p, the closed configuration next to it on
   its branch.  Exact starts give q_p = q_d.  If the projection does not
   converge, the starts are far from any closure: an error.
2. Every marker of every body (body origins included) is placed from the
   joint description itself — the joint transforms composed numerically
   along the spanning tree, not the derived model's expressions — at q_p
   and at the FMU's start q_a.  Positions must agree to 1e-9 of the
   mechanism's size (the largest distance of a marker from the world
   origin at q_p), the marker axes to 1e-9.
3. Otherwise the build stops naming the joints whose coordinates differ,
   with the described and the assembled values.

Poses rather than coordinates, because coordinates can differ without the
mechanism differing: a spherical joint's 3-2-1 angles have two triples for
one orientation, angles are modulo 2π.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

from fmigen.model import ModelError

#: positions to this fraction of the mechanism's size, orientations (marker
#: axes, unit vectors) to this absolutely
POSE_TOL = 1e-9


class StartPoseError(ModelError):
    """The FMU's start is not the pose the joint description states."""


def _poses(system, tree, q: dict, params: dict) -> dict:
    """{body name: (R, r)} in the world frame at coordinate values ``q``,
    composed from the joint transforms along the tree (``joint_model``'s
    conventions: R_C = R_P R_J, r_C = r_P + R_P p_J)."""
    from fmigen.frontends.joint_poses import joint_transform

    def num(M):
        return np.array(sp.Matrix(M).xreplace(params).evalf(), dtype=float)

    poses = {system.ground.name: (np.eye(3), np.zeros(3))}
    for j, reverse in tree:
        RJ, pJ = joint_transform(j, [sp.Float(q[c.name], 30) for c in j.coordinates])
        RJ, pJ = num(RJ), num(pJ).ravel()
        known, new = (j.child, j.parent) if reverse else (j.parent, j.child)
        R0, r0 = poses[known.body.name]
        RMk = R0 @ num(known.rotation)
        rMk = r0 + R0 @ num(known.position).ravel()
        if not reverse:
            R_new_mk, r_new_mk = RMk @ RJ, rMk + RMk @ pJ
        else:
            R_new_mk = RMk @ RJ.T
            r_new_mk = rMk - R_new_mk @ pJ
        R = R_new_mk @ num(new.rotation).T
        poses[new.body.name] = (R, r_new_mk - R @ num(new.position).ravel())
    return poses


def _markers(system, poses, params):
    """[(label, R, r)] of every marker and body origin."""
    out = []
    for b in system.bodies.values():
        R, r = poses[b.name]
        out.append((f"{b.name} (origin)", R, r))
        for mk in b.markers.values():
            p = np.array(sp.Matrix(mk.position).xreplace(params).evalf(), dtype=float).ravel()
            Rm = np.array(sp.Matrix(mk.rotation).xreplace(params).evalf(), dtype=float)
            out.append((mk.label, R @ Rm, r + R @ p))
    return out


class _ClosureAtStart:
    """Φ(0, q) and Φ_q in the interface ``closure_rows._project`` takes."""

    def __init__(self, dae):
        self.numeric = dae.numeric

    def f(self, q):
        return self.numeric.Phi(0.0, q)

    def J(self, q):
        return self.numeric.Phi_q(0.0, q)


def _wrap(d, angle):
    return math.remainder(d, 2 * math.pi) if angle else d


def check_start_pose(mech, dae, independent: list[str], start: dict, log=None):
    """Raise ``StartPoseError`` unless ``start`` (the FMU's start, by
    coordinate name) places every marker of ``mech.joint_system`` where the
    described start does (module docstring).  Returns the largest position
    and orientation differences found (relative, absolute)."""
    system, described = mech.joint_system, mech.described_start
    if system is None or described is None or not mech.constraints:
        return None
    # here: a mechanism written without joints has no described pose, and
    # its build need not import the joint front end (and scipy with it)
    from fmigen.frontends.joint_tree import spanning_tree
    from fmigen.frontends.closure_rows import _project
    log = log or (lambda msg: None)
    names = dae.names
    units = {c.name: c.unit for c in mech.coordinates}
    scale = max([1.0] + [abs(float(p.value)) for p in mech.parameters if not p.tunable])
    q_d = np.array([described[n] for n in names], dtype=float)
    given = set(independent)
    free = [i for i, n in enumerate(names) if n not in given]
    # the front end's own projection: the same damped Gauss–Newton that left
    # the dependent starts at the projected start (joint_model)
    q_p, res = _project(_ClosureAtStart(dae), q_d, free)
    if not res <= 1e-10 * scale:
        raise StartPoseError(
            f"'{mech.name}': the described start is far from any closed configuration (closure residual "
            f"{res:.3g} after Gauss–Newton from the starts over the dependent coordinates); the assembly "
            f"started at {', '.join(f'{n}={start[n]:.6g}' for n in names if n not in given)}. Give "
            "starts (guesses) of the dependent coordinates near a closure on the wanted branch, or "
            "branch_hint")
    params = {p.symbol: sp.Float(float(p.value), 30) for p in mech.parameters}
    tree, _ = spanning_tree(system)
    described_markers = _markers(system, _poses(system, tree, dict(zip(names, q_p)), params), params)
    started_markers = _markers(system, _poses(system, tree, start, params), params)
    size = max(float(np.linalg.norm(r)) for _, _, r in described_markers) or 1.0
    dr = max(float(np.abs(a[2] - b[2]).max()) for a, b in zip(described_markers, started_markers)) / size
    dR = max(float(np.abs(a[1] - b[1]).max()) for a, b in zip(described_markers, started_markers))
    log(f"start pose: every marker within {dr:.2g} of the mechanism's size ({size:.3g}) and "
        f"{dR:.2g} in orientation of the described start"
        + ("" if res == 0 else f" projected onto the constraints (residual of the starts {res:.2g})"))
    if dr <= POSE_TOL and dR <= POSE_TOL:
        return dr, dR
    pairs = list(zip(described_markers, started_markers))
    worst = max(pairs, key=lambda ab: np.abs(ab[0][2] - ab[1][2]).max())
    turned = max(pairs, key=lambda ab: np.abs(ab[0][1] - ab[1][1]).max())
    joints = []
    for j in system.joints.values():
        diffs = [(c, described[c.name], q_p[names.index(c.name)], start[c.name]) for c in j.coordinates
                 if c.name in start]
        if any(abs(_wrap(a - s, units[c.name] == "rad")) > 1e-9 for c, _, a, s in diffs):
            joints.append((j, diffs))
    parts = []
    for j, diffs in joints:
        for c, d, p, s in diffs:
            unit = units[c.name]
            what = f"start {d:.6g} {unit}" + (f" (closed at {p:.6g})" if abs(p - d) > 1e-12 else "")
            mirror = " (the mirror branch)" if unit == "rad" and abs(abs(_wrap(s - p, True)) - math.pi) < 1e-6 \
                else ""
            if abs(_wrap(s - p, unit == "rad")) > 1e-9:
                parts.append(f"joint {j.name}: {c.name} {what} assembled at {s:.6g}{mirror}")
    raise StartPoseError(
        f"'{mech.name}': the assembly does not start where the joint description says: "
        + "; ".join(parts or ["(coordinates differ only through equivalent angles)"])
        + f". Marker {worst[0][0]} is {np.linalg.norm(worst[0][2] - worst[1][2]):.3g} from its described "
        f"place ({dr:.2g} of the mechanism's size {size:.3g}), marker {turned[0][0]}'s axes "
        f"{dR:.2g} off (tolerance {POSE_TOL:g} each). Give branch_hint or fix the starts (guesses) of the "
        "dependent coordinates")
