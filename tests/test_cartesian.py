"""The Cartesian reference (fmigen/verify/cartesian.py): analytic cases, its joint
kinematics, and validate() catching wrong equations of motion through it."""
import math

import numpy as np
import pytest
import sympy as sp
from sympy import cos, sin

import fmigen.model
from fmigen.verify.cartesian import CartesianModel, joint_transform, solve_cartesian
from fmigen.verify.rigid_motion import inverse_joint, motion_subspace, rot, _perpendicular_pair
from fmigen.joints import JOINT_KINDS, JointSystem
from fmigen.model import Mechanism
from fmigen.verify.validate import validate

L1, L2, L3, D = 1.0, 4.0, 2.5, 3.0


def fourbar_joints(theta_dot=0.0):
    """fourbar.py's crank-rocker as bodies and joints: relative joint angles
    th1 (crank, at O), th2 (coupler relative to the crank, at A), th3 (rocker,
    at D); the loop is closed by the revolute 'cut' at B.  Slender links:
    no inertia about their own axis (the joints hold that rotation)."""
    s = JointSystem("fourbar_joints")
    g = s.parameter("g", 9.8, "m/s2", tunable=True)
    tau = s.input("tau", 6.0, "N.m")
    links = {name: s.body(name, 1.0, (0, l * l / 12, l * l / 12), com=(l / 2, 0, 0))
             for name, l in (("crank", L1), ("coupler", L2), ("rocker", L3))}
    cr, co, ro = links["crank"], links["coupler"], links["rocker"]
    s.revolute("th1", s.ground.origin, cr.origin, start=math.pi / 2, velocity_start=theta_dot)
    s.revolute("th2", cr.marker("A", (L1, 0, 0)), co.origin, start=0.353281 - math.pi / 2)
    s.revolute("th3", s.ground.marker("D", (D, 0, 0)), ro.origin, start=1.26486)
    s.revolute("cut", co.marker("B", (L2, 0, 0)), ro.marker("B", (L3, 0, 0)))
    s.gravity = (0, -g, 0)
    s.joint_force("th1", tau)
    s.independent = ["th1"]
    return s


def fourbar_mechanism(theta_dot=0.0, name="fourbar_relative"):
    """The same four-bar written by hand as a low-level Mechanism in the
    JointSystem's tree coordinates (what joint_model.to_mechanism produces),
    with ``joint_system`` set, so validate() runs the Cartesian reference."""
    s = fourbar_joints(theta_dot)
    m = Mechanism(name, description="four-bar in relative joint coordinates")
    th1 = m.coordinate("th1", math.pi / 2, "rad", velocity_start=theta_dot)
    th2 = m.coordinate("th2", 0.353281 - math.pi / 2, "rad")
    th3 = m.coordinate("th3", 1.26486, "rad")
    g = m.parameter("g", 9.8, "m/s2", tunable=True)
    tau = m.input("tau", 6.0, "N.m")
    alpha = th1 + th2
    ax, ay = L1 * cos(th1), L1 * sin(th1)
    m.planar_body("crank", 1.0, L1**2 / 12, (ax / 2, ay / 2), th1)
    m.planar_body("coupler", 1.0, L2**2 / 12, (ax + L2 / 2 * cos(alpha), ay + L2 / 2 * sin(alpha)), alpha)
    m.planar_body("rocker", 1.0, L3**2 / 12, (D + L3 / 2 * cos(th3), L3 / 2 * sin(th3)), th3)
    m.gravity = (0, -g, 0)
    m.constraint("loop_x", ax + L2 * cos(alpha) - D - L3 * cos(th3))
    m.constraint("loop_y", ay + L2 * sin(alpha) - L3 * sin(th3))
    m.generalized_force("th1", tau)
    m.independent = ["th1"]
    m.dof = 1
    m.joint_system = s
    return m


# --- joint kinematics ------------------------------------------------------

KIND_SAMPLES = {
    "revolute": [0.7], "prismatic": [0.3], "cylindrical": [-2.1, 0.4], "universal": [0.5, -0.8],
    "spherical": [2.0, 0.4, -1.1], "planar": [0.2, -0.5, 2.5], "free": [0.1, 0.2, -0.3, 0.9, -0.4, 2.2],
    "fixed": [],
}


