"""The model stage's M(q) and F(q, q̇, t), assembled body by body
(``Mechanism._body_equations``), against sympy's KanesMethod: another
algorithm (every body's partial velocities over all n speeds, the dense
n × n sums) applied to the same bodies, frames and loads, so it checks the
assembly (which coordinates a body touches, the velocity-product and
gyroscopic terms, the point forces' Jacobians, symmetric storage) but not
the description of the bodies themselves.  That part is checked by the
Cartesian reference, which reads only the joint description
(``tests/test_cartesian.py``, ``fmigen validate``).

Compared at random states: for frames built from rotations about axes (the
joint API's, body-fixed Euler angles) both give the same functions of
(q, q̇) everywhere, not only on the constraint manifold."""
import numpy as np
import pytest
import sympy as sp
from sympy.physics import mechanics as me

from fmigen.model import t
from fmigen.build.pipeline import prepare_mechanism


def kane_equations(mech):
    """M, F of ``mech`` (no floating base) by KanesMethod with u = q̇."""
    q = mech.q
    u = [me.dynamicsymbols(f"u_{c.name}") for c in mech.coordinates]
    qdot = [qi.diff(t) for qi in q]
    to_u = dict(zip(qdot, u))
    N = mech.world
    origin = me.Point("O")
    origin.set_vel(N, 0)

    def vec(xyz):
        return xyz[0] * N.x + xyz[1] * N.y + xyz[2] * N.z

    def place(xyz, name):
        p = origin.locatenew(name, vec(xyz))
        p.set_vel(N, vec(xyz).dt(N).xreplace(to_u))
        return p

    bodies, loads = [], []
    for b in mech.bodies:
        p = place(b.com, f"P_{b.name}")
        I = me.inertia(b.frame, b.inertia[0, 0], b.inertia[1, 1], b.inertia[2, 2],
                       b.inertia[0, 1], b.inertia[1, 2], b.inertia[0, 2])
        bodies.append(me.RigidBody(b.name, p, b.frame, b.mass, (I, p)))
        loads.append((p, b.mass * vec(mech.gravity)))
    for k, (point, force) in enumerate(mech.point_forces):
        loads.append((place(point, f"F_{k}"), vec(force)))
    angular = [(b.frame, b.frame.ang_vel_in(N).xreplace(to_u)) for b in mech.bodies]
    for frame, w in angular:
        frame.set_ang_vel(N, w)
    kane = me.KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=[qd - ui for qd, ui in zip(qdot, u)])
    kane.kanes_equations(bodies, loads)
    F = kane.forcing.as_mutable()
    for i, c in enumerate(mech.coordinates):
        F[i] += mech.generalized_forces.get(c.name, 0)
    back = {ui: qd for ui, qd in zip(u, qdot)}
    return kane.mass_matrix.xreplace(back), F.xreplace(back)


def numeric(mech, exprs):
    """exprs as a numpy function of (q, q̇) with every parameter and input
    at its value and t = 0.3."""
    q = mech.q
    qs = [sp.Symbol(f"q{i}") for i in range(len(q))]
    vs = [sp.Symbol(f"v{i}") for i in range(len(q))]
    values = {p.symbol: p.value for p in mech.parameters}
    values.update({i.symbol: i.start for i in mech.inputs})
    values[t] = 0.3
    rates = {qi.diff(t): v for qi, v in zip(q, vs)}
    out = []
    for e in exprs:
        # the rates first: q(t) inside Derivative(q(t), t) must stay a q(t)
        e = e.xreplace(rates).xreplace(dict(zip(q, qs))).xreplace(values)
        out.append(sp.lambdify([qs, vs], e, "numpy"))
    return out


@pytest.mark.parametrize("name", ["fourbar", "stewart", "five_link", "landing_gear_dynamic",
                                  "stephenson3_joints", "quarter_car_joints", "front_corner"])
def test_body_by_body_equations_match_kanes_method(name):
    mech = prepare_mechanism(name)
    assert mech.floating_base is None
    M, F = mech.equations_of_motion()
    assert M == M.T
    Mk, Fk = kane_equations(mech)
    fM, fF, gM, gF = numeric(mech, [M, F, Mk, Fk])
    rng = np.random.default_rng(3)
    n = len(mech.q)
    for _ in range(4):
        q, v = rng.uniform(-1, 1, n), rng.uniform(-2, 2, n)
        a, b = np.array(fM(q, v), float), np.array(gM(q, v), float)
        c, d = np.array(fF(q, v), float).ravel(), np.array(gF(q, v), float).ravel()
        # what is compared is not zero: the mass matrix has its masses and
        # inertias, the forcing its weights and velocity products
        assert np.abs(b).max() > 1e-3 and np.abs(d).max() > 1e-3
        assert np.abs(a - b).max() <= 1e-12 * np.abs(b).max()
        assert np.abs(c - d).max() <= 1e-12 * np.abs(d).max()
