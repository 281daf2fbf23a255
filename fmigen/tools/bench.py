"""``fmigen bench``: time the kinematics formulations natively (paper 000,
Tables 1 and 3).

Every formulation goes through the same pipeline and codegen (only the
``kinematics`` argument of ``triangularize`` differs, or, for the augmented
formulations, the ``FMIGEN_FORMULATION`` macros in model_config.h), is
compiled as the FMU's binary is (-O2, and on x86-64 Linux the model's AVX
copy, which runs where the processor has AVX) together with the FMU's runtime
(``runtime/fmigen_core.c``, ``runtime/fmigen_augmented.c``, the numerical
kernels' unit ``runtime/fmigen_kernels.c`` and its AVX copy) and the native
harness ``runtime/bench_harness.c`` (no FMI layer, no ctypes, no fmpy), and
runs the
paper's experiment: explicit Euler, h = 1 ms, 3 s, the mechanism's default
forces.  Per row:

- ``ms_per_simulated_s``: median over ``repeats`` runs of the CPU time
  (CLOCK_PROCESS_CPUTIME_ID around the whole loop) / simulated seconds;
- ``median_step_us`` / ``max_step_us``: per-step times (CLOCK_MONOTONIC) in a
  second set of repeats; ``max_step_us`` is the median over those repeats of
  each repeat's largest step (one preemption does not decide it); the
  harness pins itself to one CPU, runs SCHED_FIFO and locks its pages where
  it may (``realtime`` in the row says what it got),
  ``max_step_us_worst`` the largest step seen at all;
- ``instructions_per_step``: ``valgrind --tool=callgrind`` instructions (Ir) of
  the integration loop (``--toggle-collect=run_steps``) / steps, one run;
  None when valgrind is missing; ``kinematics_instructions_per_step`` the part
  spent in the generated kinematics (``fmigen_kinematics`` inclusive, i.e. the
  paper's "kinematic" column, in instructions);
- ``fmu_instructions_per_step``: the same count for the co-simulation FMU's
  path stepped at a communication interval of h (``run_fmu_steps``: one
  ``fmigen_core_step(h)`` per step, which commits the state at t + h, plus
  what the first GetReal after it computes: the angles left to atan2,
  the residual and the outputs), i.e. a HIL rig at 1 kHz reading outputs;
  ``fmu_kinematics_instructions_per_step`` its part in ``fmigen_kinematics``
  (one solve per step: the next step's first stage reuses the commit's);
- ``operations_per_step`` / ``fmu_operations_per_step``: the floating-point
  operations those callgrind runs executed per step, by type
  (``count_operations``: add, mul, div, sqrt, fma, their sum ``flops``, and
  ``libm_calls`` by function), so the distance of the instructions to the
  arithmetic is visible per mechanism; ``newton_iterations``: steps
  (LU solves) and ``newton_factorizations``: LU factorizations per call of a
  generated Newton block (the Newton rows; in a Gröbner build its fallback,
  polish or Newton-first block: chord steps reuse a factorization), None
  when none ran;
- ``peak_constraint_violation``: max_j |Φ_j(q)| over every state the
  integrator evaluated, q_d as the formulation's kinematics returned it;
- ``final_q``: the coordinates at the stop time (assembled, or as
  integrated for the augmented formulations), and ``core_step_max_diff``:
  max |Δ| against one ``fmigen_core_step`` call over the whole run (the FMU's
  code path; 0 means bit-identical).
- ``kinematic_run`` (embedded formulations of a mechanism with a
  ``kinematic_drive``, e.g. the five-link suspension): paper 000's kinematic
  simulation, Table 3 — the independent coordinates driven through
  q_i(0) + A sin(2πt/P), every step solving q_d and v_d; its ms per simulated
  second, instructions per step (``run_kinematic``) and peak violation.

Newton formulations stop when the Newton step is at most the tolerance
(absolute), as in the paper (10⁻³ and 10⁻⁶); one generated model per
formulation, the tolerance is a compile-time ``-DFMIGEN_NEWTON_TOL``.

The augmented rows ``baumgarte``, ``penalty`` (paper 000 eqs. 6-9, its
parameters α = 1, β = 18; ρ = 10³, ζ = 1, ω = 18) and ``spring`` (virtual
springs and dampers, paper 003; k = 5·10⁴, b = 60 by default) are the same
formulations ``fmigen build --kinematics baumgarte|penalty|spring`` builds as
FMUs (fmigen/generate/formulation.py, ``runtime/fmigen_augmented.c``): all n
coordinates of the augmented system integrated with generated accelerations
(``codegen_augmented.augmented_code``: LDLᵀ over M's structural non-zeros);
their parameters come from the same CLI options.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fmigen.generate import codegen, codegen_newton, formulation
from fmigen.derive.embed import embed
from fmigen.model import ModelError
from fmigen.derive.partition import choose_partition
from fmigen.generate.codegen_recursive import DYNAMICS
from fmigen.kinematics import KINEMATICS
from fmigen.tools.callgrind_profile import count_operations, parse_callgrind

RUNTIME_DIR = Path(__file__).parent.parent / "runtime"


def harness_cflags(opt=None) -> list:
    """The FMU binary's flags (fmu.CFLAGS) without -fPIC, its optimization
    flags replaced by ``opt`` when given.  (fmu, which imports fmpy, is
    imported here and not at the top: the CLI imports this module to build
    its parser.)"""
    from fmigen.fmi.fmu import CFLAGS, OPT_FLAGS
    return [*(opt or OPT_FLAGS), *(f for f in CFLAGS[len(OPT_FLAGS):] if f != "-fPIC")]
DEFAULT_TOLERANCES = (1e-3, 1e-6)
#: augmented formulations (fmigen/generate/formulation.py), built on the Gröbner model
STABILIZED = formulation.AUGMENTED
FORMULATIONS = (*KINEMATICS, *STABILIZED)


@dataclass
class Formulation:
    kinematics: str
    tolerance: float | None = None

    @property
    def label(self):
        return self.kinematics if self.tolerance is None else f"{self.kinematics} (tol {self.tolerance:g})"


def formulations(kinematics=FORMULATIONS, tolerances=DEFAULT_TOLERANCES):
    out = []
    for k in kinematics:
        if k not in FORMULATIONS:
            raise ModelError(f"unknown kinematics formulation '{k}' (known: {', '.join(FORMULATIONS)})")
        if k == "groebner" or k in STABILIZED:
            out.append(Formulation(k))
        else:
            out += [Formulation(k, float(tol)) for tol in tolerances]
    return out


def derivation(mech, dynamics="auto"):
    """(dae, partition, embedding, dynamics, why): what every formulation
    of ``generate_sources`` shares, with the embedded ODE's solver as
    ``fmigen build --dynamics`` chooses it and the reason for the choice."""
    from fmigen.build.derived import dae_of
    from fmigen.generate.codegen_recursive import choose as choose_dynamics
    # from the derived-model cache when this mechanism was derived before
    # (as the rest of the bench's derivation reads the Gröbner cache)
    dae = dae_of(mech)
    part = choose_partition(dae)
    emb = embed(dae, part)
    return (dae, part, emb, *choose_dynamics(dynamics, emb, part))


def generate_sources(mech, kinematics, log=None, augmented=(), dynamics="auto"):
    """{kinematics: (GeneratedModel, coordinate names)}: the DAE, partition and
    embedding once (``derivation``), then triangularize + codegen per
    formulation; the ``augmented`` formulations (formulation.Augmented) are
    checked against the model and added on the Gröbner build, keyed by their
    name.  ``dynamics``: the embedded ODE's solver as ``fmigen build
    --dynamics`` chooses it."""
    from fmigen.kinematics.triangular import triangularize
    log = log or (lambda m: None)
    option = dynamics
    dae, part, emb, dynamics, why = derivation(mech, option)
    log(f"dynamics: {dynamics} ({why})")
    for form in augmented:
        formulation.check_model(emb, form)
    out, shared = {}, {}
    for k in kinematics:
        tri = triangularize(dae, part, kinematics=k, log=lambda m: log("  " + m))
        out[k] = (_generated(mech, k, option, dae, part, emb, tri, dynamics, shared, log), dae.names)
    for form in augmented:
        out[form.name] = (formulation.apply(out["groebner"][0], form, emb), dae.names)
    return out


def _generated(mech, kinematics, dynamics_option, dae, part, emb, tri, dynamics, shared, log):
    """``codegen.generate`` of one formulation, through the derived-model
    cache as ``fmigen build --kinematics K`` derives (``derived.generated_of``:
    the same bytes), and recorded there when generated: a bench after a
    build (or a build after a bench) of the same mechanism does not generate
    its C again.  Not for a mechanism with coordinate switching, whose
    build adds the other sets' kinematics that the harness leaves out."""
    from fmigen.build import derived
    from fmigen.build.pipeline import Compiled, derivation_options
    use_cache = not mech.switch_independent
    options = derivation_options(kinematics=kinematics, dynamics=dynamics_option)
    found = derived.generated_of(mech, options, emb, tri) if use_cache else None
    if found is not None:
        log(f"C for kinematics '{kinematics}' from the derived-model cache")
        return found[0]
    log(f"generating C for kinematics '{kinematics}'")
    t0 = time.perf_counter()
    gen = codegen.generate(emb, tri, mech.name, shared=shared, dynamics=dynamics)
    if use_cache:
        failed = any(solved_block.engine_failed for solved_block in tri.blocks)
        derived.remember(Compiled(mech, dae, part, emb, tri, gen, {"codegen": time.perf_counter() - t0}, dynamics,
                                  failed), options)
    return gen