@pytest.mark.parametrize("kind", list(JOINT_KINDS))
def test_inverse_joint_kinematics_and_motion_subspace(kind):
    """inverse(forward(q)) = q, and S(q) q̇ is the relative twist: the
    derivative of p_J and the angular velocity of R_J by finite differences."""
    a = np.array([3 / 5, 0, 4 / 5]) if kind in ("revolute", "prismatic", "cylindrical") else np.array([1.0, 0, 0])
    b = np.array([0, 1.0, 0]) if kind == "universal" else None
    u1, u2 = _perpendicular_pair(a)
    q = np.array(KIND_SAMPLES[kind])
    R, p = joint_transform(kind, a, b, q)
    assert np.allclose(R.T @ R, np.eye(3), atol=1e-14)
    assert np.allclose(inverse_joint(kind, a, b, u1, u2, R, p), q, atol=1e-12)
    if not len(q):
        return
    qd = np.linspace(0.3, -0.7, len(q))
    h = 1e-6
    Rp, pp = joint_transform(kind, a, b, q + h * qd)
    Rm, pm = joint_transform(kind, a, b, q - h * qd)
    W = (Rp - Rm) / (2 * h) @ R.T
    twist = np.r_[(pp - pm) / (2 * h), W[2, 1], W[0, 2], W[1, 0]]
    assert np.allclose(motion_subspace(kind, a, b, q) @ qd, twist, atol=1e-8)


# --- analytic cases -------------------------------------------------------

def test_conical_pendulum_precesses_at_the_analytic_rate():
    """A symmetric body on a spherical joint, its axis at β from the downward
    vertical, turning about the vertical at Ω² = m g L / ((I₁ + m L² − I₃) cos β)
    stays on that cone: q = (Ω t, 0, β) exactly."""
    m, L, I1, I3, beta, g = 1.2, 0.5, 0.02, 0.005, 0.6, 9.81
    Omega = math.sqrt(m * g * L / ((I1 + m * L * L - I3) * math.cos(beta)))
    s = JointSystem("conical")
    b = s.body("bob", m, (I1, I1, I3), com=(0, 0, -L))
    s.spherical("ball", s.ground.origin, b.origin, start=(0, 0, beta), velocity_start=(Omega, 0, 0))
    s.gravity = (0, 0, -g)
    times = np.linspace(0, 2, 101)
    sol = solve_cartesian(s, {"ball_1": 0, "ball_2": 0, "ball_3": beta}, {"ball_1": Omega},
                          ["ball_1", "ball_2", "ball_3"], times, rtol=1e-11)
    assert np.abs(sol.column("ball_1") - Omega * times).max() < 1e-8
    assert np.abs(sol.column("ball_2")).max() < 1e-8
    assert np.abs(sol.column("ball_3") - beta).max() < 1e-8
    assert sol.energy_drift < 1e-8     # measured 1.2e-9 at rtol 1e-11


def test_physical_pendulum_on_a_tilted_axis_balances_energy():
    """A body with a full inertia tensor on a revolute about a tilted axis,
    started at 3 rad/s, with a constant torque and a rotational
    spring-damper: E(t) − E(0) equals the work of the torque and the
    spring-damper (P_in = (τ − k (q − q₀) − d q̇) q̇), and with no loads the
    energy is constant and the angle reproduces the planar pendulum ODE."""
    from scipy.integrate import solve_ivp
    s = JointSystem("tilted")
    inertia = sp.Matrix([[0.05, 0.01, 0.0], [0.01, 0.04, 0.005], [0.0, 0.005, 0.03]])
    b = s.body("link", 1.5, inertia, com=(0.4, 0.1, 0.05))
    axis = (0, sp.Rational(3, 5), sp.Rational(4, 5))
    s.revolute("hinge", s.ground.marker("pivot", (0.1, 0.2, 0.3)), b.origin, axis=axis,
               start=0.2, velocity_start=3.0)
    s.gravity = (0, -9.81, 0)
    times = np.linspace(0, 2, 201)
    free = solve_cartesian(s, {"hinge": 0.2}, {"hinge": 3.0}, ["hinge"], times, rtol=1e-12)
    assert free.v[0, 0] == pytest.approx(3.0, abs=1e-13)
    assert np.ptp(free.energy) / np.abs(free.energy).max() < 1e-9
    # the same motion as a one-coordinate ODE: J q̈ = τ_gravity(q) about the axis
    model = CartesianModel(s)
    a = np.array([0, 0.6, 0.8])
    com = np.array([0.4, 0.1, 0.05])
    I_axis = a @ (model.inertia[0] + 1.5 * (com @ com * np.eye(3) - np.outer(com, com))) @ a

    def ode(_, y):
        r = rot(a, y[0]) @ com
        return [y[1], a @ np.cross(r, 1.5 * np.array([0, -9.81, 0])) / I_axis]

    exact = solve_ivp(ode, (0, 2), [0.2, 3.0], t_eval=times, rtol=1e-12, atol=1e-12, method="DOP853")
    assert np.abs(free.column("hinge") - exact.y[0]).max() < 1e-8
    # loads: the balance holds with the work of every non-gravity load
    s.joint_force("hinge", 0.7)
    s.rotational_spring_damper("spring", "hinge", stiffness=2.0, damping=0.05, free_angle=0.5)
    loaded = solve_cartesian(s, {"hinge": 0.2}, {"hinge": 3.0}, ["hinge"], times, rtol=1e-12)
    assert np.abs(loaded.work).max() > 0.1
    assert loaded.energy_drift < 1e-9


