"""Prescribed coordinates (``JointSystem.prescribe``) in the references.

A prescribed coordinate q_k follows its input u through the critically
damped filter q̈_k = ω²(u − q_k) − 2ω q̇_k (ω = 1/time_constant), and the
FMU applies the generalized force d_k on q_k — its output
``drive_<coordinate>`` — that gives exactly that acceleration (the runtime
evaluates its embedded accelerations at drive 0 and 1 and solves for it,
``fmigen_core.c``, ``prescribe``).  The references state the same physics
in their own equations, without the runtime's: the drive is one more
unknown of the equations of motion and the filter's acceleration one more
acceleration-level row, a known acceleration as a rheonomic constraint's
(so the DAE keeps its index):

    [[M, Jᵀ, −Bᵀ], [J, 0, 0], [A, 0, 0]] [a; μ; d] = [f; γ; ā − c]

J, γ: the reference's constraint rows; B (p × n): the generalized force of
a unit drive on each prescribed coordinate, in the reference's velocity
coordinates; A a + c = q̈_k: the prescribed coordinates' accelerations as
rows of the reference's accelerations a; ā: the filter's accelerations at
the state.  The system is regular when the prescribed coordinates are
independent ones (what ``prescribe`` requires): their rows A are then
independent of the constraints' J, and each drive acts on its own
coordinate.

* IDA (``reference.py``): a = q̈ of the model's coordinates, so A selects
  the prescribed ones and c = 0; B = ∂F/∂d from the DAE's F (affine in d:
  the drive is a joint force), compiled with the DAE's other functions
  (``reference.py``); the drives are algebraic unknowns of IDA like the
  multipliers (``DAEDrives``).
* Cartesian (``cartesian.py``): a = the bodies' V̇; q̈_k is written from the
  marker frames with the module's own primitives — a translation as the
  child origin's offset along the parent's axis, an angle as atan2 of two
  dot products of marker axes, differentiated twice (``CartesianDrives``);
  B = D_k, the joint velocity map's row, as the Cartesian loads apply a
  joint force.  Revolute, prismatic, cylindrical and planar joints.
"""

from __future__ import annotations

import numpy as np

from fmigen.model import ModelError
from fmigen.verify.rigid_motion import EX, EY

#: the joint kinds whose coordinates the Cartesian reference can prescribe
#: (``CartesianDrives._row``)
CARTESIAN_KINDS = ("revolute", "prismatic", "cylindrical", "planar")


def filter_acceleration(omega, u, q, v):
    """The prescription filter's q̈ = ω²(u − q) − 2ω q̇ (``model.Prescription``)."""
    return omega * omega * (u - q) - 2.0 * omega * v


def _dot(A, B):
    """(value, row, c) of A·B for two of ``cartesian``'s world vectors on
    the motion (value, Jacobian, rate, quadratic term): d²/dt²(A·B) = row·V̇
    + c by the product rule (``cartesian._dot``, which imports this module)."""
    return (A.val @ B.val, B.val @ A.J + A.val @ B.J, A.quad @ B.val + 2 * A.rate @ B.rate + A.val @ B.quad)


def solve_bordered(K, rhs, n, B, A, b):
    """Solve K x = rhs bordered by the drives (module docstring): K is the
    reference's square system whose first ``n`` unknowns are the
    accelerations; B, A (p × n); b (p).  Returns (x, d)."""
    N, p = len(K), len(A)
    Kd = np.zeros((N + p, N + p))
    Kd[:N, :N] = K
    Kd[:n, N:] = -np.asarray(B).T
    Kd[N:, :n] = A
    sol = np.linalg.solve(Kd, np.r_[rhs, b])
    return sol[:N], sol[N:]


def _demand(name, inputs, demands):
    """The demand u(t) of a prescription: the callable in ``demands`` (an
    input signal), else the input's start value."""
    fn = (demands or {}).get(name)
    if fn is not None:
        return lambda tt: float(np.asarray(fn(tt), dtype=float))
    start = next(i.start for i in inputs if i.name == name)
    return lambda tt: float(start)


class DAEDrives:
    """The prescriptions of a DAE's mechanism for the IDA reference:
    coordinate indices, ω, the demands u(t) (``demands``: {input name:
    f(t)}, else the input's start), the drives' input ``symbols`` and
    B = (∂F/∂d)ᵀ as expressions, which the reference compiles with the
    DAE's other functions (``reference.CompiledDAE``)."""

    def __init__(self, dae, demands=None):
        mech = dae.mechanism
        pr = mech.prescribed
        self.names = [p.coordinate for p in pr]
        self.drive_names = [p.drive for p in pr]
        self.index = [dae.names.index(p.coordinate) for p in pr]
        self.omega = np.array([1.0 / float(p.time_constant) for p in pr])
        self.demand = [_demand(p.input, mech.inputs, demands) for p in pr]
        by_name = {i.name: i.symbol for i in mech.inputs}
        self.symbols = [by_name[p.drive] for p in pr]
        #: (∂F/∂d)ᵀ, p × n: the generalized force of a unit drive
        self.B = dae.F.jacobian(self.symbols).T
        if self.B.free_symbols & set(self.symbols):
            # a drive is a joint force (``prescribe``): F is affine in it
            raise ModelError(f"'{mech.name}': the equations of motion are not affine in the drives "
                             f"{', '.join(self.drive_names)}")
        self.p = len(pr)
        self.A = np.zeros((self.p, dae.n))
        self.A[np.arange(self.p), self.index] = 1.0

    def target(self, tt, q, v):
        u = np.array([f(tt) for f in self.demand])
        return filter_acceleration(self.omega, u, q[self.index], v[self.index])