def compile_harness(gen: codegen.GeneratedModel, workdir: Path, tolerance=None, cc="gcc", opt=None,
                    defines=(), avx=None) -> Path:
    """``opt``: optimization flags replacing the FMU's -O2 (e.g. what a HIL
    target would rebuild the source FMU with); ``defines``: -D flags, such as
    the runtime's checks (FMIGEN_SEQ_TOL, FMIGEN_SWITCH_COND) set so that
    every solve takes a path it otherwise rarely takes; ``avx``: link the
    model's AVX copy, as a binary FMU does (default: where the FMU would,
    unless ``opt`` is given: a rebuild with its own flags has one copy)."""
    from fmigen.fmi.fmu import (AVX_DISPATCH, AVX_SOURCE, SHARED_KERNELS, START_SOURCE, _cached_object,
                                avx_variant, copy_flags, model_copy_units, realtime_config)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "model.c").write_text(gen.model_c)
    # the start values apart, as in the FMU: both model copies read them
    (workdir / START_SOURCE).write_text(gen.start_c)
    (workdir / "model_config.h").write_text(gen.config_h)
    defs = ([f"-DFMIGEN_NEWTON_TOL={tolerance!r}"] if tolerance is not None else []) + list(defines)
    flags = harness_cflags(opt)
    avx = (not opt and avx_variant(cc)) if avx is None else avx
    # the numerical kernels in their own unit, as compile_shared builds them
    # (in fmigen_core.c for a realtime build, whose caps they read)
    shared = not realtime_config(workdir / "model_config.h")
    common = [*flags, *defs, *([SHARED_KERNELS] if shared else []), *([AVX_DISPATCH] if avx else []),
              f"-I{workdir}", f"-I{RUNTIME_DIR}"]
    # (source, its flags), in the order they are linked; the model's own
    # units, its AVX copy and the kernels as compile_shared builds them
    units = [(workdir / "model.c", copy_flags(common)), (workdir / START_SOURCE, copy_flags(common))]
    units += [(source, unit_flags) for source, unit_flags, _ in
              model_copy_units(RUNTIME_DIR / AVX_SOURCE, common, avx, shared)]
    units += [(RUNTIME_DIR / f, common) for f in ("fmigen_core.c", "fmigen_augmented.c", "bench_harness.c")]
    objects = []
    for k, (source, unit_flags) in enumerate(units):
        if opt:
            # a caller's flags may be its host's (-march=native): no key for
            # a cache that another machine may read
            objects.append(workdir / f"unit{k}.o")
            _run_cc([cc, *unit_flags, "-c", str(source), "-o", str(objects[-1])])
        else:
            # from the FMU build's object cache: the runtime's units, alike in
            # every harness with these flags, and a model compiled before
            objects.append(_cached_object(cc, unit_flags, source, workdir))
    _run_cc([cc, *flags, *map(str, objects), "-lm", "-o", str(workdir / "bench_harness")])
    return workdir / "bench_harness"


