"""The joint front end (fmigen/frontends/joint_model.py): tree and cut, closure
equations, errors, branch hints, exact float literals, and FMUs that match
the low-level mechanisms they rewrite."""
import math

import numpy as np
import pytest
import sympy as sp
from conftest import p_bc_ramp
from fmpy import simulate_fmu
from sympy import cos, sin

from fmigen.derive.dae import build_dae
from fmigen.frontends.joint_model import to_mechanism
from fmigen.joints import JointSystem, X
from fmigen.model import Mechanism, ModelError
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import build_fmu, load_mechanism, prepare_mechanism
from fmigen.kinematics.triangular import triangularize
from fmigen.kinematics.polynomialize import polynomialize, refuse_floats


def fourbar_system(sign=+1, **overrides):
    """A planar four-bar (the ``fourbar`` geometry) built inline so each
    test can change one thing."""
    s = JointSystem("fb")
    l1, l2, l3, d = (s.parameter(n, v, "m") for n, v in (("l1", 1.0), ("l2", 4.0), ("l3", 2.5), ("d", 3.0)))
    crank = s.body("crank", 1, (0, 0, 1), com=(0.5, 0))
    coupler = s.body("coupler", 1, (0, 0, 1), com=(2, 0))
    rocker = s.body("rocker", 1, (0, 0, 1), com=(1.25, 0))
    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 2)
    s.revolute("A", crank.marker("A", (l1, 0)), coupler.origin)
    s.revolute("B", coupler.marker("B", (l2, 0)), rocker.marker("B", (l3, 0)))
    s.revolute("phi", s.ground.marker("D", (d, 0)), rocker.origin)
    s.branch_hint(rocker.markers["B"], s.ground.markers["D"], (0, 1, 0), sign)
    s.joint_force("theta", 1.0)
    s.independent = ["theta"]
    for k, v in overrides.items():
        setattr(s, k, v)
    return s


def test_planar_fourbar_cuts_one_revolute_and_keeps_two_closure_equations():
    m = to_mechanism(fourbar_system())
    assert [c.name for c in m.coordinates] == ["theta", "A", "phi"]
    # the cut revolute gives 3 position + 2 axis equations; the out-of-plane
    # three vanish identically in a plane
    assert [c.name for c in m.constraints] == ["B_x", "B_y"]
    assert m.dof == 1 and m.independent == ["theta"]
    assert m.joint_system is not None
    # the loaded, independent crank joint is never the cut one
    assert "theta" in [c.name for c in m.coordinates]


def test_user_cut_overrides_the_choice():
    m = to_mechanism(fourbar_system(cut=["A"]))
    assert [c.name for c in m.coordinates] == ["theta", "B", "phi"]
    assert [c.name for c in m.constraints] == ["A_x", "A_y"]


def test_cutting_a_loaded_joint_is_an_error_naming_it():
    with pytest.raises(ModelError, match="joint 'theta' is cut.*independent"):
        to_mechanism(fourbar_system(cut=["theta"]))


def test_a_body_not_connected_to_ground_is_named():
    s = fourbar_system()
    s.body("loose", 1, (1, 1, 1))
    with pytest.raises(ModelError, match="'loose' not connected to ground"):
        to_mechanism(s)


def test_wrong_declared_dof_is_an_error():
    with pytest.raises(ModelError, match="give 1 degrees of freedom, fewer than the declared dof=2"):
        to_mechanism(fourbar_system(dof=2, independent=None))


def test_redundant_equations_are_dropped_and_overconstraint_reported():
    # a parallelogram with a second coupler: the extra loop is redundant
    # where the first one closes (a classic over-constrained linkage); its
    # equations that add nothing are dropped, so one DOF remains
    s = JointSystem("parallelogram")
    a = s.body("a", 1, (0, 0, 1))
    c = s.body("c", 1, (0, 0, 1))
    b = s.body("b", 1, (0, 0, 1))
    e = s.body("e", 1, (0, 0, 1))
    s.revolute("qa", s.ground.origin, a.origin, start=1.0)
    s.revolute("qc", a.marker("tip", (1, 0)), c.origin, start=-1.0)
    s.revolute("qb", s.ground.marker("O2", (2, 0)), b.origin, start=1.0)
    s.revolute("cb", c.marker("end", (2, 0)), b.marker("tip", (1, 0)))
    s.revolute("qe", s.ground.marker("O3", (4, 0)), e.origin, start=1.0)
    s.revolute("ce", c.marker("end2", (4, 0)), e.marker("tip", (1, 0)))
    s.joint_force("qa", 1.0)
    s.independent = ["qa"]
    m = to_mechanism(s)
    assert len(m.coordinates) == 4 and len(m.constraints) == 3 and m.dof == 1
    # a fixed joint on top leaves nothing to move
    s.fixed("lock", s.ground.marker("L", (0, 1)), a.marker("L", (math.cos(1.0), math.sin(1.0))))
    s.independent = None
    with pytest.raises(ModelError, match="over-constrained|loops cannot be closed"):
        to_mechanism(s)


def test_branch_hint_picks_the_mirror_assembly():
    up = prepare_mechanism(fourbar_system(+1))
    down = prepare_mechanism(fourbar_system(-1))
    phi_up, phi_down = up.coordinate_by_name("phi").start, down.coordinate_by_name("phi").start
    assert phi_up == pytest.approx(1.2648578195810691, abs=1e-12)
    # the other assembly is B mirrored in the line AD: y_B < 0
    assert 2.5 * math.sin(phi_down) < 0
    yb = lambda m: 2.5 * math.sin(m.coordinate_by_name("phi").start)
    assert yb(up) > 0 > yb(down)


def test_a_hint_no_assembly_satisfies_is_an_error():
    s = fourbar_system()
    s.branch_hint(s.bodies["rocker"].markers["B"], s.ground.markers["D"], (0, 1, 0), -1)
    with pytest.raises(ModelError, match="none of the 2 real assemblies"):
        to_mechanism(s)


def test_prepare_mechanism_does_not_touch_the_callers_starts():
    m = load_mechanism("fourbar")
    guesses = [c.start for c in m.coordinates]
    prepared = prepare_mechanism(m)
    assert [c.start for c in m.coordinates] == guesses
    assert prepared.coordinate_by_name("alpha").start == pytest.approx(0.3532808961981055, abs=1e-13)