class CartesianDrives:
    """The prescriptions of a ``CartesianModel``'s joint description: the
    joint and coordinate of each, ω, and the demand from the model's inputs
    (``model.input_fns``: a signal or the start)."""

    def __init__(self, model):
        system = model.system
        self.model = model
        self.joints, self.offset = [], []
        for p in system.prescribed:
            j = next(j for j in model.joints if p.coordinate in j.names)
            if j.kind not in CARTESIAN_KINDS:
                raise ModelError(f"the Cartesian reference drives prescribed coordinates of "
                                 f"{', '.join(CARTESIAN_KINDS)} joints; '{p.coordinate}' is of the "
                                 f"{j.kind} joint '{j.name}'")
            self.joints.append(j)
            self.offset.append(j.names.index(p.coordinate))
        inputs = [i.name for i in system.inputs]
        self.index = [model.coord_names.index(p.coordinate) for p in system.prescribed]
        self.omega = np.array([1.0 / float(p.time_constant) for p in system.prescribed])
        self.demand = [model.input_fns[inputs.index(p.input)] for p in system.prescribed]
        #: the drives of the last ``solve`` (the state the model last evaluated)
        self.last = np.zeros(len(self.index))

    def _row(self, X, R, V, j, i):
        """(row, c) with q̈ = row · V̇ + c for coordinate ``i`` of joint ``j``
        (``joint_transform``'s conventions): a translation is the child
        origin's offset along a parent marker axis; an angle θ about the
        joint axis has cos θ = (A_P u1)·(A_C u1), sin θ = (A_P u2)·(A_C u1),
        and with f = cos θ (sin θ)˙ − sin θ (cos θ)˙, g = cos² + sin² (1 on
        the constraints, kept exact off them) θ̇ = f/g and
        θ̈ = (cos θ (sin θ)¨ − sin θ (cos θ)¨)/g − f ġ/g²."""
        m, P, C = self.model, j.parent, j.child

        def pv(u):
            return m._vector(R, V, P.body, P.R @ u)

        def cv(u):
            return m._vector(R, V, C.body, C.R @ u)

        axis = {("prismatic", 0): j.a, ("cylindrical", 1): j.a, ("planar", 0): EX, ("planar", 1): EY}.get((j.kind, i))
        if axis is not None:
            d = m._point(X, R, V, C.body, C.p) - m._point(X, R, V, P.body, P.p)
            _, row, c = _dot(pv(axis), d)
            return row, c
        u1, u2 = (EX, EY) if j.kind == "planar" else (j.u1, j.u2)
        cu = cv(u1)
        co, rc, qc = _dot(pv(u1), cu)
        si, rs, qs = _dot(pv(u2), cu)
        g = co * co + si * si
        cd, sd = rc @ V, rs @ V
        f, gd = co * sd - si * cd, 2 * (co * cd + si * sd)
        return (co * rs - si * rc) / g, (co * qs - si * qc) / g - f * gd / (g * g)

    def rows(self, tt, X, R, V, q, qd, D):
        """(B, A, b) of the border (module docstring) at the state."""
        rows = [self._row(X, R, V, j, i) for j, i in zip(self.joints, self.offset)]
        A = np.array([r[0] for r in rows])
        u = np.array([f(tt) for f in self.demand])
        b = filter_acceleration(self.omega, u, q[self.index], qd[self.index]) - np.array([r[1] for r in rows])
        return D[self.index], A, b

    def solve(self, tt, X, R, V, q, qd, D, K, rhs):
        """``K`` x = ``rhs`` (the model's accelerations and multipliers)
        bordered by the drives; returns (x, d) and keeps d in ``last``."""
        x, self.last = solve_bordered(K, rhs, len(V), *self.rows(tt, X, R, V, q, qd, D))
        return x, self.last


def cartesian_drives_along(model, times, q: dict, qd: dict):
    """{coordinate: drive} of the Cartesian model along a trajectory given
    by joint coordinates and velocities per name (a Cartesian solution's,
    or a model's, which lacks its cut joints' coordinates):
    the poses and twists by the model's forward kinematics, as
    ``CartesianModel.energy_balance`` builds them, and the drives from its
    bordered accelerations at each."""
    drives = model.drives
    out = np.zeros((len(times), len(drives.index)))
    last = None
    for i, tt in enumerate(np.asarray(times, dtype=float)):
        qi = {n: float(v[i]) for n, v in q.items()}
        X, R, tree = model.forward_kinematics(qi)
        q_plain = model.joint_coordinates(X, R)
        V = model.tree_velocities(X, R, tree, {n: float(v[i]) for n, v in qd.items()}, q_plain)
        # the given angles as they are; the others (a cut joint's, absent
        # from a model's trajectory) on the branch nearest their previous
        # sample, so that a load on them sees a continuous angle
        last = q_plain[model.angle_index] if last is None else last
        wind = np.array([qi.get(model.coord_names[k], last[a]) for a, k in enumerate(model.angle_index)])
        last = model._on_branch(q_plain, wind)[model.angle_index]
        model.accelerations(tt, X, R, V, wind)
        out[i] = drives.last
    return {model.coord_names[k]: out[:, a] for a, k in enumerate(drives.index)}