def _run_cc(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise ModelError(f"compiling the benchmark harness failed:\n{' '.join(cmd)}\n{r.stderr}")


def run_harness(exe: Path, stop_time: float, step: float, repeats: int) -> dict:
    r = subprocess.run([str(exe), repr(stop_time), repr(step), str(repeats)], capture_output=True, text=True)
    if r.returncode:
        message = r.stderr.strip()
        if "singular configuration" in message or "limit position" in message:
            # the motion itself got there (the landing gear collapsing under
            # gravity to the end of its stroke, a limit position a step
            # before t = 0.847 s): a shorter run times what comes before
            message += " -- the simulated motion reaches it; a --stop-time before that time benchmarks the motion up to it"
        raise ModelError(f"benchmark harness failed: {message}")
    return json.loads(r.stdout)


def run_kinematic(exe: Path, stop_time: float, step: float, repeats: int, drive: list) -> dict:
    """Paper 000's kinematic simulation in the harness (mode "kinematic")."""
    r = subprocess.run([str(exe), repr(stop_time), repr(step), str(repeats), "kinematic", *map(repr, drive)],
                       capture_output=True, text=True)
    if r.returncode:
        raise ModelError(f"benchmark harness (kinematic run) failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def callgrind_instructions(exe: Path, stop_time: float, step: float, drive=None, fmu=False,
                           detail=False):
    """(instructions (Ir) per step of the integration loop, of which in the
    generated kinematics ``fmigen_kinematics`` inclusive of the libm calls it
    makes), or (None, None) without valgrind.  With ``drive`` (period and
    amplitudes) the loop counted is the kinematic run's instead; with ``fmu``
    the FMU's doStep path at a communication interval of ``step``.

    ``detail``: a dict instead, with also ``operations`` (``count_operations``:
    the floating-point operations per step, by type), ``newton_iterations``
    and ``newton_factorizations`` (LU solves and LU factorizations per call
    of a generated Newton block, None when none was called) and
    ``functions`` ({function: inclusive instructions per step} of every function callgrind_annotate lists, the model's without its
    identifier prefix: fmigen_kinematics, fmigen_embedded_prepare, ...; libm's
    as named there: where the step's cost goes)."""
    if not shutil.which("valgrind"):
        return dict(instructions=None, kinematics=None, operations=None, newton_iterations=None,
                    newton_factorizations=None,
                    functions={}) if detail else (None, None)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "callgrind.out"
        loop, mode = ("run_kinematic", ["callgrind-kinematic", *map(repr, drive)]) if drive else \
            ("run_fmu_steps", ["callgrind-fmu"]) if fmu else ("run_steps", ["callgrind"])
        # --dump-instr: costs per machine instruction, for count_operations
        r = subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--toggle-collect={loop}",
                            f"--callgrind-out-file={out}", str(exe), repr(stop_time), repr(step), "1",
                            *mode], capture_output=True, text=True)
        if r.returncode:
            raise ModelError(f"callgrind run failed: {r.stderr[-2000:]}")
        steps = json.loads(r.stdout)["steps"]
        total = kin = None
        per_function = {}
        text = out.read_text()
        for line in text.splitlines():
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1]) / steps
        if shutil.which("callgrind_annotate"):
            ann = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out)],
                                 capture_output=True, text=True).stdout
            for line in ann.splitlines():
                name = line.rstrip().split(" [")[0]
                # the model's AVX copy (fmigen_model_avx.c) ends in _avx
                name = name.removesuffix("_avx")
                if name.endswith("_fmigen_kinematics"):
                    kin = int(line.split()[0].replace(",", "")) / steps
                fn = name.rsplit(":", 1)[-1]
                count = line.split()[0].replace(",", "") if line.split() else ""
                if detail and count.isdigit() and "(" in line and "PROGRAM TOTALS" not in line:
                    # the model's functions carry its identifier as a prefix
                    fn = fn[fn.index("fmigen_"):] if "fmigen_" in fn else fn
                    per_function[fn] = max(per_function.get(fn, 0.0), int(count) / steps)
        if not detail:
            return total, kin
        prof = parse_callgrind(text)
        ops = count_operations(prof, exe, steps)

        def newton_calls(fn):
            return sum(n for (caller, callee), n in prof["calls"].items()
                       if "fmigen_newton_block" in caller and callee.removesuffix("_avx").endswith(fn))
        lu, solves = newton_calls("fmigen_lu_factor"), newton_calls("fmigen_lu_solve")
        blocks = sum(n for (caller, callee), n in prof["calls"].items()
                     if "fmigen_newton_block" in callee and "fmigen_newton_block" not in caller)
        return dict(instructions=total, kinematics=kin, operations=ops,
                    newton_iterations=solves / blocks if blocks else None,
                    newton_factorizations=lu / blocks if blocks else None, functions=per_function)


