"""Prescribed motion (``JointSystem.prescribe``): a joint coordinate follows
an FMU input through the critically damped filter q̈ = ω²(u − q) − 2ω q̇,
driven by the generalized force that produces exactly that acceleration.

The reference shares nothing with fmigen: a uniform rod (mass m, length L)
hanging from a revolute joint on a cart (mass M_c) whose prismatic joint
is prescribed, written by hand.  With the rod's angle θ from the x axis
(gravity −y, centre of mass at r = L/2):

    (I_c + m r²) θ̈ = −m g r cos θ + m r sin θ ẍ                 (moments about the pivot)
    F = (M_c + m) ẍ + m (−r sin θ θ̈ − r cos θ θ̇²)              (the drive: inverse dynamics)
    R_y = M_c g + m (g + r cos θ θ̈ − r sin θ θ̇²)                (the rail's vertical reaction)
"""
import ctypes
import math

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi1 import FMICallException
from fmpy.fmi2 import FMU2Model, FMU2Slave
from scipy.integrate import solve_ivp

from fmigen.build.pipeline import build_fmus
from fmigen.joints import JointSystem, X
from fmigen.model import ModelError

MC, MB, LEN, G, TAU = 2.0, 0.5, 0.6, 9.81, 0.01
R, IC, W = LEN / 2, MB * LEN**2 / 12, 1 / TAU


def cart_pendulum(prescribe=True) -> JointSystem:
    s = JointSystem("prescribed_cart")
    cart = s.body("cart", MC, (0, 0, 0.01))
    rod = s.body("rod", MB, (0, 0, IC), com=(R, 0))
    s.prismatic("x", s.ground.origin, cart.origin, axis=X, start=0.0)
    s.revolute("th", cart.origin, rod.origin, start=-1.2)
    s.independent = ["x", "th"]
    s.gravity = (0, -G, 0)
    demand = s.input("x_demand", 0.0, "m")
    if prescribe:
        s.prescribe("x", demand, time_constant=TAU)
    s.reaction("x")
    return s


def reference(t, z, u):
    x, th, vx, vth = z
    xdd = W * W * (u - x) - 2 * W * vx
    thdd = (-MB * G * R * math.cos(th) + MB * R * math.sin(th) * xdd) / (IC + MB * R * R)
    drive = (MC + MB) * xdd + MB * (-R * math.sin(th) * thdd - R * math.cos(th) * vth**2)
    ry = MC * G + MB * (G + R * math.cos(th) * thdd - R * math.sin(th) * vth**2)
    return np.array([vx, vth, xdd, thdd]), drive, ry


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("prescribe")
    targets = [(out / "cs.fmu", "2", "cs"), (out / "me.fmu", "2", "me")]
    paths, _ = build_fmus(cart_pendulum(), targets, solver="rk4", step=1e-3, windows=False)
    return dict(zip(("cs", "me"), paths))


def _open(path, kind):
    md = read_model_description(path)
    d = extract(path)
    cls, ident = (FMU2Slave, md.coSimulation) if kind == "cs" else (FMU2Model, md.modelExchange)
    fmu = cls(guid=md.guid, unzipDirectory=d, modelIdentifier=ident.modelIdentifier, instanceName=kind)
    fmu.instantiate()
    fmu.setupExperiment(startTime=0.0)
    fmu.enterInitializationMode()
    fmu.exitInitializationMode()
    return fmu, {v.name: v.valueReference for v in md.modelVariables}, md


def test_drive_is_hidden_and_an_output(fmus):
    md = read_model_description(fmus["cs"])
    names = {v.name: v.causality for v in md.modelVariables}
    assert names["x_demand"] == "input" and names["drive_x"] == "output"
    assert not any(v.causality == "input" and v.name.startswith("drive_") for v in md.modelVariables)


