"""Joint limits (``JointSystem.limit``): a compliant stop on a joint
coordinate, with Model Exchange state events at contact and release.

The closed forms come from a free rotor (inertia J about its axis, no
gravity) spinning at ω into an undamped torsional stop of stiffness k at
``upper``, then back into the one at ``lower``.  Inside a stop the motion is
a half period of the oscillator J δ̈ = −k δ, so:

* the largest penetration is δ_max = ω·sqrt(J/k) (energy: ½ k δ² = ½ J ω²),
  and at every state inside ½ J q̇² + ½ k δ² = ½ J ω²;
* the contact lasts π·sqrt(J/k) and the rotor leaves at −ω (no damping);
* so the contacts are at t = upper/ω, upper/ω + π·sqrt(J/k), then at the
  lower stop (upper − lower)/ω later, and it leaves that π·sqrt(J/k) after.

A closed loop with a stop (the four-bar's crank into a damped stop) is
checked against the IDA DAE reference and the Cartesian reference by
``validate``.
"""
import math

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu
from fmpy.validation import validate_fmu

from fmigen.build.pipeline import build_fmus
from fmigen.joints import JointSystem
from fmigen.model import ModelError

J, K, W = 0.5, 200.0, 2.0
UPPER, LOWER = 0.1, -0.3
SQ = math.sqrt(J / K)                  # 1/natural frequency in the stop
DELTA_MAX = W * SQ                     # 0.1 rad
T_UP_IN = UPPER / W
T_UP_OUT = T_UP_IN + math.pi * SQ
T_LO_IN = T_UP_OUT + (UPPER - LOWER) / W
T_LO_OUT = T_LO_IN + math.pi * SQ


def rotor(step_name="stop_rotor") -> JointSystem:
    s = JointSystem(step_name)
    r = s.body("rotor", 1.0, (J, J, J))
    s.revolute("q", s.ground.origin, r.origin, start=0.0, velocity_start=W)
    s.limit("q", LOWER, UPPER, K, 0)
    return s


@pytest.fixture(scope="module")
def rotor_fmus(tmp_path_factory):
    d = tmp_path_factory.mktemp("stop_rotor")
    targets = [(d / "rotor_cs.fmu", "2", "cs"), (d / "rotor_me.fmu", "2", "me"), (d / "rotor_cs3.fmu", "3", "cs")]
    paths, _ = build_fmus(rotor(), targets, solver="rk4", step=1e-3, windows=False)
    return dict(zip(["cs", "me", "cs3"], paths))


def _check_closed_forms(res, tol, interval):
    q, v, tt = res["q"], res["der(q)"], res["time"]
    up, lo = q - UPPER, LOWER - q
    # the samples' largest penetration: δ_max, or less by the sampling (δ is
    # δ_max cos(t/SQ) about the turning point, a sample within interval/2)
    sampled = DELTA_MAX * math.cos(interval / 2 / SQ) - tol
    assert sampled <= up.max() <= DELTA_MAX + tol
    assert sampled <= lo.max() <= DELTA_MAX + tol
    # the energy in the stop (and outside it the speed) at every state
    delta = np.maximum(up, 0) + np.maximum(lo, 0)
    assert np.abs(0.5 * J * v**2 + 0.5 * K * delta**2 - 0.5 * J * W**2).max() < tol * K * DELTA_MAX
    # after both contacts: rebound at +ω from the lower stop, leaving it at T_LO_OUT
    assert tt[-1] > T_LO_OUT + 0.05
    assert v[-1] == pytest.approx(W, abs=tol)
    assert tt[-1] - (q[-1] - LOWER) / v[-1] == pytest.approx(T_LO_OUT, abs=tol)


@pytest.mark.parametrize("kind", ["cs", "cs3"])
def test_undamped_stop_cs_matches_the_energy_balance(rotor_fmus, kind):
    """Co-Simulation: RK4 at 1 ms evaluates the piecewise torque at every
    stage, so a step that straddles contact integrates a kink (the torque is
    continuous, its slope jumps): its local error is O(h³), not O(h⁵), and
    how large depends on where in the step the contact falls.  Measured
    over the four crossings, rebound speed, release time and energy at
    1 / 0.5 / 0.25 ms: 1.1e-5 / 4.9e-7 / 2.7e-7, 8.1e-7 / 2.8e-7 / 1.2e-8,
    5.6e-7 / 1.4e-7 / 1.3e-8 (of k·δ_max)."""
    path = rotor_fmus[kind]
    assert validate_fmu(str(path)) == []
    res = simulate_fmu(str(path), stop_time=0.7, output_interval=1e-3)
    _check_closed_forms(res, 2e-5, 1e-3)