def bench(spec, kinematics=FORMULATIONS, tolerances=DEFAULT_TOLERANCES, stop_time=3.0, step=1e-3,
          repeats=5, callgrind=True, log=None, keep=None, formulation_params=None, opt=None,
          dynamics="auto") -> dict:
    """Run every formulation; the JSON of ``fmigen bench --json``.
    ``formulation_params``: {augmented formulation: {parameter: value}};
    ``dynamics``: as ``fmigen build --dynamics`` (auto: what a build ships)."""
    from fmigen.build.pipeline import prepare_mechanism
    log = log or (lambda m: None)
    mech = prepare_mechanism(spec, log)   # the start the FMU would have
    if mech.kinematic:
        # its B^T M B is zero: the harness's dynamic run would stop at step 0
        # calling that a singular configuration, which it is not
        raise ModelError(
            f"'{mech.name}' is a kinematic mechanism (its independent coordinates are FMU inputs and it "
            "has no equations of motion to integrate); fmigen bench times an explicit Euler simulation "
            "of the dynamics. Bench a variant of it with masses instead; `fmigen validate` runs its "
            "kinematic FMU against the reference")
    forms = formulations(kinematics, tolerances)
    formulation_params = formulation_params or {}
    augmented = {f.kinematics: formulation.make(f.kinematics, **formulation_params.get(f.kinematics, {}))
                 for f in forms if f.kinematics in STABILIZED}
    t0 = time.perf_counter()
    # the augmented rows use the Gröbner build's model functions (its
    # kinematics only for the start)
    needed = {"groebner" if f.kinematics in STABILIZED else f.kinematics for f in forms}
    sources = generate_sources(mech, sorted(needed, key=list(KINEMATICS).index), log,
                               augmented=list(augmented.values()), dynamics=dynamics)
    rows = []
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fmigen-bench-"))
    try:
        exes = []
        for i, f in enumerate(forms):
            gen, names = sources[f.kinematics]
            log(f"[{i + 1}/{len(forms)}] compiling the harness for {f.label}")
            exes.append(compile_harness(gen, tmp / f"{f.kinematics}_{f.tolerance}", f.tolerance, opt=opt))
        # repeats interleaved round-robin, so a slow phase of a shared machine
        # hits every formulation alike (ratios from the same run)
        runs = [[] for _ in forms]
        kin_runs = [[] for _ in forms]
        drive = kinematic_drive(mech, sources)
        for r in range(repeats):
            log(f"timing round {r + 1}/{repeats}: {len(forms)} formulations x {stop_time:g} s at h = {step:g} s"
                + (" (dynamic and kinematic runs)" if drive else ""))
            for i, exe in enumerate(exes):
                runs[i].append(run_harness(exe, stop_time, step, 1))
                if drive and forms[i].kinematics not in STABILIZED:
                    kin_runs[i].append(run_kinematic(exe, stop_time, step, 1, drive))
        for i, f in enumerate(forms):
            names = sources[f.kinematics][1]
            res = {k: [x for run in runs[i] for x in run[k]] for k in runs[i][0] if isinstance(runs[i][0][k], list)}
            first = runs[i][0]
            if any(run["final_q"] != first["final_q"] or run["peak_violation"] != first["peak_violation"]
                   for run in runs[i]):
                raise ModelError(f"{f.label}: the harness is not deterministic across repeats")
            ir = kin = fmu_ir = fmu_kin = None
            cg = cg_fmu = {}
            if callgrind:
                log(f"callgrind: {f.label}")
                cg = callgrind_instructions(exes[i], stop_time, step, detail=True)
                cg_fmu = callgrind_instructions(exes[i], stop_time, step, fmu=True, detail=True)
                ir, kin, fmu_ir, fmu_kin = (cg["instructions"], cg["kinematics"], cg_fmu["instructions"],
                                            cg_fmu["kinematics"])
            row = {
                "kinematics": f.kinematics,
                "tolerance": f.tolerance,
                "ms_per_simulated_s": statistics.median(res["cpu_ms_per_run"]) / stop_time,
                "ms_per_simulated_s_min": min(res["cpu_ms_per_run"]) / stop_time,
                "max_step_us": statistics.median(res["step_ns_max"]) / 1e3,
                "max_step_us_worst": max(res["step_ns_max"]) / 1e3,
                "median_step_us": statistics.median(res["step_ns_median"]) / 1e3,
                "p99_step_us": statistics.median(res["step_ns_p99"]) / 1e3,
                "max_step_cpu_us": statistics.median(res["step_cpu_ns_max"]) / 1e3,
                "median_step_cpu_us": statistics.median(res["step_cpu_ns_median"]) / 1e3,
                "cpu_ms_per_run": res["cpu_ms_per_run"],
                "instructions_per_step": ir,
                "kinematics_instructions_per_step": kin,
                "fmu_instructions_per_step": fmu_ir,
                "fmu_kinematics_instructions_per_step": fmu_kin,
                # floating-point operations per step by type (count_operations)
                "operations_per_step": cg.get("operations"),
                "fmu_operations_per_step": cg_fmu.get("operations"),
                # steps and LU factorizations per generated Newton solve:
                # 1.0 when the predicted start meets the tolerance in one step
                "newton_iterations": cg.get("newton_iterations"),
                "newton_factorizations": cg.get("newton_factorizations"),
                "peak_constraint_violation": first["peak_violation"],
                "core_step_max_diff": first["core_step_max_diff"],
                # what the harness got of pinning / SCHED_FIFO / mlockall
                "realtime": first.get("realtime"),
                "final_q": dict(zip(names, first["final_q"])),
            }
            if kin_runs[i]:
                row["kinematic_run"] = _kinematic_row(kin_runs[i], exes[i], stop_time, step, drive, names,
                                                      sources[f.kinematics][0].independent, callgrind)
            if f.kinematics in STABILIZED:
                row["parameters"] = dict(augmented[f.kinematics].values)
            log(f"      {f.label}: {row['ms_per_simulated_s']:.3f} ms/s, max step {row['max_step_us']:.2f} us, "
                f"peak |Phi| {row['peak_constraint_violation']:.2e}"
                + (f", {ir:.0f} instructions/step" if ir else ""))
            rows.append(row)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    # what auto chose (the right-hand side's solver of the embedded rows)
    resolved = "recursive" if any(g.macros.get("FMIGEN_DYNAMICS_RECURSIVE") for g, _ in sources.values()) \
        else "embedded"
    return {"mechanism": mech.name, "stop_time": stop_time, "step": step, "solver": "euler", "dynamics": resolved,
            "repeats": repeats, "cpu": _cpu_name(),
            "compiler": "gcc " + " ".join(f for f in harness_cflags(opt) if not f.startswith("-W")),
            "seconds": round(time.perf_counter() - t0, 2), "rows": rows}


