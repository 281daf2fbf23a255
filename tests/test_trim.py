"""Static trim (``JointSystem.trim``): a spring's preload solved so that the
start pose is at rest, as an expression in the tunable parameters.

Closed form: a mass m on a vertical slider (coordinate z, start Z0), on a
spring from the ground origin of stiffness k and free length L0.  At rest the
spring carries the weight in compression: its tension P + k (Z0 − L0) equals
−m g, so the trimmed preload is P = −m g − k (Z0 − L0).  An FMU started there
stays there (z = Z0, ż = 0 to rounding), also after m or g is set before
initialization, in both runtimes, CS and ME, FMI 2 and 3.
"""
import numpy as np
import pytest
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu

from conftest import build_fmi_variants
from fmigen.joints import JointSystem, Z
from fmigen.model import ModelError

M, G, K, L0, Z0 = 2.0, 9.81, 1000.0, 0.4, 0.3
#: the spring's ground end along x when it is a hard point, and its range [m]
ANCHOR, ANCHOR_RANGE = 0.2, (0.15, 0.25)


def preload(m=M, g=G):
    return -m * g - K * (Z0 - L0)


def sprung_mass(trim=True, anchor=None) -> JointSystem:
    """``anchor``: the spring's ground end at (a, 0, 0), ``a`` a hard point
    of that default and the range ``ANCHOR_RANGE`` (else at the origin)."""
    s = JointSystem("trim_mass")
    m = s.parameter("m", M, "kg", tunable=True)
    g = s.parameter("g", G, "m/s2", tunable=True)
    body = s.body("mass", m, (0.1, 0.1, 0.1))
    s.prismatic("z", s.ground.origin, body.origin, axis=Z, start=Z0)
    end = s.ground.origin if anchor is None else \
        s.ground.marker("anchor", (s.parameter("a", anchor, "m", tunable=True, range=ANCHOR_RANGE), 0, 0))
    s.spring_damper("coil", end, body.origin, K, damping=50.0, free_length=L0)
    s.gravity = (0, 0, -g)
    if trim:
        s.trim("coil", "z")
    return s


@pytest.fixture(scope="module")
def trim_fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("trim_mass")
    return build_fmi_variants(sprung_mass(), out, "trim")


