"""MJCF export/import and MuJoCo as a peer (fmigen/frontends/mjcf.py).

The references here share nothing with fmigen's equations: MuJoCo's own
dynamics (a foreign model run as written), and the DAE reference of the
low-level four-bar (reference.py) for an exported joint-based four-bar."""
import math
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from fmigen.joints import JointSystem  # noqa: E402
from fmigen.frontends.mjcf import MJCFError, export_mjcf, import_mjcf  # noqa: E402
from fmigen.verify.mujoco_peer import run_mujoco  # noqa: E402

FOREIGN = Path(__file__).parent / "data" / "crank_slider_mujoco.xml"
TIGHT = dict(solref=(2e-4, 1.0), solimp=(0.9999, 0.9999, 1e-4, 0.5, 2))


def crank_slider_start():
    """The foreign model's closed configuration at crank 60° (x-z plane,
    hinges about −y, slider line z = 0, slider origin at x = 0.8 at qpos0)."""
    th = math.pi / 3
    rod_abs = math.asin(-0.2 * math.sin(th) / 0.6)
    return {"crank": th, "rod": rod_abs - th, "slide": 0.2 * math.cos(th) + 0.6 * math.cos(rod_abs) - 0.8}


def test_a_foreign_model_imports_with_its_loop_motor_and_damper():
    system = import_mjcf(FOREIGN)
    kinds = {j.name: j.kind for j in system.joints.values()}
    assert kinds == {"crank": "revolute", "rod": "revolute", "slide": "prismatic", "pin": "spherical"}
    assert system.cut == ["pin"]
    assert [i.name for i in system.inputs] == ["drive"]
    assert [s.coordinate.name for s in system.rotational_springs] == ["slide"]
    assert float(system.rotational_springs[0].damping) == 0.5
    # geometry is exact: the rod's joint sits at exactly 1/5 on the crank
    assert system.joints["rod"].parent.position == tuple(map(__import__("sympy").Rational, ("1/5", "0", "0")))
    # the mass MuJoCo infers from the capsule geoms
    assert float(system.bodies["crank"].mass) == pytest.approx(1000 * math.pi * 0.02**2 * (0.2 + 4 / 3 * 0.02))


def test_import_then_export_runs_like_the_original_in_mujoco():
    """MuJoCo on the file as written vs MuJoCo on fmigen's export of its
    import: the same bodies, inertias, joints, loop, motor and damper."""
    xml = FOREIGN.read_text()
    q0 = crank_slider_start()
    times = np.linspace(0, 1, 11)
    ours = run_mujoco(import_mjcf(xml), q0, {}, times, dt=1e-4, inputs={"drive": 0.3}, **TIGHT)
    m = mujoco.MjModel.from_xml_string(xml)
    m.opt.integrator, m.opt.timestep = mujoco.mjtIntegrator.mjINT_RK4, 1e-4
    m.opt.tolerance, m.opt.iterations = 1e-14, 200
    m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_REFSAFE)
    m.eq_solref[:], m.eq_solimp[:] = TIGHT["solref"], TIGHT["solimp"]
    d = mujoco.MjData(m)
    d.qpos[:] = [q0["crank"], q0["rod"], q0["slide"]]
    d.ctrl[0] = 0.3
    rows = []
    for T in times:
        while d.time < T - 5e-5:
            mujoco.mj_step(m, d)
        rows.append(d.qpos.copy())
    rows = np.array(rows)
    assert abs(ours.q["crank"][-1] - q0["crank"]) > 1.0          # it really moved
    for i, name in enumerate(["crank", "rod", "slide"]):
        assert np.abs(rows[:, i] - ours.q[name]).max() < 1e-8      # measured 1.8e-10
    assert ours.max_violation < 1e-7                                # measured 3.2e-9


def fourbar_joints():
    """Paper 003's four-bar as bodies and joints, relative joint angles."""
    s = JointSystem("fourbar_joints_mj")
    l1, l2, l3, d = [s.parameter(n, v, "m") for n, v in [("l1", 1.0), ("l2", 4.0), ("l3", 2.5), ("d", 3.0)]]
    g = s.parameter("g", 9.8, "m/s2", tunable=True)
    # planar bars: MuJoCo needs positive transverse moments; they do not
    # enter a motion about z only
    bars = [s.body(n, 1.0, (L**2 / 24, L**2 / 24, L**2 / 12), com=(L / 2, 0, 0))
            for n, L in (("crank", l1), ("coupler", l2), ("rocker", l3))]
    crank, coupler, rocker = bars
    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 2)
    s.revolute("A", crank.marker("A", (l1, 0, 0)), coupler.origin)
    s.revolute("B", coupler.marker("B", (l2, 0, 0)), rocker.marker("B", (l3, 0, 0)))
    s.revolute("phi", s.ground.marker("D", (d, 0, 0)), rocker.origin)
    s.gravity = (0, -g, 0)
    s.joint_force("theta", s.input("tau", 6.0))
    s.independent = ["theta"]
    return s


