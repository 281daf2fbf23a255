"""The exact completion of a lex sequence (``sequences.Completion``): where
a linear step's leading coefficient vanishes at a regular configuration,
the generated kinematics solves the block from the first step's root, its
angle's circle and the block's own (linear) constraints: no other lex
order, no Newton.

The drag-link four-bar (``fourbar_double_crank``) is the case: its sequence
solves c_phi from a linear step whose leading coefficient is ∝ l1 cos θ − d,
zero at θ* = arccos(d / l1), where its two assemblies share sin φ.  The
reference is the four-bar's closed form (B on two circles), which shares
nothing with the Gröbner sequences.  Which attempt of the generated
kinematics solved each call is counted in an instrumented copy of model.c
(a counter at each attempt's label); the FMU's own model.c is not changed."""
import ctypes
import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from fmigen.verify import check as check_mod
from fmigen.fmi import fmu as fmu_mod
from fmigen.pyfmu import pyruntime
from fmigen.pyfmu import numeric
from fmigen.generate.printer import SymbolMap
from fmigen.build.pipeline import compile_model, prepare_mechanism

L1, L2, L3, D = 2.5, 3.5, 3.0, 1.2          # mechanisms/fourbar_double_crank.py
THETA_STAR = math.acos(D / L1)


def closed_form(theta):
    """(alpha, phi) of the drag link's assembled branch at crank angle θ:
    B where the circles of radius l2 about the crank pin A and l3 about the
    pivot D meet, on the side of line A→D the start (θ = 1, φ ≈ 2.975) is on."""
    ax, ay = L1 * math.cos(theta), L1 * math.sin(theta)
    ux, uy = D - ax, -ay
    r = math.hypot(ux, uy)
    a = (L2 * L2 - L3 * L3 + r * r) / (2 * r)
    h = math.sqrt(L2 * L2 - a * a)
    side = -1.0                       # the start's side (checked in the test below)
    bx = ax + (a * ux - side * h * uy) / r
    by = ay + (a * uy + side * h * ux) / r
    return math.atan2(by - ay, bx - ax), math.atan2(by, bx - D)


def test_closed_form_is_the_start_branch():
    alpha, phi = closed_form(1.0)
    assert abs(alpha - -2.664603) < 1e-5 and abs(phi - 2.975225) < 1e-5


@pytest.fixture(scope="module")
def compiled():
    return compile_model(prepare_mechanism("fourbar_double_crank"))


def _configuration(compiled, theta):
    alpha, phi = closed_form(theta)
    q = {"theta": theta, "alpha": alpha, "phi": phi}
    return np.array([q[n] for n in compiled.dae.names])


def _instrumented(monkeypatch, labels):
    """fmu.write_sources, writing a model.c with a counter at every attempt
    of every block: its sequences, the exact completion, the Newton
    fallback and the polish."""
    write = fmu_mod.write_sources
    patterns = [r"case \d+: \{ /\* ((?:sequence|exact completion)[^*]*)\*/",
                r"default: \{ /\* (Newton from the prediction)", r"/\* (polish): Newton from the result"]

    def patched(dest, gen, *a, **k):
        write(dest, gen, *a, **k)
        out = []
        for line in (dest / "model.c").read_text().split("\n"):
            out.append(line)
            for pat in patterns:
                m = re.search(pat, line)
                if m:
                    labels.append(m.group(1).strip())
                    out.append(f"fmigen_probe[{len(labels) - 1}]++;")
        # weak: the AVX copy includes model.c too, and both copies count into
        # one array; default visibility: ctypes reads it
        text = "\n".join(out).replace("#include", f"__attribute__((weak, visibility(\"default\"))) long fmigen_probe[{len(labels)}];\n#include", 1)
        (dest / "model.c").write_text(text)
    monkeypatch.setattr(fmu_mod, "write_sources", patched)
    core = check_mod._core_library
    libs = []

    def keep(compiled, workdir, *args, **kwargs):
        libs.append(core(compiled, workdir, *args, **kwargs))
        return libs[-1]
    monkeypatch.setattr(check_mod, "_core_library", keep)
    return libs


