"""``fmigen check`` and the build-time workspace cover, against independent
identities: where a lex sequence's coefficient vanishes is located by
bisection on the sweep and compared with the geometry that makes it vanish,
computed without the Gröbner sequences."""
import json
import math

import numpy as np
import pytest

from fmigen.verify.check import check
from fmigen.cli import main as cli_main
from fmigen.build.pipeline import load_mechanism

#: every shipped mechanism with a real assembly (stewart_66 and
#: stewart_66_platform have none for paper 001's data: check stops with "the
#: start cannot be assembled")
SHIPPED = ["fourbar", "fourbar_double_crank", "slider_crank", "slider_crank_from_slider", "stewart",
           "landing_gear", "landing_gear_dynamic", "five_link", "eight_link", "stephenson3",
           # its sweep along -z once stepped over a fold at z = -0.198 onto another
           # assembly, where the generated kinematics rightly found nothing
           # continuing the previous solve (workspace._resolved)
           "front_corner"]


def test_double_crank_singularities_are_where_l1_cos_theta_equals_d():
    """The default lex sequence of the double-crank four-bar solves c_phi
    from a linear step whose leading coefficient is ∝ l1 cos θ − d: zero at
    θ = ±arccos(d / l1), a regular configuration.  check locates both zeros
    by bisection, and the exact completion covers them (s_phi by the
    quadratic, c_phi by the circle, α by the loop equations: no other lex
    order)."""
    r = check("fourbar_double_crank")
    assert r["passed"] and r["branch_consistent"]
    assert r["branch_max_deviation"] <= 1e-12          # measured 3.7e-14
    sings = r["representation_singularities"]
    theta = sorted(s["at"]["theta"] % (2 * math.pi) for s in sings)
    expected = sorted([math.acos(1.2 / 2.5), 2 * math.pi - math.acos(1.2 / 2.5)])
    assert len(theta) == 2
    for got, want in zip(theta, expected):
        assert abs(got - want) <= 1e-9, (got, want)
    for s in sings:
        assert s["variable"] == "c_phi" and s["located"] == "bisection"
        assert s["covered_by"] == "exact completion"
    assert r["sequences"]["{alpha, phi}"] == ["c_alpha > s_alpha > c_phi > s_phi"]
    assert r["physical_singularities"] == []


def test_five_link_papers_order_singularities_are_where_a_link_is_horizontal():
    """With paper 000's order s_α ≻ c_α, s_α_k comes from a linear step whose
    leading coefficient vanishes where link k is horizontal (u_z = 0).  Each
    located z is checked with the module's own numpy pose solver (Newton on
    the five distances, no Gröbner basis): the link's direction has u_z = 0
    there."""
    mech = load_mechanism("five_link")
    mech.groebner_order = [f"{sc}_{v}{i}" for i in range(1, 6)
                           for sc, v in (("s", "alpha"), ("c", "alpha"), ("s", "beta"), ("c", "beta"))]
    r = check(mech)
    assert r["passed"]
    sings = [s for s in r["representation_singularities"] if abs(s["at"]["z"]) < 0.1]
    assert sorted(s["variable"] for s in sings) == [f"s_alpha{k}" for k in range(1, 6)]
    import mechanisms.five_link as fl
    for s in sings:
        k = int(s["variable"][-1]) - 1
        z = s["at"]["z"]
        pose = fl.solve_pose(z)
        X = fl.link_vectors(pose, z)[k]
        assert abs(X[2]) / np.linalg.norm(X) <= 1e-8, (s, X)
        assert s["covered_by"] == "exact completion"
    # in the operating range: z = -12.2, -3.0, +12.2, +23.4, +31.4 mm
    assert sorted(round(1e3 * s["at"]["z"], 1) for s in sings) == [-12.2, -3.0, 12.2, 23.4, 31.4]


@pytest.mark.parametrize("mech", SHIPPED)
def test_check_passes_on_every_shipped_mechanism(mech):
    r = check(mech)
    assert r["passed"], r["branch_failures"]
    assert r["branch_max_deviation"] <= 1e-11, r["branch_max_deviation"]


def test_landing_gear_needs_no_chosen_order():
    """landing_gear keeps the paper's order to reproduce its Table 4; the
    default order is as safe."""
    mech = load_mechanism("landing_gear")
    mech.groebner_order = None
    r = check(mech)
    assert r["passed"] and r["branch_max_deviation"] <= 1e-11


def test_cli_check_json_shape(capsys):
    assert cli_main(["check", "fourbar_double_crank", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    for key in ("representation_singularities", "physical_singularities", "branch_consistent", "passed"):
        assert key in r
    assert r["passed"] is True and len(r["representation_singularities"]) == 2


def test_cli_check_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli_main(["check", "--help"])
    assert e.value.code == 0
    assert "branch" in capsys.readouterr().out


def test_check_after_a_build_reuses_its_derivation_and_objects(tmp_path, monkeypatch, use_avx_copy):
    """``fmigen check`` after ``fmigen build`` reads the build's generated C
    from the derived-model cache (no C generation) and links the build's
    object files (no compile of model.c), and still finds the kinematics on
    the continuation's branch."""
    from fmigen.generate import codegen
    from fmigen.fmi import fmu
    from fmigen.kinematics import groebner
    from fmigen.build.pipeline import build_fmu
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    build_fmu("fourbar", tmp_path / "fourbar.fmu", windows=False, use_cache=True)
    objects = sorted((tmp_path / "cache" / "objects").iterdir())

    def no_generation(*args, **kwargs):
        raise AssertionError("check generated the C again")
    monkeypatch.setattr(codegen, "generate", no_generation)
    compiled = []
    compile_object = fmu._compile_object
    monkeypatch.setattr(fmu, "_compile_object",
                        lambda cc, flags, source, obj: compiled.append(source.name) or compile_object(cc, flags, source, obj))
    lines = []
    r = check("fourbar", use_cache=True, log=lines.append)
    assert r["passed"] and r["branch_max_deviation"] < 1e-12
    assert "[4/5] generated C from the derived-model cache" in lines
    # only the exports file and the instance layer (its variable table is
    # the check's, step 1e-3) compile; model.c's objects are the build's
    assert "model.c" not in compiled and "fmigen_model_avx.c" not in compiled
    assert "fmigen_check_exports.c" in compiled
    assert set(objects) <= set((tmp_path / "cache" / "objects").iterdir())