def _kinematic_row(kin_runs, exe, stop_time, step, drive, names, independent, callgrind) -> dict:
    """Paper 000 Table 3's "kinematic" row: the driven runs of one formulation's harness."""
    cpu = [x for run in kin_runs for x in run["cpu_ms_per_run"]]
    kir = callgrind_instructions(exe, stop_time, step, drive)[0] if callgrind else None
    return {
        # labels in the drive's own order: the period, then every
        # independent coordinate in partition order
        "drive": dict(zip(["period", *(names[j] for j in independent)], drive)),
        "ms_per_simulated_s": statistics.median(cpu) / stop_time,
        "ms_per_simulated_s_min": min(cpu) / stop_time,
        "instructions_per_step": kir,
        "peak_constraint_violation": kin_runs[0]["peak_violation"],
        "final_q": dict(zip(names, kin_runs[0]["final_q"])),
        "final_v": dict(zip(names, kin_runs[0]["final_v"]))}


def kinematic_drive(mech, sources) -> list | None:
    """[period, amplitude per independent coordinate in partition order] of
    the mechanism's kinematic run, or None."""
    if not mech.kinematic_drive:
        return None
    gen, names = next(iter(sources.values()))
    independent = gen.independent
    unknown = set(mech.kinematic_drive) - {names[i] for i in independent}
    if unknown:
        raise ModelError(f"kinematic_drive names {sorted(unknown)}, which are not independent coordinates "
                         f"(independent: {[names[i] for i in independent]})")
    return [float(mech.kinematic_drive_period)] + [float(mech.kinematic_drive.get(names[i], 0.0))
                                                    for i in independent]


def _cpu_name():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


def format_table(result: dict) -> str:
    """A table shaped like paper 000's Tables 1/3 (rows = formulations)."""
    head = (f"{result['mechanism']}: explicit Euler, h = {result['step'] * 1e3:g} ms, "
            f"{result['stop_time']:g} s, median of {result['repeats']} runs ({result['cpu']})")
    cols = ["formulation", "ms CPU / simulated s", "median step us", "max step us",
            "instructions / step", "of which kinematics", "FMU doStep instr.", "peak |Phi|",
            "flops / step", "Newton its (LU) / solve"]
    if any(r.get("kinematic_run") for r in result["rows"]):
        cols += ["kinematic run ms/s", "kinematic run instr."]
    lines = [head, "  ".join(f"{c:>22s}" if k else f"{c:<28s}" for k, c in enumerate(cols))]
    for r in result["rows"]:
        label = r["kinematics"] + ("" if r["tolerance"] is None else f" (tol {r['tolerance']:g})")
        ir = "-" if r["instructions_per_step"] is None else f"{r['instructions_per_step']:.0f}"
        kin = "-" if r.get("kinematics_instructions_per_step") is None else \
            f"{r['kinematics_instructions_per_step']:.0f}"
        fmu_ir = "-" if r.get("fmu_instructions_per_step") is None else f"{r['fmu_instructions_per_step']:.0f}"
        vals = [f"{r['ms_per_simulated_s']:.3f}", f"{r['median_step_us']:.2f}", f"{r['max_step_us']:.2f}",
                ir, kin, fmu_ir, f"{r['peak_constraint_violation']:.2e}",
                "-" if not r.get("operations_per_step") else f"{r['operations_per_step']['flops']:.0f}",
                "-" if r.get("newton_iterations") is None else
                f"{r['newton_iterations']:.2f} ({r['newton_factorizations']:.2f})"]
        k = r.get("kinematic_run")
        if k:  # paper 000 Table 3's kinematic simulation
            vals.append(f"{k['ms_per_simulated_s']:.3f}")
            vals.append("-" if k["instructions_per_step"] is None else f"{k['instructions_per_step']:.0f}")
        lines.append(f"{label:<28s}  " + "  ".join(f"{v:>22s}" for v in vals))
    return "\n".join(lines)