def test_the_vanishing_coefficient_takes_the_exact_completion_and_no_newton(compiled, monkeypatch):
    """Along the whole swept turn (check's sweep) and then into θ* itself,
    the generated C never runs Newton (neither the fallback nor the polish),
    the completion solves θ*, and every result is the closed form's to
    round-off.  Before the completion, the sweep took the second lex order
    at 2 configurations and the Newton polish at 10."""
    tri = compiled.triangular
    sweep = tri.sweep
    # the sweep's paths, then a path from 1e-3 before θ* into θ*
    extra = np.array([_configuration(compiled, THETA_STAR - 1e-3), _configuration(compiled, THETA_STAR)])
    n = len(sweep.points)
    fake = SimpleNamespace(points=np.vstack([sweep.points, extra]), paths=[*sweep.paths, [n, n + 1]],
                           physical=[], conditions=np.ones(n + 2))
    labels = []
    libs = _instrumented(monkeypatch, labels)
    r = check_mod.branch_consistency(compiled, fake)
    counts = dict(zip(labels, (ctypes.c_long * len(labels)).in_dll(libs[0], "fmigen_probe")))
    print(counts, r["max_deviation"])
    assert r["consistent"] and not r["failures"]
    # the sweep's points are the continuation's (its own error included),
    # the last the closed form's: measured 4.1e-14
    assert r["max_deviation"] <= 1e-13
    assert counts["Newton from the prediction"] == 0 and counts["polish"] == 0, counts
    assert counts.get("exact completion from the nearer root of s_phi", 0) >= 1, counts
    [solved_block] = tri.blocks
    assert solved_block.completion is not None


def _python_kinematics(compiled, calls):
    """The Python runtime's kinematics function (pyruntime, the same walker
    as model.c's) in a namespace with the runtime's helpers; ``calls``
    counts the circle steps (quadratic_near(1, 0, ...): only the
    completion's) and the LU factorizations (the completion's one, and
    every Newton step's)."""
    src, _, sol_start = pyruntime.kinematics_source(compiled.embedding, compiled.triangular,
                                                    SymbolMap(compiled.embedding))
    ns = {k: getattr(math, k) for k in dir(math) if not k.startswith("_")}
    ns.update({k: v for k, v in vars(pyruntime).items() if not k.startswith("__")})

    def quadratic_near(a2, a1, a0, pred):
        if a2 == 1.0 and a1 == 0.0:
            calls["circle"] += 1
        return numeric.quadratic_near(a2, a1, a0, pred)

    def lu_factor(n, A, piv):
        calls["lu"] += 1
        return numeric.lu_factor(n, A, piv)
    ns.update(quadratic_near=quadratic_near, lu_factor=lu_factor)
    exec(src, ns)   # noqa: S102 - fmigen's own generated code
    return ns["fmigen_kinematics"], list(sol_start)


def test_python_runtime_solves_the_vanishing_coefficient_exactly(compiled):
    """The Python runtime at θ*, continuing from 1e-3 before it as a step
    does: the closed form to round-off, by the completion (one circle step,
    one LU factorization: no Newton step, which would factor again)."""
    calls = {"circle": 0, "lu": 0}
    kin, sol = _python_kinematics(compiled, calls)
    names = compiled.dae.names
    before = _configuration(compiled, THETA_STAR - 1e-3)
    target = _configuration(compiled, THETA_STAR)
    # the solution vector at θ* − 1e-3 (sin, cos of alpha and phi in the
    # block's slots) and the velocity towards θ* over dt = 1
    from fmigen.generate.codegen import sol_layout
    slots, _ = sol_layout(compiled.dae, compiled.triangular)
    sol = [math.sin(before[i]) if kind == 0 else math.cos(before[i]) for i, kind in slots]
    J = compiled.dae.numeric.Phi_q(0.0, before)
    part = compiled.partition
    v = np.zeros(len(names))
    v[part.independent] = target[part.independent] - before[part.independent]
    v[part.dependent] = -np.linalg.solve(J[:, part.dependent], J[:, part.independent] @ v[part.independent])
    base = {"sol": sol, "q": list(before), "v": list(v), "t": 0.0, "continuity": 1}
    q = [target[i] if i in part.independent else math.nan for i in range(len(names))]
    out = [0.0] * len(sol)
    assert kin(1.0, q, [0.0], base, out) == 0
    for i in part.dependent:
        assert abs(math.remainder(q[i] - target[i], 2 * math.pi)) <= 1e-14, (names[i], q[i], target[i])
    assert np.abs(compiled.dae.numeric.Phi(0.0, np.array(q))).max() <= 1e-14
    assert calls == {"circle": 1, "lu": 1}, calls


