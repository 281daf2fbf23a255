"""fmigen bench: the kinematics formulations in the native C harness
(paper 000's Stewart experiment: explicit Euler, h = 1 ms, 3 s).

Correctness only, no timing assertions: the timings of a shared machine are
reported (docs/benchmarks.md), not tested."""
import contextlib
import io
import json

import pytest

from fmigen.cli import main as cli_main

TOLERANCES = (1e-6,)
AUGMENTED = ("baumgarte", "penalty", "spring")
#: the counts are of the model's AVX copy, which a binary built here runs
#: (docs/benchmarks.md), not the suite's setting (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("use_avx_copy")


@pytest.fixture(scope="module")
def stewart_bench():
    out = io.StringIO()
    # (a module's fixture is set up before a test's use_avx_copy)
    with contextlib.redirect_stdout(out), pytest.MonkeyPatch.context() as mp:
        mp.setenv("FMIGEN_AVX", "1")
        assert cli_main(["bench", "stewart", "--json", "--repeats", "1",
                         "--tolerances", ",".join(f"{t:g}" for t in TOLERANCES)]) == 0
    return json.loads(out.getvalue())


def test_json_has_the_documented_shape(stewart_bench):
    r = stewart_bench
    assert r["mechanism"] == "stewart"
    assert (r["stop_time"], r["step"], r["solver"]) == (3.0, 1e-3, "euler")
    labels = [(row["kinematics"], row["tolerance"]) for row in r["rows"]]
    assert labels == [("groebner", None)] + [(k, t) for k in ("newton", "newton-loop") for t in TOLERANCES] \
        + [("baumgarte", None), ("penalty", None), ("spring", None)]
    for row in r["rows"]:
        for key in ("ms_per_simulated_s", "max_step_us", "instructions_per_step", "peak_constraint_violation"):
            assert isinstance(row[key], float), (key, row)
        assert row["ms_per_simulated_s"] > 0 and row["max_step_us"] > 0
        assert row["max_step_us"] >= row["median_step_us"]
        # callgrind counts the integration loop only: thousands of
        # instructions per step (measured 11 871 for Gröbner), never zero
        assert 1e3 < row["instructions_per_step"] < 1e6
        # the kinematics are a part of the step (fmigen_kinematics inclusive);
        # the augmented formulations integrate q_d and solve no kinematics
        if row["kinematics"] in AUGMENTED:
            assert row["kinematics_instructions_per_step"] is None
        else:
            assert 0 < row["kinematics_instructions_per_step"] < row["instructions_per_step"]
        assert len(row["final_q"]) == 24


def test_groebner_is_exact_and_newton_within_its_tolerance(stewart_bench):
    rows = {(r["kinematics"], r["tolerance"]): r for r in stewart_bench["rows"]}
    assert rows["groebner", None]["peak_constraint_violation"] <= 1e-14          # measured 8.6e-16 (round-off of q ~ 2)
    for (k, tol), row in rows.items():
        if tol is not None:
            assert row["peak_constraint_violation"] <= tol, row   # measured 2.4e-14 at 1e-3 and 1e-6
    # constraint stabilization drifts: paper 000 reports 9.5e-6 (Baumgarte,
    # alpha 1, beta 18) and 1.3e-5 (penalty); measured here 3.5e-6 and 2.9e-5
    assert 1e-7 < rows["baumgarte", None]["peak_constraint_violation"] <= 1e-5
    assert 1e-6 < rows["penalty", None]["peak_constraint_violation"] <= 5e-5
    # virtual springs, k = 5e4, b = 60: measured 1.5e-6 (paper 003 reports
    # constraint errors "around 1e-4" for its platform at k = 5e4, b = 50)
    assert 1e-7 < rows["spring", None]["peak_constraint_violation"] <= 4e-6


