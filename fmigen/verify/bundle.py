"""``fmigen bundle``: a mechanism's FMUs in the FMI Cross-Check layout, with
the DAE reference as the reference result, checked against itself.

For each variant (FMI 2.0 CS, FMI 2.0 ME, FMI 3.0 CS), from one derivation:

    DIR/<fmi-version>/<cs|me>/<platform>/fmigen/<fmigen version>/<model>/
        <model>.fmu
        <model>_ref.csv     the DAE reference (fmigen/verify/reference.py, IDA) at the output grid
        <model>_ref.opt     StartTime, StopTime, StepSize, RelTol (+ OutputIntervalLength)
        <model>_in.csv      inputs, when the model has any: constant at their start values
        README.md           how the reference was computed, its tolerance and self-estimated error

which is the ``fmus/`` tree of https://github.com/modelica/fmi-cross-check
(FMI-CROSS-CHECK-RULES.md, 9.1.4-9.1.5): DIR plays the part of ``fmus/``.
The Cross-Check lists FMI 1.0 and 2.0 only; FMI 3.0 goes under ``3.0`` by
the same rule.  Platform: fmpy's name of this one (``linux64``); every FMU
is also a source FMU and may carry a win64 DLL.

Why the DAE reference and not the FMU's own output as ``_ref.csv``: the
reference is independent of the partition, the Gröbner sequences and the
generated C (fmigen/verify/reference.py), so an importer comparing against it
checks the FMU, not a recording of it.  It starts where ``validate``'s
does: Newton on Φ = 0 with the independent coordinates held
(``assemble_newton``), velocities with the independent ones held exactly
and the dependent ones solved from the velocity constraint
(``solve_reference``).  Its own error is
estimated the way ``validate --check-reference`` does: the same solve at
100× the relative tolerance, max |difference| over the grid.

The bundle then checks itself: every FMU simulated in fmpy, with the
``_in.csv`` inputs and the ``_ref.opt`` settings, reproduces ``_ref.csv``
at every grid point within the stated tolerances (coordinates and
velocities; angles compared directly), the reference's estimated error is
below them (it is the difference to the 100× coarser solve, so it bounds
that solve's error and overstates the reference's own), and fmpy's own Cross-Check validators accept the
directory (``validate_test_fmu``) and the result (``validate_result``).

Angle columns are the reference's own, continuous in time: the FMU's angles
are continuous too (an independent one is an integrated state; a dependent
one is atan2 of its sin and cos moved by whole turns to the one nearest its
last accepted value, from the assembled start), so a plain CSV comparison
works and nothing in ``_ref.csv`` comes from an FMU run.
"""

from __future__ import annotations

import contextlib
import io
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fmigen.model import ModelError

VARIANTS = (("2", "cs"), ("2", "me"), ("3", "cs"))
TOOL_ID = "fmigen"
#: the comparison tolerances stated in each README: validate's defaults
COORD_TOL = 1e-6
VELOCITY_TOL = 1e-5
#: fmpy's CVode tolerance for the Model Exchange check, written as its RelTol
ME_RTOL = 1e-10


@dataclass
class VariantCheck:
    fmi: str
    kind: str
    directory: str
    max_coordinate_error: float
    max_velocity_error: float
    problems: list
    passed: bool


@dataclass
class BundleReport:
    mechanism: str
    directory: str
    stop_time: float
    output_interval: float
    reference_rtol: float
    reference_error: dict          # {"coordinate": e, "velocity": e} at 100x rtol
    tolerances: dict
    inputs: dict                   # name -> constant value
    variants: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return bool(self.variants) and all(v.passed for v in self.variants)

    def as_json(self):
        return {"mechanism": self.mechanism, "directory": self.directory, "stop_time": self.stop_time,
                "output_interval": self.output_interval, "reference_rtol": self.reference_rtol,
                "reference_error_estimate": self.reference_error, "tolerances": self.tolerances,
                "inputs": self.inputs, "passed": self.passed,
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
                "variants": [{"fmi": v.fmi, "kind": v.kind, "directory": v.directory,
                              # None: not simulated to the end (JSON has no inf)
                              "max_coordinate_error": _finite(v.max_coordinate_error),
                              "max_velocity_error": _finite(v.max_velocity_error),
                              "problems": v.problems, "passed": v.passed} for v in self.variants]}


