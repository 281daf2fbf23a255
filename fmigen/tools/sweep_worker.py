"""The worker side of ``fmigen sweep`` (fmigen/tools/sweep.py): run chunks of
simulations of one FMU in this process.

A module of its own so that a worker process imports numpy and fmpy only:
``fmigen.tools.sweep`` imports ``fmigen.model`` (sympy, 1.1 s per process here),
which every freshly spawned worker would pay before its first run.  Errors
are rows, never exceptions (see ``Runner.run``).
"""

from __future__ import annotations

import atexit
import math
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class Sweepable:
    """What an FMU lets a sweep set, from its modelDescription."""
    #: name -> value reference of every Real settable before initialization
    settable: dict
    #: name -> value reference of every Real output
    outputs: dict
    #: name -> (causality, initial) of every other variable, for the error message
    other: dict
    default_stop: float | None
    default_step: float | None


def sweepable(model_description) -> Sweepable:
    settable, outputs, other = {}, {}, {}
    for v in model_description.modelVariables:
        if v.type != "Real":
            continue
        # parameters and inputs are settable before initialization; so are
        # outputs with initial="exact" (the independent coordinates and
        # velocities); a dependent coordinate (initial="calculated") is not
        if v.causality in ("parameter", "input") or (v.causality == "output" and v.initial == "exact"):
            settable[v.name] = v.valueReference
        else:
            other[v.name] = (v.causality, v.initial)
        if v.causality == "output":
            outputs[v.name] = v.valueReference
    de = model_description.defaultExperiment
    # fmpy keeps the DefaultExperiment attributes as the XML's strings
    num = (lambda x: float(x) if x not in (None, "") else None)
    return Sweepable(settable, outputs, other, num(de.stopTime) if de else None, num(de.stepSize) if de else None)


@dataclass
class RunConfig:
    stop_time: float
    output_interval: float
    outputs: list            # names
    trajectories: bool = False

#: every logger handed to fmpy's logging proxy (see ``_make_callbacks``)
_LOGGERS_KEPT_ALIVE: list = []