def test_fourbar_energy_balance_from_a_moving_start():
    """The four-bar started at θ̇ = 2 (the issue's case): the reference holds
    th1' = 2 exactly, solves th2', th3' from the constraints, and its energy
    balance (gravity, the crank torque's work) closes."""
    times = np.linspace(0, 1, 101)
    q_start = {"th1": math.pi / 2, "th2": 0.353281 - math.pi / 2, "th3": 1.26486}
    sol = solve_cartesian(fourbar_joints(2.0), q_start, {"th1": 2.0}, ["th1"], times)
    assert sol.v[0, sol.names.index("th1")] == pytest.approx(2.0, abs=1e-12)
    assert sol.max_constraint_residual < 1e-9
    assert sol.energy_drift < 1e-8
    # the loop closes: B from the crank-coupler side equals B from the rocker
    th1, th2, th3 = sol.column("th1"), sol.column("th2"), sol.column("th3")
    bx = L1 * np.cos(th1) + L2 * np.cos(th1 + th2) - D - L3 * np.cos(th3)
    assert np.abs(bx).max() < 1e-10


# --- validate: both references, and mutations only the Cartesian one sees ----

def test_validate_runs_both_references_on_a_joint_described_fourbar():
    r = validate(fourbar_mechanism(theta_dot=2.0), stop_time=1.0)
    assert set(r.references) == {"ida", "cartesian"}
    cart = r.references["cartesian"]
    assert set(cart["max_abs_error"]) == {"th1", "th2", "th3"}
    assert max(cart["max_abs_error"].values()) < 1e-6
    assert max(cart["max_abs_velocity_error"].values()) < 1e-5
    assert r.cartesian.v[0, r.cartesian.names.index("th1")] == pytest.approx(2.0, abs=1e-12)
    assert r.energy_drift < 1e-6 and "joint description" in r.energy_source
    out = r.as_json()
    assert {"max_abs_error", "max_abs_velocity_error", "max_constraint_residual", "passed",
            "references", "energy_drift"} <= set(out)
    assert r.passed and out["references"]["ida"]["passed"] and cart["passed"]


def _mutated(monkeypatch, post):
    """equations_of_motion corrupted after KanesMethod, as the review did."""
    original = fmigen.model.Mechanism.equations_of_motion

    def corrupt(self):
        M, F = original(self)
        return post(self, M.copy(), F.copy())

    monkeypatch.setattr(fmigen.model.Mechanism, "equations_of_motion", corrupt)


def _triple_coupler_inertia(mech, M, F):
    # the coupler turns at th1' + th2': its I_zz enters M as I [[1, 1], [1, 1]]
    Izz = L2**2 / 12
    for i in (0, 1):
        for j in (0, 1):
            M[i, j] += 2 * Izz
    return M, F


def _flip_crank_torque(mech, M, F):
    F[0] -= 2 * mech.inputs[0].symbol
    return M, F


def _drop_coupler_velocity_terms(mech, M, F):
    # the coupler equation loses its Coriolis/centrifugal terms
    qdot = {c.symbol.diff(fmigen.model.t): 0 for c in mech.coordinates}
    F[1] = F[1].xreplace(qdot)
    return M, F


