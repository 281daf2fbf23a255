"""Command-line interface: ``fmigen build | validate | check | triangularize | assemble | bench |
export-mjcf | import-mjcf | export-modelica | sweep | bundle``."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from fmigen.build.arguments import positive
from fmigen.model import ModelError


def _log(args):
    """Progress lines on stderr (with --json too: stdout carries the JSON
    only), with a spinner on a terminal (fmigen/build/progress.py)."""
    if getattr(args, "quiet", False):
        return lambda msg: None
    return getattr(args, "progress", None) or (lambda msg: print(msg, file=sys.stderr, flush=True))


def _choices(*allowed):
    """A comma-separated list of ``allowed`` values (argparse type)."""
    def parse(text):
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)} (comma-separated); got {text!r}")
        return ",".join(dict.fromkeys(values))
    return parse


def _realtime(args):
    """build_fmus's ``realtime``: the measurement of ``fmigen build --realtime``, or None."""
    if not args.realtime:
        return None
    from fmigen.tools.bench import realtime_caps
    return realtime_caps


def cmd_build(args):
    from fmigen.build.pipeline import build_fmus
    from fmigen.kinematics import groebner
    t0 = time.perf_counter()
    if Path(args.output).is_dir():
        # checked before deriving: packaging is the last stage, and a cold
        # build of the vehicle takes minutes to get there
        raise ModelError(f"-o {args.output} is a directory; give the FMU file to write, such as "
                         f"{Path(args.output) / (Path(args.mechanism).stem + '.fmu')}")
    order = args.order.split(",") if args.order else None
    from fmigen.generate.formulation import AUGMENTED, option_name, params_from_args
    given = params_from_args(args)
    for name, values in given.items():
        if name != args.kinematics:
            raise ModelError(f"{', '.join(option_name(name, k) for k in values)} applies to --kinematics {name} "
                             f"only (got --kinematics {args.kinematics})")
    if args.runtime == "python" and args.kinematics in AUGMENTED:
        raise ModelError(f"--runtime python builds the embedded formulations only; --kinematics "
                         f"{args.kinematics} needs the C runtime")
    if args.runtime == "python" and args.dynamics == "recursive":
        raise ModelError("--dynamics recursive is generated C; --runtime python solves the embedded ODE with its "
                         "own numpy code (use --runtime c)")
    if args.runtime == "python" and args.realtime:
        raise ModelError("--realtime caps the loops of the generated C (use --runtime c)")
    if args.runtime == "python":
        # the same reduced model as a pure-Python FMU through pythonfmu
        # (FMI 2.0 Co-Simulation only; fmigen/pyfmu/pyruntime.py)
        from fmigen.pyfmu.pyruntime import build_python_fmu
        if args.fmi != "2" or args.kind != "cs":
            raise ModelError("--runtime python builds FMI 2.0 Co-Simulation only (pythonfmu); "
                             f"got --fmi {args.fmi} --kind {args.kind}")
        path, compiled = build_python_fmu(args.mechanism, args.output, solver=args.solver, step=args.step,
                                          order=order, use_cache=not args.no_cache, log=_log(args),
                                          kinematics=args.kinematics, newton_tol=args.newton_tol)
    else:
        # every requested variant from one derivation
        variants = [(f, k) for f in args.fmi.split(",") for k in args.kind.split(",")]
        out = Path(args.output)
        targets = ([(out, *variants[0])] if len(variants) == 1 else
                   [(out.with_name(f"{out.stem}_fmi{f}_{k}{out.suffix or '.fmu'}"), f, k) for f, k in variants])
        paths, compiled = build_fmus(args.mechanism, targets, solver=args.solver, step=args.step,
                                     order=order, use_cache=not args.no_cache, log=_log(args),
                                     kinematics=args.kinematics, newton_tol=args.newton_tol,
                                     formulation_params=given.get(args.kinematics), reuse=not args.no_cache,
                                     dynamics=args.dynamics, realtime=_realtime(args))
        path = paths[0]
    seconds = time.perf_counter() - t0
    info = {"fmu": str(path), "mechanism": compiled.mechanism.name, "fmi": args.fmi, "kind": args.kind,
            "runtime": args.runtime, "solver": args.solver, "kinematics": args.kinematics,
            "step": args.step, "seconds": round(seconds, 3), "realtime": args.realtime,
            # what --dynamics chose (the generated right-hand side's solver)
            "dynamics": "recursive" if compiled.generated.macros.get("FMIGEN_DYNAMICS_RECURSIVE") else "embedded",
            "independent": compiled.independent_names, "start": compiled.start,
            # per stage: dae, triangular, codegen, fmu when derived; derived, fmu on a derived-cache hit
            "stages": {k: round(v, 3) for k, v in compiled.seconds.items()},
            # the Gröbner engine this machine runs (fmigen/kinematics/engine.py);
            # a build from the derived-model cache ran none
            "groebner_engine": groebner.engine_json()}
    if args.runtime != "python":
        info["fmus"] = [str(p) for p in paths]
    if compiled.generated.formulation is not None:
        info["formulation_parameters"] = dict(compiled.generated.formulation.values)
    if args.json:
        print(json.dumps(info))
    else:
        written = info.get("fmus", [str(path)])
        if len(written) == 1:
            print(f"wrote {path} (FMI {args.fmi}.0 {args.kind.upper()}, {args.runtime} runtime, {args.solver}, "
                  f"h = {args.step:g} s) "
                  f"in {seconds:.2f} s; "
                  f"independent: {', '.join(info['independent'])}")
        else:
            for w in written:
                print(f"wrote {w}")
            print(f"{len(written)} FMUs (FMI {args.fmi} x {args.kind}, {args.runtime} runtime, {args.solver}, "
                  f"h = {args.step:g} s) from one derivation in {seconds:.2f} s; "
                  f"independent: {', '.join(info['independent'])}")
    return 0


