"""The README's joint-API examples are real code: each ``def build()``
block of README.md runs, and the spatial one assembles where the closed form
of its loop says (the README quotes its validation against IDA, the
Cartesian reference and MuJoCo; ``fmigen validate`` is what checks those)."""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from fmigen.build.pipeline import prepare_mechanism

README = Path(__file__).resolve().parents[1] / "README.md"


def _examples():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return {re.search(r'JointSystem\("(\w+)"', b).group(1): b for b in blocks if "def build()" in b}


def _build(name):
    namespace = {}
    exec(compile(_examples()[name], f"README.md:{name}", "exec"), namespace)
    return namespace["build"]()


def test_the_readme_has_a_planar_and_a_spatial_example():
    assert {"crank_slider", "rssr_example"} <= set(_examples())


@pytest.mark.parametrize("name", ["crank_slider", "rssr_example"])
def test_each_example_converts_and_assembles(name):
    mech = prepare_mechanism(_build(name), use_cache=False)
    assert len(mech.coordinates) - len(mech.constraints) == 1


def test_the_spatial_example_starts_on_the_hinted_branch_of_its_closed_form():
    """RSSR: A = 0.2 (cos θ, sin θ, 0), B = B0 + 0.5 (0, cos φ, sin φ) and
    |A − B| = 0.9 give a·cos φ + b·sin φ = c, two rocker angles; the hint
    (B above B0) takes the one with sin φ > 0."""
    mech = prepare_mechanism(_build("rssr_example"), use_cache=False)
    start = {c.name: float(c.start) for c in mech.coordinates}
    theta, B0 = 0.5, np.array([0.4, 0.8, 0.3])
    A = 0.2 * np.array([math.cos(theta), math.sin(theta), 0.0])
    d = B0 - A
    # |d + 0.5 (0, cos φ, sin φ)|² = 0.81  ->  d_y cos φ + d_z sin φ = 0.81 - |d|² - 0.25
    a, b, c = d[1], d[2], 0.81 - d @ d - 0.25
    r, delta = math.hypot(a, b), math.atan2(b, a)
    roots = [delta + s * math.acos(c / r) for s in (+1, -1)]
    phi = next(p for p in roots if math.sin(p) > 0)
    assert start["theta"] == pytest.approx(theta, abs=1e-15)
    assert math.remainder(start["phi"] - phi, 2 * math.pi) == pytest.approx(0.0, abs=1e-12)