def test_frames_give_the_angular_velocity_of_the_composed_rotation():
    # a spatial chain: universal + revolute about a tilted axis; ω from the
    # frame chain must equal the one from the DCM, (Ṙ Rᵀ)^∨
    s = JointSystem("spatial")
    a = s.body("a", 1, (1, 2, 3))
    b = s.body("b", 1, (1, 2, 3))
    s.universal("u", s.ground.origin, a.origin, start=[0.3, -0.2])
    s.revolute("r", a.marker("m", (0, 0, 1), rotation=sp.Matrix([[0, 0, 1], [1, 0, 0], [0, 1, 0]])),
               b.origin, axis=(sp.Rational(3, 5), sp.Rational(4, 5), 0), start=0.4)
    m = to_mechanism(s)
    q = [c.symbol for c in m.coordinates]
    vals = dict(zip(q, [0.3, -0.2, 0.4]))
    rates = dict(zip([x.diff() for x in q], [0.7, -1.1, 0.5]))
    for body in m.bodies:
        R = m.world.dcm(body.frame)
        W = (R.diff(me_t()) * R.T).xreplace(rates).xreplace(vals).evalf()
        w_dcm = np.array([W[2, 1], W[0, 2], W[1, 0]], dtype=float)
        w = body.frame.ang_vel_in(m.world).to_matrix(m.world).xreplace(rates).xreplace(vals).evalf()
        assert np.allclose(np.array(w, dtype=float).ravel(), w_dcm, atol=1e-12)


def me_t():
    from fmigen.model import t
    return t


# --- float literals (issue 12, item 4) ---------------------------------------------

def _slider_crank_with(expr_extra):
    m = load_mechanism("slider_crank")
    c = next(c for c in m.constraints if c.name == "rod_y")
    c.expr = c.expr + expr_extra
    return m


def test_a_float_literal_in_a_constraint_is_exact_in_the_dae():
    m = _slider_crank_with(0.0123456789012345)
    dae = build_dae(m)
    assert not dae.Phi.atoms(sp.Float)
    # rod_y: r sin θ + l sin β − e + the literal; its constant term is exact
    assert dae.Phi[1].as_coeff_Add()[0] == sp.Rational("0.0123456789012345") - sp.Rational(1, 20)


def test_a_float_times_a_parameter_is_the_exact_product():
    m = load_mechanism("slider_crank")
    r = next(p.symbol for p in m.parameters if p.name == "r")   # 0.2
    c = next(c for c in m.constraints if c.name == "rod_y")
    c.expr = c.expr + 0.1 * r        # as doubles 0.1 * 0.2 = 0.020000000000000004
    dae = build_dae(m)
    assert dae.Phi[1].as_coeff_Add()[0] == sp.Rational(1, 50) - sp.Rational(1, 20)


def test_the_kinematics_solve_the_constraint_with_the_float_as_written():
    # 1e-6 rationalization (the old behaviour) would leave a residual ~1e-8
    m = _slider_crank_with(0.0123456789012345)
    dae = build_dae(m)
    part = choose_partition(dae)
    b = part.blocks[0]
    _, polys, *_ = polynomialize(dae, b)
    assert not any(p.atoms(sp.Float) for p in polys)
    tri = triangularize(dae, part, cover=False)
    q = np.array([tri.start[n] for n in dae.names])
    assert np.abs(dae.numeric.Phi(0.0, q)).max() < 1e-15


def test_a_float_that_reaches_the_groebner_stage_is_refused_by_name():
    x = sp.Symbol("x")
    with pytest.raises(ModelError, match=r"constraint 'c' contains the float 0\.1.*m\.parameter"):
        refuse_floats(sp.Float(0.1) * x + 1, "c")


# --- FMUs of the rewrites agree with the low-level mechanisms ---------------------

def _run(name, tmp_path, stop):
    # reuse: a derivation another test recorded is packaged as fmigen build
    # packages it; only the FMUs are compared
    path, _ = build_fmu(name, tmp_path / f"{name}.fmu", solver="rk4", step=1e-3, reuse=True)
    return simulate_fmu(str(path), stop_time=stop, output_interval=0.01)


def _same_angle(a, b):
    return np.abs(np.remainder(a - b + math.pi, 2 * math.pi) - math.pi).max()


def test_fourbar_joints_matches_fourbar(tmp_path):
    low, jnt = _run("fourbar", tmp_path, 2.0), _run("fourbar_joints", tmp_path, 2.0)
    assert low["theta"][-1] > 8   # the crank turned
    assert np.abs(low["theta"] - jnt["theta"]).max() < 1e-12
    assert np.abs(low["phi"] - jnt["phi"]).max() < 1e-12
    assert _same_angle(low["alpha"], jnt["theta"] + jnt["A"]) < 1e-12
    assert np.abs(low["der(alpha)"] - (jnt["der(theta)"] + jnt["der(A)"])).max() < 1e-11


def test_slider_crank_joints_matches_slider_crank(tmp_path):
    low, jnt = _run("slider_crank", tmp_path, 2.0), _run("slider_crank_joints", tmp_path, 2.0)
    assert np.abs(low["theta"] - jnt["theta"]).max() < 1e-12
    assert np.abs(low["x"] - jnt["x"]).max() < 1e-12
    assert _same_angle(low["beta"], jnt["theta"] + jnt["B"]) < 1e-12


def test_stewart_joints_matches_stewart(tmp_path):
    low, jnt = _run("stewart", tmp_path, 1.0), _run("stewart_joints", tmp_path, 1.0)
    for n in ["x", "y", "z", "phi", "theta", "psi", "s1", "s4", "alpha2", "beta5"]:
        assert np.abs(low[n] - jnt[n]).max() < 1e-12, n


