"""The generated embedding (fmigen/generate/codegen_embedding.py) against the numpy
embedding (fmigen/derive/embed.py, np.linalg.solve on the dense matrices).

A small C driver completes random states with the generated kinematics and
calls fmigen_embedded_prepare and _finish, with every value the generated code should fill
poisoned with NaN first, so reading an unfilled q, v or trig entry shows up
as NaN rather than as stack garbage.  Both kinematics modes are checked:
angles = 1 (assemble) and angles = 0 (the FMU's right-hand side, which skips
atan2 and hands sin/cos over in trig)."""
import functools
import re
import shutil
import subprocess

import numpy as np
import pytest
from sympy import Piecewise, cos, sin

from fmigen.generate import codegen
from fmigen.tools.bench import RUNTIME_DIR, harness_cflags
from fmigen.derive.dae import build_dae
from fmigen.derive.embed import embed, embedded_rhs
from fmigen.model import Mechanism
from fmigen.derive.partition import choose_partition
from fmigen.build.derived import dae_of
from fmigen.build.pipeline import compile_model, load_mechanism, prepare_mechanism
from fmigen.generate.codegen_recursive import choose as choose_dynamics
from fmigen.kinematics.triangular import triangularize

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fmigen_runtime.h"
int main(int argc, char **argv)
{
    const int angles = atoi(argv[1]);
    const double t = atof(argv[2]);
    double q[NQ], v[NQ], trig[2 * NQ], sol[FMIGEN_DIM(NSOL)], qdd[FMIGEN_DIM(NI)];
    FmigenBase base = {0};
    for (int i = 0; i < NQ; i++) { q[i] = NAN; v[i] = NAN; }
    for (int i = 0; i < 2 * NQ; i++) trig[i] = NAN;
    for (int k = 0; k < NI; k++) {
        q[fmigen_independent[k]] = atof(argv[3 + k]);
        v[fmigen_independent[k]] = atof(argv[3 + NI + k]);
    }
    /* no previous solution: the prediction is the build-time start */
    if (NSOL) memcpy(base.sol, fmigen_sol_start, NSOL * sizeof(double));
    memcpy(base.q, fmigen_q_start, sizeof base.q);
    int k = fmigen_kinematics(t, q, fmigen_p_default, &base, sol, trig);
    if (!k && angles) { fmigen_angle_turns(&base, trig); fmigen_kinematic_angles(q, trig, &base); }
    double work[FMIGEN_DIM(FMIGEN_NWORK)];
    for (int i = 0; i < FMIGEN_DIM(FMIGEN_NWORK); i++) work[i] = NAN;
    int e = k ? -1 : fmigen_embedded_prepare(t, q, v, fmigen_p_default, trig, work);
    if (!e) e = fmigen_embedded_finish(t, q, v, fmigen_p_default, fmigen_u_default, trig, work, qdd);
    printf("%d %d\n", k, e);
    for (int i = 0; i < NQ; i++) printf("%.17g ", q[i]);
    printf("\n");
    for (int i = 0; i < NQ; i++) printf("%.17g ", v[i]);
    printf("\n");
    for (int i = 0; i < NI; i++) printf("%.17g ", qdd[i]);
    printf("\n");
    for (int i = 0; i < 2 * NQ; i++) printf("%.17g ", trig[i]);
    printf("\n");
    return 0;
}
"""


def gear_pendulums() -> Mechanism:
    """Two pendulums geared φ = 2θ: the angle φ enters its constraint linearly,
    so its block solves it as a plain variable (no s/c pair), while M and F
    need sin φ and cos φ (the hand-over once missed this)."""
    m = Mechanism("gear_pendulums", description="two pendulums coupled by a 2:1 gear")
    theta = m.coordinate("theta", 0.3, "rad")
    phi = m.coordinate("phi", 0.6, "rad")
    g = m.parameter("g", 9.81, "m/s2", tunable=True)
    m1 = m.parameter("m1", 1.0, "kg", tunable=True)
    m2 = m.parameter("m2", 2.0, "kg", tunable=True)
    L = 0.5
    m.planar_body("p1", m1, m1 * L**2 / 12, (L / 2 * sin(theta), -L / 2 * cos(theta)), theta)
    m.planar_body("p2", m2, m2 * L**2 / 12, (1 + L / 2 * sin(phi), -L / 2 * cos(phi)), phi)
    m.gravity = (0, -g, 0)
    m.constraint("gear", phi - 2 * theta)
    m.independent = ["theta"]
    m.dof = 1
    return m


def _geared_pendulum_and_circle_force(m, a, phi):
    """Parameters m1, g, k; a pendulum φ = 2a; the force k(sin²φ + cos²φ − 1)
    on the coordinate x, zero only on the unit circle."""
    m1 = m.parameter("m1", 1.0, "kg", tunable=True)
    g = m.parameter("g", 9.81, "m/s2", tunable=True)
    k = m.parameter("k", 3.0, "N", tunable=True)
    m.planar_body("b3", 2.0, 0.05, (0.25 * sin(phi), -0.25 * cos(phi)), phi)
    m.gravity = (0, -g, 0)
    m.generalized_force("x", k * (sin(phi) ** 2 + cos(phi) ** 2 - 1))
    m.constraint("gear", phi - 2 * a)
    return m1


def circle_zeros() -> Mechanism:
    """A mass matrix entry and a force that are zero only on the unit circle:
    body 1 at ((x + y) cos a, (x + y) sin a) gives M[x, y] = m1 sin²a +
    m1 cos²a − m1, and the force k(sin²φ + cos²φ − 1) on x, φ = 2a geared.
    The generated code takes both as structural zeros once the circle is
    used (codegen_embedding's stage); the recursive elimination once
    emitted the zero M entry as a factor named None (a C compile error)."""
    m = Mechanism("circle_zeros")
    a = m.coordinate("a", 0.3, "rad")
    x = m.coordinate("x", 0.5, "m")
    y = m.coordinate("y", 0.2, "m")
    phi = m.coordinate("phi", 0.6, "rad")
    m1 = _geared_pendulum_and_circle_force(m, a, phi)
    m.planar_body("b1", m1, 0.1, ((x + y) * cos(a), (x + y) * sin(a)), a)
    m.planar_body("b2", m1, 0.1, (x - y, 0), 0)
    m.independent = ["a", "x", "y"]
    m.dof = 3
    return m


def circle_zero_force() -> Mechanism:
    """A crank geared to a pendulum and a slider x with the force
    k(sin²φ + cos²φ − 1), zero on the unit circle, where the code of F is
    the reduced one: the force was once split off as a named 0 among the
    input forces (no input reads it), multiplied in finish."""
    m = Mechanism("circle_zero_force")
    a = m.coordinate("a", 0.3, "rad")
    phi = m.coordinate("phi", 0.6, "rad")
    x = m.coordinate("x", 0.1, "m")
    m1 = _geared_pendulum_and_circle_force(m, a, phi)
    m.planar_body("b1", m1, 0.1, (0.5 * cos(a), 0.5 * sin(a)), a)
    m.planar_body("b2", 1.0, 0.1, (x, 0), 0)
    m.independent = ["a", "x"]
    m.dof = 2
    return m


def switched_torque_pendulums() -> Mechanism:
    """``gear_pendulums`` with a torque on θ that reads an input through a
    Piecewise (a one-sided stop, say).  sympy prints a Piecewise over several
    lines, and the split of the right-hand side at the inputs
    (``_split_inputs``) once worked line by line: the statement's first line
    went to prepare, the line reading u to finish, and model.c did not
    compile."""
    m = gear_pendulums()
    m.name = "switched_torque_pendulums"
    tau = m.input("tau", 1.5, "N*m")
    theta = m.coordinate_by_name("theta").symbol
    m.generalized_force("theta", Piecewise((tau * (1 + theta), theta > 0.3), (-2 * tau, True)))
    return m


def pushed_stewart() -> Mechanism:
    """The Stewart platform with its leg-force inputs F1..F6 at non-zero
    starts: the generated code's Bᵀ F_u (the forces that read inputs, added
    in fmigen_embedded_finish) then counts in q̈_i.  Its Φ_d is six 3×3
    blocks and M has no entry between two legs or a leg and the platform, so
    Bᵀ M B is summed leg by leg (embedding_blockwise._blockwise_reduced)."""
    import dataclasses
    m = load_mechanism("stewart")
    m.name = "pushed_stewart"
    m.inputs = [dataclasses.replace(i, start=0.7 * (-1) ** k + 0.1 * k) for k, i in enumerate(m.inputs)]
    return m


@functools.cache
def shipped_dae(name):
    """``build_dae(load_mechanism(name))``, derived once per worker process
    (a file's tests stay on one): the five-link's and the Stewart
    platform's are each read by two tests.  The tests only read it.  Through
    the DAE cache (``derived.dae_of``: the same DAE), which the suite's
    builds of these mechanisms fill."""
    return dae_of(load_mechanism(name))


def derivation(mech, kinematics="groebner", dynamics="embedded"):
    """(dae, emb, tri, gen): ``mech`` derived and its C generated without
    coordinate switching; a shipped mechanism (given by name) once per
    worker process (``_shipped_derivation``)."""
    if isinstance(mech, str):
        return _shipped_derivation(mech, kinematics, dynamics)
    return _derived(build_dae(mech), kinematics, dynamics)


@functools.cache
def _shipped_derivation(name, kinematics, dynamics):
    """The five-link's C, the longest to generate here, is read by
    test_generated_embedding_matches_numpy and
    test_chunked_embedding_is_bit_identical.  The tests only read it.

    Derived as ``fmigen build`` derives (``compile_model`` of the prepared
    mechanism), so that its C comes from the derived-model cache when a
    build in the suite recorded it: with ``dynamics="auto"`` (a build's
    option) when auto chooses the ``dynamics`` asked for, else with
    ``dynamics`` itself."""
    mech = prepare_mechanism(name)
    if mech.switch_independent:      # compile_model would add the other sets' kinematics
        return _derived(shipped_dae(name), kinematics, dynamics)
    dae = shipped_dae(name)
    part = choose_partition(dae)
    auto = choose_dynamics("auto", embed(dae, part), part)[0]
    c = compile_model(mech, kinematics=kinematics, dynamics="auto" if auto == dynamics else dynamics)
    assert c.dynamics == dynamics, (name, c.dynamics)
    return c.dae, c.embedding, c.triangular, c.generated


def _derived(dae, kinematics, dynamics):
    part = choose_partition(dae)
    emb = embed(dae, part)
    tri = triangularize(dae, part, kinematics=kinematics)
    return dae, emb, tri, codegen.generate(emb, tri, dae.mechanism.name, dynamics=dynamics)


def max_relative_differences(mech, kinematics, tmp_path, trials=12, dynamics="embedded"):
    """``mech``: a Mechanism, or a shipped mechanism's name."""
    dae, emb, tri, gen = derivation(mech, kinematics, dynamics)
    mech = dae.mechanism
    if mech.name == "pushed_stewart" and dynamics == "embedded":
        # the leg-by-leg sums, with the inputs' share in finish
        assert "const double nb" in gen.model_c and "const double zu" in gen.model_c
        # M's β-s entry of every leg is zero only once sin² + cos² = 1 is
        # used: a structural zero, no named 0 multiplied (it was M_244 = 0 ..
        # M_264 = 0, each in four products)
        rhs = gen.model_c.split("int fmigen_embedded_prepare", 1)[1]
        assert not re.findall(r"const double (?:M|G|F)_\d+ = 0;", rhs)
        # the residual scales the sequence's sin/cos pairs onto the circle,
        # not the platform angles': their pairs are sin and cos of q itself
        phi = gen.model_c.split("double fmigen_phi_trig_rows", 1)[1].split("\n}", 1)[0]
        normalized = {int(k) for k in re.findall(r"const double r_q(\d+) =", phi)}
        assert normalized and not normalized & set(emb.independent)
        assert normalized == set(codegen.trig_plan(emb)[0]) - set(emb.independent)
    # an exact zero is a structural zero: never a named 0 nor a missing name
    rhs = gen.model_c.split("int fmigen_embedded_prepare", 1)[1]
    assert not re.findall(r"const double (?:M|G|F|Fu|Pt)_\d+ = 0;", rhs)
    assert not re.search(r"\bNone\b", gen.model_c)
    (tmp_path / "model.c").write_text(gen.whole_c)
    (tmp_path / "model_config.h").write_text(gen.config_h)
    (tmp_path / "driver.c").write_text(DRIVER)
    exe = tmp_path / "driver"
    r = subprocess.run(["gcc", *harness_cflags(), f"-I{tmp_path}", f"-I{RUNTIME_DIR}", str(tmp_path / "model.c"),
                        str(RUNTIME_DIR / "fmigen_core.c"), str(RUNTIME_DIR / "fmigen_augmented.c"),
                        str(tmp_path / "driver.c"), "-lm", "-o", str(exe)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    I = emb.independent
    angles, _ = codegen.trig_plan(emb)
    # the angles the sequence leaves to fmigen_kinematic_angles (atan2 later)
    body = gen.model_c.split("void fmigen_kinematic_angles", 1)[1].split("\n}", 1)[0]
    deferred = [int(k) for k in re.findall(r"q\[(\d+)\] = fmigen_atan2", body)]
    for group in re.findall(r"fmigen_atan2_4\(q, trig, ([\d, ]+)\)", body):   # four at a time
        deferred += [int(k) for k in group.split(",")]
    rng = np.random.default_rng(7)
    q0 = np.array([tri.start[n] for n in dae.names])
    worst = {"qdd": 0.0, "v": 0.0, "trig": 0.0}
    for trial in range(trials):
        qi = q0[I] + rng.normal(0.0, 0.02, len(I)) * np.maximum(1.0, np.abs(q0[I]))
        vi = rng.normal(0.0, 1.0, len(I))
        tt = float(rng.uniform(0.0, 2.0))
        for mode in (1, 0):
            out = subprocess.run([str(exe), str(mode), repr(tt), *map(repr, map(float, qi)),
                                  *map(repr, map(float, vi))], capture_output=True, text=True).stdout.split("\n")
            assert out[0] == "0 0", (trial, mode, out[0])
            q, v, qdd, trig = (np.array(line.split(), float) for line in out[1:5])
            if mode == 1:
                q_assembled = q
            else:  # without fmigen_kinematic_angles the deferred angles stay NaN in q
                assert set(np.flatnonzero(np.isnan(q))) <= set(deferred), (trial, q)
                q = q.copy()
                q[deferred] = q_assembled[deferred]
            # NaN-poisoned inputs: a value the sequence failed to hand over
            # is NaN here (max() below would silently drop a NaN)
            assert np.isfinite(q).all() and np.isfinite(v).all() and np.isfinite(qdd).all(), (trial, mode)
            assert np.isfinite(trig[[2 * k for k in angles] + [2 * k + 1 for k in angles]]).all(), (trial, mode)
            _, v_ref, qdd_ref = embedded_rhs(emb, tt, q, vi, lambda qq, t_: q)
            worst["qdd"] = max(worst["qdd"], np.max(np.abs(qdd - qdd_ref)) / np.max(np.abs(qdd_ref)))
            worst["v"] = max(worst["v"], np.max(np.abs(v - v_ref)) / np.max(np.abs(v_ref)))
            for k in angles:
                worst["trig"] = max(worst["trig"], abs(trig[2 * k] - np.sin(q[k])),
                                    abs(trig[2 * k + 1] - np.cos(q[k])))
    return worst


# measured (relative q̈_i, relative v, absolute trig): gear 6.6e-16 / 0 / 0,
# fourbar 2.5e-15 / 2.5e-16 / 3.3e-16, five_link 6.0e-13 / 6.5e-16 / 2.2e-16
# (cond Φ_d ≈ 41, terms of Bᵀ(F − M a_c)
# ~74 against a result ~2: the round-off the numpy reference shares)
CASES = [("gear", "groebner", 1e-13), ("switched", "groebner", 1e-13), ("fourbar", "groebner", 1e-13),
         ("fourbar", "newton-loop", 1e-13), ("five_link", "groebner", 1e-11),
         ("pushed_stewart", "groebner", 1e-12), ("circle_zeros", "groebner", 1e-13),
         ("circle_zero_force", "groebner", 1e-13)]


LOCAL = {"gear": gear_pendulums, "switched": switched_torque_pendulums, "pushed_stewart": pushed_stewart,
         "circle_zeros": circle_zeros, "circle_zero_force": circle_zero_force}


@pytest.mark.parametrize("name,kinematics,bound", CASES)
def test_generated_embedding_matches_numpy(name, kinematics, bound, tmp_path):
    worst = max_relative_differences(LOCAL[name]() if name in LOCAL else name, kinematics, tmp_path)
    print(name, kinematics, worst)
    assert worst["qdd"] <= bound and worst["v"] <= bound
    assert worst["trig"] <= 1e-12


# the recursive elimination (fmigen/generate/codegen_recursive.py) against the same
# numpy embedding: a chain of one loop, a Newton kinematics, and the Stewart
# platform (spatial bodies, six parallel loops, f = 6, a dense 6 × 6 left at
# the root)
RECURSIVE_CASES = [("gear", "groebner", 1e-13), ("switched", "groebner", 1e-13), ("fourbar", "newton-loop", 1e-13),
                   ("stewart", "groebner", 1e-12), ("circle_zeros", "groebner", 1e-13),
                   ("circle_zero_force", "groebner", 1e-13)]


@pytest.mark.parametrize("name,kinematics,bound", RECURSIVE_CASES)
def test_generated_recursive_dynamics_matches_numpy(name, kinematics, bound, tmp_path):
    worst = max_relative_differences(LOCAL[name]() if name in LOCAL else name, kinematics, tmp_path,
                                     dynamics="recursive")
    print(name, kinematics, worst)
    assert worst["qdd"] <= bound and worst["v"] <= bound
    assert worst["trig"] <= 1e-12


def _rechunked(model_c: str, size: int) -> str:
    """model.c with its three embedding functions generated as chunks of
    ``size`` statements (``chunking.chunked``), whatever their size."""
    from fmigen.generate.chunking import chunked
    for name in ["fmigen_embedded_velocities", "fmigen_embedded_prepare", "fmigen_embedded_finish"]:
        i = model_c.index(f"\nint {name}(") + 1
        j = model_c.index("\n{\n", i)
        k = model_c.index("\n}\n", j)
        params = model_c[i + len(f"int {name}("):j - 1]
        model_c = model_c[:i] + chunked(name, params, model_c[j + 3:k], size=size, above=0) + model_c[k + 3:]
    return model_c


def test_chunked_embedding_is_bit_identical(tmp_path):
    """A large model's embedding functions are split into chunks that hand
    over through a scratch struct (gcc's register allocation is superlinear
    in a function's size).  The five-link's, cut into chunks of 40
    statements (its 5×5 LU block's arrays, checks and solves cross chunks),
    gives bit for bit the unsplit functions' q, v, q̈ and trig; its own
    model.c is below the size where chunks start, so it is not chunked.
    The chunks compile under clang -std=c99 -pedantic -Wall -Wextra -Werror
    (before: a chunk that read neither v nor trig left them unused, which
    failed the vehicle's sources)."""
    _, _, _, gen = derivation("five_link")
    assert "FMIGEN_CHUNK" not in gen.model_c
    chunked_c = _rechunked(gen.model_c, 40)
    assert chunked_c.count("FMIGEN_CHUNK int fmigen_embedded_prepare_chunk") > 10
    assert "S->A" in chunked_c          # an LU block's matrix crosses chunks
    outputs = []
    for variant, code in (("whole", gen.model_c), ("chunked", chunked_c)):
        d = tmp_path / variant
        d.mkdir()
        (d / "model.c").write_text(code + "\n" + gen.start_c)
        (d / "model_config.h").write_text(gen.config_h)
        (d / "driver.c").write_text(DRIVER)
        r = subprocess.run(["gcc", *harness_cflags(), f"-I{d}", f"-I{RUNTIME_DIR}", str(d / "model.c"),
                            str(RUNTIME_DIR / "fmigen_core.c"), str(RUNTIME_DIR / "fmigen_augmented.c"),
                            str(d / "driver.c"), "-lm", "-o", str(d / "driver")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "warning" not in r.stderr, r.stderr
        if shutil.which("clang"):
            r = subprocess.run(["clang", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", f"-I{d}",
                                f"-I{RUNTIME_DIR}", str(d / "model.c"), "-o", str(d / "model.o")],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
        rng = np.random.default_rng(3)
        runs = []
        for _ in range(4):
            qi = [0.02 * rng.normal()]
            vi = [rng.normal()]
            for mode in (1, 0):
                runs.append(subprocess.run([str(d / "driver"), str(mode), "0.3", *map(repr, qi), *map(repr, vi)],
                                           capture_output=True, text=True).stdout)
        outputs.append(runs)
    assert outputs[0] == outputs[1]
    assert all(run.startswith("0 0\n") for run in outputs[0])


def driven_slider_crank() -> Mechanism:
    """A slider crank whose slide line moves up and down with time (a
    rheonomic constraint, the offset 0.05·sin 3t + 0.02·t²): γ then has the
    Φ_qt and Φ_tt terms besides the velocity products."""
    from fmigen.model import t
    m = Mechanism("driven_slider_crank", description="slider crank on a moving slide line")
    theta = m.coordinate("theta", 0.3, "rad")
    beta = m.coordinate("beta", 0.1, "rad")
    x = m.coordinate("x", 1.4, "m")
    r, L = 0.4, 1.1
    m.planar_body("crank", 1.0, 0.02, (r / 2 * cos(theta), r / 2 * sin(theta)), theta)
    m.planar_body("rod", 1.0, 0.1, (r * cos(theta) + L / 2 * cos(beta), r * sin(theta) - L / 2 * sin(beta)), beta)
    m.constraint("loop_x", r * cos(theta) + L * cos(beta) - x)
    m.constraint("loop_y", r * sin(theta) - L * sin(beta) - (0.05 * sin(3 * t) + 0.02 * t**2))
    m.independent = ["theta"]
    m.dof = 1
    return m


@pytest.mark.parametrize("name", ["five_link", "stewart", "landing_gear_dynamic", "driven"])
def test_gamma_by_forward_differentiation_is_the_symbolic_gamma(name):
    """codegen_embedding.gamma_by_jets (the first and second time derivative
    of every CSE temporary of Φ, product and chain rule) against dae.gamma
    (sympy's Jacobian of Φ_q q̇, and the Φ_qt, Φ_tt terms): two derivations
    that share only Φ, at random states and times."""
    import sympy as sp
    from fmigen.generate.codegen_embedding import gamma_by_jets
    from fmigen.model import t
    dae = build_dae(driven_slider_crank()) if name == "driven" else shipped_dae(name)
    jets = gamma_by_jets(dae)
    assert jets is not None and len(jets) == dae.m
    args = [t, *dae.q_sym, *dae.v_sym]
    f_jets = sp.lambdify(args, jets, "numpy")
    f_sym = sp.lambdify(args, list(dae.gamma), "numpy")
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(20):
        x = rng.uniform(-2.0, 2.0, len(args))
        a, b = np.array(f_jets(*x), dtype=float), np.array(f_sym(*x), dtype=float)
        worst = max(worst, np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))
    print(name, worst)
    assert worst <= 1e-12
    if name == "driven":   # the time terms are there: the moving slide line's −y''(t)
        assert t in sp.sympify(jets[1]).free_symbols


def test_jet_rules_match_sympy_diff():
    """codegen_embedding._jet rule by rule against sympy's own derivatives
    (q̈ = 0): products with repeated factors, negative powers, sin and cos of
    compound arguments, time, and constants such as π and √3 (constant in
    time, not "no rule"); None for what it has no rule for."""
    import sympy as sp
    from fmigen.generate.codegen_embedding import _jet
    from fmigen.model import t
    a, b = sp.symbols("a b")
    va, vb = sp.symbols("va vb")
    A, B = sp.Function("A")(t), sp.Function("B")(t)
    jets = {a: (va, sp.Integer(0)), b: (vb, sp.Integer(0)), t: (sp.Integer(1), sp.Integer(0))}
    to_t = {a: A, b: B}
    back = {A.diff(t, 2): 0, B.diff(t, 2): 0}
    back.update({A.diff(t): va, B.diff(t): vb})
    back.update({A: a, B: b})
    cases = [a**2 * b**3, 3 * a * b * t, a**-2 * b, 1 / (a * b + 2)**3, sp.sin(a + 2 * b - 3 * t),
             sp.cos(a * b) * sp.sin(t**2), sp.sin(sp.cos(a) * b)**2 * (a - 2 * b),
             sp.sin(2 * sp.pi * t / 3) * sp.sqrt(3) * a]
    for e in cases:
        d1, d2 = _jet(e, jets)
        e_t = e.xreplace(to_t)
        ref1 = e_t.diff(t).subs(back)
        ref2 = e_t.diff(t, 2).subs(back)
        assert sp.simplify(d1 - ref1) == 0, e
        assert sp.simplify(d2 - ref2) == 0, e
    for e in (sp.sqrt(a), sp.Abs(a), sp.exp(a), a**sp.Rational(1, 3)):
        assert _jet(e, jets) is None, e
