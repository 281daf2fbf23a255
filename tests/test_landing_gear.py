"""Aircraft landing gear (paper 000, eqs. 16-19 and Table 4)."""
import numpy as np
import pytest
import sympy as sp
from conftest import p_bc_ramp
from fmpy import simulate_fmu
from scipy.optimize import fsolve

from fmigen.cli import main as cli_main
from fmigen.build.pipeline import build_fmu
from fmigen.pyfmu.pyruntime import build_python_fmu
from mechanisms.landing_gear import GUESSES, constraints

PAPER_ORDER = "c_theta_F,s_theta_F,c_theta_A,s_theta_A,c_theta_D,s_theta_D,c_theta_B,s_theta_B,p_BC"
ANGLES = ["theta_A", "theta_B", "theta_D", "theta_F"]


def test_triangular_system_matches_table_4(capsys):
    import json
    assert cli_main(["triangularize", "landing_gear", "--order", PAPER_ORDER, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    [block] = out["blocks"]
    seq = block["sequence"]
    assert block["method"] == "groebner"
    assert [s["variable"] for s in seq] == ["s_theta_B", "c_theta_B", "s_theta_D", "c_theta_D",
                                             "s_theta_A", "c_theta_A", "s_theta_F", "c_theta_F"]
    assert [s["degree"] for s in seq] == [6, 1, 1, 1, 1, 1, 1, 1]
    # Table 4 of paper 000: number of terms and longest coefficient (digits)
    assert [s["terms"] for s in seq] == [28, 40, 37, 6, 37, 37, 37, 37]
    assert [s["max_coeff_digits"] for s in seq] == [62, 132, 245, 9, 264, 264, 252, 254]


def _independent_solution(p, guess):
    """scipy's fsolve on the paper's four equations, continued from ``guess``."""
    a = sp.symbols("a b d f")
    F = sp.lambdify([a], list(constraints(*a, p).values()))
    x, info, ier, msg = fsolve(lambda x: F(x), guess, full_output=True, xtol=1e-14)
    assert np.abs(F(x)).max() < 1e-10, msg  # ier 3 = "xtol too small": converged to round-off
    return x


@pytest.fixture(scope="module")
def gear_fmu(gear_fmus):
    return gear_fmus[0]


@pytest.fixture(scope="module")
def gear_fmus(tmp_path_factory):
    """The kinematic landing gear as a C FMU and as a Python FMU (pythonfmu)."""
    d = tmp_path_factory.mktemp("lg")
    path, compiled = build_fmu("landing_gear", d / "landing_gear.fmu")
    py_path, _ = build_python_fmu("landing_gear", d / "landing_gear_py.fmu", compiled=compiled)
    return path, py_path


def test_kinematic_fmu_is_valid_and_takes_p_bc_as_input(gear_fmu):
    from fmpy import read_model_description
    from fmpy.validation import validate_fmu
    assert validate_fmu(str(gear_fmu)) == []
    md = {v.name: v for v in read_model_description(str(gear_fmu)).modelVariables}
    assert md["p_BC"].causality == "input" and md["theta_A"].causality == "output"


def test_stroke_sweep_stays_on_one_branch(gear_fmu):
    # drive the piston at 10 cm/s from 200 to 300
    r = simulate_fmu(str(gear_fmu), stop_time=10.0, output_interval=0.05, input=p_bc_ramp(200.0, 10.0, 10.0),
                     output=["p_BC", *ANGLES, "der(theta_A)", "constraint_residual"])
    # fmpy sets inputs at the start of each communication step and the FMU
    # holds them over it, so the last output shows p_BC(9.95 s)
    assert r["p_BC"][-1] == pytest.approx(299.5, abs=1e-9)
    # Fig. 7 branch: main strut counter-clockwise, drag strut clockwise
    assert (np.diff(r["theta_A"])[1:] > 0).all()   # [0] is the held start input
    assert (np.diff(r["theta_D"])[1:] > 0).all()
    guess = np.array([GUESSES[n] for n in ANGLES])
    for k in range(0, len(r), 20):
        guess = _independent_solution(r["p_BC"][k], guess)
        got = np.array([r[n][k] for n in ANGLES])
        assert np.abs(got - guess).max() < 1e-9, (r["p_BC"][k], got, guess)
    # constraints to round-off, also near p = 302 where the lex sequence is
    # 0/0 (a continuing step solves the block by Newton from the prediction
    # first, continuity-checked: measured 1.7e-13; 1.1e-13 by the polish before)
    assert np.abs(r["constraint_residual"]).max() <= 1e-12
    # angle rates from the velocity solve match finite differences of the angles
    fd = np.gradient(r["theta_A"], r["time"])
    assert np.abs(fd[5:-5] - r["der(theta_A)"][5:-5]).max() < 1e-4


def test_python_stroke_sweep_is_the_c_one(gear_fmus):
    """The same sweep in the Python FMU: its Newton (pyruntime._newton_lines)
    takes the C's fresh and chord steps and stops by the same rules.  Inputs
    0.5 mm apart make the chord steps count here: from a first step of up to
    1e-3 the chord contracts by ~1e-3 per step, and a stop one chord step too
    early leaves |Φ| above 1e-12 (measured: C and Python 3.5e-15 apart,
    residual 1.7e-13; with the Python's chord test mutated to stop after any
    chord step, 2.7e-13 apart and a residual of 2.3e-11)."""
    outs = ["p_BC", *ANGLES, "constraint_residual"]
    rc, rp = (simulate_fmu(str(f), stop_time=10.0, output_interval=0.05, input=p_bc_ramp(200.0, 10.0, 10.0),
                           output=outs) for f in gear_fmus)
    diff = max(float(np.abs(rc[n] - rp[n]).max()) for n in ANGLES)
    print("max |C - Python| over the stroke:", diff, "Python residual:", rp["constraint_residual"].max())
    assert diff <= 1e-13
    assert np.abs(rp["constraint_residual"]).max() <= 1e-12


def test_end_of_stroke_is_reported_as_singular(gear_fmu):
    """Retracting below p ≈ 178.7 the two real branches of the sextic merge:
    the FMU stops with fmi2Discard at the last good point instead of jumping."""
    r = simulate_fmu(str(gear_fmu), stop_time=5.0, output_interval=0.01, input=p_bc_ramp(200.0, -10.0, 5.0),
                     output=["p_BC", *ANGLES, "constraint_residual"])
    assert r["time"][-1] < 2.2 and 178.0 < r["p_BC"][-1] < 179.5
    assert np.abs(r["constraint_residual"]).max() <= 1e-12


def test_dynamic_variant_matches_dae_reference_until_the_toggle():
    """Assumed masses, gravity, no actuator force: the gear swings open.
    The FMU passes p_BC ≈ 3.02 m, where the lex sequence is ill-conditioned
    (a continuing step solves the block by Newton from the prediction), and
    agrees with IDA."""
    from conftest import cached_validate
    r = cached_validate("landing_gear_dynamic", stop_time=0.75)
    assert r.fmu_result["p_BC"][-1] > 3.02
    assert max(r.max_abs_error.values()) <= 1e-9          # measured 6.7e-11
    assert r.max_constraint_residual <= 1e-12


def test_vector_loop_reading_of_the_paper_polynomials():
    """The joint positions of landing_gear_dynamic close both loops at the
    assembled start: C from B equals C from D, E from F equals E from D."""
    from fmigen.build.derived import dae_of
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.triangular import triangularize
    dae = dae_of(load_mechanism("landing_gear_dynamic"))      # the DAE a build derives, from the DAE cache
    q = triangularize(dae, choose_partition(dae)).start
    A, B, D, F, p = q["theta_A"], q["theta_B"], q["theta_D"], q["theta_F"], q["p_BC"]

    def rot(a, x, y):
        return np.array([np.cos(a) * x - np.sin(a) * y, np.sin(a) * x + np.cos(a) * y])
    Bp, Fp, Dp = rot(A, -0.42, -0.62), rot(A, -0.25, 2.12), np.array([-2.31, -0.62])
    C_from_B = Bp + rot(A + B, -p, 0)
    C_from_D = Dp + rot(-D, -0.0608, -0.1697)
    E_from_F = Fp + rot(A + F, -1.784, 0)
    E_from_D = Dp + rot(-D, 1.644, 0)
    assert np.abs(C_from_B - C_from_D).max() < 1e-12
    assert np.abs(E_from_F - E_from_D).max() < 1e-12


def _stroke_until_discard(gear_fmu, read_every_step):
    """Drive p_BC down by 0.5 per 0.1 s step until the step returns Discard;
    (the values read after the last good step, or None, and after the
    Discard)."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(str(gear_fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    s = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(gear_fmu)),
                  modelIdentifier=md.coSimulation.modelIdentifier, instanceName="g")
    s.instantiate()
    s.setupExperiment(startTime=0.0)
    s.enterInitializationMode()
    s.exitInitializationMode()
    names = ["p_BC", *ANGLES, "constraint_residual"]
    t, p, last = 0.0, 200.0, None
    while True:
        s.setReal([vr["p_BC"]], [p])
        try:
            s.doStep(t, 0.1)
        except Exception:                       # fmpy raises on fmi2Discard
            break
        if read_every_step:
            last = dict(zip(names, s.getReal([vr[n] for n in names])))
        t, p = t + 0.1, p - 0.5
        assert p > 170.0, "no Discard before the end of the stroke"
    return last, dict(zip(names, s.getReal([vr[n] for n in names])))


@pytest.mark.parametrize("runtime", ["c", "python"])
def test_a_failed_kinematic_step_keeps_the_last_good_state(gear_fmus, runtime):
    """Past the stroke end the step returns Discard; GetReal then reports the
    last assembled state (a consistent one) for everything but the input,
    never angles half-solved for the rejected input -- also when nothing was
    read after the last good step, so its angles and residual were still to
    be computed (FmigenCore.observe_pending) when the rejected input came."""
    gear_fmu = gear_fmus[runtime == "python"]
    last, after = _stroke_until_discard(gear_fmu, read_every_step=True)
    assert 178.0 < last["p_BC"] < 179.5
    assert after["p_BC"] == last["p_BC"] - 0.5   # the input reads back as set
    for n in [*ANGLES, "constraint_residual"]:    # the rest: the last good state
        assert after[n] == last[n], n
    assert after["constraint_residual"] <= 1e-12
    _, unread = _stroke_until_discard(gear_fmu, read_every_step=False)
    assert unread == after


def test_a_continuing_step_solves_the_gear_by_newton_first():
    """The gear's Gröbner sequence loses digits everywhere (its linear steps'
    coefficients are degree-12 polynomials in p_BC with 260-digit integers):
    it covers no swept configuration, so every solve ended in Newton anyway,
    after the sequence.  Marked at build time, a step continuing from the
    last one tries Newton from the prediction first; the sequence still
    finds the branch at the first assembly.  Still exact: the peak
    violation stays at round-off, each solve one LU factorization: the
    steps after the first reuse its factors (chord steps, codegen_newton.CHORD_STOP),
    at most three steps.  The Stewart platform's legs,
    whose sequences are regular, keep the sequence first."""
    from fmigen.tools.bench import bench
    from fmigen.build.derived import dae_of
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.triangular import triangularize

    def blocks(name):
        dae = dae_of(load_mechanism(name))      # the DAE a build derives, from the DAE cache
        return triangularize(dae, choose_partition(dae)).blocks

    assert [solved_block.newton_first for solved_block in blocks("landing_gear_dynamic")] == [True]
    assert not any(solved_block.newton_first for solved_block in blocks("stewart"))
    row = bench("landing_gear_dynamic", kinematics=["groebner"], stop_time=0.3, repeats=1)["rows"][0]
    print(row["newton_iterations"], row["newton_factorizations"], row["peak_constraint_violation"])
    # measured over these 0.3 s: 2.70 steps and 1.003 LU factorizations per
    # solve (2.007 and 2.007 before the chord steps), peak 1.8e-15
    assert row["newton_factorizations"] <= 1.05
    assert row["newton_iterations"] <= 3.0
    assert row["peak_constraint_violation"] <= 1e-14