def test_groebner_is_the_cheapest_step_at_its_accuracy(stewart_bench):
    """The claim of the project, in deterministic callgrind counts: every
    Newton row (iterative kinematics, 10³× or more less accurate) needs more
    instructions per step than the triangular sequence.  Measured 11 871
    (Gröbner) against 39 615 (newton, 1e-6) and 19 260 (newton-loop, 1e-6);
    Newton starts from the solution predicted from the previous step, so at
    1 ms one iteration meets either tolerance (67 127 and 26 288 when it
    started from the previous solution unpredicted)."""
    rows = {(r["kinematics"], r["tolerance"]): r for r in stewart_bench["rows"]}
    g = rows["groebner", None]
    for (k, tol), row in rows.items():
        if tol is not None:
            assert row["instructions_per_step"] > 1.5 * g["instructions_per_step"], (k, tol)
            assert row["kinematics_instructions_per_step"] > 3 * g["kinematics_instructions_per_step"], (k, tol)


def test_fmu_step_solves_the_kinematics_once(stewart_bench):
    """The FMU's doStep at a communication interval of h commits its end
    state (kinematics, velocities) and the next step's first stage reuses
    that solve: one kinematics per step, as in the harness's loop, where it
    used to be two (measured 2 658 per step in the FMU, 2 656 in the
    harness, the block checks included; 5 479 before the memo, with the
    atan2 of every angle in the second).  The rest of the FMU step is the
    commit's first half of the right-hand side (v_d and everything not
    reading the inputs, which the next step's first stage then reuses:
    first-same-as-last), the angles' atan2, the residual and outputs."""
    for row in stewart_bench["rows"]:
        if row["kinematics"] in AUGMENTED:
            assert row["fmu_kinematics_instructions_per_step"] is None
            continue
        ratio = row["fmu_kinematics_instructions_per_step"] / row["kinematics_instructions_per_step"]
        assert 0.99 < ratio < 1.05, (row["kinematics"], row["tolerance"], ratio)
        assert row["instructions_per_step"] < row["fmu_instructions_per_step"] < 2 * row["instructions_per_step"]


def test_harness_is_the_fmu_core_bit_for_bit(stewart_bench):
    # the harness's Euler loop over fmigen_core_rhs against one
    # fmigen_core_step(3 s), the call the FMU's doStep makes -- for the
    # augmented formulations too (fmigen build --kinematics baumgarte|...)
    for row in stewart_bench["rows"]:
        assert row["core_step_max_diff"] == 0.0, row


def test_every_formulation_ends_in_the_same_state(stewart_bench):
    rows = stewart_bench["rows"]
    ref = rows[0]["final_q"]
    assert abs(ref["psi"]) > 1.0          # the platform yaws (test_stewart)
    for row in rows[1:]:
        diff = max(abs(row["final_q"][k] - ref[k]) for k in ref)
        if row["kinematics"] in AUGMENTED:
            # Euler on all 24 coordinates of the stabilized system is another
            # discretization than Euler on the 6 embedded ODEs; both are
            # first order with ~8e-4 error on psi at 1 ms (test_stewart):
            # measured 9.6e-4 (Baumgarte and spring) and 8.9e-4 (penalty)
            assert diff <= 2e-3, (row["kinematics"], diff)
        else:
            # a Newton tolerance of 1e-6 on the step leaves a residual of about
            # its square: measured 1.4e-15
            assert diff <= 1e-12, (row["kinematics"], row["tolerance"], diff)


def test_newton_formulations_share_the_pipeline():
    from fmigen.build.derived import dae_of
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.triangular import triangularize
    dae = dae_of(load_mechanism("stewart"))      # the DAE a build derives, from the DAE cache
    part = choose_partition(dae)
    groebner = triangularize(dae, part)
    single = triangularize(dae, part, kinematics="newton", newton_tol=1e-8)
    loop = triangularize(dae, part, kinematics="newton-loop")
    assert [solved_block.method for solved_block in groebner.blocks] == ["groebner"] * 6
    assert len(single.blocks) == 1 and single.blocks[0].method == "newton"
    assert sorted(single.blocks[0].block.unknowns) == sorted(part.dependent)
    assert sorted(single.blocks[0].block.equations) == list(range(18))
    assert single.blocks[0].tol == 1e-8
    assert [solved_block.method for solved_block in loop.blocks] == ["newton"] * 6 and loop.blocks[0].tol == 1e-10
    # the same assembled start by every route
    for tri in (single, loop):
        assert max(abs(tri.start[k] - groebner.start[k]) for k in tri.start) <= 1e-12