def test_me_reports_contact_and_release_as_state_events(rotor_fmus):
    path = rotor_fmus["me"]
    assert validate_fmu(str(path)) == []
    assert read_model_description(str(path)).numberOfEventIndicators == 2
    # the output grid (0.03) never hits a contact time: the rows fmpy adds at
    # an event (twice: before and after it) are CVode's located roots
    res = simulate_fmu(str(path), stop_time=0.7, output_interval=0.03, fmi_type="ModelExchange",
                       relative_tolerance=1e-10)
    tt = res["time"]
    events = tt[1:][np.diff(tt) == 0]
    assert len(events) == 4, events
    assert events == pytest.approx([T_UP_IN, T_UP_OUT, T_LO_IN, T_LO_OUT], abs=1e-8)
    _check_closed_forms(res, 1e-7, 0.03)


def test_co_simulation_declares_no_event_indicators(rotor_fmus):
    assert read_model_description(str(rotor_fmus["cs"])).numberOfEventIndicators == 0


def test_python_runtime_stop_equals_the_c_fmu(rotor_fmus, tmp_path):
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu.pyruntime import build_python_fmu
    path, _ = build_python_fmu(rotor(), tmp_path / "rotor_py.fmu", step=1e-3)
    py = simulate_fmu(str(path), stop_time=0.7, output_interval=1e-3)
    c = simulate_fmu(str(rotor_fmus["cs"]), stop_time=0.7, output_interval=1e-3)
    assert np.abs(py["q"] - c["q"]).max() < 1e-12
    _check_closed_forms(py, 2e-5, 1e-3)


def test_damper_acts_only_in_the_stop_and_never_pulls(tmp_path):
    """A heavily damped stop (c = 4 sqrt(J k), twice critical): the rotor
    is caught and pushed back slowly; the torque is never of the pulling
    sign and is zero outside the stop, so the rotor ends inside or at the
    boundary with the force −max(0, k δ + c δ̇) ≤ 0."""
    s = JointSystem("stop_rotor_damped")
    r = s.body("rotor", 1.0, (J, J, J))
    s.revolute("q", s.ground.origin, r.origin, start=0.0, velocity_start=W)
    s.limit("q", -math.inf, UPPER, K, 4 * math.sqrt(J * K))
    s.output("tau", s.joint_loads[0].expr, "N.m")
    (path,), _ = build_fmus(s, [(tmp_path / "damped.fmu", "2", "cs")], solver="rk4", step=1e-4, windows=False)
    res = simulate_fmu(str(path), stop_time=1.0, output_interval=1e-3)
    q, v, tau = res["q"], res["der(q)"], res["tau"]
    assert tau.max() <= 0.0
    assert np.all(tau[q <= UPPER] == 0.0)
    # the damper's jump at contact: −c ω at the first sample inside
    inside = np.flatnonzero(q > UPPER)
    assert inside.size and v.min() > -W        # it never bounces back at full speed
    k0 = inside[0]
    assert tau[k0] == pytest.approx(-(K * (q[k0] - UPPER) + 4 * math.sqrt(J * K) * v[k0]), rel=1e-12)


def test_fourbar_crank_stop_matches_the_dae_references():
    """The four-bar's crank, driven by its 6 N·m input, runs into an
    undamped stop 0.6 rad past its start and bounces in it: the FMU against
    the IDA DAE reference and the Cartesian reference (``validate``).  The
    two references, which share no equations with each other, agree to
    1e-7 through the contacts (measured 4e-9); the FMU's fixed-step RK4 meets
    a kink at every crossing, so it converges to them, but not at fourth
    order: measured 1.55e-4 at 1 ms and 4.8e-5 at 0.5 ms (θ, rad)."""
    from mechanisms.fourbar_joints import build
    from fmigen.verify.validate import validate
    errors = []
    for h in (1e-3, 5e-4):
        s = build()
        s.name = "fourbar_crank_stop"
        s.limit("theta", -math.inf, math.pi / 2 + 0.6, 2000.0, 0.0)
        r = validate(s, stop_time=2.0, solver="rk4", step=h, output_interval=0.01)
        assert r.fmu_result["theta"].max() > math.pi / 2 + 0.6 + 0.02      # it does hit the stop
        ida, cart = r.reference, r.cartesian
        for k, name in enumerate(ida.names):
            assert np.abs(ida.q[:, k] - cart.q[:, cart.names.index(name)]).max() < 1e-7, name
        errors.append(max(r.references["ida"]["max_abs_error"].values()))
    assert errors[0] < 3e-4 and errors[1] < errors[0] / 2.5, errors


