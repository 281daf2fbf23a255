"""Stage 8 — validate: run the FMU in fmpy and compare with the references.

Two references, each compared with the FMU at every output point (maximum
absolute error per coordinate, angles compared directly — the FMU's angles
are continuous as the references' are: a dependent one is atan2 of its sin
and cos moved by whole turns to the one nearest its last accepted value —
and per velocity der(q)):

* ``ida`` (``reference.py``), for every mechanism: the full augmented DAE of
  the model stage's M, F, Φ, integrated with IDA from its own assembly of the
  start (Newton on Φ = 0 with the independent coordinates held).  It checks
  the partition, embedding, triangularization and generated code — but it
  shares the equations of motion with the FMU, so a wrong M or F passes it.
* ``cartesian`` (``cartesian.py``), for mechanisms with a joint description
  (``mech.joint_system``): Newton–Euler in absolute coordinates with the
  constraints written from the joint definitions.  It shares no equation with
  the model stage, so it also checks the equations of motion.

And the energy balance of the FMU's own trajectory: E = T + V (gravity) and
W = ∫ P_in dt, the work of every other load (generalized forces, point
forces, springs), give ``energy_drift`` = max |E(t) − E(0) − W(t)| over the
largest energy exchanged (``energy.energy_drift``).  For a joint-described
mechanism T, V and P_in come from the joint description (body masses,
inertias and twists by the Cartesian forward kinematics): independent of the
model stage.  Otherwise T = ½ vᵀ M v uses the DAE's M — shared with the
model, so it checks the integration (the FMU's step and its velocities), not
the equations — and V, P_in come from the Mechanism's bodies and loads.

Inputs stay at their start values unless ``input_signals`` gives some of
them as expressions in t (``parse_input_signals``; ``smoothstep(t, t0, t1)``
is the C² step 0 → 1).  The references then use the expression itself; the
FMU gets it sampled at every communication point, with the slope to the
next sample as its input derivative where the FMU can interpolate inputs
(fmi2SetRealInputDerivatives), so it follows the piecewise-linear signal
through the sample points, within ü h²/8 of the expression.
"""

from __future__ import annotations

import contextlib
import math
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import fmpy
import numpy as np

from fmigen.model import ModelError
from fmigen.verify.energy import energy_drift, work_integral
from fmigen.verify.compare import coordinate_error
from fmigen.build.pipeline import Compiled, as_mechanism, build_fmu, load_mechanism
from fmigen.verify.prescribed import cartesian_drives_along
from fmigen.verify.reference import ReferenceSolverError, assemble_newton, drives_at, solve_reference

DEFAULT_COORD_TOL = 1e-6
DEFAULT_VELOCITY_TOL = 1e-5
DEFAULT_RESIDUAL_TOL = 1e-12
#: Measured on the shipped mechanisms with RK4 at 1 ms over 2 s: see README.
DEFAULT_ENERGY_TOL = 1e-6
#: max |FMU's drive − the reference's at the FMU's state| / max |drive| of a
#: prescribed coordinate (``_drive_entry``).  Exact inputs give rounding
#: (1e-16); a demand signal gives the FMU its samples a hair early
#: (``simulate``), 1e-9 of a step's change of the demand, which the drive
#: sees times ω²·m: 2.1e-9 on the cart of tests/test_prescribe.py (ω = 100/s)
DEFAULT_DRIVE_TOL = 1e-6


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
    #: per reference ("ida", and "cartesian" for joint-described mechanisms):
    #: {"max_abs_error", "max_abs_velocity_error", "passed", ...}
    references: dict = field(default_factory=dict)
    #: relative energy-balance drift of the FMU's trajectory, and what T was computed from
    energy_drift: float = 0.0
    energy_source: str = ""
    #: why the energy balance could not be computed (then ``energy_drift`` is nan), else None
    energy_error: str | None = None
    #: the Cartesian reference's solution, when there is one
    cartesian: object = field(default=None, repr=False)
    #: the energy balance per FMU step: times, kinetic T, potential V, work W
    energy: dict = field(default_factory=dict, repr=False)
    #: what was run: solver, step, stop time, output interval
    settings: dict = field(default_factory=dict)
    #: unit per coordinate
    units: dict = field(default_factory=dict)

    def as_json(self):
        # the top-level errors are the IDA reference's (the keys predate the
        # Cartesian one); ``passed`` covers every reference and the energy
        return {"max_abs_error": self.max_abs_error,
                "max_abs_velocity_error": self.max_abs_velocity_error,
                "max_constraint_residual": self.max_constraint_residual,
                "references": self.references,
                # JSON has no nan: a balance that could not be computed is null, with its cause
                "energy_drift": None if self.energy_error else self.energy_drift,
                **({"energy_error": self.energy_error} if self.energy_error else {}),
                "passed": self.passed}