def test_five_link_papers_order_needs_no_other_order():
    """Paper 000's order for the five-link (s_α ≻ c_α) degenerates where a
    link is horizontal; the completion (c_α from the quadratic, s_α by the
    circle) covers every such swept configuration, so those blocks need
    neither another lex order nor the Newton fallback there."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.triangular import triangularize
    mech = load_mechanism("five_link")
    mech.groebner_order = [f"{sc}_{v}{i}" for i in range(1, 6)
                           for sc, v in (("s", "alpha"), ("c", "alpha"), ("s", "beta"), ("c", "beta"))]
    dae = build_dae(prepare_mechanism(mech))
    tri = triangularize(dae, choose_partition(dae))
    degenerate = [solved_block for solved_block in tri.blocks if solved_block.singular_points]
    assert len(degenerate) == 5
    for solved_block in degenerate:
        assert solved_block.completion is not None
        assert all(s["covered_by"] == "exact completion" for s in solved_block.singular_points)


# --- a first step of higher degree: the Stephenson I six-bar's sextic -----------

STEPHENSON1 = "tests/corpus/stephenson1_sixbar.py"


@pytest.fixture(scope="module")
def stephenson1():
    return compile_model(prepare_mechanism(STEPHENSON1))


def _newton_on_constraints(dae, dependent, q, tol=1e-15):
    """The independent reference: Newton on the mechanism's own constraints
    Φ(q) = 0 (the DAE's, not the Gröbner polynomials), the dependent
    coordinates from ``q``."""
    q = np.array(q, dtype=float)
    for _ in range(50):
        r = dae.numeric.Phi(0.0, q)
        dx = np.linalg.solve(dae.numeric.Phi_q(0.0, q)[:, dependent], r)
        q[dependent] -= dx
        if np.abs(dx).max() <= tol:
            break
    assert np.abs(dae.numeric.Phi(0.0, q)).max() <= 1e-14
    return q


def test_sextic_completion_covers_every_degenerate_configuration(stephenson1):
    """Stephenson I's block {A, C, B, psi} solves a sextic in s(psi − θ)
    first, then linear steps; the step for c(psi − θ) divides by a
    polynomial in θ (two assemblies share s(psi − θ) where it vanishes).
    The completion (the sextic's root, c by the circle, the rest by the
    loops' linear rows and the circles of the angles they eliminate, the
    root refined on the left-over circle) covers every swept configuration
    where the primary degenerates, so the Newton fallback is not needed.
    Before, the completion applied to a quadratic first step only: three
    other orders covered 418 of the 650 and 232 were left to Newton."""
    from fmigen.derive.workspace import unit_scales
    from fmigen.kinematics.completion import completion_error
    from fmigen.kinematics.sweep_measures import degenerate, representation_singular, sequence_quality
    tri = stephenson1.triangular
    [solved_block] = tri.blocks
    assert solved_block.steps[0].degree == 6 and [st.degree for st in solved_block.steps[1:]] == [1] * 7
    plan = solved_block.completion
    assert plan is not None and plan.degree == 6 and plan.refine is not None
    assert len(solved_block.singular_points) >= 2
    assert all(s["covered_by"] == "exact completion" for s in solved_block.singular_points)
    sw, scales = tri.sweep, unit_scales(stephenson1.dae)
    quality = sequence_quality(stephenson1.dae, solved_block, solved_block.sequences[0], sw.points, scales)
    bad = degenerate(quality, sw.paths, representation_singular(quality, sw.paths))
    assert bad.sum() >= 600, int(bad.sum())          # measured 650 of 1441
    err = completion_error(stephenson1.dae, solved_block, plan, sw.points[bad], scales)
    # measured 8.6e-15 (without the refinement 3.6e-8: the sextic's
    # coefficients cancel in double precision)
    assert err.max() <= 1e-13, err.max()


def test_sextic_completion_in_c_runs_no_newton_along_the_sweep(stephenson1, monkeypatch):
    """The generated C along check's whole sweep (each solve continuing the
    one before): the completion solves where the primary fails, and neither
    the Newton fallback nor the Newton polish runs (before: the polish at
    1043 of 1442 solves); every result on the continuation's branch."""
    labels = []
    libs = _instrumented(monkeypatch, labels)
    r = check_mod.branch_consistency(stephenson1, stephenson1.triangular.sweep)
    counts = dict(zip(labels, (ctypes.c_long * len(labels)).in_dll(libs[0], "fmigen_probe")))
    print(counts, r["max_deviation"])
    assert r["consistent"] and not r["failures"]
    assert r["max_deviation"] <= 1e-12        # measured 3.9e-13 (the continuation's own error included)
    assert counts["Newton from the prediction"] == 0 and counts["polish"] == 0, counts
    assert counts["exact completion from the degree-6 root of s_mtheta_psi"] >= 1000, counts   # measured 1040


