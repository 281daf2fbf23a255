"""A fixed sample of the corpus runner (``scripts/corpus.py``) in the suite.

The whole corpus and the fuzzer run as the script (``docs/corpus.md``);
here, a few cheap cases through the runner's own ``run_case`` and start
check, asserting the outcomes and numbers it reports:

- the pendulum (an open chain, no loop): passed against IDA, the Cartesian
  reference and the MuJoCo peer, its start exactly the described angle;
- a fuzz case whose four-bar cannot close at its crank angle: refused with
  the cause named, no traceback;
- the start check itself, the corpus's guard against a silent wrong start:
  the four-bar's assembled start passes it, the mirror assembly (which
  closes every loop just as well) fails it on the branch hint and the pose;
- the fuzzer's cases are a function of the seed alone;
- IDA failing part way keeps its solution up to there, and the runner
  records it as a failed reference (``ida failed``), not a traceback;
- McPherson's workspace sweep stops at the folds of its lower arm's angle
  (against pseudo-arclength continuation) instead of stepping over one
  onto another assembly, and ``fmigen check`` passes on it.
"""
import importlib.util
import math
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def corpus_script():
    # imported under another name: ``corpus`` is the package tests/corpus
    spec = importlib.util.spec_from_file_location("corpus_script", ROOT / "scripts" / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._import_corpus()
    return module


def test_pendulum_passes_every_reference(corpus_script):
    r = corpus_script.run_case({"name": "pendulum"}, 1.0)
    assert r["outcome"] == "passed", r
    # validate's defaults: 1e-6 in q, 1e-5 in v against each reference
    for ref in ("ida", "cartesian"):
        assert r["refs"][ref]["max_abs_error"] < 1e-6, (ref, r["refs"][ref])
        assert r["refs"][ref]["max_abs_velocity_error"] < 1e-5, (ref, r["refs"][ref])
    pytest.importorskip("mujoco")
    assert r["refs"]["mujoco"]["passed"] and r["refs"]["mujoco"]["max_abs_error"] < 1e-6, r["refs"]["mujoco"]
    # no constraint: nothing to close; the start is the described θ0 itself
    assert r["start_closure"] == 0.0 and r["start_pose_deviation"] < 1e-12
    assert r["energy_drift"] < 1e-6 and r["t_end"] == pytest.approx(1.0)


def test_a_fuzz_four_bar_that_cannot_close_is_refused_with_the_cause(corpus_script):
    # seed 1, fourbar only, case 2: |A − O4| = 1.363 < rocker − coupler = 1.791
    # at θ = 5.664, so no assembly exists at the start
    case = corpus_script.fuzz_cases(3, 1, ("fourbar",))[2]
    p = case["params"]
    d = math.dist((p["crank"] * math.cos(p["theta"]), p["crank"] * math.sin(p["theta"])), (p["ground"], 0))
    assert d < abs(p["rocker"] - p["coupler"])
    assert corpus_script.assembles(case) is False   # the runner's oracle for refusals agrees
    r = corpus_script.run_case(case, 1.0)
    assert r["outcome"] == "refused" and r["assembles"] is False, r
    assert r["message"].startswith("ModelError:") and "cannot be closed" in r["message"]
    assert corpus_script.message_class(r) == "no assembly"
    # the least |Φ| Gauss–Newton reaches is B's gap: the rocker's circle
    # misses the coupler's by rocker − coupler − |A − O4| (its max-norm is
    # between gap/√2 and gap)
    gap = abs(p["rocker"] - p["coupler"]) - d
    res = float(re.search(r"closure residual ([0-9.e+-]+)", r["message"]).group(1))
    assert gap / math.sqrt(2) - 1e-3 <= res <= gap + 1e-3, (res, gap)


def _start_row(system):
    from fmigen.build.pipeline import prepare_mechanism
    mech = prepare_mechanism(system, use_cache=False)
    return {c.name: float(c.start) for c in mech.coordinates}


def test_the_start_check_tells_the_mirror_assembly_from_the_described_one(corpus_script):
    from corpus._families import four_bar

    def system(open_):
        return four_bar("fb", "crank-rocker", ground=7.0, crank=2.5, coupler=6.0, rocker=5.0,
                        theta=math.pi / 2, open_=open_)
    described = _start_row(system(True))
    problems, numbers = corpus_script.start_check(system(True), described)
    assert problems == [] and numbers["start_closure"] < 1e-12
    # the drawn pose's lengths are rounded to 4 decimals: the assembly is
    # within that of the drawing
    assert numbers["start_pose_deviation"] < 1e-3
    mirror = _start_row(system(False))
    assert abs(mirror["theta"] - described["theta"]) < 1e-15   # same crank angle, other branch
    problems, numbers = corpus_script.start_check(system(True), mirror)
    assert numbers["start_closure"] < 1e-12            # it closes: residuals cannot see it
    assert any("branch hint violated" in m for m in problems), problems
    assert any("not the described pose" in m for m in problems), problems
    assert numbers["start_pose_deviation"] > 1.0


def test_fuzz_cases_depend_on_the_seed_alone(corpus_script):
    a = corpus_script.fuzz_cases(6, 7)
    assert a == corpus_script.fuzz_cases(6, 7)
    assert a != corpus_script.fuzz_cases(6, 8)
    fams = corpus_script.FAMILIES
    assert [c["family"] for c in a] == [fams[k % len(fams)] for k in range(6)]


def test_message_classes_name_the_cause(corpus_script):
    """The report's classes, on messages fmigen gives (from the fuzz runs and
    test_joint_model's toggle four-bar)."""
    def cls(outcome, message, **kw):
        return corpus_script.message_class({"outcome": outcome, "message": message, **kw})
    assert cls("refused", "ModelError: 'f': the loops cannot be closed near the start guesses (closure residual "
                          "0.42 after Gauss–Newton from the starts); check the geometry") == "no assembly"
    assert cls("refused", "ModelError: 'toggle': the start is a singular configuration: the closure equations "
                          "have rank 1 there and 2 at the assemblies next to it") == "singular start"
    assert cls("refused", "ModelError: redundant or inconsistent constraint 'c' in 'm': its Jacobian row is "
                          "zero at the start configuration") == "inconsistent or redundant constraint"
    assert cls("failed", "ida: max |Δq| 1.1e-07 (B), max |Δv| 4.5e-05 (B); energy drift 8.6e-03; the FMU "
                         "stopped at t = 0.61: [DISCARD] singular configuration at t=0.6175", check="validation") \
        == "validation: energy, ida, then the FMU stopped at a singular configuration"


def test_a_limit_stop_is_classed_so_and_placed_on_the_assembly_boundary(corpus_script):
    """A run-time stop at a limit position: its message has ';' of its own,
    which must not become classes, and the stop configuration it names is
    measured against the families' closed form.  fuzz1_016_fourbar (ground
    0.836... below) stopped at theta = -1.7130774; its crank's limit, where
    coupler and rocker stretch out (|A − O4| = coupler + rocker), is by the
    law of cosines at cos θ* = (crank² + ground² − (coupler + rocker)²) /
    (2 crank ground), and the closed form's margin there is 0."""
    case = corpus_script.fuzz_cases(17, 1)[16]
    assert case["name"] == "fuzz1_016_fourbar"
    p = case["params"]
    msg = ("ida: max |Δq| 9.128e-06 (A), max |Δv| 1.079e-02 (A); energy drift 2.441e-03; the FMU stopped at "
           "t = 0.83: [DISCARD] limit position at t=0.83 (theta=-1.7130774): the Jacobian of the constraints with "
           "respect to the dependent coordinates is turning singular (in two steps max|v_i| fell 2.9-fold while "
           "max|v_d|/max|v_i| rose 2.9-fold, to 143); the mechanism passes onto another assembly branch, which "
           "these independent coordinates do not parametrize: declare switch_independent to carry the motion "
           "through")
    r = {"outcome": "failed", "check": "validation", "family": "fourbar", "params": p, "message": msg}
    assert corpus_script.message_class(r) == "validation: energy, ida, then the FMU stopped at a limit position"
    cos_star = (p["crank"] ** 2 + p["ground"] ** 2 - (p["coupler"] + p["rocker"]) ** 2) / (2 * p["crank"] * p["ground"])
    star = -math.acos(cos_star)
    at_star = dict(r, message=msg.replace("theta=-1.7130774", f"theta={star!r}"))
    assert abs(corpus_script.stop_margin(at_star)) < 1e-12
    # the recorded stop is short of the limit (positive margin), by less than a crank step
    assert 0 < corpus_script.stop_margin(r) < 1e-3 and abs(star - (-1.7130774)) < 1e-3
    # a message naming no singular stop gives none
    assert corpus_script.stop_margin(dict(r, message=f"{msg[:40]}")) is None
    lo, x, hi = corpus_script._assembly_interval("fourbar", p)
    assert 0.1 < min(x - lo, hi - x) / (hi - lo) < 0.2    # 0.124: the start is well inside


def test_ida_failing_part_way_keeps_its_solution_up_to_there():
    """IDA can fail part way, e.g. where the full constraint Jacobian turns
    singular (three_upu, docs/corpus.md).  Its error then carries the
    solution at the output times it reached, the same numbers a solve that
    does not fail gives there, and names the time IDA got to.  The failure
    is IDA's own, forced by a step budget (per output interval) that the
    first three 10 ms intervals of the four-bar stay within and the last,
    0.97 s long, does not."""
    from corpus.fourbar_crank_rocker import build
    from fmigen.build.derived import dae_of
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.derive.partition import choose_partition
    from fmigen.verify.reference import ReferenceSolverError, assemble_newton, solve_reference
    mech = prepare_mechanism(build())
    dae = dae_of(mech)
    independent = [dae.names[i] for i in choose_partition(dae).independent]
    q0 = assemble_newton(dae, dae.start_guess(), independent)
    v0 = dae.start_velocity_guess()
    times = np.array([0.0, 0.01, 0.02, 0.03, 1.0])
    whole = solve_reference(dae, q0, v0, times, independent)
    with pytest.raises(ReferenceSolverError) as failed:
        solve_reference(dae, q0, v0, times, independent, max_num_steps=200)
    part = failed.value.partial
    assert list(part.t) == [0.0, 0.01, 0.02, 0.03]
    assert np.array_equal(part.q, whole.q[:4]) and np.array_equal(part.v, whole.v[:4])
    at = float(re.match(r"IDA failed at t = ([0-9.e+-]+): ", str(failed.value)).group(1))
    assert 0.03 < at < 1.0


def test_a_reference_failing_part_way_is_a_failed_validation_not_a_traceback(corpus_script, monkeypatch):
    """three_upu's IDA failed at its singular configuration, 38 ms before
    the FMU's own stop there (docs/corpus.md), and the runner recorded a
    traceback, the class for a defect of fmigen.  A reference that fails
    part way is a failed reference that says where, compared up to there,
    beside the other references.  The failure here is IDA's own on the
    pendulum, forced by a budget of one step, so that IDA stops within its
    first output interval: before, the case was a traceback."""
    import functools

    import fmigen.verify.validate as validate_module
    monkeypatch.setattr(validate_module, "solve_reference",
                        functools.partial(validate_module.solve_reference, max_num_steps=1))
    r = corpus_script.run_case({"name": "pendulum"}, 1.0)
    assert r["outcome"] == "failed" and r["check"] == "validation", r
    assert re.match(r"ida failed: IDA failed at t = [0-9.e+-]+: .*\(the FMU ran to t = 1: compared up to t = 0\)",
                    r["message"]), r["message"]
    assert corpus_script.message_class(r) == "validation: ida failed"
    assert r["refs"]["ida"]["passed"] is False and "error" in r["refs"]["ida"]
    # its one sample, the start, is the FMU's own start
    assert r["refs"]["ida"]["max_abs_error"] == 0.0
    # the Cartesian reference still ran, all of the FMU's run, and passed
    assert r["refs"]["cartesian"]["passed"] and r["t_end"] == pytest.approx(1.0)


def test_mcpherson_tie_rod_stays_on_its_branch_from_rest(tmp_path):
    """The McPherson corpus case's tie rod (a universal joint at the rack, a
    ball at the steering arm) starts at rest at tie_a = 0.  The first solve
    of its block picks s_tie_a from s² = s0² (roots ±6e-5, both within the
    branch tolerance of the predicted 0) and c_tie_a from a linear step
    that follows the root's sign: +1, or −1 for the mirror assembly, half a
    turn away, which closes every loop just as well.  Before the linear
    step's value was checked against its prediction too, the Python
    runtime at its 1 ms step took the mirror (tie_a −3.14153 at t = 1 ms,
    the motion 3.9e-4 off; the C runtime did the same at 0.9 ms) and went
    on with OK.  Against the same FMU at a step 8 times smaller (RK4's
    error falls 4096-fold): the tie rod's angle stays continuous from 0
    and the motion agrees."""
    from fmpy import simulate_fmu
    from corpus.mcpherson import build
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    from fmigen.pyfmu import pyruntime
    path = pyruntime.package(compile_model(prepare_mechanism(build())), tmp_path / "mcpherson_py.fmu")
    out = ["lower", "tie_a", "der(lower)"]
    run = {h: simulate_fmu(str(path), stop_time=0.01, output_interval=1e-3, output=out,
                           start_values={"internal_step": h}) for h in (1e-3, 1.25e-4)}
    coarse, fine = run[1e-3], run[1.25e-4]
    assert coarse["time"][-1] == pytest.approx(0.01) and fine["time"][-1] == pytest.approx(0.01)
    # continuous from 0: the mirror would read ±π
    assert abs(coarse["tie_a"]).max() < 0.01 and abs(coarse["tie_a"][1] - fine["tie_a"][1]) < 1e-8
    assert abs(coarse["lower"] - fine["lower"]).max() < 1e-8
    assert abs(coarse["der(lower)"] - fine["der(lower)"]).max() < 1e-6


def _fold_of_lower(num, q, direction, ds=0.01):
    """Where the lower arm's angle turns on the solution curve Φ(q) = 0
    through q, followed by pseudo-arclength continuation (no partition,
    nothing of workspace.sweep) in the ``direction`` lower first moves:
    each step ds along the null vector of Φ_q, corrected by Newton on Φ
    and the arclength condition; where d(lower)/ds changes sign, again
    from the step before with ds / 10, down to 1e-6.  The configuration
    there, with the smallest singular value of the full Φ_q."""
    def tangent(x, prev):
        t = np.linalg.svd(num.Phi_q(0.0, x))[2][-1]
        return -t if t @ prev < 0 else t
    t = tangent(q, np.eye(len(q))[0] * direction)
    while ds >= 1e-6:
        for _ in range(2000):
            x = q + ds * t
            for _ in range(20):
                dx = np.linalg.solve(np.vstack([num.Phi_q(0.0, x), t]),
                                     np.append(num.Phi(0.0, x), t @ (x - q) - ds))
                x -= dx
                if np.abs(dx).max() < 1e-14:
                    break
            t_next = tangent(x, t)
            if t_next[0] * t[0] < 0:
                break
            q, t = x, t_next
        ds /= 10
    return q, np.linalg.svd(num.Phi_q(0.0, q), compute_uv=False)[-1]


def test_mcpherson_sweep_stops_at_the_folds_of_its_lower_arm():
    """The McPherson corner's lower arm angle has a largest and a smallest
    value on the start's assembly (a fold: Φ_d, the constraint Jacobian of
    the other coordinates, turns singular while the full Φ_q keeps its
    rank).  The workspace sweep (Newton continuation in lower) must stop
    there as at a physical singularity.  Before it checked that each step
    resolved the curve (``workspace._resolved``), its step from 0.66 mrad
    short of the smallest overshot the fold and Newton converged to another
    assembly (the strut 0.67 m further out), on which the sweep ran on to
    lower = −2.51; ``fmigen check`` then failed the generated kinematics,
    which rightly found nothing continuing the previous solve there.
    Against the folds from pseudo-arclength continuation, which needs no
    partition: each path ends within one sweep step short of its fold, and
    ``check`` passes with the two folds as its physical singularities."""
    from corpus.mcpherson import build
    from fmigen.build.derived import dae_of
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.derive.partition import choose_partition
    from fmigen.derive.workspace import sweep
    from fmigen.verify.check import check
    mech = prepare_mechanism(build())
    dae = dae_of(mech)
    part = choose_partition(dae)
    assert [dae.names[i] for i in part.independent] == ["lower"]
    start = {c.name: c.start for c in mech.coordinates}
    sw = sweep(dae, part, start)
    q0 = np.array([start[n] for n in dae.names])
    step = 2 * np.pi / 720
    ends = {p["path"]: p for p in sw.physical}
    for path, direction in ((0, 1.0), (1, -1.0)):
        fold, smin = _fold_of_lower(dae.numeric, q0.copy(), direction)
        assert smin > 0.02              # a fold of the partition, not a singular Φ_q
        end = sw.points[sw.paths[path][-1]][0]
        assert ends[path]["kind"] == "no assembly beyond"
        assert 0 < direction * (fold[0] - end) < step, (path, fold[0], end)
    # the folds: lower = 1.20628 and −1.10894
    assert sw.points[sw.paths[0][-1]][0] == pytest.approx(1.2063, abs=step)
    assert sw.points[sw.paths[1][-1]][0] == pytest.approx(-1.1089, abs=step)
    r = check(build())
    assert r["passed"], r["branch_failures"]
    assert sorted(p["at"]["lower"] for p in r["physical_singularities"]) == \
        [sw.points[sw.paths[1][-1]][0], sw.points[sw.paths[0][-1]][0]]