def test_bad_formulation_is_a_clear_error(capsys):
    assert cli_main(["bench", "stewart", "--kinematics", "lagrange"]) == 2
    assert "unknown kinematics formulation 'lagrange'" in capsys.readouterr().err


def test_a_kinematic_mechanism_is_a_clear_error_not_a_singularity(capsys):
    # the landing gear's kinematic FMU has no masses: the harness used to
    # stop at step 0 "singular configuration ... B^T M B is not positive definite"
    assert cli_main(["bench", "landing_gear", "--kinematics", "groebner", "--repeats", "1"]) == 2
    err = capsys.readouterr().err
    assert "'landing_gear' is a kinematic mechanism" in err and "singular" not in err


def test_a_motion_that_reaches_a_singularity_names_it_and_the_way_out(capsys):
    # the dynamic landing gear collapses under gravity to the end of its
    # stroke at t = 0.847 s, where its kinematics has no solution: a limit
    # position of its one independent coordinate, seen a step before (the
    # harness runs the FMU's test, fmigen_core_limit), reported with the
    # step and the state, and what to do to bench the motion before it
    assert cli_main(["bench", "landing_gear_dynamic", "--kinematics", "groebner", "--repeats", "1",
                     "--no-callgrind", "--stop-time", "1.0"]) == 2
    err = capsys.readouterr().err
    assert "step 846: limit position at t=0.846 (p_BC=" in err and "--stop-time" in err


def test_five_link_kinematic_run_matches_an_independent_solve():
    """Paper 000's kinematic simulation (Table 3): z driven through
    0.08 sin(2πt/3); the harness's last driven state against scipy's
    least-squares solve of Φ = 0 and Φ_q v = −Φ_t at the same z, ż."""
    import numpy as np
    from scipy.optimize import least_squares

    from fmigen.tools.bench import bench
    from fmigen.build.derived import dae_of
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism

    r = bench("five_link", kinematics=["groebner"], stop_time=1.0, repeats=1, callgrind=False)
    k = r["rows"][0]["kinematic_run"]
    assert k["drive"] == {"period": 3.0, "z": 0.08}
    assert 0 < k["ms_per_simulated_s"] and k["peak_constraint_violation"] <= 1e-14   # measured 2.2e-16
    mech = load_mechanism("five_link")
    dae = dae_of(mech)      # the DAE the bench derived (derived.dae_of), read from the DAE cache
    part = choose_partition(dae)
    names = dae.names
    t_last = 0.999                                   # the last of the 1000 driven steps
    w = 2 * np.pi / 3.0
    z, zdot = 0.08 * np.sin(w * t_last), 0.08 * w * np.cos(w * t_last)
    got_q = np.array([k["final_q"][n] for n in names])
    got_v = np.array([k["final_v"][n] for n in names])
    iz = names.index("z")
    assert got_q[iz] == pytest.approx(z, abs=1e-15) and got_v[iz] == pytest.approx(zdot, abs=1e-15)
    # independent reference: from the z = 0 start guesses, not the harness's state
    q0 = np.array([c.start for c in mech.coordinates], dtype=float)
    dep = part.dependent

    def residual(qd):
        q = q0.copy()
        q[iz] = z
        q[dep] = qd
        return dae.numeric.Phi(t_last, q)

    sol = least_squares(residual, q0[dep], xtol=1e-15, ftol=1e-15, gtol=1e-15)
    q_ref = q0.copy()
    q_ref[iz], q_ref[dep] = z, sol.x
    J = dae.numeric.Phi_q(t_last, q_ref)
    v_ref = np.zeros(dae.n)
    v_ref[iz] = zdot
    v_ref[dep] = np.linalg.solve(J[:, dep], -(J[:, [iz]] @ [zdot]) - dae.numeric.Phi_t(t_last, q_ref))
    print("five-link kinematic run vs least squares: q", np.abs(got_q - q_ref).max(),
          "v", np.abs(got_v - v_ref).max())
    # measured 5.6e-16 (q) and 1.1e-16 (v) at z = 0.069 m, ż = −0.084 m/s
    assert np.abs(got_q - q_ref).max() <= 1e-10
    assert np.abs(got_v - v_ref).max() <= 1e-9