def test_spring_and_marker_force_are_the_generalized_forces_of_their_work():
    # a bar on a revolute at ground; independent reference: Q = −dV/dq for
    # the spring (V = k/2 (L − L0)² + preload·L, L from the hand-written tip
    # position) and Q = (r × F)_z + τ_z for a force at the tip and a torque
    k, L0, pre, Fx, Fy, tz, q0 = 7.0, 0.4, 0.3, 0.9, -1.3, 0.25, 0.6
    s = JointSystem("bar")
    bar = s.body("bar", 1, (0, 0, 1), com=(0.5, 0))
    q = s.revolute("q", s.ground.origin, bar.origin, start=q0)
    tip = bar.marker("tip", (1, 0))
    s.spring_damper("spring", s.ground.marker("anchor", (0, 1)), tip, k, 0, L0, pre)
    s.force("push", tip, force=(Fx, Fy, 0), torque=(0, 0, tz))
    m = to_mechanism(s)
    M, F = m.equations_of_motion()
    qs = sp.Symbol("qs")
    L = sp.sqrt(sp.cos(qs)**2 + (sp.sin(qs) - 1)**2)
    V = k / 2 * (L - L0)**2 + pre * L
    expected = -sp.diff(V, qs) + (sp.cos(qs) * Fy - sp.sin(qs) * Fx) + tz
    got = F[0].xreplace({q.diff(): 0}).xreplace({q: q0})
    assert float(got) == pytest.approx(float(expected.subs(qs, q0)), abs=1e-12)


# --- distance links (a cut spherical joint through a link on a ground U-joint) ----

def distance_link_system(distance_links=True, alpha_start=None):
    """A slider on a revolute arm, held by one link: a universal joint on
    ground with tilted axes and a rotated marker, a link vector along no
    axis, and a spherical joint to the slider (cut).  Four coordinates, three
    closure rows, one DOF."""
    R = sp.Rational
    s = JointSystem("dlink")
    arm = s.body("arm", 1, (1, 2, 3), com=(R(1, 2), 0, 0))
    slider = s.body("slider", 2, (1, 1, 1))
    link = s.body("link", R(1, 2), (R(1, 10), R(1, 5), R(1, 5)), com=(R(3, 10), R(1, 10), R(1, 20)))
    s.revolute("q", s.ground.origin, arm.origin, axis=(0, 0, 1), start=0.3)
    s.prismatic("s", arm.marker("rail", (R(1, 2), 0, R(1, 5))), slider.origin, axis=X, start=0.4)
    s.universal("U", s.ground.marker("base", (R(613, 1000), -R(232, 1000), R(95, 1000)),
                                     rotation=sp.Matrix([[0, 0, 1], [1, 0, 0], [0, 1, 0]])),
                link.origin, axis=(R(3, 5), R(4, 5), 0), axis2=(-R(4, 5), R(3, 5), 0),
                coordinates=["a1", "a2"], start=alpha_start or [0.2, -0.4])
    s.spherical("S", slider.marker("ball", (0, R(1, 10), 0)), link.marker("end", (R(3, 5), R(1, 5), R(1, 10))))
    s.cut = ["S"]
    s.independent = ["q"]
    s.distance_links = distance_links
    return s


def test_a_distance_link_gets_a_distance_row_free_of_its_angles():
    m = to_mechanism(distance_link_system())
    assert [c.name for c in m.constraints] == ["S_dist", "S_dir_a", "S_dir_b"]
    dist = m.constraints[0].expr
    a1, a2 = (m.coordinate_by_name(n).symbol for n in ("a1", "a2"))
    assert not dist.has(a1) and not dist.has(a2)
    assert m.constraints[1].expr.has(a2) and not m.constraints[1].expr.has(a1)
    # the three position rows without the rewrite
    plain = to_mechanism(distance_link_system(distance_links=False))
    assert [c.name for c in plain.constraints] == ["S_x", "S_y", "S_z"]


def test_distance_link_rows_have_the_position_rows_manifold_and_tangent_space():
    """On assemblies of the spherical joint itself (d = 0, Newton on the
    position rows) the rewritten rows vanish and their Jacobian has the
    same null space: the same constrained motion."""
    from fmigen.frontends.closure_rows import _Numeric, _project
    rw, pl = to_mechanism(distance_link_system()), to_mechanism(distance_link_system(distance_links=False))
    coords = distance_link_system().coordinates
    names = [c.name for c in rw.coordinates]
    assert names == [c.name for c in pl.coordinates]
    coords = [next(c for c in coords if c.name == n) for n in names]
    num_rw = _Numeric([c.expr for c in rw.constraints], coords, {})
    num_pl = _Numeric([c.expr for c in pl.constraints], coords, {})
    rng = np.random.default_rng(3)
    q = np.array([pl.coordinate_by_name(n).start for n in names])
    checked = 0
    for _ in range(8):
        trial = q.copy()
        trial[0] += rng.uniform(-0.3, 0.3)
        qs, res = _project(num_pl, trial, [1, 2, 3])
        if res > 1e-13:
            continue
        checked += 1
        assert np.abs(num_rw.f(qs)).max() < 1e-13
        Jr, Jp = num_rw.J(qs), num_pl.J(qs)
        assert np.linalg.matrix_rank(Jr) == 3
        # Jp's null vector (the motion) is annihilated by Jr
        null = np.linalg.svd(Jp)[2][-1]
        assert np.abs(Jr @ null).max() < 1e-12
    assert checked >= 5


def test_a_mirror_start_of_a_distance_link_is_an_error():
    # the same link turned by π about the U-joint's first axis satisfies the
    # rewritten rows but not the spherical joint
    m = to_mechanism(distance_link_system())
    a1, a2 = m.coordinate_by_name("a1").start, m.coordinate_by_name("a2").start
    with pytest.raises(ModelError, match="mirror assembly.*'U'"):
        to_mechanism(distance_link_system(alpha_start=[a1 + math.pi, a2]))


def test_pass_through_options_reach_the_mechanism_and_names_are_checked():
    s = fourbar_system(newton_blocks=[["A", "phi"]], groebner_order=["c_phi", "s_phi"],
                       kinematic_drive={"theta": 0.5}, kinematic_drive_period=2.0)
    m = to_mechanism(s)
    assert m.newton_blocks == [["A", "phi"]] and m.groebner_order == ["c_phi", "s_phi"]
    assert m.kinematic_drive == {"theta": 0.5} and m.kinematic_drive_period == 2.0 and not m.kinematic
    with pytest.raises(ModelError, match="newton_blocks names 'B', a coordinate of a cut joint"):
        to_mechanism(fourbar_system(newton_blocks=[["A", "B"]]))
    with pytest.raises(ModelError, match="unknown coordinate 'nope'"):
        to_mechanism(fourbar_system(kinematic_drive={"nope": 1.0}))


