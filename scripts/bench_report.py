"""Run `fmigen bench` on the paper-000 mechanisms and write docs/benchmarks.md,
docs/benchmarks.json (the raw bench JSON) and docs/benchmarks.png.

    .venv/bin/python scripts/bench_report.py [--mechanisms stewart,five_link,landing_gear_dynamic]
        [--repeats 7]
        [--mujoco-dir <site-packages>/mujoco] [--render-only]

Numbers are measured, never edited: the markdown is generated from the JSON,
including the verdict on each target, and the numbers in the prose notes are
filled from the same run — except those marked "one-off", measured by hand
once on 2026-11-26 and said to be so.
"""
from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fmigen.tools.bench import bench  # noqa: E402
from fmigen.model import ModelError  # noqa: E402

DOCS = ROOT / "docs"
HOST_OPT = ["-O3", "-march=native"]

PAPER = {  # paper 000, MS compiler, dynamic simulation, ms per simulated second
    "stewart": {("groebner", None): 10.3, ("newton-loop", 1e-3): 13.3, ("newton-loop", 1e-6): 16.6,
                ("newton", 1e-3): 45.3, ("newton", 1e-6): 80.6, ("baumgarte", None): 43.3,
                ("penalty", None): 85.7},
}


#: the instruction targets (harness step, callgrind), printed met or
#: missed.  landing_gear_dynamic's is set from its first measurement, half
#: of it as the issue asks of the others: 8,749 per step (commit 35ec98a,
#: 2026-11-26; the very first, 288,653, was fmigen_poly_root falling through
#: to its Aberth fallback every step, fixed there).  Half of it is also what
#: "Gröbner the cheapest exact formulation" needs: Newton per loop at 10⁻³
#: took 4,377.
TARGETS = {"stewart": {"harness": 5000, "fmu_ratio": 1.15}, "five_link": {"harness": 9000},
           "landing_gear_dynamic": {"harness": 4375}}

#: per mechanism, what `fmigen bench` runs when it is not paper 000's 3 s
#: with every formulation: the dynamic landing gear falls under gravity into
#: a singular configuration at t = 0.847 s (tests/test_landing_gear.py
#: validates it to 0.75 s), and its massless piston coordinate leaves M
#: singular, which Baumgarte and the springs cannot integrate.
BENCH_ARGS = {"landing_gear_dynamic": dict(stop_time=0.75,
                                           kinematics=["groebner", "newton", "newton-loop", "penalty"])}


def operations_cell(ops):
    """The floating-point operations per step (fmigen.tools.callgrind_profile.count_operations)."""
    if not ops:
        return "–"
    calls = ", ".join(f"{n:.0f} {f}" for f, n in ops["libm_calls"].items() if n >= 0.5)
    fma = f" {ops['fma']:,.0f} fma" if ops.get("fma") else ""
    return (f"{ops['flops']:,.0f}: {ops['add']:,.0f} +, {ops['mul']:,.0f} ×, {ops['div']:,.0f} ÷, "
            f"{ops['sqrt']:,.0f} √{fma}" + (f"; {calls}" if calls else ""))


def label(row):
    return row["kinematics"] + ("" if row["tolerance"] is None else f" (tol {row['tolerance']:g})")