def _floats(text):
    """``--tolerances``: finite numbers > 0, comma-separated (argparse type)."""
    import argparse
    import math
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"want numbers separated by commas, got '{text}'") from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"want finite numbers > 0, got '{text}'")
    return values


def add_parser(sub):
    """The ``bench`` verb of the CLI (fmigen/cli.py calls this)."""
    p = sub.add_parser("bench", help="time the formulations in a native C harness",
                       description="Build the mechanism with every formulation -- the embedded ODE with "
                                   "Gröbner kinematics, one Newton iteration over all dependent coordinates, "
                                   "Newton per loop; and the augmented systems Baumgarte, penalty (paper 000) "
                                   "and virtual springs (paper 003), the same runtime code as "
                                   "`fmigen build --kinematics ...` -- and time paper 000's experiment "
                                   "(explicit Euler, h = 1 ms, 3 s) natively: ms of CPU per simulated second, "
                                   "per-step maximum, callgrind instructions per step (also of the FMU's "
                                   "doStep at a communication interval of one step), peak constraint "
                                   "violation.  A mechanism with a kinematic_drive (five_link) also gets "
                                   "paper 000's kinematic run (independent coordinates driven by a sine, "
                                   "q_d and v_d solved every step) for the embedded formulations.  The "
                                   "harness pins itself to one CPU, runs SCHED_FIFO and locks its memory "
                                   "where permitted (reported as 'realtime').")
    p.add_argument("mechanism", help="mechanism module: a path or a bare name (stewart)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--kinematics", default=",".join(FORMULATIONS),
                   help=f"comma-separated formulations (default {','.join(FORMULATIONS)}; the last three "
                        "integrate all coordinates of the augmented system, as FMUs built with "
                        "--kinematics baumgarte|penalty|spring)")
    p.add_argument("--tolerances", type=_floats, default=list(DEFAULT_TOLERANCES),
                   help="Newton step tolerances, one row each (default 1e-3,1e-6 as in paper 000)")
    p.add_argument("--stop-time", type=float, default=3.0, help="simulated seconds (default 3)")
    p.add_argument("--step", type=float, default=1e-3, help="explicit Euler step (default 1e-3)")
    p.add_argument("--repeats", type=int, default=5, help="timed repeats, median reported (default 5)")
    p.add_argument("--no-callgrind", action="store_true", help="skip the valgrind instruction count")
    p.add_argument("--keep", help="keep the generated sources and harness binaries in this directory")
    p.add_argument("--opt", default=None,
                   help="optimization flags instead of the FMU binary's (-O2, with the model's AVX copy "
                        "on x86-64 Linux), for a source FMU rebuilt on its target (one copy); write it "
                        "with '=': --opt=\"-O3 -march=native\"")
    p.add_argument("--dynamics", choices=DYNAMICS, default="auto",
                   help="the embedded ODE's solver, as fmigen build --dynamics (default auto: what a build "
                        "ships; the augmented formulations integrate every coordinate and ignore it)")
    p.add_argument("--worst-case", action="store_true",
                   help="instead: callgrind instructions of every FMU doStep (rk4, outputs read after it) "
                        "over the motion from the start and over the workspace sweep with random "
                        "velocities and inputs (a kinematic FMU's: its coordinates and velocities, which are its "
                        "inputs, set to each point and random velocities); reports the maximum against the median")
    p.add_argument("--realtime", action="store_true",
                   help="with --worst-case: the model as fmigen build --realtime builds it, each loop capped "
                        "at what the workspace sweep needs plus the margin")
    formulation.add_options(p)

    def run(args):
        if args.repeats < 1 or not args.step > 0 or not args.stop_time >= args.step:
            raise ModelError("need --repeats >= 1, --step > 0 and --stop-time >= --step")
        if args.realtime and not args.worst_case:
            raise ModelError("--realtime goes with --worst-case")
        if args.worst_case:
            w = worst_case(args.mechanism, stop_time=args.stop_time, step=args.step, log=args.progress,
                           keep=args.keep, realtime=args.realtime)
            print(json.dumps(w) if args.json else format_worst_case(w))
            return 0
        result = bench(args.mechanism, kinematics=[k.strip() for k in args.kinematics.split(",") if k.strip()],
                       tolerances=args.tolerances, stop_time=args.stop_time, step=args.step,
                       repeats=args.repeats, callgrind=not args.no_callgrind,
                       log=args.progress, keep=args.keep,
                       opt=args.opt.split() if args.opt else None,
                       formulation_params=formulation.params_from_args(args), dynamics=args.dynamics)
        print(json.dumps(result) if args.json else format_table(result))
        return 0

    p.set_defaults(func=run)
    return p


#: ``worst_case``'s random velocities: each independent coordinate's uniform
#: in ±VELOCITY_SPAN unit scales per second (2π: a turn a second for an angle)
VELOCITY_SPAN = 2 * math.pi
#: and each input uniform in ±INPUT_SPAN·max(|its start|, 1)
INPUT_SPAN = 2.0