def test_me_derivatives_and_drive_match_the_hand_written_model(fmus):
    """At arbitrary states and inputs: the accelerations, the drive and the
    rail's reaction equal the reference's (these are exact, not integrated)."""
    fmu, vr, md = _open(fmus["me"], "me")
    fmu.enterContinuousTimeMode()
    assert [s.variable.derivative.name for s in md.derivatives] == ["x", "th", "der(x)", "der(th)"]
    rng = np.random.default_rng(3)
    for _ in range(6):
        z = np.array([rng.uniform(-0.1, 0.1), rng.uniform(-2.5, -0.5), rng.uniform(-1, 1), rng.uniform(-3, 3)])
        u = rng.uniform(-0.1, 0.1)
        fmu.setReal([vr["x_demand"]], [u])
        fmu.setContinuousStates((ctypes.c_double * 4)(*z), 4)
        dx = (ctypes.c_double * 4)()
        fmu.getDerivatives(dx, 4)
        want, drive, ry = reference(0.0, z, u)
        assert np.abs(np.array(dx) - want).max() < 1e-11 * (1 + np.abs(want).max())
        got_drive, fx, fy = fmu.getReal([vr["drive_x"], vr["reaction_x_fx"], vr["reaction_x_fy"]])
        assert abs(got_drive - drive) < 1e-11 * (1 + abs(drive))
        # the rail transmits the drive along x and carries the weight in y
        assert abs(fx - drive) < 1e-11 * (1 + abs(drive))
        assert abs(fy - ry) < 1e-11 * (1 + abs(ry))
    fmu.terminate()
    fmu.freeInstance()


def _rk4(z, t, h, u):
    f = lambda tt, zz: reference(tt, zz, u)[0]
    k1 = f(t, z)
    k2 = f(t + h / 2, z + h / 2 * k1)
    k3 = f(t + h / 2, z + h / 2 * k2)
    k4 = f(t + h, z + h * k3)
    return z + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def test_cs_follows_a_sinusoidal_demand(fmus):
    """1 s of co-simulation at H = 10 ms, the demand held over each step.
    The FMU's RK4 (h = 1 ms) equals RK4 of the hand-written model to
    rounding, and both stay within RK4's truncation error of the exact
    solution (solve_ivp, rtol 1e-11); the drive output equals the inverse
    dynamics at the FMU's state."""
    fmu, vr, _ = _open(fmus["cs"], "cs")
    exact = rk = np.array([0.0, -1.2, 0.0, 0.0])
    H, A, OM = 0.01, 0.05, 6.0
    err_rk, err_exact, err_drive, xmax = 0.0, 0.0, 0.0, 0.0
    for k in range(100):
        t = k * H
        u = A * math.sin(OM * t)
        fmu.setReal([vr["x_demand"]], [u])
        fmu.doStep(t, H)   # fmpy raises on an error status
        exact = solve_ivp(lambda tt, zz: reference(tt, zz, u)[0], (t, t + H), exact, rtol=1e-11, atol=1e-12,
                          method="DOP853").y[:, -1]
        for j in range(10):
            rk = _rk4(rk, t + j * 1e-3, 1e-3, u)
        got = np.array(fmu.getReal([vr["x"], vr["th"], vr["der(x)"], vr["der(th)"]]))
        err_rk = max(err_rk, np.abs(got - rk).max())
        err_exact = max(err_exact, np.abs(got - exact).max())
        err_drive = max(err_drive, abs(fmu.getReal([vr["drive_x"]])[0] - reference(t + H, got, u)[1]))
        xmax = max(xmax, abs(got[0]))
    print(f"prescribe CS: vs RK4 {err_rk:.2e}, vs exact {err_exact:.2e}, drive {err_drive:.2e}, x max {xmax:.4f}")
    assert xmax > 0.04           # the cart moved with the demand
    assert err_rk < 1e-11, err_rk
    assert err_exact < 5e-6, err_exact
    assert err_drive < 1e-10, err_drive
    fmu.terminate()
    fmu.freeInstance()


