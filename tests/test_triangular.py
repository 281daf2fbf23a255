"""The Gröbner solution sequence against analytic geometry."""
import math

import numpy as np
import pytest

from fmigen.dae import build_dae
from fmigen.partition import choose_partition
from fmigen.pipeline import load_mechanism
from fmigen.triangular import assemble, triangularize


def fourbar_analytic(theta, l1=1.0, l2=4.0, l3=2.5, d=3.0, upper=True):
    """Circle intersection: coupler end B is |B−A| = l2 and |B−D| = l3."""
    A = np.array([l1 * math.cos(theta), l1 * math.sin(theta)])
    D = np.array([d, 0.0])
    dist = np.linalg.norm(D - A)
    a = (l2**2 - l3**2 + dist**2) / (2 * dist)
    h = math.sqrt(l2**2 - a**2)
    mid = A + a * (D - A) / dist
    perp = np.array([-(D - A)[1], (D - A)[0]]) / dist
    B = mid + (h if upper else -h) * perp
    return math.atan2(*(B - A)[::-1]), math.atan2(*(B - D)[::-1])


@pytest.fixture(scope="module")
def fourbar():
    dae = build_dae(load_mechanism("fourbar"))
    part = choose_partition(dae)
    return dae, triangularize(dae, part)


def test_fourbar_sequence_is_one_quadratic_then_linear(fourbar):
    _, tri = fourbar
    [block] = tri.blocks
    assert [str(s.variable) for s in block.steps] == ["s_phi", "c_phi", "s_alpha", "c_alpha"]
    assert [s.degree for s in block.steps] == [2, 1, 1, 1]


def test_start_is_assembled_exactly_from_theta(fourbar):
    _, tri = fourbar
    alpha, phi = fourbar_analytic(math.pi / 2)
    assert tri.start["alpha"] == pytest.approx(alpha, abs=1e-14)
    assert tri.start["phi"] == pytest.approx(phi, abs=1e-14)
    # the paper's rounded values only picked the branch
    assert tri.start["alpha"] == pytest.approx(0.353281, abs=1e-6)
    assert tri.start["phi"] == pytest.approx(1.26486, abs=1e-5)


@pytest.mark.parametrize("theta", np.linspace(-math.pi, math.pi, 13))
def test_branch_holds_over_a_full_crank_turn(fourbar, theta):
    dae, tri = fourbar
    q = assemble(dae, tri, {"theta": float(theta)})
    alpha, phi = fourbar_analytic(theta)
    assert math.remainder(q["alpha"] - alpha, 2 * math.pi) == pytest.approx(0, abs=1e-13)
    assert math.remainder(q["phi"] - phi, 2 * math.pi) == pytest.approx(0, abs=1e-13)


def test_sympy_fallback_without_singular_says_so_and_agrees(tmp_path):
    """With Singular off the PATH the sympy engine is used, announced on
    stderr, and gives the same solution sequence as Singular."""
    import json
    import os
    import subprocess
    import sys
    env = dict(os.environ, PATH=str(tmp_path), FMIGEN_CACHE=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "fmigen.cli", "triangularize", "fourbar", "--json", "--no-cache"]
    fallback = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert fallback.returncode == 0, fallback.stderr
    assert "Singular not found; using the sympy groebner fallback" in fallback.stderr
    singular = subprocess.run(cmd, capture_output=True, text=True)
    seq = lambda p: [(s["variable"], s["degree"]) for b in json.loads(p.stdout)["blocks"] for s in b["sequence"]]
    assert seq(fallback) == seq(singular) == [("s_phi", 2), ("c_phi", 1), ("s_alpha", 1), ("c_alpha", 1)]