def _failure_messages(printed: str) -> list[str]:
    """The Discard, Error and Fatal messages in what fmpy printed."""
    out = []
    for line in printed.splitlines():
        for label in ("[DISCARD] ", "[ERROR] ", "[FATAL] "):
            if line.startswith(label):
                out.append(line[len(label):])
    return out


def _finite(x):
    return float(x) if math.isfinite(x) else None


def _fmt(x) -> str:
    # shortest round-trip text of a double: a C floating literal, no precision lost
    return repr(float(x))


def write_csv(path, names, columns):
    """Cross-Check CSV (rules, Appendix B): quoted names, time first, C float literals."""
    with open(path, "w") as f:
        f.write(",".join(f'"{n}"' for n in names) + "\n")
        for row in zip(*columns):
            f.write(",".join(_fmt(v) for v in row) + "\n")


def write_opt(path, start, stop, step, rtol):
    with open(path, "w") as f:
        f.write(f"StartTime, {_fmt(start)}\nStopTime, {_fmt(stop)}\nStepSize, {_fmt(step)}\n"
                f"RelTol, {rtol:g}\nOutputIntervalLength, {_fmt(step)}\n")


def output_grid(stop_time, interval):
    n = int(round(stop_time / interval))
    if n < 1 or not math.isclose(n * interval, stop_time, rel_tol=1e-9):
        raise ModelError(f"--stop-time {stop_time:g} is not a multiple of the output interval {interval:g}")
    # k·interval, as fmpy's communication points are
    return np.arange(n + 1) * interval


def bundle(spec, out_dir, stop_time=2.0, output_interval=None, reference_rtol=1e-12, solver="rk4", step=1e-3,
           coord_tol=COORD_TOL, velocity_tol=VELOCITY_TOL, use_cache=True, check=True, log=None) -> BundleReport:
    import fmpy

    from fmigen import __version__
    from fmigen.build.derived import dae_of
    from fmigen.build.pipeline import Compiled, build_fmus, load_mechanism
    from fmigen.verify.reference import assemble_newton, solve_reference
    log = log or (lambda msg: None)
    seconds = {}
    mech = load_mechanism(spec, use_cache)
    if mech.kinematic:
        raise ModelError(f"'{mech.name}' is kinematic (no dynamics): there is no DAE reference to bundle")
    output_interval = output_interval or max(step, round(0.01 / step) * step)
    times = output_grid(stop_time, output_interval)
    out_dir = Path(out_dir)
    platform = fmpy.platform
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        targets = [(Path(tmp) / f"{mech.name}_fmi{f}_{k}.fmu", f, k) for f, k in VARIANTS]
        paths, compiled = build_fmus(spec, targets, solver=solver, step=step, use_cache=use_cache,
                                     reuse=use_cache, log=log)
        seconds["build"] = time.perf_counter() - t0
        mech = compiled.mechanism        # the prepared copy: the assembled start the FMUs use
        name = mech.name
        dirs = []
        for (f, k), path in zip(VARIANTS, paths):
            d = out_dir / f"{f}.0" / k / platform / TOOL_ID / __version__ / name
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{name}.fmu").write_bytes(Path(path).read_bytes())
            dirs.append(d)

    # the reference, from validate's start
    t0 = time.perf_counter()
    dae = compiled.dae if isinstance(compiled, Compiled) else dae_of(mech, use_cache)
    q0 = assemble_newton(dae, dae.start_guess(), compiled.independent_names)
    v0 = dae.start_velocity_guess()
    log(f"integrating the DAE reference (IDA, rtol={reference_rtol:g}) on {len(times)} points to t={stop_time:g}")
    ref = solve_reference(dae, q0, v0, times, compiled.independent_names, rtol=reference_rtol)
    log(f"re-solving it at rtol={100 * reference_rtol:g} to estimate its own error")
    coarse = solve_reference(dae, q0, v0, times, compiled.independent_names, rtol=100 * reference_rtol)
    ref_err = {"coordinate": float(np.abs(coarse.q - ref.q).max()),
               "velocity": float(np.abs(coarse.v - ref.v).max())}
    seconds["reference"] = time.perf_counter() - t0

    independent = set(compiled.independent_names)
    angles = {c.name for c in mech.coordinates if c.unit == "rad"}
    names, columns = ["time"], [times]
    for i, c in enumerate(mech.coordinates):
        names.append(c.name)
        columns.append(ref.q[:, i])   # angles continuous, as the FMU's (module docstring)
    for i, c in enumerate(mech.coordinates):
        names.append(f"der({c.name})")
        columns.append(ref.v[:, i])
    inputs = {i.name: float(i.start) for i in mech.inputs}
    tolerances = {"coordinate": coord_tol, "velocity": velocity_tol}
    report = BundleReport(name, str(out_dir), float(stop_time), float(output_interval), reference_rtol, ref_err,
                          tolerances, inputs, seconds=seconds)
    for (f, k), d in zip(VARIANTS, dirs):
        write_csv(d / f"{name}_ref.csv", names, columns)
        write_opt(d / f"{name}_ref.opt", 0.0, stop_time, output_interval, ME_RTOL if k == "me" else reference_rtol)
        if inputs:
            write_csv(d / f"{name}_in.csv", ["time", *inputs],
                      [np.array([0.0, stop_time]), *[np.full(2, v) for v in inputs.values()]])

    t0 = time.perf_counter()
    for (f, k), d in zip(VARIANTS, dirs):
        checked = check_variant(d, name, f, k, angles, coord_tol, velocity_tol, ref_err, log) if check else None
        if checked is not None:
            report.variants.append(checked)
        # written last: it states what the check measured
        (d / "README.md").write_text(readme(report, mech, f, k, solver, step, sorted(independent), checked))
    seconds["check"] = time.perf_counter() - t0
    return report