@pytest.fixture(scope="module")
def five_link_pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("five_link")
    return _run("five_link", d, 1.0), _run("five_link_joints", d, 1.0)


def test_five_link_joints_has_five_links_structure():
    m = load_mechanism("five_link_joints")
    dae = build_dae(m)
    part = choose_partition(dae)
    blocks = sorted(sorted(dae.names[i] for i in b.unknowns) for b in part.blocks)
    assert ["phi", "psi", "theta", "x", "y"] in blocks
    assert all(len(b) == 1 for b in blocks if b != ["phi", "psi", "theta", "x", "y"])
    assert len(blocks) == 11 and [dae.names[i] for i in part.independent] == ["z"]


def test_five_link_joints_matches_five_link(five_link_pair):
    low, jnt = five_link_pair
    names = ["x", "y", "z", "phi", "theta", "psi"] + [f"{a}{k}" for a in ("alpha", "beta") for k in range(1, 6)]
    assert np.ptp(low["z"]) > 1e-3     # the carrier moved
    # measured over 6 s: 2.0e-15 (phi), velocities 8.9e-16: both solve the
    # same pose block by Newton and the same (β, α) sequences
    for n in names:
        assert np.abs(low[n] - jnt[n]).max() < 1e-13, n
        assert np.abs(low[f"der({n})"] - jnt[f"der({n})"]).max() < 1e-13, n


def test_five_link_joints_validates_against_both_references():
    from conftest import cached_validate
    r = cached_validate("five_link_joints", stop_time=1.0)
    assert r.passed, r.as_json()
    assert set(r.references) == {"ida", "cartesian"}
    assert max(r.references["cartesian"]["max_abs_error"].values()) < 1e-6


# --- loops below a moving body --------------------------------------------------

def test_a_corner_below_a_free_chassis_closes_in_the_chassis_frame():
    """The five-link corner hung from a chassis on a free joint (moved and
    turned at the start, the corner offset on it): its closure rows contain
    none of the chassis' coordinates and are exactly five_link_joints' rows
    (the offset cancels in the chassis frame), so the Gröbner stage sees the
    corner it knows; and they hold in the world frame at the projected start."""
    from fmigen.build.pipeline import as_mechanism
    from mechanisms.five_link_joints import add_corner, build as five_link_joints

    s = JointSystem("corner_on_chassis")
    chassis = s.body("chassis", 400, (80, 80, 80))
    chassis_q = ["xc", "yc", "zc", "rollc", "pitchc", "yawc"]
    s.free("chassis_free", s.ground.origin, chassis.origin, coordinates=chassis_q,
           start=[0.3, -0.2, 0.5, 0.05, -0.04, 0.3])
    add_corner(s, chassis, offset=(0.25, -0.1, 0.05))
    s.cut = [f"S{i}" for i in range(1, 6)]
    s.independent = chassis_q + ["z"]
    m = to_mechanism(s)
    chassis_syms = {s.coordinate_by_name(n).symbol for n in chassis_q}
    assert m.constraints and all(not (c.expr.atoms(sp.Function) & chassis_syms) for c in m.constraints)
    # (through the conversion cache, as the five-link tests above convert it)
    alone = as_mechanism(five_link_joints())
    assert [(c.name, sp.srepr(c.expr)) for c in m.constraints] == \
        [(c.name, sp.srepr(c.expr)) for c in alone.constraints]
    # the spherical joints close in the world: carrier point W_k = link end
    from mechanisms.five_link import C, L, W, rotation
    q = {c.name: c.start for c in m.coordinates}
    Rc = rotation(q["yawc"], q["pitchc"], q["rollc"])
    rc = np.array([q["xc"], q["yc"], q["zc"]])
    off = np.array([0.25, -0.1, 0.05])
    Rcar = Rc @ rotation(q["phi"], q["theta"], q["psi"])
    rcar = rc + Rc @ (off + np.array([q["x"], q["y"], q["z"]]))
    for k in range(5):
        a, b = q[f"alpha{k + 1}"], q[f"beta{k + 1}"]
        u = np.array([math.cos(b), math.sin(a) * math.sin(b), -math.cos(a) * math.sin(b)])
        link_end = rc + Rc @ (off + np.array(C[k]) + L[k] * u)
        assert np.abs(rcar + Rcar @ np.array(W[k]) - link_end).max() < 1e-9


def test_quarter_car_validates_against_both_references():
    """The corner below a heaving chassis, with a coil-over on a link, the
    wheel on the carrier and the tire loads as inputs, against IDA on the
    model's DAE and the Cartesian reference (which shares nothing with the
    model stage), at the default RK4 step of 1 ms (measured: IDA 1.2e-10,
    Cartesian 3.2e-10, energy balance 6.1e-10)."""
    from conftest import cached_validate
    r = cached_validate("quarter_car_joints", stop_time=1.0)
    assert r.passed, r.as_json()
    assert set(r.references) == {"ida", "cartesian"}
    assert max(r.references["cartesian"]["max_abs_error"].values()) < 1e-8
    assert r.max_constraint_residual < 1e-13


STEER = ("rack_demand=0.02*smoothstep(t, 0.05, 0.15)",)


def test_front_corner_steering_step_validates_against_both_references():
    """The double-wishbone corner with its tie rod on the steering rack: a
    20 mm rack demand ramped in 0.1 s (C²), the FMU fed its samples with
    their slopes as input derivatives, against IDA on the model's DAE and the
    Cartesian reference, both integrating the expression itself.  The
    difference is the input's sampling, O(H²) in the communication step H
    (measured in the knuckle's yaw: 4.9e-6 at 1 ms, 1.2e-6 at 0.5 ms,
    3.0e-7 at 0.25 ms, 4.9e-8 at 0.1 ms), so the run communicates every
    0.1 ms.  And the kinematics against the hard points by numpy alone: the
    knuckle pose the FMU reached is the five-rod solve at its travel and
    rack displacement."""
    from conftest import cached_validate
    from mechanisms.five_link import wheel_angles
    from mechanisms.front_corner import DOUBLE_WISHBONE
    r = cached_validate("front_corner", stop_time=0.2, step=1e-4, input_signals=STEER)
    assert r.passed, r.as_json()
    assert set(r.references) == {"ida", "cartesian"}
    assert max(r.references["cartesian"]["max_abs_error"].values()) < 1e-7
    assert r.max_constraint_residual < 1e-13
    end = {n: float(r.fmu_result[n][-1]) for n in ("z", "rack", "x", "y", "phi", "theta", "psi")}
    assert end["rack"] == pytest.approx(0.02, abs=2e-4)        # the servo followed the demand
    pose = DOUBLE_WISHBONE.solve_pose(end["z"], rack=end["rack"])
    assert np.abs(pose - [end[n] for n in ("x", "y", "phi", "theta", "psi")]).max() < 1e-9
    toe = wheel_angles(end["phi"], end["theta"], end["psi"])[0]
    assert math.degrees(toe) > 7.0      # 20 mm of rack: about 8° of toe-in at the left wheel