def _output_dir(path):
    """Create the directory a named output file goes into, before the work
    (as build, sweep and bundle do for theirs): a missing one is not found
    after minutes of validation."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)


def cmd_validate(args):
    from fmigen.verify.validate import plot, validate
    _output_dir(args.plot)
    _output_dir(args.report)
    report = validate(args.mechanism, stop_time=args.stop_time, solver=args.solver, step=args.step,
                      output_interval=args.output_interval, coord_tol=args.tol, velocity_tol=args.velocity_tol,
                      residual_tol=args.residual_tol, energy_tol=args.energy_tol,
                      reference_rtol=args.reference_rtol, cartesian_rtol=args.cartesian_rtol,
                      check_reference=args.check_reference, existing_fmu=args.fmu, log=_log(args),
                      use_cache=not args.no_cache, peer=args.peer, input_signals=args.input,
                      drive_tol=args.drive_tol)
    if args.plot:
        plot(report, args.plot)
    if args.report:
        from fmigen.verify.report import write_html
        write_html(report, args.report)
    if args.json:
        out = report.as_json()
        if report.reference_error_estimate is not None:
            out["reference_error_estimate"] = report.reference_error_estimate
        print(json.dumps(out))
    else:
        titles = {"ida": "the DAE reference (IDA on the model's M, F, Φ)",
                  "cartesian": "the Cartesian reference (Newton–Euler from the joint description)",
                  "mujoco": "MuJoCo (the exported joint description, RK4, stiff soft constraints)"}
        # the integrator that ran: with --fmu, the FMU's own
        run = report.settings
        print(f"{report.mechanism}: FMU ({run['solver']}, h = {run['step']:g} s) over {args.stop_time:g} s")
        for key, ref in report.references.items():
            how = f"rtol {ref['rtol']:g}" if "rtol" in ref else \
                f"dt {ref['settings']['timestep']:g} s" if "settings" in ref else "not run"
            print(f"  vs {titles[key]}, {how}: {'passed' if ref['passed'] else 'FAILED'}")
            if "mujoco_constraint_violation" in ref:
                print(f"    MuJoCo's own constraint violation = {ref['mujoco_constraint_violation']:.3e} "
                      "(its constraints are soft: the floor of this comparison)")
            if "error" in ref:
                # IDA failing part way was compared up to there (below)
                print(f"    {'failed' if ref['max_abs_error'] else 'could not run'}: {ref['error']}")
            for name, err in ref["max_abs_error"].items():
                print(f"    max |error| {name:>12s} = {err:.3e}   (tolerance {report.tolerances['coordinate']:g})")
            for name, err in ref["max_abs_velocity_error"].items():
                print(f"    max |error| {'der(' + name + ')':>12s} = {err:.3e}   "
                      f"(tolerance {report.tolerances['velocity']:g})")
            for name, err in ref.get("max_rel_drive_error", {}).items():
                print(f"    drive_{name}: max |FMU − reference at the FMU's state| / max |drive| = {err:.3e}   "
                      f"(tolerance {report.tolerances['drive']:g}; along the reference's own trajectory "
                      f"{ref['max_rel_drive_difference'].get(name, float('nan')):.3e})")
        print(f"  max constraint_residual  = {report.max_constraint_residual:.3e}   "
              f"(tolerance {report.tolerances['constraint_residual']:g})")
        print(f"  energy drift             = {report.energy_drift:.3e}   "
              f"(tolerance {report.tolerances['energy']:g}; T from {report.energy_source})")
        if report.energy_error:
            print(f"    could not be computed: {report.energy_error}")
        if report.reference_error_estimate is not None:
            print(f"  reference self-check: |ref(rtol) − ref(100·rtol)| = {report.reference_error_estimate:.3e}")
        if args.plot:
            print(f"  plot: {args.plot}")
        if args.report:
            print(f"  report: {args.report}")
        print("PASSED" if report.passed else "FAILED")
    return 0 if report.passed else 1


def cmd_triangularize(args):
    from fmigen.build.pipeline import compile_model, load_mechanism
    t0 = time.perf_counter()
    order = args.order.split(",") if args.order else None
    compiled = compile_model(load_mechanism(args.mechanism, use_cache=not args.no_cache), order=order,
                             use_cache=not args.no_cache, log=_log(args))
    seconds = time.perf_counter() - t0
    blocks = []
    for solved_block in compiled.triangular.blocks:
        blocks.append({"unknowns": [compiled.dae.names[i] for i in solved_block.block.unknowns],
                       "method": solved_block.method,
                       "sequence": [{"variable": str(s.variable), "degree": s.degree, "terms": s.terms,
                                     "max_coeff_digits": s.max_coeff_digits} for s in solved_block.steps]})
        if solved_block.method == "groebner":
            # error amplification (sweep_measures.amplification): max double-
            # precision error on the workspace sweep in machine epsilons
            blocks[-1]["order"] = solved_block.sequences[0].label
            blocks[-1]["amplification"] = [{"order": s.label, "eps": _finite(s.amplification)}
                                           for s in solved_block.sequences]
    if args.json:
        print(json.dumps({"blocks": blocks, "seconds": round(seconds, 3)}))
    else:
        for b in blocks:
            print(f"block {{{', '.join(b['unknowns'])}}}: {b['method']}")
            for s in b["sequence"]:
                print(f"  {s['variable']:>12s}: degree {s['degree']}, {s['terms']} terms, "
                      f"{s['max_coeff_digits']}-digit coefficients")
            for a in b.get("amplification", []):
                print(f"  error amplification {'—' if a['eps'] is None else format(a['eps'], '.3g')} eps: {a['order']}")
        print(f"{seconds:.2f} s")
    return 0


def _finite(x):
    """JSON has no inf/nan: None for a sequence that was not measured or is
    singular everywhere it was."""
    return float(x) if math.isfinite(x) else None


def cmd_check(args):
    from fmigen.verify.check import check, format_report
    report = check(args.mechanism, use_cache=not args.no_cache, log=_log(args))
    print(json.dumps(report) if args.json else format_report(report))
    return 0 if report["passed"] else 1


def cmd_assemble(args):
    from fmigen.build.pipeline import load_mechanism
    from fmigen.kinematics.assemble import AssemblyError, assemble
    from fmigen.kinematics.start_assembly import parse_inputs
    from fmigen.kinematics.groebner import GroebnerError
    log = _log(args)
    mech = load_mechanism(args.mechanism, use_cache=not args.no_cache)
    try:
        res = assemble(mech, parse_inputs(args.inputs), hidden=args.hidden, method=args.method,
                       sylvester=args.sylvester,
                       cross_check=args.cross_check, imag_tol=args.imag_tol,
                       use_cache=not args.no_cache, log=log)
    except GroebnerError as e:
        raise AssemblyError(str(e)) from None
    if args.json:
        print(json.dumps(res.as_json()))
        return 0
    print(f"{res.mechanism}: {len(res.solutions)} assembly configurations ({res.real_count} real) at "
          + ", ".join(f"{k} = {v:g}" for k, v in res.inputs.items()))
    if not res.variables:
        print("  no constraint: the independent coordinates as given are the one assembly")
        return 0
    print(f"  grevlex basis: {res.basis_size} elements, vdim {res.vdim}; method {res.method}"
          + (f", Sylvester matrix {res.sylvester_size}x{res.sylvester_size}" if res.sylvester_size else "")
          + f", hidden {res.hidden}; I/O polynomial degree {res.io_polynomial_degree}")
    names = [c.name for c in mech.coordinates if c.name not in res.inputs]
    for k, sol in enumerate(res.solutions, 1):
        vals = []
        for n in names:
            z = complex(sol.values[n])
            vals.append(f"{n}={z.real:.9g}" if sol.real else f"{n}={z.real:.6g}{z.imag:+.6g}i")
        print(f"  {k:3d} {'real   ' if sol.real else 'complex'} residual {sol.residual:.1e}  " + "  ".join(vals))
    if res.cross_check:
        cc = res.cross_check
        print(f"  cross-check (lex/FGLM): univariate degree {cc['lex_univariate_degree']}, "
              f"same polynomial: {cc['io_polynomials_equal']}, {cc['lex_solution_count']} solutions, "
              f"max distance {cc['max_distance_to_sylvester_solutions']:.1e}")
    print(f"  {sum(res.seconds.values()):.2f} s")
    return 0


def cmd_export_mjcf(args):
    from fmigen.frontends.mjcf import export_mjcf
    from fmigen.build.pipeline import prepare_mechanism
    mech = prepare_mechanism(args.mechanism, _log(args))
    if mech.joint_system is None:
        raise ModelError(f"'{mech.name}' is written with the low-level API (fmigen.model.Mechanism); "
                         "MJCF export needs its bodies and joints (fmigen.joints.JointSystem)")
    # the keyframe "start" is the assembled start the FMU uses
    xml = export_mjcf(mech.joint_system, start={c.name: c.start for c in mech.coordinates},
                      timestep=args.timestep)
    if args.output:
        _output_dir(args.output)
        Path(args.output).write_text(xml)
        print(args.output if not args.json else json.dumps({"mjcf": args.output}))
    else:
        print(xml, end="")
    return 0


def cmd_export_modelica(args):
    from fmigen.tools.modelica import export_mechanism
    if Path(args.output).is_dir():
        raise ModelError(f"-o {args.output} is a directory; give the .mo file to write")
    if args.fmu:
        return _export_fmu_wrapper(args)
    text, name, _ = export_mechanism(args.mechanism, package=args.package, log=_log(args),
                                     use_cache=not args.no_cache, predictor_period=args.predictor_period)
    _output_dir(args.output)
    Path(args.output).write_text(text)
    print(json.dumps({"modelica": args.output, "model": name}) if args.json else f"{args.output}: model {name}")
    return 0


def cmd_import_mjcf(args):
    from fmigen.frontends.mjcf import import_mjcf
    system = import_mjcf(args.file)
    summary = {"name": system.name,
               "bodies": [b for b in system.bodies if b != "ground"],
               "joints": [{"name": j.name, "kind": j.kind, "parent": j.parent.label, "child": j.child.label,
                           "coordinates": [c.name for c in j.coordinates]} for j in system.joints.values()],
               "cut": system.cut or [],
               "inputs": [i.name for i in system.inputs],
               "spring_dampers": [s.name for s in system.springs] + [s.name for s in system.rotational_springs],
               "independent": system.independent,
               "preferred_independent": system.preferred_independent}
    if args.json:
        print(json.dumps(summary))
        return 0
    print(f"{args.file}: '{system.name}', {len(summary['bodies'])} bodies")
    for j in summary["joints"]:
        cut = "  (loop closure)" if j["name"] in summary["cut"] else ""
        coords = "" if cut else f" {j['coordinates']}"
        print(f"  {j['kind']:<11s} {j['name']}: {j['parent']} -> {j['child']}{coords}{cut}")
    print(f"  inputs: {', '.join(summary['inputs']) or 'none'}; spring-dampers: "
          f"{', '.join(summary['spring_dampers']) or 'none'}")
    if system.independent:
        print(f"  independent: {', '.join(system.independent)} (fmigen:independent)")
    elif system.preferred_independent:
        print(f"  independent: {', '.join(system.preferred_independent)} (actuated), where Φ_d is regular "
              "at the start")
    print(f"build it with: fmigen build {args.file}")
    return 0


def _common(p, solver=True):
    """The mechanism argument, --json and (with ``solver``) --solver and --step."""
    p.add_argument("mechanism", help="mechanism module: a path (mechanisms/fourbar.py) or a bare name (fourbar)")
    p.add_argument("--json", action="store_true",
                   help="machine-readable output on stdout (progress stays on stderr)")
    if solver:
        p.add_argument("--solver", choices=["euler", "symplectic", "rk4"], default="rk4",
                       help="fixed-step integrator: explicit Euler, semi-implicit (symplectic) Euler or "
                            "classical RK4 (default rk4)")
        p.add_argument("--step", type=positive, default=1e-3,
                       help="internal step in seconds (default 1e-3); settable before initialization as the fixed parameter internal_step")


def _add_build(sub):
    """fmigen build."""
    p = sub.add_parser("build", help="build an FMU (FMI 2.0/3.0, Co-Simulation or Model Exchange)",
                       description="Build an FMU of a mechanism: FMI 2.0 or 3.0, Co-Simulation or Model "
                                   "Exchange, with sources (buildDescription.xml for FMI 3.0) and, when "
                                   "mingw-w64 is installed (and FMIGEN_WINDOWS is not 0), a cross-compiled win64 DLL.")
    _common(p)
    p.add_argument("--fmi", type=_choices("2", "3"), default="2",
                   help="FMI version: 2, 3, or both as 2,3 (default 2)")
    p.add_argument("--kind", type=_choices("cs", "me"), default="cs",
                   help="interface type: cs = Co-Simulation (fixed-step integrator inside), "
                        "me = Model Exchange (states q_i and their velocities), or both as cs,me "
                        "(default cs). Several variants come from one derivation and are written as "
                        "<output stem>_fmi<v>_<kind>.fmu")
    p.add_argument("-o", "--output", required=True, help="output .fmu path")
    p.add_argument("--runtime", choices=["c", "python"], default="c",
                   help="c: generated C compiled into the FMU (default); python: the same model as generated "
                        "pure Python packaged with pythonfmu (FMI 2.0 CS only; no compiler needed, needs a "
                        "Python interpreter with the FMU)")
    p.add_argument("--order", help="Gröbner variable order, highest first, e.g. c_alpha,s_alpha,c_phi,s_phi")
    p.add_argument("--no-cache", action="store_true",
                   help="derive everything again (Gröbner bases, the derived model, the compiled library) "
                        "instead of using the disk cache")
    from fmigen.generate.formulation import AUGMENTED
    from fmigen.kinematics import KINEMATICS
    p.add_argument("--kinematics", choices=[*KINEMATICS, *AUGMENTED],
                   default="groebner",
                   help="formulation: groebner (triangular sequences, default), newton (one Newton "
                        "iteration over all dependent coordinates) or newton-loop (Newton on each loop) solve "
                        "the kinematics of the embedded ODE; baumgarte, penalty (paper 000) and spring (virtual "
                        "springs, paper 003) integrate all coordinates of the augmented system instead (states "
                        "q, v; the constraints drift, see constraint_residual)")
    p.add_argument("--newton-tol", type=positive, default=None,
                   help="Newton step tolerance of --kinematics newton|newton-loop (absolute, default 1e-10)")
    from fmigen.generate.codegen_recursive import DYNAMICS, RECURSIVE_FROM_COUPLING, RECURSIVE_FROM_F
    p.add_argument("--dynamics", choices=DYNAMICS, default="auto",
                   help="how the generated right-hand side solves the embedded ODE (same trajectories to "
                        "round-off): embedded forms the reduced mass matrix B^T M B (cost growing as f^2 to "
                        "f^3 in the f independent coordinates); recursive eliminates loop by loop, leaves to "
                        "root, without forming B (cost linear in the number of loops); auto (default) takes "
                        f"recursive from f = {RECURSIVE_FROM_F} independent coordinates on, the measured "
                        f"crossover, where B is dense (at least {100 * RECURSIVE_FROM_COUPLING:.0f} percent of its entries "
                        "can be non-zero: loops nested in loops, not independent corners). Not with "
                        "--kinematics baumgarte|penalty|spring or --runtime python")
    p.add_argument("--realtime", action="store_true",
                   help="cap every iterative loop at what this mechanism's workspace sweep needs (the most "
                        "iterations of each loop over the sweep's points, stepped with random velocities and "
                        "inputs, and their assembly; x2 + 2), not the global caps; a step that would need more "
                        "returns Discard. The caps are in the FMU's documentation (Gröbner kinematics, C runtime)")
    from fmigen.generate.formulation import add_options as add_formulation_options
    add_formulation_options(p)
    p.set_defaults(func=cmd_build)


def _add_validate(sub):
    """fmigen validate."""
    p = sub.add_parser("validate", help="build, run in fmpy and compare with the references",
                       description="Build the FMU (from the cached derivation of an earlier build when there "
                                   "is one), simulate it in fmpy, integrate the full DAE with IDA (and, "
                                   "for a mechanism with a joint description, the independent Cartesian "
                                   "reference), check the FMU trajectory's energy balance, and compare. "
                                   "Exits 1 when an error exceeds its tolerance.")
    _common(p)
    p.add_argument("--stop-time", type=positive, default=2.0, help="simulated time in s (default 2)")
    p.add_argument("--output-interval", type=positive, default=None,
                   help="communication step (default: 10 ms rounded to a multiple of --step)")
    p.add_argument("--tol", type=positive, default=1e-6,
                   help="max absolute error allowed per coordinate (default 1e-6)")
    p.add_argument("--velocity-tol", type=positive, default=1e-5,
                   help="max absolute error allowed per velocity der(q) (default 1e-5)")
    p.add_argument("--residual-tol", type=positive, default=1e-12,
                   help="max constraint_residual allowed (default 1e-12)")
    p.add_argument("--report", help="write a self-contained HTML page: every coordinate against the references, "
                                    "errors over time, constraint residual, energy balance, settings, versions, "
                                    "commit, pass/fail")
    p.add_argument("--peer", choices=["mujoco"], default=None,
                   help="also run the joint description in MuJoCo (pip install mujoco), driven by the same --input "
                        "signals, and compare with the FMU")
    p.add_argument("--energy-tol", type=positive, default=1e-6,
                   help="max relative energy-balance drift max|E(t) - E(0) - W(t)| / scale of the FMU's "
                        "trajectory (default 1e-6, see README)")
    p.add_argument("--drive-tol", type=positive, default=1e-6,
                   help="max |drive_<q> - the reference's drive at the FMU's state| / max |drive| of a prescribed "
                        "coordinate (s.prescribe; default 1e-6)")
    p.add_argument("--reference-rtol", type=positive, default=1e-12, help="IDA relative tolerance (default 1e-12)")
    p.add_argument("--cartesian-rtol", type=positive, default=1e-11,
                   help="CVODE relative tolerance of the Cartesian reference, run for mechanisms with a joint "
                        "description (default 1e-11)")
    p.add_argument("--check-reference", action="store_true",
                   help="also solve the reference at 100x rtol and report the difference")
    p.add_argument("--input", action="append", metavar="NAME=EXPR", default=None,
                   help="drive an input with an expression in t (repeatable), e.g. "
                        "'rack_demand=0.01*smoothstep(t, 0.1, 0.2)' (smoothstep: the C2 step 0 -> 1 from t0 to "
                        "t1; also + - * / **, pi, E and the usual functions, see the README); the references (and "
                        "MuJoCo with --peer) use the expression, the FMU its samples at every step with their "
                        "slopes as input derivatives; other inputs stay at their start values")
    p.add_argument("--plot", help="write a PNG of the trajectories and errors")
    p.add_argument("--fmu", help="validate this FMU (built earlier by fmigen build) instead of building one; "
                                 "its own solver and internal step apply")
    p.add_argument("--no-cache", action="store_true",
                   help="derive the model again instead of reusing the cached derivation of an earlier "
                        "build (the default reuses it when the mechanism and fmigen are unchanged)")
    p.set_defaults(func=cmd_validate)


def _add_check_and_triangularize(sub):
    """fmigen check and fmigen triangularize."""
    p = sub.add_parser("check", help="sweep the workspace: representation and physical singularities, "
                                     "branch consistency of the generated kinematics",
                       description="Sweep the workspace reachable from the start by Newton continuation and "
                                   "report where a Gröbner sequence degenerates (and which alternative "
                                   "sequence covers it), where the partition is singular (dead centres, "
                                   "workspace limits, with the independent coordinates regular there), and "
                                   "whether the generated C kinematics, called along every path, stays on "
                                   "the continuation's branch. Exits 1 when it does not.")
    _common(p, solver=False)
    p.add_argument("--no-cache", action="store_true", help="recompute Gröbner bases")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("triangularize", help="show the Gröbner solution sequence of each block",
                       description="Triangularize the constraint blocks and list the solution sequence.")
    _common(p, solver=False)
    p.add_argument("--order", help="Gröbner variable order, highest first")
    p.add_argument("--no-cache", action="store_true", help="recompute Gröbner bases")
    p.set_defaults(func=cmd_triangularize)


def _add_assemble(sub):
    """fmigen assemble."""
    p = sub.add_parser("assemble", help="list all assembly configurations, complex and real",
                       description="All assembly configurations at the given independent coordinates: "
                                   "grevlex Gröbner basis (Singular), Sylvester matrix, I/O polynomial "
                                   "(paper 001), back-substitution; each with its relative constraint residual.")
    _common(p, solver=False)
    p.add_argument("--inputs", help="independent coordinates (or geometry parameters), name=value,... "
                                    "in SI units, angles in radians (or with a deg suffix); default: start values")
    p.add_argument("--hidden", help="variable hidden in the Sylvester matrix (default: the mechanism's choice or the last)")
    p.add_argument("--method", choices=["auto", "sylvester", "lex"], default="auto",
                   help="sylvester (paper 001), lex (lex basis + back-substitution) or auto (default)")
    p.add_argument("--sylvester", choices=["smallest", "full"], default="smallest",
                   help="Sylvester matrix from the smallest square subset of the basis (default) or all of it")
    p.add_argument("--cross-check", action="store_true", help="also solve by the lex route and compare")
    p.add_argument("--imag-tol", type=positive, default=1e-9,
                   help="a solution is complex when a coordinate's imaginary part exceeds this (relative, default 1e-9)")
    p.add_argument("--no-cache", action="store_true", help="recompute Gröbner bases and determinants")
    p.set_defaults(func=cmd_assemble)


def _add_mjcf(sub):
    """fmigen export-mjcf and fmigen import-mjcf."""
    p = sub.add_parser("export-mjcf", help="write a joint-based mechanism as a MuJoCo model (MJCF)",
                       description="Write the mechanism's bodies and joints as MJCF: the spanning tree as nested "
                                   "bodies whose joint qpos are fmigen's coordinates, loop closures as connect/weld "
                                   "equalities (a cut universal joint: a connect and a tendon equality holding its "
                                   "axes perpendicular; a cut prismatic, cylindrical, planar or free joint is an "
                                   "error), joint forces as motors, spring-dampers as joint springs and "
                                   "tendons, the assembled start as keyframe 'start'.")
    _common(p, solver=False)
    p.add_argument("-o", "--output", help="MJCF file to write (default: stdout)")
    p.add_argument("--timestep", type=positive, default=1e-3, help="MuJoCo timestep in s (default 1e-3)")
    p.set_defaults(func=cmd_export_mjcf)

    p = sub.add_parser("import-mjcf", help="read a MuJoCo model (MJCF) as a mechanism and summarize it",
                       description="Read an MJCF file (hinge, slide joints and their combinations, ball and free joints, connect and "
                                   "weld equalities, joint motors, joint springs, two-site spatial tendons) "
                                   "and list the bodies, joints and loop closures fmigen sees. Anything else that "
                                   "changes the dynamics is an error naming it. Any verb that takes a mechanism "
                                   "also takes the .xml file itself (fmigen build model.xml).")
    p.add_argument("file", help="MJCF file")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(func=cmd_import_mjcf)


def _export_fmu_wrapper(args):
    """export-modelica --fmu: the FMU unzipped next to the .mo (as
    OpenModelica's importFMU unzips into its working directory) and a
    Modelica wrapper that loads its binary from there."""
    import zipfile
    from fmigen.build.pipeline import load_mechanism
    from fmigen.tools.modelica import identifier
    from fmigen.tools.modelica_fmu import fmu_wrapper
    fmu = Path(args.fmu)
    if not fmu.is_file():
        raise ModelError(f"--fmu {fmu}: no such file")
    mech = load_mechanism(args.mechanism, not args.no_cache)
    out = Path(args.output)
    unzipdir = out.with_name(out.stem + "_fmu").resolve()
    text, name = fmu_wrapper(fmu, unzipdir, args.package)
    model = name.split(".")[-1]
    if model != identifier(mech.name, ""):
        raise ModelError(f"--fmu {fmu} is the FMU of '{model}', not of the mechanism '{mech.name}'")
    _output_dir(args.output)
    with zipfile.ZipFile(fmu) as z:
        z.extractall(unzipdir)
    out.write_text(text)
    print(json.dumps({"modelica": args.output, "model": name, "fmu_directory": str(unzipdir)}) if args.json
          else f"{args.output}: model {name} (wrapper of {fmu}, unzipped to {unzipdir})")
    return 0


def _add_modelica(sub):
    """fmigen export-modelica."""
    p = sub.add_parser("export-modelica", help="write the reduced model as self-contained Modelica source",
                       description="Write the embedded equations of motion as a Modelica package: the independent "
                                   "coordinates and velocities as states, one function per kinematic block (the "
                                   "Gröbner sequence with the root nearest a prediction, Newton with fixed "
                                   "iteration bounds), the branch predictor as sampled discrete variables, the "
                                   "mass matrix and right-hand side as equations, parameters, inputs and outputs "
                                   "with their units (a hard point with its range as min/max and an assert), "
                                   "joint reactions (the accelerations and multipliers as equations) and "
                                   "prescribed coordinates (the filter's acceleration, the drive an unknown); a "
                                   "kinematic mechanism as its kinematics alone (the independent coordinates and "
                                   "velocities inputs); coordinate switching (switch_independent) as every "
                                   "partition's kinematics, the active one's independent coordinates as states and "
                                   "a when/reinit that switches where the FMU does. Built-in Modelica functions "
                                   "only (no Modelica Standard Library, no external C). Refused, with a message: "
                                   "coordinate switching together with a kinematic interface, joint reactions or "
                                   "prescribed coordinates.")
    _common(p, solver=False)
    p.add_argument("-o", "--output", required=True, help=".mo file to write")
    p.add_argument("--package", help="name of the enclosing package (default: the mechanism's name)")
    p.add_argument("--predictor-period", type=positive, default=1e-3,
                   help="period in s of the branch predictor's samples (default 1e-3)")
    p.add_argument("--no-cache", action="store_true", help="recompute Gröbner bases")
    p.add_argument("--fmu", help="write instead a Modelica wrapper of this FMI 2.0 Co-Simulation FMU of the "
                                 "mechanism (external C functions that load its binary; the FMU is unzipped to "
                                 "<output stem>_fmu/ next to the .mo)")
    p.set_defaults(func=cmd_export_modelica)


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """Every verb's parser, in the order --help lists them.  ``verb``: the
    command line's first word; when it is a verb of this module (build,
    validate, ...), the parser holds this module's verbs only, without the
    verbs whose parsers live in the tools' modules (bench, sweep, bundle,
    doctor), whose imports a build never needs: a command line that names
    a verb is parsed by that verb's parser alone."""
    if verb is not None:
        parser, sub = _parser(tools=False)
        if verb in sub.choices:
            return parser
    return _parser(tools=True)[0]