@pytest.mark.parametrize("post", [_triple_coupler_inertia, _flip_crank_torque, _drop_coupler_velocity_terms])
def test_wrong_equations_of_motion_fail_validation(monkeypatch, post):
    """The FMU and the IDA reference share the corrupted M, F and agree; the
    Cartesian reference does not, so validate fails."""
    _mutated(monkeypatch, post)
    r = validate(fourbar_mechanism(theta_dot=2.0, name=f"fourbar_{post.__name__.strip('_')}"), stop_time=0.5)
    assert r.references["ida"]["passed"], r.references["ida"]
    assert not r.references["cartesian"]["passed"]
    assert max(r.references["cartesian"]["max_abs_error"].values()) > 1e-3
    assert not r.passed


def test_front_end_mechanism_validates_and_a_changed_body_fails():
    """Through the joint front end (to_mechanism): the slider-crank, with a
    prismatic joint, a velocity-dependent joint force and a slider without
    inertia, validates against both references; the same Mechanism with its
    rod's mass tripled after the conversion still matches IDA but not the
    Cartesian reference, which reads the joint description."""
    from fmigen.build.pipeline import load_mechanism
    r = validate("slider_crank_joints", stop_time=1.0)
    assert r.passed and set(r.references) == {"ida", "cartesian"}
    assert max(r.references["cartesian"]["max_abs_error"].values()) < 1e-7     # measured 2.6e-9 over 2 s
    mech = load_mechanism("slider_crank_joints")
    rod = next(b for b in mech.bodies if b.name == "rod")
    rod.mass = 3 * rod.mass
    mech.name = "slider_crank_joints_heavy_rod"
    r = validate(mech, stop_time=1.0)
    assert r.references["ida"]["passed"]
    assert not r.references["cartesian"]["passed"] and not r.passed


def test_a_motion_nothing_resists_is_refused():
    from fmigen.verify.cartesian import CartesianError
    s = JointSystem("weightless")
    b = s.body("disk", 1.0, (1, 1, 0))                 # no inertia about the hinge axis z
    s.revolute("hinge", s.ground.origin, b.origin, start=0.0)
    with pytest.raises(CartesianError, match="no mass or inertia resists"):
        solve_cartesian(s, {"hinge": 0.0}, {}, ["hinge"], [0.0, 0.1])


def test_energy_drift_at_rest_is_measured_against_the_precision_of_E():
    """A body held at rest under loads moves next to nothing: its rounding
    (1e-12 J in a potential of 4 kJ) is not a drift of the order of the
    1e-10 J the motion moves, but a real loss is still one."""
    from fmigen.verify.energy import energy_drift
    n = 101
    V = 3.7e3 + 1e-10 * np.sin(np.linspace(0, 3, n)) + 1e-12 * (-1.0) ** np.arange(n)
    T = np.full(n, 1e-14)
    W = V - V[0] - 1e-12 * (-1.0) ** np.arange(n) + 1e-12      # the balance to the rounding
    assert energy_drift(T, V, W) < 1e-7
    W_lost = W - np.linspace(0, 1e-3, n)                       # 1 mJ unaccounted for
    assert energy_drift(T, V, W_lost) > 1e-2
    # a moving mechanism keeps its own scale: the floor is far below it
    t = np.linspace(0, 1, n)
    assert energy_drift(0.5 * np.sin(t) ** 2, 3.7e3 - 0.5 * np.sin(t) ** 2 + 1e-9 * t, np.zeros(n)) == \
        pytest.approx(1e-9 / (0.5 * np.sin(1.0) ** 2), rel=1e-3)


#: the parallelogram RSSR's crank (= rocker) and coupler length [m]
CRANK, COUPLER = 1.0, 3.0


def rssr_parallelogram() -> JointSystem:
    """A spatial four-bar: revolute crank and rocker about parallel z axes,
    a coupler on spherical joints (16 constraint rows of rank 16, no
    redundant ones: the sparse path's kind of J), in parallelogram
    proportions, so its loop has a change point where it lies flat along x
    (θ = π): there J loses a rank."""
    s = JointSystem("rssr_parallelogram")
    crank = s.body("crank", 1.0, (0.01, CRANK**2 / 12, CRANK**2 / 12), com=(CRANK / 2, 0, 0))
    coupler = s.body("coupler", 1.0, (0.01, COUPLER**2 / 12, COUPLER**2 / 12), com=(COUPLER / 2, 0, 0))
    rocker = s.body("rocker", 1.0, (0.01, CRANK**2 / 12, CRANK**2 / 12), com=(CRANK / 2, 0, 0))
    s.revolute("theta", s.ground.origin, crank.origin)
    s.spherical("A", crank.marker("A", (CRANK, 0, 0)), coupler.origin)
    s.spherical("B", coupler.marker("B", (COUPLER, 0, 0)), rocker.marker("B", (CRANK, 0, 0)))
    s.revolute("phi", s.ground.marker("D", (COUPLER, 0, 0)), rocker.origin)
    s.gravity = (-9.81, 0, 0)
    s.joint_force("theta", s.input("tau", 0.0, "N.m"))
    return s