def test_vehicle_corners_close_in_the_chassis_frame_each_on_its_own():
    """The full vehicle's 60 closure rows: none contains the chassis' six
    coordinates, each corner's rows only that corner's coordinates (and the
    front tie rods' the steering rack's), and the mirrored (right) corners'
    rows are the left ones with y, ψ, φ and every α negated and the y
    geometry mirrored — checked numerically at the start assembly, where
    every row vanishes."""
    from fmigen.build.pipeline import as_mechanism
    from mechanisms.vehicle import CHASSIS_POSE, CORNERS, FRONT, build as vehicle
    s = vehicle()
    # to_mechanism's result through the conversion cache (derived.mechanism_of),
    # as `fmigen build vehicle` converts it: the full vehicle's build in
    # tests/test_masters.py and this test convert it once between them
    m = as_mechanism(s)
    assert len(m.constraints) == 60 and m.dof == 15
    from sympy.core.function import AppliedUndef
    chassis = {s.coordinate_by_name(n).symbol for n in CHASSIS_POSE}
    for c in m.constraints:
        used = {f.func.__name__ for f in c.expr.atoms(AppliedUndef)}
        assert not (c.expr.atoms(sp.Function) & chassis), c.name
        prefix = c.name[:3]
        assert prefix in CORNERS and all(u.startswith(prefix) for u in used - {"rack"}), (c.name, used)
        # the rack moves the front tie rods' inner ends (along y: the rod's
        # distance and its direction across U's x axis, not its x), nothing else
        assert ("rack" in used) == (prefix in FRONT and c.name[3:] in ("S5_dist", "S5_dir_b")), (c.name, used)
    params = {p.symbol: p.value for p in m.parameters}
    values = {c.symbol: c.start for c in m.coordinates}
    worst = max(abs(float(c.expr.xreplace(values).xreplace(params))) for c in m.constraints)
    assert worst < 1e-9
    start = {c.name: c.start for c in m.coordinates}
    for left, right in (("fl_", "fr_"), ("rl_", "rr_")):
        for n in ["x", "z", "theta"] + [f"beta{k}" for k in range(1, 6)]:
            assert start[left + n] == pytest.approx(start[right + n], abs=1e-12), n
        for n in ["y", "psi", "phi"] + [f"alpha{k}" for k in range(1, 6)]:
            assert start[left + n] == pytest.approx(-start[right + n], abs=1e-12), n


def test_vehicle_design_pose_is_balanced_by_its_static_loads():
    """The tire loads the vehicle starts with (``axle_loads``) hold the whole
    car in the design pose: with the model's own bodies (masses and centres
    of mass at the start assembly, from the joint description) and the tire
    forces at the wheel centres (the model's outputs), the vertical forces and
    the moments about the chassis' pitch and roll axes sum to zero.  (Each
    corner's travel is balanced by its coil-over preload, the static trim
    along it; tests/test_vehicle.py runs the FMU at rest.)"""
    from fmigen.build.pipeline import as_mechanism
    from mechanisms.vehicle import CORNERS, build as vehicle
    # the shipped vehicle through the conversion cache, as the test above
    # and the full vehicle's build in tests/test_masters.py convert it: its
    # bump is a velocity start, which nothing summed here reads (masses,
    # centres of mass and wheel centres at the start assembly, the tire
    # loads' starts are those of build(bump=False))
    m = as_mechanism(vehicle())
    values = {c.symbol: sp.Float(c.start) for c in m.coordinates} | \
        {p.symbol: sp.Float(p.value) for p in m.parameters}

    def num(e):
        return float(sp.sympify(e).xreplace(values))
    g = next(float(p.value) for p in m.parameters if p.name == "g")
    fz = {i.name: float(i.start) for i in m.inputs}
    vertical = -sum(num(b.mass) * g for b in m.bodies) + sum(fz[f"{c}Fz"] for c in CORNERS)
    weight = sum(num(b.mass) * g for b in m.bodies)
    # moments about the chassis' centre of mass (its origin, at x = y = 0)
    pitch = sum(num(b.mass) * g * num(b.com[0]) for b in m.bodies) - \
        sum(fz[f"{c}Fz"] * num(m.outputs[f"{c}wheel_x"]) for c in CORNERS)
    roll = sum(num(b.mass) * g * num(b.com[1]) for b in m.bodies) - \
        sum(fz[f"{c}Fz"] * num(m.outputs[f"{c}wheel_y"]) for c in CORNERS)
    assert len(m.bodies) == 30          # chassis, rack, and per corner carrier, wheel, five links
    assert abs(vertical) < 1e-9 * weight
    assert abs(pitch) < 1e-9 * weight and abs(roll) < 1e-9 * weight
    # the chassis' weight split by the axle positions alone (the loads of
    # before) leaves a pitching moment: the links' weights act off the axle
    from mechanisms.vehicle import CHASSIS_MASS, WHEELBASE, axle_loads
    shares = axle_loads()
    plain = {c: fz[f"{c}Fz"] + (CHASSIS_MASS / 2 * (1 - abs(ax) / WHEELBASE) - shares[c]) * g
             for c, (ax, _) in CORNERS.items()}
    pitch_plain = sum(num(b.mass) * g * num(b.com[0]) for b in m.bodies) - \
        sum(plain[c] * num(m.outputs[f"{c}wheel_x"]) for c in CORNERS)
    assert abs(pitch_plain) > 10.0                      # N·m