def _parser(tools: bool):
    """(the parser, its subparsers' action); ``tools``: with the tools' verbs."""
    parser = argparse.ArgumentParser(
        prog="fmigen",
        description="Turn a closed-loop mechanism into an exact, real-time-capable FMU "
                    "(Gröbner-basis triangularization + embedding + generated C).")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_build(sub)
    if tools:
        from fmigen.tools.bench import add_parser as add_bench_parser
        add_bench_parser(sub)
    _add_validate(sub)
    _add_check_and_triangularize(sub)
    _add_assemble(sub)
    _add_mjcf(sub)
    _add_modelica(sub)
    if tools:
        from fmigen.tools.sweep import add_parser as add_sweep_parser
        add_sweep_parser(sub)
        from fmigen.verify.bundle import add_parser as add_bundle_parser
        add_bundle_parser(sub)
        from fmigen.tools.doctor import add_parser as add_doctor_parser
        add_doctor_parser(sub)
    return parser, sub


def main(argv=None):
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words[0] if words and not words[0].startswith("-") else None).parse_args(words)
    # after the parse: --help should not wait for sympy's import
    from fmigen.build.process import tune
    tune()
    from fmigen.build.progress import Progress
    try:
        with Progress() as args.progress:
            return args.func(args)
    except ModelError as e:
        print(f"fmigen: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        from fmigen.fmi.fmu import BuildError   # here: fmu imports sympy, and --help should not wait for it
        if isinstance(e, BuildError):
            print(f"fmigen: error: building the FMU failed: {e}", file=sys.stderr)
            return 2
        from fmigen.kinematics.groebner import GroebnerError
        if isinstance(e, GroebnerError):
            # where no Newton fallback exists (fmigen assemble lists every
            # assembly); the message is one line naming the cause
            print(f"fmigen: error: {e}", file=sys.stderr)
            return 2
        # a file the command line names that cannot be read or written (a
        # missing MJCF file, a plot into a directory that does not exist)
        if isinstance(e, OSError) and e.filename is not None:
            print(f"fmigen: error: {e.strerror}: {e.filename}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
