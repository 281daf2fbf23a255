"""Joint reactions (``JointSystem.reaction``): the wrench the parent body
exerts on the child through a joint, as FMU outputs.

Checked against references that share none of its equations:

* closed forms of a uniform rod pendulum (mass m, length L, pivot at one
  end): released from the horizontal, the pivot's vertical reaction is
  m·g/4; passing the vertical after that release (ω² = 3g/L), 5·m·g/2; and at
  any angle θ of that motion (ω² = −3g sin θ / L, θ̈ = −3g cos θ / (2L)) the
  force is m·g·(9/4 sin θ cos θ, 1 − 3/4 cos² θ + 3/2 sin² θ);
* the Cartesian reference's own multipliers (``CartesianModel.joint_reactions``:
  Newton–Euler of every body in absolute coordinates with every joint,
  tree or cut, as constraints) at the FMU's states, for a planar four-bar
  with a driven crank, a slider-crank and a spatial RSSR loop: every joint,
  all six components.
"""
import math

import numpy as np
import pytest
from fmpy import simulate_fmu
from fmpy.validation import validate_fmu

from conftest import build_fmi_variants
from fmigen.build.pipeline import build_fmu
from fmigen.joints import JointSystem
from fmigen.model import ModelError
from fmigen.verify.cartesian import CartesianModel

M, L, G = 2.0, 1.5, 9.81
COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")


def rod_pendulum() -> JointSystem:
    s = JointSystem("reaction_pendulum")
    m = s.parameter("m", M, "kg", tunable=True)
    length = s.parameter("L", L, "m")
    g = s.parameter("g", G, "m/s2", tunable=True)
    rod = s.body("rod", m, (0, m * length**2 / 12, m * length**2 / 12), com=(length / 2, 0, 0))
    s.revolute("pivot", s.ground.origin, rod.origin, start=0.0)   # the rod along +x: horizontal
    s.gravity = (0, -g, 0)
    s.reaction("pivot")
    return s


@pytest.fixture(scope="module")
def pendulum_fmus(tmp_path_factory):
    out = tmp_path_factory.mktemp("reaction_pendulum")
    return build_fmi_variants(rod_pendulum(), out, "pendulum")


def reaction(res, joint):
    return np.array([res[f"reaction_{joint}_{c}"] for c in COMPONENTS]).T


@pytest.mark.parametrize("variant", [("2", "cs"), ("2", "me"), ("3", "cs"), ("3", "me")])
def test_rod_pendulum_released_horizontal_matches_the_closed_forms(pendulum_fmus, variant):
    path = pendulum_fmus[variant]
    assert validate_fmu(str(path)) == []
    res = simulate_fmu(str(path), stop_time=1.0, output_interval=1e-2, relative_tolerance=1e-11)
    r = reaction(res, "pivot")
    # at release: m g / 4 up, nothing else (the pivot holds no moment)
    assert r[0] == pytest.approx([0, M * G / 4, 0, 0, 0, 0], abs=1e-12 * M * G)
    theta, omega = res["pivot"], res["der(pivot)"]
    assert theta.min() < -math.pi / 2       # it passes the vertical
    # at every state (θ, ω): Newton for the rod's centre, θ̈ = −3g cos θ / (2L)
    s, c = np.sin(theta), np.cos(theta)
    assert np.abs(r[:, 0] - M * L / 2 * (3 * G * s * c / (2 * L) - c * omega**2)).max() < 1e-12 * M * G
    assert np.abs(r[:, 1] - M * G - M * L / 2 * (-3 * G * c**2 / (2 * L) - s * omega**2)).max() < 1e-12 * M * G
    assert np.abs(r[:, 2:]).max() < 1e-12 * M * G * L
    # and with the energy of the horizontal release, ω² = −3g sin θ / L: the
    # closed forms in θ alone (to the integration's energy error)
    tol = (1e-9 if variant[1] == "cs" else 1e-7) * M * G
    assert np.abs(r[:, 0] - M * G * 9 / 4 * s * c).max() < tol
    assert np.abs(r[:, 1] - M * G * (1 - 0.75 * c**2 + 1.5 * s**2)).max() < tol