def floating_system():
    """A free 'chassis' with a trailing arm (revolute), a wheel on the arm
    and a spring-damper chassis–arm: small, but every floating-base path
    (bodies and a spring below the base, a point force from ground-free
    points, a marker force) is in it; a four-bar loop below the chassis
    closes in its frame."""
    s = JointSystem("floating")
    chassis = s.body("chassis", 50, (4, 6, 7))
    s.free("chassis_free", s.ground.origin, chassis.origin, coordinates=["xc", "yc", "zc", "rc", "pc", "yc_"],
           start=[0, 0, 1.0, 0.1, -0.05, 0.2], velocity_start=[0.5, -0.2, 0.1, 0.3, -0.4, 0.6])
    arm = s.body("arm", 3, (0.01, 0.2, 0.2), com=(0.3, 0, 0))
    s.revolute("arm", chassis.marker("pivot", (0.5, 0.2, -0.1)), arm.origin, axis=(0, 1, 0), start=-0.3,
               velocity_start=1.0)
    wheel = s.body("wheel", 5, (0.3, 0.5, 0.3))
    s.revolute("spin", arm.marker("hub", (0.6, 0, 0)), wheel.origin, axis=(0, 1, 0), start=0.0,
               velocity_start=20.0)
    s.spring_damper("coil", chassis.marker("top", (0.8, 0.2, 0.3)), arm.marker("seat", (0.3, 0, 0)),
                    stiffness=3000, damping=40, free_length=0.45)
    # a planar four-bar on the chassis (crank, coupler, rocker; joint C cut)
    crank = s.body("crank", 0.5, (0.001, 0.001, 0.004), com=(0.1, 0, 0))
    coupler = s.body("coupler", 0.5, (0.001, 0.01, 0.01), com=(0.2, 0, 0))
    rocker = s.body("rocker", 0.5, (0.001, 0.004, 0.004), com=(0.15, 0, 0))
    s.revolute("crank", chassis.marker("A", (-0.5, 0, 0)), crank.origin, start=1.2, velocity_start=2.0)
    s.revolute("B", crank.marker("B", (0.2, 0, 0)), coupler.origin)
    s.revolute("C", coupler.marker("C", (0.4, 0, 0)), rocker.marker("C", (0.3, 0, 0)))
    s.revolute("D", chassis.marker("D", (-0.2, 0, 0)), rocker.origin)
    s.branch_hint(rocker.markers["C"], chassis.markers["D"], (0, 0, 1), +1)
    s.force("push", wheel.origin, force=(s.input("Fx", 20.0, "N"), 0, s.input("Fz", 300.0, "N")),
            torque=(0, 0, s.input("Mz", 1.0, "N.m")))
    s.gravity = (0, 0, -9.81)
    s.cut = ["C"]
    s.independent = ["xc", "yc", "zc", "rc", "pc", "yc_", "arm", "spin", "crank"]
    return s


def test_floating_base_equations_equal_the_world_frame_ones():
    """Kane's method in the base's body-frame speeds, turned back into q̇
    (M = Tᵀ M̃ T, F = Tᵀ (F̃ − M̃ Ṫ q̇)), against Kane's method in q̇ with
    world-frame velocities: the same M and F to round-off at random states."""
    from fmigen.model import t
    results = []
    for floating in (True, False):
        m = to_mechanism(floating_system())
        assert m.floating_base is not None and m.floating_base.body == "chassis"
        if not floating:
            m.floating_base = None          # Kane in q̇ with world-frame velocities
        M, F = m.equations_of_motion()
        if floating:
            assert M == M.T          # one expression per pair for the code generator
        q = [c.symbol for c in m.coordinates]
        Q, V = sp.symbols(f"Q0:{len(q)}"), sp.symbols(f"V0:{len(q)}")
        subs = {p.symbol: p.value for p in m.parameters} | {i.symbol: i.start for i in m.inputs}

        def plain(e):
            return e.xreplace({x.diff(t): v for x, v in zip(q, V)}).xreplace(dict(zip(q, Q))).xreplace(subs)

        fM, fF = sp.lambdify([Q, V], plain(M)), sp.lambdify([Q, V], plain(F))
        rng = np.random.default_rng(3)
        points = [(rng.uniform(-0.6, 0.6, len(q)), rng.uniform(-2, 2, len(q))) for _ in range(3)]
        results.append([(np.array(fM(a, b), float), np.array(fF(a, b), float).ravel()) for a, b in points])
    for (Ma, Fa), (Mb, Fb) in zip(*results):
        assert np.abs(Ma - Mb).max() <= 1e-13 * np.abs(Mb).max()
        assert np.abs(Fa - Fb).max() <= 1e-13 * np.abs(Fb).max()


def test_floating_base_validates_against_both_references():
    """The floating system's FMU against IDA and the Cartesian reference
    (Newton–Euler in absolute coordinates: shares nothing with the
    floating-base derivation), with the energy balance."""
    from fmigen.verify.validate import validate
    r = validate(floating_system(), stop_time=0.5, step=5e-4)
    assert r.passed, r.as_json()
    assert max(r.references["cartesian"]["max_abs_error"].values()) < 1e-8


# --- the landing gear on the joint API ------------------------------------------

def test_landing_gear_joints_closure_rows_are_the_papers_polynomials():
    # C_x, E_x are eqs. 16 and 18; C_y, E_y are 17 and 19 with the opposite
    # sign (the paper writes minus the y components)
    for jname, lname in (("landing_gear_joints", "landing_gear"),
                         ("landing_gear_dynamic_joints", "landing_gear_dynamic")):
        jm, lm = load_mechanism(jname), load_mechanism(lname)
        assert [c.name for c in jm.constraints] == ["C_x", "C_y", "E_x", "E_y"]
        assert {c.name: c.unit for c in jm.coordinates} == {c.name: c.unit for c in lm.coordinates}
        plain = {c.symbol: sp.Symbol(c.name) for c in lm.coordinates}
        for c, low, sign in zip(jm.constraints, lm.constraints, (1, -1, 1, -1)):
            diff = sp.expand(sp.expand_trig(c.expr.xreplace(plain)) - sign * low.expr.xreplace(plain))
            assert diff == 0, (c.name, low.name)