def table(result):
    paper = PAPER.get(result["mechanism"], {})
    head = ["formulation", "ms CPU / simulated s", "(min)", "instructions / step", "of which kinematics",
            "FMU doStep at h, instructions", "median step µs", "p99 step µs",
            "max step µs", "peak max\\|Φ\\|", "vs Gröbner (instructions)",
            "flops / step (+ − × ÷ √; libm calls)", "instructions / flop", "Newton iterations (LU factorizations) / solve"]
    kinematic = any(r.get("kinematic_run") for r in result["rows"])
    if kinematic:
        head += ["kinematic run ms/s", "kinematic run instructions / step", "kinematic run peak max\\|Φ\\|"]
    if paper:
        head.append("paper 000 (P4 3 GHz, MS C) ms/s")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    g = result["rows"][0]
    for r in result["rows"]:
        ir = r["instructions_per_step"]
        kin = r.get("kinematics_instructions_per_step")
        cells = [label(r), f"{r['ms_per_simulated_s']:.2f}", f"{r['ms_per_simulated_s_min']:.2f}",
                 "–" if ir is None else f"{ir:,.0f}",
                 "–" if kin is None else f"{kin:,.0f}",
                 "–" if r.get("fmu_instructions_per_step") is None else f"{r['fmu_instructions_per_step']:,.0f}",
                 f"{r['median_step_us']:.2f}", f"{r['p99_step_us']:.2f}", f"{r['max_step_us']:.1f}",
                 f"{r['peak_constraint_violation']:.1e}",
                 "–" if ir is None or g["instructions_per_step"] is None else f"{ir / g['instructions_per_step']:.2f}×",
                 operations_cell(r.get("operations_per_step")),
                 "–" if ir is None or not (r.get("operations_per_step") or {}).get("flops") else
                 f"{ir / r['operations_per_step']['flops']:.2f}",
                 "–" if r.get("newton_iterations") is None else
                 f"{r['newton_iterations']:.2f} ({r.get('newton_factorizations') or float('nan'):.2f})"]
        if kinematic:
            k = r.get("kinematic_run")
            cells += ["–"] * 3 if not k else [
                f"{k['ms_per_simulated_s']:.2f}",
                "–" if k["instructions_per_step"] is None else f"{k['instructions_per_step']:,.0f}",
                f"{k['peak_constraint_violation']:.1e}"]
        if paper:
            v = paper.get((r["kinematics"], r["tolerance"]))
            cells.append("–" if v is None else f"{v:g}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdicts(result):
    rows = result["rows"]
    g = rows[0]
    assert g["kinematics"] == "groebner"
    out = []
    others = rows[1:]
    acc_ok = all(g["peak_constraint_violation"] <= r["peak_constraint_violation"] for r in others)
    # "at equal or better accuracy": the rows within 10× of the most accurate
    # other row's violation are the comparison; cheaper rows far less
    # accurate are listed, not hidden
    best = min(r["peak_constraint_violation"] for r in others)
    peers = [r for r in others if r["peak_constraint_violation"] <= 10 * best]
    ir_ok = all(g["instructions_per_step"] < r["instructions_per_step"] for r in peers)
    ms_ok = all(g["ms_per_simulated_s"] < r["ms_per_simulated_s"] for r in peers)
    cheaper = [r for r in others if r["instructions_per_step"] <= g["instructions_per_step"]]
    ratio = lambda r, k: r[k] / g[k]  # noqa: E731
    out.append(
        f"- **Gröbner faster than every other formulation at equal or better accuracy** — "
        f"accuracy: {'met' if acc_ok else 'MISSED'} (Gröbner peak max|Φ| "
        f"{g['peak_constraint_violation']:.1e}, the others "
        f"{best:.1e} … {max(r['peak_constraint_violation'] for r in others):.1e}); "
        f"against the most accurate others ("
        + ", ".join(f"{label(r)}: {r['peak_constraint_violation']:.1e}" for r in peers)
        + f"): instructions per step {'met' if ir_ok else 'MISSED'} ("
        + ", ".join(f"{ratio(r, 'instructions_per_step'):.2f}×" for r in peers)
        + f" Gröbner's), CPU time {'met' if ms_ok else 'MISSED'} in this run ("
        + ", ".join(f"{ratio(r, 'ms_per_simulated_s'):.2f}×" for r in peers) + ")."
        + ("" if not cheaper else " Cheaper per step than Gröbner, at far worse accuracy: "
           + ", ".join(f"{label(r)} ({ratio(r, 'instructions_per_step'):.2f}× the instructions, peak "
                       f"{r['peak_constraint_violation']:.1e})" for r in cheaper) + "."))
    if result["mechanism"] == "stewart":
        v = g["ms_per_simulated_s"]
        out.append(f"- **Stewart ≤ 1 ms CPU per simulated second** — "
                   f"{'met' if v <= 1 else 'MISSED'}: {v:.2f} ms/s"
                   + ("" if v <= 1 else f", {v:.1f}× the target"))
    t = TARGETS.get(result["mechanism"], {})
    if "harness" in t and g["instructions_per_step"] is not None:
        v = g["instructions_per_step"]
        flops = (g.get("operations_per_step") or {}).get("flops")
        out.append(f"- **Gröbner harness step ≤ {t['harness']:,} instructions** (arithmetic-limit target) — "
                   f"{'met' if v <= t['harness'] else 'MISSED'}: {v:,.0f}"
                   + ("" if v <= t["harness"] else f", {v / t['harness']:.2f}× the target")
                   + (f" ({flops:,.0f} flops of it)" if flops else ""))
    if "fmu_ratio" in t and g.get("fmu_instructions_per_step"):
        v = g["fmu_instructions_per_step"] / g["instructions_per_step"]
        out.append(f"- **FMU doStep reading all outputs ≤ {t['fmu_ratio']}× the harness step** (FMU overhead target) — "
                   f"{'met' if v <= t['fmu_ratio'] else 'MISSED'}: {g['fmu_instructions_per_step']:,.0f} "
                   f"= {v:.3f}×")
    ratio = g["max_step_us"] / g["median_step_us"]
    out.append(f"- **max step ≤ 3× median** (Gröbner) — {'met' if ratio <= 3 else 'MISSED'}: max "
               f"{g['max_step_us']:.1f} µs / median {g['median_step_us']:.2f} µs = {ratio:.1f}× "
               f"(p99 {g['p99_step_us']:.2f} µs = {g['p99_step_us'] / g['median_step_us']:.1f}× the median; "
               f"thread-CPU clock: max {g['max_step_cpu_us']:.1f} µs)")
    return "\n".join(out)


def peer_section(mj, res):
    """MuJoCo rows (scripts/bench_mujoco.py, measured separately)."""
    g = res["rows"][0]
    when = ("measured in the same `bench_report.py --mujoco-dir` run, right after the fmigen rows"
            if mj.get("same_run_as_fmigen") else "measured in a separate run")
    lines = [f"### Peer: MuJoCo (scripts/bench_mujoco.py, {when})", "",
             "| model | ms CPU / simulated s | (min) | instructions / step | vs Gröbner (instructions) | "
             "median step µs | max step µs | peak violation (m) | final yaw ψ (fmigen Gröbner: "
             f"{g['final_q']['psi']:.6f}) |", "|" + "---|" * 9]
    for r in mj["rows"]:
        ir = r["instructions_per_step"]
        lines.append(f"| {r['kinematics']} | {r['ms_per_simulated_s']:.2f} | {r['ms_per_simulated_s_min']:.2f} | "
                     + ("–" if ir is None else f"{ir:,.0f}") + " | "
                     + ("–" if ir is None else f"{ir / g['instructions_per_step']:.2f}×") + " | "
                     f"{r['median_step_us']:.2f} | {r['max_step_us']:.1f} | "
                     f"{r['peak_constraint_violation']:.1e} | {r['final_psi']:.6f} |")
    return lines + ["", "Same 3 s, h = 1 ms, forces and masses; MuJoCo's prebuilt C library (pip wheel) "
                    "driven from a C loop (`scripts/bench_mujoco.c`, -O2). Not the same problem: MuJoCo's "
                    "constraints are soft (solref/solimp) and its `Euler` integrator is semi-implicit, "
                    "with its general constraint solver (default: Newton) in every step. Its violation is "
                    "the `connect` residual (m); the final yaw agrees with fmigen's to ~10⁻³, the size "
                    "of the Euler discretization error.", ""]


def chart(results, path, peers=None):
    """Bars per formulation; ``peers`` ({mechanism: rows}) adds grey peer bars
    (MuJoCo) to that mechanism's charts."""
    peers = peers or {}
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 4.2 * len(results)), squeeze=False)
    for ax_row, res in zip(axes, results):
        rows = res["rows"] + peers.get(res["mechanism"], [])
        labels = [label(r) if "tolerance" in r else r["kinematics"].replace(" soft constraints", "")
                  for r in rows]
        colors = [{"groebner": "tab:green", "newton-loop": "tab:orange", "newton": "tab:red",
                   "spring": "tab:brown", "baumgarte": "tab:purple", "penalty": "tab:purple"}.get(
            r["kinematics"], "tab:gray") for r in rows]
        ax_row[0].bar(labels, [r["ms_per_simulated_s"] for r in rows], color=colors)
        ax_row[0].set_ylabel("ms CPU / simulated s")
        ax_row[0].set_title(f"{res['mechanism']}: CPU time (median of {res['repeats']})")
        ax_row[1].bar(labels, [r["instructions_per_step"] or 0 for r in rows], color=colors)
        ax_row[1].set_ylabel("instructions / step (callgrind)")
        ax_row[1].set_title(f"{res['mechanism']}: instructions per Euler step")
        for ax in ax_row:
            ax.tick_params(axis="x", labelsize=8, labelrotation=35)
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
            ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