def test_rod_pendulum_passing_the_vertical_and_a_tunable_mass(pendulum_fmus):
    # the same motion through the bottom: θ = −π/2 with ω² = 3g/L, which the
    # horizontal release reaches; there the pivot carries 5 m g / 2.  The
    # mass is a tunable parameter: the reaction scales with it
    for mass in (M, 3.5):
        res = simulate_fmu(str(pendulum_fmus[("2", "cs")]), stop_time=0.01, output_interval=1e-2,
                           start_values={"m": mass, "pivot": -math.pi / 2, "der(pivot)": math.sqrt(3 * G / L)})
        r = reaction(res, "pivot")[0]
        assert r == pytest.approx([0, 5 * mass * G / 2, 0, 0, 0, 0], abs=1e-12 * mass * G)


def test_python_runtime_reactions_equal_the_c_fmu(pendulum_fmus, tmp_path):
    pytest.importorskip("pythonfmu")
    from fmigen.pyfmu.pyruntime import build_python_fmu
    path, _ = build_python_fmu(rod_pendulum(), tmp_path / "pendulum_py.fmu")
    py = simulate_fmu(str(path), stop_time=0.3, output_interval=1e-2)
    c = simulate_fmu(str(pendulum_fmus[("2", "cs")]), stop_time=0.3, output_interval=1e-2)
    assert reaction(py, "pivot")[0] == pytest.approx([0, M * G / 4, 0, 0, 0, 0], abs=1e-12 * M * G)
    assert np.abs(reaction(py, "pivot") - reaction(c, "pivot")).max() < 1e-12 * M * G


def _fourbar():
    from mechanisms.fourbar_joints import build
    return build()


def _slider_crank():
    from mechanisms.slider_crank_joints import build
    return build()


def _rssr():
    from corpus.rssr import build
    return build()


@pytest.mark.parametrize("make", [_fourbar, _slider_crank, _rssr], ids=["fourbar", "slider_crank", "rssr"])
def test_every_joint_matches_the_cartesian_reference(make, tmp_path):
    """Every joint's reaction, tree and cut, driven or not, against the
    Cartesian reference's multipliers at the FMU's states (the same state,
    so the comparison is to round-off, not to an integration error)."""
    system = make()
    for name in system.joints:
        system.reaction(name)
    path, compiled = build_fmu(system, tmp_path / f"{system.name}.fmu", windows=False)
    res = simulate_fmu(str(path), stop_time=0.5, output_interval=0.05)
    names = [c.name for c in compiled.embedding.dae.mechanism.coordinates]
    cart = CartesianModel(make())
    scale = max(np.abs(reaction(res, j)).max() for j in system.joints)
    worst = 0.0
    for row in res[::2]:
        X, R, tree = cart.forward_kinematics({n: row[n] for n in names})
        V = cart.tree_velocities(X, R, tree, {n: row[f"der({n})"] for n in names})
        ref = cart.joint_reactions(row["time"], X, R, V)
        for j in system.joints:
            mine = np.array([row[f"reaction_{j}_{c}"] for c in COMPONENTS])
            worst = max(worst, np.abs(mine - np.r_[ref[j][0], ref[j][1]]).max())
    assert scale > 1.0                      # something is carried
    assert worst < 1e-11 * scale


def test_a_joint_written_from_the_moving_body(tmp_path):
    """The pivot declared with the rod as its parent and ground as its child
    (the tree traverses it backwards): its reaction is what the rod exerts
    on ground, −m g/4 at the horizontal release, and the Cartesian
    reference's at every state."""
    s = JointSystem("reversed_pendulum")
    rod = s.body("rod", M, (0, M * L**2 / 12, M * L**2 / 12), com=(L / 2, 0, 0))
    s.revolute("pivot", rod.origin, s.ground.origin, start=0.0)
    s.gravity = (0, -G, 0)
    s.reaction("pivot")
    path, _ = build_fmu(s, tmp_path / "reversed.fmu", windows=False)
    res = simulate_fmu(str(path), stop_time=0.5, output_interval=0.05)
    r = reaction(res, "pivot")
    assert r[0] == pytest.approx([0, -M * G / 4, 0, 0, 0, 0], abs=1e-12 * M * G)
    cart = CartesianModel(s)
    for row, mine in zip(res, r):
        X, R, tree = cart.forward_kinematics({"pivot": row["pivot"]})
        V = cart.tree_velocities(X, R, tree, {"pivot": row["der(pivot)"]})
        f, mom = cart.joint_reactions(row["time"], X, R, V)["pivot"]
        assert np.abs(mine - np.r_[f, mom]).max() < 1e-12 * M * G * L