def test_sextic_completion_in_python_matches_newton_on_the_constraints(stephenson1):
    """The Python runtime at the representation singularity θ* ≈ 5.2726 (the
    one no sequence covered before), continuing from 1e-3 before it: the
    configuration of Newton on the original constraints to 1e-12, solved by
    the completion (instrumented: its attempt ran, the Newton fallback and
    the polish did not)."""
    dae, part = stephenson1.dae, stephenson1.partition
    tri = stephenson1.triangular
    [solved_block] = tri.blocks
    star = next(s for s in solved_block.singular_points if abs(s["at"]["theta"] - 5.2726) < 1e-3)
    theta_star = star["at"]["theta"]
    i_theta = dae.names.index("theta")
    near = tri.sweep.points[np.argmin(np.abs(np.remainder(tri.sweep.points[:, i_theta] - theta_star + math.pi,
                                                          2 * math.pi) - math.pi))].copy()

    def at(theta):
        q = near.copy()
        q[i_theta] = theta
        return _newton_on_constraints(dae, part.dependent, q)
    before, target = at(theta_star - 1e-3), at(theta_star)

    src, _, _ = pyruntime.kinematics_source(stephenson1.embedding, tri, SymbolMap(stephenson1.embedding))
    probe = {}
    lines = []
    for line in src.split("\n"):
        lines.append(line)
        m = re.search(r"(?:_attempt == \d+:|else:)  # (.*)$", line) or re.search(r":  # (polish)", line)
        if m:
            label = m.group(1).strip()
            probe.setdefault(label, 0)
            indent = len(line) - len(line.lstrip()) + 4
            lines.append(" " * indent + f"_probe[{label!r}] += 1")
    ns = {k: getattr(math, k) for k in dir(math) if not k.startswith("_")}
    ns.update({k: v for k, v in vars(pyruntime).items() if not k.startswith("__")})
    ns["_probe"] = probe
    exec("\n".join(lines), ns)   # noqa: S102 - fmigen's own generated code
    # the solution vector at θ* − 1e-3: (sin, cos) of the block's angles and
    # angle sums, in its layout's order
    from fmigen.derive.workspace import unit_scales
    from fmigen.kinematics.sweep_measures import _true_values, block_layout
    truth = _true_values(dae, solved_block, before[None, :])
    sol = [float(truth[x][0]) for _, _, vs, _ in block_layout(solved_block, unit_scales(dae)) for x in vs]
    J = dae.numeric.Phi_q(0.0, before)
    v = np.zeros(dae.n)
    v[part.independent] = target[part.independent] - before[part.independent]
    v[part.dependent] = -np.linalg.solve(J[:, part.dependent], J[:, part.independent] @ v[part.independent])
    base = {"sol": sol, "q": list(before), "v": list(v), "t": 0.0, "continuity": 1}
    q = [target[i] if i in part.independent else math.nan for i in range(dae.n)]
    assert ns["fmigen_kinematics"](1.0, q, [0.0] * max(1, len(dae.tunable_values)), base, [0.0] * len(sol)) == 0
    print(probe)
    for i in part.dependent:
        assert abs(math.remainder(q[i] - target[i], 2 * math.pi)) <= 1e-12, (dae.names[i], q[i], target[i])
    assert probe["exact completion from the degree-6 root of s_mtheta_psi"] == 1, probe
    assert probe["Newton from the prediction"] == 0 and probe["polish"] == 0, probe