def test_python_runtime_drives_like_the_c_runtime(tmp_path):
    """``--runtime python``: the same cart in a pure-Python FMU follows a
    sinusoidal demand (set before each 10 ms communication step) like the
    C FMU, to rounding, and its drive and rail reaction at every
    communication point are the hand-written model's at its state
    (Core.prescribe solves the drive from the reduced accelerations at
    drive 0 and 1, as fmigen_core.c does from the embedded ones).  Before,
    the Python runtime refused a prescribed coordinate."""
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu import pyruntime
    from fmigen.build.pipeline import build_fmu
    c_path, compiled = build_fmu(cart_pendulum(), tmp_path / "c.fmu", windows=False)
    py_path, _ = pyruntime.build_python_fmu(cart_pendulum(), tmp_path / "py.fmu", compiled=compiled)
    names = ["x", "th", "der(x)", "der(th)", "drive_x", "reaction_x_fx", "reaction_x_fy"]
    runs = []
    for path in (c_path, py_path):
        fmu, vr, _ = _open(path, "cs")
        rows = []
        for k in range(50):
            t = 0.01 * k
            u = 0.05 * math.sin(6 * t)
            fmu.setReal([vr["x_demand"]], [u])
            fmu.doStep(t, 0.01)
            rows.append([u, *fmu.getReal([vr[n] for n in names])])
        fmu.terminate()
        fmu.freeInstance()
        runs.append(np.array(rows))
    c, py = runs
    diff = np.abs(c - py).max(axis=0)
    hand = np.array([reference(0.0, r[1:5], r[0])[1:] for r in py])
    print(f"Python runtime vs C: coordinates {diff[1:5].max():.1e}, drive {diff[5]:.1e} N; drive and reaction vs "
          f"the hand-written model {np.abs(py[:, [5, 6, 7]] - hand[:, [0, 0, 1]]).max():.1e} N")
    assert np.abs(py[:, 1]).max() > 0.04                      # the cart followed the demand
    assert diff[1:5].max() < 1e-12 and diff[5:].max() < 1e-10 * np.abs(c[:, 5:]).max()
    assert np.abs(py[:, [5, 6, 7]] - hand[:, [0, 0, 1]]).max() < 1e-10 * np.abs(hand).max()


def test_nan_demand_is_an_error(fmus):
    """A non-finite demand is an error status (SetReal refuses it, naming it),
    in Co-Simulation and Model Exchange."""
    for kind in ("cs", "me"):
        fmu, vr, _ = _open(fmus[kind], kind)
        with pytest.raises(FMICallException, match="SetReal"):
            fmu.setReal([vr["x_demand"]], [float("nan")])
        fmu.freeInstance()


def test_prescribed_coordinate_must_be_independent():
    s = cart_pendulum(prescribe=False)
    s.prescribe("x", "x_demand")
    s.independent = None
    with pytest.raises(ModelError, match="must be one of s.independent"):
        build_fmus(s, [("/nonexistent.fmu", "2", "cs")], windows=False)


def test_undeclared_input_is_refused():
    s = cart_pendulum(prescribe=False)
    with pytest.raises(ModelError, match="not a declared input"):
        s.prescribe("x", "nope")


def test_exports_refuse_a_prescribed_mechanism():
    """The exports do not drive prescribed coordinates: each says so
    instead of writing another motion; nor is a drive an input a signal
    may set."""
    from fmigen.frontends.mjcf import export_mjcf
    from fmigen.verify.validate import validate
    with pytest.raises(ModelError, match="no MuJoCo form"):
        export_mjcf(cart_pendulum())
    with pytest.raises(ModelError, match="has no such input"):
        validate(cart_pendulum(), stop_time=0.1, input_signals={"drive_x": "1"})


def test_cartesian_reference_drive_and_reaction_match_the_hand_written_model():
    """The Cartesian reference's own equations (absolute coordinates, the
    prismatic coordinate's acceleration from the marker frames, the drive a
    bordered unknown): at arbitrary states and demands, the cart's and the
    rod's accelerations, the drive and the rail's reaction equal the
    hand-written model's."""
    from fmigen.verify.cartesian import CartesianModel
    rng = np.random.default_rng(5)
    for _ in range(5):
        x, th, vx, vth = rng.uniform(-0.1, 0.1), rng.uniform(-2.5, -0.5), rng.uniform(-1, 1), rng.uniform(-3, 3)
        u = rng.uniform(-0.1, 0.1)
        model = CartesianModel(cart_pendulum(), inputs={"x_demand": u})
        X, R, tree = model.forward_kinematics({"x": x, "th": th})
        V = model.tree_velocities(X, R, tree, {"x": vx, "th": vth})
        wind = np.array([th])
        acc, q, qd, _ = model.accelerations(0.0, X, R, V, wind)
        want, drive, ry = reference(0.0, np.array([x, th, vx, vth]), u)
        D = model.joint_velocity_maps(X, R, q)
        # q̈ = D V̇ + Ḋ V; Ḋ V is zero for the cart's x (a ground-fixed
        # axis) and for the rod's angle about the cart's fixed z axis
        assert np.abs(D @ acc - want[2:]).max() < 1e-10 * (1 + np.abs(want).max())
        assert abs(model.drives.last[0] - drive) < 1e-10 * (1 + abs(drive))
        f, _ = model.joint_reactions(0.0, X, R, V, wind)["x"]
        assert abs(f[0] - drive) < 1e-10 * (1 + abs(drive)) and abs(f[1] - ry) < 1e-10 * (1 + abs(ry))


