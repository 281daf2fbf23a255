"""MJCF export/import and MuJoCo as a peer (fmigen/mjcf.py).

The references here share nothing with fmigen's equations: MuJoCo's own
dynamics (a foreign model run as written), and the DAE reference of the
low-level four-bar (reference.py) for an exported joint-based four-bar."""
import math
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from fmigen.joints import JointSystem  # noqa: E402
from fmigen.mjcf import MJCFError, export_mjcf, import_mjcf, run_mujoco  # noqa: E402

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
    from fmigen.dae import build_dae
    from fmigen.pipeline import prepare_mechanism
    from fmigen.reference import assemble_newton, solve_reference
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


def test_a_ball_joint_is_an_error_that_says_what_to_write_instead():
    xml = """<mujoco><worldbody><body name="b"><joint name="ball" type="ball"/><geom size="0.1"/></body>
             </worldbody></mujoco>"""
    with pytest.raises(MJCFError, match="hinges about z, y, x"):
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
    from fmigen.pipeline import build_fmu, load_mechanism, prepare_mechanism
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
    from fmigen.mjcf import compare_with_mujoco
    from fmigen.pipeline import build_fmu
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
    from fmigen.validate import validate
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
    from fmigen.validate import validate
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
    from fmigen.dae import build_dae
    from fmigen.partition import choose_partition
    from fmigen.pipeline import prepare_mechanism
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
    from fmigen.pipeline import prepare_mechanism
    path = _fourbar_mjcf(tmp_path, "fourbar_toggle_motor", ["rocker"], b=(0, 3), d=(4, 1))
    mech = prepare_mechanism(path, use_cache=False)
    assert mech.independent is None
    assert "['rocker']" in mech.independent_note and "Φ_d is singular at the start" in mech.independent_note
    path = _fourbar_mjcf(tmp_path, "fourbar_two_motors", ["crank", "rocker"])
    mech = prepare_mechanism(path, use_cache=False)
    assert mech.independent is None and "2 of them for 1 degree(s) of freedom" in mech.independent_note