def simulate(fmu_path, names, stop_time, output_interval, start_values=None, signals=None, extra=()):
    """The FMU in fmpy; ``signals``: {input name: f(t) (numpy)}, sampled at
    every output point (``validate``'s module docstring); ``extra``: more
    outputs to record (the drives of prescribed coordinates)."""
    kw = {}
    if signals:
        # samples at the communication points k·H (fmpy's own arithmetic),
        # listed a hair (1e-9 H) early: at a communication point fmpy takes
        # the slope of the table segment its time falls in, and on a sample
        # itself that is the segment *before* it, a slope one step late
        times = np.arange(int(round(stop_time / output_interval)) + 2) * output_interval
        md = fmpy.read_model_description(str(fmu_path))
        # every input in the table (fmpy warns about each missing one): the
        # signals, the others at their start values
        inputs = [v for v in md.modelVariables if v.causality == "input"]
        table = np.zeros(len(times), dtype=[("time", float)] + [(v.name, float) for v in inputs])
        table["time"] = times - 1e-9 * output_interval
        for v in inputs:
            table[v.name] = np.broadcast_to(signals[v.name](times), times.shape) if v.name in signals \
                else float(v.start)
        kw = {"input": table,
              "set_input_derivatives": bool(md.coSimulation and md.coSimulation.canInterpolateInputs)}
    # fmpy prints the FMU's messages ("[DISCARD] singular configuration ...")
    # on stdout, which `validate --json` keeps for the JSON alone: they go to
    # stderr.  (Not a logger= of our own: fmpy's native logging proxy keeps
    # a pointer to it after the run, see bundle.check_variant.)
    with _fmpy_input_derivatives_sized(), contextlib.redirect_stdout(sys.stderr):
        return fmpy.simulate_fmu(str(fmu_path), stop_time=stop_time, output_interval=output_interval,
                                 output=[*names, *[f"der({n})" for n in names], "constraint_residual", *extra],
                                 start_values=start_values or {}, **kw)


class _fmpy_input_derivatives_sized:
    """fmpy 0.3's ``Input`` allocates the derivative buffer of its
    fmi2SetRealInputDerivatives call for exactly 9 inputs (a ctypes array of
    9), so any other number fails (``derivatives[:] = d``: "Can only assign
    sequence of same size").  Within this block its continuous inputs get a
    buffer of their own size; outside it fmpy is untouched."""

    def __enter__(self):
        from fmpy import simulation
        self.cls = simulation.Input
        self.init = self.cls.__init__
        init = self.init

        def sized(obj, *args, **kwargs):
            init(obj, *args, **kwargs)
            if hasattr(obj, "continuous"):      # (not set without signals)
                obj.continuous = [c._replace(derivatives=(c.values._type_ * len(c.vrs))())
                                  for c in obj.continuous]

        self.cls.__init__ = sized
        return self

    def __exit__(self, *exc):
        self.cls.__init__ = self.init
        return False


def smoothstep(tt, t0, t1):
    """0 before t0, 1 after t1, and the quintic s³(10 − 15s + 6s²) between
    (s = (t − t0)/(t1 − t0)): a step with continuous first and second
    derivatives, which the references integrate without a discontinuity."""
    import sympy as sp
    s = (tt - t0) / (t1 - t0)
    return sp.Piecewise((0, tt < t0), (s**3 * (10 - 15 * s + 6 * s**2), tt < t1), (1, True))


def fmu_integrator(path) -> tuple[str, float]:
    """(solver, internal step) an fmigen FMU was built with: its
    ``sources/fmu_config.c`` (every fmigen FMU carries its sources; one
    built before that file existed: ``sources/fmu_config.h``)."""
    import re
    import zipfile
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"no FMU at {path}")
    try:
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            name = next((f for f in ("sources/fmu_config.c", "sources/fmu_config.h") if f in names), None)
            config = z.read(name).decode() if name else None
    except zipfile.BadZipFile:
        config = None
    if config is None:
        raise ModelError(f"{path} is not an FMU built by fmigen (no sources/fmu_config.c in a zip file)")
    solver = re.search(r"(?:fmigen_default_solver =|FMIGEN_DEFAULT_SOLVER) \d+;? /\* (\w+) \*/", config)
    step = re.search(r"(?:fmigen_default_step =|FMIGEN_DEFAULT_STEP) ([^\s;]+)", config)
    if not (solver and step):
        raise ModelError(f"{path}: its {name} names no solver or internal step")
    return solver.group(1), float(step.group(1))


#: what an input signal's text may call (``_read_signal``)
SIGNAL_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp", "log",
                    "sqrt", "Abs", "sign", "Min", "Max", "floor", "ceiling", "Heaviside", "smoothstep")