def test_validate_drives_the_cart_against_ida_and_the_cartesian_reference():
    """``fmigen validate`` on the prescribed cart: the demand steps to 5 cm
    at t = 0 (the filter moves the cart there in ~6 τ while the rod swings).
    The FMU passes against IDA and the Cartesian reference at validate's
    tolerances, coordinates, velocities and drive (the references' drive
    at the FMU's state, to rounding), and the energy balance counts the
    drive's work.  The IDA reference's drive along its own trajectory is the
    hand-written model's inverse dynamics there.  Before prescribed motion
    reached the references, validate refused this mechanism."""
    from fmigen.verify.validate import validate
    r = validate(cart_pendulum(), stop_time=0.5, step=2.5e-4, input_signals={"x_demand": "0.05"})
    ida, cart = r.references["ida"], r.references["cartesian"]
    print(f"prescribed cart validate: x {ida['max_abs_error']['x']:.2e}, th {ida['max_abs_error']['th']:.2e} m/rad, "
          f"drive at the FMU's state {ida['max_rel_drive_error']['x']:.1e} (IDA) "
          f"{cart['max_rel_drive_error']['x']:.1e} (Cartesian), along the references "
          f"{ida['max_rel_drive_difference']['x']:.1e}, energy {r.energy_drift:.1e}")
    assert r.passed and ida["drive_passed"] and cart["drive_passed"]
    assert abs(r.fmu_result["x"][-1] - 0.05) < 1e-3          # it went where the demand is
    assert max(ida["max_rel_drive_error"]["x"], cart["max_rel_drive_error"]["x"]) < 1e-12
    ref = r.reference
    hand = np.array([reference(0.0, np.r_[q, v], 0.05)[1] for q, v in zip(ref.q, ref.v)])
    assert np.abs(ref.drive["x"] - hand).max() < 1e-10 * np.abs(hand).max()
    assert np.abs(hand).max() > 10.0                     # 2.5 kg started at 500 m/s²


def test_validate_follows_a_smooth_demand_signal():
    """A demand given as a signal (a 5 cm smoothstep over 0.5 s): the
    references follow the expression, the FMU its samples at every step.
    Coordinates, velocities and drives pass against both references at the
    default 1 ms; the energy balance does not and is not asserted: the
    FMU's drive is ω²·m times its piecewise-linear demand's distance from
    the expression between samples, work the balance, integrated from the
    samples, does not see (README)."""
    from fmigen.verify.validate import validate
    r = validate(cart_pendulum(), stop_time=1.0, input_signals={"x_demand": "0.05*smoothstep(t, 0.1, 0.6)"})
    for key in ("ida", "cartesian"):
        entry = r.references[key]
        assert entry["passed"] and entry["drive_passed"], (key, entry)
    assert abs(r.fmu_result["x"][-1] - 0.05) < 1e-5