def test_an_exported_fourbar_in_mujoco_matches_the_dae_reference():
    from fmigen.derive.dae import build_dae
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.verify.reference import assemble_newton, solve_reference
    dae = build_dae(prepare_mechanism("fourbar"))
    th, alpha, phi = assemble_newton(dae, dae.start_guess(), ["theta"])
    times = np.linspace(0, 2, 21)
    ref = solve_reference(dae, [th, alpha, phi], np.zeros(3), times, ["theta"])
    peer = run_mujoco(fourbar_joints(), {"theta": th, "A": alpha - th, "phi": phi}, {}, times, dt=1e-4, **TIGHT)
    assert abs(ref.q[-1, 0] - th) > 1.0
    assert np.abs(peer.q["theta"] - ref.q[:, 0]).max() < 1e-6       # measured 3.1e-8
    assert np.abs(peer.q["phi"] - ref.q[:, 2]).max() < 1e-6          # measured 5.8e-9
    assert peer.max_violation < 1e-6                                 # measured 2.5e-8


def test_the_export_nests_the_tree_and_closes_the_loop_with_connects():
    xml = export_mjcf(fourbar_joints())
    model = mujoco.MjModel.from_xml_string(xml)
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i) for i in range(model.njnt)]
    assert names == ["theta", "A", "phi"]          # B closes the loop
    assert model.neq == 2 and model.nu == 1         # a revolute cut: two connects on its axis
    assert 'data="theta"' in xml                    # the independent coordinate travels with the file


@pytest.mark.parametrize("snippet, cause", [
    ('<tendon><fixed name="tf"><joint joint="a" coef="1"/></fixed></tendon>', "tendon 'tf'"),
    ('<contact><pair geom1="g1" geom2="g2"/></contact>', "contact pair"),
    ('<actuator><position name="servo" joint="a" kp="10"/></actuator>', "actuator 'servo'"),
])
def test_what_fmigen_does_not_model_is_an_error_naming_it(snippet, cause):
    xml = f"""<mujoco><worldbody>
      <body name="b1"><joint name="a" type="hinge"/><geom name="g1" size="0.1"/>
        <body name="b2" pos="1 0 0"><joint name="b" type="hinge"/><geom name="g2" size="0.1"/></body>
      </body></worldbody>{snippet}</mujoco>"""
    with pytest.raises(MJCFError, match=cause):
        import_mjcf(xml)


BALL_AND_FREE = """<mujoco model="ball_and_free">
  <option gravity="0 0 -9.81" timestep="1e-4" integrator="RK4"><flag contact="disable"/></option>
  <worldbody>
    <body name="box" pos="0.1 0.2 1.0">
      <freejoint name="float"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/>
      <body name="bob" pos="0.2 0 -0.05">
        <joint name="hip" type="ball" pos="0 0 0"/>
        <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.03" mass="0.7"/>
      </body>
    </body>
  </worldbody>
  <keyframe>
    <key qpos="0.1 0.2 1.0  0.9 0.3 -0.2 0.25  0.8 -0.1 0.5 0.3"/>
  </keyframe>
</mujoco>"""


def _body_rates(a, b, c, da, db, dc):
    """Angular velocity in the body frame of R = Rz(a) Ry(b) Rx(c) from the
    angles' rates (MuJoCo's ball and free joints' qvel)."""
    return np.array([dc - da * math.sin(b),
                     db * math.cos(c) + da * math.cos(b) * math.sin(c),
                     -db * math.sin(c) + da * math.cos(b) * math.cos(c)])


