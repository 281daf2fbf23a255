"""fmigen sweep: the design, the refusals, and real sweeps on a Dask
LocalCluster (2 worker processes, 1 thread each) checked against physics and
single fmpy runs."""

import json
import math

import fmpy
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import toggle_fourbar

from fmigen.tools import sweep
from fmigen.cli import main
from fmigen.model import ModelError
from fmigen.build.pipeline import build_fmu

distributed = pytest.importorskip("distributed")


def test_param_specs_and_design():
    grid = sweep.parse_param("tau=0:12:4")
    assert grid.values == [0.0, 4.0, 8.0, 12.0]
    assert sweep.parse_param("g=9.8,1.62").values == [9.8, 1.62]
    assert sweep.parse_param("m2=normal(1, 0.05)").dist == ("normal", 1.0, 0.05)
    runs = sweep.design([grid, sweep.parse_param("g=9.8,1.62")])
    assert len(runs) == 8 and {"tau": 4.0, "g": 1.62} in runs
    # distributions: joint draws, reproducible by seed, the same at every grid point
    specs = [sweep.parse_param("tau=1,2"), sweep.parse_param("m1=uniform(0.5,1.5)"),
             sweep.parse_param("m2=normal(1,0.1)")]
    a, b = sweep.design(specs, samples=5, seed=7), sweep.design(specs, samples=5, seed=7)
    assert a == b and len(a) == 10
    assert [r["m1"] for r in a[:5]] == [r["m1"] for r in a[5:]]
    assert all(0.5 <= r["m1"] <= 1.5 for r in a)
    for bad in ["tau", "tau=1:2", "tau=1:2:0", "tau=a,b", "m=normal(1,-1)", "m=uniform(2,1)"]:
        with pytest.raises(ModelError, match="--param"):
            sweep.design([sweep.parse_param(bad)])
    with pytest.raises(ModelError, match="--samples"):
        sweep.design([sweep.parse_param("m1=uniform(0,1)")])
    with pytest.raises(ModelError, match="given twice"):
        sweep.design([grid, grid])


def test_structural_and_dependent_names_are_refused(fourbar_fmu):
    # geometry: refused before any build, naming the parameter and why
    with pytest.raises(ModelError, match=r"'l1' is a structural parameter.*Gröbner basis.*own build"):
        sweep.sweep("fourbar", ["l1=1,1.1"], scheduler="sync")
    path, _ = fourbar_fmu
    with pytest.raises(ModelError, match="'alpha' cannot be set.*dependent coordinate"):
        sweep.run_sweep(path, [{"alpha": 0.3}], scheduler="sync")
    with pytest.raises(ModelError, match="no variable 'nonesuch'.*Sweepable: theta"):
        sweep.run_sweep(path, [{"nonesuch": 1.0}], scheduler="sync")


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            Client(c) as client:
        yield c, client


def test_tau_sweep_on_a_local_cluster_matches_single_fmpy_runs(fourbar_fmu, cluster, tmp_path):
    """More crank torque, further crank: the final crank angle rises
    monotonically with tau (measured -4.0 rad at 0 N·m, gravity swinging it
    back, to 18.9 rad at 12 N·m, over 2 s), and every
    row equals fmpy.simulate_fmu at the same value (same binary, same
    communication points: to the bit)."""
    path, _ = fourbar_fmu
    _, client = cluster
    taus = np.linspace(0.0, 12.0, 6)
    result = sweep.run_sweep(path, [{"tau": t} for t in taus], stop_time=2.0, scheduler=client,
                             outputs=["theta", "phi", "constraint_residual"], trajectories=True)
    assert result.workers == 2 and result.counts == {"OK": 6}
    final = np.array([r["theta.final"] for r in result.rows])
    assert np.all(np.diff(final) > 0.1), final
    assert final[-1] > final[0] + 10
    for r in result.rows:
        assert r["t_end"] == 2.0 and r["constraint_residual.max"] <= 1e-12
    for k in (0, 5):
        single = fmpy.simulate_fmu(str(path), stop_time=2.0, output_interval=0.01,
                                   start_values={"tau": float(taus[k])}, output=["theta", "phi"])
        row = result.rows[k]
        assert row["theta.final"] == single["theta"][-1]
        assert row["phi.max"] == single["phi"].max() and row["phi.min"] == single["phi"].min()
        t, data = result.trajectories[k]
        assert np.array_equal(t, single["time"]) and np.array_equal(data[:, 0], single["theta"])
    # Parquet: one row per run; trajectories partitioned by run
    result.write_parquet(tmp_path / "tau.parquet")
    table = pq.read_table(tmp_path / "tau.parquet").to_pydict()
    assert table["tau"] == list(taus) and table["theta.final"] == list(final)
    assert table["status"] == ["OK"] * 6 and all(w > 0 for w in table["wall_s"])
    result.write_trajectories(tmp_path / "traj")
    traj = pq.read_table(tmp_path / "traj" / "run=3").to_pydict()
    assert len(traj["time"]) == 201 and traj["theta"][-1] == final[3]


def test_failing_runs_are_recorded_and_the_sweep_completes(fmu_dir, cluster):
    """The non-Grashof four-bar (conftest.toggle_fourbar) Discards at its limit
    angle θ = arccos(-29/48) ≈ 2.2195 within 0.6 s for tau = 25 and 50 N·m
    (measured: at t = 0.5685 and 0.4345), not for 1, 6 or 20; the sweep,
    through the scheduler's address as --scheduler tcp://... passes it,
    records those with the FMU's message (the limit position, a step before
    the block {alpha, phi} turns singular) and completes the others."""
    c, _ = cluster
    path, _ = build_fmu(toggle_fourbar(), fmu_dir / "toggle.fmu", reuse=True)
    taus = [1.0, 6.0, 20.0, 25.0, 50.0]
    result = sweep.run_sweep(path, [{"tau": t} for t in taus], stop_time=0.6, scheduler=c.scheduler_address,
                             outputs=["theta"])
    status = [r["status"] for r in result.rows]
    assert status == ["OK", "OK", "OK", "Discard", "Discard"]
    limit = math.acos(-29 / 48)
    for r in result.rows[:3]:
        assert r["t_end"] == 0.6 and r["message"] == ""
    for r in result.rows[3:]:
        assert r["message"].startswith("limit position at t=") and "(theta=" in r["message"]
        assert 0.3 < r["t_end"] < 0.6
        assert r["theta.max"] <= limit and r["theta.max"] > limit - 0.01


def test_cli_sweep_json_parquet_and_trajectories(fourbar_fmu, tmp_path, capsys):
    out = tmp_path / "s.parquet"
    code = main(["sweep", "fourbar", "--param", "tau=4,8", "--param", "g=9.8,1.62", "--stop-time", "0.5",
                 "--outputs", "theta", "--scheduler", "sync", "-o", str(out), "--trajectories",
                 str(tmp_path / "traj"), "--json"])
    assert code == 0
    info = json.loads(capsys.readouterr().out)
    assert info["runs"] == 4 and info["status"] == {"OK": 4} and info["parameters"] == ["tau", "g"]
    table = pq.read_table(out).to_pydict()
    # less gravity on the same torque: the crank gets further (the rocker's weight resists it)
    by = {(t, g): th for t, g, th in zip(table["tau"], table["g"], table["theta.final"])}
    assert by[(8.0, 9.8)] > by[(4.0, 9.8)] and by[(4.0, 1.62)] > by[(4.0, 9.8)]
    assert sorted(p.name for p in (tmp_path / "traj").iterdir()) == ["run=0", "run=1", "run=2", "run=3"]