def _read_signal(text, t_sym):
    """A signal's text as a sympy expression in t: numbers, t, pi, E,
    + − * / ** (or ^) and ``SIGNAL_FUNCTIONS``.  Checked as Python syntax
    first: sympify evaluates its text, and a command-line argument must
    not run code (``__import__("os").system(...)``)."""
    import ast
    import sympy as sp
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.BitXor,
               ast.USub, ast.UAdd, ast.Load, ast.Call, ast.Name)
    for node in ast.walk(ast.parse(text.strip(), mode="eval")):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
                and not isinstance(node.value, bool):
            continue
        if not isinstance(node, allowed):
            raise ValueError(f"only numbers, t, pi, E, + - * / ** and the functions {', '.join(SIGNAL_FUNCTIONS)} "
                             f"may appear, not {ast.unparse(node) if hasattr(ast, 'unparse') else type(node).__name__}")
        if isinstance(node, ast.Call) and (not isinstance(node.func, ast.Name) or node.keywords
                                           or node.func.id not in SIGNAL_FUNCTIONS):
            raise ValueError(f"unknown function in '{ast.unparse(node)}' (known: {', '.join(SIGNAL_FUNCTIONS)})")
        if isinstance(node, ast.Name) and node.id not in ("t", "pi", "E", *SIGNAL_FUNCTIONS):
            raise ValueError(f"it uses '{node.id}': only t may appear (and the constants pi, E)")
    names = {f: getattr(sp, f) for f in SIGNAL_FUNCTIONS if f != "smoothstep"}
    return sp.sympify(text, locals={**names, "t": t_sym, "pi": sp.pi, "E": sp.E, "smoothstep": smoothstep})


def parse_input_signals(mech, signals) -> dict:
    """{input name: sympy expression in t} from {name: text or expression}
    (or a list of "name=expression" texts): only the mechanism's inputs,
    only t as a symbol."""
    import sympy as sp
    from fmigen.model import t as T_SYM
    if not signals:
        return {}
    if not isinstance(signals, dict):
        pairs = {}
        for text in signals:
            name, sep, expr = str(text).partition("=")
            if not sep:
                raise ModelError(f"input signal '{text}': expected NAME=EXPRESSION, e.g. "
                                 "rack_demand=0.01*smoothstep(t, 0.1, 0.2)")
            pairs[name.strip()] = expr.strip()
        signals = pairs
    # not a prescribed coordinate's drive: the FMU sets it, it is no input
    known = {i.name for i in mech.inputs if not i.hidden}
    out = {}
    for name, expr in signals.items():
        if name not in known:
            raise ModelError(f"input signal for '{name}': '{mech.name}' has no such input "
                             f"(inputs: {', '.join(sorted(known)) or 'none'})")
        try:
            e = _read_signal(expr, T_SYM) if isinstance(expr, str) else sp.sympify(expr)
        except (sp.SympifyError, SyntaxError, TypeError, ValueError) as err:
            raise ModelError(f"input signal for '{name}': cannot read '{expr}' ({err})") from None
        if e.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
            raise ModelError(f"input signal for '{name}': '{expr}' is not finite ({e})")
        stray = e.free_symbols - {T_SYM}
        if stray:
            raise ModelError(f"input signal for '{name}' uses {sorted(map(str, stray))}: "
                             "only t may appear")
        out[name] = e
    return out


def _check_signals(fns: dict, stop_time: float, interval: float):
    """Every signal a finite real number at every sample (where the FMU
    gets it): log(t − 1) is NaN for t < 1, and the FMU would refuse it only
    mid-run, as a failed fmi2SetReal."""
    times = np.arange(int(round(stop_time / interval)) + 2) * interval
    for name, f in fns.items():
        with np.errstate(all="ignore"):
            values = np.broadcast_to(np.asarray(f(times), dtype=complex), times.shape)
        bad = ~(np.isfinite(values) & (values.imag == 0))
        if bad.any():
            k = int(np.argmax(bad))
            raise ModelError(f"input signal for '{name}' is not a finite real number at t = {times[k]:g} s "
                             f"({values[k].real if values[k].imag == 0 else values[k]})")


def _signal_functions(signals: dict) -> dict:
    """{name: numpy f(t)} of parsed signals."""
    import sympy as sp
    from fmigen.model import t as T_SYM
    return {n: sp.lambdify(T_SYM, e, "numpy") for n, e in signals.items()}


def with_input_signals(dae, signals: dict):
    """The DAE with those inputs replaced by their expressions in t (no
    longer inputs: the references integrate the signal itself)."""
    import dataclasses
    import sympy as sp
    if not signals:
        return dae
    by_name = {i.name: i.symbol for i in dae.mechanism.inputs}
    sub = {by_name[n]: sp.sympify(e) for n, e in signals.items()}
    keep = [k for k, u in enumerate(dae.inputs) if u not in sub]
    return dataclasses.replace(dae, F=dae.F.xreplace(sub),
                               inputs=[dae.inputs[k] for k in keep],
                               input_values=[dae.input_values[k] for k in keep],
                               outputs={k: sp.sympify(v).xreplace(sub) for k, v in dae.outputs.items()})


