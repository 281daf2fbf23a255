"""The workspace sweep's numeric pieces (fmigen/derive/workspace.py, dae.NumericDAE)."""
import numpy as np
import sympy as sp

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
    dae = build_dae(prepare_mechanism("stewart"))
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