def check_variant(d, name, fmi, kind, angles, coord_tol, velocity_tol, ref_err, log) -> VariantCheck:
    """Simulate the bundled FMU in fmpy as an importer would (its _in.csv,
    its _ref.opt) and compare with _ref.csv at every grid point."""
    import fmpy
    from fmpy.cross_check import validate_result
    from fmpy.cross_check.validate_vendor_repo import read_csv, validate_test_fmu
    from fmpy.util import read_ref_opt_file
    problems = list(validate_test_fmu(str(d)))
    opt = read_ref_opt_file(str(d / f"{name}_ref.opt"))
    ref = read_csv(str(d / f"{name}_ref.csv"))
    in_path = d / f"{name}_in.csv"
    signals = fmpy.read_csv(str(in_path)) if in_path.exists() else None
    cols = list(ref.dtype.names[1:])
    log(f"checking {d}: fmpy, FMI {fmi}.0 {kind.upper()}")
    kw = {"solver": "CVode", "relative_tolerance": opt["RelTol"]} if kind == "me" else {}
    # fmpy prints the FMU's messages ("[DISCARD] ..."); they are kept for the
    # report and kept off stdout, which carries --json.  (A custom logger=
    # would do the same, but fmpy's native logging proxy keeps a global
    # pointer to that callback after the run, and the next FMU that logs
    # through fmpy calls it freed: a crash in an unrelated later run.)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            res = fmpy.simulate_fmu(str(d / f"{name}.fmu"), start_time=opt["StartTime"], stop_time=opt["StopTime"],
                                    output_interval=opt["StepSize"], input=signals, output=cols, **kw)
    except Exception as e:   # noqa: BLE001 - a failing FMU is the check's finding, not a crash
        messages = _failure_messages(printed.getvalue())
        problems.append(f"fmpy could not simulate it: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
        problems += [f"the FMU said: {m}" for m in messages[-1:]]
        return VariantCheck(fmi, kind, str(d), math.inf, math.inf, problems, False)
    # fmpy repeats the last row after a Discard: keep what the FMU computed
    keep = np.concatenate([[True], np.diff(res["time"]) > 0])
    res = res[keep]
    t_ref = ref[ref.dtype.names[0]]
    if res["time"][-1] < t_ref[-1] - 1e-9 * max(1.0, t_ref[-1]):
        problems.append(f"the FMU stopped at t={res['time'][-1]:g}, before {t_ref[-1]:g}")
        problems += [f"the FMU said: {m}" for m in _failure_messages(printed.getvalue())[-1:]]
    coord_err = vel_err = 0.0
    for c in cols:
        # the grids coincide (k·StepSize); interp only guards a differing row count
        y = np.interp(t_ref, res["time"], res[c]) if len(res) != len(t_ref) else res[c]
        # angles too directly (compare.coordinate_error): both are continuous
        e = float(np.abs(y - ref[c]).max())
        if c.startswith("der("):
            vel_err = max(vel_err, e)
        else:
            coord_err = max(coord_err, e)
    if coord_err > coord_tol:
        problems.append(f"max coordinate error {coord_err:.3g} > {coord_tol:g}")
    if vel_err > velocity_tol:
        problems.append(f"max velocity error {vel_err:.3g} > {velocity_tol:g}")
    if ref_err["coordinate"] > coord_tol or ref_err["velocity"] > velocity_tol:
        problems.append(f"the reference's own error estimate ({ref_err['coordinate']:.3g}, "
                        f"{ref_err['velocity']:.3g}) exceeds the tolerances: tighten --reference-rtol")
    # the Cross-Check's own band comparison (what an importer's result is judged by)
    band = validate_result(result=res, reference=ref, t_start=opt["StartTime"], t_stop=opt["StopTime"])
    if band is not None:
        problems.append(f"fmpy.cross_check.validate_result: {band}")
    return VariantCheck(fmi, kind, str(d), coord_err, vel_err, problems, not problems)


def readme(report: BundleReport, mech, fmi, kind, solver, step, independent, checked=None) -> str:
    from fmigen import __version__
    kind_text = "Co-Simulation" if kind == "cs" else "Model Exchange"
    integ = (f"its own fixed-step {solver} integrator, internal step {step:g} s (parameter `internal_step`)"
             if kind == "cs" else "the importer's integrator: states are the independent coordinates and "
                                  f"their velocities ({', '.join(independent)}); fmigen's check used fmpy's "
                                  f"CVode at RelTol {ME_RTOL:g} (the `_ref.opt` value)")
    inputs = (", ".join(f"`{n}` = {v:g}" for n, v in report.inputs.items()) if report.inputs else None)
    lines = [
        f"# {mech.name} — fmigen {__version__}, FMI {fmi}.0 {kind_text}",
        "",
        f"{mech.description or mech.name}",
        "",
        f"The FMU integrates with {integ}.",
        "",
        "## Reference (`_ref.csv`)",
        "",
        "Not a recording of this FMU: the full augmented DAE of the mechanism — all coordinates, velocities and "
        "Lagrange multipliers, index 1 with Baumgarte stabilization of the constraint row — integrated by "
        "SUNDIALS IDA (scikit-sundae) in fmigen/verify/reference.py, independently of the FMU's partition, Gröbner "
        "kinematics and generated C.",
        "",
        f"- relative tolerance {report.reference_rtol:g}, absolute {report.reference_rtol / 10:g} on coordinates "
        "and velocities (multipliers excluded from the error test)",
        "- start: the constraints solved by Newton with the independent coordinates "
        f"({', '.join(independent)}) held at their start values; velocities projected onto the velocity "
        "constraints with the independent ones held",
        f"- self-estimated error (the same solve at {100 * report.reference_rtol:g}, max |difference| over the "
        f"grid): coordinates {report.reference_error['coordinate']:.3g}, velocities "
        f"{report.reference_error['velocity']:.3g}",
        f"- grid: 0 to {report.stop_time:g} s every {report.output_interval:g} s (`StepSize` in `_ref.opt`)",
        "- columns: every coordinate and its velocity `der(q)`; angles continuous in time, as the FMU reports "
        "them (a dependent angle is atan2 of its sin and cos moved by whole turns to the one nearest its "
        "last accepted value)",
        "",
        "## Agreement",
        "",
        f"Stated tolerance: this FMU reproduces `_ref.csv` at every grid point within "
        f"{report.tolerances['coordinate']:g} (coordinates, angles directly) and "
        f"{report.tolerances['velocity']:g} (velocities) when simulated with the `_ref.opt` settings.",
        "",
        ("Not checked when written (`fmigen bundle --no-check`)." if checked is None else
         f"Checked in fmpy {_fmpy_version()} when written: max error {checked.max_coordinate_error:.3g} "
         f"(coordinates), {checked.max_velocity_error:.3g} (velocities): "
         + ("passed." if checked.passed else "FAILED: " + "; ".join(checked.problems))),
        "",
        "## Inputs",
        "",
        (f"`{mech.name}_in.csv` holds the inputs constant at their start values ({inputs}), as the reference "
         "integrates them." if inputs else "The model has no inputs."),
        "",
        "Structural parameters (geometry) are compiled in; tunable parameters (masses, gravity, force amplitudes) "
        "are at their start values.",
        "",
    ]
    return "\n".join(lines)


def _fmpy_version():
    import fmpy
    return fmpy.__version__


def format_report(r: BundleReport) -> str:
    out = [f"{r.mechanism}: bundle in {r.directory} (reference IDA rtol {r.reference_rtol:g}, self-estimated "
           f"error {r.reference_error['coordinate']:.3g} / {r.reference_error['velocity']:.3g} "
           f"coordinates / velocities)"]
    for v in r.variants:
        out.append(f"  FMI {v.fmi}.0 {v.kind.upper()}: max error {v.max_coordinate_error:.3g} (tol "
                   f"{r.tolerances['coordinate']:g}), velocities {v.max_velocity_error:.3g} (tol "
                   f"{r.tolerances['velocity']:g}) {'ok' if v.passed else 'FAILED'}")
        for p in v.problems:
            out.append(f"    {p}")
    if not r.variants:
        out.append("  (not checked: --no-check)")
    else:
        out.append("passed" if r.passed else "FAILED")
    return "\n".join(out)


def add_parser(sub):
    """The ``bundle`` verb of the CLI (fmigen/cli.py calls this)."""
    import json

    from fmigen.build.arguments import positive
    p = sub.add_parser(
        "bundle", help="FMUs + DAE reference results in the FMI Cross-Check layout, self-checked in fmpy",
        description="Build the FMI 2.0 CS, FMI 2.0 ME and FMI 3.0 CS FMUs of a mechanism and write each as an FMI "
                    "Cross-Check entry: DIR/<fmi-version>/<cs|me>/<platform>/fmigen/<version>/<model>/ with "
                    "<model>.fmu, <model>_ref.csv (the IDA reference of the full DAE at the output grid), "
                    "<model>_ref.opt, <model>_in.csv (inputs constant at their start values) and a README "
                    "stating the reference's method, tolerance and self-estimated error (re-solved at 100x rtol). "
                    "Then simulate each FMU in fmpy with those files and compare; exits 1 when one does not "
                    "reproduce its reference within the tolerances.")
    p.add_argument("mechanism", help="mechanism module: a path (mechanisms/fourbar.py) or a bare name (fourbar)")
    p.add_argument("-o", "--output", required=True, help="bundle root (the Cross-Check repository's fmus/)")
    p.add_argument("--stop-time", type=positive, default=2.0, help="simulated time in s (default 2)")
    p.add_argument("--output-interval", type=positive, default=None,
                   help="grid of the reference and StepSize (default: 10 ms rounded to a multiple of --step)")
    p.add_argument("--reference-rtol", type=positive, default=1e-12, help="IDA relative tolerance (default 1e-12)")
    p.add_argument("--tol", type=positive, default=COORD_TOL, help=f"coordinate tolerance stated and checked "
                                                                f"(default {COORD_TOL:g})")
    p.add_argument("--velocity-tol", type=positive, default=VELOCITY_TOL,
                   help=f"velocity tolerance stated and checked (default {VELOCITY_TOL:g})")
    p.add_argument("--solver", choices=["euler", "symplectic", "rk4"], default="rk4",
                   help="CS integrator (default rk4)")
    p.add_argument("--step", type=positive, default=1e-3, help="CS internal step in s (default 1e-3)")
    p.add_argument("--no-check", action="store_true", help="write the bundle without simulating it in fmpy")
    p.add_argument("--no-cache", action="store_true", help="derive the model again instead of using the cache")
    p.add_argument("--json", action="store_true", help="machine-readable report on stdout")

    def run(args):
        if not (args.stop_time > 0 and args.reference_rtol > 0 and args.step > 0):
            raise ModelError("--stop-time, --reference-rtol and --step must be > 0")
        r = bundle(args.mechanism, args.output, stop_time=args.stop_time, output_interval=args.output_interval,
                   reference_rtol=args.reference_rtol, solver=args.solver, step=args.step, coord_tol=args.tol,
                   velocity_tol=args.velocity_tol, use_cache=not args.no_cache, check=not args.no_check,
                   log=args.progress)
        print(json.dumps(r.as_json()) if args.json else format_report(r))
        return 0 if (r.passed or args.no_check) else 1

    p.set_defaults(func=run)