NOTES = """\
## What the numbers mean, and why targets are missed

- **Instructions per step are the number to compare.** This machine is a
  shared 2-vCPU virtual machine on which other test suites ran at the same
  time; the CPU time of one and the same binary moves by up to 2× between
  runs (one-off: the Stewart Gröbner harness measured 1.1 to 2.8 ms/s in back-to-back
  invocations on the otherwise idle machine; compare its median and min
  columns). The repeats are interleaved round-robin over the
  formulations so a slow phase hits all of them, but the ms/s column still
  carries that noise — a CPU-time "MISSED" between rows within ~10 % of each
  other is noise, not a measurement. callgrind's counts are exact and repeat
  to the instruction.
- **The counts are of the model's AVX copy**, which is what an FMU built here
  runs on this processor (`fmigen/runtime/fmigen_model_avx.c`: model.c and
  the LU, atan2 and root kernels compiled again with `-mavx
  -fno-tree-vectorize -funroll-loops`; the binary takes it where the
  processor has AVX). Its results are bit for bit the SSE2 copy's
  (tests/test_avx_variant.py). The SSE2 copy, which every x86-64 processor
  runs, measured at 11327d1 (the same code without the AVX copy): Stewart
  10,377 instructions per harness step and 12,528 per doStep, five-link
  11,168 and 12,975 (one-off). The difference is mostly register copies:
  SSE2's arithmetic overwrites one operand, so gcc copies a register before
  most operations (1,308 `movapd` per Stewart `prepare`); AVX's
  three-operand forms need none. gcc's vectorizer is off for that copy:
  packing scalar code into vectors cost more instructions than it saved
  (five-link 9,184 with it, one-off), and the unrolled loops (the Newton
  blocks' and the LU's) save another ~360 on the five-link.
- **Stewart, Gröbner vs Newton per leg.** With a warm start from the previous
  step (1 ms earlier) and a step tolerance of 10⁻³, Newton per leg converges
  in one iteration: one 3×3 Jacobian (with its sines and cosines) and LU per
  leg. The triangular sequence costs two square roots and a few divisions per
  leg, and its polynomial variables *are* the sines and cosines of the leg
  angles, which it hands to the embedding (no atan2, no sin/cos); a Newton leg
  starts from sin/cos of its predicted angles (`fmigen_sincos`) and hands the pairs it
  turned with its step (`fmigen_rotate`) to the embedding. Newton per leg takes
  {s_nl3:.2f}× Gröbner's instructions (paper 000: 1.29× the time, MS compiler,
  13.3 vs 10.3 ms/s), at ~10⁸× less accuracy (peak max|Φ| {s_nl3_peak:.1e} vs
  {s_g_peak:.1e}). At 10⁻⁶ (peak {s_nl6_peak:.1e}) it takes {s_nl6_its:.2f} iterations
  per leg solve (10⁻³: {s_nl3_its:.2f}), not the paper's second iteration: the
  Newton start is not the previous step's solution but its prediction
  q_d + v_d·h, whose first Newton step is already below 10⁻⁶ (largest
  2.4·10⁻⁷ over the run, one-off), so both tolerances stop after it and the
  two rows cost the same. `-DFMIGEN_NEWTON_TOL` does reach the compile (at
  10⁻¹² the same build takes ~2 iterations; tests/test_bench.py).
- **The kinematic part alone** ("of which kinematics": `fmigen_kinematics`
  inclusive of its libm calls, which now includes handing sin/cos to the
  embedding): for the Stewart platform Newton per leg needs {k_nl3:.1f}× (10⁻³) and
  {k_nl6:.1f}× (10⁻⁶) Gröbner's instructions, the single Newton {k_n3:.0f}× and {k_n6:.0f}×; paper
  000 (MS, kinematic simulation) had 2.1×, 3.4×, 14× and 27×. Whole steps
  differ less because the embedding, the same generated code for all
  embedded formulations, is most of the step.
- **Baumgarte, penalty and virtual springs** (paper 000's parameters: α = 1,
  β = 18; ρ = 10³, ζ = 1, ω = 18, one iteration; springs k = 5·10⁴, b = 60,
  see below) integrate all n coordinates of the augmented system — the code
  of the FMUs `fmigen build --kinematics baumgarte|penalty|spring` builds.
  Their accelerations are generated like the embedding
  (`codegen_augmented.augmented_code`: one CSE over Φ, Φ_q, Φ_t, γ, M, F, then
  LDLᵀ of M — of M + ρΦ_qᵀΦ_q for the penalty — over its structural non-zeros,
  block-diagonal for both mechanisms, and of Φ_q M⁻¹ Φ_qᵀ for Baumgarte), so
  every row of the table is generated alike; with the runtime's dense LU,
  before that, they cost 224,528 (Baumgarte), 112,531 (penalty) and 71,396
  (spring) instructions per Stewart step (one-off, an earlier build). Their peak violations (paper: 9.5·10⁻⁶ and
  1.3·10⁻⁵) are 10⁹–10¹¹× Gröbner's. Generated alike, the comparison shifts
  from paper 000's: the virtual springs are the cheapest step of all
  (M q̈ = F − Φ_qᵀ(kΦ + bΦ̇) needs no constraint solve, only the
  block-diagonal M — paper 003's point), at a violation of {s_sp_peak:.1e} (five-link
  {f_sp_peak:.1e}) and only
  inside the stability window below; and on the five-link suspension
  Baumgarte and the penalty method are also cheaper per step than the
  Gröbner build, whose 5 × 5 pose block is a Newton iteration to round-off —
  paper 000 (Table 3) had them slower, solving dense systems. Gröbner's claim
  is exactness at a price competitive with formulations that let the
  constraints drift, and the fastest step at equal accuracy: the Newton rows
  that come closest ({s_nl6_peak:.1e}, still 10³× worse) cost {s_nl6:.1f}–{s_n6:.1f}× as much. Their final state differs
  from Gröbner's by ~10⁻³ — the Euler error of a different discretization
  (all 24 coordinates instead of the 6 embedded ODEs), the same size as the
  embedded Euler run's error against IDA.
- **Virtual springs (paper 003)**: M q̈ = F − Φ_qᵀ(kΦ + bΦ̇), i.e. the
  potential ½k|Φ|² and the dissipation ½b|Φ̇|² on the loop-closure residual.
  Where Φ is a cut joint's position closure (the four-bar's loop_x, loop_y
  are exactly paper 003's Δ = (Δx, Δy) of eq. 13) this is the paper's spring
  and damper at the cut joint, eqs. 12–19 and 40–42; for other constraint
  forms it is the same construction on whatever Φ measures. With explicit
  Euler at step h a spring mode of effective mass m is stable only for
  h·k < b < 2m/h + h·k/2 (Jury's test on m s² + b s + k); the Stewart
  platform's smallest cut-joint mass is 0.023 kg, so k = 5·10⁴ (paper 003's
  platform value) needs 50 < b < 71 at h = 1 ms: b = 60 (the paper's b = 50
  sits exactly on the bound: an undamped spring mode). Stiffer springs need
  RK4 or a smaller step (`--spring-k/--spring-b`). The error is O(1/k):
  on the four-bar (RK4, 1 ms, 2 s against IDA) k = 4·10⁵ → 8·10⁵ halves
  both the coordinate error (6.6·10⁻³ → 3.1·10⁻³ rad) and the drift
  (1.2·10⁻³ → 5.6·10⁻⁴ m); the default k = 5·10⁴ gives 0.23 rad.
  Paper 003's number: at k = 10⁶, t = 0.1 s, its cut-joint gap
  e = |Δ| is "around 10^−5.5" (Fig. 6); ours (same four-bar, no damper, RK4
  at h = 0.1 ms) is 1.6·10⁻⁵ ≈ 10^−4.8 and scales exactly as 1/k — the
  quasi-static gap λ/k of a ~16 N joint force; the paper's figure is not
  precise enough to say more than "same order, within 5×".
- **Single Newton over all 18 dependent coordinates** pays for the dense 18×18
  LU of the whole kinematic Jacobian in every iteration: the slowest row, as in
  the paper.
- **Five-link, dynamic run.** The "groebner" build of the five-link
  suspension is the paper's block-triangular hybrid: the 5 × 5 pose block
  (x, y, φ, θ, ψ given z) does not triangularize and is solved by Newton to
  round-off (1e-14·(1+|q|) on the step), then each link's (α_k, β_k) comes
  from its triangular sequence. The newton-loop row at 10⁻³ stops that same
  pose block after one iteration with a 10⁻³ test (peak max|Φ| {f_nl3_peak:.1e} vs
  {f_g_peak:.1e}); it still needs {f_nl3:.2f}× Gröbner's instructions, because Gröbner's
  link sequences hand the ten link angles' sin/cos to the embedding. (Before
  the generated embedding, newton-loop at 10⁻³ was 4 % *cheaper* than
  Gröbner.)
- **Five-link, kinematic run** (paper 000 Table 3's "kinematic" rows: z driven
  through 0.08 sin(2πt/3) m, every step solving q_d and v_d, no dynamics):
  Gröbner {kr_g:,.0f} instructions per step, Newton per loop at 10⁻³ {kr_nl3:,.0f}
  ({kr_nl3r:.2f}×) and at 10⁻⁶ {kr_nl6:,.0f} ({kr_nl6r:.2f}×), the single Newton {kr_n3r:.1f}× and {kr_n6r:.1f}×. The
  pose block's Newton iteration, the same in the Gröbner and newton-loop
  builds, is most of it; the kinematic run computes every angle by atan2 for
  the state, so the sin/cos hand-over does not apply. Checked against an
  independent least-squares solve of Φ = 0, Φ_q v = −Φ_t at the last driven
  state: 5.6·10⁻¹⁶ (tests/test_bench.py).
- **1 ms per simulated second (Stewart) is still missed, by the factor in the
  verdict.** A Gröbner step is now {s_g:,.0f} instructions (37,179 before the
  generated embedding, see below): the kinematics {s_gk:,.0f}; the model
  expressions Φ_q, γ, M and F after one joint CSE (one-off operation counts
  of the generated right-hand side, `codegen_embedding.statement_operations`),
  1,314 operations (γ and F are ~2,100 operations each before CSE, expanded
  polynomials in the platform's Euler angles and rates); the unrolled linear
  algebra, 2,035 operations (X = Φ_d⁻¹Φ_i, M·B and Bᵀ M B would be 1,404 of
  them; summed leg by leg they are 886). In this run's least disturbed repeat
  this machine retired {ipn:.1f} instructions per ns in this code ({h_ipn:.1f} for the
  host build below), so 1 µs per step needs ~{need:.1f} k instructions. Rebuilt for the
  host (`fmigen bench --opt="-O3 -march=native"`: FMA, AVX2 — what a HIL
  target compiling the source FMU would use) the step is {h_ir:,.0f} instructions
  and measured {h_ms:.2f} ms/s (median; min {h_min:.2f}) {h_when}. Getting below needs γ and F written in body
  quantities shared by the six legs (angular velocity, R̈ of the platform)
  instead of expanded Euler-angle polynomials: a model-level change, not done.
- **max step ≤ 3× median is missed on this machine for every formulation**,
  for a reason outside the code: the largest step of a 3000-step run is
  {max_lo:.0f}–{max_hi:.0f} µs whatever the formulation, also on the thread-CPU clock,
  while the 99th percentile stays within {p99_lo:.1f}–{p99_hi:.1f}× the median. The harness now runs as a
  HIL rig would (pinned to one CPU, SCHED_FIFO, mlockall; `realtime` in the
  JSON says it got all three here), and that did not move the maximum (one-off:
  in seven repeats the largest step fell on steps 253, 1095, 1332, 1368, 1461,
  1950 and 2668) — one spike per ~5 ms run at a random place, i.e. an
  interrupt or the hypervisor taking the vCPU, not the code.
- **An FMU stepped at 1 ms communication intervals costs more than the
  harness step** ("FMU doStep at h": `run_fmu_steps`, 3000 ×
  `fmigen_core_step(c, 1 ms)` each followed by what the first GetReal
  computes; Stewart Gröbner {s_fmu:,.0f} instructions against the harness's
  {s_g:,.0f}). Each `doStep` commits the state at its end: the kinematics
  and the velocity solve, so that a singular end state fails that step, not
  a later one. The next step's first stage takes its kinematics from that
  commit (`FmigenCore.solved`, a memo keyed by t, q_i and p; {s_fmu_k:,.0f}
  instructions of kinematics per FMU step against {s_gk:,.0f} in the
  harness: one solve per step, where there used to be two, 19,699
  instructions per step before). The angles nobody reads bare (atan2),
  Φ for `constraint_residual` and the outputs are computed when the
  importer first reads a coordinate, the residual or an output after the
  step, so an importer that reads none of them that step does not pay for
  them. The Gröbner
  build of the Stewart platform has no data-dependent work (no iteration; the
  only branch is the degree > 2 root fallback, which the Stewart platform does
  not have), so its per-step work is constant; an isolated core on bare metal
  is where the 3× target can be checked.

## The Newton formulations as FMUs

`fmigen build stewart --kinematics newton --newton-tol 1e-9 --solver euler`
builds a regular FMU with the single-Newton kinematics. Run in fmpy for the
same 3 s (communication step 1 ms), its final state agrees with the harness's
Gröbner run to 8.2·10⁻¹⁵ (psi, x, alpha1, s3) and its `constraint_residual`
stays ≤ 8.9·10⁻¹⁶ — one-off, checked by hand with the runtime before the
generated embedding, not a test (a Stewart FMU build takes ~20 s).

`fmigen build MECH --kinematics baumgarte|penalty|spring` builds the augmented
formulations as FMUs (FMI 2/3, CS/ME) with the runtime code of the benchmark
rows: continuous states q and v of all n coordinates, the start assembled by
the Gröbner kinematics as for the embedded FMU, then integrated without any
projection (`constraint_residual` shows the drift); the parameters are baked in
from `--baumgarte-alpha/-beta`, `--penalty-rho/-omega/-zeta`,
`--spring-k/-b` and declared as fixed parameters (`spring_k`, ...).
tests/test_formulations.py runs them on the four-bar against IDA (RK4,
1 ms, 2 s): Baumgarte 6.2·10⁻⁸ rad (drift 3.7·10⁻⁹ m), penalty 1.2·10⁻²
(halved by doubling ρ), springs as above.

## Optimisations done for this benchmark

**Toward the arithmetic limit** (the flops column). *The unit
circle*: the generated embedding reduces γ, M and F modulo s² + c² − 1 of
every angle's (sin, cos) pair and collects them by the velocities before
its joint CSE, per quantity where that is cheaper
(`codegen_embedding.circle_where_cheaper`; the five-link keeps its factored
γ): Stewart 12,472 instructions per harness step before it (5,179 flops),
{s_g:,.0f} ({s_g_flops:,.0f} flops) now, with the changes below; five-link
16,981 before, {f_g:,.0f} now; final states within 6·10⁻¹⁶ of before. *The landing gear's root*: `fmigen_poly_root` now also
stops Newton when p(z) is within the rounding error of its own evaluation;
the gear's degree-6 step (coefficients ~10⁶¹) oscillated at a few 10⁻¹⁵ and
every solve fell through to 500 Aberth iterations: 288,653 → 8,749
instructions per step. *The landing gear's Newton*: that lex sequence's
result still misses the verification in every solve (residuals of the
block's polynomials up to 2·10⁻⁴ of their terms, one-off: the conditioning
of that Gröbner basis, its p_BC¹² coefficients), so every solve ended in the
Newton polish after the sequence. The workspace sweep now finds that its
sequences cover no swept configuration, and a step continuing from the last
one tries Newton from the prediction first; the sequence still finds the
branch at the first assembly and where Newton fails. The kinematics' Newton
iteration (every formulation's) carries each angle's (sin, cos) pair and
turns it with the step (`fmigen_rotate`: the Taylor series of sin d and
cos d for |d| ≤ 1/32), in from the prediction or the sequence and out to
the block's variables, instead of libm's sin and cos in every iteration and
after it; it stopped one iteration earlier when the last two steps showed
quadratic convergence that put the next one below round-off (a rule the
chord steps below replaced); its start angle is `fmigen_atan2`, not libm's.
Landing gear, Gröbner build: 6,856 → 4,053 instructions per step, peak
violation unchanged (one-off steps: 6,414 with Newton first alone, 5,720
with the carried pairs inside the iteration, 5,069 with the quadratic stop,
4,740 with `fmigen_atan2` at the start); {lg_g:,.0f} now. Newton per loop at 10⁻⁶ takes {lg_nl6:.2f}× those instructions,
stopping 10⁻⁶ away instead of at round-off. A Newton block (the
five-link's pose block, every block of the newton formulations) starts its
pairs from libm's sin and cos of q inside the iteration and hands them back. *Chord steps*: near
the solution an exact block's Newton keeps the LU factors of its last
Jacobian and takes the next steps with them, evaluating the residual only
(simplified Newton; `codegen_newton.CHORD_STOP`): after a fresh step of at most
10⁻⁴ of the scale, for as long as each step contracts by 1000 or more. It
stops at a step at round-off, or after two chord steps in a row whose
measured contraction puts what is left 1000 times below that bound. A first
version also stopped after one chord step, estimating the contraction from
the fresh step before it (landing gear 3,810, one-off); a review showed
that estimate measures the curvature along one direction only (on
Φ = (x + 1000·x·y, y + 10⁻³·x²) it stopped at 67 times the bound), so it
was dropped. Five-link 13,649 → {f_g:,.0f} instructions per harness step
(one LU factorization per solve instead of two); the landing gear 4,053 →
{lg_g:,.0f} ({lg_its:.2f} iterations and {lg_lu:.2f} LU factorizations per
solve, from 2.00 and 2.00: there a Jacobian costs about what the two chord
steps do); peaks unchanged (2.2·10⁻¹⁶, 1.8·10⁻¹⁵), the gear's stroke sweep
in 0.5 mm steps still ends at |Φ| ≤ 1.7·10⁻¹³. Keeping the factors from one
solve to the next was measured too and dropped: five-link 12,892 against
12,332 with a fresh start, one-off (the old factors contract too slowly and every
solve refactored anyway). The newton and newton-loop formulations keep a
fresh Jacobian every step: they stand for textbook Newton. *γ by
forward differentiation* (`codegen_embedding.gamma_by_jets`): Φ through one
CSE, and the first and second time derivative of each temporary and row from
its operands' (product and chain rule), so that the five-link's distance
constraints |d|² − L² give γ = −2(ḋ·ḋ + d·d̈) again instead of the expanded
derivative of Φ_q q̇; chosen where the joint CSE of Φ_q, γ, M and F comes
out cheaper with it (five-link: 2,471 → 2,158 operations by sympy's count;
fourbar_chain 289 → 277, 3,927 → 3,909 instructions per step, one-off; a
4-cell ladder 901 → 859 (its section below, re-measured at da94328 with
the later changes too: 7,055 instructions per step at adac807, 6,844 now);
the Stewart
platform keeps its unit-circle γ, 1,265 against 1,416, although its γ alone
is cheaper by forward differentiation — chosen by that count, its step was
207 instructions slower, one-off). Five-link 12,373 → {f_g:,.0f}
instructions per harness step; tested against the symbolic γ on four
mechanisms (one with Φ depending on t) and through the generated embedding
against numpy. *Angles from their sin/cos*: the runtime's own atan2
(`fmigen_atan2`, within one ulp of glibc's at half its instructions; since
with a table of atan(i/64), whose series stops at t⁹ instead of t¹⁹) for the
angles completed from the solved sin/cos, read from an FMU or bare by the
embedding: Stewart FMU doStep 14,822 → 13,327 (eighths) → 13,211 (64ths; one-off).
*Angles only a fallback reads*: a later block's own equations read earlier
blocks' angles bare only in its Newton (the fallback from the prediction,
the polish); such an angle is now deferred like the others and completed
from its pair where that Newton runs (`codegen_kinematics.kinematics_walk`,
`newton_reads`): the five-link's five β_k took an atan2 each in every solve,
11,782 → 11,439 instructions per harness step (one-off). *Constants where
they are used* (`codegen.sink_definitions`): every `const double` of the
generated functions moves down to just before its first use, never past a
statement that mentions something else it reads. The CSE lists all its
temporaries first and gcc -O2 keeps that order (no scheduling before
register allocation on x86-64), so hundreds of values lived across the
whole function and spilled to the stack (Stewart's `prepare`: 1,368 stack
loads and 689 stack stores per step, one-off). Stewart 10,553 → 10,364,
five-link 11,439 → 11,167 (one-off, each on its parent commit), bit for bit
the same trajectories (tests/test_sink_definitions.py runs three mechanisms
with and without it in the harness).
*Bᵀ M B by blocks*: where Φ_d is block-diagonal with blocks up to 3×3 and M
couples no two blocks (nor a block to an independent coordinate), as the
Stewart platform's legs, Bᵀ M B = M_ii + Σ_b Φ_i,bᵀ (A_bᵀ M_b A_b) Φ_i,b with
A_b the block's adjugate inverse, so each leg adds its 3 × 3 matrix instead
of every entry being a dot over all 18 dependent coordinates; and a factor
that is exactly ±1 (the platform's position in each leg's rows of Φ_i) is
left out of its products, bit for bit the same value. Stewart harness step
11,432 → 10,854 → 10,755 instructions (one-off; 10,762 with the Newton
changes above, which only touch its unused fallback). *Shared
abstractions*: the blocks' abstracted knowns that read no dependent
coordinate are computed once, before the first block, with one CSE over all
of them (the legs' platform points R·b_k, K_1..K_18: 288 → 135 operations;
gcc could not share them across the blocks' stores to `trig`): 10,762 →
10,656 (one-off); {s_g:,.0f} since the review's reordering of the blockwise
right-hand side. (The "before" numbers one-off, measured on each change's
parent commit on 2026-11-26.) What is left is mostly arithmetic: the
Stewart step executes {s_g_flops:,.0f} floating-point operations in
{s_g:,.0f} instructions; of its `fmigen_embedded_prepare` about half is
linear algebra and the rest the model quantities. By the operators in its
C (one-off, before the structural zeros below): γ ~590, F ~330, the
leg-by-leg Bᵀ M B with its LDLᵀ ~1,020, v_d with the Jacobian blocks and
their inverses ~560. Body-frame quantities alone would not halve that:
γ written as ω × (ω × R b_k) plus the velocity-product rate of ω, both
formed once, comes to ~460 operations for the six legs by a hand count (an
estimate, not generated code) — the joint CSE already shares most of what
the expanded Euler-angle polynomials repeat. What would is the legs'
sameness. *Lanes* (`fmigen/generate/codegen_lanes.py`): Gröbner blocks whose
sequences have the same monomials step by step (legs 1–4; legs 5 and 6,
whose base points on x = 0 drop the base's x terms, are a second class)
are solved four at a time in the lanes of vector types: the block's
primary sequence, its roots' continuity and its verification, the
coefficients and predictions with the scalar code's operations in its
order (as `fmigen_atan2_4` does for the angles), so the same bits, tested
against the build without vector types (the verification's sums are in
another order: at its threshold a lane may accept a root the scalar code
would polish, none in 20,000 random poses); a lane that fails any check
leaves its leg to the block's scalar code. The kinematics of a harness
step 2,396 → 1,301 instructions, the step 7,805 → 6,710 (one-off,
`fmigen bench`, on the parent commit and this one). The residual's rows
of the same blocks are evaluated in lanes too, term by term
(`fmigen_phi_trig` 384 → 287 instructions a doStep; the peak residual's
last bits moved, 1.33e-15 → 1.55e-15). What was left per leg was in `prepare`: by a one-off callgrind line profile
at 8664181, 1,630 instructions that read one leg's coordinates only (its
Jacobian block and inverse, mass, forces) and 1,310 one leg's and the
platform's (Φ_i, v_d, γ, the leg's share of Bᵀ M B). *The embedding in
lanes* (`fmigen/generate/codegen_slp.py`): the generator tags what it emits per
diagonal block of Φ_d (the k-th value of a kind in the block's code), and a
pass over the generated C packs the tagged statements of four blocks of one
size into one vector statement where their expressions have one shape (their
CSE temporaries with them; the platform's values and the geometry's
constants become vectors of the four values). The legs' determinant checks
become lane masks, the sums over the legs (Bᵀ M B, Bᵀ res) vector products
summed lane by lane and then across the lanes, and `prepare`'s hand-over to
`finish` is laid out so that each packed group is one vector store and one
load. A compiler without vector types gets the same statements lane by lane,
with the same bits; against the scalar code before, sums and products are
evaluated in the group's order (q̈ within 9.7e-16 relative at random
states, the 3 s run's final state within 5.2e-18). Stewart harness step 6,710
→ 5,570 (the groups) → 5,405 (signs folded into constants; a negated product
held in a CSE temporary matched to the product) → 5,093 (the sums over the
legs in lanes) → 4,999 (the two chunks' sums added before the sum across the
lanes) → 4,867 (`work` laid out for vectors, `finish` in lanes) → 4,784
(a γ row whose terms without the leg's own values differ from leg to leg:
those terms summed per leg, the rest in lanes; one row of three packs so);
one-off, `fmigen bench`. The flops per step rose (4,210 →
{s_g_flops:,.0f}): a packed operation counts four, and legs 5–6 fill four
lanes with two. What is left scalar per leg is most of γ (~450
instructions a step) and the platform's geometry temporaries (~440): the
joint CSE shares the products of the platform's rotation with the
attachment points differently leg by leg, so their shapes differ. With the
geometry as per-leg coefficients of one set of platform monomials, as the
kinematics' lanes have it, they would pack too.

**The FMU step toward the harness**. *First-same-as-last*: the
generated right-hand side is cut into `fmigen_embedded_prepare` (v_d, Φ_d⁻¹Φ_i,
a_c, the factored Bᵀ M B, everything that does not read the inputs) and
`fmigen_embedded_finish` (the input terms of the forces and the LDLᵀ solve);
a doStep's commit runs prepare instead of the velocity solve it needs v_d
from anyway and keeps it with the kinematics memo (keyed by value: q_i, v_i,
p, and t where the embedding depends on it), so the next step's first stage
only runs finish — also when the importer changes the inputs between steps.
*Observing from what is at hand*: the residual and the outputs use the
kinematics' sin/cos (no sin/cos of each angle's atan2), each is computed only
when read, and reading an independent coordinate computes no atan2. *Integer
powers* up to 64 are repeated squaring (`fmigen_powi`), not `pow()` (the
landing gear's `p_BC¹²`). Stewart, Gröbner, FMU doStep reading every
coordinate and the residual: 19,429 → {s_fmu:,.0f} instructions per step
(harness 12,326 → {s_g:,.0f}; the split's hand-over costs the harness ~140;
the "before" numbers one-off, measured on the parent commit on 2026-11-26).
*The commit's bookkeeping*: the memo keeps its sin/cos hand-over and
solution vector in two halves (`FmigenSolved.side`); a commit solves into
the other half and flips it on success, so the solve needs no zeroed local
copied into the memo afterwards, and a commit that fails leaves the memo,
and what a pending observation of the last good state reads, as it was. The
memo's copies of q_i and v_i went (its key is compared through the
partition's indices), and the finiteness tests OR the entries' exponent
bits instead of a branch per entry: Stewart doStep 12,950 → 12,692 with a
sum of x − x as that test (one-off), which a review found folded away by an
importer's -fassociative-math; the bit test costs 26 instructions more.
*Four angles at a time*: `fmigen_kinematic_angles` completes the deferred
angles with `fmigen_atan2_4` (`runtime/fmigen_runtime.h`, vector types of
GCC and clang, inlined with the indices constant), the scalar
`fmigen_atan2`'s IEEE operations lane by lane, so the same bits
(tests/test_runtime_lu.py, 400,000 groups with special values in some
lanes, for SSE2, AVX, no vector types and x87): Stewart's twelve leg
angles 711 → 311 instructions a step in the AVX copy (323 in the final
build below: gcc placed the fallback differently). *The step's
bookkeeping*: the residual's max two at a time (SSE2 `maxpd`, 81 → 32), a
communication step of one internal step without the division, floor and
remainder, the state's gather and scatter inline, the memo's key compared
without a branch per entry, v_i gathered only when the embedding half
misses, and no finiteness test of the integrated state before the commit
tests the same values. *No errno*: the binary is compiled with
`-fno-math-errno` (nothing reads errno), so a square root is the
instruction alone, without the compare, the jump to libm's `sqrt` for a
negative argument and the spills around that call (the residual
normalizes 15 sin/cos pairs); the same bits. Stewart doStep 9,936 →
{s_fmu:,.0f} (1.24× → {s_ratio:.3f}× the harness step; one-off, in order: the angles
9,593, the bookkeeping 9,221, no errno the rest); the harness step, whose
right-hand side shares the v_i, dx and errno changes, 8,040 → {s_g:,.0f}. What is left above
the harness step ({s_fmu:,.0f} − {s_g:,.0f}) is mostly what reading every output
needs: the angles (343 instructions, one-off callgrind profile), Φ at the
unit-circle pairs for `constraint_residual` and its max (268: the rows in
lanes, each row vector's max taken in place by `fmigen_residual_trig`
instead of storing the 18 rows for a max over them, which cost 52 more;
384 before the lanes); the rest (~400) makes the state consistent and
restorable (copies of q, v and the solve, the state's gather and scatter,
the memo's key, the finiteness tests). At this harness step the target
allows 15 % of {s_g:,.0f}, {s_allow:,.0f} instructions, above it
({s_over:,.0f} now), and the observation alone is 611: the ratio cannot be
met by cutting the bookkeeping. The target was met by 8 instructions
before the lanes (8,968 = 1.149× 7,805); the kinematics' and the
embedding's lanes and the solve's own sin/cos made the harness 3,174
instructions cheaper (7,805 → {s_g:,.0f}) and the observation 149 (the
residual), so the ratio rose while every doStep got cheaper: the
observation, not the ratio, is what an importer's step costs beyond the
harness.
*The solve's first sin/cos*: every kinematics solve starts from sin and
cos of the independent angles (the Stewart platform's three Euler angles),
three calls of glibc's `sincos`, ~300 instructions of a 4,784-instruction
harness step. `fmigen_sincos` (`runtime/fmigen_numeric.h`) takes fdlibm's
constants, reduction (by the nearest multiple of π/2 in up to three rounds)
and two kernel polynomials, within 0.83 ulp of the exact values over a
million points (glibc's: 0.52; 0.856 the worst a review's adversarial
search found), and `fmigen_sincos_4` does four angles in
vector lanes with the scalar code's bits: harness 4,784 → {s_g:,.0f},
doStep 5,797 → {s_fmu:,.0f}. A Newton block's start pairs come from
`fmigen_sincos` too: the five-link's step 8,834 → 8,783 (its kinematics
starts a Newton block from three pairs every step), Stewart newton-loop
12,532 → 12,343;
`fmigen_rotate` keeps libm for a large step (calling `fmigen_sincos`
there cost the landing gear 47 instructions a step). The last-bit
differences from glibc moved paper 000's final state by 9.8e-19
(Stewart, Gröbner; the five-link's and the landing gear's Gröbner rows
are the same to the bit) and at most 4.8e-15 (the Newton rows), the
Gröbner peak residuals not at all (one-off, against the benchmark run
of d89d640).
*Through the FMI API* the importer pays more than that: "FMU doStep at h"
counts the runtime core (`fmigen_core_step` and what the first read
computes), not `fmi2DoStep` and `fmi2GetReal`. `scripts/bench_fmi_api.py`
counts those on a real Stewart FMU (explicit Euler, 1 ms; a C driver loads
its binary with dlopen, 3000 × fmi2DoStep of 1 ms each followed by one
fmi2GetReal; one-off, 2026-11-27, with the residual's max in lanes and
the solve's own sin/cos): 5,081 instructions a step reading nothing,
6,381 reading the 49 coordinates, velocities and `constraint_residual`,
6,531 reading all 62 reals (1.41× the harness step; 6,685 before the
sin/cos, 6,737 with the residual's rows stored, 6,820 at 1af723f, 8,663 =
1.29× at 30c4dec with the kinematics' lanes only, 9,856 = 1.26× at 1311614, 10,745 = 1.34× at
454ee06, 11,999 before that). `fmi2GetReal`
itself took 2,704 instructions for those 62 reads while it looked each
coordinate up in the partition's list of independent ones; a table per
call made that 1,449 (23 a value, two passes over the value references
through the groups' ranges); now two tables made once per instance
(`index_values`: a pointer per value reference, and per partition what
reading it needs) leave an OR pass and a load pass, both unrolled: 770.
*Structural zeros after the circle*: a mass-matrix, γ or force entry that
is zero only once sin² + cos² = 1 is used (each Stewart leg's β–s mass
entry) was a named 0 multiplied in four products a leg (gcc keeps 0·x, NaN
for an infinite x); it is now a structural zero like any other: harness
8,004 → 7,805, doStep 9,178 → 8,979 (flops 4,104 → 4,010), the
five-link unchanged. *The residual at the reported angles*: the residual
scaled every sin/cos pair onto the unit circle, also the platform's three
Euler angles, whose pairs are sin and cos of the coordinate in every
partition (libm's then, `fmigen_sincos` now); those are read as they are now (doStep 8,979 → 8,968;
Stewart's peak |Φ| 1.44e-15 → 1.33e-15, the residual's last bits). Every
row's final state is the same to the bit as before both.

**Generated embedding** (`fmigen/generate/codegen_embedding.py`). The runtime's
generic embedding (block LU of Φ_d and loops over index arrays for Bᵀ M B)
plus every model function re-evaluating sin/cos were ~90 % of a Stewart step.
Codegen now emits `fmigen_embedded_velocities` and the right-hand side
(`fmigen_embedded_prepare` / `_finish`, see below) per model: one joint CSE over Φ_q, Φ_t, γ, M and F; Φ_d's diagonal blocks up to
3×3 inverted by their adjugate (a relative determinant test for
singularity), larger ones by the runtime LU; block forward substitution over
the couplings; Bᵀ M B's upper triangle from M's non-zeros; an unrolled LDLᵀ
for the f × f solve. The kinematics hands sin/cos of every angle to it (the
triangular sequences solve for s = sin ϑ and c = cos ϑ anyway) and skips
atan2 for angles nothing reads bare. Stewart, Gröbner: 37,179 → {s_g:,.0f}
instructions per step; newton-loop (10⁻³) 41,456 → {s_nl3_ir:,.0f}; five-link
Gröbner 34,997 → {f_g:,.0f}. The results agree with the previous runtime to
round-off (all validation tests against IDA unchanged), no longer bit for bit.

**Block-structured runtime** (before the generated embedding):

`fmigen_core_rhs` solved Φ_d (18×18 for the Stewart platform) with a dense LU
and 8 dense triangular solves per step — 53 % of all instructions. Codegen then
emitted the partition's block structure into `model_config.h` (`FMIGEN_BLOCK_*`:
rows, columns and below-diagonal couplings of Φ_d in block-triangular form;
`FMIGEN_M_*`: the structural non-zeros of M); the runtime factored only the
diagonal blocks, solved the velocity system's NI + 1 right-hand sides in one
pass, and multiplied only M's non-zeros (the Python runtime still does, from
`codegen_embedding.structure_tables`). Stewart, Gröbner: 91 k → 41 k → 37 k
instructions per step, with the final state of the 3 s run unchanged to the
last bit for every formulation (same operations in the same order, minus
exact zeros). It helped every formulation alike: all used the same runtime.
"""