def test_operation_count_and_newton_iterations():
    """The operation-count and Newton-iteration columns, and the finding
    behind the identical 1e-3 / 1e-6 Newton rows: ``-DFMIGEN_NEWTON_TOL``
    reaches the compile (at 1e-12 the Newton per leg takes a second
    iteration almost every solve), but the start predicted from the previous
    step (q_d + v_d·h) is within ~2e-7 of the solution, so at 1e-3 and 1e-6
    one iteration meets the tolerance and the rows are alike."""
    from fmigen.tools.bench import bench
    r = bench("stewart", kinematics=["groebner", "newton-loop"], tolerances=[1e-6, 1e-12], stop_time=0.3,
              repeats=1)
    rows = {(row["kinematics"], row["tolerance"]): row for row in r["rows"]}
    g, n6, n12 = rows["groebner", None], rows["newton-loop", 1e-6], rows["newton-loop", 1e-12]
    assert g["newton_iterations"] is None           # no fallback, no polish at this start
    assert n6["newton_iterations"] == 1.0
    assert 1.5 < n12["newton_iterations"] <= 3.0
    # textbook Newton: a fresh Jacobian every step (no chord steps)
    assert n6["newton_factorizations"] == n6["newton_iterations"]
    assert n12["newton_factorizations"] == n12["newton_iterations"]
    assert n12["instructions_per_step"] > n6["instructions_per_step"]
    for row in (g, n6, n12):
        ops = row["operations_per_step"]
        assert ops["flops"] == ops["add"] + ops["mul"] + ops["div"] + ops["sqrt"] + 2 * ops["fma"]
        # each step does arithmetic, and an instruction is at most four
        # operations (packed in 256 bits: the lanes of codegen_lanes and
        # codegen_slp; gcc contracts nothing to FMA here)
        assert ops["fma"] == 0
        assert 0 < ops["flops"] < 4 * row["instructions_per_step"]
        assert ops["mul"] > 0 and ops["add"] > 0
    # the triangular sequence's square roots (two per leg, 12 a step but at the
    # first) are its own; no formulation calls libm's sin, cos, sincos or
    # atan2 on the step (fmigen's own, fmigen_numeric.h: the same bits on
    # every platform), the Newton legs' angles included
    assert g["operations_per_step"]["sqrt"] > 11
    for row in (g, n6, n12):
        calls = row["operations_per_step"]["libm_calls"]
        assert not {"sin", "cos", "sincos", "atan2"} & {k for k, v in calls.items() if v > 0}, calls


def test_worst_case_counts_every_dostep_and_they_add_up_to_one_count_of_the_loop(tmp_path):
    """`fmigen bench MECH --worst-case` counts each doStep in its own
    callgrind dump.  Reference: one callgrind count of the FMU's stepping
    loop (run_fmu_steps, explicit Euler, the bench's `fmu` row) over the
    same motion: the per-step counts of the motion must average to it (the
    loop's own few instructions a step apart).  The four-bar's worst step
    is within the 3x-median target.  Before: no --worst-case."""
    import numpy as np
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.tools import bench
    w = bench.worst_case("fourbar", stop_time=0.2, solver="euler", keep=tmp_path / "keep")
    assert w["motion_steps"] == 200 and w["steps"] == 200 + w["workspace_samples"] - w["unset"]
    assert w["failed"] == 0 and w["workspace_samples"] > 1000, w
    assert w["max_over_median"] <= 3.0, w
    assert w["caps"] == {"newton": 28, "polish": 12, "poly_newton": 8, "aberth": 500}, w["caps"]
    # the reference: the plain harness (no hooks), the FMU loop counted whole
    mech = prepare_mechanism("fourbar", lambda m: None)
    gen = bench.generate_sources(mech, ["groebner"])["groebner"][0]
    exe = bench.compile_harness(gen, tmp_path / "plain")
    per_step, _ = bench.callgrind_instructions(exe, 0.2, 1e-3, fmu=True)
    motion_mean = w["motion_mean"]
    assert abs(motion_mean - per_step) <= 20, (motion_mean, per_step)
    assert np.isfinite(w["median"]) and w["median"] > 1000


