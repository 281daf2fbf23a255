"""A second, independent reference: the joint description in absolute coordinates.

``reference.py`` integrates the M, F, Φ_q and γ the model stage derived, so
an error in the equations of motion (an inertia, a force sign, a Coriolis
term) is in the FMU *and* in that reference, and validation passes.  This
module shares no equation with the model stage: it reads only the joint
description (``joints.py``; from ``model.py`` it takes nothing but
``ModelError`` and the time symbol) and writes its own equations,
Haug/Nikravesh style, in absolute coordinates:

* every body (ground excluded) has its centre of mass x (world) and a unit
  quaternion p; its velocity is ẋ (world) and its angular velocity ω' (body
  frame).  R(p) is computed from p/|p|, so the rotation is exact whatever the
  norm; the norm itself is held at 1 by a stabilizing term in ṗ (it only
  keeps p well scaled, it has no physical effect);
* Newton–Euler per body: m ẍ = f,  I ω̇' + ω' × I ω' = τ';
* every joint, tree or not, is written as constraints between its two marker
  frames (coincident origins; the origin offset perpendicular to the axis for
  prismatic and cylindrical joints, its normal component for planar ones;
  axis alignment by dot products: two for revolute, cylindrical and planar,
  one for universal, three for prismatic and fixed, none for spherical and
  free), with the Jacobians and γ = −J̇v derived by hand from two primitives
  (a body-fixed point and a body-fixed vector, ``_point`` and ``_vector``);
* loads from the description: gravity, generalized joint forces and
  rotational spring-dampers (mapped to a wrench pair through the joint's
  motion subspace), linear spring-dampers and marker forces with their
  reactions.  Load expressions are lambdified from the user's sympy
  expressions; the joint coordinates and velocities they use are recovered
  from the marker frames (inverse joint kinematics, ``joint_coordinates``).

Redundant constraints — a planar mechanism written in 3D has rank-deficient
Φ_q (the four-bar: 20 rows, rank 17) — are removed at every evaluation by
the SVD of J: the rank-r rows Vᵣᵀ v̇ = Sᵣ⁻¹ Uᵣᵀ γ̃ (the rows' minimum-norm
solution) replace J v̇ = γ̃, and the augmented system [[M, Vᵣ], [Vᵣᵀ, 0]]
[v̇; λ] = [f; ·] is square.  The accelerations are unique whenever M is
positive definite on the motions the joints allow (checked at the start,
``check_mass``); only λ is not, and any λ of a consistent redundant set gives
the same Jᵀλ.  So no row selection has to be made at the start that could
become singular later (an overconstrained Bennett loop's rows change rank
along its motion), and a body may have zero inertia about an axis its
joints hold (a planar link).

With λ eliminated the equations are an ODE in (x, p, ẋ, ω'), integrated by
SUNDIALS CVODE (scikit-sundae, the same library as ``reference.py``'s IDA;
an ODE needs no algebraic variables) with Baumgarte stabilization
γ̃ = γ − 2a J v − a² Φ.  The reported states are projected onto Φ = 0 and
J v = 0 at every output point (Gauss–Newton, minimum norm); the projection
only cleans the output, the integration continues from its own state.

Start: all joint coordinates at t = 0 (e.g. the FMU's assembled start) place
the bodies by this module's own forward kinematics along its own spanning
tree; Newton then puts the poses on *all* constraints holding the
independent joint coordinates.  The start velocity holds the independent
joint velocities at their start values and solves the velocity constraints
for the rest (as the FMU does).

Besides the angles and translations of every joint, the state carries one
"winding" angle per angle coordinate, integrated from the joint velocity: it
only picks the 2π branch of the atan2 that recovers the angle from the
marker frames, so that a load like k (q − q₀) sees the continuous angle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sksundae.cvode import CVODE

from fmigen.joints import JointSystem
from fmigen.model import ModelError, t as T_SYM
from fmigen.verify.cartesian_solve import (AccelerationSolver, body_columns, joint_rows_matrix, newton_matrix,
                                           svd_rows)
from fmigen.verify.energy import energy_drift, work_integral
from fmigen.verify.prescribed import CartesianDrives
from fmigen.verify.rigid_motion import (EX, EY, EZ, _perpendicular_pair, cross, inverse_joint,
                                        motion_subspace, quat_times_rotvec, quat_to_rot, rot, rot_to_quat,
                                        skew)
from fmigen.verify.trims import cartesian_trims

TWO_PI = 2 * math.pi


class CartesianError(RuntimeError):
    pass


# --- joint kinematics (the conventions of joints.py) --------------------------

def joint_transform(kind, a, b, q):
    """(R_J(q), p_J(q)) in the parent marker's frame, per the table in joints.py."""
    if kind == "revolute":
        return rot(a, q[0]), np.zeros(3)
    if kind == "prismatic":
        return np.eye(3), q[0] * a
    if kind == "cylindrical":
        return rot(a, q[0]), q[1] * a
    if kind == "universal":
        return rot(a, q[0]) @ rot(b, q[1]), np.zeros(3)
    if kind == "spherical":
        return rot(EZ, q[0]) @ rot(EY, q[1]) @ rot(EX, q[2]), np.zeros(3)
    if kind == "planar":
        return rot(EZ, q[2]), np.array([q[0], q[1], 0.0])
    if kind == "free":
        return rot(EZ, q[5]) @ rot(EY, q[4]) @ rot(EX, q[3]), np.array(q[:3], dtype=float)
    if kind == "fixed":
        return np.eye(3), np.zeros(3)
    raise CartesianError(f"unknown joint kind '{kind}'")


