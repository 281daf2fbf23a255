"""The energy check's work integral W = ∫ P dt, against closed forms.

validate samples the FMU every step (1 ms) and integrates the loads' power
over those samples.  A motion that starts from rest under a stiff damper
(the multi-link corner's coil-over) has a power that changes within a few
milliseconds, and the cumulative Simpson rule is least accurate there, at
its first odd-numbered samples: the multi-link's energy check reported a
drift of 2.05e-5 that fell 16-fold per halving of the sample spacing and
did not change with the FMU's step, the quadrature's error and not the
FMU's.  Here the work of a constant torque is
τ·(θ(t) − θ(0)) exactly, for any motion θ(t), so a prescribed motion with a
fast transient gives the work in closed form at every sample.
"""
import math

import numpy as np

from fmigen.joints import JointSystem

TAU = 2.5
LAM = 200.0     # the transient's rate: λh = 0.2 at the FMU's 1 ms samples


def torqued_pendulum():
    s = JointSystem("torqued_pendulum")
    rod = s.body("rod", 1.0, (0, 0, 1.0 / 12), com=(0.5, 0))
    s.revolute("theta", s.ground.origin, rod.origin, start=0.3)
    s.force("drive", rod.origin, torque=(0, 0, TAU))
    s.gravity = (0, -9.81, 0)
    s.independent = ["theta"]
    s.dof = 1
    return s


def prescribed_motion(h=1e-3, stop=0.2):
    """θ(t) with a transient e^(−λt) from rest and a slow swing; θ̇ exact."""
    t = np.arange(0.0, stop + h / 2, h)
    theta = 0.3 + 0.4 * (1 - np.exp(-LAM * t) * (1 + LAM * t)) + 0.2 * np.sin(3 * t)
    theta_dot = 0.4 * LAM**2 * t * np.exp(-LAM * t) + 0.6 * np.cos(3 * t)
    return t, theta, theta_dot


def relative_work_error(W, theta):
    exact = TAU * (theta - theta[0])
    return float(np.abs(W - exact).max() / np.abs(exact).max())


def test_the_work_from_the_joint_description_is_exact_at_every_sample():
    from fmigen.verify.cartesian import CartesianModel
    t, theta, theta_dot = prescribed_motion()
    _, _, W = CartesianModel(torqued_pendulum()).energy_balance(t, {"theta": theta}, {"theta": theta_dot})
    # cumulative Simpson: 1.2e-4 (at the first samples); this rule 1.5e-8
    assert relative_work_error(W, theta) < 1e-7


def test_the_work_from_the_model_stage_is_exact_at_every_sample():
    from fmigen.build.pipeline import as_mechanism
    from fmigen.derive.dae import build_dae
    from fmigen.verify.validate import model_energy_balance
    t, theta, theta_dot = prescribed_motion()
    dae = build_dae(as_mechanism(torqued_pendulum(), use_cache=False))
    assert dae.names == ["theta"]
    _, _, W = model_energy_balance(dae, t, theta[:, None], theta_dot[:, None])
    assert relative_work_error(W, theta) < 1e-7


def test_the_work_integral_converges_at_its_order_and_takes_uneven_samples():
    from fmigen.verify.energy import work_integral
    # P = λ e^(−λt) + cos t, W = 1 − e^(−λt) + sin t; halving h divides the
    # error by about 2⁸ (degree 7), until rounding
    errors = []
    for h in (2e-3, 1e-3):
        t = np.arange(0.0, 0.1 + h / 2, h)
        W = work_integral(LAM * np.exp(-LAM * t) + np.cos(t), t)
        errors.append(np.abs(W - (1 - np.exp(-LAM * t) + np.sin(t))).max())
    assert errors[1] < 1e-7 and errors[0] / errors[1] > 100
    # a shorter last step (fmpy's last communication step) and jittered times
    rng = np.random.default_rng(3)
    t = np.concatenate([np.arange(0.0, 0.1, 1e-3) + rng.uniform(-2e-4, 2e-4, 100) * (np.arange(100) > 0), [0.1]])
    W = work_integral(np.cos(5 * t), t)
    assert np.abs(W - np.sin(5 * t) / 5).max() < 1e-12
    assert list(work_integral([2.0, 2.0], [0.0, 0.5])) == [0.0, 1.0]
    assert math.isclose(work_integral([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])[-1], 4.0)