def coordinate_errors(dae, result, ref):
    return {c.name: float(coordinate_error(result[c.name], ref.q[:, i]).max())
            for i, c in enumerate(dae.mechanism.coordinates)}


def model_energy_balance(dae, times, q, v, signals=None):
    """(T, V, W) along a trajectory (rows of q, v in model order) from the
    Mechanism: T = ½ vᵀ M v with the DAE's M — the model stage's own M, so
    this checks the integration, not the equations of motion — V from gravity
    and the bodies' centre-of-mass heights, W = ∫ (Σ Q_i v_i + Σ f · ṗ) dt
    by ``energy.work_integral`` (inputs at their start values, or the
    expressions in t of ``signals``)."""
    import sympy as sp

    from fmigen.model import t as T_SYM
    mech = dae.mechanism
    dyn = [c.symbol for c in mech.coordinates]
    to_v = {qd.diff(T_SYM): vs for qd, vs in zip(dyn, dae.v_sym)}
    to_q = dict(zip(dyn, dae.q_sym))
    values = {p.symbol: float(p.value) for p in mech.parameters}
    values.update({i.symbol: sp.sympify((signals or {}).get(i.name, float(i.start))) for i in mech.inputs})

    def plain(expr):
        return sp.sympify(expr).xreplace(to_v).xreplace(to_q).xreplace(values)

    g = [sp.sympify(e) for e in mech.gravity]
    potential = -sum((b.mass * sum(gi * ci for gi, ci in zip(g, b.com)) for b in mech.bodies), sp.Integer(0))
    power = sum((mech.generalized_forces[c.name] * c.symbol.diff(T_SYM)
                 for c in mech.coordinates if c.name in mech.generalized_forces), sp.Integer(0))
    for point, force in mech.point_forces:
        power += sum(sp.sympify(f) * sp.diff(sp.sympify(p), T_SYM) for p, f in zip(point, force))
    args = [T_SYM, *dae.q_sym, *dae.v_sym]
    V_fn = sp.lambdify(args, plain(potential), "numpy")
    P_fn = sp.lambdify(args, plain(power), "numpy")
    T, V, P = np.zeros(len(times)), np.zeros(len(times)), np.zeros(len(times))
    for i, tt in enumerate(times):
        T[i] = 0.5 * v[i] @ dae.numeric.M(tt, q[i]) @ v[i]
        V[i] = float(V_fn(tt, *q[i], *v[i]))
        P[i] = float(P_fn(tt, *q[i], *v[i]))
    return T, V, work_integral(P, times)


def _reference_entry(errors, verrors, coord_tol, velocity_tol, **extra):
    return {"max_abs_error": errors, "max_abs_velocity_error": verrors,
            "passed": bool(all(e <= coord_tol for e in errors.values())
                           and all(e <= velocity_tol for e in verrors.values())), **extra}


def _drive_entry(mech, result, at_fmu, along, drive_tol):
    """The drive comparison of a reference entry ({} without prescribed
    coordinates), per prescribed coordinate, relative to the reference's
    largest |drive| (the drive's scale; N or N.m):

    * ``max_rel_drive_error``, the check: the FMU's ``drive_<q>`` against
      the reference's drive at the FMU's own state and input (``at_fmu``:
      {coordinate: drive at every output row}), the reference's equations
      solved for it there.  Its trajectory is checked by the coordinates;
      this checks the drive the FMU reports for it.
    * ``max_rel_drive_difference``, for information: against the drive
      along the reference's own trajectory (``along``).  The drive is
      about ω²·m times a coordinate's difference (ω = 1/time_constant), so
      the trajectories' difference shows here amplified — 1e-7 m becomes
      2.5e-3 N on a 2.5 kg cart at ω = 100/s.

    None for ``at_fmu`` or ``along``: the reference has none (it failed)."""
    if not mech.prescribed:
        return {}
    scale = {c: max(float(np.abs(d).max()), np.finfo(float).tiny) for c, d in (along or at_fmu or {}).items()}

    def rel(drives):
        return {p.coordinate: float(np.abs(np.asarray(result[p.drive], dtype=float) - drives[p.coordinate]).max()
                                    / scale[p.coordinate]) for p in mech.prescribed} if drives else {}

    err = rel(at_fmu)
    return {"max_rel_drive_error": err, "max_rel_drive_difference": rel(along),
            "drive_passed": bool(err) and all(e <= drive_tol for e in err.values())}