def test_reaction_errors():
    s = rod_pendulum()
    with pytest.raises(ModelError, match="requested twice"):
        s.reaction("pivot")
    with pytest.raises(ModelError, match="unknown joint 'hinge'"):
        s.reaction("hinge")
    s = rod_pendulum()
    s.output("reaction_pivot_fx", 0)
    with pytest.raises(ModelError, match="declared by s.output and by s.reaction"):
        build_fmu(s, "/nonexistent/x.fmu")
    s = rod_pendulum()
    s.kinematic = True
    with pytest.raises(ModelError, match="kinematic FMU integrates none"):
        build_fmu(s, "/nonexistent/x.fmu")


def test_rssr_tree_joints_match_mujoco(tmp_path):
    """MuJoCo's interaction forces (``cfrc_int`` after ``mj_rnePostConstraint``:
    each body's wrench from its parent, from MuJoCo's own dynamics and its
    solver's force at the cut spherical joint's ``connect``) at the FMU's
    state, for the RSSR's tree joints.  MuJoCo's constraints are soft (an
    impedance of at most 0.9999 regularizes the constraint force by about
    1e-4 of it), which bounds the agreement; a wrong sign or term in a
    reaction is of the order of the reaction itself."""
    mujoco = pytest.importorskip("mujoco")
    from fmigen.frontends.mjcf import export_mjcf
    system = _rssr()
    for name in system.joints:
        system.reaction(name)
    path, compiled = build_fmu(system, tmp_path / "rssr.fmu", windows=False)
    row = simulate_fmu(str(path), stop_time=0.3, output_interval=0.1)[-1]
    names = [c.name for c in compiled.embedding.dae.mechanism.coordinates]
    xml = export_mjcf(_rssr(), start={n: float(row[n]) for n in names}, timestep=1e-4, integrator="RK4",
                      solref=(2e-4, 1.0), solimp=(0.9999, 0.9999, 1e-4, 0.5, 2))
    model = mujoco.MjModel.from_xml_string(xml.replace('<flag contact="disable"/>',
                                                       '<flag contact="disable" refsafe="disable"/>'))
    model.opt.tolerance, model.opt.iterations = 1e-14, 200
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)        # the pose, and the motor at the input's start
    owner = {c.name: j.name for j in system.joints.values() for c in j.coordinates}
    for i in range(model.njnt):
        data.qvel[model.jnt_dofadr[i]] = float(row[f"der({mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i)})"])
    mujoco.mj_forward(model, data)
    mujoco.mj_rnePostConstraint(model, data)
    checked = set()
    for i in range(model.njnt):
        joint = owner[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i)]
        b = model.jnt_bodyid[i]
        # [torque about the subtree root's centre of mass; force], world axes
        torque, force = data.cfrc_int[b][:3], data.cfrc_int[b][3:]
        moment = torque + np.cross(data.subtree_com[model.body_rootid[b]] - data.xanchor[i], force)
        mine = reaction(row, joint)
        assert np.abs(mine - np.r_[force, moment]).max() < 1e-3 * np.abs(mine).max(), joint
        checked.add(joint)
    assert checked == {"theta", "phi", "U"}



def test_reactions_fill_k_with_the_embeddings_statements():
    """K = [[M, Φ_qᵀ], [Φ_q, 0]] and [F; γ] are filled by the statements of
    the embedding's joint CSE (``codegen_embedding.JointQuantities``), not by
    a CSE of their own: every temporary the reaction solve defines is
    defined by the same statement in the embedding's right-hand side, and
    the solve fills the sin/cos it reads from q."""
    import re
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    system = _fourbar()
    for name in system.joints:
        system.reaction(name)
    model_c = compile_model(prepare_mechanism(system)).generated.model_c
    solve = re.search(r"^static int fmigen_reaction_solve\(.*?^}$", model_c, re.M | re.S).group(0)
    prepare = re.search(r"^int fmigen_embedded_prepare\(.*?^}$", model_c, re.M | re.S).group(0)
    defined = re.findall(r"^\s*(const double \w+ = .*;)$", solve, re.M)
    assert defined and all(d in prepare for d in defined)
    assert "fmigen_sincos(q[" in solve and "trig[" in "".join(defined)