def rssr_pose(model, delta):
    """The parallelogram at θ = π − δ (coupler level, rocker parallel to the crank), exactly."""
    th = math.pi - delta
    q = {"theta": th, "A_1": -th, "A_2": 0.0, "A_3": 0.0, "B_1": th, "B_2": 0.0, "B_3": 0.0, "phi": th}
    X, R, _ = model.forward_kinematics(q)
    return X, R


def test_sparse_path_falls_back_where_the_svd_path_drops_a_row():
    """Through the change point of the parallelogram RSSR, with the crank
    turning at 1 rad/s: the run's solver takes the sparse path (J of full
    rank at θ = π − 0.3), and at every pose where the SVD path's cut sees a
    rank loss (σ_min/σ_max of J = 0.24 δ: below 1e-8 from δ ≈ 4e-8) it
    solves by the SVD path, so its accelerations are that path's; above the
    cut both paths solve the same full system.  The sparse LU of the whole
    bordered system alone, the fallback before, kept δ = 3e-8 and 1e-8 and
    put the crank's acceleration 0.14 and 0.38 (|V̇| = 1) off the SVD path's."""
    from fmigen.verify.cartesian_solve import svd_rows
    model = CartesianModel(rssr_parallelogram())
    X, R = rssr_pose(model, 0.3)
    solver = model.solver
    solver.decide(model.constraints(X, R, np.zeros(6 * model.N))[1])
    assert solver.sparse
    kept = {}
    for delta in (1e-2, 1e-4, 1e-6, 1e-7, 3e-8, 1e-8, 1e-9, 1e-12, 0.0):
        X, R = rssr_pose(model, delta)
        for turning in (False, True):
            if turning and delta < 1e-8:
                # the crank's rate no longer determines the motion (start_velocity refuses)
                continue
            V = model.start_velocity(X, R, {"theta": 1.0}) if turning else np.zeros(6 * model.N)
            wind = model.joint_coordinates(X, R)[model.angle_index]
            Q = model.body_forces(0.0, X, R, V, wind)[0]
            Phi, J, gamma = model.constraints(X, R, V, sparse=True)
            rhs = gamma - 2 * model.baumgarte * (J @ V) - model.baumgarte**2 * Phi
            before = solver.counts["sparse"]
            acc, _ = solver.solve(J, rhs, (Q, None, None, None))
            by_svd, _ = solver._svd(J.toarray(), rhs, Q, None, None, None, len(Q))
            full = svd_rows(J.toarray())[3] == J.shape[0]
            assert (solver.counts["sparse"] > before) == full, delta
            kept[delta] = full
            assert np.abs(acc - by_svd).max() <= 1e-8 * max(1.0, np.abs(by_svd).max()), (delta, turning)
    assert kept[1e-7] and not kept[3e-8]


def test_solver_counts_are_per_run():
    """The evaluations by path count one run: simulating twice on one model
    counts the second run as the first.  (The crank torque is given as a
    signal, so conftest's memo of Cartesian runs, which keys values only,
    integrates both.)"""
    times = np.linspace(0.0, 0.02, 3)
    th = math.pi - 0.3
    start = {"theta": th, "A_1": -th, "A_2": 0.0, "A_3": 0.0, "B_1": th, "B_2": 0.0, "B_3": 0.0, "phi": th}
    model = CartesianModel(rssr_parallelogram(), inputs={"tau": lambda tt: 0.0})
    model.simulate(start, {"theta": 1.0}, ["theta"], times)
    first = dict(model.solver.counts)
    model.simulate(start, {"theta": 1.0}, ["theta"], times)
    assert first["sparse"] > 0 and model.solver.counts == first
