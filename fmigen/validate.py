"""Stage 8 — validate: run the FMU in fmpy and compare with the DAE reference.

The reference starts from its own assembly of the start (Newton on Φ = 0 with
the independent coordinates held, from the user's guesses), integrates the
full augmented DAE (``reference.py``) and is compared with the FMU at every
output point: the maximum absolute error per coordinate (angles modulo 2π,
because the FMU recovers dependent angles with atan2) and the maximum
``constraint_residual`` the FMU reports.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import fmpy
import numpy as np

from .model import ModelError
from .pipeline import build_fmu, load_mechanism
from .reference import assemble_newton, solve_reference

DEFAULT_COORD_TOL = 1e-6
DEFAULT_VELOCITY_TOL = 1e-5
DEFAULT_RESIDUAL_TOL = 1e-12


@dataclass
class Report:
    mechanism: str
    max_abs_error: dict
    max_constraint_residual: float
    passed: bool
    tolerances: dict
    reference_rtol: float
    reference_error_estimate: float | None = None
    build_seconds: float = 0.0
    times: np.ndarray = field(default=None, repr=False)
    fmu_result: np.ndarray = field(default=None, repr=False)
    reference: object = field(default=None, repr=False)
    #: max |der(q) − reference velocity| per coordinate
    max_abs_velocity_error: dict = field(default_factory=dict)

    def as_json(self):
        return {"max_abs_error": self.max_abs_error,
                "max_abs_velocity_error": self.max_abs_velocity_error,
                "max_constraint_residual": self.max_constraint_residual,
                "passed": self.passed}


def simulate(fmu_path, names, stop_time, output_interval, start_values=None):
    return fmpy.simulate_fmu(str(fmu_path), stop_time=stop_time, output_interval=output_interval,
                             output=[*names, *[f"der({n})" for n in names], "constraint_residual"],
                             start_values=start_values or {})


def coordinate_errors(dae, result, ref):
    errors = {}
    for i, c in enumerate(dae.mechanism.coordinates):
        d = result[c.name] - ref.q[:, i]
        if c.unit == "rad":
            d = (d + math.pi) % (2 * math.pi) - math.pi
        errors[c.name] = float(np.abs(d).max())
    return errors


def validate(spec, stop_time=2.0, solver="rk4", step=1e-3, output_interval=None,
             coord_tol=DEFAULT_COORD_TOL, residual_tol=DEFAULT_RESIDUAL_TOL, velocity_tol=DEFAULT_VELOCITY_TOL,
             reference_rtol=1e-12, check_reference=False, fmu_path=None, existing_fmu=None,
             log=None) -> Report:
    """``fmu_path``: where to write the FMU built for the run (default a
    temporary file); ``existing_fmu``: validate that FMU instead of building
    one (it must have this mechanism's coordinates; its own internal step
    and solver apply, ``solver``/``step`` only set the output interval)."""
    log = log or (lambda msg: None)
    mech = load_mechanism(spec) if isinstance(spec, (str, Path)) else spec
    if mech.kinematic:
        raise ModelError(f"'{mech.name}' is kinematic (no dynamics): there is no DAE trajectory to "
                         "validate against; sweep its inputs instead")
    output_interval = output_interval or max(step, round(0.01 / step) * step)
    if existing_fmu is not None:
        # no build: the DAE and partition (for the reference's start) only
        from .dae import build_dae
        from .partition import choose_partition
        from .pipeline import prepare_mechanism
        prepare_mechanism(mech, log)
        dae = build_dae(mech)
        independent = [dae.names[i] for i in choose_partition(dae).independent]
        path = Path(existing_fmu)
        if not path.exists():
            raise ModelError(f"no FMU at {path}")
        declared = {v.name for v in fmpy.read_model_description(str(path)).modelVariables}
        missing = [n for n in [*dae.names, "constraint_residual"] if n not in declared]
        if missing:
            raise ModelError(f"{path} is not an FMU of '{mech.name}': it lacks {', '.join(missing)}")
        build_seconds = 0.0
        log(f"simulating {path.name} in fmpy to t={stop_time}")
        result = simulate(path, dae.names, stop_time, output_interval)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(fmu_path) if fmu_path else Path(tmp) / f"{mech.name}.fmu"
            path, compiled = build_fmu(mech, path, solver=solver, step=step, log=log)
            log(f"simulating {path.name} in fmpy to t={stop_time}")
            result = simulate(path, compiled.dae.names, stop_time, output_interval)
        dae = compiled.dae
        independent = [dae.names[i] for i in compiled.partition.independent]
        build_seconds = sum(compiled.seconds.values())
    # After fmi2Discard fmpy repeats the last row; keep the trajectory the FMU
    # really computed and fail the validation if it stopped early.
    keep = np.concatenate([[True], np.diff(result["time"]) > 0])
    result = result[keep]
    stopped_early = result["time"][-1] < stop_time - 1e-9 * max(1.0, stop_time)
    if stopped_early:
        log(f"the FMU stopped at t={result['time'][-1]:g} (fmi2Discard), before {stop_time:g}")
    log(f"integrating the DAE reference (IDA, rtol={reference_rtol:g})")
    q0 = assemble_newton(dae, dae.start_guess(), independent)
    v0 = dae.start_velocity_guess()
    ref = solve_reference(dae, q0, v0, result["time"], independent, rtol=reference_rtol)
    estimate = None
    if check_reference:
        log("re-solving the reference at 100x the tolerance to estimate its own error")
        coarse = solve_reference(dae, q0, v0, result["time"], independent, rtol=reference_rtol * 100)
        estimate = float(np.abs(coarse.q - ref.q).max())
    errors = coordinate_errors(dae, result, ref)
    verrors = {c.name: float(np.abs(result[f"der({c.name})"] - ref.v[:, i]).max())
               for i, c in enumerate(dae.mechanism.coordinates)}
    residual = float(np.abs(result["constraint_residual"]).max())
    passed = (all(e <= coord_tol for e in errors.values()) and residual <= residual_tol
              and all(e <= velocity_tol for e in verrors.values()) and not stopped_early)
    return Report(mech.name, errors, residual, passed,
                  {"coordinate": coord_tol, "velocity": velocity_tol, "constraint_residual": residual_tol},
                  reference_rtol, estimate, build_seconds, result["time"], result, ref,
                  max_abs_velocity_error=verrors)


def plot(report: Report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(report.max_abs_error)
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, name in enumerate(names):
        axes[0].plot(report.times, report.fmu_result[name], label=f"{name} (FMU)")
        axes[0].plot(report.times, report.reference.q[:, i], "k:", lw=1)
        err = np.abs(report.fmu_result[name] - report.reference.q[:, i])
        axes[1].semilogy(report.times, np.maximum(err, 1e-17), label=name)
    axes[1].semilogy(report.times, np.maximum(np.abs(report.fmu_result["constraint_residual"]), 1e-17),
                     "k--", label="constraint_residual")
    axes[0].set_ylabel("coordinate")
    axes[0].legend(fontsize=8)
    axes[0].set_title(f"{report.mechanism}: FMU (lines) vs DAE reference (dotted)")
    axes[1].set_ylabel("|FMU − reference|")
    axes[1].set_xlabel("time [s]")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
