"""``fmigen sweep``: one built FMU, many runs over its start values, scheduled by Dask.

    design (grids × lists × samples) -> chunks -> workers (FMI 2.0 CS through fmpy's
    ctypes wrapper) -> one row per run -> Parquet

* **What can be swept**: whatever the FMU lets an importer set before
  initialization — its parameters (masses, gravity, force amplitudes,
  ``internal_step``), its inputs (held at the value for the whole run) and
  the independent coordinates and velocities (``initial="exact"``).  A
  structural parameter (geometry) is not in the FMU at all: it is baked into
  the Gröbner basis and the generated kinematics, so every value would need a
  derivation of its own (seconds to minutes, and a different workspace whose
  singularities ``build`` re-checks).  The sweep refuses it with an error
  naming it instead of rebuilding silently; sweep geometry by building one
  FMU per value.
* **Design**: grid (``start:stop:num``, inclusive) and list (``a,b,c``)
  parameters combine as a Cartesian product; distribution parameters
  (``normal(mu,sigma)``, ``uniform(a,b)``) are drawn jointly, ``--samples``
  draws from one generator seeded by ``--seed``, and every grid point gets
  the same draws (common random numbers, so grid points differ only by the
  grid parameter).
* **Runs**: the FMU is built once (``pipeline.build_fmu``, from the
  derived-model cache when it has the mechanism).  Each worker process
  extracts it once and keeps one instance, which it ``fmi2Reset``s between
  runs: ``fmpy.simulate_fmu`` per run would unzip the FMU and parse its
  modelDescription every time, which costs more than a four-bar run itself
  (``docs/benchmarks.md``, "Parameter sweeps").  The run loop is fmpy's own
  (``simulateCS``: the same communication points ``start + k·interval``, the
  same ``setupExperiment``), so a sweep row equals a single
  ``fmpy.simulate_fmu`` run at the same values to the bit (tested).
* **Failures** are rows: an FMU that returns Discard (a singular
  configuration) or Error records that status, the FMU's logged message and
  the last successful time; the summaries cover what it computed.  A Python
  exception in a run (e.g. the shared library fails to load on a remote
  worker) is an Error row with the exception's text.  The sweep goes on.
* **Scheduling** (``--scheduler``): ``local`` (default) starts a
  ``dask.distributed.LocalCluster`` of one single-threaded worker process
  per core; ``processes`` uses Dask's multiprocessing scheduler (no cluster,
  less start-up); ``sync`` runs in this process (debugging, profiling);
  anything else is the address of a running scheduler
  (``tcp://host:port``).  Runs go out in chunks (about four per worker, at
  most 256 runs each) because one four-bar run takes milliseconds, less than
  a task's scheduling overhead.  The FMU travels as bytes (scattered once to
  every worker) so workers need no shared filesystem; ``processes`` and
  ``sync`` pass its path.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fmigen.model import ModelError
from fmigen.tools.sweep_worker import RunConfig, Sweepable, run_chunk, sweepable

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_DIST = re.compile(rf"^\s*(normal|uniform)\s*\(\s*({_NUMBER})\s*,\s*({_NUMBER})\s*\)\s*$")


@dataclass
class ParamSpec:
    """One ``--param NAME=SPEC``: ``values`` for a grid or list, ``dist``
    (kind, a, b) for a distribution."""
    name: str
    text: str
    values: list | None = None
    dist: tuple | None = None


def parse_param(arg: str) -> ParamSpec:
    """``NAME=start:stop:num`` | ``NAME=a,b,c`` | ``NAME=normal(mu,sigma)`` |
    ``NAME=uniform(a,b)``."""
    name, sep, spec = arg.partition("=")
    name, spec = name.strip(), spec.strip()
    if not sep or not name or not spec:
        raise ModelError(f"--param {arg!r}: write NAME=SPEC, SPEC a grid start:stop:num, a list a,b,c, "
                         "normal(mu,sigma) or uniform(a,b)")
    m = _DIST.match(spec)
    if m:
        kind, a, b = m.group(1), float(m.group(2)), float(m.group(3))
        if kind == "normal" and not b > 0:
            raise ModelError(f"--param {name}: normal(mu, sigma) needs sigma > 0 (got {b:g})")
        if kind == "uniform" and not b > a:
            raise ModelError(f"--param {name}: uniform(a, b) needs a < b (got {a:g}, {b:g})")
        return ParamSpec(name, spec, dist=(kind, a, b))
    try:
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) != 3:
                raise ValueError
            start, stop, num = float(parts[0]), float(parts[1]), int(parts[2])
            if num < 1:
                raise ModelError(f"--param {name}={spec}: a grid needs num >= 1")
            values = np.linspace(start, stop, num).tolist()
        else:
            values = [float(v) for v in spec.split(",") if v.strip()]
    except ValueError:
        raise ModelError(f"--param {name}={spec}: not a grid start:stop:num (num an integer), a list of "
                         "numbers a,b,c, normal(mu,sigma) or uniform(a,b)") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise ModelError(f"--param {name}={spec}: needs finite numbers")
    return ParamSpec(name, spec, values=values)


def design(specs: list[ParamSpec], samples=None, seed=None) -> list[dict]:
    """The runs: the Cartesian product of the grid/list values, each point
    combined with the same ``samples`` joint draws of the distributions."""
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ModelError(f"--param given twice for {', '.join(dup)}")
    grid = [s for s in specs if s.values is not None]
    dists = [s for s in specs if s.dist is not None]
    if dists and not samples:
        raise ModelError(f"{', '.join(s.name for s in dists)}: a distribution needs --samples N")
    if samples and not dists:
        raise ModelError("--samples applies to distribution parameters (normal(...), uniform(...)); "
                         "every --param here is a grid or a list")
    draws = [{}]
    if dists:
        if samples < 1:
            raise ModelError(f"--samples must be >= 1 (got {samples})")
        rng = np.random.default_rng(seed)
        columns = {}
        for s in dists:
            kind, a, b = s.dist
            columns[s.name] = rng.normal(a, b, samples) if kind == "normal" else rng.uniform(a, b, samples)
        draws = [{n: float(c[k]) for n, c in columns.items()} for k in range(samples)]
    runs = []
    for point in itertools.product(*[s.values for s in grid]):
        for d in draws:
            runs.append({**dict(zip([s.name for s in grid], point)), **d})
    return runs


def check_names(names, sw: Sweepable, mechanism=None):
    """Every swept name must be settable; a structural parameter or a
    dependent coordinate gets an error saying why it is not."""
    structural = {p.name for p in (mechanism.parameters if mechanism is not None else []) if not p.tunable}
    for n in names:
        if n in sw.settable:
            continue
        if n in structural:
            raise ModelError(
                f"'{n}' is a structural parameter of '{mechanism.name}' (geometry): its value is baked into "
                "the Gröbner basis and the generated kinematics, so each value needs its own build. "
                "fmigen sweep does not rebuild per value; build one FMU per value of it instead. "
                f"Sweepable: {', '.join(sw.settable)}")
        if n in sw.other:
            causality, initial = sw.other[n]
            why = ("a dependent coordinate or velocity, assembled from the independent ones"
                   if initial == "calculated" else f"causality {causality}")
            raise ModelError(f"'{n}' cannot be set before initialization ({why}). "
                             f"Sweepable: {', '.join(sw.settable)}")
        raise ModelError(f"the FMU has no variable '{n}'. Sweepable: {', '.join(sw.settable)}")


# ---------------------------------------------------------------- client side

@dataclass
class SweepResult:
    rows: list                 # one dict per run, in run order
    parameters: list           # swept names
    outputs: list
    seconds: float             # wall time of the runs (scheduling included, build excluded)
    scheduler: str
    workers: int
    build_seconds: float = 0.0
    fmu: str = ""
    trajectories: dict = field(default_factory=dict, repr=False)   # run -> (times, data)

    @property
    def counts(self) -> dict:
        out = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    @property
    def runs_per_second(self) -> float:
        return len(self.rows) / self.seconds if self.seconds > 0 else math.inf

    def table(self):
        """The rows as a pyarrow Table: run, the parameters, the summaries,
        status, message, t_end, wall_s."""
        import pyarrow as pa
        cols = {"run": [r["run"] for r in self.rows]}
        for p in self.parameters:
            cols[p] = [r["params"].get(p) for r in self.rows]
        for o in self.outputs:
            for s in ("final", "min", "max"):
                cols[f"{o}.{s}"] = [r.get(f"{o}.{s}", math.nan) for r in self.rows]
        cols["status"] = [r["status"] for r in self.rows]
        cols["message"] = [r["message"] for r in self.rows]
        cols["t_end"] = [r["t_end"] for r in self.rows]
        cols["wall_s"] = [r["wall_s"] for r in self.rows]
        types = {"run": pa.int64(), "status": pa.string(), "message": pa.string()}
        return pa.table({k: pa.array(v, type=types.get(k, pa.float64())) for k, v in cols.items()})

    def write_parquet(self, path):
        import pyarrow.parquet as pq
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(self.table(), str(path))

    def write_trajectories(self, root):
        """A Parquet dataset partitioned by run (``root/run=K/...``): time
        and the output variables at every communication point."""
        import pyarrow as pa
        import pyarrow.parquet as pq
        Path(root).mkdir(parents=True, exist_ok=True)
        tables = []
        for k in sorted(self.trajectories):
            t, data = self.trajectories[k]
            cols = {"run": pa.array(np.full(len(t), k), pa.int64()), "time": pa.array(t)}
            for j, o in enumerate(self.outputs):
                cols[o] = pa.array(data[:, j])
            tables.append(pa.table(cols))
        if tables:
            pq.write_to_dataset(pa.concat_tables(tables), str(root), partition_cols=["run"])


def _chunks(runs, workers, max_chunk=256):
    size = max(1, min(max_chunk, math.ceil(len(runs) / max(1, 4 * workers))))
    indexed = list(enumerate(runs))
    return [indexed[i:i + size] for i in range(0, len(indexed), size)]


def run_sweep(fmu_path, runs: list[dict], stop_time=None, output_interval=None, outputs=None,
              scheduler="local", workers=None, trajectories=False, mechanism=None, log=None,
              progress=None) -> SweepResult:
    """Simulate ``fmu_path`` (FMI 2.0 CS) once per entry of ``runs`` ({name:
    start value}).  ``scheduler``: "local" | "processes" | "sync" | an
    address | a ``distributed.Client``.  ``workers``: processes of the local
    pool (default: the cores).  ``mechanism``: for naming structural
    parameters in errors.  ``progress``: a ``progress.Bar``-like
    ``update(done, failed)`` target (default: plain lines to ``log``)."""
    import fmpy
    from fmigen.build.progress import Bar
    log = log or (lambda msg: None)
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as e:
        raise ModelError(f"fmigen sweep needs dask[distributed] and pyarrow ({e}): pip install 'fmigen[sweep]'") \
            from None
    md = fmpy.read_model_description(str(fmu_path))
    if md.coSimulation is None:
        raise ModelError(f"{fmu_path} is not a Co-Simulation FMU; fmigen sweep runs FMI 2.0 CS")
    if md.fmiVersion != "2.0":
        raise ModelError(f"{fmu_path} is FMI {md.fmiVersion}; fmigen sweep runs FMI 2.0 CS")
    sw = sweepable(md)
    names = list(dict.fromkeys(n for r in runs for n in r))
    check_names(names, sw, mechanism)
    outputs = list(outputs) if outputs else list(sw.outputs)
    missing = [o for o in outputs if o not in sw.outputs]
    if missing:
        raise ModelError(f"--outputs: the FMU has no output {', '.join(missing)} (outputs: {', '.join(sw.outputs)})")
    stop_time = stop_time if stop_time is not None else (sw.default_stop or 1.0)
    if output_interval is None:
        # validate's default: 10 ms rounded to a multiple of the internal step
        h = sw.default_step or 1e-3
        output_interval = max(h, round(0.01 / h) * h)
    if not (stop_time > 0 and output_interval > 0):
        raise ModelError("--stop-time and --output-interval must be > 0")
    cfg = RunConfig(float(stop_time), float(output_interval), outputs, trajectories)
    workers = workers or os.cpu_count() or 1
    chunks = _chunks(runs, 1 if scheduler == "sync" else workers)
    bar = progress or Bar(log, len(runs), "sweep")
    results = []
    t0 = time.perf_counter()
    if scheduler in ("sync", "processes"):
        results, used = _run_local(fmu_path, chunks, cfg, scheduler, workers, bar)
    else:
        results, used = _run_distributed(fmu_path, chunks, cfg, scheduler, workers, bar, log)
    seconds = time.perf_counter() - t0
    bar.close()
    rows = sorted((r for chunk in results for r in chunk), key=lambda r: r["run"])
    traj = {r["run"]: r.pop("_trajectory") for r in rows if "_trajectory" in r}
    return SweepResult(rows, names, outputs, seconds, scheduler if isinstance(scheduler, str) else "client",
                       used, fmu=str(fmu_path), trajectories=traj)


def _failed(rows):
    return sum(r["status"] != "OK" for r in rows)


def _run_local(fmu_path, chunks, cfg, scheduler, workers, bar):
    """Dask's local schedulers: the multiprocessing pool or this process.
    Progress from the scheduler callbacks, which run in this process."""
    import dask
    from dask.callbacks import Callback
    done = {"runs": 0, "failed": 0}

    class Count(Callback):
        def _posttask(self, key, result, dsk, state, worker_id):
            if isinstance(result, list) and result and isinstance(result[0], dict) and "status" in result[0]:
                done["runs"] += len(result)
                done["failed"] += _failed(result)
                bar.update(done["runs"], done["failed"])

    path = str(Path(fmu_path).resolve())
    tasks = [dask.delayed(run_chunk, pure=False)(path, c, cfg) for c in chunks]
    kw = {"scheduler": "sync"} if scheduler == "sync" else {"scheduler": "processes", "num_workers": workers}
    with Count():
        results = dask.compute(*tasks, **kw)
    return list(results), (1 if scheduler == "sync" else workers)


def _run_distributed(fmu_path, chunks, cfg, scheduler, workers, bar, log):
    """A dask.distributed cluster: a LocalCluster of ``workers`` single-
    threaded processes ("local"), a scheduler address or a Client.  The FMU
    goes to every worker once as bytes (``scatter(broadcast=True)``)."""
    from distributed import Client, LocalCluster, as_completed
    cluster = client = None
    own = False
    if not isinstance(scheduler, str):
        client = scheduler
    elif scheduler == "local":
        log(f"starting a local Dask cluster: {workers} worker process(es), 1 thread each")
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
        own = True
    else:
        if not re.match(r"^[a-z]+://", scheduler):
            raise ModelError(f"--scheduler {scheduler!r}: use local, processes, sync or a scheduler address "
                             "such as tcp://host:8786")
        try:
            client = Client(scheduler, timeout=30)
        except (OSError, TimeoutError) as e:
            raise ModelError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({e})") from None
        own = True
    try:
        blob = Path(fmu_path).read_bytes()
        fmu = client.scatter((hashlib.sha256(blob).hexdigest(), blob), broadcast=True)
        used = len(client.scheduler_info()["workers"]) or workers
        futures = {client.submit(run_chunk, fmu, c, cfg, pure=False): c for c in chunks}
        results, runs, failed = [], 0, 0
        for fut in as_completed(futures):
            try:
                rows = fut.result()
            except Exception as e:   # noqa: BLE001 - e.g. KilledWorker: an FMU crashed its process
                msg = f"the chunk's task failed: {type(e).__name__}: {e}"
                rows = [{"run": k, "params": v, "status": "Error", "message": msg, "t_end": None,
                         "wall_s": 0.0} for k, v in futures[fut]]
            results.append(rows)
            runs += len(rows)
            failed += _failed(rows)
            bar.update(runs, failed)
        return results, used
    finally:
        if own:
            client.close()
        if cluster is not None:
            cluster.close()


def structural_names(mechanism) -> set:
    return {p.name for p in mechanism.parameters if not p.tunable}


def sweep(spec, params: list[str], stop_time=None, output_interval=None, outputs=None, samples=None, seed=None,
          scheduler="local", workers=None, trajectories=False, fmu=None, solver="rk4", step=1e-3,
          use_cache=True, log=None, progress=None, fmu_dir=None) -> SweepResult:
    """``fmigen sweep``: parse the ``--param`` specs, build the mechanism's
    FMI 2.0 CS FMU once (or take ``fmu``), run the design.  ``fmu_dir``:
    where to keep the built FMU (default a temporary directory, removed)."""
    from fmigen.build.pipeline import build_fmu, load_mechanism
    log = log or (lambda msg: None)
    specs = [parse_param(p) for p in params]
    if not specs:
        raise ModelError("give at least one --param NAME=SPEC")
    runs = design(specs, samples, seed)
    mech = load_mechanism(spec, use_cache)
    # before the build (seconds): a structural parameter cannot be swept at all
    for s in specs:
        if s.name in structural_names(mech):
            check_names([s.name], Sweepable({}, {}, {}, None, None), mech)
    if mech.kinematic:
        raise ModelError(f"'{mech.name}' is a kinematic FMU (its independent coordinates are inputs driven "
                         "over time); fmigen sweep runs dynamic models from start values")
    with tempfile.TemporaryDirectory() as tmp:
        build_seconds = 0.0
        if fmu is None:
            t0 = time.perf_counter()
            out = Path(fmu_dir or tmp) / f"{mech.name}.fmu"
            fmu, _ = build_fmu(spec, out, solver=solver, step=step, use_cache=use_cache, reuse=use_cache, log=log)
            build_seconds = time.perf_counter() - t0
        elif not Path(fmu).exists():
            raise ModelError(f"no FMU at {fmu}")
        log(f"sweeping {len(runs)} run(s) of {Path(fmu).name} over {', '.join(s.name for s in specs)}")
        result = run_sweep(fmu, runs, stop_time=stop_time, output_interval=output_interval, outputs=outputs,
                           scheduler=scheduler, workers=workers, trajectories=trajectories, mechanism=mech,
                           log=log, progress=progress)
    result.build_seconds = build_seconds
    return result


def add_parser(sub):
    """The ``sweep`` verb of the CLI (fmigen/cli.py calls this)."""
    import argparse
    import json
    import sys

    from fmigen.build.arguments import positive
    p = sub.add_parser(
        "sweep", help="simulate the FMU over a grid or a sample of parameters and inputs (Dask), to Parquet",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build the mechanism's FMI 2.0 CS FMU once (from the derived-model cache when it has it) and "
                    "simulate it for every combination of --param values, in parallel with Dask.  One Parquet "
                    "row per run: the swept values, final/min/max of each output, status (OK, Discard, Error), "
                    "the FMU's message, the last successful time and the run's wall time.  A failed run is a row; "
                    "the sweep goes on.  Exit status 0 when the sweep completed, whatever the runs' status.",
        epilog="SPEC: start:stop:num (grid, inclusive), a,b,c (list), normal(mu,sigma) or uniform(a,b) (with "
               "--samples).\nGrids and lists combine as a Cartesian product; distributions are drawn jointly, "
               "the same draws at every grid point.\nSweepable: parameters (masses, gravity, internal_step), "
               "inputs (held constant) and the independent coordinates and velocities (start values).\n"
               "Structural parameters (geometry) are refused: each value needs its own build.\n\n"
               "example: fmigen sweep fourbar --param tau=0:12:25 --param m2=normal(1,0.05) --samples 8 "
               "-o tau.parquet")
    p.add_argument("mechanism", help="mechanism module: a path (mechanisms/fourbar.py) or a bare name (fourbar)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=SPEC", required=True,
                   help="a swept variable and its values (repeat for several)")
    p.add_argument("--stop-time", type=positive, default=None, help="simulated time in s (default: the FMU's "
                                                                 "DefaultExperiment stopTime, 2 s for fmigen FMUs)")
    p.add_argument("--output-interval", type=positive, default=None,
                   help="communication step over which min/max are taken (default: 10 ms rounded to a multiple "
                        "of the internal step)")
    p.add_argument("--outputs", help="comma-separated output variables to summarize (default: every output)")
    p.add_argument("--samples", type=int, default=None, help="draws of the distribution parameters")
    p.add_argument("--seed", type=int, default=None, help="seed of the draws (default: fresh entropy)")
    p.add_argument("--scheduler", default="local",
                   help="local: a Dask LocalCluster, one single-threaded worker process per core (default); "
                        "processes: Dask's multiprocessing scheduler; sync: this process; or the address of "
                        "a running Dask scheduler, e.g. tcp://host:8786 (the FMU is shipped to its workers)")
    p.add_argument("--workers", type=int, default=None, help="worker processes of local|processes (default: the cores)")
    p.add_argument("-o", "--output", default=None, help="Parquet file to write (default: <mechanism>_sweep.parquet)")
    p.add_argument("--trajectories", metavar="DIR",
                   help="also write every run's trajectories as a Parquet dataset partitioned by run (DIR/run=K/)")
    p.add_argument("--fmu", help="sweep this FMI 2.0 CS FMU (built earlier by fmigen build) instead of building one")
    p.add_argument("--solver", choices=["euler", "symplectic", "rk4"], default="rk4",
                   help="integrator of the built FMU (default rk4)")
    p.add_argument("--step", type=positive, default=1e-3, help="internal step of the built FMU (default 1e-3)")
    p.add_argument("--no-cache", action="store_true", help="derive the model again instead of using the cache")
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout (progress stays on stderr)")

    def run(args):
        from fmigen.build.pipeline import load_mechanism
        log = args.progress
        result = sweep(args.mechanism, args.param, stop_time=args.stop_time, output_interval=args.output_interval,
                       outputs=[o.strip() for o in args.outputs.split(",") if o.strip()] if args.outputs else None,
                       samples=args.samples, seed=args.seed, scheduler=args.scheduler, workers=args.workers,
                       trajectories=bool(args.trajectories), fmu=args.fmu, solver=args.solver, step=args.step,
                       use_cache=not args.no_cache, log=log)
        out = args.output or f"{load_mechanism(args.mechanism, not args.no_cache).name}_sweep.parquet"
        result.write_parquet(out)
        if args.trajectories:
            result.write_trajectories(args.trajectories)
        info = {"parquet": str(out), "runs": len(result.rows), "status": result.counts,
                "parameters": result.parameters, "outputs": result.outputs,
                "seconds": round(result.seconds, 3), "runs_per_second": round(result.runs_per_second, 2),
                "build_seconds": round(result.build_seconds, 3), "scheduler": result.scheduler,
                "workers": result.workers}
        if args.trajectories:
            info["trajectories"] = str(args.trajectories)
        if args.json:
            print(json.dumps(info))
        else:
            counts = ", ".join(f"{n} {s}" for s, n in sorted(result.counts.items()))
            print(f"wrote {out}: {len(result.rows)} runs ({counts}) in {result.seconds:.2f} s, "
                  f"{result.runs_per_second:.1f} runs/s on {result.workers} worker(s) ({result.scheduler})",
                  file=sys.stdout)
        return 0

    p.set_defaults(func=run)
