"""Time `fmigen build` per stage, cold and warm, and write the "Build time"
section of docs/benchmarks.md.

Per mechanism (default: every mechanisms/*.py but eight_link, see SLOW):

* cold: a fresh, empty FMIGEN_CACHE (no Gröbner bases, no derived model, no
  compiled library);
* warm: the same build again with that cache, i.e. what an edit of anything
  that is not part of the derivation (FMI variant, kind, solver, step) costs.

Each build is its own `python -m fmigen.cli build --json` process, so the
wall time includes Python's start and imports (~1.5 s); the stages are the
build's own (``"stages"`` of its JSON).  The build-time targets are checked
against the wall times.

    python scripts/bench_build.py [mechanism ...] [--include-slow] [--json] [--write-docs]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
HEADING = "## Build time"
#: left out unless named or --include-slow: eight_link's cold build takes
#: longer than the rest together (its Gröbner extraction); stewart_66 and
#: stewart_66_platform are paper 001's assembly examples (fmigen assemble):
#: stewart_66's build fails (its 12-unknown block has more polynomial
#: variables than a lex basis is tried for, and Newton cannot assemble the
#: start; measured when it was a 60 s timeout)
SLOW = {"eight_link", "stewart_66", "stewart_66_platform"}
TARGETS = {"stephenson3 cold": 30.0, "stephenson3 warm": 5.0, "warm": 5.0}
STAGES = [("dae", "equations of motion"), ("triangular", "triangularization + cover"),
          ("codegen", "C generation"), ("derived", "derived-cache read"), ("fmu", "compile + package")]


def build(mechanism: str, cache: Path, out: Path, timeout: float | None = None, options=()) -> dict:
    """One ``fmigen build --json`` process (with the further command-line
    ``options``): wall time and the build's stages, or an error (also when it
    runs longer than ``timeout`` seconds)."""
    env = dict(os.environ, FMIGEN_CACHE=str(cache), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    # its own process group, so a timeout also stops the compilers it runs
    p = subprocess.Popen([sys.executable, "-m", "fmigen.cli", "build", mechanism, "-o", str(out), "--json",
                          *options],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        _, stderr = p.communicate()
        wall = time.perf_counter() - t0
        stages = [line.strip() for line in stderr.splitlines() if line.startswith("[")]
        return {"wall": round(wall, 2), "error": f"stopped after the {timeout:g} s limit"
                + (f" in stage '{stages[-1]}'" if stages else "")}
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return {"wall": round(wall, 2), "error": stderr.strip().splitlines()[-1]}
    info = json.loads(stdout)
    return {"wall": round(wall, 2), "stages": info["stages"], "hit": "from the cache" in stderr,
            "dynamics": info.get("dynamics")}


def measure(mechanisms, log) -> list[dict]:
    rows = []
    for m in mechanisms:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log(f"{m}: cold build (empty cache)")
            cold = build(m, tmp / "cache", tmp / f"{m}.fmu")
            if "error" in cold:
                log(f"{m}: failed after {cold['wall']:.1f} s: {cold['error']}")
                rows.append({"mechanism": m, "cold": cold, "warm": None})
                continue
            log(f"{m}: {cold['wall']:.1f} s; warm build")
            warm = build(m, tmp / "cache", tmp / f"{m}_warm.fmu")
            log(f"{m}: {warm['wall']:.1f} s{'' if warm['hit'] else ' (derived cache missed!)'}")
            rows.append({"mechanism": m, "cold": cold, "warm": warm})
    return rows


def verdicts(rows) -> list[str]:
    rows = [r for r in rows if r["warm"] is not None]
    by = {r["mechanism"]: r for r in rows}
    out = []
    if "stephenson3" in by:
        for kind in ("cold", "warm"):
            t, limit = by["stephenson3"][kind]["wall"], TARGETS[f"stephenson3 {kind}"]
            out.append(f"- **Stephenson six-bar, {kind}, ≤ {limit:g} s** — "
                       + (f"met: {t:.1f} s" if t <= limit else f"MISSED: {t:.1f} s"))
    slowest = max(rows, key=lambda r: r["warm"]["wall"])
    over = [r["mechanism"] for r in rows if r["warm"]["wall"] > TARGETS["warm"]]
    out.append(f"- **every shipped mechanism, warm, ≤ {TARGETS['warm']:g} s** — "
               + (f"met for the {len(rows)} measured (slowest {slowest['mechanism']}, "
                  f"{slowest['warm']['wall']:.1f} s)" if not over else f"MISSED: {', '.join(over)}"))
    return out


def table(rows) -> list[str]:
    head = ["mechanism", "cold wall s", *[f"cold: {label}" for key, label in STAGES if key != "derived"],
            "warm wall s", "warm: derived-cache read", "warm: compile + package"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["warm"] is None:
            lines.append(f"| {r['mechanism']} | failed after {r['cold']['wall']:.1f} s: {r['cold']['error']} |"
                         + " |" * (len(head) - 2))
            continue
        c, w = r["cold"]["stages"], r["warm"]["stages"]
        cells = [r["mechanism"], f"{r['cold']['wall']:.1f}",
                 *[f"{c.get(k, 0):.2f}" for k, _ in STAGES if k != "derived"],
                 f"{r['warm']['wall']:.1f}", f"{w.get('derived', float('nan')):.2f}", f"{w.get('fmu', 0):.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def section(rows, skipped) -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip() or "?"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    md = [HEADING, "",
          "Generated by `scripts/bench_build.py --write-docs`: `fmigen build <mechanism>` (FMI 2.0 CS, "
          "rk4, and a win64 DLL when mingw-w64 is installed), each in its own process. *Cold*: an empty "
          "`FMIGEN_CACHE` (Gröbner bases, derived model and object files all computed); *warm*: the "
          "same build again, every cache hit. A rebuild after changing the FMI variant, kind, solver or "
          "step reuses the derived model and model.c's object file (only the small runtime files "
          "compile); one after changing a tunable parameter's value reuses the derived model but "
          "compiles model.c again (its default array changed; the cold compile column). Wall times include Python's start and imports (~1.5 s); the stage columns are "
          "the build's own timings (seconds).", "",
          f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared; "
          f"measured at commit {commit}, {now} UTC."
          + (f" Not measured: {', '.join(sorted(skipped))} (eight_link: a cold build far above a "
             "minute; stewart_66, stewart_66_platform: paper 001's assembly examples for `fmigen "
             "assemble`, stewart_66 does not build as an FMU; `--include-slow` includes them)."
             if skipped else ""), "",
          *table(rows), "", "Targets (build time):", "", *verdicts(rows), ""]
    return "\n".join(md)


def write_docs(text: str):
    """Replace (or append) the "Build time" section, the file's last."""
    old = DOC.read_text()
    at = old.find("\n" + HEADING + "\n")
    head = old[:at + 1] if at >= 0 else old.rstrip("\n") + "\n\n"
    DOC.write_text(head + text)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mechanisms", nargs="*", help="names under mechanisms/ (default: all but the slow ones)")
    p.add_argument("--include-slow", action="store_true", help=f"also {', '.join(sorted(SLOW))}")
    p.add_argument("--json", action="store_true", help="the measurements as JSON on stdout")
    p.add_argument("--write-docs", action="store_true", help="write the section into docs/benchmarks.md")
    args = p.parse_args(argv)
    # a mechanism module has build(); corner_geometry.py is a helper the
    # vehicle's modules import
    every = sorted(f.stem for f in (ROOT / "mechanisms").glob("*.py")
                   if not f.stem.startswith("_") and "\ndef build(" in f.read_text())
    names = args.mechanisms or [m for m in every if args.include_slow or m not in SLOW]
    skipped = set() if args.mechanisms or args.include_slow else SLOW & set(every)
    if skipped:
        print(f"skipping {', '.join(sorted(skipped))} (slow; --include-slow includes it)", file=sys.stderr)
    rows = measure(names, lambda m: print(m, file=sys.stderr, flush=True))
    text = section(rows, skipped)
    if args.write_docs:
        write_docs(text)
    print(json.dumps({"rows": rows, "skipped": sorted(skipped)}) if args.json else text)


if __name__ == "__main__":
    main()