def test_landing_gear_joints_kinematic_fmu_matches_landing_gear(tmp_path):
    angles = ["theta_A", "theta_B", "theta_D", "theta_F"]
    out = [*angles, *(f"der({a})" for a in angles), "constraint_residual"]
    runs = []
    for name in ("landing_gear", "landing_gear_joints"):
        path, _ = build_fmu(name, tmp_path / f"{name}.fmu", reuse=True)
        runs.append(simulate_fmu(str(path), stop_time=5.0, output_interval=0.01, input=p_bc_ramp(200.0, 10.0, 5.0),
                                 output=out))
    low, jnt = runs
    assert low["theta_A"][-1] - low["theta_A"][0] > 0.1       # the gear moved
    # measured over 200 -> 300 cm: angles 2.2e-15, rates 1.2e-15 (the same sextic sequence)
    for n in out[:-1]:
        assert np.abs(low[n] - jnt[n]).max() < 1e-13, n


def test_landing_gear_dynamic_joints_matches_and_validates(tmp_path):
    names = ["theta_A", "theta_B", "theta_D", "theta_F", "p_BC"]
    low = _run("landing_gear_dynamic", tmp_path, 0.75)
    jnt = _run("landing_gear_dynamic_joints", tmp_path, 0.75)
    assert low["p_BC"][-1] > 3.0     # swung open past the ill-conditioned p ≈ 3.02 m
    # measured: coordinates 1.7e-15, velocities 2.6e-14
    for n in names:
        assert np.abs(low[n] - jnt[n]).max() < 1e-13, n
        assert np.abs(low[f"der({n})"] - jnt[f"der({n})"]).max() < 1e-12, n
    from conftest import cached_validate
    r = cached_validate("landing_gear_dynamic_joints", stop_time=0.75)
    # measured: IDA 5.5e-11, Cartesian 3.0e-11 (massless cylinder and piston)
    assert r.passed, r.as_json()
    assert set(r.references) == {"ida", "cartesian"}


def test_stephenson3_joints_block_is_the_low_level_one_in_absolute_angles():
    """The triangular stage solves the joint-coordinate six-bar (plate angle
    A relative to the hanger psi, rod angle C relative to the crank theta) in
    the angle sums psi + A and theta + C: its block polynomials are then
    exactly the hand-written stephenson3's in beta and alpha (whose Gröbner
    basis takes ~1 s; in the relative angles' s/c it did not finish in 60 s)."""
    polys = {}
    for name in ("stephenson3", "stephenson3_joints"):
        dae = build_dae(load_mechanism(name))
        [b] = choose_partition(dae).blocks
        _, ps, circles, *_ = polynomialize(dae, b)
        polys[name] = {sp.expand(p) for p in ps + circles}
    ren = {sp.Symbol(f"{x}_psi_A"): sp.Symbol(f"{x}_beta") for x in "sc"}
    ren.update({sp.Symbol(f"{x}_theta_C"): sp.Symbol(f"{x}_alpha") for x in "sc"})
    theta = {sp.Symbol("theta", real=True): sp.Symbol("theta", real=True)}
    # (up to sign: the cut joint's closure runs the loop the other way round)
    joint = {frozenset({e, -e}) for e in (sp.expand(p.xreplace(ren)) for p in polys["stephenson3_joints"])}
    low = {frozenset({e, -e}) for e in (sp.expand(p.xreplace(theta)) for p in polys["stephenson3"])}
    assert joint == low


# --- preferred independent coordinates (the MJCF import's actuated joints) -------

def _five_bar() -> JointSystem:
    """A planar five-bar (2 DOF): cranks at O = (0, 0) and E = (3, 0), each
    1 long, carrying links 2.5 long that meet at P (cut)."""
    s = JointSystem("five_bar_pref")
    bodies = {n: s.body(n, 1.0, (0, 0, 0.1), com=(0.5, 0)) for n in ("c1", "l1", "c2", "l2")}
    s.revolute("a1", s.ground.origin, bodies["c1"].origin, start=2.0)
    s.revolute("b1", bodies["c1"].marker("end", (1, 0)), bodies["l1"].origin, start=-1.2)
    s.revolute("a2", s.ground.marker("E", (3, 0)), bodies["c2"].origin, start=1.2)
    s.revolute("b2", bodies["c2"].marker("end", (1, 0)), bodies["l2"].origin, start=1.0)
    s.revolute("P", bodies["l1"].marker("P", (2.5, 0)), bodies["l2"].marker("P", (2.5, 0)))
    s.cut = ["P"]
    return s


def test_a_preferred_coordinate_is_completed_to_an_independent_set():
    """One preferred coordinate on a 2-DOF five-bar: it is independent, at
    its start exactly, and pivoted QR on the other columns adds one more;
    Φ_d is regular at the start with that set (partition accepts it)."""
    s = _five_bar()
    s.preferred_independent = ["a2"]
    m = to_mechanism(s)
    assert "a2" in m.independent and len(m.independent) == 2 and m.independent_note == ""
    assert m.coordinate_by_name("a2").start == 1.2
    dae = build_dae(m)
    assert sorted(dae.names[i] for i in choose_partition(dae).independent) == sorted(m.independent)


def test_a_preferred_name_that_is_no_coordinate_is_an_error():
    """A typo in a hand-written preferred set is named, as one in
    ``independent`` is, instead of falling back to fmigen's choice with a
    note blaming a cut joint."""
    s = _five_bar()
    s.preferred_independent = ["a3"]
    with pytest.raises(ModelError, match="preferred independent coordinate 'a3' is no coordinate"):
        to_mechanism(s)


def test_a_declared_independent_set_wins_over_the_preferred_one():
    s = load_mechanism("fourbar_joints").joint_system
    assert s.independent == ["theta"]
    s.preferred_independent = ["phi"]
    assert to_mechanism(s).independent == ["theta"]
    s.independent = None
    assert to_mechanism(s).independent == ["phi"]


