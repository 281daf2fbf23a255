"""fmigen export-modelica with joint reactions (``s.reaction``) and prescribed
coordinates (``s.prescribe``): the exported model in rumoca against closed
forms and against the FMU of the same mechanism (rk4 at 1e-4), every
coordinate, velocity and output to 1e-6."""

import numpy as np
import pytest

rumoca = pytest.importorskip("rumoca")

from fmigen.build.pipeline import build_fmu  # noqa: E402
from fmigen.tools.modelica import export_mechanism  # noqa: E402
from fmigen.verify.validate import simulate  # noqa: E402

H = 0.01
CONFIG = dict(solver="rk-like", rtol=1e-11, atol=1e-13)
COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")


def _samples(result, name, times):
    t, y = np.asarray(result.time), np.asarray(result[name])
    keep = np.r_[np.diff(t) > 0, True]   # an event repeats its time: the value after it
    return np.interp(times, t[keep], y[keep])


def _in_a_wrapper(text, name, modifiers):
    """The exported package with a model ``W`` that instantiates the plant as
    ``plant(modifiers)`` (an input bound to another value), and W's name."""
    pkg, model = name.split(".")
    head, _, _ = text.rpartition(f"end {pkg};")
    return head + f"  model W\n    {model} plant({modifiers});\n  end W;\nend {pkg};\n", f"{pkg}.W"


def _against_the_fmu(system, tmp_path, stop, outputs, start_values=None, prefix=""):
    """max |Modelica − FMU| over every coordinate, velocity and ``outputs``,
    the model (``system`` exported, ``prefix`` the instance path of a
    wrapper's plant) simulated over ``stop`` s."""
    text, name, compiled = export_mechanism(system)
    if start_values:
        text, name = _in_a_wrapper(text, name, ", ".join(f"{k} = {v!r}" for k, v in start_values.items()))
    model = rumoca.Session().loads(text, model=name)
    structure = model.structure()
    assert structure.is_balanced
    assert structure.n_states == 2 * len(compiled.independent_names)
    result = model.simulate((0, stop), dt=H, config=rumoca.SimConfig(**CONFIG))
    fmu, _ = build_fmu(system, tmp_path / "m.fmu", solver="rk4", step=1e-4, windows=False)
    names = compiled.dae.names
    ref = simulate(fmu, names, stop, H, start_values=start_values, extra=outputs)
    pairs = [*[(c, c) for c in names], *[("v_" + c, f"der({c})") for c in names], *[(o, o) for o in outputs]]
    worst = {f: float(np.max(np.abs(_samples(result, prefix + m, ref["time"]) - ref[f]))) for m, f in pairs}
    return worst, result, ref


def test_rod_pendulum_reactions_meet_the_closed_forms():
    """The uniform rod released horizontal (tests/test_reactions.py): the
    pivot carries m·g/4 at release and 5·m·g/2 through the vertical; at every
    angle of the motion m·g·(9/4 sin θ cos θ, 1 − 3/4 cos² θ + 3/2 sin² θ)."""
    from test_reactions import G, M, rod_pendulum
    text, name, _ = export_mechanism(rod_pendulum())
    model = rumoca.Session().loads(text, model=name)
    assert model.structure().is_balanced
    result = model.simulate((0, 1.0), dt=1e-3, config=rumoca.SimConfig(**CONFIG))
    times = np.arange(0, 1.0 + 5e-4, 1e-3)
    theta = _samples(result, "pivot", times)
    r = np.array([_samples(result, f"reaction_pivot_{c}", times) for c in COMPONENTS]).T
    assert r[0] == pytest.approx([0, M * G / 4, 0, 0, 0, 0], abs=1e-12 * M * G)
    s, c = np.sin(theta), np.cos(theta)
    assert np.abs(r[:, 0] - M * G * 9 / 4 * s * c).max() < 1e-8 * M * G
    assert np.abs(r[:, 1] - M * G * (1 - 0.75 * c**2 + 1.5 * s**2)).max() < 1e-8 * M * G
    assert np.abs(r[:, 2:]).max() < 1e-12 * M * G
    # through the vertical (θ = −π/2, between two samples): 5 m g / 2
    k = int(np.argmax(theta < -np.pi / 2))
    assert k > 0
    fy = np.interp(-np.pi / 2, theta[[k, k - 1]], r[[k, k - 1], 1])
    # the bound of linear interpolation, |f''|·Δθ²/8 with f = m g (5/2 − 9/4 cos² θ),
    # |f''| ≤ 9/2 m g, over the samples' own Δθ (measured 1.7e-6 m g at
    # Δθ = 4.4e-3, bound 1.1e-5), plus the every-angle check's 1e-8
    dtheta = abs(theta[k - 1] - theta[k])
    assert abs(fy - 5 * M * G / 2) < (4.5 * dtheta**2 / 8 + 1e-8) * M * G