def test_validate_drives_the_fourbar_crank():
    """A closed loop through validate --peer mujoco: the four-bar's crank
    follows a demand that steps by 0.8 rad (time constant 20 ms), the
    coupler and rocker follow through the loop.  It passes against IDA,
    the Cartesian reference (its crank angle from the marker frames, atan2
    of two axis products) and MuJoCo (the drive solved from MuJoCo's own
    accelerations at every RK4 stage) at validate's tolerances, drives
    included; MuJoCo's distance to the FMU is IDA's (the FMU's own error)
    within MuJoCo's own constraint violation (its loop closure is soft:
    measured 1.8e-10 apart, violation 1.5e-9)."""
    pytest.importorskip("mujoco")
    import importlib
    from fmigen.verify.validate import validate
    s = importlib.import_module("mechanisms.fourbar_joints").build()
    s.prescribe("theta", s.input("theta_demand", math.pi / 2, "rad"), time_constant=0.02)
    r = validate(s, stop_time=1.0, step=5e-4, input_signals={"theta_demand": "pi/2 + 0.8"}, peer="mujoco")
    ida, cart, mj = r.references["ida"], r.references["cartesian"], r.references["mujoco"]
    print(f"four-bar validate: theta {ida['max_abs_error']['theta']:.2e} rad (MuJoCo "
          f"{mj['max_abs_error']['theta']:.2e}, its violation {mj['mujoco_constraint_violation']:.1e}), drive at "
          f"the FMU's state {ida['max_rel_drive_error']['theta']:.1e} / {cart['max_rel_drive_error']['theta']:.1e}, "
          f"along the references {cart['max_rel_drive_difference']['theta']:.1e}, energy {r.energy_drift:.1e}")
    assert r.passed and ida["drive_passed"] and cart["drive_passed"] and mj["passed"]
    assert abs(r.fmu_result["theta"][-1] - (math.pi / 2 + 0.8)) < 1e-3
    assert max(ida["max_rel_drive_error"]["theta"], cart["max_rel_drive_error"]["theta"]) < 1e-12
    for name, e in ida["max_abs_error"].items():
        assert abs(mj["max_abs_error"][name] - e) < mj["mujoco_constraint_violation"], name


def test_fourbar_crank_drive_matches_the_dae_inverse_dynamics(tmp_path):
    """A closed loop: the four-bar's crank follows an input.  At FMU states
    along a motion, the crank's driving torque (``drive_theta``) equals the
    inverse dynamics of the DAE (M q̈ + Φ_qᵀλ = F + e_θ τ_d, Φ_q q̈ = γ,
    q̈_θ = the filter's acceleration, one linear solve on the model's own
    equations, without the embedding or the Gröbner kinematics), and the
    crank joint's reaction moment about its axis carries it with the
    input torque tau."""
    import importlib
    from fmigen.derive.dae import build_dae
    from fmigen.frontends.joint_model import to_mechanism
    s = importlib.import_module("mechanisms.fourbar_joints").build()
    s.independent = ["theta"]
    s.prescribe("theta", s.input("theta_demand", math.pi / 2, "rad"), time_constant=0.02)
    s.reaction("theta")
    (path,), _ = build_fmus(s, [(tmp_path / "fb.fmu", "2", "cs")], solver="rk4", step=1e-3, windows=False)
    num = build_dae(to_mechanism(s)).numeric
    fmu, vr, md = _open(path, "cs")
    names = [c.name for c in to_mechanism(s).coordinates]
    ith = names.index("theta")
    worst, worst_mz, swing = 0.0, 0.0, 0.0
    for k in range(40):
        t = 0.025 * k
        u = math.pi / 2 + 0.8 * math.sin(5 * t)
        fmu.setReal([vr["theta_demand"]], [u])
        fmu.doStep(t, 0.025)
        q = np.array(fmu.getReal([vr[n] for n in names]))
        v = np.array(fmu.getReal([vr[f"der({n})"] for n in names]))
        n, m = len(q), len(num.Phi(t, q))
        w = 1 / 0.02
        A = np.zeros((n + m + 1, n + m + 1))
        A[:n, :n] = num.M(t, q)
        A[:n, n:n + m] = num.Phi_q(t, q).T
        A[ith, n + m] = -1.0
        A[n:n + m, :n] = num.Phi_q(t, q)
        A[n + m, ith] = 1.0
        b = np.concatenate([num.F(t, q, v), num.gamma(t, q, v), [w * w * (u - q[ith]) - 2 * w * v[ith]]])
        drive = np.linalg.solve(A, b)[-1]
        got, mz = fmu.getReal([vr["drive_theta"], vr["reaction_theta_mz"]])
        worst = max(worst, abs(got - drive) / (1 + abs(drive)))
        worst_mz = max(worst_mz, abs(mz - (6.0 + got)) / (1 + abs(mz)))
        swing = max(swing, abs(q[ith] - math.pi / 2))
    print(f"four-bar drive vs DAE inverse dynamics {worst:.2e}, reaction mz {worst_mz:.2e}, swing {swing:.3f}")
    assert swing > 0.5
    assert worst < 1e-9, worst
    assert worst_mz < 1e-9, worst_mz
    fmu.terminate()
    fmu.freeInstance()