def worst_case(spec, stop_time=3.0, step=1e-3, seed=0, solver="rk4", log=None, keep=None,
               instructions=True, realtime=False) -> dict:
    """``fmigen bench MECH --worst-case``: callgrind instructions of every
    doStep (at a communication interval of ``step``, outputs read after it:
    the harness's ``worst_case_step``) over the motion from the start with
    the default inputs (``stop_time``, or up to a step that fails: a motion
    into a singular configuration ends there, that step counted) and over
    the build's workspace sweep
    (``workspace.sweep``: every point of every path, in path order) with
    random velocities and inputs (``VELOCITY_SPAN``, ``INPUT_SPAN``; seeded,
    so the same numbers every run).  Returns the median, p99 and maximum
    instructions per step, max / median, where the maximum was and how many
    samples failed (a step into a singular configuration) or did not
    assemble; and the most iterations each bounded loop took, over the
    motion's steps and the workspace samples' that succeeded, the steps that
    failed and the assembly apart.  A kinematic FMU's doStep is the
    kinematics and velocities solved at its inputs, the independent
    coordinates and velocities: its motion holds them at their start, and
    each workspace sample sets them to the point and its random velocities
    and counts that solve (from the previous point's solution).
    ``instructions=False``: the same run without valgrind, only the counts
    of steps and iterations (``iterations_of``).  ``realtime``: the model as
    ``fmigen build --realtime`` builds it, with the caps that build derives
    from this run (``realtime_caps``), which the result reports."""
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.kinematics.triangular import triangularize
    if instructions and not shutil.which("valgrind"):
        raise ModelError("fmigen bench --worst-case counts instructions with valgrind, which is not installed")
    log = log or (lambda m: None)
    mech = prepare_mechanism(spec, log)
    # the build's model: the derivation and its C as generate_sources takes them
    dae, part, emb, dynamics, _ = derivation(mech)
    tri = triangularize(dae, part, kinematics="groebner", log=lambda m: log("  " + m))
    gen = _generated(mech, "groebner", "auto", dae, part, emb, tri, dynamics, None, log)
    run = dict(stop_time=stop_time, step=step, seed=seed, solver=solver, keep=keep)
    if not realtime:
        return run_worst_case(mech, dae, gen, tri.sweep, instructions=instructions, **run)
    from fmigen.generate import realtime as rt
    caps = rt.caps_for(run_worst_case(mech, dae, gen, tri.sweep, instructions=False, **run))
    return {**run_worst_case(mech, dae, rt.realtime_model(gen, caps), tri.sweep, instructions=instructions,
                             **run), "caps": caps}


def run_worst_case(mech, dae, gen, sweep, stop_time=3.0, step=1e-3, seed=0, solver="rk4", keep=None,
                   instructions=True) -> dict:
    """``worst_case``'s run of the generated model ``gen`` of ``mech`` (its
    DAE ``dae``) over its motion and the workspace sweep ``sweep`` (None:
    the motion alone).  Also ``fmigen build --realtime``'s measurement of
    what each loop needs (``realtime_caps``)."""
    import numpy as np
    from fmigen.derive.workspace import unit_scales
    from fmigen.fmi.fmu import SOLVERS
    indep = list(gen.independent)
    scales = unit_scales(dae)[indep]
    rng = np.random.default_rng(seed)
    u0 = np.array([i.start for i in mech.inputs], dtype=float)
    lines, where = [], []
    for k, path in enumerate(sweep.paths if sweep is not None else []):
        lines.append("P")
        for j, row in enumerate(path):
            v = rng.uniform(-VELOCITY_SPAN, VELOCITY_SPAN, len(indep)) * scales
            u = u0 + rng.uniform(-INPUT_SPAN, INPUT_SPAN, len(u0)) * np.maximum(np.abs(u0), 1.0)
            lines.append("S " + " ".join(repr(float(x)) for x in (*sweep.points[row][indep], *v, *u)))
            where.append(f"workspace path {k + 1}, point {j + 1}")
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="fmigen-worst-"))
    try:
        # the loops' hooks (fmigen_runtime.h) record the most iterations each took
        hooks = ["-DFMIGEN_COUNT_NEWTON(l,i)={ extern void fmigen_count_newton(int, int); fmigen_count_newton(l, i); }",
                 "-DFMIGEN_COUNT_POLY_NEWTON(i)={ extern void fmigen_count_poly_newton(int); "
                 "fmigen_count_poly_newton(i); }",
                 "-DFMIGEN_COUNT_ABERTH(i)={ extern void fmigen_count_aberth(int); fmigen_count_aberth(i); }"]
        exe = compile_harness(gen, tmp / "groebner", defines=hooks)
        out = tmp / "callgrind"
        out.mkdir(exist_ok=True)
        for old in out.iterdir():
            old.unlink()
        valgrind = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--toggle-collect=worst_case_step",
                    "--dump-after=worst_case_step", f"--callgrind-out-file={out}/step"] if instructions else []
        r = subprocess.run([*valgrind, str(exe), repr(stop_time), repr(step), "1", "worst-case",
                            str(SOLVERS[solver])], input="\n".join(lines) + "\n", capture_output=True, text=True)
        if r.returncode:
            raise ModelError(f"the worst-case harness failed: {r.stderr.strip()[-2000:]}")
        printed = r.stdout.strip().splitlines()
        res = json.loads(printed[-1])
        if not instructions:
            return {**iterations_of(mech.name, res), "workspace_samples": len(where)}
        counts = _callgrind_dumps(out)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if len(counts) != res["steps"]:
        raise ModelError(f"the worst-case harness: {len(counts)} callgrind dumps for {res['steps']} steps")
    stepped = [int(line.split()[1]) for line in printed[:-1] if line.startswith("sample ")]
    failed_at = {int(line.split()[1]) for line in printed[:-1] if line.startswith("failed ")}
    nsteps = res["motion"]   # up to a step that failed (counted)
    labels = [f"step {s + 1} from the start" for s in range(nsteps)]
    labels += [where[j] for j in stepped]   # a failed path's rest is skipped: what was stepped
    arr = np.array(counts, dtype=float)
    k = int(arr.argmax())
    med = float(np.median(arr))
    # the steps that succeeded: a failed one (into a singular configuration)
    # ends the run there; its cost is bounded by the caps, reported apart
    ok = np.array([j not in failed_at for j in range(len(arr))])
    k_ok = int(np.where(ok, arr, -1).argmax())
    return {"mechanism": mech.name, "solver": solver, "step": step, "steps": len(counts),
            "motion_steps": nsteps, "workspace_samples": len(where), "failed": res["failed"],
            "unset": res["unset"], "median": med, "p99": float(np.percentile(arr, 99)),
            "max": int(arr.max()), "max_over_median": float(arr.max() / med), "max_at": labels[k],
            "max_ok": int(arr[k_ok]), "max_ok_over_median": float(arr[k_ok] / med), "max_ok_at": labels[k_ok],
            "failed_max": int(arr[~ok].max()) if (~ok).any() else None,
            "motion_mean": float(arr[:nsteps].mean()),
            **iterations_of(mech.name, res),
            "motion_max": int(arr[:nsteps].max()), "workspace_max": int(arr[nsteps:].max()) if len(arr) > nsteps
            else None}