def test_ball_and_free_joints_import_as_spherical_and_free_and_run_as_written():
    """A MuJoCo free body carrying a ball-jointed pendulum, both started at
    quaternions: imported as fmigen's free and spherical joints (3-2-1
    angles from the keyframe's quaternions), exported again as slides and
    hinges, and run in MuJoCo beside the file as written, from the same
    velocities (angle rates there, body angular velocities in the file, by
    the 3-2-1 kinematic equations).  The bodies' poses agree at the start to
    round-off (3.3e-16) and after 0.5 s of tumbling to 1e-10 (measured
    4.4e-14 in position, 9.2e-13 in orientation: two RK4 runs at 1e-4 s on
    different coordinates); before, a ball or free joint was refused."""
    system = import_mjcf(BALL_AND_FREE)
    assert {j.name: j.kind for j in system.joints.values()} == {"float": "free", "hip": "spherical"}
    start = {c.name: c.start for c in system.coordinates}
    rates = {"float_x": 0.3, "float_y": -0.2, "float_z": 0.5, "float_rx": 1.0, "float_ry": -0.5,
             "float_rz": 0.8, "hip_1": 2.0, "hip_2": -1.0, "hip_3": 1.5}
    mine = mujoco.MjModel.from_xml_string(export_mjcf(system, start=start, timestep=1e-4))
    theirs = mujoco.MjModel.from_xml_string(BALL_AND_FREE)
    runs = []
    for m in (mine, theirs):
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        if m is mine:
            for name, rate in rates.items():
                d.qvel[m.jnt_dofadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)]] = rate
        else:
            s_, r = start, rates
            d.qvel[0:3] = [r["float_x"], r["float_y"], r["float_z"]]
            d.qvel[3:6] = _body_rates(s_["float_rz"], s_["float_ry"], s_["float_rx"],
                                      r["float_rz"], r["float_ry"], r["float_rx"])
            d.qvel[6:9] = _body_rates(s_["hip_1"], s_["hip_2"], s_["hip_3"], r["hip_1"], r["hip_2"], r["hip_3"])
        mujoco.mj_forward(m, d)
        poses = [(d.xpos.copy(), d.xmat.copy())]
        while d.time < 0.5 - 5e-5:
            mujoco.mj_step(m, d)
        poses.append((d.xpos.copy(), d.xmat.copy()))
        runs.append(poses)
    (p0, R0), (p1, R1) = runs[0][0], runs[1][0]
    assert np.abs(p0 - p1).max() < 1e-12 and np.abs(R0 - R1).max() < 1e-12
    (p0, R0), (p1, R1) = runs[0][1], runs[1][1]
    assert np.abs(p0 - p1).max() < 1e-10 and np.abs(R0 - R1).max() < 1e-10
    assert np.abs(R1[2] - runs[1][0][1][2]).max() > 0.5                   # the pendulum swung


