"""The workspace sweep's numeric pieces (fmigen/derive/workspace.py, dae.NumericDAE)."""
import numpy as np
import pytest
import sympy as sp

from fmigen.build.derived import dae_of
from fmigen.derive.dae import build_dae
from fmigen.model import t
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import prepare_mechanism
from fmigen.derive.workspace import MAX_PATHS, sweep
from mechanisms import ladder


def test_sparse_phi_q_is_the_dense_jacobian():
    """NumericDAE.Phi_q evaluates only Φ_q's structural non-zeros and
    scatters them; the dense Jacobian lambdified as a whole must agree at
    any configuration (the Stewart platform: spatial, 24 coordinates)."""
    dae = dae_of(prepare_mechanism("stewart"))      # the DAE a build derives, from the DAE cache
    dense = sp.lambdify([t, *dae.q_sym], dae.Phi_q, "numpy")
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = rng.uniform(-1.5, 1.5, dae.n)
        got = dae.numeric.Phi_q(0.2, q)
        want = np.array(dense(0.2, *q), dtype=float)
        assert got.shape == (dae.m, dae.n)
        assert np.count_nonzero(want) > dae.m       # a real matrix, not mostly zero rows
        np.testing.assert_array_equal(got == 0, want == 0)
        assert np.abs(got - want).max() <= 1e-14 * np.abs(want).max()


def test_many_independent_coordinates_sweep_random_directions_moving_every_cell():
    """Beyond 16 independent coordinates the sweep takes MAX_PATHS random
    directions (both ways) instead of 2f + 4 paths: each path moves every
    independent coordinate, so every cell's block is exercised on every
    path, as far as the largest component goes (1 rad, the axes' reach)."""
    mech = prepare_mechanism(ladder.build(cells=17, rungs="planar"))
    dae = build_dae(mech)
    part = choose_partition(dae)
    f = len(part.independent)
    assert 2 * f + 4 > MAX_PATHS
    start = {c.name: c.start for c in mech.coordinates}
    sw = sweep(dae, part, start, points_per_path=4)
    assert len(sw.paths) == MAX_PATHS
    q0 = sw.points[0][part.independent]
    stopped = {s["path"] for s in sw.physical}
    assert len(stopped) < MAX_PATHS // 2
    for k, path in enumerate(sw.paths):
        moved = np.abs(sw.points[path[-1]][part.independent] - q0)
        assert np.all(moved > 0)
        assert moved.max() <= 1.0 + 1e-12
        if k not in stopped:
            # the whole way (a step the Newton correction failed is halved
            # and retried, so a path may take more than 4 steps)
            assert len(path) >= 5
            np.testing.assert_allclose(moved.max(), 1.0, rtol=1e-12)
    # the points are assemblies: Φ = 0 at round-off
    assert max(np.abs(dae.numeric.Phi(0.0, p)).max() for p in sw.points) < 1e-12


def slider_from_design_pose(independent="x", torque=0.0, newton=False):
    """A slider-crank written as a joint description usually is: the hard
    points as numbers (crank 0.3 m about the origin at θ = 90°, rod 0.5 m, the
    slider on the x axis at its design position C = (0.4, 0)), the slider's
    coordinate measured from that position (start 0).  No coordinate or
    parameter of unit m has a size: the bodies' extent is the slider's
    distance from the origin, 0.4 m.  ``newton``: the loop's block is
    solved by Newton (as a block too large for a Gröbner basis is), whose
    continuity check covers every coordinate of the block."""
    import math

    from fmigen.joints import X, JointSystem
    s = JointSystem("slider_from_design_pose")
    crank = s.body("crank", 0.3, (0, 0, 0.3 * 0.09 / 12), com=(0.15, 0))
    rod = s.body("rod", 0.5, (0, 0, 0.5 * 0.25 / 12), com=(0.25, 0))
    slider = s.body("slider", 1.0, (0, 0, 1e-3))
    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 2)
    s.revolute("B", crank.marker("A", (0.3, 0)), rod.origin, start=math.atan2(-0.3, 0.4) - math.pi / 2)
    s.prismatic("x", s.ground.marker("guide", (0.4, 0)), slider.origin, axis=X, start=0.0)
    s.revolute("C", rod.marker("C", (0.5, 0)), slider.origin)
    s.branch_hint(slider.origin, crank.markers["A"], X, +1)
    s.gravity = (0, -9.81, 0)
    if torque:
        s.joint_force("theta", torque)
    if newton:
        s.newton_blocks = [["B", "x"]]
    s.independent = [independent]
    s.dof = 1
    return s


def test_a_length_with_no_stated_size_is_scaled_by_the_bodies_extent():
    """A length unit whose starts and parameters are all zero takes the
    bodies' extent as its scale, not the 1e-6 floor: with that floor the
    sweep of an independent slider moved it a micrometre each way and found
    nothing, and every continuity tolerance of a dependent one was a
    micrometre (the McPherson strut's FMU stopped at its first step).  Here
    the sweep drives the slider (scale 0.4 m, as far as 0.4 m each way) and
    must stop at both dead centres of the crank, where the rod lines up with
    it: C at r + l = 0.8 (x = +0.4) and at l − r = 0.2 (x = −0.2)."""
    from fmigen.derive.workspace import unit_scales
    mech = prepare_mechanism(slider_from_design_pose())
    dae = build_dae(mech)
    x = dae.names.index("x")
    assert unit_scales(dae)[x] == pytest.approx(0.4, rel=1e-12)
    part = choose_partition(dae)
    assert [dae.names[i] for i in part.independent] == ["x"]
    sw = sweep(dae, part, {c.name: c.start for c in mech.coordinates})
    ends = sorted(p["at"]["x"] for p in sw.physical)
    assert len(ends) == 2
    # each path stops at the last point before its dead centre (steps of
    # 0.4/720 m, halved up to four times before giving up)
    assert ends[0] == pytest.approx(-0.2, abs=2e-3)
    assert ends[1] == pytest.approx(0.4, abs=2e-3)