def notes(results, host=None):
    """NOTES with the numbers of this run filled in (the prose explains them;
    the numbers are never typed in by hand)."""
    by = {r["mechanism"]: {(row["kinematics"], row["tolerance"]): row for row in r["rows"]} for r in results}
    d = {}
    if "stewart" in by:
        s = by["stewart"]
        g = s["groebner", None]
        ir = lambda k, tol: s[k, tol]["instructions_per_step"] / g["instructions_per_step"]  # noqa: E731
        d.update(s_g=g["instructions_per_step"], s_gk=g["kinematics_instructions_per_step"],
                 s_fmu=g.get("fmu_instructions_per_step") or float("nan"),
                 s_ratio=(g.get("fmu_instructions_per_step") or float("nan")) / g["instructions_per_step"],
                 # what the doStep target allows above the harness step, and what it costs
                 s_allow=(TARGETS["stewart"]["fmu_ratio"] - 1) * g["instructions_per_step"],
                 s_over=(g.get("fmu_instructions_per_step") or float("nan")) - g["instructions_per_step"],
                 s_fmu_k=g.get("fmu_kinematics_instructions_per_step") or float("nan"),
                 s_nl3=ir("newton-loop", 1e-3), s_nl6=ir("newton-loop", 1e-6), s_n6=ir("newton", 1e-6),
                 s_nl3_ir=s["newton-loop", 1e-3]["instructions_per_step"],
                 s_g_flops=(g.get("operations_per_step") or {}).get("flops", float("nan")),
                 s_nl3_peak=s["newton-loop", 1e-3]["peak_constraint_violation"],
                 s_nl6_peak=s["newton-loop", 1e-6]["peak_constraint_violation"],
                 s_nl3_its=s["newton-loop", 1e-3].get("newton_iterations") or float("nan"),
                 s_nl6_its=s["newton-loop", 1e-6].get("newton_iterations") or float("nan"),
                 s_sp_peak=s["spring", None]["peak_constraint_violation"],
                 s_g_peak=g["peak_constraint_violation"],
                 # instructions per ns = instructions per step / ns per step
                 # (ms per simulated s at h = 1 ms is µs per step)
                 ipn=g["instructions_per_step"] / (g["ms_per_simulated_s_min"] * 1e3))
        d["need"] = d["ipn"]
        gk = g["kinematics_instructions_per_step"]
        d.update(k_nl3=s["newton-loop", 1e-3]["kinematics_instructions_per_step"] / gk,
                 k_nl6=s["newton-loop", 1e-6]["kinematics_instructions_per_step"] / gk,
                 k_n3=s["newton", 1e-3]["kinematics_instructions_per_step"] / gk,
                 k_n6=s["newton", 1e-6]["kinematics_instructions_per_step"] / gk)
    if "five_link" in by:
        f = by["five_link"]
        g = f["groebner", None]
        kr = {k: row["kinematic_run"]["instructions_per_step"] for k, row in f.items() if row.get("kinematic_run")}
        d.update(f_g=g["instructions_per_step"],
                 f_nl3=f["newton-loop", 1e-3]["instructions_per_step"] / g["instructions_per_step"],
                 f_nl3_peak=f["newton-loop", 1e-3]["peak_constraint_violation"],
                 f_g_peak=g["peak_constraint_violation"], f_sp_peak=f["spring", None]["peak_constraint_violation"],
                 kr_g=kr["groebner", None], kr_nl3=kr["newton-loop", 1e-3], kr_nl6=kr["newton-loop", 1e-6],
                 kr_nl3r=kr["newton-loop", 1e-3] / kr["groebner", None],
                 kr_nl6r=kr["newton-loop", 1e-6] / kr["groebner", None],
                 kr_n3r=kr["newton", 1e-3] / kr["groebner", None], kr_n6r=kr["newton", 1e-6] / kr["groebner", None])
    lg = by.get("landing_gear_dynamic", {})
    lg_g = lg.get(("groebner", None), {})
    d["lg_g"] = lg_g.get("instructions_per_step") or float("nan")
    d["lg_its"] = lg_g.get("newton_iterations") or float("nan")
    d["lg_lu"] = lg_g.get("newton_factorizations") or float("nan")
    d["lg_nl6"] = (lg.get(("newton-loop", 1e-6), {}).get("instructions_per_step") or float("nan")) / d["lg_g"]
    rows = [row for r in results for row in r["rows"]]
    d.update(max_lo=min(r["max_step_us"] for r in rows), max_hi=max(r["max_step_us"] for r in rows),
             p99_lo=min(r["p99_step_us"] / r["median_step_us"] for r in rows),
             p99_hi=max(r["p99_step_us"] / r["median_step_us"] for r in rows))
    h = (host or {}).get("rows", [{}])[0]
    nan = float("nan")
    # the host build is re-measured only when its callgrind run works (valgrind
    # cannot decode every host's -march=native code): say when it is older
    host_commit = (host or {}).get("commit")
    same = host_commit and host_commit == (results[0].get("commit") if results else None)
    earlier = f"at commit {host_commit}" if host_commit else "in an earlier run"
    d["h_when"] = "in this run" if same else earlier + " (not re-measured in this run)"
    d.update(h_ir=h.get("instructions_per_step") or nan, h_ms=h.get("ms_per_simulated_s", nan),
             h_min=h.get("ms_per_simulated_s_min", nan),
             h_ipn=(h.get("instructions_per_step") or nan) / (h.get("ms_per_simulated_s_min", nan) * 1e3))
    return NOTES.format(**d)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mechanisms", default="stewart,five_link,landing_gear_dynamic")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--mujoco-dir", default=None,
                    help="an installed mujoco package directory: run the MuJoCo peer rows "
                         "(scripts/bench_mujoco.py) in this same run, right after the fmigen rows")
    ap.add_argument("--render-only", action="store_true",
                    help="no new measurement: rewrite the markdown and chart from docs/benchmarks.json "
                         "(e.g. after a new docs/benchmarks_mujoco.json)")
    args = ap.parse_args(argv)
    DOCS.mkdir(exist_ok=True)
    if args.render_only:
        results = json.loads((DOCS / "benchmarks.json").read_text())
    else:
        results = []
        for mech in args.mechanisms.split(","):
            print(f"== {mech}", file=sys.stderr)
            results.append(bench(mech, repeats=args.repeats, **BENCH_ARGS.get(mech, {}),
                                 log=lambda m: print(m, file=sys.stderr, flush=True)))
        # what was measured, and when: a later --render-only must not claim HEAD
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        def stamp(res):
            res["commit"] = commit
            res["measured_utc"] = f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M}"
            return res
        for res in results:
            stamp(res)
        (DOCS / "benchmarks.json").write_text(json.dumps(results, indent=1) + "\n")
        if "stewart" in args.mechanisms.split(","):
            # the Gröbner build rebuilt for this host (FMA, AVX2), for the 1 ms/s discussion
            print("== stewart, Gröbner, -O3 -march=native", file=sys.stderr)
            try:
                host = bench("stewart", kinematics=["groebner"], repeats=args.repeats, opt=HOST_OPT,
                             log=lambda m: print(m, file=sys.stderr, flush=True))
                (DOCS / "benchmarks_host.json").write_text(json.dumps(stamp(host), indent=1) + "\n")
            except ModelError as e:
                # valgrind 3.19 does not decode AVX-512 (vrndscalesd in the
                # runtime's step rounding on this host): the earlier host
                # measurement stays, and the notes say from which commit
                print(f"host build not measured: {str(e).splitlines()[0]} "
                      f"{str(e).splitlines()[2] if len(str(e).splitlines()) > 2 else ''}", file=sys.stderr)
        if args.mujoco_dir:
            print("== MuJoCo peer (scripts/bench_mujoco.py)", file=sys.stderr)
            sys.path.insert(0, str(ROOT / "scripts"))
            import bench_mujoco
            bench_mujoco.main(["--mujoco-dir", args.mujoco_dir, "--repeats", str(args.repeats)])
            mj = json.loads((DOCS / "benchmarks_mujoco.json").read_text())
            mj["same_run_as_fmigen"] = True
            stamp(mj)
            (DOCS / "benchmarks_mujoco.json").write_text(json.dumps(mj, indent=1) + "\n")
    mj_path = DOCS / "benchmarks_mujoco.json"
    mj = json.loads(mj_path.read_text()) if mj_path.exists() else None
    chart(results, DOCS / "benchmarks.png", {"stewart": mj["rows"]} if mj else None)
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    md = ["# Benchmarks: kinematics formulations (paper 000, Tables 1 and 3)", "",
          "Generated by `scripts/bench_report.py` (raw data: `docs/benchmarks.json`; chart: "
          "`docs/benchmarks.png`). Reproduce one mechanism with `fmigen bench stewart [--json]`.", "",
          "Setup: every formulation goes through the same pipeline and code generator — only "
          "`triangularize(kinematics=...)` differs, or for the augmented rows (baumgarte, penalty, "
          "spring) the formulation macros in `model_config.h` — and is compiled with "
          f"`{results[0]['compiler']}` as the FMU's binary is (model.c twice: SSE2 and the AVX copy "
          "`fmigen/runtime/fmigen_model_avx.c`, which runs here) together with the FMU's runtime "
          "(`fmigen/runtime/fmigen_core.c`, `fmigen_augmented.c`) and the native "
          "harness `fmigen/runtime/bench_harness.c` (no FMI layer, no Python in the loop). The "
          "harness runs paper 000's experiment: explicit Euler, h = 1 ms, 3 s, the mechanism's "
          "default forces, exactly the arithmetic of `fmigen_core_step` (tested bit for bit, every "
          "row).", "",
          "- *ms CPU / simulated s*: median over the repeats of CLOCK_PROCESS_CPUTIME_ID around "
          "the whole 3 s loop / 3; *(min)* the least disturbed repeat.",
          "- *instructions / step*: `valgrind --tool=callgrind --toggle-collect=run_steps`, total "
          "Ir of the integration loop / 3000 (deterministic). *FMU doStep at h*: the same for the "
          "co-simulation FMU's path at a 1 ms communication interval (`run_fmu_steps`: "
          "`fmigen_core_step` plus the completion of angles, residual and outputs a GetReal "
          "triggers).",
          "- *median / p99 / max step*: per-step CLOCK_MONOTONIC in separate repeats; *max* is "
          "the median over repeats of each repeat's largest step.",
          "- *flops / step*: the floating-point operations the same callgrind run executed "
          "(`--dump-instr=yes`; every addsd/subsd, mulsd, divsd, sqrtsd of the harness binary — "
          "generated model and runtime, SSE2 or AVX (v-prefixed) — times its executions, packed "
          "ones twice, four times on 256-bit ymm registers) and the libm "
          "calls it made (their insides not counted); *instructions / flop* is the overhead above "
          "the arithmetic itself. *Newton iterations (LU factorizations) / solve*: steps and LU "
          "factorizations per call of a generated Newton block (in a Gröbner build: the fallback, "
          "the polish and a Newton-first block; a chord step reuses a factorization).",
          "- *peak max|Φ|*: the largest constraint violation over every state the integrator "
          "evaluated, with q_d as that formulation's kinematics returned it (augmented rows: as "
          "integrated).",
          "- Newton rows stop when the Newton step is ≤ tol (absolute), as paper 000's 10⁻³ / 10⁻⁶ "
          "rows, warm-started from the previous step's solution extrapolated by its velocity "
          "(q_d + v_d·h; the paper started from the previous solution itself). *newton* = one iteration over all "
          "dependent coordinates (all constraints as one block); *newton-loop* = Newton on each "
          "block (loop) separately.", "",
          f"Machine: {results[0]['cpu']}, {gcc}, {valgrind}; measured at commit "
          f"{results[0].get('commit', '?')}, {results[0].get('measured_utc', '?')} UTC.", ""]
    for res in results:
        md += [f"## {res['mechanism']}", ""]
        if res["stop_time"] != 3.0:   # BENCH_ARGS: why this mechanism's run differs
            md += [f"Run: {res['stop_time']:g} s (not 3 s), the formulations "
                   f"{', '.join(dict.fromkeys(r['kinematics'] for r in res['rows']))} (see "
                   "`BENCH_ARGS` in scripts/bench_report.py: the gear reaches a singular "
                   "configuration at 0.847 s; its massless piston leaves M singular for Baumgarte "
                   "and the springs).", ""]
        md += [table(res), "", "Targets:", "", verdicts(res), ""]
        if res["mechanism"] == "stewart" and mj_path.exists():
            md += peer_section(mj, res)
    host_path = DOCS / "benchmarks_host.json"
    host = json.loads(host_path.read_text()) if host_path.exists() else None
    md += ["![CPU time and instructions per step](benchmarks.png)", "", notes(results, host)]
    # the sections after this script's own are other scripts' and hand-written
    # ones (the full vehicle, bench_ladder.py's growth with the loops,
    # bench_build.py's build time): kept as they are, from the first heading
    # this script does not write
    old = (DOCS / "benchmarks.md").read_text() if (DOCS / "benchmarks.md").exists() else ""
    owned = {line for line in "\n".join(md).splitlines() if line.startswith("## ")}
    others = [m.start() + 1 for m in re.finditer(r"\n## [^\n]*", old)
              if m.group(0)[1:] not in owned]
    if others:
        md += ["", old[others[0]:].rstrip("\n")]
    (DOCS / "benchmarks.md").write_text("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