def test_worst_case_of_a_kinematic_fmu_counts_the_solve_at_each_workspace_point(tmp_path):
    """A kinematic FMU (the landing gear: its piston length and rate are
    its inputs) has a worst case too: its doStep is the kinematics solved
    at its inputs.  The motion holds them at their start; each workspace
    sample sets them to the point and counts the solve there, from the
    previous point's solution, so the sweep's Newton iterations are the
    steps' (not an assembly's outside the count), and more than the held
    inputs need.  The motion's per-step counts average to one count of the
    FMU's stepping loop over it, as for a dynamic FMU.  Before: --worst-case
    refused a kinematic mechanism ("steps its dynamics"), and the harness
    solved each sample outside the count and counted a step at inputs
    already solved."""
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.tools import bench
    w = bench.worst_case("landing_gear", stop_time=0.2, keep=tmp_path / "keep")
    assert w["motion_steps"] == 200 and w["workspace_samples"] > 400, w
    assert w["failed"] == 0 and w["unset"] == 0 and w["steps"] == 200 + w["workspace_samples"], w
    motion, ws, assembly = w["iterations_motion"], w["iterations_workspace"], w["iterations_assembly"]
    # no sample is solved outside the count: the assembly is the start's
    # alone, which finds the branch by the Gröbner sequence (no Newton block)
    assert assembly["newton"] == 0, w
    assert motion["newton"] == 1 and ws["newton"] > 2 * motion["newton"], w
    assert w["max_ok_over_median"] <= 3.0, w
    assert w["workspace_max"] > w["motion_max"], w
    mech = prepare_mechanism("landing_gear", lambda m: None)
    gen = bench.generate_sources(mech, ["groebner"])["groebner"][0]
    exe = bench.compile_harness(gen, tmp_path / "plain")
    per_step, _ = bench.callgrind_instructions(exe, 0.2, 1e-3, fmu=True)
    assert abs(w["motion_mean"] - per_step) <= 20, (w["motion_mean"], per_step)


def test_the_iteration_caps_hold_over_the_swept_workspace():
    """The caps a HIL target budgets for (codegen_newton.iteration_caps),
    against what the eight-link -- a mechanism whose kinematics runs Newton
    blocks -- needs: at every point of its workspace sweep (random velocities)
    and along its motion up to the singular configuration it runs into, every
    loop stays below its cap, and so does the step that fails there.  The
    sweep does exercise Newton (at least one iteration), so the bound is not
    vacuous.  Near that configuration the Newton steps stop contracting at
    their round-off floor (codegen_newton.STALL_STOP): the iteration is
    accepted there, or ends unconverged, instead of wandering to the cap.
    Before: every solve of the last doSteps wandered at that floor, one of
    them ran to the cap of 28 unconverged and failed its doStep, whose four
    solves took 78 iterations (4.19 x the median doStep's instructions)."""
    from fmigen.tools import bench
    w = bench.worst_case("eight_link", instructions=False)
    cap = w["caps"]
    assert cap == {"newton": 28, "polish": 12, "poly_newton": 8, "aberth": 500}, cap
    ws, motion, failed = w["iterations_workspace"], w["iterations_motion"], w["iterations_failed"]
    assert w["steps"] - w["motion_steps"] > 1 and ws["newton"] >= 1, w
    for loop in bench.LOOPS:
        assert ws[loop] < cap[loop] and motion[loop] < cap[loop], (loop, w)
        assert failed[loop] <= cap[loop] and w["iterations"][loop] <= cap[loop], (loop, w)
    # the one failed step, at the motion's singular configuration, ends it;
    # no solve of the motion or of that step wanders at the floor for long
    assert w["failed"] == 1 and w["motion_steps"] >= 939, w
    assert failed["newton"] <= 8 and motion["newton"] <= 8, w