def _check_drives(mech, dae, references, result, fine, per, independent, signal_fns, ref, model, cart, drive_tol):
    """With prescribed coordinates: their drive comparisons in the IDA and
    Cartesian entries of ``references`` (``_drive_entry``; ``result``: the
    FMU's output rows, every ``per``-th of ``fine``, its rows at every
    step), and the FMU's drives as the Cartesian ``model``'s drive inputs,
    so that the energy balance of the FMU's trajectory counts their work."""
    if not mech.prescribed:
        return
    names = dae.names
    q_rows = np.column_stack([fine[n] for n in names])[::per]
    v_rows = np.column_stack([fine[f"der({n})"] for n in names])[::per]
    at_fmu = drives_at(dae, result["time"], q_rows, v_rows, independent, demands=signal_fns)
    # a reference that failed part way has no drive along all of the run
    along = ref.drive if len(ref.t) == len(result) else None
    references["ida"].update(_drive_entry(mech, result, at_fmu, along, drive_tol))
    if model is None:
        return
    if cart is not None:
        along = cartesian_drives_along(model, cart.t, dict(zip(cart.names, cart.q.T)), dict(zip(cart.names, cart.v.T)))
        at_fmu = cartesian_drives_along(model, result["time"], {n: result[n] for n in names},
                                        {n: result[f"der({n})"] for n in names})
        references["cartesian"].update(_drive_entry(mech, result, at_fmu, along, drive_tol))
    inputs = [i.name for i in model.system.inputs]
    for p in mech.prescribed:
        # the FMU's own drive at every step (exact there; the work integral
        # only reads the samples)
        model.input_fns[inputs.index(p.drive)] = lambda tt, d=np.asarray(fine[p.drive], dtype=float): \
            float(np.interp(tt, fine["time"], d))


def cartesian_reference(mech, dae, q0, independent, result, rtol, log, signals=None):
    """The Cartesian reference of a joint-described mechanism from the same
    start as the FMU: the assembled coordinates (the Mechanism's coordinates
    are relative joint coordinates of the same names), the independent
    velocities as given; parameters and inputs at the Mechanism's values
    (``signals``: {input name: f(t)} for those given as signals)."""
    from fmigen.verify.cartesian import CartesianError, CartesianModel
    system = mech.joint_system
    joint_names = {c.name for c in system.coordinates}
    foreign = [n for n in dae.names if n not in joint_names]
    if foreign:
        raise ModelError(f"'{mech.name}' has a joint description, but its coordinates {foreign} are not joint "
                         f"coordinates of '{system.name}' ({', '.join(sorted(joint_names))})")
    sys_params = {p.name for p in system.parameters}
    sys_inputs = {i.name for i in system.inputs}
    model = None
    try:
        model = CartesianModel(system, parameters={p.name: p.value for p in mech.parameters if p.name in sys_params},
                               inputs={i.name: (signals or {}).get(i.name, i.start) for i in mech.inputs
                                       if i.name in sys_inputs})
        log(f"integrating the Cartesian reference ({model.N} bodies in absolute coordinates, CVODE, rtol={rtol:g})")
        v0 = dae.start_velocity_guess()
        sol = model.simulate(dict(zip(dae.names, q0)), dict(zip(dae.names, v0)), independent, result["time"],
                             rtol=rtol)
    except Exception as e:      # noqa: BLE001 — any failure of the reference fails its entry, said why
        # a reference that cannot run is a failed validation, reported as such
        message = failure_message(e, CartesianError)
        log(f"the Cartesian reference failed: {message}")
        return model, None, message
    counts = model.solver.counts
    log(f"the Cartesian reference: {model.evaluations} evaluations, {counts['sparse']} by the sparse path and "
        f"{counts['svd']} by the SVD path; J's rank by its singular values {model.solver.rank.svds} times")
    return model, sol, None


def failure_message(error, *own) -> str:
    """One line saying why a reference (or the energy balance) failed: the
    message of one of its ``own`` exception classes as it stands (they name
    the cause); any other exception — a numerical library's, or a bug —
    with its type and the line that raised it, so that a validation ends
    with a failed entry and its cause instead of a traceback."""
    if isinstance(error, own):
        return str(error)
    import traceback
    where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    at = f" (raised at {Path(where.filename).name}:{where.lineno})" if where else ""
    return f"{type(error).__name__}: {error}{at}"


def _ida_reference(dae, q0, v0, times, independent, rtol, signal_fns, log):
    """The IDA reference at ``times`` and None, or, where IDA itself fails
    part way (at a singular configuration of the full constraints it
    cannot pass, say), its solution up to the last time it reached and the
    failure's message: a failed reference entry that says where, not an
    exception that ends the validation."""
    try:
        return solve_reference(dae, q0, v0, times, independent, rtol=rtol, demands=signal_fns), None
    except ReferenceSolverError as e:
        if e.partial is None:
            raise
        log(f"the DAE reference failed: {e}")
        return e.partial, f"{e} (the FMU ran to t = {times[-1]:g}: compared up to t = {e.partial.t[-1]:g})"