@pytest.mark.parametrize("snippet, cause", [
    ('<joint name="j" type="ball" damping="0.1"/>', "stiffness or damping on a MuJoCo ball joint"),
])
def test_a_spring_on_a_ball_joint_is_an_error_naming_it(snippet, cause):
    xml = f"""<mujoco><worldbody><body name="b">{snippet}<geom size="0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(MJCFError, match=cause):
        import_mjcf(xml)


def test_an_irrational_body_rotation_is_refused_with_its_reason():
    xml = """<mujoco><worldbody><body name="b" euler="0 0 0.7853981633974483">
             <joint name="h" type="hinge"/><geom size="0.1"/></body></worldbody></mujoco>"""
    with pytest.raises(MJCFError, match="exact rational rotation"):
        import_mjcf(xml)


def _simulate(path, names, stop=1.0):
    import fmpy
    return fmpy.simulate_fmu(str(path), stop_time=stop, output_interval=0.01,
                             output=[*names, *[f"der({n})" for n in names]])


def test_export_then_import_builds_the_same_fmu_trajectory(tmp_path):
    from fmigen.build.pipeline import build_fmu, load_mechanism, prepare_mechanism
    mech = prepare_mechanism("fourbar_joints")
    xml = export_mjcf(mech.joint_system, start={c.name: c.start for c in mech.coordinates})
    (tmp_path / "fourbar_joints.xml").write_text(xml)
    back = load_mechanism(tmp_path / "fourbar_joints.xml")
    assert [c.name for c in back.coordinates] == [c.name for c in mech.coordinates]
    original, _ = build_fmu("fourbar_joints", tmp_path / "original.fmu")
    imported, _ = build_fmu(back, tmp_path / "imported.fmu")
    names = [c.name for c in mech.coordinates]
    a, b = _simulate(original, names), _simulate(imported, names)
    assert abs(a["theta"][-1] - a["theta"][0]) > 0.5
    for n in names:
        assert np.abs(a[n] - b[n]).max() < 1e-12, n


def test_a_foreign_model_builds_and_matches_mujoco_running_it(tmp_path):
    """The foreign crank-slider built into an FMU and compared with MuJoCo
    running fmigen's export of it (that export runs like the file itself:
    test_import_then_export_runs_like_the_original_in_mujoco)."""
    from fmigen.verify.mujoco_peer import compare_with_mujoco
    from fmigen.build.pipeline import build_fmu
    path, compiled = build_fmu(str(FOREIGN), tmp_path / "crank_slider.fmu")
    names = [c.name for c in compiled.mechanism.coordinates]
    result = _simulate(path, names)
    peer = compare_with_mujoco(compiled.mechanism, result)
    assert set(peer["max_abs_error"]) == set(names)
    assert max(peer["max_abs_error"].values()) < 1e-6            # measured below
    assert max(peer["max_abs_velocity_error"].values()) < 1e-5
    assert peer["mujoco_constraint_violation"] < 1e-6


def test_validate_with_the_mujoco_peer_reports_three_references():
    """The foreign crank-slider through `validate --peer mujoco`: the IDA and
    Cartesian references and MuJoCo, each passing, with MuJoCo's own
    violation beside its errors."""
    from fmigen.verify.validate import validate
    report = validate(str(FOREIGN), stop_time=1.0, peer="mujoco")
    refs = report.as_json()["references"]
    assert set(refs) == {"ida", "cartesian", "mujoco"}
    assert all(r["passed"] for r in refs.values()) and report.passed
    assert max(refs["mujoco"]["max_abs_error"].values()) < 1e-8          # measured 6.7e-10
    assert refs["mujoco"]["mujoco_constraint_violation"] < 1e-8          # measured 2.5e-10


def test_the_mujoco_peer_is_driven_by_the_same_input_signal(tmp_path):
    """`validate --peer mujoco --input drive=...`: MuJoCo runs with the
    motor's signal the FMU and the references get.  Its distance to the FMU
    is then the IDA reference's (the FMU's own error: its input is the
    signal's samples, linear between them), while the signal moves the
    crank 0.047 rad away from the undriven run by t = 0.5 s (a peer left
    at the start value 0 was off by that)."""
    import fmpy
    from fmigen.verify.validate import validate
    fmu = tmp_path / "crank_slider.fmu"
    report = validate(str(FOREIGN), stop_time=0.5, peer="mujoco", fmu_path=fmu,
                      input_signals=["drive=0.05*smoothstep(t, 0, 0.5)"])
    refs = report.as_json()["references"]
    assert all(r["passed"] for r in refs.values()) and report.passed
    assert max(refs["mujoco"]["max_abs_error"].values()) < 1e-6           # measured 2.4e-7
    for name, e in refs["ida"]["max_abs_error"].items():                  # measured within 2.5e-10
        assert abs(refs["mujoco"]["max_abs_error"][name] - e) < 1e-8, name
    # the same FMU without the signal (drive at its start, 0)
    free = fmpy.simulate_fmu(str(fmu), stop_time=0.5, output_interval=0.01, output=["crank"])
    assert abs(report.fmu_result["crank"][-1] - free["crank"][-1]) > 0.04


FOURBAR_MJCF = """<mujoco model="{name}">
  <option gravity="0 -9.81 0"/>
  <default><geom type="capsule" size="0.02" density="1000"/></default>
  <worldbody>
    <body name="crank">
      <joint name="crank" type="hinge" axis="0 0 1"/>
      <geom fromto="0 0 0 0 1 0"/>
      <body name="coupler" pos="0 1 0">
        <joint name="coupler" type="hinge" axis="0 0 1"/>
        <geom fromto="0 0 0 {bx} {by} 0"/>
      </body>
    </body>
    <body name="rocker" pos="{dx} {dy} 0">
      <joint name="rocker" type="hinge" axis="0 0 1"/>
      <geom fromto="0 0 0 {rx} {ry} 0"/>
    </body>
  </worldbody>
  <equality><connect name="B" body1="coupler" body2="rocker" anchor="{bx} {by} 0"/></equality>
  <actuator>{motors}</actuator>
  {key}