class Runner:
    """One extracted FMU and one FMI 2.0 Co-Simulation instance, reused for
    every run of this process (``fmi2Reset`` between runs)."""

    def __init__(self, fmu_path):
        import fmpy
        from fmpy.fmi2 import FMU2Slave
        self.dir = tempfile.mkdtemp(prefix="fmigen-sweep-")
        atexit.register(shutil.rmtree, self.dir, ignore_errors=True)
        fmpy.extract(str(fmu_path), self.dir)
        self.md = fmpy.read_model_description(self.dir)
        if self.md.coSimulation is None:
            raise RuntimeError(f"{fmu_path} is not a Co-Simulation FMU; fmigen sweep runs FMI 2.0 CS")
        self.sw = sweepable(self.md)
        self.messages = []
        self._callbacks = self._make_callbacks()
        self._slave_cls = FMU2Slave
        self.fmu = None

    def _make_callbacks(self):
        from fmpy import calloc, free
        from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE,
                               fmi2CallbackFunctions, fmi2CallbackLoggerTYPE)

        def logger(env, instance, status, category, message):
            # every message of the current run; the failing call's is kept in the row
            self.messages.append((status, (message or b"").decode("utf-8", "replace")))

        cb = fmi2CallbackFunctions()
        # the ctypes function objects must outlive the instance, and the
        # logger the process: fmpy's native logging proxy keeps a global
        # pointer to the last logger it was given, and the next FMU that logs
        # through fmpy calls it (freed, it crashed a later run in-process)
        self._logger = fmi2CallbackLoggerTYPE(logger)
        _LOGGERS_KEPT_ALIVE.append(self._logger)
        cb.logger = self._logger
        cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        cb.freeMemory = fmi2CallbackFreeMemoryTYPE(free)
        try:
            # fmpy's native proxy formats the variadic arguments ctypes cannot pass
            from fmpy.logging import addLoggerProxy
            from ctypes import byref
            addLoggerProxy(byref(cb))
        except Exception:   # noqa: BLE001 - without it messages arrive unformatted, still readable
            pass
        return cb

    def _instance(self):
        if self.fmu is None:
            fmu = self._slave_cls(guid=self.md.guid, unzipDirectory=self.dir,
                                  modelIdentifier=self.md.coSimulation.modelIdentifier, instanceName="sweep")
            fmu.instantiate(callbacks=self._callbacks)
            self.fmu = fmu
        return self.fmu

    def _discard_instance(self):
        if self.fmu is not None:
            try:
                self.fmu.freeInstance()
            except Exception:   # noqa: BLE001 - a broken instance is dropped either way
                pass
            self.fmu = None

    def run(self, values: dict, cfg: RunConfig) -> dict:
        """One simulation from the FMU's defaults with ``values`` set before
        initialization; never raises."""
        from fmpy.fmi1 import FMICallException
        from fmpy.fmi2 import fmi2LastSuccessfulTime
        t0 = time.perf_counter()
        vrs = [self.sw.outputs[n] for n in cfg.outputs]
        times, rows = [], []
        status, message, t_end = "OK", "", None
        self.messages.clear()
        fmu = None
        try:
            fmu = self._instance()
            fmu.setupExperiment(startTime=0.0, stopTime=cfg.stop_time)
            if values:
                fmu.setReal([self.sw.settable[n] for n in values], list(values.values()))
            fmu.enterInitializationMode()
            fmu.exitInitializationMode()
            t = 0.0
            times.append(t)
            rows.append(fmu.getReal(vrs))
            n = 0
            # fmpy's simulateCS grid: points start + k·interval, the last one
            # clipped to the stop time (the FMU handles a shorter step)
            while not (t > cfg.stop_time or math.isclose(t, cfg.stop_time)):
                nxt = (n + 1) * cfg.output_interval
                if nxt > cfg.stop_time and not math.isclose(nxt, cfg.stop_time):
                    nxt = cfg.stop_time
                fmu.doStep(currentCommunicationPoint=t, communicationStepSize=nxt - t)
                n += 1
                t = nxt
                times.append(t)
                rows.append(fmu.getReal(vrs))
            t_end = t
            fmu.terminate()
        except FMICallException as e:
            status = {2: "Discard", 3: "Error", 4: "Fatal"}.get(e.status, "Error")
            logged = [m for s, m in self.messages if s >= 2]   # Discard and worse
            message = logged[-1] if logged else str(e)
            if e.function == "fmi2DoStep" and fmu is not None:
                try:
                    t_end = fmu.getRealStatus(fmi2LastSuccessfulTime)
                except Exception:   # noqa: BLE001
                    t_end = times[-1] if times else None
            else:
                t_end = times[-1] if times else None
        except Exception as e:   # noqa: BLE001 - a run's failure is a row, never lost
            status, message = "Error", f"{type(e).__name__}: {e}"
            t_end = times[-1] if times else None
        # ready for the next run: Reset, or a new instance when Reset fails
        # (Fatal, or an instance that never came up)
        if self.fmu is not None:
            try:
                self.fmu.reset()
            except Exception:   # noqa: BLE001
                self._discard_instance()
        data = np.asarray(rows, dtype=float).reshape(len(rows), len(vrs))
        row = {"status": status, "message": message, "t_end": t_end,
               "wall_s": time.perf_counter() - t0}
        for j, name in enumerate(cfg.outputs):
            col = data[:, j]
            row[f"{name}.final"] = float(col[-1]) if len(col) else math.nan
            row[f"{name}.min"] = float(col.min()) if len(col) else math.nan
            row[f"{name}.max"] = float(col.max()) if len(col) else math.nan
        if cfg.trajectories:
            row["_trajectory"] = (np.asarray(times), data)
        return row


_RUNNERS: dict = {}


def _runner(fmu) -> Runner:
    """This process's Runner for ``fmu``: (digest, bytes) shipped by the
    client, or a path on a filesystem this process sees."""
    if isinstance(fmu, tuple):
        digest, blob = fmu
        if digest not in _RUNNERS:
            path = Path(tempfile.mkdtemp(prefix="fmigen-sweep-fmu-")) / "model.fmu"
            atexit.register(shutil.rmtree, path.parent, ignore_errors=True)
            path.write_bytes(blob)
            _RUNNERS[digest] = Runner(path)
        return _RUNNERS[digest]
    key = str(Path(fmu).resolve())
    if key not in _RUNNERS:
        _RUNNERS[key] = Runner(fmu)
    return _RUNNERS[key]


def run_chunk(fmu, chunk: list, cfg: RunConfig) -> list[dict]:
    """Runs [(index, {name: value})] in one worker; rows in the same order."""
    try:
        runner = _runner(fmu)
    except Exception as e:   # noqa: BLE001 - every run of the chunk is an Error row, the sweep goes on
        msg = f"the worker could not load the FMU: {type(e).__name__}: {e}"
        return [{"run": k, "params": v, "status": "Error", "message": msg, "t_end": None, "wall_s": 0.0}
                for k, v in chunk]
    out = []
    for k, values in chunk:
        row = runner.run(values, cfg)
        row["run"], row["params"] = k, values
        out.append(row)
    return out