def _run_fmu(mech, existing_fmu, fmu_path, solver, step, stop_time, sample_interval, signal_fns, use_cache, log):
    """Simulate the FMU in fmpy to ``stop_time``, sampled every
    ``sample_interval``: ``existing_fmu`` when given, else one built here.
    Returns the prepared mechanism (assembled start), its DAE, the
    independent coordinates' names, the build's seconds and fmpy's result."""
    if existing_fmu is not None:
        # no build: the DAE and partition (for the reference's start) only
        from fmigen.build.derived import dae_of
        from fmigen.derive.partition import choose_partition
        from fmigen.build.pipeline import prepare_mechanism
        mech = prepare_mechanism(mech, log)   # a copy with the assembled start
        dae = dae_of(mech, use_cache)
        independent = [dae.names[i] for i in choose_partition(dae).independent]
        path = Path(existing_fmu)
        declared = {v.name for v in fmpy.read_model_description(str(path)).modelVariables}
        missing = [n for n in [*dae.names, "constraint_residual"] if n not in declared]
        if missing:
            raise ModelError(f"{path} is not an FMU of '{mech.name}': it lacks {', '.join(missing)}")
        build_seconds = 0.0
        log(f"simulating {path.name} in fmpy to t={stop_time}")
        result = simulate(path, dae.names, stop_time, sample_interval, signals=signal_fns,
                          extra=[p.drive for p in mech.prescribed])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(fmu_path) if fmu_path else Path(tmp) / f"{mech.name}.fmu"
            path, compiled = build_fmu(mech, path, solver=solver, step=step, log=log, use_cache=use_cache,
                                       reuse=use_cache)
            log(f"simulating {path.name} in fmpy to t={stop_time}")
            result = simulate(path, [c.name for c in mech.coordinates], stop_time, sample_interval,
                              signals=signal_fns, extra=[p.drive for p in mech.prescribed])
        # the prepared copy (assembled start) the FMU was built from; a
        # derived-model cache hit has no DAE, and the reference needs one
        from fmigen.build.derived import dae_of
        mech = compiled.mechanism
        dae = compiled.dae if isinstance(compiled, Compiled) else dae_of(mech, use_cache)
        independent = compiled.independent_names
        build_seconds = sum(compiled.seconds.values())
    return mech, dae, independent, build_seconds, result


def _computed_rows(result, per, stop_time, sample_interval, log):
    """fmpy's rows the FMU computed (``fine``, every step), every ``per``-th
    of them (the output interval's) and whether the FMU stopped before
    ``stop_time``; an error when it stopped before the first output time."""
    # After fmi2Discard fmpy repeats the last row; keep the trajectory the FMU
    # really computed and fail the validation if it stopped early.
    keep = np.concatenate([[True], np.diff(result["time"]) > 0])
    fine = result[keep]
    result = fine[::per]
    stopped_early = fine["time"][-1] < stop_time - 1e-9 * max(1.0, stop_time)
    if stopped_early:
        log(f"the FMU stopped at t={fine['time'][-1]:g} (fmi2Discard), before {stop_time:g}")
    if len(result) < 2:
        # a reference needs an interval to integrate over
        raise ModelError(f"the FMU stopped at t={fine['time'][-1]:g} (fmi2Discard; its message is above), "
                         f"before the first output time {sample_interval * per:g}: there is no trajectory "
                         "to validate")
    return fine, result, stopped_early


def _energy_balance(mech, dae, model, fine, q_fmu, v_fmu, independent, signals, log):
    """(drift, {t, T, V, W}, what T came from, None) of the FMU's trajectory
    (rows ``fine``, every step): from the joint description by the
    Cartesian ``model`` when the mechanism has one, else from the DAE.
    When it cannot be computed (the Cartesian model could not be made, or
    solving the trims at the FMU's start failed): (nan, {}, source, why)."""
    if mech.joint_system is not None:
        from fmigen.verify.cartesian import CartesianError
        source = "the joint description (independent of the model stage)"
        log("energy balance of the FMU's trajectory from the joint description")
        try:
            if model is None:
                raise CartesianError("the joint description's Cartesian model could not be made (see the "
                                     "Cartesian reference's error)")
            T, V, W = model.energy_balance(fine["time"], dict(zip(dae.names, q_fmu.T)),
                                           dict(zip(dae.names, v_fmu.T)), independent)
        except Exception as e:      # noqa: BLE001 — a failed balance is reported with its cause
            message = failure_message(e, CartesianError)
            log(f"the energy balance failed: {message}")
            return float("nan"), {}, source, message
    else:
        source = "the DAE's M (shared with the model stage: checks the integration only)"
        T, V, W = model_energy_balance(dae, fine["time"], q_fmu, v_fmu, signals)
    energy = {"t": np.asarray(fine["time"], dtype=float), "T": np.asarray(T), "V": np.asarray(V),
              "W": np.asarray(W)}
    return energy_drift(T, V, W), energy, source, None