def _toggle_four_bar(coupler):
    """Crank 1 at θ = 0 on a ground of 2: the pin A at (1, 0), 1 from the
    rocker's pivot.  Coupler + rocker 0.6 = 1 stretches the coupler and the
    rocker flat along the ground line (a toggle position)."""
    s = JointSystem("toggle")
    crank = s.body("crank", 1.0, (0, 0, 1 / 12), com=(0.5, 0))
    cp = s.body("coupler", coupler, (0, 0, coupler**3 / 12), com=(coupler / 2, 0))
    rk = s.body("rocker", 0.6, (0, 0, 0.6**3 / 12), com=(0.3, 0))
    # B's guess: on the ground line for the toggle, at the circles' meet otherwise
    x = (coupler**2 - 0.36 + 1) / 2
    h = math.sqrt(max(coupler**2 - x * x, 0.0))
    s.revolute("theta", s.ground.origin, crank.origin, start=0.0)
    s.revolute("A", crank.marker("A", (1, 0)), cp.origin, start=math.atan2(h, x))
    s.revolute("B", cp.marker("B", (coupler, 0)), rk.marker("B", (0.6, 0)))
    s.revolute("phi", s.ground.marker("O4", (2, 0)), rk.origin, start=math.atan2(h, x - 1))
    s.gravity = (0, -9.81, 0)
    s.independent = ["theta"]
    s.dof = 1
    return s


def test_a_start_at_a_singular_configuration_is_named_so():
    """Found writing the corpus fuzzer: a four-bar started in its toggle
    position (coupler and rocker flat along the line to the pivot) was
    refused as a 'redundant or inconsistent constraint' (dae.check's rank
    test at the start, which cannot tell a rank lost at one configuration
    from a redundant constraint).  The closure's rank at the assemblies next
    to the start tells: 1 at the start, 2 next to it."""
    with pytest.raises(ModelError, match=r"the start is a singular configuration: the closure equations have "
                                         r"rank 1 there and 2 at the assemblies next to it.*\(theta\)"):
        to_mechanism(_toggle_four_bar(0.4))
    # a coupler of 0.5: the same linkage off the toggle converts (rank 2)
    m = to_mechanism(_toggle_four_bar(0.5))
    assert m.dof == 1 and len(m.constraints) == 2


def _stephenson1():
    from corpus import stephenson1_sixbar
    m = to_mechanism(stephenson1_sixbar.build())
    dae = build_dae(m)
    return m, dae, choose_partition(dae)


def test_coupled_loops_close_in_one_frame():
    """The Stephenson I six-bar (tests/corpus): its two loops are one 4×4
    block, the floating four-bar closing in the crank's frame and the
    plate's leg to ground in the world frame.  Written in one frame (the
    crank's, where the four-bar loop has constant coefficients), the known
    crank angle θ enters the block's polynomials only in terms free of the
    unknowns, through two abstracted knowns; in mixed frames cos θ
    multiplied the unknowns' sines and cosines."""
    from fmigen.frontends.joint_poses import _Tree
    from fmigen.frontends.joint_tree import spanning_tree
    from fmigen.kinematics.polynomialize import abstract
    from corpus import stephenson1_sixbar
    m, dae, part = _stephenson1()
    [b] = part.blocks
    variables, polys, circles, *_ = polynomialize(dae, b)
    theta = dae.q_sym[dae.names.index("theta")]
    for p in polys:
        for monom, coeff in sp.Poly(p, *variables).terms():
            if any(monom):
                assert not coeff.has(theta), (monom, coeff)
    _, abstractions = abstract(polys, variables, [0])
    assert len(abstractions) == 2
    # the pose of a body on another branch, walked up through the crank's
    # joint, is the world pose seen from the crank: R_cᵀ (r − r_c)
    s = stephenson1_sixbar.build()
    tree = _Tree(s, spanning_tree(s)[0])
    cache = {}
    rng = np.random.default_rng(3)
    syms = [c.symbol for c in m.coordinates]
    for body in ("link6", "plate", "ground"):
        rel = tree.relative_pose(body, "crank", cache)
        world, crank = tree.relative_pose(body, "ground", cache), tree.relative_pose("crank", "ground", cache)
        for _ in range(3):
            at = dict(zip(syms, rng.uniform(-3, 3, len(syms))))
            num = lambda M: np.array(M.subs(at), dtype=float)
            np.testing.assert_allclose(num(rel.r), num(crank.R.T * (world.r - crank.r)), atol=1e-14)
            np.testing.assert_allclose(num(rel.R), num(crank.R.T * world.R), atol=1e-14)


def test_stephenson1_block_gets_a_lex_basis(monkeypatch):
    """Its 4×4 block's lex basis (a sextic first step: up to 6 assemblies)
    now finishes (about 13 s of Singular's CPU; with the loops in mixed
    frames it did not within the 600 s limit, here lowered to 120 s), and
    the sequence assembles the start the joint model projected by
    Gauss–Newton, to 1e-9.  ~25 s."""
    from fmigen.kinematics import groebner
    monkeypatch.setattr(groebner, "SINGULAR_CPU_LIMIT", 120)
    m, dae, part = _stephenson1()
    tri = triangularize(dae, part, use_cache=False, cover=False)
    [solved_block] = tri.blocks
    assert solved_block.method == "groebner"
    assert solved_block.steps[0].degree == 6
    for c in m.coordinates:
        assert abs(tri.start[c.name] - c.start) < 1e-9, (c.name, tri.start[c.name], c.start)


def test_a_slider_measured_from_its_design_pose_runs_past_the_first_step():
    """A dependent slider whose coordinate starts at 0 (measured from its
    design position, the hard points as numbers) and no parameter of unit
    m, in a block solved by Newton: its continuity tolerance was 5e-8 m (FMIGEN_BRANCH_TOL times the
    1e-6 floor of an unsized length unit), and the FMU stopped at the first
    half step, where the slider had moved 1e-5 m from rest ("no solution
    continuing the previous one"; the McPherson strut's stroke did the
    same).  Scaled by the bodies' extent it runs, and agrees with IDA and
    the Cartesian reference."""
    from test_workspace import slider_from_design_pose

    from fmigen.verify.validate import validate
    r = validate(slider_from_design_pose(independent="theta", torque=2.0, newton=True), stop_time=0.2)
    assert float(r.fmu_result["time"][-1]) == pytest.approx(0.2)
    assert r.passed, r.references
    assert set(r.references) == {"ida", "cartesian"}
    # the slider really moves: centimetres in 0.2 s
    assert np.ptp(r.fmu_result["x"]) > 0.01
