"""The worst-case table of docs/benchmarks.md: `fmigen bench MECH
--worst-case` (fmigen/tools/bench.py, ``worst_case``) for each mechanism.

    python scripts/bench_worst_case.py [MECH ...]      # default: every shipped mechanism
    python scripts/bench_worst_case.py --iterations [MECH ...]
    python scripts/bench_worst_case.py --realtime [MECH ...]

``--iterations``: only the iterations each bounded loop took (the same
harness without valgrind, ``worst_case(instructions=False)``: seconds, not
minutes), merged into the mechanism's entry; its instruction counts stay.
``--realtime``: the same instruction counts of the model as ``fmigen build
--realtime`` builds it (``worst_case(realtime=True)``), into
docs/benchmarks_worst_case_realtime.json and the section "Realtime builds".

Writes docs/benchmarks_worst_case.json (merged with the mechanisms already
there) and the section "Worst case per doStep" at the end of
docs/benchmarks.md (scripts/bench_report.py keeps a section it does not write
when it rewrites that file).  A mechanism that cannot be stepped (one that does
not build) is recorded with its reason.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "docs"
DATA = DOCS / "benchmarks_worst_case.json"
HEADER = "## Worst case per doStep (`fmigen bench MECH --worst-case`)"
DATA_REALTIME = DOCS / "benchmarks_worst_case_realtime.json"
HEADER_REALTIME = "## Realtime builds (`fmigen build --realtime`)"


def section(results: dict) -> str:
    rows = [HEADER, "",
            "Callgrind instructions of every Co-Simulation doStep (rk4, h = 1 ms, outputs read after it: "
            "`worst_case_step` in `fmigen/runtime/bench_harness.c`), one dump per step, over 3 s of the motion "
            "from the start with the default inputs and over the build's workspace sweep (every point of every "
            "path in path order, each with random velocities, ±2π unit scales per second, and random inputs, "
            "±2·max(|start|, 1); seeded). A step that fails (the motion running into a singular configuration, "
            "a random velocity carrying a sample past the workspace's edge) ends its motion or path and is "
            "listed apart: a HIL target budgets for it too, since it must return its error status within "
            "the same budget. Its loops are bounded by the caps, and a Newton iteration ends sooner where "
            "its steps stop contracting (`STALL_STOP` in `fmigen/generate/codegen_newton.py`). *most "
            "iterations* is the most any one call of each bounded loop took, the failed steps and the "
            "samples' assembly included (hooks in the runtime, compiled only into this harness); the caps "
            "are in the FMU's documentation.",
            "",
            "Every shipped mechanism that builds as an FMU, with these exceptions: `stewart_66` and "
            "`stewart_66_platform` are paper 001's assembly examples for `fmigen assemble` and do not build "
            "as FMUs. `landing_gear` and `landing_gear_joints` are kinematic FMUs: the piston length and its "
            "rate are their inputs, and a doStep solves the kinematics and velocities at them. Their motion "
            "holds the inputs at their start; each workspace sample sets them to the point and a random rate, "
            "and the step counted is the solve there from the previous point's solution (a dynamic FMU's "
            "sample is assembled outside the count, and its step integrates from it). How the vehicle's row "
            "was measured: the next section.",
            "",
            "Why instructions and not the per-step clock of the tables above: their *max step* is a wall-clock "
            "outlier of a shared machine. The five-link's 25.5× there has a p99 of 1.0× the median, and every "
            "formulation, the spring's with no iterative loop at all, shows a largest step of ~25–33 µs: a "
            "preemption or a cold cache, not work. Counted in instructions, the work of the longest doStep "
            "against the median is:",
            "",
            *instruction_rows(results)]
    return "\n".join(rows + iteration_rows(results)) + "\n"


def instruction_rows(results: dict) -> list[str]:
    """The instructions table: each mechanism's worst doStep that succeeded
    against the median, with the most iterations of each loop and its cap."""
    rows = ["| mechanism | doSteps (motion + workspace; failed) | median | p99 | max of the steps that succeeded | "
            "/ median | where | a failed step's (/ median) | most iterations: Newton block / polish / root's "
            "Newton / Aberth (caps) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, w in sorted(results.items()):
        if "median" not in w and "error" not in w:
            continue   # iterations only: the table below
        if "error" in w:
            rows.append(f"| {name} | – | – | – | – | – | {w['error']} | – | – |")
            continue
        it, cap = w["iterations"], w["caps"]
        failed = (f"{w['failed_max']:,} ({w['failed_max'] / w['median']:.2f}×)" if w.get("failed_max")
                  else "–")
        rows.append(
            f"| {name} | {w['steps']:,} ({w['motion_steps']:,} + {w['steps'] - w['motion_steps']:,}; "
            f"{w['failed']}) | {w['median']:,.0f} | {w['p99']:,.0f} | {w['max_ok']:,} | "
            f"**{w['max_ok_over_median']:.2f}×** | {w['max_ok_at']} | {failed} | {it['newton']} / {it['polish']} / "
            f"{it['poly_newton']} / {it['aberth']} ({cap['newton']} / {cap['polish']} / {cap['poly_newton']} / "
            f"{cap['aberth']}) |")
    return rows


def iteration_rows(results: dict) -> list[str]:
    """The iterations table: the most any one call of each bounded loop took,
    by where the doStep was and how it ended."""
    measured = {n: w for n, w in sorted(results.items()) if "iterations_workspace" in w}
    if not measured:
        return []
    caps = {json.dumps(w["caps"], sort_keys=True) for w in measured.values()}
    cap = next(iter(measured.values()))["caps"]

    def most(m):
        return " / ".join(str(m[k]) for k in ("newton", "polish", "poly_newton", "aberth"))
    rows = ["", "### Iterations each bounded loop needs", "",
            "The most iterations any one call of each bounded loop took (Newton block / polish / root's Newton / "
            "Aberth), by where the doStep was and how it ended, over the same motion and workspace sweep "
            "(`python scripts/bench_worst_case.py --iterations`, the harness without valgrind). The caps: "
            f"{most(cap)}" + ("" if len(caps) == 1 else " (not the same for every row)") + ". A step that fails "
            "is reported, with its cause, after it returns.", "",
            "| mechanism | doSteps (motion + workspace; failed) | workspace samples' steps | the motion's steps "
            "that succeeded | failed steps | assembly of the start and the samples |",
            "|---|---|---|---|---|---|"]
    for name, w in measured.items():
        rows.append(f"| {name} | {w['steps']:,} ({w['motion_steps']:,} + {w['steps'] - w['motion_steps']:,}; "
                    f"{w['failed']}) | {most(w['iterations_workspace'])} | {most(w['iterations_motion'])} | "
                    f"{most(w['iterations_failed']) if w['failed'] else '–'} | {most(w['iterations_assembly'])} |")
    return rows


def realtime_section(results: dict) -> str:
    """The realtime builds' section: the instructions table of the models
    ``fmigen build --realtime`` compiles, with their caps."""
    rows = [HEADER_REALTIME, "",
            "`fmigen build --realtime` caps each bounded loop at 2 × the most iterations it took over the "
            "workspace sweep's steps and assembly, + 2 (`fmigen/generate/realtime.py`), instead of the global "
            "caps. The same callgrind count as the worst-case table above, of the model as that build "
            "compiles it (`python scripts/bench_worst_case.py --realtime`, `fmigen bench MECH --worst-case "
            "--realtime`): every doStep over 3 s of the motion from the start and over the workspace sweep "
            "with random velocities and inputs (the same seed). A step that fails runs its loops to the "
            "realtime caps at most. The rows of eight_link, five_link and landing_gear_dynamic were measured "
            "again after the Newton iteration's round-off floor end (\"Are the caps what the workspace "
            "needs?\" above), the others before it.", "",
            *instruction_rows(results)]
    return "\n".join(rows) + "\n"


def splice(md: str, text: str, header: str = HEADER) -> str:
    """``md`` with its section ``header`` (to the next "## ") replaced by
    ``text``, or ``text`` appended."""
    if header not in md:
        return md.rstrip("\n") + "\n\n" + text
    start = md.index(header)
    nxt = md.find("\n## ", start + len(header))
    rest = md[nxt + 1:] if nxt >= 0 else ""
    return md[:start] + text + ("\n" + rest if rest else "")


def main(argv=None) -> int:
    from fmigen.model import ModelError
    from fmigen.tools.bench import worst_case
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("`", ""))
    ap.add_argument("mechanisms", nargs="*", metavar="MECH",
                    help="shipped mechanism names or paths to mechanism modules (default: every shipped one)")
    ap.add_argument("--iterations", action="store_true",
                    help="only the iterations each bounded loop took (no valgrind), merged into the entries")
    ap.add_argument("--realtime", action="store_true",
                    help="the model as fmigen build --realtime builds it, into " + DATA_REALTIME.name)
    args = ap.parse_args(argv)
    only_iterations, realtime = args.iterations, args.realtime
    # a misspelt name would otherwise be recorded in the docs as a mechanism that does not build
    unknown = [n for n in args.mechanisms if not (ROOT / "mechanisms" / f"{n}.py").exists() and not Path(n).is_file()]
    if unknown:
        ap.error(f"no mechanism {', '.join(map(repr, unknown))} (neither mechanisms/NAME.py nor a file)")
    names = args.mechanisms or sorted(p.stem for p in (ROOT / "mechanisms").glob("*.py")
                                      if p.stem != "corner_geometry")
    data = DATA_REALTIME if realtime else DATA
    results = json.loads(data.read_text()) if data.exists() else {}
    for name in names:
        try:
            w = worst_case(name, instructions=not only_iterations, realtime=realtime)
        except (ModelError, SystemExit) as e:
            w = {"error": str(e).splitlines()[0][:200]}
        if only_iterations and "error" in w:
            print(name, w["error"], flush=True)
            continue   # an entry's instruction counts are not replaced by an error of this run
        results[name] = {**results.get(name, {}), **w} if only_iterations else w
        print(name, w.get("max_over_median", w.get("iterations_workspace", w.get("error"))), flush=True)
        data.write_text(json.dumps(results, indent=1) + "\n")
    md = DOCS / "benchmarks.md"
    md.write_text(splice(md.read_text(), realtime_section(results), HEADER_REALTIME) if realtime
                  else splice(md.read_text(), section(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
