"""The exact completion of a lex sequence (``triangular.Completion``): where
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
    # and no other lex order was computed for it
    [tb] = tri.blocks
    assert tb.completion is not None and not tb.alternatives


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
        return pyruntime.quadratic_near(a2, a1, a0, pred)

    def lu_factor(n, A, piv):
        calls["lu"] += 1
        return pyruntime.lu_factor(n, A, piv)
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
    circle) covers every such swept configuration, so no other lex order is
    computed for those blocks."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.triangular import triangularize
    mech = load_mechanism("five_link")
    mech.groebner_order = [f"{sc}_{v}{i}" for i in range(1, 6)
                           for sc, v in (("s", "alpha"), ("c", "alpha"), ("s", "beta"), ("c", "beta"))]
    dae = build_dae(prepare_mechanism(mech))
    tri = triangularize(dae, choose_partition(dae))
    degenerate = [tb for tb in tri.blocks if tb.singular_points]
    assert len(degenerate) == 5
    for tb in degenerate:
        assert tb.completion is not None and not tb.alternatives
        assert all(s["covered_by"] == "exact completion" for s in tb.singular_points)