def _mujoco_entry(mech, result, signals, coord_tol, velocity_tol, log, independent=None):
    """The MuJoCo peer's report entry: the joint description run in MuJoCo
    from the FMU's start and compared with its trajectory ``result``."""
    from fmigen.frontends.mjcf import MJCFError
    from fmigen.verify.mujoco_peer import compare_with_mujoco
    try:
        # the same input signals as the FMU and the references: MuJoCo
        # evaluates each expression in t at every RK4 stage
        entry = compare_with_mujoco(mech, result, log=log, inputs=signals, independent=independent)
        entry["passed"] = _reference_entry(entry["max_abs_error"], entry["max_abs_velocity_error"],
                                           coord_tol, velocity_tol)["passed"]
    except Exception as e:      # noqa: BLE001 — any failure of the peer fails its entry, said why
        # no MuJoCo, a description MJCF cannot hold, trims it cannot solve,
        # or MuJoCo's own error: a failed peer run, said why
        message = failure_message(e, MJCFError)
        log(f"the MuJoCo peer could not run: {message}")
        entry = {"max_abs_error": {}, "max_abs_velocity_error": {}, "passed": False, "error": message}
    return entry


def validate(spec, stop_time=2.0, solver="rk4", step=1e-3, output_interval=None,
             coord_tol=DEFAULT_COORD_TOL, residual_tol=DEFAULT_RESIDUAL_TOL, velocity_tol=DEFAULT_VELOCITY_TOL,
             energy_tol=DEFAULT_ENERGY_TOL, reference_rtol=1e-12, cartesian_rtol=1e-11, check_reference=False,
             fmu_path=None, existing_fmu=None, log=None, use_cache=True, peer=None,
             input_signals=None, drive_tol=DEFAULT_DRIVE_TOL) -> Report:
    """``fmu_path``: where to write the FMU built for the run (default a
    temporary file); ``existing_fmu``: validate that FMU instead of building
    one (it must have this mechanism's coordinates; its own internal step
    and solver apply, read from its sources (``fmu_integrator``), and
    ``solver``/``step`` are not used).
    ``use_cache``: build from the derived-model cache when it has this
    mechanism (``pipeline.build_fmus`` with ``reuse``), else derive and
    record it; False derives everything again.  ``peer="mujoco"``: also
    run the joint description in MuJoCo (``mujoco_peer.compare_with_mujoco``) from
    the FMU's start and compare; it counts in ``passed`` like the references.
    ``input_signals``: inputs as expressions in t ({name: text} or
    ["name=text", ...]; module docstring), the others at their start.
    ``drive_tol``: the drives of prescribed coordinates (``_drive_entry``)."""
    log = log or (lambda msg: None)
    if peer not in (None, "mujoco"):
        raise ModelError(f"unknown peer '{peer}' (the one peer is mujoco)")
    mech = (load_mechanism(spec, use_cache) if isinstance(spec, (str, Path)) else
            as_mechanism(spec, use_cache=use_cache))
    if mech.kinematic:
        raise ModelError(f"'{mech.name}' is kinematic (no dynamics): there is no DAE trajectory to "
                         "validate against; sweep its inputs instead")
    if existing_fmu is not None:
        # its own integrator, also for sampling it and in the report: sampled
        # every --step, a 2 ms Euler FMU took 1 ms steps (the shorter last
        # step of each communication step) and looked twice as accurate
        solver, step = fmu_integrator(existing_fmu)
    output_interval = output_interval or max(step, round(0.01 / step) * step)
    if not (step <= stop_time and output_interval <= stop_time):
        raise ModelError(f"the step ({step:g} s) and the output interval ({output_interval:g} s) must not exceed "
                         f"the stop time ({stop_time:g} s)")
    signals = parse_input_signals(mech, input_signals)
    signal_fns = _signal_functions(signals)
    if signals:
        log("input signals: " + ", ".join(f"{n} = {e}" for n, e in signals.items()))
    # The FMU is sampled every step (``per`` samples per output interval) for
    # the energy balance: the work integral's quadrature error at a 10 ms
    # spacing (4.5e-5 relative on the four-bar by Simpson) would hide the
    # FMU's own (~1e-8); at 1 ms it is 5e-9.  The coarser rows, every
    # ``per``-th, are the same numbers a 10 ms run gives (the FMU divides a
    # communication step into its internal steps).
    per = max(1, round(output_interval / step))
    sample_interval = output_interval / per
    _check_signals(signal_fns, stop_time, sample_interval)
    mech, dae, independent, build_seconds, result = _run_fmu(
        mech, existing_fmu, fmu_path, solver, step, stop_time, sample_interval, signal_fns, use_cache, log)
    fine, result, stopped_early = _computed_rows(result, per, stop_time, sample_interval, log)
    dae = with_input_signals(dae, signals)
    log(f"integrating the DAE reference (IDA, rtol={reference_rtol:g})")
    try:
        q0 = assemble_newton(dae, dae.start_guess(), independent)
        v0 = dae.start_velocity_guess()
        ref, ida_failure = _ida_reference(dae, q0, v0, result["time"], independent, reference_rtol, signal_fns,
                                          log)
    except Exception as e:      # noqa: BLE001 — every comparison needs its start and its trajectory
        # the other references start from its assembly and the report is
        # drawn against it: with no trajectory at all the validation ends here
        raise ModelError(f"the DAE reference (IDA) failed before its first output time: "
                         f"{failure_message(e, ReferenceSolverError)}") from None
    estimate = None
    if check_reference and ida_failure is None:
        log("re-solving the reference at 100x the tolerance to estimate its own error")
        coarse = solve_reference(dae, q0, v0, result["time"], independent, rtol=reference_rtol * 100,
                                 demands=signal_fns)
        estimate = float(np.abs(coarse.q - ref.q).max())
    # compared where IDA reached (all of the FMU's run unless it failed)
    reached = result[:len(ref.t)]
    errors = coordinate_errors(dae, reached, ref)
    verrors = {c.name: float(np.abs(reached[f"der({c.name})"] - ref.v[:, i]).max())
               for i, c in enumerate(dae.mechanism.coordinates)}
    references = {"ida": _reference_entry(errors, verrors, coord_tol, velocity_tol, rtol=reference_rtol)}
    if ida_failure is not None:
        references["ida"].update(passed=False, error=ida_failure)
    q_fmu = np.column_stack([fine[n] for n in dae.names])
    v_fmu = np.column_stack([fine[f"der({n})"] for n in dae.names])
    cart = None
    if mech.joint_system is not None:
        model, cart, failure = cartesian_reference(mech, dae, q0, independent, result, cartesian_rtol, log,
                                                   signal_fns)
        if cart is None:
            references["cartesian"] = {"max_abs_error": {}, "max_abs_velocity_error": {}, "passed": False,
                                       "rtol": cartesian_rtol, "error": failure}
        else:
            cerr = {n: float(coordinate_error(result[n], cart.column(n)).max()) for n in dae.names}
            cverr = {n: float(np.abs(result[f"der({n})"] - cart.v[:, cart.names.index(n)]).max())
                     for n in dae.names}
            references["cartesian"] = _reference_entry(cerr, cverr, coord_tol, velocity_tol, rtol=cartesian_rtol,
                                                       energy_drift=cart.energy_drift)
        _check_drives(mech, dae, references, result, fine, per, independent, signal_fns, ref, model, cart, drive_tol)
    else:
        _check_drives(mech, dae, references, result, fine, per, independent, signal_fns, ref, None, None, drive_tol)
        model = None
    drift, energy, source, energy_failure = _energy_balance(mech, dae, model, fine, q_fmu, v_fmu, independent,
                                                            signals, log)
    if peer == "mujoco":
        references["mujoco"] = _mujoco_entry(mech, result, signals, coord_tol, velocity_tol, log, independent)
    residual = float(np.abs(fine["constraint_residual"]).max())
    passed = (all(r["passed"] and r.get("drive_passed", True) for r in references.values())
              and residual <= residual_tol and energy_failure is None
              and drift <= energy_tol and not stopped_early)
    return Report(mech.name, errors, residual, passed,
                  {"coordinate": coord_tol, "velocity": velocity_tol, "constraint_residual": residual_tol,
                   "energy": energy_tol, "drive": drive_tol},
                  reference_rtol, estimate, build_seconds, result["time"], result, ref,
                  max_abs_velocity_error=verrors, references=references, energy_drift=drift,
                  energy_source=source, energy_error=energy_failure, cartesian=cart, energy=energy,
                  settings={"solver": solver, "step": step, "stop_time": stop_time,
                            "output_interval": output_interval, "reference_rtol": reference_rtol,
                            "cartesian_rtol": cartesian_rtol, "fmu": str(existing_fmu) if existing_fmu else None,
                            "peer": peer, "input_signals": {n: str(e) for n, e in signals.items()}},
                  units={c.name: c.unit for c in mech.coordinates})


def plot(report: Report, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(report.max_abs_error)
    ref = report.reference
    reached = len(ref.t)   # all of the run, unless IDA failed part way
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i, name in enumerate(names):
        axes[0].plot(report.times, report.fmu_result[name], label=f"{name} (FMU)")
        axes[0].plot(ref.t, ref.q[:, i], "k:", lw=1)
        err = coordinate_error(report.fmu_result[name][:reached], ref.q[:, i])
        axes[1].semilogy(ref.t, np.maximum(err, 1e-17), label=name)
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
