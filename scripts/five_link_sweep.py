#!/usr/bin/env python
"""Kinematic sweep of the five-link suspension (paper 000, Fig. 4).

The carrier height z runs over [z_min, z_max]; every other coordinate comes
from the pipeline's numeric assembly (``fmigen.kinematics.branches.assemble``: Newton
on the five distance equations for the carrier pose, then each link's
triangular U-joint sequence), warm-started from the previous point.  Plots the
longitudinal and lateral carrier displacement x, y [mm] and toe, camber and
caster [deg] (defined in ``mechanisms/five_link.py:wheel_angles``) against z
into ``docs/five_link_kinematics.png``.  Progress goes to stderr.

    .venv/bin/python scripts/five_link_sweep.py [--z-min -0.08] [--z-max 0.08]
        [--points 161] [--out docs/five_link_kinematics.png] [--json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fmigen.derive.dae import build_dae  # noqa: E402
from fmigen.derive.partition import choose_partition  # noqa: E402
from fmigen.build.pipeline import load_mechanism  # noqa: E402
from fmigen.kinematics.triangular import triangularize
from fmigen.kinematics.branches import assemble


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def five_link_module():
    """The mechanism module itself (geometry and wheel-angle helpers)."""
    load_mechanism(str(ROOT / "mechanisms" / "five_link.py"))
    return sys.modules["fmigen_mechanism_five_link"]


def compile_kinematics(log=log):
    """(dae, triangularization) of the five-link suspension."""
    t0 = time.perf_counter()
    log("deriving the DAE of five_link ...")
    dae = build_dae(load_mechanism(str(ROOT / "mechanisms" / "five_link.py")))
    part = choose_partition(dae)
    log(f"  {time.perf_counter() - t0:.1f} s; triangularizing {len(part.blocks)} blocks ...")
    tri = triangularize(dae, part)
    log(f"  done after {time.perf_counter() - t0:.1f} s: "
        + ", ".join(f"{{{','.join(dae.names[i] for i in solved_block.block.unknowns)}}}:{solved_block.method}"
                    for solved_block in tri.blocks))
    return dae, tri


def sweep(dae, tri, zs, log=log):
    """Assemble every coordinate at each z (ascending from the one nearest 0
    in both directions, warm-starting each point from its neighbour).

    Returns (Q, residuals): Q is len(zs) × n in model order, residuals the
    max |Φ_j| at each point."""
    zs = np.asarray(zs, dtype=float)
    n = dae.n
    Q = np.full((len(zs), n), np.nan)
    res = np.full(len(zs), np.nan)
    i0 = int(np.argmin(np.abs(zs)))
    start = dict(tri.start)
    for order in (range(i0, len(zs)), range(i0, -1, -1)):
        warm = dict(start)
        for k, i in enumerate(order):
            q = assemble(dae, tri, {"z": float(zs[i])}, warm=warm)
            Q[i] = [q[name] for name in dae.names]
            res[i] = float(np.abs(dae.numeric.Phi(0.0, Q[i])).max())
            warm = q
            if k % 20 == 0:
                log(f"  z = {zs[i]:+.4f} m  x = {q['x'] * 1e3:+.3f} mm  y = {q['y'] * 1e3:+.3f} mm  "
                    f"max|Φ| = {res[i]:.1e}")
    return Q, res


def curves(dae, Q):
    """x, y [mm] and toe, camber, caster [deg] along a sweep."""
    fl = five_link_module()
    col = {name: Q[:, dae.names.index(name)] for name in ("x", "y", "phi", "theta", "psi")}
    ang = np.degrees([fl.wheel_angles(*row) for row in zip(col["phi"], col["theta"], col["psi"])])
    return {"x_mm": col["x"] * 1e3, "y_mm": col["y"] * 1e3,
            "toe_deg": ang[:, 0], "camber_deg": ang[:, 1], "caster_deg": ang[:, 2]}


def plot(zs, c, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    zmm = np.asarray(zs) * 1e3
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.5), sharey=True)
    axes[0].plot(c["x_mm"], zmm, label="x (longitudinal, + = forward)")
    axes[0].plot(c["y_mm"], zmm, label="y (lateral, + = outboard)")
    axes[0].set_xlabel("carrier displacement [mm]")
    axes[0].set_ylabel("vertical displacement z [mm]")
    axes[1].plot(c["camber_deg"], zmm, "C2", label="camber γ (+ = top outboard)")
    axes[1].plot(c["caster_deg"], zmm, "C3", label="caster τ (+ = top rearward)")
    axes[1].set_xlabel("angle [deg]")
    axes[2].plot(c["toe_deg"], zmm, "C4", label="toe δ (+ = toe-in)")
    axes[2].set_xlabel("toe [deg] (note the scale)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.axhline(0, color="k", lw=0.5)
        ax.axvline(0, color="k", lw=0.5)
        ax.legend(fontsize=8)
    fig.suptitle("Five-link rear suspension (left wheel): kinematics vs vertical carrier displacement")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--z-min", type=float, default=-0.08)
    ap.add_argument("--z-max", type=float, default=0.08)
    ap.add_argument("--points", type=int, default=161)
    ap.add_argument("--out", default=str(ROOT / "docs" / "five_link_kinematics.png"))
    ap.add_argument("--json", action="store_true", help="print the curve ranges as JSON on stdout")
    a = ap.parse_args(argv)
    dae, tri = compile_kinematics()
    zs = np.linspace(a.z_min, a.z_max, a.points)
    t0 = time.perf_counter()
    log(f"sweeping z over [{a.z_min:g}, {a.z_max:g}] m, {a.points} points ...")
    Q, res = sweep(dae, tri, zs)
    log(f"  {time.perf_counter() - t0:.1f} s; max constraint residual {res.max():.2e}")
    c = curves(dae, Q)
    plot(zs, c, a.out)
    log(f"wrote {a.out}")
    ranges = {k: [float(v.min()), float(v.max())] for k, v in c.items()}
    ranges["max_constraint_residual"] = float(res.max())
    for k, (lo, hi) in ((k, v) for k, v in ranges.items() if k != "max_constraint_residual"):
        log(f"  {k:11s} {lo:+9.4f} .. {hi:+9.4f}")
    if a.json:
        print(json.dumps(ranges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