# --- the numeric description ------------------------------------------------

@dataclass
class _Marker:
    body: int                # index into the moving bodies, -1 for ground
    p: np.ndarray            # position in the body frame
    R: np.ndarray            # axes in the body frame
    label: str


@dataclass
class _Joint:
    name: str
    kind: str
    parent: _Marker
    child: _Marker
    a: np.ndarray
    b: np.ndarray | None
    u1: np.ndarray
    u2: np.ndarray
    names: list[str]
    angle: list[bool]
    first: int               # index of its first coordinate in the system's list


class _Vec:
    """A world vector on the bodies' motion: value, Jacobian w.r.t. the
    velocity vector V (3 x 6N), rate = J V, and the part of its second
    derivative that does not depend on the accelerations."""
    __slots__ = ("val", "J", "rate", "quad")

    def __init__(self, val, J, rate, quad):
        self.val, self.J, self.rate, self.quad = val, J, rate, quad

    def __sub__(self, o):
        return _Vec(self.val - o.val, self.J - o.J, self.rate - o.rate, self.quad - o.quad)


def _dot(A: _Vec, B: _Vec):
    """(value, Jacobian row, quadratic term) of A·B: d²/dt²(A·B) = row·V̇ + quad."""
    return (A.val @ B.val, B.val @ A.J + A.val @ B.J,
            A.quad @ B.val + 2 * A.rate @ B.rate + A.val @ B.quad)


@dataclass
class CartesianSolution:
    t: np.ndarray
    names: list[str]                 # every joint coordinate, joint order
    q: np.ndarray                    # (len(t), k), angles continuous (unwrapped)
    v: np.ndarray                    # joint velocities
    angle: list[bool]
    kinetic: np.ndarray              # T
    potential: np.ndarray            # V of gravity
    work: np.ndarray                 # ∫ P_in dt of every other load
    max_constraint_residual: float   # |Φ| of the integrated state before projection
    rtol: float
    evaluations: int = 0
    trims: dict | None = None        # the trimmed springs' preloads (``solve_trims``)

    @property
    def energy(self):
        return self.kinetic + self.potential

    @property
    def energy_drift(self) -> float:
        return energy_drift(self.kinetic, self.potential, self.work)

    def column(self, name):
        return self.q[:, self.names.index(name)]