def test_fourbar_joints_reactions_match_the_fmu(tmp_path):
    """Every joint of the four-bar reacts, the cut joint through a constraint
    multiplier: the model's λ from Φ_dᵀ λ = (F − M q̈)_d against the FMU's
    solve of the whole K."""
    from mechanisms.fourbar_joints import build
    system = build()
    for joint in system.joints:
        system.reaction(joint)
    outputs = [f"reaction_{j}_{c}" for j in system.joints for c in COMPONENTS]
    worst, result, ref = _against_the_fmu(system, tmp_path, 1.0, outputs)
    print("fourbar_joints: max |Modelica - FMU|", max(worst.values()), max(worst, key=worst.get))
    assert max(np.ptp(ref[o]) for o in outputs) > 1.0    # the reactions vary
    assert max(worst.values()) <= 1e-6


def test_prescribed_cart_follows_its_demand_like_the_fmu(tmp_path):
    """The cart of tests/test_prescribe.py, its demand stepped to 5 cm: the
    prescribed coordinate follows the filter, the rod swings, and the drive
    and the rail's reaction agree with the FMU's."""
    from test_prescribe import cart_pendulum
    outputs = ["drive_x", *[f"reaction_x_{c}" for c in COMPONENTS]]
    worst, result, ref = _against_the_fmu(cart_pendulum(), tmp_path, 0.5, outputs, {"x_demand": 0.05},
                                          prefix="plant.")
    print("prescribed_cart: max |Modelica - FMU|", max(worst.values()), max(worst, key=worst.get))
    assert abs(ref["x"][-1] - 0.05) < 1e-6 and np.ptp(ref["drive_x"]) > 1.0
    assert max(worst.values()) <= 1e-6


def test_kinematic_landing_gear_follows_its_piston_like_the_fmu(tmp_path):
    """The kinematic landing gear: the piston length and its rate are inputs
    (a wrapper drives them, 200 → 300 cm in 1 s), the angles and their rates
    outputs; against the kinematic FMU fed the same ramp, compared at the
    same piston lengths.  predictorPeriod 10 ms (1 cm of stroke, the
    angles' change about 0.025 rad): at the default 1 ms rumoca's events cost
    about 70 ms of CPU each."""
    angles = ["theta_A", "theta_B", "theta_D", "theta_F"]
    text, name, compiled = export_mechanism("landing_gear")
    assert [compiled.dae.names[i] for i in compiled.embedding.independent] == ["p_BC"]
    text, name = _in_a_wrapper(text, name, "p_BC = 200.0 + 100.0*time, v_p_BC = 100.0, predictorPeriod = 0.01")
    model = rumoca.Session().loads(text, model=name)
    structure = model.structure()
    assert structure.is_balanced and structure.n_states == 0
    result = model.simulate((0, 1.0), dt=H, config=rumoca.SimConfig(**CONFIG))
    fmu, _ = build_fmu("landing_gear", tmp_path / "lg.fmu", windows=False)
    ref = simulate(fmu, [], 1.0, H, signals={"p_BC": lambda t: 200.0 + 100.0 * t, "der(p_BC)": lambda t: 100.0},
                   extra=["p_BC", *angles, *[f"der({a})" for a in angles]])
    at = (ref["p_BC"] - 200.0) / 100.0         # the times of the FMU's piston lengths
    assert ref["p_BC"].max() > 299.0 and np.ptp(ref["theta_A"]) > 0.2
    worst = {a: float(np.max(np.abs(_samples(result, "plant." + m, at) - ref[a])))
             for m, a in [*[(a, a) for a in angles], *[("v_" + a, f"der({a})") for a in angles]]}
    print("landing_gear: max |Modelica - FMU|", max(worst.values()), max(worst, key=worst.get))
    assert max(worst.values()) <= 1e-6
