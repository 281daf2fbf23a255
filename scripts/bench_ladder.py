"""Growth with the number of loops: build time,
generated code size and instructions per step of a family of L closed cells.

Families (``mechanisms/``, ``FAMILIES``): ``ladder`` (L hanging four-bar
cells, f = L, the reduced mass matrix dense; revolute rungs, so the joint
angles nest 2L deep), ``ladder_planar`` (the same ladder with its rungs in
absolute coordinates) and ``fourbar_chain`` (L four-bars in series, f = 1).
Per family and L in 1, 2, 4, 8, 16, 32 (``--sizes``):

* *cold build*: ``fmigen build`` of ``build(cells=L)`` (a two-line wrapper
  module) in its own process with an empty FMIGEN_CACHE
  (``scripts/bench_build.build``: wall time and the build's stage times);
  a build over ``--timeout`` (default 600 s) stops the family there; the
  build's CPU time (it and the compilers it ran) is recorded too;
* *code size*: bytes and lines of the FMU's ``sources/model.c``;
* *instructions per step*: the FMU's own model.c and model_config.h compiled
  into ``fmigen bench``'s native harness (``fmigen/tools/bench.py``:
  ``compile_harness``, ``run_harness``, ``callgrind_instructions``): explicit
  Euler, h = 1 ms, ``--stop-time`` s (default 1), callgrind Ir of the
  integration loop per step, and inclusive per generated function;
* *residual*: the harness's peak max|Φ| over every state the integrator
  evaluated;
* *static operation counts* of the generated right-hand side by section
  (model expressions, Φ_d solves, M·B, BᵀMB, LDLᵀ, ...), from the names
  ``codegen_embedding`` gives its temporaries: where a superlinear step
  cost comes from.

Results are merged into docs/benchmarks_ladder.json after every L (an
interrupted run keeps what it measured); ``--write-docs`` then draws
docs/benchmarks_ladder.png and writes the "Growth with the number of loops"
section of docs/benchmarks.md from the JSON, with least-squares log-log
exponents over all L and over L ≥ 8 and the item-4 targets.

    python scripts/bench_ladder.py [--family ladder] [--sizes 1,2,4] [--write-docs] [--docs-only]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_build import build as timed_build  # noqa: E402

from fmigen.tools import bench  # noqa: E402
from fmigen.generate.codegen_embedding import STATEMENT, statement_operations  # noqa: E402
from fmigen.generate.codegen_recursive import RECURSIVE_FROM_F  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
JSON_OUT = ROOT / "docs" / "benchmarks_ladder.json"
PNG_OUT = ROOT / "docs" / "benchmarks_ladder.png"
HEADING = "## Growth with the number of loops"
#: family -> (module under mechanisms/, build() keywords besides cells, description, fmigen build
#: --dynamics): the first three with the embedding (Bᵀ M B), the *_recursive
#: ones the same mechanisms with the recursive elimination (codegen_recursive)
FAMILIES = {
    "ladder": ("ladder", {}, "ladder of L four-bar cells, revolute rungs, f = L", "embedded"),
    "ladder_planar": ("ladder", {"rungs": "planar"}, "the same ladder, rungs in absolute coordinates, f = L",
                      "embedded"),
    "fourbar_chain": ("fourbar_chain", {}, "chain of L four-bars, f = 1", "embedded"),
    "ladder_planar_recursive": ("ladder", {"rungs": "planar"}, "ladder_planar, recursive dynamics",
                                "recursive"),
    "fourbar_chain_recursive": ("fourbar_chain", {}, "fourbar_chain, recursive dynamics", "recursive"),
}
SIZES = (1, 2, 4, 8, 16, 32)
#: item 4's targets
TARGET_INSTR_EXPONENT = 1.2

#: temporaries of codegen_embedding's right-hand side by name prefix -> section
SECTIONS = [
    (r"w\d+|J_\d+|Pt_\d+|G_\d+|M_\d+|F_\d+|Fu_\d+", "model expressions (Φ_q, γ, M, F after CSE)"),
    (r"det\d+_\d+|dinv\d+_\d+|ai\d+_\d+|X\d+_\d+|Y_\d+|ac_\d+|vd\d+", "Φ_d block solves (X = Φ_d⁻¹Φ_i, a_c, v_d)"),
    (r"res\d+", "F − M a_c"),
    (r"mb\d+", "M·B"),
    (r"mh\d+", "BᵀMB"),
    (r"rbu?\d+", "Bᵀ(F − M a_c)"),
    (r"dd\d+|di\d+|ln\d+|l\d+|z\d+|y\d+|x\d+", "LDLᵀ factor and solve"),
]
#: the recursive elimination's temporaries (codegen_recursive; it shares the
#: model expressions and the factors of Φ_d's diagonal blocks above)
RECURSIVE_SECTIONS = [
    (r"vs\d+", "recursive: v_d by block substitution"),
    (r"eH\d+|eU\d+|eM\d+|eP\d+|eDi\d+|eL\d+", "recursive: elimination of M and Φ_q"),
    (r"eF\d+|eg\d+|eV\d+|eG\d+|eZ\d+|eA\d+", "recursive: F, γ and back substitution"),
]
EMBEDDED_SECTIONS = SECTIONS
SECTIONS = EMBEDDED_SECTIONS + RECURSIVE_SECTIONS
#: libm's trigonometric entry points as callgrind names them (inclusive)
LIBM = r"(__)?(sincos|sin|cos)(_fma)?|atan2"


def _function_body(src: str, name: str) -> str:
    """The body of ``name``, or of all its chunks when the generator split
    it (``chunking.chunked``: ``name_chunk0``, ``name_chunk1``, ...;
    the function itself then only calls them)."""
    bodies = []
    for m in re.finditer(rf"\n(?:FMIGEN_CHUNK )?int {name}(?:_chunk\d+)?\(", src):
        open_ = src.index("{", m.start())
        bodies.append(src[open_:src.index("\n}\n", open_)])
    return "\n".join(bodies)


def op_counts(model_c: str) -> dict:
    """{section: floating-point operations} of one right-hand-side evaluation
    (fmigen_embedded_prepare + _finish, straight-line code executed once per
    call; the work array's hand-over not counted)."""
    counts = {label: 0 for _, label in SECTIONS}
    counts["other"] = 0
    for fn in ("fmigen_embedded_prepare", "fmigen_embedded_finish"):
        for line in _function_body(model_c, fn).splitlines():
            m = STATEMENT.match(line)
            if not m:
                continue
            name, expr = m.groups()
            ops = statement_operations(expr)
            for pattern, label in SECTIONS:
                if re.fullmatch(pattern, name):
                    counts[label] += ops
                    break
            else:
                counts["other"] += ops
    return counts


def wrapper_module(family: str, cells: int, where: Path) -> Path:
    module, kw, _, _ = FAMILIES[family]
    args = "".join(f", {k}={v!r}" for k, v in kw.items())
    path = where / f"{family}_{cells}.py"
    path.write_text(f'"""{family} with {cells} cells (scripts/bench_ladder.py)."""\n'
                    f"from mechanisms.{module} import build as _build\n\n\n"
                    f"def build():\n    return _build(cells={cells}{args})\n")
    return path


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure_one(family: str, cells: int, stop_time: float, timeout: float, log) -> dict:
    with tempfile.TemporaryDirectory(prefix="fmigen-ladder-") as tmp:
        tmp = Path(tmp)
        spec = wrapper_module(family, cells, tmp)
        fmu_path = tmp / f"{family}_{cells}.fmu"
        log(f"{family} L={cells}: cold build (empty cache)")
        cpu0 = _children_cpu()
        cold = timed_build(str(spec), tmp / "cache", fmu_path, timeout=timeout,
                           options=("--dynamics", FAMILIES[family][3]))
        # CPU seconds of the build and everything it ran (gcc): on a shared
        # machine the wall time also counts other jobs' turns
        cold["cpu"] = round(_children_cpu() - cpu0, 2)
        row = {"family": family, "cells": cells, "build": cold}
        if "error" in cold:
            log(f"{family} L={cells}: build failed after {cold['wall']:.1f} s: {cold['error']}")
            return row
        with zipfile.ZipFile(fmu_path) as z:
            model_c = z.read("sources/model.c").decode()
            config_h = z.read("sources/model_config.h").decode()
        nq = int(re.search(r"#define NQ (\d+)", config_h).group(1))
        nc = int(re.search(r"#define NC (\d+)", config_h).group(1))
        ni = int(re.search(r"#define NI (\d+)", config_h).group(1))
        row.update(n=nq, m=nc, f=ni, model_c_bytes=len(model_c.encode()), model_c_lines=model_c.count("\n"),
                   rhs_operations=op_counts(model_c))
        log(f"{family} L={cells}: built in {cold['wall']:.1f} s ({cold['cpu']:.1f} s CPU; n = {nq}, m = {nc}, f = {ni}), "
            f"model.c {row['model_c_bytes'] / 1e3:.0f} kB; harness run and callgrind")
        exe = bench.compile_harness(SimpleNamespace(model_c=model_c, config_h=config_h), tmp / "harness")
        t0 = time.perf_counter()
        run = bench.run_harness(exe, stop_time, 1e-3, 1)
        cg = bench.callgrind_instructions(exe, stop_time, 1e-3, detail=True)
        total, kin, funcs = cg["instructions"], cg["kinematics"], cg["functions"]
        row.update(instructions_per_step=total, kinematics_instructions_per_step=kin,
                   function_instructions_per_step=funcs, peak_constraint_violation=run["peak_violation"],
                   ms_per_simulated_s=min(run["cpu_ms_per_run"]) / stop_time,
                   stop_time=stop_time, step=1e-3, harness_seconds=round(time.perf_counter() - t0, 1))
        log(f"{family} L={cells}: {total:,.0f} instructions/step, peak |Phi| {run['peak_violation']:.1e}")
        return row


def measure_equality(family: str, cells: int, stop_time: float, log) -> dict:
    """The recursive and the embedded dynamics of one mechanism, both built
    (``pipeline.build_fmu``, FMI 2.0 CS, rk4, h = 1 ms) and run for
    ``stop_time`` s in fmpy: the largest difference of any coordinate or
    velocity at the 0.01 s output points."""
    import numpy as np

    from fmigen.build.pipeline import build_fmu
    from fmigen.verify.validate import simulate
    module, kw, _, _ = FAMILIES[family]
    mod = importlib.import_module(f"mechanisms.{module}")
    runs = {}
    with tempfile.TemporaryDirectory(prefix="fmigen-ladder-eq-") as tmp:
        for dyn in ("embedded", "recursive"):
            fmu, compiled = build_fmu(mod.build(cells=cells, **kw), Path(tmp) / f"{dyn}.fmu", dynamics=dyn)
            runs[dyn] = simulate(fmu, list(compiled.dae.names), stop_time, 0.01)
    a, b = runs["embedded"], runs["recursive"]
    names = [x for x in a.dtype.names if x != "time" and x != "constraint_residual"]
    err = max(float(np.max(np.abs(a[x] - b[x]))) for x in names)
    swing = float(np.ptp(a[compiled.independent_names[0]]))
    log(f"{family} L={cells}: recursive against embedded, max |difference| {err:.1e} over {len(names)} "
        f"coordinates and velocities ({stop_time:g} s; the first independent coordinate swings {swing:.2f})")
    return {"family": family, "cells": cells, "max_abs_difference": err, "variables": len(names),
            "stop_time": stop_time, "swing": swing}


def save_equality(row: dict):
    data = load_json()
    data["equality"] = [r for r in data.get("equality", []) if (r["family"], r["cells"]) != (row["family"], row["cells"])]
    data["equality"].append(row)
    data["equality"].sort(key=lambda r: (list(FAMILIES).index(r["family"]), r["cells"]))
    JSON_OUT.write_text(json.dumps(data, indent=1) + "\n")


def load_json() -> dict:
    return json.loads(JSON_OUT.read_text()) if JSON_OUT.exists() else {"rows": []}


def save_row(row: dict):
    data = load_json()
    data["rows"] = [r for r in data["rows"] if (r["family"], r["cells"]) != (row["family"], row["cells"])]
    data["rows"].append(row)
    data["rows"].sort(key=lambda r: (list(FAMILIES).index(r["family"]), r["cells"]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=ROOT).stdout.strip() or "?"
    row["measured"] = f"{commit}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, " \
                      f"load average {os.getloadavg()[0]:.1f}"
    data["machine"] = f"{bench._cpu_name()}, {os.cpu_count()} cores (shared)"
    JSON_OUT.write_text(json.dumps(data, indent=1) + "\n")


# --- analysis -------------------------------------------------------------------

def fit(points) -> float | None:
    """Least-squares slope of log y against log x."""
    pts = [(math.log(x), math.log(y)) for x, y in points if y and y > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def _quantities(r):
    return {"build s": r["build"]["wall"], "build CPU s": r["build"].get("cpu"),
            "model.c bytes": r["model_c_bytes"], "instructions / step": r["instructions_per_step"]}


def exponents(rows) -> dict:
    """{family: {quantity: (over all L, over L >= 8)}}."""
    out = {}
    for fam in FAMILIES:
        ok = [r for r in rows if r["family"] == fam and "model_c_bytes" in r]
        out[fam] = {}
        for q in ("build s", "build CPU s", "model.c bytes", "instructions / step"):
            pts = [(r["cells"], _quantities(r)[q]) for r in ok]
            out[fam][q] = (fit(pts), fit([p for p in pts if p[0] >= 8]))
    return out


def verdicts(rows, exps) -> list[str]:
    out = []
    for fam in FAMILIES:
        ok = [r for r in rows if r["family"] == fam and "model_c_bytes" in r]
        if not ok:
            continue
        e_all, e_big = exps[fam]["instructions / step"]
        e = e_big if e_big is not None else e_all
        over = "L ≥ 8" if e_big is not None else "all measured L"
        out.append(f"- **{fam}: instructions per step O(L), fitted exponent ≤ {TARGET_INSTR_EXPONENT}** — "
                   + ("not measurable (fewer than two sizes)" if e is None else
                      f"{'met' if e <= TARGET_INSTR_EXPONENT else 'MISSED'}: {e:.2f} over {over} "
                      f"({e_all:.2f} over all L)"))
        big = sorted((r["cells"], r["build"]["wall"], r["build"].get("cpu")) for r in ok if r["cells"] >= 8)
        if len(big) >= 2:
            # O(L log L) beyond 8: t(L)/(L log L) must not grow; compare the
            # largest L against L = 8 scaled by L log L.  Judged on CPU time
            # (the build's process and the compilers it ran), which the other
            # work on a shared machine does not stretch as it does wall time;
            # both are reported
            (l0, t0, c0), (l1, t1, c1) = big[0], big[-1]
            grow = (l1 * math.log(l1)) / (l0 * math.log(l0))
            e_b, e_c = exps[fam]["build s"][1], exps[fam]["build CPU s"][1]
            judged, what = ((c0, c1), "CPU") if c0 and c1 else ((t0, t1), "wall")
            a0, a1 = judged
            other = f"; wall {t1:.0f} s against {t0 * grow:.0f} s" if what == "CPU" else ""
            out.append(f"- **{fam}: build time at most O(L log L) beyond L = 8** — "
                       + (f"met: {what} {a1:.0f} s at L = {l1} ≤ {a0 * grow:.0f} s (L = {l0}'s {a0:.0f} s × L log L)"
                          if a1 <= a0 * grow else
                          f"MISSED: {what} {a1:.0f} s at L = {l1}, O(L log L) from L = {l0}'s {a0:.0f} s allows "
                          f"{a0 * grow:.0f} s") + other + f"; fitted exponent over L ≥ 8: {e_b:.2f} wall"
                       + (f", {e_c:.2f} CPU" if e_c is not None else ""))
        else:
            failed = [r for r in rows if r["family"] == fam and "model_c_bytes" not in r]
            why = "fewer than two sizes ≥ 8 built"
            if failed and ok:
                last = max(ok, key=lambda r: r["cells"])
                f0 = failed[0]
                why = (f"L = {f0['cells']}: {f0['build'].get('error', 'failed')} — from L = {last['cells']} "
                       f"({last['build']['wall']:.0f} s) more than {f0['build']['wall'] / last['build']['wall']:.0f}× "
                       f"for {f0['cells'] / last['cells']:g}× the cells")
            out.append(f"- **{fam}: build time at most O(L log L) beyond L = 8** — not measurable ({why})")
    return out


def plot(rows, path: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6))
    for ax, q in zip(axes, ("build CPU s", "model.c bytes", "instructions / step")):
        top = 0
        for k, (fam, marker) in enumerate(zip(FAMILIES, "os^vD")):
            pts = [(r["cells"], _quantities(r)[q]) for r in rows if r["family"] == fam and "model_c_bytes" in r
                   and _quantities(r)[q]]
            if pts:
                ax.loglog(*zip(*pts), marker=marker, color=f"C{k}", label=f"{fam}: {FAMILIES[fam][2]}")
                top = max(top, max(y for _, y in pts))
        ls = [r["cells"] for r in rows if "model_c_bytes" in r]
        base = [r for r in rows if r["family"] == "fourbar_chain" and r["cells"] == 1 and "model_c_bytes" in r]
        ref = _quantities(base[0])[q] if base else None
        if ref and ls:
            xs = [1, max(ls)]
            for k, style in ((1, ":"), (2, "--"), (3, "-.")):
                ax.loglog(xs, [ref * x ** k for x in xs], "k" + style, lw=0.8,
                          label=f"∝ L{'' if k == 1 else '²' if k == 2 else '³'} (from fourbar_chain at L = 1)")
        ax.set_xlabel("L (closed cells)")
        ax.set_title(q)
        ax.grid(True, which="both", alpha=0.3)
        if ref:
            ax.set_ylim(ref / 2, top * 4)
    handles, labels = axes[2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.savefig(path, dpi=110)


def section(data) -> str:
    rows = data["rows"]
    exps = exponents(rows)
    head = ["family", "L", "n / m / f", "cold build s", "build CPU s", "of which: equations of motion / triangularization / "
            "C generation / compile", "model.c kB", "model.c lines", "instructions / step",
            "of which kinematics", "peak max\\|Φ\\|"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "model_c_bytes" not in r:
            b = r["build"]
            lines.append(f"| {r['family']} | {r['cells']} | | > {b['wall']:.0f} | "
                         + (f"> {b['cpu']:.0f}" if b.get("cpu") else "–")
                         + f" | {b.get('error', 'failed')} |" + " |" * (len(head) - 6))
            continue
        st = r["build"]["stages"]
        lines.append("| " + " | ".join([
            r["family"], str(r["cells"]), f"{r['n']} / {r['m']} / {r['f']}", f"{r['build']['wall']:.1f}",
            f"{r['build']['cpu']:.1f}" if r["build"].get("cpu") is not None else "–",
            " / ".join(f"{st.get(k, 0):.1f}" for k in ("dae", "triangular", "codegen", "fmu")),
            f"{r['model_c_bytes'] / 1e3:.0f}", f"{r['model_c_lines']:,}", f"{r['instructions_per_step']:,.0f}",
            f"{r['kinematics_instructions_per_step']:,.0f}" if r.get("kinematics_instructions_per_step") else "–",
            f"{r['peak_constraint_violation']:.1e}"]) + " |")
    ex = ["| family | quantity | exponent, all L built | exponent, L ≥ 8 |", "|---|---|---|---|"]
    for fam, qs in exps.items():
        built = sorted(r["cells"] for r in rows if r["family"] == fam and "model_c_bytes" in r)
        big = [x for x in built if x >= 8]
        for q, (a, b) in qs.items():
            if a is not None:
                ex.append(f"| {fam} | {q} | {a:.2f} (L = {', '.join(map(str, built))}) | "
                          + ("–" if b is None else f"{b:.2f} (L = {', '.join(map(str, big))})") + " |")
    # where the step goes: per generated function and per section of the rhs
    prof = ["| family | L | kinematics | rhs prepare | rhs finish | of these: libm sin, cos, atan2 | "
            "rhs operations: " + " / ".join(label for _, label in SECTIONS) + " |", "|" + "---|" * 7]
    for r in rows:
        if "function_instructions_per_step" not in r:
            continue
        fn = r["function_instructions_per_step"]
        ops = r["rhs_operations"]
        prof.append("| " + " | ".join([
            r["family"], str(r["cells"]),
            *(f"{fn.get(k, 0):,.0f}" for k in ("fmigen_kinematics", "fmigen_embedded_prepare",
                                                "fmigen_embedded_finish")),
            f"{sum(v for k, v in fn.items() if re.fullmatch(LIBM, k)):,.0f}",
            # rows measured before the recursive sections existed count 0 there
            " / ".join(f"{ops.get(label, 0):,}" for _, label in SECTIONS)]) + " |")
    md = [HEADING, "",
          "Generated by `scripts/bench_ladder.py --write-docs` (raw data: `docs/benchmarks_ladder.json`; "
          "chart: `docs/benchmarks_ladder.png`). Three families of L closed cells, "
          "all written with the joint API as `build(cells=L)`: *ladder* (`mechanisms/ladder.py`), a "
          "hanging planar ladder of L four-bar cells (two rails, a rung per cell, revolute joints, "
          "f = L, the reduced mass matrix BᵀMB dense); *ladder_planar*, the same ladder with every "
          "rung hung from ground by a planar joint (`rungs=\"planar\"`: the rungs' poses absolute, "
          "so joint coordinates nest two deep instead of 2L; same motion, tested); and "
          "*fourbar_chain* (`mechanisms/fourbar_chain.py`), L four-bars in series each driven by "
          "the previous one's rocker (f = 1): the loops grow alike, the f × f solve only in the "
          "ladders. `tests/test_ladder.py` validates L = 1, 2 of ladder and fourbar_chain against "
          "the DAE (IDA) and Cartesian references and ladder_planar against ladder.", "",
          "These three are built with `--dynamics embedded`: the right-hand side forms X = Φ_d⁻¹Φ_i, "
          "M·B and BᵀMB (`fmigen/generate/codegen_embedding.py`). *ladder_planar_recursive* and "
          "*fourbar_chain_recursive* are the same mechanisms built with `--dynamics recursive` "
          "(`fmigen/generate/codegen_recursive.py`): the same equations solved by eliminating, in an order "
          "fixed at build time from the leaves to the root, one loop block of Φ_d or one independent "
          "coordinate at a time — B is never formed, so every piece couples a bounded number of "
          "coordinates and the right-hand side's code and work grow linearly with L. The "
          "kinematics (the Gröbner sequences) and the model expressions are the same code in both. "
          f"`fmigen build --dynamics auto` (the default) takes the recursive elimination from "
          f"f = {RECURSIVE_FROM_F} independent coordinates on (below it the two are within a few per "
          "cent; see the rows).", "",
          "Per L: *cold build* = `fmigen build` (FMI 2.0 CS, rk4, plus the win64 DLL when mingw-w64 is "
          "installed) in its own process with an empty `FMIGEN_CACHE`, wall time including Python's "
          "start (~1.5 s), and its stages; *model.c* of the FMU; *instructions / step*: that model.c in "
          "`fmigen bench`'s native harness (explicit Euler, h = 1 ms, "
          f"{rows[0].get('stop_time', 1):g} s, callgrind Ir of the integration loop / steps; "
          "*kinematics*: `fmigen_kinematics` inclusive); *peak max|Φ|* over every state the "
          "integrator evaluated.", "",
          f"Machine: {data.get('machine', '?')}; measured {_span(rows)} (per row in the JSON). "
          "Other jobs shared the two cores, so wall times carry their turns: *build CPU s* is the "
          "build's own CPU time (user + system of the build process and the compilers it ran), the "
          "steadier number; instruction counts are exact.", "",
          *lines, "", f"![build time, model.c size and instructions per step against L]"
          f"({PNG_OUT.name})", "",
          "Least-squares slopes of log(quantity) against log L over the sizes that built (a size that "
          "did not build within the limit is not in the fit; see the targets):", "", *ex, "",
          "Targets (cost linear in the number of loops):", "", *verdicts(rows, exps), "",
          "Where the step goes: instructions per step inclusive per generated function (callgrind; "
          "an Euler step is one `fmigen_kinematics` and one right-hand side, `prepare` + `finish`; "
          "the libm column is the part of those spent in sin, cos and atan2), and the floating-point "
          "operations of one right-hand side by section (counted in the generated straight-line C "
          "by the temporaries' names; +, −, ×, ÷ and calls):", "",
          *prof, ""]
    eq = data.get("equality", [])
    if eq:
        md += ["Same trajectories: each mechanism built with `--dynamics embedded` and with "
               "`--dynamics recursive` (FMI 2.0 CS, rk4, h = 1 ms) and run in fmpy "
               "(`scripts/bench_ladder.py --equality`); the largest difference of any coordinate or "
               "velocity at the 0.01 s output points:", "",
               "| mechanism | L | time s | coordinates and velocities | swing of the first independent "
               "coordinate | max \\|recursive − embedded\\| |", "|---|---|---|---|---|---|"]
        md += [f"| {r['family']} | {r['cells']} | {r['stop_time']:g} | {r['variables']} | {r['swing']:.2f} | "
               f"{r['max_abs_difference']:.1e} |" for r in eq]
        md.append("")
    return "\n".join(md)


def _span(rows) -> str:
    stamps = [r["measured"] for r in rows if r.get("measured")]
    if not stamps:
        return "?"
    commits = sorted({m.split(",")[0] for m in stamps})
    times = sorted(m.split(", ")[1] for m in stamps)
    loads = [float(m.rsplit(" ", 1)[1]) for m in stamps]
    return (f"at commit{'s' if len(commits) > 1 else ''} {', '.join(commits)}, {times[0]} – {times[-1][11:]}, "
            f"load average {min(loads):.1f}–{max(loads):.1f} on the 2 cores")


def write_docs(text: str):
    """Replace (or insert before "## Build time") this section."""
    old = DOC.read_text()
    at = old.find("\n" + HEADING + "\n")
    if at >= 0:
        nxt = old.find("\n## ", at + 1)
        new = old[:at + 1] + text + (old[nxt:] if nxt >= 0 else "")
    else:
        bt = old.find("\n## Build time\n")
        new = old[:bt + 1] + text + "\n" + old[bt + 1:] if bt >= 0 else old.rstrip("\n") + "\n\n" + text
    DOC.write_text(new)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", action="append", choices=list(FAMILIES),
                   help="family to measure (repeatable; default both)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated L (default 1,...,32)")
    p.add_argument("--stop-time", type=float, default=1.0, help="simulated s in the harness (default 1)")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="a cold build longer than this stops the family (default 600 s)")
    p.add_argument("--write-docs", action="store_true",
                   help="draw the PNG and write the section of docs/benchmarks.md from the JSON")
    p.add_argument("--docs-only", action="store_true", help="measure nothing; with --write-docs")
    p.add_argument("--equality", action="store_true",
                   help="instead of the cost: build each family's mechanism (--family, default ladder_planar "
                        "and fourbar_chain) with both dynamics and record the largest difference of their "
                        "trajectories over --stop-time s")
    args = p.parse_args(argv)
    try:
        sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
    except ValueError:
        p.error(f"--sizes must be integers, got {args.sizes!r}")
    if not sizes or sizes[0] < 1:
        p.error("--sizes must be integers >= 1")

    def log(msg):
        print(f"[{datetime.datetime.now():%H:%M:%S}] {msg}", file=sys.stderr, flush=True)

    if args.equality:
        for fam in args.family or ["ladder_planar", "fourbar_chain"]:
            for L in sizes:
                save_equality(measure_equality(fam, L, args.stop_time, log))
    elif not args.docs_only:
        for fam in args.family or list(FAMILIES):
            for L in sizes:
                row = measure_one(fam, L, args.stop_time, args.timeout, log)
                save_row(row)
                if "model_c_bytes" not in row:
                    log(f"{fam}: stopping at L = {L} (larger L would take longer still)")
                    break
    data = load_json()
    exps = exponents(data["rows"])
    for line in verdicts(data["rows"], exps):
        print(line)
    if args.write_docs:
        plot(data["rows"], PNG_OUT)
        write_docs(section(data))
        log(f"wrote {PNG_OUT.relative_to(ROOT)} and the section '{HEADING[3:]}' of {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