class CartesianModel:
    """The joint description as numeric absolute-coordinate equations.

    ``inputs``: name -> constant or callable(t); missing inputs stay at their
    start values.  ``parameters``: name -> value overrides."""

    def __init__(self, system: JointSystem, parameters: dict | None = None, inputs: dict | None = None,
                 baumgarte=10.0):
        self.system = system
        self.baumgarte = baumgarte
        pvals = {p.name: float(p.value) for p in system.parameters}
        for k, v in (parameters or {}).items():
            if k not in pvals:
                raise ModelError(f"'{system.name}' has no parameter '{k}'")
            pvals[k] = float(v)
        self.param_values = [pvals[p.name] for p in system.parameters]
        # sympy numbers: xreplace returns a value as given where it replaces the whole expression
        self.param_subs = {p.symbol: sp.Float(pvals[p.name]) for p in system.parameters}
        inputs = inputs or {}
        unknown = set(inputs) - {i.name for i in system.inputs}
        if unknown:
            raise ModelError(f"'{system.name}' has no inputs {sorted(unknown)}")
        self.input_fns = [(lambda tt, v=inputs.get(i.name, i.start): float(v)) if not callable(inputs.get(i.name))
                          else inputs[i.name] for i in system.inputs]

        self.body_names = [n for n in system.bodies if n != "ground"]
        self.N = len(self.body_names)
        index = {n: k for k, n in enumerate(self.body_names)}
        index["ground"] = -1
        self.mass = np.zeros(self.N)
        self.inertia = np.zeros((self.N, 3, 3))
        self.com = np.zeros((self.N, 3))
        for k, n in enumerate(self.body_names):
            b = system.bodies[n]
            self.mass[k] = self._num(b.mass, f"mass of '{n}'")
            self.inertia[k] = np.array(b.inertia.xreplace(self.param_subs), dtype=float)
            self.com[k] = [self._num(c, f"com of '{n}'") for c in b.com]
        # M is block diagonal; it may be singular (a slender rod with no
        # inertia about its axis) as long as the joints hold that motion,
        # which ``check_mass`` verifies at the start
        self.M = np.zeros((6 * self.N, 6 * self.N))
        for k in range(self.N):
            self.M[6 * k:6 * k + 3, 6 * k:6 * k + 3] = self.mass[k] * np.eye(3)
            self.M[6 * k + 3:6 * k + 6, 6 * k + 3:6 * k + 6] = self.inertia[k]
        self.Minv = np.linalg.pinv(self.M)
        self.solver = AccelerationSolver(self.M)
        self._markers = {}

        def marker(mk):
            key = id(mk)
            if key not in self._markers:
                self._markers[key] = _Marker(index[mk.body.name],
                                             np.array([self._num(e, mk.label) for e in mk.position]),
                                             np.array(mk.rotation.xreplace(self.param_subs), dtype=float), mk.label)
            return self._markers[key]

        self.marker = marker
        self.joints: list[_Joint] = []
        first = 0
        for j in system.joints.values():
            a = np.array([float(e) for e in j.axis])
            b = None if j.axis2 is None else np.array([float(e) for e in j.axis2])
            u1, u2 = _perpendicular_pair(a)
            self.joints.append(_Joint(j.name, j.kind, marker(j.parent), marker(j.child), a, b, u1, u2,
                                      [c.name for c in j.coordinates], [c.angle for c in j.coordinates], first))
            first += len(j.coordinates)
        #: per joint, the columns of V its parent's and child's velocities
        #: take (−1 for ground): the 12 of ``_point``'s and ``_vector``'s slots
        self._joint_columns = {j.name: np.r_[body_columns(j.parent.body), body_columns(j.child.body)]
                               for j in self.joints}
        self.coord_names = [nm for j in self.joints for nm in j.names]
        self.is_angle = np.array([an for j in self.joints for an in j.angle], dtype=bool)
        self.angle_index = np.flatnonzero(self.is_angle)
        self.gravity = np.array([self._num(g, "gravity") for g in system.gravity], dtype=float)
        self._build_loads()
        #: the trimmed springs' preloads (``solve_trims``), by spring name
        self.trim_preloads = {}
        self._pinv_cache = {}
        self.evaluations = 0
        # prescribed coordinates: their drives are unknowns of ``accelerations``
        self.drives = CartesianDrives(self) if system.prescribed else None

    def _num(self, expr, what):
        val = sp.sympify(expr).xreplace(self.param_subs)
        if val.free_symbols:
            raise ModelError(f"{what} of '{self.system.name}' uses {sorted(map(str, val.free_symbols))}: "
                             "body and marker data may only use parameters")
        return float(val)

    # --- load expressions ----------------------------------------------------
    def _build_loads(self):
        s = self.system
        coords = s.coordinates
        qs = [sp.Symbol(f"q_{c.name}", real=True) for c in coords]
        vs = [sp.Symbol(f"v_{c.name}", real=True) for c in coords]
        to_plain = {c.symbol.diff(T_SYM): v for c, v in zip(coords, vs)}
        to_plain_q = {c.symbol: q for c, q in zip(coords, qs)}
        known = set(qs) | set(vs) | {T_SYM} | {i.symbol for i in s.inputs} | {p.symbol for p in s.parameters}

        def plain(expr, what):
            e = sp.sympify(expr).xreplace(to_plain).xreplace(to_plain_q)
            stray = e.free_symbols - known
            if stray or e.atoms(sp.Derivative):
                raise ModelError(f"{what} in '{s.name}' uses {sorted(map(str, stray)) or 'a derivative'} "
                                 "that is not a joint coordinate, its velocity, t, an input or a parameter")
            return e

        exprs = []
        self._joint_loads = []
        for jl in s.joint_loads:
            self._joint_loads.append(self.coord_names.index(jl.coordinate.name))
            exprs.append(plain(jl.expr, f"joint force on '{jl.coordinate.name}'"))
        self._rot_springs = []
        for rs in s.rotational_springs:
            k = self.coord_names.index(rs.coordinate.name)
            self._rot_springs.append(k)
            q, v = qs[k], vs[k]
            exprs.append(plain(-(rs.preload + rs.stiffness * (q - rs.free_angle) + rs.damping * v),
                               f"rotational spring-damper '{rs.name}'"))
        self._rot_spring_names = [rs.name for rs in s.rotational_springs]
        self._springs = []
        self._spring_names = [sd.name for sd in s.springs]
        for sd in s.springs:
            self._springs.append((self.marker(sd.a), self.marker(sd.b)))
            exprs += [plain(e, f"spring-damper '{sd.name}'")
                      for e in (sd.stiffness, sd.damping, sd.free_length, sd.preload)]
        self._forces = []
        for f in s.forces:
            self._forces.append((self.marker(f.at), None if f.reaction is None else self.marker(f.reaction)))
            exprs += [plain(e, f"force '{f.name}'") for e in (*f.force, *f.torque)]
        args = [T_SYM, *qs, *vs, *[i.symbol for i in s.inputs], *[p.symbol for p in s.parameters]]
        fn = sp.lambdify(args, exprs, "numpy", cse=True) if exprs else None
        self._load_fn = (lambda *a: np.array(fn(*a), dtype=float)) if fn else (lambda *a: np.zeros(0))

    # --- primitives ------------------------------------------------------------
    def _point(self, X, R, V, b, s_frame, slot=None):
        """A point fixed on body b, s_frame in the body frame (from its origin).
        ``slot``: the Jacobian over one joint's two bodies only (``_joint_columns``),
        b's block at columns 6·slot, instead of over every body's velocity."""
        n6, c = (6 * self.N, 6 * b) if slot is None else (12, 6 * slot)
        if b < 0:
            z = np.zeros(3)
            return _Vec(np.asarray(s_frame, dtype=float), np.zeros((3, n6)), z, z)
        s = s_frame - self.com[b]
        Rb, om = R[b], V[6 * b + 3:6 * b + 6]
        J = np.zeros((3, n6))
        J[:, c:c + 3] = np.eye(3)
        J[:, c + 3:c + 6] = -Rb @ skew(s)
        return _Vec(X[b] + Rb @ s, J, V[6 * b:6 * b + 3] + Rb @ cross(om, s),
                    Rb @ cross(om, cross(om, s)))

    def _vector(self, R, V, b, u, slot=None):
        n6, c = (6 * self.N, 6 * b) if slot is None else (12, 6 * slot)
        if b < 0:
            z = np.zeros(3)
            return _Vec(np.asarray(u, dtype=float), np.zeros((3, n6)), z, z)
        Rb, om = R[b], V[6 * b + 3:6 * b + 6]
        J = np.zeros((3, n6))
        J[:, c + 3:c + 6] = -Rb @ skew(u)
        return _Vec(Rb @ u, J, Rb @ cross(om, u), Rb @ cross(om, cross(om, u)))

    def _frame(self, X, R, mk: _Marker):
        """World origin and axes of a marker."""
        if mk.body < 0:
            return mk.p.copy(), mk.R.copy()
        Rb = R[mk.body]
        return X[mk.body] + Rb @ (mk.p - self.com[mk.body]), Rb @ mk.R

    # --- constraints ---------------------------------------------------------
    def constraints(self, X, R, V, sparse=False):
        """Φ, J = Φ_x (w.r.t. V), γ = −J̇V, one block per joint; J dense, or
        a scipy CSR matrix with ``sparse`` (each row touches two bodies)."""
        rows, cols = [], []
        for j in self.joints:
            P, C = j.parent, j.child
            # the rows' Jacobians over the joint's two bodies (parent slot 0,
            # child slot 1), scattered into J's columns below
            rP = self._point(X, R, V, P.body, P.p, 0)
            rC = self._point(X, R, V, C.body, C.p, 1)

            def pv(u):   # a direction given in the parent marker's frame
                return self._vector(R, V, P.body, P.R @ u, 0)

            def cv(u):
                return self._vector(R, V, C.body, C.R @ u, 1)

            kind = j.kind
            if kind in ("revolute", "universal", "spherical", "fixed"):
                d = rC - rP
                rows += [(d.val[k], d.J[k], d.quad[k]) for k in range(3)]
            if kind in ("prismatic", "cylindrical"):
                d = rC - rP
                rows += [_dot(pv(j.u1), d), _dot(pv(j.u2), d)]
            if kind == "planar":
                rows.append(_dot(pv(EZ), rC - rP))
            if kind in ("revolute", "cylindrical", "prismatic", "fixed"):
                ca = cv(j.a)
                rows += [_dot(pv(j.u1), ca), _dot(pv(j.u2), ca)]
            if kind in ("prismatic", "fixed"):
                rows.append(_dot(pv(j.u1), cv(j.u2)))
            if kind == "planar":
                cz = cv(EZ)
                rows += [_dot(pv(EX), cz), _dot(pv(EY), cz)]
            if kind == "universal":
                rows.append(_dot(pv(j.a), cv(j.b)))
            cols += [self._joint_columns[j.name]] * (len(rows) - len(cols))
        return joint_rows_matrix(rows, cols, 6 * self.N, sparse)

    # --- joint coordinates from the marker frames -------------------------------
    def relative_twist_map(self, X, R, j: _Joint, local=False):
        """G (6 x 6N): the child marker's twist relative to the parent body,
        in the parent marker's frame, as G V; ``local``: G (6 x 12) over the
        joint's two bodies only (``_joint_columns``)."""
        n6 = 12 if local else 6 * self.N
        # _frame's parent axes and child origin, without the two it would
        # also compute and this map does not use
        P, C = j.parent, j.child
        AP = P.R if P.body < 0 else R[P.body] @ P.R
        rC = C.p if C.body < 0 else X[C.body] + R[C.body] @ (C.p - self.com[C.body])
        G = np.zeros((6, n6))
        for b, sign, slot in ((j.child.body, 1.0, 1), (j.parent.body, -1.0, 0)):
            if b < 0:
                continue
            c = 6 * slot if local else 6 * b
            s = R[b].T @ (rC - X[b])      # the point at r_C, on body b, from its com
            G[:3, c:c + 3] += sign * AP.T
            G[:3, c + 3:c + 6] += sign * (-AP.T @ R[b] @ skew(s))
            G[3:, c + 3:c + 6] += sign * AP.T @ R[b]
        return G

    def joint_coordinates(self, X, R, wind=None):
        """Every joint coordinate from the marker frames; angles taken on the
        2π branch nearest ``wind`` (per angle coordinate) when given."""
        q = np.zeros(len(self.coord_names))
        for j in self.joints:
            rP, AP = self._frame(X, R, j.parent)
            rC, AC = self._frame(X, R, j.child)
            q[j.first:j.first + len(j.names)] = inverse_joint(j.kind, j.a, j.b, j.u1, j.u2,
                                                              AP.T @ AC, AP.T @ (rC - rP))
        return q if wind is None else self._on_branch(q, wind)

    def _on_branch(self, q, wind):
        """``q`` with its angles moved by 2π to the branch nearest ``wind``."""
        q = q.copy()
        qa = q[self.angle_index]
        q[self.angle_index] = qa + TWO_PI * np.round((wind - qa) / TWO_PI)
        return q

    def joint_velocity_maps(self, X, R, q, maps=None):
        """D (k x 6N) with q̇ = D V: S(q)⁺ G per joint (``maps``: G of some
        joints at these poses, by name, already computed)."""
        D = np.zeros((len(self.coord_names), 6 * self.N))
        for j in self.joints:
            k = len(j.names)
            if not k:
                continue
            if maps and j.name in maps:
                D[j.first:j.first + k] = self._subspace_pinv(j, q[j.first:j.first + k]) @ maps[j.name]
                continue
            cols = self._joint_columns[j.name]
            block = self._subspace_pinv(j, q[j.first:j.first + k]) @ self.relative_twist_map(X, R, j, local=True)
            D[j.first:j.first + k, cols[cols >= 0]] = block[:, cols >= 0]
        return D

    def _subspace_pinv(self, j: _Joint, q):
        """S(q)⁺ = (SᵀS)⁻¹Sᵀ; constant for the joints whose S is (cached)."""
        if j.kind in ("revolute", "prismatic", "cylindrical", "planar"):
            cached = self._pinv_cache.get(j.name)
            if cached is None:
                S = motion_subspace(j.kind, j.a, j.b, q)
                cached = self._pinv_cache[j.name] = np.linalg.solve(S.T @ S, S.T)
            return cached
        S = motion_subspace(j.kind, j.a, j.b, q)
        return np.linalg.solve(S.T @ S, S.T)

    # --- loads ------------------------------------------------------------------
    def _apply(self, Q, X, R, b, f, at, tau=None):
        """Add a force f (world) at the world point ``at`` and a torque (world) to body b."""
        if b < 0:
            return
        s = R[b].T @ (at - X[b])
        Q[6 * b:6 * b + 3] += f
        Q[6 * b + 3:6 * b + 6] += cross(s, R[b].T @ f)
        if tau is not None:
            Q[6 * b + 3:6 * b + 6] += R[b].T @ tau

    def loads(self, tt, X, R, V, q, qd, D):
        """(f, P_in): the generalized force of every load but gravity and the
        gyroscopic terms on V, and its power."""
        Q = np.zeros(6 * self.N)
        vals = self._load_fn(tt, *q, *qd, *[f(tt) for f in self.input_fns], *self.param_values)
        k = 0
        gen = np.zeros(len(self.coord_names))
        for ci in self._joint_loads:
            gen[ci] += vals[k]
            k += 1
        for ci, name in zip(self._rot_springs, self._rot_spring_names):
            gen[ci] += vals[k] - self.trim_preloads.get(name, 0.0)
            k += 1
        Q += D.T @ gen        # the wrench pair S(SᵀS)⁻¹Q on child and parent
        for (a, b), name in zip(self._springs, self._spring_names):
            stiff, damp, free, pre = vals[k:k + 4]
            pre += self.trim_preloads.get(name, 0.0)
            k += 4
            pa = self._point(X, R, V, a.body, a.p)
            pb = self._point(X, R, V, b.body, b.p)
            d = pb.val - pa.val
            L = np.linalg.norm(d)
            if L == 0:
                raise CartesianError("a spring-damper's markers coincide: its direction is undefined")
            e = d / L
            tension = pre + stiff * (L - free) + damp * (e @ (pb.rate - pa.rate))
            self._apply(Q, X, R, a.body, tension * e, pa.val)
            self._apply(Q, X, R, b.body, -tension * e, pb.val)
        for at, reaction in self._forces:
            f, tau = vals[k:k + 3], vals[k + 3:k + 6]
            k += 6
            r, _ = self._frame(X, R, at)
            self._apply(Q, X, R, at.body, f, r, tau)
            if reaction is not None:
                self._apply(Q, X, R, reaction.body, -f, r, -tau)
        return Q, float(Q @ V)

    # --- state --------------------------------------------------------------
    def energy(self, X, V):
        """(T, V_gravity) from the body masses, inertias and twists."""
        v = V.reshape(self.N, 6)
        T = 0.5 * (self.mass @ (v[:, :3] ** 2).sum(1)
                   + np.einsum("bi,bij,bj->", v[:, 3:], self.inertia, v[:, 3:]))
        return float(T), -float(self.mass @ (X @ self.gravity))

    def body_forces(self, tt, X, R, V, wind):
        """(Q, q, q̇, D, P_in): every body's applied wrench (loads, gravity and
        the gyroscopic term ω × Iω) at the state, with the joint coordinates,
        their rates, the joint velocity maps and the input power: what the
        accelerations and the joint reactions both balance against the
        constraint forces."""
        q = self.joint_coordinates(X, R, wind)
        D = self.joint_velocity_maps(X, R, q)
        qd = D @ V
        Q, P = self.loads(tt, X, R, V, q, qd, D)
        om = V.reshape(self.N, 6)[:, 3:]
        Qb = Q.reshape(self.N, 6)
        Qb[:, :3] += self.mass[:, None] * self.gravity
        Qb[:, 3:] -= np.cross(om, np.einsum("bij,bj->bi", self.inertia, om))
        return Q, q, qd, D, P

    def accelerations(self, tt, X, R, V, wind):
        """(V̇, q, q̇, P_in): Newton–Euler with the constraints' multipliers
        eliminated (``cartesian_solve``: the redundant rows out by the SVD
        of J, or the sparse system where J has full row rank)."""
        self.evaluations += 1
        Q, q, qd, D, P = self.body_forces(tt, X, R, V, wind)
        Phi, J, gamma = self.constraints(X, R, V, sparse=self.solver.sparse)
        if not len(Phi) and self.drives is None:
            return self.Minv @ Q, q, qd, P
        a = self.baumgarte
        rhs = gamma - 2 * a * (J @ V) - a * a * Phi
        # the filters' accelerations, the drives unknowns (prescribed.py); their power is an input's
        border = (Q, None, None, None) if self.drives is None else (Q, *self.drives.rows(tt, X, R, V, q, qd, D))
        acc, d = self.solver.solve(J, rhs, border)
        if d is not None:
            self.drives.last = d
            P += float(d @ qd[self.drives.index])
        return acc, q, qd, P

    #: closure rows per joint kind, in ``constraints``' order
    ROWS = {"revolute": 5, "universal": 4, "spherical": 3, "fixed": 6, "prismatic": 5, "cylindrical": 4,
            "planar": 3, "free": 0}

    def joint_reactions(self, tt, X, R, V, wind=None):
        """{joint name: (force, moment)}: the wrench the parent body exerts on
        the child body through each joint, about the child marker's origin,
        world axes, the loads on the joint's own coordinates included — from
        this module's own equations at the state (X, R, V): Newton–Euler per
        body with every joint as constraints, the multipliers of its rows
        λ = U_r S_r⁻¹ μ (the minimum-norm ones of ``accelerations``, without
        the stabilization, which vanishes on the constraints).  A check of
        the FMU's reactions (``JointSystem.reaction``) that shares none of
        their equations; where the rows are redundant (a planar loop in 3D)
        only the wrench components the loads determine are comparable."""
        N = self.N
        Q, q, qd, D, _ = self.body_forces(tt, X, R, V, wind)
        Phi, J, gamma = self.constraints(X, R, V)
        u, sv, vt, r = svd_rows(J)
        K = np.block([[self.M, vt[:r].T], [vt[:r], np.zeros((r, r))]])
        rhs = np.r_[Q, (u[:, :r].T @ gamma) / sv[:r]]
        sol = np.linalg.solve(K, rhs) if self.drives is None else self.drives.solve(tt, X, R, V, q, qd, D, K, rhs)[0]
        lam = u[:, :r] @ (sol[6 * N:6 * N + r] / sv[:r])
        # the generalized joint loads, as ``loads`` applies them
        vals = self._load_fn(tt, *q, *qd, *[f(tt) for f in self.input_fns], *self.param_values)
        gen = np.zeros(len(self.coord_names))
        for k, ci in enumerate(self._joint_loads + self._rot_springs):
            gen[ci] += vals[k]
        if self.drives is not None:   # a prescribed coordinate's joint carries its drive
            gen[self.drives.index] += self.drives.last
        out, row = {}, 0
        for j in self.joints:
            n = self.ROWS[j.kind]
            Qj = -J[row:row + n].T @ lam[row:row + n]
            row += n
            k = len(j.names)
            if k:
                Qj = Qj + D[j.first:j.first + k].T @ gen[j.first:j.first + k]
            rC, _ = self._frame(X, R, j.child)
            # on the child body, or the opposite of the parent's when the
            # child marker is on ground
            b, sign = (j.child.body, 1.0) if j.child.body >= 0 else (j.parent.body, -1.0)
            f = Qj[6 * b:6 * b + 3]
            mom = R[b] @ Qj[6 * b + 3:6 * b + 6] + cross(X[b] - rC, f)
            out[j.name] = (sign * f, sign * mom)
        return out

    # --- start -----------------------------------------------------------------
    def forward_kinematics(self, qvals: dict, prefer_known=True):
        """Body poses (X: com, R) from joint coordinates along a spanning tree
        from ground; joints whose coordinates are all in ``qvals`` come first."""
        X = np.full((self.N, 3), np.nan)
        R = np.zeros((self.N, 3, 3))
        placed = {-1}
        tree = []
        todo = sorted(self.joints, key=lambda j: not all(n in qvals for n in j.names))
        progress = True
        while progress and len(placed) < self.N + 1:
            progress = False
            for j in todo:
                if j in tree:
                    continue
                pb, cb = j.parent.body, j.child.body
                if (pb in placed) == (cb in placed):
                    continue
                missing = [n for n in j.names if n not in qvals]
                if missing:
                    raise CartesianError(f"joint '{j.name}' is needed to place a body but {missing} "
                                         "have no start value")
                RJ, pJ = joint_transform(j.kind, j.a, j.b, [qvals[n] for n in j.names])
                if pb in placed:
                    rP, AP = self._frame(X, R, j.parent)
                    AC, rC = AP @ RJ, rP + AP @ pJ
                    mk, b = j.child, cb
                    Rb = AC @ mk.R.T
                    origin = rC - Rb @ mk.p
                else:
                    rC, AC = self._frame(X, R, j.child)
                    AP = AC @ RJ.T
                    rP = rC - AP @ pJ
                    mk, b = j.parent, pb
                    Rb = AP @ mk.R.T
                    origin = rP - Rb @ mk.p
                R[b] = Rb
                X[b] = origin + Rb @ self.com[b]
                placed.add(b)
                tree.append(j)
                progress = True
                break
        if len(placed) < self.N + 1:
            lost = [self.body_names[b] for b in range(self.N) if b not in placed]
            raise CartesianError(f"bodies {lost} are not connected to ground by joints")
        return X, R, tree

    def tree_velocities(self, X, R, tree, qdvals: dict, q_all=None, maps=None):
        """Body velocities V from the tree joints' velocities (the tree from
        ``forward_kinematics``); ``q_all``: ``joint_coordinates(X, R)`` when
        the caller has it; ``maps``: a dict that receives the tree joints'
        G (``relative_twist_map``), for a ``joint_velocity_maps`` at the same poses."""
        V = np.zeros(6 * self.N)
        q_all = self.joint_coordinates(X, R) if q_all is None else q_all
        for j in tree:
            pb, cb = j.parent.body, j.child.body
            q = q_all[j.first:j.first + len(j.names)]
            twist = motion_subspace(j.kind, j.a, j.b, q) @ np.array([qdvals[n] for n in j.names])
            # G V = twist for this joint, with the known body's velocities set:
            G = self.relative_twist_map(X, R, j)
            if maps is not None:
                maps[j.name] = G
            b = cb if self._placed_before(tree, j, pb) else pb
            cols = slice(6 * b, 6 * b + 6)
            known = twist - G @ V + G[:, cols] @ V[cols]
            V[cols] = np.linalg.solve(G[:, cols], known)
        return V

    @staticmethod
    def _placed_before(tree, j, body):
        if body == -1:
            return True
        for k in tree[:tree.index(j)]:
            if body in (k.parent.body, k.child.body):
                return True
        return False

    # --- poses: update, assembly, projection ------------------------------------
    def _move(self, X, P, delta):
        """Poses moved by δ (6N): com by δx (world), orientation by the
        body-frame rotation vector δπ'."""
        d = delta.reshape(self.N, 6)
        X = X + d[:, :3]
        P = np.array([quat_times_rotvec(P[b], d[b, 3:]) for b in range(self.N)])
        return X, P, np.array([quat_to_rot(p) for p in P])

    def _wrap_rows(self, idx, res):
        ang = self.is_angle[idx]
        res[ang] = (res[ang] + math.pi) % TWO_PI - math.pi
        return res

    def assemble(self, X, P, hold: dict | None = None, tol=1e-13, max_iter=50):
        """Gauss–Newton (minimum-norm steps, so the redundant rows of a
        planar mechanism are harmless) onto Φ = 0 with the joint coordinates
        in ``hold`` (name -> value) held."""
        hold = hold or {}
        idx = [self.coord_names.index(n) for n in hold]
        target = np.array(list(hold.values()), dtype=float)
        R = np.array([quat_to_rot(p) for p in P])
        zero = np.zeros(6 * self.N)
        scale = max(1.0, np.abs(X).max())
        for _ in range(max_iter):
            Phi, J, _ = self.constraints(X, R, zero)
            res, rows = [Phi], [J]
            if idx:
                q = self.joint_coordinates(X, R)
                res.append(self._wrap_rows(idx, q[idx] - target))
                rows.append(self.joint_velocity_maps(X, R, q)[idx])
            res = np.concatenate(res)
            if not len(res) or np.abs(res).max() <= tol * scale:
                return X, P, R
            X, P, R = self._move(X, P, -np.linalg.lstsq(np.vstack(rows), res, rcond=1e-10)[0])
        raise CartesianError(f"the Cartesian reference could not put '{self.system.name}' on its constraints: "
                             f"residual {np.abs(res).max():.3g} after {max_iter} Newton steps")

    def start_velocity(self, X, R, qd_independent: dict):
        """V with J V = 0 and the independent joint velocities as given."""
        idx = [self.coord_names.index(n) for n in qd_independent]
        _, J, _ = self.constraints(X, R, np.zeros(6 * self.N))
        q = self.joint_coordinates(X, R)
        A = np.vstack([J, self.joint_velocity_maps(X, R, q)[idx]])
        b = np.r_[np.zeros(len(J)), list(qd_independent.values())]
        V, *_ = np.linalg.lstsq(A, b, rcond=1e-10)
        sv = np.linalg.svd(A, compute_uv=False)
        if sv.min() <= 1e-9 * sv.max() or np.abs(A @ V - b).max() > 1e-9 * max(1.0, np.abs(b).max()):
            raise CartesianError(f"the velocities of {list(qd_independent)} do not determine the motion of "
                                 f"'{self.system.name}' at the start (singular or inconsistent)")
        return V

    def solve_trims(self, tt, X, R, independent, wind=None):
        """The trimmed springs' preloads from this module's own equations at
        the rest pose (X, R) (``trims.cartesian_trims``), kept for ``loads``."""
        self.trim_preloads = cartesian_trims(self, tt, X, R, independent, wind, CartesianError)
        return self.trim_preloads

    def check_mass(self, X, R):
        """M must be positive definite on the null space of J (the motions
        the joints allow), or the accelerations are not determined."""
        _, J, _ = self.constraints(X, R, np.zeros(6 * self.N))
        if len(J):
            u, sv, vt = np.linalg.svd(J)
            rank = int((sv > 1e-10 * sv.max()).sum())
            Z = vt[rank:].T
        else:
            Z = np.eye(6 * self.N)
        if Z.shape[1] and np.linalg.eigvalsh(Z.T @ self.M @ Z).min() <= 1e-12 * max(1.0, np.abs(self.M).max()):
            raise CartesianError(f"'{self.system.name}' has a motion its joints allow that no mass or inertia "
                                 "resists (a massless body, or an inertia that is zero about a free axis): "
                                 "its accelerations are undetermined")

    def project(self, X, P, V):
        """The nearest state on Φ = 0, J V = 0 (minimum-norm corrections)."""
        X, P, R = self.assemble(X, P)
        _, J, _ = self.constraints(X, R, V)
        if len(J):
            V = V - np.linalg.lstsq(J, J @ V, rcond=1e-10)[0]
        return X, P, R, V

    # --- integration ----------------------------------------------------------
    def simulate(self, q_start: dict, qd_start: dict, independent: list[str], output_times,
                 rtol=1e-11, atol=None, method="Adams", max_num_steps=100000) -> CartesianSolution:
        """Integrate from the joint coordinates ``q_start`` (all tree joints
        needed; values for the others only pick nothing, they are recomputed)
        with the ``independent`` coordinates and their velocities
        (``qd_start``) held at the start."""
        missing = [n for n in independent if n not in self.coord_names]
        if missing:
            raise CartesianError(f"independent coordinates {missing} are not joint coordinates of "
                                 f"'{self.system.name}' (have {', '.join(self.coord_names)})")
        times = np.asarray(output_times, dtype=float)
        X, R, _ = self.forward_kinematics(q_start)
        P = np.array([rot_to_quat(r) for r in R])
        X, P, R = self.assemble(X, P, {n: q_start[n] for n in independent})
        V = self.start_velocity(X, R, {n: qd_start.get(n, 0.0) for n in independent})
        self.check_mass(X, R)
        self.solver.decide(self.constraints(X, R, V)[1])
        q0 = self.joint_coordinates(X, R)
        # angles on the branch of the given start (the FMU's), not atan2's
        wind0 = np.array([q0[i] + TWO_PI * round((q_start.get(self.coord_names[i], q0[i]) - q0[i]) / TWO_PI)
                          for i in self.angle_index])
        self.solve_trims(float(times[0]), X, R, independent, wind0)
        N, na = self.N, len(self.angle_index)
        sl = np.cumsum([0, 3 * N, 4 * N, 6 * N, na, 1])
        y0 = np.r_[X.ravel(), P.ravel(), V, wind0, 0.0]

        def unpack(y):
            Xy = y[sl[0]:sl[1]].reshape(N, 3)
            Py = y[sl[1]:sl[2]].reshape(N, 4)
            return Xy, Py, y[sl[2]:sl[3]], y[sl[3]:sl[4]], y[sl[4]]

        def rhs(tt, y, yp):
            Xy, Py, Vy, wind, _ = unpack(y)
            Ry = np.array([quat_to_rot(p) for p in Py])
            acc, _, qd, P_in = self.accelerations(tt, Xy, Ry, Vy, wind)
            om = Vy.reshape(N, 6)[:, 3:]
            pdot = np.empty((N, 4))
            pdot[:, 0] = -0.5 * np.einsum("bi,bi->b", Py[:, 1:], om)
            pdot[:, 1:] = 0.5 * (Py[:, :1] * om + np.cross(Py[:, 1:], om))
            # holds |p| = 1 against drift; R(p) does not depend on |p|
            pdot += 10.0 * (1 - np.einsum("bi,bi->b", Py, Py))[:, None] * Py
            yp[sl[0]:sl[1]] = Vy.reshape(N, 6)[:, :3].ravel()
            yp[sl[1]:sl[2]] = pdot.ravel()
            yp[sl[2]:sl[3]] = acc
            yp[sl[3]:sl[4]] = qd[self.angle_index]
            yp[sl[4]] = P_in

        atol = rtol if atol is None else atol
        self.evaluations = 0
        solver = CVODE(rhs, method=method, rtol=rtol, atol=atol, max_num_steps=max_num_steps,
                       **newton_matrix(method, len(y0)))
        res = solver.solve(times, y0)
        if not res.success:
            raise CartesianError(f"CVODE failed on the Cartesian reference of '{self.system.name}': {res.message}")
        Y = np.asarray(res.y)
        k = len(self.coord_names)
        qs, vs, W = np.zeros((len(times), k)), np.zeros((len(times), k)), Y[:, sl[4]]
        E = np.zeros((len(times), 2))
        worst = 0.0
        for i, y in enumerate(Y):
            Xy, Py, Vy, wind, _ = unpack(y)
            Ry = np.array([quat_to_rot(p) for p in Py])
            Phi, _, _ = self.constraints(Xy, Ry, Vy)
            worst = max(worst, float(np.abs(Phi).max()) if len(Phi) else 0.0)
            Xy, Py, Ry, Vy = self.project(Xy, Py, Vy)
            qs[i] = self.joint_coordinates(Xy, Ry, wind)
            vs[i] = self.joint_velocity_maps(Xy, Ry, qs[i]) @ Vy
            E[i] = self.energy(Xy, Vy)
        return CartesianSolution(times, list(self.coord_names), qs, vs, list(self.is_angle), E[:, 0], E[:, 1],
                                 W, worst, rtol, self.evaluations, dict(self.trim_preloads))

    # --- an external trajectory (the FMU's) ------------------------------------
    def energy_balance(self, times, q: dict, qd: dict, independent=None):
        """(T, V, W) along a trajectory given by joint coordinates and
        velocities per name (the FMU's): poses and twists by this module's
        forward kinematics along a tree of the given joints, T and V_gravity
        from the body masses and inertias, W = ∫ P_in dt by ``work_integral``.
        Trimmed springs work with the preloads ``solve_trims`` found (in
        ``simulate``), or solves at the first sample along ``independent``."""
        times = np.asarray(times, dtype=float)
        E, Pin = np.zeros((len(times), 2)), np.zeros(len(times))
        last = None
        for i, tt in enumerate(times):
            qi = {n: float(v[i]) for n, v in q.items()}
            X, R, tree = self.forward_kinematics(qi)
            q_plain, maps = self.joint_coordinates(X, R), {}
            V = self.tree_velocities(X, R, tree, {n: float(v[i]) for n, v in qd.items()}, q_plain, maps)
            # the given angles as they are; the others (cut joints) on the
            # branch nearest their previous sample, so they stay continuous
            last = q_plain[self.angle_index] if last is None else last
            wind = np.array([qi.get(self.coord_names[k], last[a]) for a, k in enumerate(self.angle_index)])
            qq = self._on_branch(q_plain, wind)
            last = qq[self.angle_index]
            if i == 0 and self.system.trims and not self.trim_preloads:
                if independent is None:
                    raise CartesianError(f"'{self.system.name}' has trims: the energy balance needs the "
                                         "independent coordinates to solve them")
                self.solve_trims(tt, X, R, independent, wind)
            D = self.joint_velocity_maps(X, R, qq, maps)
            _, Pin[i] = self.loads(tt, X, R, V, qq, D @ V, D)
            E[i] = self.energy(X, V)
        return E[:, 0], E[:, 1], work_integral(Pin, times)


def solve_cartesian(system: JointSystem, q_start: dict, qd_start: dict, independent: list[str], output_times,
                    rtol=1e-11, inputs=None, parameters=None, **kw) -> CartesianSolution:
    """Integrate ``system`` in absolute coordinates (see the module docstring)."""
    return CartesianModel(system, parameters=parameters, inputs=inputs).simulate(q_start, qd_start, independent, output_times,
                                                          rtol=rtol, **kw)