@pytest.mark.parametrize("variant", [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")])
def test_trimmed_mass_rests_and_reports_the_closed_form_preload(trim_fmus, variant):
    path = trim_fmus[variant]
    assert validate_fmu(str(path)) == []
    for m, g in ((M, G), (5.0, G), (M, 3.7)):
        res = simulate_fmu(str(path), stop_time=1.0, output_interval=0.05, start_values={"m": m, "g": g})
        assert res["trim_coil"] == pytest.approx(preload(m, g), abs=1e-12 * K)
        assert np.abs(res["z"] - Z0).max() < 1e-12
        assert np.abs(res["der(z)"]).max() < 1e-11


def test_untrimmed_mass_falls(tmp_path):
    """The same mass without the trim (preload 0) does not rest: the check
    above can fail."""
    from fmigen.build.pipeline import build_fmu
    path = build_fmu(sprung_mass(trim=False), tmp_path / "untrimmed.fmu", solver="rk4", step=1e-3)
    path = path[0] if isinstance(path, tuple) else path
    res = simulate_fmu(str(path), stop_time=0.2, output_interval=0.05)
    assert np.abs(res["z"] - Z0).max() > 1e-3


def test_python_runtime_trim_equals_the_c_fmu(trim_fmus, tmp_path):
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu.pyruntime import build_python_fmu
    path, _ = build_python_fmu(sprung_mass(), tmp_path / "trim_py.fmu", step=1e-3)
    py = simulate_fmu(str(path), stop_time=0.3, output_interval=0.05, start_values={"m": 5.0})
    assert py["trim_coil"] == pytest.approx(preload(5.0), abs=1e-12 * K)
    assert np.abs(py["z"] - Z0).max() < 1e-12


def cartesian_trim(system, fmu_result=None):
    """The trimmed preloads of ``system`` by the Cartesian reference
    (``verify/trims.py``: its own constrained twists and body wrenches,
    nothing of the model stage's), at the start the FMU assembled
    (``fmu_result``'s first row, as ``validate`` does), else at the
    conversion's start."""
    from fmigen.frontends.joint_model import to_mechanism
    from fmigen.verify.cartesian import CartesianModel
    starts = {c.name: c.start if fmu_result is None else float(fmu_result[c.name][0])
              for c in to_mechanism(system).coordinates}
    return CartesianModel(system).simulate(starts, {}, system.independent or list(starts),
                                           np.linspace(0.0, 1e-3, 3)).trims


@pytest.fixture(scope="module")
def hard_point_fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("trim_hard_point")
    return build_fmi_variants(sprung_mass(anchor=ANCHOR), out, "trim_hard_point")


def hard_point_preload(a, m=M, g=G):
    """The closed form with the spring's ground end at (a, 0, 0): its
    tension's vertical share is Z0/ℓ, ℓ = √(a² + Z0²)."""
    length = np.hypot(a, Z0)
    return -m * g * length / Z0 - K * (length - L0)


@pytest.mark.parametrize("variant", [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")])
def test_the_trim_follows_a_hard_point_set_before_initialization(hard_point_fmus, variant):
    """A hard point in a trimmed spring's geometry (the spring's ground end
    at (a, 0, 0)): the FMU solves the trim at initialization, at the start
    it assembled for the ``a`` set, so the preload is the closed form and
    the Cartesian reference's at that ``a``, and the mass rests there
    (on main the preload stayed the default geometry's and the mass moved
    by millimetres)."""
    path = str(hard_point_fmus[variant])
    for a, m in ((ANCHOR, M), (0.24, M), (0.16, 5.0)):
        res = simulate_fmu(path, stop_time=0.5, output_interval=0.05, start_values={"a": a, "m": m})
        assert res["trim_coil"] == pytest.approx(hard_point_preload(a, m), abs=1e-12 * K)
        assert np.abs(res["z"] - Z0).max() < 1e-12
        assert np.abs(res["der(z)"]).max() < 1e-11
    reference = cartesian_trim(sprung_mass(anchor=0.24))["coil"]
    moved = simulate_fmu(path, stop_time=0.1, output_interval=0.05, start_values={"a": 0.24})
    assert moved["trim_coil"][0] == pytest.approx(reference, abs=1e-12 * K)


def test_python_runtime_trim_follows_a_hard_point(tmp_path):
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu.pyruntime import build_python_fmu
    path, _ = build_python_fmu(sprung_mass(anchor=ANCHOR), tmp_path / "trim_hard_point_py.fmu", step=1e-3)
    py = simulate_fmu(str(path), stop_time=0.3, output_interval=0.05, start_values={"a": 0.24})
    assert py["trim_coil"] == pytest.approx(hard_point_preload(0.24), abs=1e-12 * K)
    assert np.abs(py["z"] - Z0).max() < 1e-12


def singular_trim_mass() -> JointSystem:
    """The sprung mass with the spring's ground end at (0.2, 0, h), ``h`` a
    hard point whose range reaches the mass's height Z0: there the spring
    lies horizontal and no preload acts along z."""
    s = JointSystem("trim_singular")
    m = s.parameter("m", M, "kg", tunable=True)
    body = s.body("mass", m, (0.1, 0.1, 0.1))
    s.prismatic("z", s.ground.origin, body.origin, axis=Z, start=Z0)
    h = s.parameter("h", 0.0, "m", tunable=True, range=(-0.1, Z0))
    s.spring_damper("coil", s.ground.marker("anchor", (0.2, 0, h)), body.origin, K, damping=50.0, free_length=L0)
    s.gravity = (0, 0, -G)
    s.trim("coil", "z")
    return s


def test_a_trim_singular_at_a_set_hard_point_is_an_error(tmp_path):
    """A hard point set where the trim has no solution: ExitInitializationMode
    fails with the trim's message (C, CS and ME), and the Python runtime
    refuses it too, never a preload of garbage."""
    variants = build_fmi_variants(singular_trim_mass(), tmp_path, "trim_singular")
    for variant, path in variants.items():
        ok = simulate_fmu(str(path), stop_time=0.05, output_interval=0.05, start_values={"h": 0.1})
        assert np.isfinite(ok["trim_coil"]).all()
        messages = []
        with pytest.raises(Exception):
            simulate_fmu(str(path), stop_time=0.05, output_interval=0.05, start_values={"h": Z0},
                         logger=lambda *args: messages.append(args[-1]), debug_logging=True)
        text = b" ".join(m if isinstance(m, bytes) else str(m).encode() for m in messages).decode()
        assert "static trim has no unique solution" in text, (variant, text)
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu.pyruntime import build_python_fmu
    path, _ = build_python_fmu(singular_trim_mass(), tmp_path / "trim_singular_py.fmu", step=1e-3)
    messages = []
    with pytest.raises(Exception):
        simulate_fmu(str(path), stop_time=0.05, output_interval=0.05, start_values={"h": Z0},
                     logger=lambda *args: messages.append(args[-1]), debug_logging=True)
    text = b" ".join(m if isinstance(m, bytes) else str(m).encode() for m in messages).decode()
    assert "static trim has no unique solution" in text, text


def test_bad_trims_are_clear_errors():
    s = sprung_mass(trim=False)
    with pytest.raises(ModelError, match="unknown spring 'spring'"):
        s.trim("spring", "z")
    with pytest.raises(ModelError, match="unknown coordinate 'x'"):
        s.trim("coil", "x")
    s.trim("coil", "z")
    with pytest.raises(ModelError, match="trimmed twice"):
        s.trim("coil", "z")
    p = JointSystem("preloaded")
    b = p.body("mass", 1.0, (0.1, 0.1, 0.1))
    p.prismatic("z", p.ground.origin, b.origin, axis=Z, start=Z0)
    p.spring_damper("coil", p.ground.origin, b.origin, K, preload=3.0)
    with pytest.raises(ModelError, match="already has a preload"):
        p.trim("coil", "z")


def test_quarter_car_trim_matches_the_hand_made_virtual_work_balance():
    """Through a closed loop: the quarter car's coil-over (on the five-link
    corner's spring link, the travel z independent, the links dependent)
    trimmed along z against ``quarter_car_joints.static_preload``, the
    balance the mechanism computes by hand (virtual work along the travel,
    the geometry's derivatives by central differences, which limit the
    agreement).  The trim projects with Φ_d⁻¹Φ_i at the start instead:
    the two share only the mechanism's data."""
    import dataclasses
    from mechanisms import quarter_car_joints as qc
    from fmigen.frontends.joint_model import to_mechanism
    from fmigen.frontends.joint_trim import trim_solution
    s = qc.build()
    s.springs = [dataclasses.replace(sd, preload=0) if sd.name == "coilover" else sd for sd in s.springs]
    s.trim("coilover", "z")
    m = to_mechanism(s)
    (trimmed,) = trim_solution(m).values()
    trimmed = trimmed.xreplace({p.symbol: p.value for p in m.parameters})
    assert float(trimmed) == pytest.approx(qc.static_preload(), rel=1e-9)
    # the coordinate must be independent
    s = qc.build()
    s.springs = [dataclasses.replace(sd, preload=0) if sd.name == "coilover" else sd for sd in s.springs]
    dependent = next(c.name for c in s.coordinates if c.name not in s.independent)
    s.trim("coilover", dependent)
    with pytest.raises(ModelError, match="is a dependent coordinate"):
        to_mechanism(s)


def test_forces_at_rest_are_the_equations_of_motion_at_rest():
    """The trim reads F at q̇ = 0 from the loads alone
    (``Mechanism.forces_at_rest``), not from the equations of motion, whose
    floating-base form (Kane's method) was most of the full vehicle's
    conversion: on a floating chassis with a trailing arm, a spring, a wheel,
    point and marker forces and a closed loop below it, the two agree at
    random poses (q̇ = 0), to round-off."""
    import random
    import sympy as sp
    from fmigen.frontends.joint_model import to_mechanism
    from fmigen.model import t
    from test_joint_model import floating_system
    m = to_mechanism(floating_system())
    assert m.floating_base is not None
    _, F = m.equations_of_motion()
    rest_F = m.forces_at_rest()
    rates = {c.symbol.diff(t): 0 for c in m.coordinates}
    rng = random.Random(1)
    values = {p.symbol: p.value for p in m.parameters} | {i.symbol: i.start + rng.uniform(-1, 1) for i in m.inputs}
    for _ in range(3):
        pose = {c.symbol: c.start + rng.uniform(-0.2, 0.2) for c in m.coordinates} | values
        full = [float(sp.sympify(sp.sympify(e).xreplace(rates).xreplace(pose)).subs(t, 0.3)) for e in F]
        rest = [float(sp.sympify(sp.sympify(e).xreplace(pose)).subs(t, 0.3)) for e in rest_F]
        assert np.allclose(rest, full, rtol=1e-12, atol=1e-12 * max(map(abs, full)))
        assert max(map(abs, full)) > 1.0


def test_reaction_carries_the_trimmed_preload():
    """A joint's reaction counts a trimmed spring with its trimmed preload:
    the sprung mass at rest hangs on its spring alone, so its slider
    transmits no force along z (it did: m g, the reaction's balance took the
    spring's declared preload, 0).  At rest the accelerations are 0."""
    import sympy as sp
    from fmigen.frontends.joint_model import to_mechanism
    from fmigen.frontends.joint_trim import trim_solution
    from fmigen.model import t
    s = sprung_mass()
    s.reaction("z")
    m = to_mechanism(s)
    z = s.coordinate_by_name("z").symbol
    at_rest = {z.diff(t, 2): 0, z.diff(t): 0}
    values = {p.symbol: p.value for p in m.parameters}
    # the preload is a hidden input the runtime solves: here the build's solution
    trimmed = {u: e.xreplace(values) for u, e in trim_solution(m).items()}
    fz = sp.sympify(m.outputs["reaction_z_fz"]).xreplace(at_rest).xreplace({z: Z0}).xreplace({**values, **trimmed})
    assert abs(float(fz)) < 1e-12 * M * G


def sprung_pendulum(trim=True) -> JointSystem:
    """The sprung mass with a pendulum hinged on it, started 0.6 rad out:
    the trim balances z with the swing angle held (the weight of both
    bodies), so z does not stay at rest — the references must solve the
    trim's own condition, not ż̈ = 0."""
    s = sprung_mass(trim=False)
    s.name = "trim_pendulum" if trim else "trim_pendulum_untrimmed"
    bob = s.body("bob", 0.5, (0.05, 0.05, 0.05), com=(0, 0, -0.2))
    s.revolute("swing", s.bodies["mass"].origin, bob.origin, axis=(1, 0, 0), start=0.6)
    if trim:
        s.trim("coil", "z")
    return s


@pytest.mark.parametrize("peer", [None, "mujoco"])
def test_trimmed_mechanism_validates_against_the_independent_references(peer):
    """``fmigen validate`` on a trimmed mechanism: the Cartesian reference,
    the energy balance from the joint description and MuJoCo each solve the
    trim from their own equations and agree with the FMU (they ran the
    spring at preload 0, and the sprung mass fell away from the FMU)."""
    if peer:
        pytest.importorskip("mujoco")
    from fmigen.verify.validate import validate
    r = validate(sprung_pendulum(), stop_time=0.3, solver="rk4", step=1e-4, peer=peer)
    assert r.passed, (r.references, r.energy_drift)
    assert r.references["cartesian"]["passed"]
    assert r.references["cartesian"]["max_abs_error"]["z"] < 1e-8
    if peer:
        assert r.references["mujoco"]["passed"]
    # the trim moves the start: z leaves Z0 through the swing alone
    assert np.abs(r.fmu_result["z"] - Z0).max() > 1e-4


def test_references_solve_the_quarter_car_trim_through_its_loop():
    """Through the quarter car's closed loop (z and two more independent,
    the links dependent): the Cartesian reference (virtual power along its
    own constrained twists) and MuJoCo (its tree forces projected on the
    twists its loop equalities allow) each find the preload of the hand-made
    virtual-work balance, ``quarter_car_joints.static_preload`` (central
    differences limit the agreement)."""
    import dataclasses
    from mechanisms import quarter_car_joints as qc
    from fmigen.verify.cartesian import CartesianModel
    s = qc.build()
    s.springs = [dataclasses.replace(sd, preload=0) if sd.name == "coilover" else sd for sd in s.springs]
    s.trim("coilover", "z")
    from fmigen.frontends.joint_model import to_mechanism
    starts = {c.name: c.start for c in to_mechanism(s).coordinates}     # the assembled start
    times = np.linspace(0.0, 1e-3, 3)
    independent = s.independent
    sol = CartesianModel(s).simulate(starts, {}, independent, times)
    assert sol.trims["coilover"] == pytest.approx(qc.static_preload(), rel=1e-9)
    pytest.importorskip("mujoco")
    from fmigen.verify.mujoco_peer import run_mujoco
    peer = run_mujoco(s, starts, {}, times, independent=independent)
    assert peer.settings["trims"]["coilover"] == pytest.approx(qc.static_preload(), rel=1e-9)


def test_energy_balance_solves_the_trim_on_its_own():
    """The energy balance of a trajectory given from outside (as the FMU's
    is), by a Cartesian model that has not simulated: it solves the trim at
    the first sample, the trimmed spring's work counts its preload, and the
    balance closes on the reference's own trajectory."""
    from fmigen.verify.cartesian import CartesianModel
    from fmigen.verify.energy import energy_drift
    times = np.linspace(0.0, 0.3, 301)
    sol = CartesianModel(sprung_pendulum()).simulate({"z": Z0, "swing": 0.6}, {}, ["z", "swing"], times)
    fresh = CartesianModel(sprung_pendulum())
    T, V, W = fresh.energy_balance(sol.t, {n: sol.column(n) for n in sol.names},
                                   {n: sol.v[:, i] for i, n in enumerate(sol.names)}, ["z", "swing"])
    assert fresh.trim_preloads == pytest.approx(sol.trims, rel=1e-12)
    assert sol.trims["coil"] == pytest.approx(-(M + 0.5) * G - K * (Z0 - L0), rel=1e-12)
    assert energy_drift(T, V, W) < 1e-6
    fresh.trim_preloads = {"coil": 0.0}     # the spring at preload 0: the balance does not close
    T, V, W = fresh.energy_balance(sol.t, {n: sol.column(n) for n in sol.names},
                                   {n: sol.v[:, i] for i, n in enumerate(sol.names)}, ["z", "swing"])
    assert energy_drift(T, V, W) > 1e-2


def test_quarter_car_trim_follows_a_hard_point_through_its_loop(tmp_path):
    """Through a closed loop: the quarter car with link 1's chassis point
    height ``C1z`` a hard point and its coil-over trimmed along the travel
    z (``tests/data/quarter_car_trim_hard_point.py``).  ``C1z`` moves the
    loop, so N = [I; −Φ_d⁻¹Φ_i] at the start, and the preload, follow it:
    moved by 5 mm in fmpy, the FMU's preload is the Cartesian reference's
    at that geometry (its own constrained twists), which differs from the
    design geometry's (what main kept), and the corner stays at rest."""
    import importlib.util
    from pathlib import Path
    from fmigen.build.pipeline import build_fmu
    path = Path(__file__).parent / "data" / "quarter_car_trim_hard_point.py"
    spec = importlib.util.spec_from_file_location("quarter_car_trim_hard_point", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fmu_path, _ = build_fmu(module.build(), tmp_path / "quarter_car_trim.fmu", solver="rk4", step=1e-3)
    design = float(next(p.value for p in module.build().parameters if p.name == "C1z"))
    rest = {"der(z)": 0.0, "der(spin)": 0.0, "der(zc)": 0.0}
    trims = []
    for c1z in (design, design + 0.005):
        res = simulate_fmu(str(fmu_path), stop_time=0.2, output_interval=0.01, start_values={**rest, "C1z": c1z})
        reference = cartesian_trim(module.build(c1z), res)["coilover"]
        assert res["trim_coilover"][0] == pytest.approx(reference, rel=1e-9)
        assert np.abs(res["z"] - res["z"][0]).max() < 1e-9
        assert np.abs(res["der(z)"]).max() < 1e-8
        trims.append(reference)
    assert abs(trims[1] - trims[0]) > 1e-4 * abs(trims[0])


def test_the_generators_refuse_a_trim_along_a_coordinate_their_partition_makes_dependent():
    """The runtime's trim balances the independent coordinates' rows, so
    both generators take the trims' coordinates from the embedding, which
    refuses one its partition makes dependent (a numerically chosen
    partition can change with a replayed start, which skips the build's own
    check); here the trimmed travel swapped with a dependent coordinate."""
    import dataclasses
    from conftest import compiled_model
    emb = compiled_model("tests/data/quarter_car_trim_hard_point.py").embedding
    names = list(emb.dae.names)
    z, other = names.index("z"), emb.dependent[0]
    assert emb.trim_coordinates() == [z]
    swapped = dataclasses.replace(emb, independent=[other if k == z else k for k in emb.independent],
                                  dependent=[z if k == other else k for k in emb.dependent])
    with pytest.raises(ModelError, match="along 'z': 'z' is a dependent coordinate"):
        swapped.trim_coordinates()