def test_bad_limits_are_clear_errors():
    s = rotor("bad")
    body = s.body("b2", 1.0, (1, 1, 1))
    s.fixed("weld", s.bodies["rotor"].origin, body.origin)
    with pytest.raises(ModelError, match="lower 0.2 is above upper 0.1"):
        s.limit("q", 0.2, 0.1, K)
    with pytest.raises(ModelError, match="stiffness must be finite and ≥ 0"):
        s.limit("q", 0, 0.1, -1.0)
    with pytest.raises(ModelError, match="damping must be finite and ≥ 0"):
        s.limit("q", 0, 0.1, K, -2.0)
    with pytest.raises(ModelError, match="unknown joint 'hinge'"):
        s.limit("hinge", 0, 0.1, K)
    with pytest.raises(ModelError, match="'weld' is fixed and has no coordinate"):
        s.limit("weld", 0, 0.1, K)
    with pytest.raises(ModelError, match="both bounds are infinite"):
        s.limit("q", -math.inf, math.inf, K)
    with pytest.raises(ModelError, match="already has a limit"):
        s.limit("q", -1, 1, K)
    with pytest.raises(ModelError, match="may use parameters only"):
        s.limit("q", -1, s.joints["q"].coordinates[0].symbol, K)


# A force–deflection table (``bump_stop``): slope k1 = 50 N·m/rad up to
# d1 = 0.05 rad, then k2 = 400.  The rotor (J, ω as above) reaches d1 after
# τ1 = sqrt(J/k1)·asin(d1 / (ω sqrt(J/k1))) with ½ J v1² = ½ J ω² − ½ k1 d1²;
# beyond d1 it oscillates about x_eq = −k1 d1 / k2 (x = δ − d1) at
# ω2 = sqrt(k2/J) with amplitude A = sqrt(x_eq² + (v1/ω2)²), so it spends
# τ2 = (π − 2 asin(−x_eq/A))/ω2 there and reaches δ_max = d1 + A + x_eq.
K1, D1, K2, AT = 50.0, 0.05, 400.0, 0.1


def bump_rotor() -> JointSystem:
    s = JointSystem("bump_rotor")
    r = s.body("rotor", 1.0, (J, J, J))
    s.revolute("q", s.ground.origin, r.origin, start=0.0, velocity_start=W)
    s.bump_stop("q", AT, [(0, 0), (D1, K1 * D1), (2 * D1, K1 * D1 + K2 * D1)])
    return s


def test_bump_stop_table_matches_its_closed_form(tmp_path):
    a1 = W * math.sqrt(J / K1)
    tau1 = math.sqrt(J / K1) * math.asin(D1 / a1)
    v1 = math.sqrt(W**2 - K1 * D1**2 / J)
    w2, x_eq = math.sqrt(K2 / J), -K1 * D1 / K2
    amp = math.hypot(x_eq, v1 / w2)
    tau2 = (math.pi - 2 * math.asin(-x_eq / amp)) / w2
    delta_max = D1 + amp + x_eq                      # 0.1125
    t_in = AT / W
    (cs, me), _ = build_fmus(bump_rotor(), [(tmp_path / "cs.fmu", "2", "cs"), (tmp_path / "me.fmu", "2", "me")],
                             solver="rk4", step=1e-3, windows=False)
    # ME: contact and the table's knot are state events, located by CVode
    assert read_model_description(str(me)).numberOfEventIndicators == 2
    res = simulate_fmu(str(me), stop_time=0.4, output_interval=0.03, fmi_type="ModelExchange",
                       relative_tolerance=1e-10)
    tt = res["time"]
    assert tt[1:][np.diff(tt) == 0] == pytest.approx(
        [t_in, t_in + tau1, t_in + tau1 + tau2, t_in + 2 * tau1 + tau2], abs=1e-8)
    assert res["der(q)"][-1] == pytest.approx(-W, abs=1e-7)
    # CS at 1 ms: the largest deflection (sampled) and the rebound
    res = simulate_fmu(str(cs), stop_time=0.4, output_interval=1e-3)
    assert delta_max * math.cos(5e-4 * w2) - 1e-5 <= res["q"].max() - AT <= delta_max + 1e-5
    assert res["der(q)"][-1] == pytest.approx(-W, abs=2e-5)


def test_bad_bump_stop_tables_are_clear_errors():
    s = rotor("bad_table")
    with pytest.raises(ModelError, match="must start at deflection 0"):
        s.bump_stop("q", 0.1, [(0.01, 0), (0.1, 5)])
    with pytest.raises(ModelError, match="must increase strictly"):
        s.bump_stop("q", 0.1, [(0, 0), (0.1, 5), (0.1, 6)])
    with pytest.raises(ModelError, match="forces must be finite and ≥ 0"):
        s.bump_stop("q", 0.1, [(0, 0), (0.1, -5)])
    with pytest.raises(ModelError, match="at least two"):
        s.bump_stop("q", 0.1, [(0, 0)])
    with pytest.raises(ModelError, match="side must be 'upper' or 'lower'"):
        s.bump_stop("q", 0.1, [(0, 0), (0.1, 5)], side="top")
    with pytest.raises(ModelError, match="damping must be ≥ 0"):
        s.bump_stop("q", 0.1, [(0, 0), (0.1, 5)], damping=-1)
    with pytest.raises(ModelError, match="unknown joint 'hinge'"):
        s.bump_stop("hinge", 0.1, [(0, 0), (0.1, 5)])