</mujoco>"""


def _fourbar_mjcf(tmp_path, name, motors, b=(4, 3), d=(4, 0), key=""):
    """A planar four-bar written by hand as a MuJoCo user would: crank O-A
    (O at the origin, A = (0, 1) at qpos0), coupler A-B with B = A + ``b``,
    rocker D-B with D = ``d``, closed at qpos0 by a body-form connect at B."""
    bx, by = b
    dx, dy = d
    xml = FOURBAR_MJCF.format(name=name, bx=bx, by=by, dx=dx, dy=dy, rx=bx - dx, ry=1 + by - dy, key=key,
                              motors="".join(f'<motor name="{j}_motor" joint="{j}"/>' for j in motors))
    path = tmp_path / f"{name}.xml"
    path.write_text(xml)
    return path


def test_an_imported_fourbar_integrates_its_actuated_crank(tmp_path):
    """A motor on the crank: the crank is the independent coordinate, its
    keyframe angle kept exactly.  (Pivoted QR alone makes the crank dependent
    here: its column of Φ_q, ω × OB = (−4, 4), is the longest.)"""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import prepare_mechanism
    path = _fourbar_mjcf(tmp_path, "fourbar_motor", ["crank"], key='<keyframe><key qpos="0.3 0 0"/></keyframe>')
    assert import_mjcf(path).preferred_independent == ["crank"]
    mech = prepare_mechanism(path, use_cache=False)
    assert mech.independent == ["crank"] and mech.independent_note == ""
    assert mech.coordinate_by_name("crank").start == 0.3
    dae = build_dae(mech)
    assert [dae.names[i] for i in choose_partition(dae).independent] == ["crank"]
    # the closure holds at the start: B from both sides (crank 1 at 90° + 0.3, coupler 5, rocker 4 from (4, 0))
    q = {c.name: c.start for c in mech.coordinates}
    th, al = math.pi / 2 + q["crank"], q["crank"] + q["coupler"] + math.atan2(3, 4)
    ph = math.pi / 2 + q["rocker"]
    B1 = (math.cos(th) + 5 * math.cos(al), math.sin(th) + 5 * math.sin(al))
    B2 = (4 + 4 * math.cos(ph), 4 * math.sin(ph))
    assert math.dist(B1, B2) < 1e-12


def test_an_actuated_choice_that_is_singular_falls_back_and_says_why(tmp_path):
    """A motor on the rocker while O, A and B are aligned (the rocker at its
    limit): with the rocker independent, Φ_d (crank, coupler) is singular at
    the start, so the best-conditioned set is taken and the note says why;
    two motors on a one-DOF four-bar are too many."""
    from fmigen.build.pipeline import prepare_mechanism
    path = _fourbar_mjcf(tmp_path, "fourbar_toggle_motor", ["rocker"], b=(0, 3), d=(4, 1))
    mech = prepare_mechanism(path, use_cache=False)
    assert mech.independent is None
    assert "['rocker']" in mech.independent_note and "Φ_d is singular at the start" in mech.independent_note
    path = _fourbar_mjcf(tmp_path, "fourbar_two_motors", ["crank", "rocker"])
    mech = prepare_mechanism(path, use_cache=False)
    assert mech.independent is None and "2 of them for 1 degree(s) of freedom" in mech.independent_note


# --- spatial joints: every kind in the tree, either way round; a cut universal joint ---------

def rsur(cut="U", turned_rocker=False):
    """A spatial RSUR loop: a crank on a revolute to ground (z), a rod on a
    ball joint at the crank's tip, a rocker on a revolute to ground (y), and
    a universal joint from the rocker's tip to the rod's far end (first axis
    x on the rocker, second z on the rod).  Closed at every coordinate 0;
    ``turned_rocker`` turns the rocker's pivot frame 53° about its axis (cos
    3/5), so the same loop closes at psi = −53° and the zero pose is open.
    Three bodies, 6·3 − (5 + 3 + 5 + 4) = 1 degree of freedom.  The loop's block is solved by
    Newton: this is about MJCF, and Newton keeps the build short."""
    s = JointSystem("rsur_mj")
    s.gravity = (0, 0, -9.81)
    crank = s.body("crank", 1.0, (0.002, 0.004, 0.005), com=(0.05, 0, 0))
    rod = s.body("rod", 0.5, (0.006, 0.005, 0.004), com=(0.125, 0.1, 0.1))
    rocker = s.body("rocker", 0.8, (0.003, 0.004, 0.002), com=(0, 0, 0.1))
    s.revolute("theta", s.ground.origin, crank.origin, axis=(0, 0, 1), start=0.0, velocity_start=3.0)
    s.spherical("S", crank.marker("B", (0.1, 0, 0)), rod.origin, start=(0.0, 0.0, 0.0))
    # turned: the same loop, its closed pose at psi = −53.13° (cos 3/5)
    turn = [[3 / 5, 0, 4 / 5], [0, 1, 0], [-4 / 5, 0, 3 / 5]] if turned_rocker else None
    s.revolute("psi", s.ground.marker("O2", (0.35, 0.2, 0), turn), rocker.origin, axis=(0, 1, 0),
               start=-math.atan2(4, 3) if turned_rocker else 0.0)
    s.universal("U", rocker.marker("C", (0, 0, 0.2)), rod.marker("C", (0.25, 0.2, 0.2)),
                axis=(1, 0, 0), axis2=(0, 0, 1))
    s.cut = [cut]
    s.independent = ["theta"]
    s.newton_blocks = [["S_1", "S_2", "S_3", "psi"] if cut == "U" else ["U_1", "U_2", "psi"]]
    return s


def _pythagorean(axis):
    """A rotation by the angle with cos 3/5, sin 4/5 about a coordinate axis."""
    import sympy as sp
    c, s_ = sp.Rational(3, 5), sp.Rational(4, 5)
    i = "xyz".index(axis)
    j, k = (i + 1) % 3, (i + 2) % 3
    R = sp.eye(3)
    R[j, j], R[j, k], R[k, j], R[k, k] = c, -s_, s_, c
    return R


@pytest.mark.parametrize("reverse", [False, True], ids=["from-ground", "from-child"])
@pytest.mark.parametrize("kind", ["revolute", "prismatic", "cylindrical", "universal", "spherical",
                                  "planar", "free"])
def test_every_tree_joint_places_its_body_as_the_joint_convention_says(kind, reverse):
    """A body on one joint of each kind, written either way round (parent
    marker on ground, or on the body: the tree then reaches the joint from
    its child), markers off-centre and turned.  MuJoCo's body pose from the
    exported joints at arbitrary coordinates equals the pose from the joint
    convention of joints.py (R_C = R_P R_J(q), r_C = r_P + R_P p_J(q)),
    composed here by hand.  Before, a planar or free joint reached from its
    child was refused."""
    from fmigen.frontends.joint_poses import joint_transform
    s = JointSystem(f"one_{kind}")
    body = s.body("b", 2.0, (0.3, 0.2, 0.25), com=(0.1, -0.05, 0.02))
    on_ground = s.ground.marker("m", (0.3, -0.2, 0.5), _pythagorean("x"))
    on_body = body.marker("m", (-0.1, 0.25, 0.05), _pythagorean("y"))
    parent, child = (on_body, on_ground) if reverse else (on_ground, on_body)
    axes = {"axis": (0, 3 / 5, 4 / 5)} if kind in ("revolute", "prismatic", "cylindrical") else \
        {"axis": (0, 0, 1), "axis2": (3 / 5, 4 / 5, 0)} if kind == "universal" else {}
    s.joint(kind, "j", parent, child, **axes)
    joint = s.joints["j"]
    rng = np.random.default_rng(7)
    q = [float(x) for x in rng.uniform(-1.2, 1.2, len(joint.coordinates))]
    xml = export_mjcf(s, start={c.name: v for c, v in zip(joint.coordinates, q)})
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_kinematics(model, data)

    def pose(mk):
        return np.array(mk.rotation, dtype=float), np.array(mk.position, dtype=float)
    RJ, pJ = joint_transform(joint, q)
    RJ, pJ = np.array(RJ, dtype=float), np.array(pJ, dtype=float).ravel()
    Rg, pg = pose(on_ground)
    Rb, pb = pose(on_body)
    if reverse:     # ground marker = child: R_g = R_B R_b R_J, p_g = r_B + R_B (p_b + R_b p_J)
        R_B = Rg @ RJ.T @ Rb.T
        r_B = pg - R_B @ (pb + Rb @ pJ)
    else:           # body marker = child: R_B R_b = R_g R_J, r_B + R_B p_b = p_g + R_g p_J
        R_B = Rg @ RJ @ Rb.T
        r_B = pg + Rg @ pJ - R_B @ pb
    b = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "b")
    assert np.abs(data.xmat[b].reshape(3, 3) - R_B).max() < 1e-12
    assert np.abs(data.xpos[b] - r_B).max() < 1e-12
    assert np.abs(R_B - np.eye(3)).max() > 0.1                                          # really turned


@pytest.mark.parametrize("turned", [False, True], ids=["closed-at-zero", "open-at-zero"])
def test_a_cut_universal_joint_is_a_connect_and_its_axes_held_perpendicular(turned):
    """MuJoCo has no universal equality: the export writes the joint's
    centre as a connect and its one rotation condition, first axis ⟂ second,
    as a tendon between points 1 m along each axis held at √2 m.  At the
    assembled start every equality holds (also when the zero pose, where
    MuJoCo measures the tendon's reference length, does not close the U);
    turning the rod about its own axis, which the U forbids and the ball
    joint allows, breaks only the tendon equality."""
    from fmigen.build.pipeline import as_mechanism
    mech = as_mechanism(rsur(turned_rocker=turned))
    start = {c.name: c.start for c in mech.coordinates}
    model = mujoco.MjModel.from_xml_string(export_mjcf(mech.joint_system, start=start))
    data = mujoco.MjData(model)
    types = [mujoco.mjtEq(int(t)).name for t in model.eq_type]
    assert types == ["mjEQ_CONNECT", "mjEQ_TENDON"]
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    assert data.ne == 4 and np.abs(data.efc_pos[:4]).max() < 1e-12
    if turned:
        assert abs(model.tendon_length0[0] - math.sqrt(2)) > 0.1          # the zero pose is open
    # a turn of the rod about its own direction (B → C), about the ball joint's centre
    d = np.array([0.25, 0.2, 0.2])
    rod = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "rod")
    R = data.xmat[rod].reshape(3, 3)
    axis_local = R.T @ d / np.linalg.norm(d)
    from scipy.spatial.transform import Rotation
    S = np.array([start[n] for n in ("S_1", "S_2", "S_3")])
    RS = Rotation.from_euler("ZYX", S).as_matrix() @ Rotation.from_rotvec(0.01 * axis_local).as_matrix()
    for name, value in zip(("S_1", "S_2", "S_3"), Rotation.from_matrix(RS).as_euler("ZYX")):
        data.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)]] = value
    mujoco.mj_forward(model, data)
    assert np.abs(data.efc_pos[:3]).max() < 1e-12                         # C did not move
    assert abs(data.efc_pos[3]) > 1e-4                                    # the U's axes did


def test_the_mujoco_peer_agrees_with_the_fmu_on_a_loop_with_ball_and_universal_joints(tmp_path):
    """The RSUR loop closed at its universal joint (cut: a connect and the
    axes tendon), its ball joint three hinges in the tree: the FMU and MuJoCo
    from the FMU's start over 0.3 s, the crank turning 1 rad.  Before, the
    export refused the cut universal joint.  MuJoCo's constraints are soft:
    its own violation (measured 2.7e-7 m, at the tendon's 1 m lever: the U's
    angle held to 2.7e-7 rad) is the floor of the comparison; the
    coordinates agree to 6.6e-7 rad (the same at dt 1e-4 and 5e-5), the
    velocities to 7.7e-6 rad/s.  Both are the constraints' softness, not the
    export: with solref's time constant halved (1e-4 s, dt 2.5e-5 s) the
    error and the violation fall 4× (1.7e-7, 6.7e-8), while the FMU agrees
    with IDA to 8e-12 and with the Cartesian reference to 4.4e-10."""
    from fmigen.verify.mujoco_peer import compare_with_mujoco
    from fmigen.build.pipeline import as_mechanism, build_fmu
    mech = as_mechanism(rsur())
    path, compiled = build_fmu(mech, tmp_path / "rsur.fmu")
    names = [c.name for c in compiled.mechanism.coordinates]
    result = _simulate(path, names, stop=0.3)
    assert abs(result["theta"][-1] - result["theta"][0]) > 1.0          # it really moved
    assert np.ptp(np.asarray(result["psi"])) > 0.1
    peer = compare_with_mujoco(compiled.mechanism, result)
    assert set(peer["max_abs_error"]) == set(names)
    assert max(peer["max_abs_error"].values()) < 2e-6                     # measured 6.6e-7
    assert max(peer["max_abs_velocity_error"].values()) < 3e-5            # measured 7.7e-6
    assert peer["mujoco_constraint_violation"] < 1e-6                     # measured 2.7e-7


@pytest.mark.parametrize("kind", ["prismatic", "cylindrical", "planar", "free"])
def test_a_cut_joint_mujoco_cannot_hold_exactly_is_an_error_naming_it(kind):
    s = JointSystem(f"loop_{kind}")
    a = s.body("a", 1.0, (0.1, 0.1, 0.1))
    b = s.body("b", 1.0, (0.1, 0.1, 0.1))
    s.revolute("r1", s.ground.origin, a.origin)
    s.revolute("r2", a.marker("t", (1, 0, 0)), b.origin)
    s.joint(kind, "closing", b.marker("t", (1, 0, 0)), s.ground.marker("e", (2, 0, 0)))
    s.cut = ["closing"]
    with pytest.raises(MJCFError, match=f"joint 'closing' \\({kind}\\) closes a loop"):
        export_mjcf(s)


# --- a free joint exported and read back ------------------------------------------------------

def _thrown_box():
    """A box on a free joint from ground, thrown (0.3, -0.2, 2.0) m/s and
    spinning at 4 rad/s about its body x axis, the principal axis of the
    largest moment, from a tilted pose (yaw 0.2, pitch 0.3, roll 0.1)."""
    s = JointSystem("thrown_box")
    box = s.body("box", 1.5, (0.09, 0.05, 0.07))
    s.free("fly", s.ground.origin, box.origin, coordinates=["x", "y", "z", "rx", "ry", "rz"],
           start=[0.1, -0.2, 1.0, 0.1, 0.3, 0.2])
    for name, rate in zip(["x", "y", "z", "rx", "ry", "rz"], [0.3, -0.2, 2.0, 4.0, 0.0, 0.0]):
        s.coordinate_by_name(name).velocity_start = rate
    s.gravity = (0, 0, -9.81)
    return s


def _thrown_box_closed_form(t):
    """The flight in closed form: the centre of mass a parabola, and the
    steady rotation about a principal axis (Euler's equations: ω = ω0 e_x
    stays), which with R = Rz(rz) Ry(ry) Rx(rx) is rx growing at 4 rad/s,
    ry and rz fixed."""
    return {"x": 0.1 + 0.3 * t, "y": -0.2 - 0.2 * t, "z": 1.0 + 2.0 * t - 9.81 / 2 * t * t,
            "rx": 0.1 + 4.0 * t, "ry": 0.3, "rz": 0.2}


def test_an_exported_free_joint_imports_as_the_free_joint_it_was():
    """export_mjcf writes a free joint as three slides and hinges about z,
    y, x in one body; import_mjcf reads that back as a free joint with the
    same coordinates and starts.  Both directions run the closed-form
    flight: MuJoCo on the re-exported model (its qpos the coordinates) and
    fmigen's Cartesian reference on the imported system, each to 1e-9 over
    1 s.  Before, the import refused the slides and hinges ("the joint
    combination [slide, slide, slide, hinge, hinge, hinge] is not one fmigen
    represents"), so a mechanism on a free joint (the vehicle, the Stewart
    platform, the quarter car) did not survive export then import."""
    from fmigen.verify.cartesian import CartesianModel
    original = _thrown_box()
    system = import_mjcf(export_mjcf(original))
    (joint,) = system.joints.values()
    assert joint.kind == "free"
    assert [c.name for c in joint.coordinates] == ["x", "y", "z", "rx", "ry", "rz"]
    assert [c.start for c in joint.coordinates] == [c.start for c in original.coordinates]

    rates = {c.name: c.velocity_start for c in original.coordinates}
    m = mujoco.MjModel.from_xml_string(export_mjcf(system, timestep=1e-4))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    adr = {n: m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n)] for n in rates}
    for n, rate in rates.items():
        d.qvel[adr[n]] = rate
    while d.time < 1.0 - 5e-5:
        mujoco.mj_step(m, d)
    exact = _thrown_box_closed_form(d.time)
    assert max(abs(d.qpos[adr[n]] - exact[n]) for n in exact) < 1e-9

    times = np.linspace(0.0, 1.0, 5)
    sol = CartesianModel(system).simulate({c.name: c.start for c in system.coordinates}, rates,
                                          list(rates), times, rtol=1e-12)
    for n in rates:
        assert np.abs(sol.column(n) - _thrown_box_closed_form(times)[n]).max() < 1e-9, n
    assert abs(_thrown_box_closed_form(1.0)["z"] - 1.0) > 1.0                    # it flew