def realtime_caps(compiled, solver: str, step: float, log=None):
    """``fmigen build --realtime``'s model (``pipeline.build_fmus``'s
    ``realtime``): the build's generated model (a ``pipeline.Compiled`` of
    the embedded Gröbner formulation) stepped with ``solver`` at ``step``
    over its workspace sweep, each loop capped at what it needed there plus
    the margin (``fmigen.generate.realtime``).  Returns that model and
    {"caps", "need", "samples", "margin"} for the FMU's documentation."""
    from fmigen.generate import realtime as rt
    sweep = compiled.triangular.sweep
    if sweep is None or not sweep.paths:
        raise ModelError(f"'{compiled.mechanism.name}' has no workspace sweep to measure the realtime caps on")
    measured = run_worst_case(compiled.mechanism, compiled.dae, compiled.generated, sweep, step=step,
                              solver=solver, instructions=False)
    caps, need = rt.caps_for(measured), rt.need(measured)
    (log or (lambda m: None))(
        f"      realtime caps (Newton block / polish / root's Newton / Aberth): "
        f"{' / '.join(str(caps[k]) for k in rt.MACROS)}, from the workspace sweep's need "
        f"{' / '.join(str(need[k]) for k in rt.MACROS)} ({measured['workspace_samples']} points stepped)")
    return rt.realtime_model(compiled.generated, caps), {
        "caps": caps, "need": need, "samples": measured["workspace_samples"],
        "margin": (rt.MARGIN_FACTOR, rt.MARGIN_EXTRA)}


def _callgrind_dumps(out: Path) -> list[int]:
    """The instructions of each callgrind dump in ``out`` (one a doStep), in
    the order they were written; the final dump at exit, outside any step,
    left out."""
    counts = []
    for f in sorted(out.iterdir(), key=lambda f: int(f.name.rsplit(".", 1)[-1])
                    if f.name.rsplit(".", 1)[-1].isdigit() else -1):
        if not f.name.rsplit(".", 1)[-1].isdigit():
            continue
        for line in f.read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                counts.append(int(line.split()[1]))
                break
    return counts


def iterations_of(name: str, res: dict) -> dict:
    """The worst-case harness's iteration counts: the most over everything
    (``iterations``), over the motion's and the workspace samples' doSteps
    that succeeded, those that failed and the assembly, with the caps they
    are held to."""
    return {"mechanism": name, "steps": res["steps"], "motion_steps": res["motion"], "failed": res["failed"],
            "unset": res["unset"], "caps": codegen_newton.iteration_caps(),
            **{k: res[k] for k in ("iterations", "iterations_motion", "iterations_workspace", "iterations_failed",
                                 "iterations_assembly")}}


#: the bounded loops, in the order the reports list them
LOOPS = ("newton", "polish", "poly_newton", "aberth")


def format_worst_case(w: dict) -> str:
    it, cap = w["iterations"], w["caps"]
    return (f"{w['mechanism']} ({w['solver']}, h = {w['step']:g} s): {w['steps']} doSteps "
            f"({w['motion_steps']} of the motion from the start, {w['steps'] - w['motion_steps']} at "
            f"workspace points with random velocities and inputs; {w['failed']} failed, {w['unset']} "
            f"did not assemble)\n"
            f"  instructions per doStep: median {w['median']:,.0f}, p99 {w['p99']:,.0f}, max {w['max']:,} "
            f"= {w['max_over_median']:.2f}x the median ({w['max_at']}); of the steps that succeeded "
            f"{w['max_ok']:,} = {w['max_ok_over_median']:.2f}x ({w['max_ok_at']})\n"
            f"  most iterations: Newton block {it['newton']} (cap {cap['newton']}), polish {it['polish']} "
            f"(cap {cap['polish']}), polynomial root's Newton {it['poly_newton']} (cap {cap['poly_newton']}), "
            f"Aberth {it['aberth']} (cap {cap['aberth']}; entered {it['aberth_runs']} times)\n"
            + "\n".join(f"    {label}: " + " / ".join(str(w[key][k]) for k in LOOPS) for label, key in (
                ("steps of the motion that succeeded", "iterations_motion"),
                ("workspace samples' steps that succeeded", "iterations_workspace"),
                ("steps that failed", "iterations_failed"), ("assembly", "iterations_assembly"))))
