"""The FMU starts in the pose the joint description states, or the build
stops (issue 33, item 1).

The mechanism is ``tests/corpus/double_wishbone.py``: a spatial
double-wishbone quarter car whose tie rod hangs from the chassis by a
universal joint and meets the upright at a ball joint, every joint at 0 in
the design pose.  The tie rod's cut ball joint becomes a distance link,
whose rows also hold for the mirror (the rod turned by π about the
U-joint's first axis); before the fix the triangular sequence started the
U-joint's first angle at π with no error.

The upper arm and upright block is solved by Newton without a
``newton_blocks`` entry: its Bézout number is above
``triangular.MAX_GROEBNER_BEZOUT`` (tests/test_block_bounds.py).
"""
import math
import shutil

import numpy as np
import pytest
from fmpy import extract, read_model_description
from fmpy.fmi2 import FMU2Slave

from fmigen.build.derived import dae_of
from fmigen.model import ModelError
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import build_fmu, prepare_mechanism
from fmigen.kinematics import triangular

from tests.corpus.double_wishbone import DESIGN_POSE, build


def _double_wishbone(**kw):
    return build(**kw)


def _start(system):
    """(mechanism, dae, independent names, the start the FMU would carry)
    without generating C: the assembly is done by then."""
    m = prepare_mechanism(system)
    # the DAE a build of the same mechanism derives (derived.dae_of: from
    # the DAE cache when the suite derived it before, as the FMU test here
    # does the design pose's)
    dae = dae_of(m)
    part = choose_partition(dae)
    tri = triangular.triangularize(dae, part, cover=False)
    return m, dae, [dae.names[i] for i in part.independent], tri.start


def _angle_gap(a, b):
    return abs(math.remainder(a - b, 2 * math.pi))


def test_double_wishbone_fmu_starts_in_the_design_pose(tmp_path):
    fmu, compiled = build_fmu(_double_wishbone(), tmp_path / "dw.fmu", solver="rk4", step=1e-3)
    md = read_model_description(str(fmu))
    unzip = extract(str(fmu), unzipdir=str(tmp_path / "unzip"))
    s = FMU2Slave(guid=md.guid, unzipDirectory=unzip, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="dw")
    s.instantiate()
    try:
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()
        vr = {v.name: v.valueReference for v in md.modelVariables}
        names = list(DESIGN_POSE)
        got = dict(zip(names, s.getReal([vr[n] for n in names])))
        residual = s.getReal([vr["constraint_residual"]])[0]
    finally:
        s.terminate()
        s.freeInstance()
        shutil.rmtree(unzip, ignore_errors=True)
    # the start vector model.c carries, and what the FMU holds after initialization
    for n, v in DESIGN_POSE.items():
        assert _angle_gap(compiled.start[n], v) <= 1e-9, (n, compiled.start[n])
        assert _angle_gap(got[n], v) <= 1e-9, (n, got[n])
    assert residual <= 1e-12
    # and every marker where the description puts it (poses composed from
    # the joints, not from the derived model)
    from fmigen.frontends.start_pose import check_start_pose
    m, dae = compiled.mechanism, compiled.dae
    dr, dR = check_start_pose(m, dae, compiled.independent_names, got)
    assert dr <= 1e-9 and dR <= 1e-9


def test_a_start_on_the_mirror_branch_is_refused():
    """The mirror start the issue saw (the U-joint's first angle at π, the
    rest as described) closes the derived model's loops — its distance-link
    rows hold there — so only the pose check can refuse it."""
    from fmigen.frontends.start_pose import StartPoseError, check_start_pose
    m, dae, indep, start = _start(_double_wishbone())
    mirror = {**start, "tie_u_a": start["tie_u_a"] + math.pi}
    q = np.array([mirror[n] for n in dae.names])
    assert np.abs(dae.numeric.Phi(0.0, q)).max() <= 1e-14
    with pytest.raises(StartPoseError, match=r"joint tie_u: tie_u_a start 0 rad assembled at 3\.14159 "
                                             r"\(the mirror branch\).*Give branch_hint or fix the starts"):
        check_start_pose(m, dae, indep, mirror)


@pytest.mark.parametrize("fore_aft", [(-1, 0, 0), (1, 0, 0)])
def test_design_pose_start_either_axis_direction(fore_aft):
    """The start the FMU would carry (before C generation) is the design
    pose with the fore-aft axes written either way."""
    m, dae, indep, start = _start(_double_wishbone(fore_aft=fore_aft))
    for n, v in DESIGN_POSE.items():
        assert _angle_gap(start[n], v) <= 1e-9, (n, start[n])
    from fmigen.frontends.start_pose import check_start_pose
    dr, dR = check_start_pose(m, dae, indep, start)
    assert dr <= 1e-9 and dR <= 1e-9


def test_inexact_guesses_assemble_to_the_nearest_closure():
    """Guesses off the design pose by a few degrees (not closed) on the
    described branch: the start is the closed design pose, and accepted."""
    from fmigen.frontends.start_pose import check_start_pose
    s = _double_wishbone()
    for name, off in (("upper", 0.05), ("ball_l_x", -0.04), ("tie_u_a", 0.1), ("tie_u_b", -0.05)):
        s.coordinate_by_name(name).start = off
    m, dae, indep, start = _start(s)
    for n, v in DESIGN_POSE.items():
        assert _angle_gap(start[n], v) <= 1e-9, (n, start[n])
    dr, dR = check_start_pose(m, dae, indep, start)
    assert dr <= 1e-9 and dR <= 1e-9


def test_a_mirrored_description_is_an_error():
    with pytest.raises(ModelError, match=r"it is the mirror assembly, the link turned by π about the first "
                                         r"axis of 'tie_u'"):
        prepare_mechanism(_double_wishbone(mirror_tie_rod=True))


@pytest.mark.parametrize("name,sign", [("fourbar_joints", +1), ("fourbar_joints", -1),
                                       ("slider_crank_joints", +1), ("slider_crank_joints", -1)])
def test_branch_hints_choose_the_start(name, sign):
    """A shipped mechanism with a branch hint starts on the hinted branch,
    and flipping the hint's sign moves the start to the other assembly."""
    import importlib
    from fmigen.frontends.start_pose import check_start_pose
    system = importlib.import_module(f"mechanisms.{name}").build()
    hint = system.branch_hints[0]
    hint.sign = sign
    m, dae, indep, start = _start(system)
    assert check_start_pose(m, dae, indep, start)[0] <= 1e-9
    for n, v in m.described_start.items():
        assert _angle_gap(start[n], v) <= 1e-9
    # the hint holds at the start: (marker − relative_to)·direction has its sign
    from fmigen.frontends.start_pose import _poses, _markers
    from fmigen.frontends.joint_tree import spanning_tree
    import sympy as sp
    params = {p.symbol: sp.Float(float(p.value), 30) for p in m.parameters}
    tree, _ = spanning_tree(system)
    where = {label: r for label, _, r in _markers(system, _poses(system, tree, start, params), params)}
    side = np.dot(where[hint.marker.label] - where[hint.relative_to.label], np.array(hint.direction, dtype=float))
    assert sign * side > 1e-3
