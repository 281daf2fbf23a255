"""Build and validate every mechanism of ``tests/corpus/``, or random ones (``--fuzz``).

    python scripts/corpus.py [--only NAME[,NAME...]] [--json] [--markdown] [--stop-time 1] [--timeout 900]
    python scripts/corpus.py --fuzz N --seed S [--families fourbar,slider_crank,rssr,five_bar] [--json]
    python scripts/corpus.py --fuzz 200 --seed 1 --record out/fuzz.jsonl --jobs 2   # resumable
    python scripts/corpus.py --from out/fuzz.jsonl --markdown                # its report (docs/corpus.md)

Each case runs in its own process (``--child``), so a crash or a hang in one
does not end the run; a case that exceeds ``--timeout`` seconds is reported
as ``timeout``.  The timeout only classifies a case: nothing that is built
depends on it (the builds themselves are bounded by work, not time).

What a case checks, in that order:

1. the build: ``fmigen.verify.validate.validate`` on the ``JointSystem`` (FMU by
   the ordinary pipeline, run in fmpy), with the DAE reference (IDA), the
   Cartesian reference and, when the ``mujoco`` module is importable, the
   MuJoCo peer (a description MJCF cannot hold is noted, not failed);
2. the start: the FMU's values at t = 0 against the description, with the
   Cartesian model's own forward kinematics (``cartesian.CartesianModel``,
   no equation of the model stage): the independent coordinates exactly as
   written, every joint closed (|Φ| ≤ 1e-9), every branch hint satisfied,
   and the dependent coordinates within 0.1 (rad or m) of the described
   pose — the corpus and the fuzzer describe the assembly they mean, so a
   start far from it is a silent wrong start even when it closes;
3. the validation: coordinates within 1e-6 and velocities within 1e-5 of
   each reference, constraint residual ≤ 1e-12, energy drift ≤ 1e-6 (the
   defaults of ``fmigen validate``), and the FMU reaching the stop time.

Outcomes: ``passed``; ``failed`` (which check, with its numbers; on a
run the FMU ended early, also where and with which message);
``stopped`` (the FMU stopped early with a message, every check passing on
the part it ran: a clear error at run time, e.g. a singular configuration);
``refused`` (the build stopped with a ``ModelError``/``BuildError``, the
message is the cause); ``traceback`` (any other exception: a defect, with
its type, message and innermost frame); ``timeout``; ``crashed`` (the child
process died without a result).  Progress goes to stderr, one line per case.

The fuzzer draws the geometry of the corpus's parametric families
(``tests/corpus/_families.py``) from ``random.Random(seed)``, rounded to
three decimals so every case is a short exact rational system; the same
``--fuzz N --seed S`` gives the same cases.  Whether a drawn geometry has an
assembly at its start is known in closed form (``assembles``): a refusal
for want of one must agree with it.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import io
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
FAMILIES = ("fourbar", "slider_crank", "rssr", "five_bar")
POSE_TOL = 0.1
#: validate's internal step (rk4), unless the corpus module declares its own ``STEP``
DEFAULT_STEP = 1e-3
CLOSE_TOL = 1e-9
OUTCOMES = ("passed", "failed", "stopped", "refused", "traceback", "timeout", "crashed")


def corpus_names():
    return sorted(p.stem for p in CORPUS.glob("*.py") if not p.stem.startswith("_"))


def _import_corpus():
    # the corpus modules import their helpers as ``corpus._planar``
    if str(ROOT / "tests") not in sys.path:
        sys.path.insert(0, str(ROOT / "tests"))
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def fuzz_cases(n, seed, families=FAMILIES):
    """``n`` random cases, cycling through ``families``; deterministic in seed."""
    rng = random.Random(seed)
    u = lambda a, b: round(rng.uniform(a, b), 3)   # noqa: E731
    cases = []
    for k in range(n):
        fam = families[k % len(families)]
        # A crank's torque is drawn as a fraction of the one that gives its
        # bar alone (1 kg/m: r³/3 about the pivot) 10 rad/s²: a fixed range
        # in N·m spun a 0.2 m crank to 30 rad/s in a second, beyond what a
        # 1 ms step follows to validate's 1e-6, a test of the step and not
        # of the geometry.  The draws' order is the geometry's, then the torques.
        p = {}
        drive = lambda frac, crank: round(frac * 10 * p[crank] ** 3 / 3, 4)   # noqa: E731
        if fam == "fourbar":
            p.update(ground=u(0.5, 3), crank=u(0.5, 3), coupler=u(0.5, 3), rocker=u(0.5, 3),
                     theta=u(0, 6.283), open_=rng.random() < 0.5)
            p["tau"] = drive(u(-1, 1), "crank")
        elif fam == "slider_crank":
            p.update(r=u(0.05, 0.5), l=u(0.05, 1.0), e=u(-0.3, 0.3), theta=u(0, 6.283),
                     right=rng.random() < 0.5)
            p["tau"] = drive(u(-1, 1), "r")
        elif fam == "rssr":
            p.update(crank=u(0.2, 1.0), B0=[u(-1.5, 1.5), u(-1.5, 1.5), u(-1.5, 1.5)],
                     arm=[u(-0.3, 0.3), u(0.3, 1.0), u(-0.3, 0.3)], L=u(0.5, 3.0), theta=u(0, 6.283),
                     branch=rng.randrange(2))
            p["tau"] = drive(u(-1, 1), "crank")
        elif fam == "five_bar":
            p.update(ground=u(0.5, 3), crank1=u(0.5, 3), coupler1=u(0.5, 3), coupler2=u(0.5, 3),
                     crank2=u(0.5, 3), theta1=u(0, 6.283), theta2=u(0, 6.283), up=rng.random() < 0.5)
            p["tau1"] = drive(u(-1, 1), "crank1")
            p["tau2"] = drive(u(-1, 1), "crank2")
        else:
            raise SystemExit(f"corpus.py: unknown family '{fam}' (have {', '.join(FAMILIES)})")
        cases.append({"name": f"fuzz{seed}_{k:03d}_{fam}", "family": fam, "params": p})
    return cases


def _assembly_interval(family, p):
    """(lo, x, hi): the families' closed form for an assembly at the
    parameters' angles, which exists exactly when lo <= x <= hi (two
    circles meet; the rod reaches the guide; the coupler's sphere meets the
    rocker pin's circle).  At x = lo or x = hi the configuration is singular:
    the loop closes only in one stretched or folded assembly."""
    if family == "fourbar":
        d = math.dist((p["crank"] * math.cos(p["theta"]), p["crank"] * math.sin(p["theta"])), (p["ground"], 0))
        return abs(p["coupler"] - p["rocker"]), d, p["coupler"] + p["rocker"]
    if family == "five_bar":
        A = (p["crank1"] * math.cos(p["theta1"]), p["crank1"] * math.sin(p["theta1"]))
        B = (p["ground"] + p["crank2"] * math.cos(p["theta2"]), p["crank2"] * math.sin(p["theta2"]))
        return abs(p["coupler1"] - p["coupler2"]), math.dist(A, B), p["coupler1"] + p["coupler2"]
    if family == "slider_crank":
        return -p["l"], p["e"] - p["r"] * math.sin(p["theta"]), p["l"]
    if family == "rssr":
        # |A − B(φ)|² − L² = R − P cos φ − Q sin φ: a root iff |R| ≤ √(P² + Q²)
        import numpy as np
        A = np.array([p["crank"] * math.cos(p["theta"]), p["crank"] * math.sin(p["theta"]), 0.0])
        d = A - np.array(p["B0"], float)
        ex, cy, cz = p["arm"]
        P, Q = 2 * (d[1] * cy + d[2] * cz), 2 * (d[2] * cy - d[1] * cz)
        R = d @ d + ex * ex + cy * cy + cz * cz - 2 * d[0] * ex - p["L"] ** 2
        rho = math.hypot(P, Q)
        return -rho, float(R), rho
    return None


def assembles(case):
    """Whether a fuzz case's geometry has an assembly at its start angles,
    by the families' closed forms (``_assembly_interval``): True, False, or
    None within 1e-6 of the boundary (where rounding decides).  This is the
    oracle for refusals: 'no assembly' is right exactly when this is
    False."""
    if "family" not in case:
        return None
    lo, x, hi = _assembly_interval(case["family"], case["params"])
    if lo + 1e-6 < x < hi - 1e-6:
        return True
    return None if lo - 1e-6 <= x <= hi + 1e-6 else False


def stop_margin(r):
    """For a fuzz result whose FMU stopped at a limit position or a singular
    configuration: the distance of the configuration it stopped at (the
    independent coordinates its message names) to the boundary of the
    assembly region, min(x − lo, hi − x) / (hi − lo) by the closed form;
    negative past the boundary, where no assembly exists.  About 0 proves
    the stop a physical singularity (a limit of the driven cranks), not a
    defect of the kinematics.  None when there is no such stop."""
    if "family" not in r:
        return None
    m = re.search(r"(limit position|singular configuration) at t=[^ ]+ \(([^)]*)\)", r.get("message", ""))
    if not m:
        return None
    p = dict(r["params"])
    for name, value in re.findall(r"(\w+)=([-+0-9.eE]+)", m.group(2)):
        if name not in p:
            return None
        p[name] = float(value)
    lo, x, hi = _assembly_interval(r["family"], p)
    return min(x - lo, hi - x) / (hi - lo)


def _case_module(case):
    """The corpus module of a (non-fuzz) case, freshly executed."""
    _import_corpus()
    path = CORPUS / f"{case['name']}.py"
    spec = importlib.util.spec_from_file_location(f"corpus_case_{case['name']}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def case_step(case):
    """The rk4 step a case is validated at: the module's ``STEP`` (seconds)
    when it declares one, with its reason in its docstring (a stiff force
    element the default step cannot follow to validate's 1e-6), else
    ``DEFAULT_STEP``.  The tolerances are the same for every case; only
    the step is the case's."""
    if "family" in case:
        return DEFAULT_STEP
    step = getattr(_case_module(case), "STEP", DEFAULT_STEP)
    if not (isinstance(step, (int, float)) and 0 < step <= DEFAULT_STEP):
        raise SystemExit(f"corpus.py: {case['name']}.STEP must be a number of seconds in (0, {DEFAULT_STEP:g}], "
                         f"not {step!r}")
    return float(step)


def system_for(case):
    """A fresh ``JointSystem`` of the case (a second call gives an equal,
    independent one: the start check reads the description untouched)."""
    _import_corpus()
    if "family" in case:
        from corpus import _families
        fn = {"fourbar": _families.four_bar, "slider_crank": _families.slider_crank,
              "rssr": _families.rssr, "five_bar": _families.five_bar}[case["family"]]
        return fn(case["name"], f"fuzz case of the {case['family']} family", **case["params"])
    return _case_module(case).build()


def _wrap(d, angle):
    return (d + math.pi) % (2 * math.pi) - math.pi if angle else d


def start_check(system, row0):
    """The FMU's start ``row0`` ({coordinate: value}) against the description."""
    import numpy as np
    from fmigen.verify.cartesian import CartesianModel
    problems, numbers = [], {}
    coords = {c.name: c for c in system.coordinates}
    q0 = {n: v for n, v in row0.items() if n in coords}
    for n in system.independent or []:
        c = coords[n]
        if c.start is not None and n in q0:
            d = abs(_wrap(q0[n] - c.start, c.angle))
            if d > 1e-12:
                problems.append(f"independent '{n}' starts at {q0[n]:.15g}, described {c.start:.15g}")
    cm = CartesianModel(system)
    X, R, _tree = cm.forward_kinematics(q0)
    phi, _J, _g = cm.constraints(X, R, np.zeros(6 * cm.N))
    numbers["start_closure"] = float(np.abs(phi).max()) if phi.size else 0.0
    if numbers["start_closure"] > CLOSE_TOL:
        problems.append(f"the start does not close: max |Φ| = {numbers['start_closure']:.3e} "
                        "(Cartesian forward kinematics)")
    for h in system.branch_hints:
        rm, _ = cm._frame(X, R, cm.marker(h.marker))
        rr, _ = cm._frame(X, R, cm.marker(h.relative_to))
        val = float((rm - rr) @ np.array([float(e) for e in h.direction]))
        if h.sign * val <= 0:
            problems.append(f"branch hint violated at the start: ({h.marker.label} − {h.relative_to.label})·"
                            f"{tuple(float(e) for e in h.direction)} = {val:.3e}, wanted "
                            f"{'>' if h.sign > 0 else '<'} 0")
    dev, worst = 0.0, None
    for n, v in q0.items():
        c = coords[n]
        if c.start is not None:
            d = abs(_wrap(v - c.start, c.angle))
            if d > dev:
                dev, worst = d, n
    numbers["start_pose_deviation"] = dev
    if dev > POSE_TOL:
        problems.append(f"the start is not the described pose: '{worst}' = {q0[worst]:.6g}, "
                        f"described {coords[worst].start:.6g} (|Δ| = {dev:.3g} > {POSE_TOL})")
    return problems, numbers


class _Tee(io.TextIOBase):
    def __init__(self, real):
        self.real, self.buf = real, io.StringIO()

    def write(self, s):
        self.buf.write(s)
        return self.real.write(s)

    def flush(self):
        self.real.flush()


def run_case(case, stop_time):
    """Build, validate, check the start of one case; a dict of the outcome.
    The script calls it in a child process (``--child``); the suite's sample
    calls it directly.  What the FMU prints to stderr is kept too: its last
    messages say why it stopped."""
    real = sys.stderr
    try:
        return _run_case(case, stop_time)
    finally:
        sys.stderr = real


def _check_refusal(out, case):
    """A fuzz case refused for want of an assembly that its closed form has
    (or passed without one) is a wrong answer, not a refusal."""
    closes = assembles(case)
    if closes is None:
        return
    out["assembles"] = closes
    if out["outcome"] == "refused" and closes and message_class(out) == "no assembly":
        out.update(outcome="failed", check="refusal",
                   message=out["message"] + " (but the closed form of the family has an assembly at the start)")
    elif out["outcome"] != "refused" and not closes:
        out.update(outcome="failed", check="assembly",
                   message=(out.get("message", "") + "; " if out.get("message") else "")
                   + "the closed form of the family has no assembly at the start, yet the build went on")


def _run_case(case, stop_time):
    from fmigen.fmi.fmu import BuildError
    from fmigen.model import ModelError
    tee = _Tee(sys.stderr)
    sys.stderr = tee
    t0 = time.time()
    out = {"name": case["name"]}
    if "family" in case:
        out["family"], out["params"] = case["family"], case["params"]
    try:
        from fmigen.verify.validate import validate
        try:
            import mujoco  # noqa: F401
            peer = "mujoco"
        except ImportError:
            peer = None
        step = case_step(case)
        if step != DEFAULT_STEP:
            out["step"] = step
        system = system_for(case)
        log = lambda m: print(f"  [{case['name']} {time.time() - t0:6.1f} s] {m}", file=sys.stderr)  # noqa: E731
        report = validate(system, stop_time=stop_time, step=step, peer=peer, log=log)
    except (ModelError, BuildError) as e:
        out.update(outcome="refused", message=f"{type(e).__name__}: {e}")
        _check_refusal(out, case)
        out["seconds"] = round(time.time() - t0, 1)
        return out
    except Exception as e:  # a defect: keep where it came from
        frames = traceback.extract_tb(e.__traceback__)
        inner = frames[-1] if frames else None
        where = f"{Path(inner.filename).name}:{inner.lineno} in {inner.name}" if inner else "?"
        out.update(outcome="traceback", message=f"{type(e).__name__}: {e}", where=where,
                   traceback=traceback.format_exc()[-4000:])
        out["seconds"] = round(time.time() - t0, 1)
        return out
    res = report.fmu_result
    failures = []
    refs = {}
    for key, ref in report.references.items():
        entry = {"max_abs_error": max(ref["max_abs_error"].values(), default=None),
                 "max_abs_velocity_error": max(ref["max_abs_velocity_error"].values(), default=None),
                 "passed": ref["passed"]}
        if "mujoco_constraint_violation" in ref:
            entry["constraint_violation"] = ref["mujoco_constraint_violation"]
        if "error" in ref:
            entry["error"] = ref["error"]
        refs[key] = entry
        if "error" in ref and key == "mujoco":
            continue   # MJCF cannot hold this description: noted, not a failure of the FMU
        if not ref["passed"]:
            worst = max(ref["max_abs_error"].items(), key=lambda kv: kv[1], default=("-", float("nan")))
            vworst = max(ref["max_abs_velocity_error"].items(), key=lambda kv: kv[1], default=("-", float("nan")))
            compared = f"max |Δq| {worst[1]:.3e} ({worst[0]}), max |Δv| {vworst[1]:.3e} ({vworst[0]})"
            if "error" not in ref:
                failures.append(f"{key}: {compared}")
            else:
                # the reference itself failed ("ida failed", its own class),
                # with the comparison up to where it got, if anywhere
                failures.append(f"{key} failed: {ref['error']}"
                                + (f", {compared}" if ref["max_abs_error"] else ""))
    tol = report.tolerances
    if report.max_constraint_residual > tol["constraint_residual"]:
        failures.append(f"constraint residual {report.max_constraint_residual:.3e}")
    if report.energy_drift > tol["energy"]:
        failures.append(f"energy drift {report.energy_drift:.3e}")
    t_end = float(res["time"][-1])
    stopped = t_end < stop_time - 1e-9 * max(1.0, stop_time)
    problems, numbers = start_check(system_for(case), {n: float(res[n][0]) for n in res.dtype.names})
    out.update(refs=refs, residual=report.max_constraint_residual, energy_drift=report.energy_drift,
               t_end=t_end, build_seconds=round(report.build_seconds, 1), **numbers)
    messages = [ln.strip() for ln in tee.buf.getvalue().splitlines()
                if any(k in ln for k in ("DISCARD", "ERROR", "FATAL", "Discard", "singular"))
                and not ln.lstrip().startswith(f"[{case['name']} ")]
    # a failure on a run the FMU ended early says where and why it ended
    # (the errors often grow on the approach to the singularity it stopped at)
    ended = (f"; the FMU stopped at t = {t_end:g}" + (f": {messages[-1]}" if messages else "")) if stopped else ""
    if problems:
        out.update(outcome="failed", check="start", message="; ".join(problems) + ended)
    elif failures:
        out.update(outcome="failed", check="validation", message="; ".join(failures) + ended)
    elif stopped:
        out.update(outcome="stopped", message=(messages[-1] if messages else
                                                 f"the FMU stopped at t = {t_end:g} without a message"))
        if not messages:
            out.update(outcome="failed", check="stop")
    else:
        out["outcome"] = "passed"
    _check_refusal(out, case)
    if messages:
        out["fmu_messages"] = messages[-3:]
    out["seconds"] = round(time.time() - t0, 1)
    return out


def run_in_child(case, stop_time, timeout, verbose=False):
    """One case in a fresh interpreter (``--child``): its result dict.  The
    child runs in its own process group, so a timeout ends the compiler or
    Singular it started too."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(case),
           "--stop-time", repr(stop_time)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    t0 = time.time()
    fuzz = {"family": case["family"], "params": case["params"]} if "family" in case else {}
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         cwd=str(ROOT), start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, stderr = p.communicate()
        if verbose:
            sys.stderr.write(stderr)
        # the last line the case logged says which stage it was in
        logged = [ln.strip() for ln in stderr.splitlines() if ln.lstrip().startswith(f"[{case['name']} ")]
        return {"name": case["name"], "outcome": "timeout",
                "message": f"no result within {timeout:g} s" + (f"; last logged: {logged[-1]}" if logged else ""),
                "seconds": round(time.time() - t0, 1), **fuzz}
    if verbose:
        sys.stderr.write(stderr)
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    if lines:
        return json.loads(lines[-1])
    tail = (stderr or "").strip().splitlines()[-5:]
    return {"name": case["name"], "outcome": "crashed", "message": f"exit status {p.returncode}: " + " | ".join(tail),
            "seconds": round(time.time() - t0, 1), **fuzz}


# --- the report ---------------------------------------------------------------

def message_class(r):
    """What kind of stop or failure a result is, for counting: the cause a
    refusal's message names, else its exception type and its words with
    the numbers and quoted names masked (so the same message about another
    joint or value falls in the same class)."""
    msg = r.get("message", "")
    if r["outcome"] == "failed":
        # the FMU's own stop message (after "the FMU stopped") has ';' of its own
        head, stop, tail = msg.partition("; the FMU stopped")
        parts = [m.strip() for m in head.split(";")]
        what = sorted({m.split(":")[0].split(" ")[0] if m.startswith("energy drift") else m.split(":")[0]
                       for m in parts if not m.startswith("the FMU stopped")})
        cls = f"{r.get('check', '')}: " + ", ".join(what)
        if stop:
            cls += ", then the FMU stopped" + (" at a limit position" if "limit position" in tail else
                                               " at a singular configuration" if "singular" in tail else "")
        return cls
    for words, cls in CAUSES:
        if re.search(words, msg):
            return cls
    head = re.sub(r"'[^']*'", "'…'", msg.split("\n")[0])
    head = re.sub(r"[-+]?\d+(\.\d+)?(e[-+]?\d+)?", "N", head)
    return head[:90]


#: the causes the issue asks a refusal to name, by the words fmigen's messages use for them
CAUSES = (
    (r"no real assembly|cannot be assembled|cannot be closed|does not assemble|no assembly", "no assembly"),
    (r"StartPoseError|not the (pose|configuration) the joint description|another branch", "start on another branch"),
    (r"start is a singular configuration", "singular start"),
    (r"singular", "singular configuration"),
    (r"inconsistent|redundant", "inconsistent or redundant constraint"),
)


def _fmt(x):
    return "–" if x is None else f"{x:.1e}"


def _params(r):
    p = r.get("params")
    if not p:
        return ""
    def v(x):
        return "(" + ", ".join(v(e) for e in x) + ")" if isinstance(x, list) else f"{x:g}" if isinstance(x, float) else str(x)
    return ", ".join(f"{k.rstrip('_')}={v(x)}" for k, x in p.items())


def counts_of(results):
    counts = {k: 0 for k in OUTCOMES}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    return counts


def markdown(results, meta=None):
    """The report: when and on what it ran, the counts by outcome, the
    refusals and failures by class, one row per case."""
    meta = meta or {}
    lines = []
    if meta:
        lines.append(f"Run {meta.get('date', '?')} at commit `{meta.get('commit', '?')}`: "
                     f"`{meta.get('command', '')}` (stop time {meta.get('stop_time', '?')} s, "
                     f"{len(results)} of {meta.get('cases', len(results))} cases).")
        lines.append("")
    counts = counts_of(results)
    lines += ["| outcome | cases |", "|---|---|"] + [f"| {k} | {v} |" for k, v in counts.items()]
    fuzzed = [r for r in results if "params" in r]
    if fuzzed:
        # the oracle for refusals (``assembles``), applied to the recorded parameters
        oracle = [(r, assembles(r)) for r in fuzzed]
        refused_ok = sum(1 for r, a in oracle if r["outcome"] == "refused" and a is False)
        wrong = [r["name"] for r, a in oracle if (r["outcome"] == "refused" and a is True
                                                  and message_class(r) == "no assembly")
                 or (r["outcome"] in ("passed", "stopped") and a is False)]
        lines += ["", f"Against the families' closed forms (an assembly at the start or none): "
                  f"{sum(1 for _, a in oracle if a)} of the {len(fuzzed)} cases assemble; "
                  f"{refused_ok} refusals are cases without an assembly; "
                  f"{len(wrong)} outcomes contradict the closed form" + (f" ({', '.join(wrong)})" if wrong else "")
                  + "."]
    singular = [(r["name"], stop_margin(r)) for r in fuzzed if stop_margin(r) is not None]
    if singular:
        worst = max(singular, key=lambda nm: abs(nm[1]))
        lines += ["", f"{len(singular)} fuzz cases stopped at a limit position or a singular configuration; "
                  f"by the closed form, each stop configuration lies within {abs(worst[1]):.2g} (relative, "
                  f"{worst[0]}) of the boundary of the assembly region, negative in "
                  f"{sum(1 for _, m in singular if m < 0)} (a step past it)."]
    classes = {}
    for r in results:
        if r["outcome"] != "passed":
            classes.setdefault((r["outcome"], message_class(r)), []).append(r)
    if classes:
        lines += ["", "| outcome | class | cases | first case: message |", "|---|---|---|---|"]
        for (outcome, cls), rs in sorted(classes.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
            first = rs[0]
            msg = first.get("message", "").split("\n")[0].replace("|", "\\|")
            if len(msg) > 300:
                msg = msg[:300] + "…"
            lines.append(f"| {outcome} | {cls} | {len(rs)} | {first['name']}: {msg} |")
    fuzz = any("params" in r for r in results)
    lines += ["", "| case | outcome | IDA max abs err q / v | Cartesian q / v | MuJoCo q / v (violation) | "
              "residual | energy drift | start: closure / pose dev | s |" + (" parameters |" if fuzz else ""),
              "|---|---|---|---|---|---|---|---|---|" + ("---|" if fuzz else "")]
    for r in results:
        refs = r.get("refs", {})

        def pair(k):
            e = refs.get(k)
            if not e:
                return "–"
            if "error" in e:
                return "not run"
            s = f"{_fmt(e['max_abs_error'])} / {_fmt(e['max_abs_velocity_error'])}"
            return s + (f" ({_fmt(e['constraint_violation'])})" if "constraint_violation" in e else "")
        outcome = r["outcome"] + (f" ({r['check']})" if r.get("check") else "")
        # a case validated at its own step (its module's STEP) says so
        name = r["name"] + (f" (h = {r['step'] * 1e3:g} ms)" if r.get("step") else "")
        lines.append(f"| {name} | {outcome} | {pair('ida')} | {pair('cartesian')} | {pair('mujoco')} | "
                     f"{_fmt(r.get('residual'))} | {_fmt(r.get('energy_drift'))} | "
                     f"{_fmt(r.get('start_closure'))} / {_fmt(r.get('start_pose_deviation'))} | "
                     f"{r.get('seconds', '')} |" + (f" {_params(r)} |" if fuzz else ""))
    return "\n".join(lines)


def _meta(args, cases):
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip() or "?"
    except OSError:
        commit = "?"
    command = "python scripts/corpus.py " + (f"--fuzz {args.fuzz} --seed {args.seed} --families {args.families}"
                                             if args.fuzz else (f"--only {args.only}" if args.only else "")).strip()
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
            "command": command.strip(), "stop_time": args.stop_time, "cases": len(cases)}


def _load(path):
    """Results and metadata from ``--json`` output or a ``--record`` file."""
    text = Path(path).read_text()
    if text.lstrip().startswith("{\n") or text.lstrip().startswith('{"counts"'):
        try:
            d = json.loads(text)
            return d.get("results", []), d.get("meta")
        except json.JSONDecodeError:
            pass
    results, meta = [], None
    for ln in text.splitlines():
        if ln.strip():
            d = json.loads(ln)
            if "meta" in d:
                meta = meta or d["meta"]
            else:
                results.append(d)
    # with --jobs, cases finish out of order; names sort as the cases do
    # (the corpus alphabetically, fuzz cases by their zero-padded index)
    return sorted(results, key=lambda r: r["name"]), meta


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Outcomes: " + ", ".join(OUTCOMES) + " (the module docstring says what each "
                                        "means). Progress goes to stderr, the results to stdout.")
    ap.add_argument("--only", help="comma-separated corpus names (default: all of tests/corpus)")
    ap.add_argument("--fuzz", type=int, metavar="N", help="run N random cases of the parametric families instead")
    ap.add_argument("--seed", type=int, default=1, help="the fuzzer's seed (default 1)")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"fuzzed families (default {','.join(FAMILIES)})")
    ap.add_argument("--stop-time", type=float, default=1.0, help="simulated seconds per case (default 1)")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds per case before it is reported as timeout (classifies only; default 900)")
    ap.add_argument("--json", action="store_true", help="the results as JSON on stdout")
    ap.add_argument("--markdown", action="store_true", help="the report as Markdown on stdout")
    ap.add_argument("--record", metavar="FILE",
                    help="append each result to FILE (JSON lines) as it finishes; cases already in FILE are "
                         "not run again, so an interrupted run resumes")
    ap.add_argument("--from", dest="from_file", metavar="FILE",
                    help="run nothing: report the results of a --json output or a --record file")
    ap.add_argument("--verbose", action="store_true", help="copy each case's build log to stderr")
    ap.add_argument("--jobs", type=int, default=1, metavar="K",
                    help="run K cases at a time (default 1; each case uses one core most of the time)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _import_corpus()
        out = run_case(json.loads(args.child), args.stop_time)
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    if args.from_file:
        results, meta = _load(args.from_file)
    else:
        if args.fuzz:
            families = tuple(args.families.split(","))
            unknown = [f for f in families if f not in FAMILIES]
            if unknown:
                raise SystemExit(f"corpus.py: unknown families {unknown} (have {', '.join(FAMILIES)})")
            cases = fuzz_cases(args.fuzz, args.seed, families)
        else:
            names = corpus_names()
            if args.only:
                wanted = args.only.split(",")
                unknown = [w for w in wanted if w not in names]
                if unknown:
                    raise SystemExit(f"corpus.py: no corpus mechanism {unknown} (have {', '.join(names)})")
                names = wanted
            cases = [{"name": n} for n in names]
        meta, done = _meta(args, cases), {}
        if args.record and Path(args.record).exists():
            old, old_meta = _load(args.record)
            done = {r["name"]: r for r in old}
            meta = old_meta or meta
        elif args.record:
            Path(args.record).write_text(json.dumps({"meta": meta}) + "\n")
        # each case is its own process; with --jobs K, K of them at a time
        # (threads only wait for their child).  Results keep the cases' order.
        lock = threading.Lock()

        def one(k, case):
            if case["name"] in done:
                return done[case["name"]]
            with lock:
                print(f"[{k}/{len(cases)}] {case['name']} ...", file=sys.stderr, flush=True)
            r = run_in_child(case, args.stop_time, args.timeout, args.verbose)
            with lock:
                if args.record:
                    with open(args.record, "a") as f:
                        f.write(json.dumps(r) + "\n")
                print(f"[{k}/{len(cases)}] {case['name']}: {r['outcome']}"
                      + (f" ({r['check']})" if r.get("check") else "")
                      + (f": {r['message'][:300]}" if r.get("message") else "") + f"  [{r.get('seconds', '?')} s]",
                      file=sys.stderr, flush=True)
            return r
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(one, range(1, len(cases) + 1), cases))
    counts = counts_of(results)
    if args.json:
        print(json.dumps({"meta": meta, "counts": counts, "results": results}, indent=1))
    elif args.markdown:
        print(markdown(results, meta))
    else:
        for r in results:
            print(f"{r['name']:40s} {r['outcome']:10s} {r.get('message', '')[:200]}")
    print("counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
