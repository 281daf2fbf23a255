"""The validation report: one self-contained HTML page of a ``validate`` run.

For a reviewer of a tool chain, who wants to look rather than read: every
coordinate of the FMU against each reference, the absolute error over time,
the constraint residual, the energy balance, the settings, the versions of
everything that took part, the commit, and a pass/fail summary.  The plots
are PNGs embedded as data URIs, so the page needs no other file and no
network.
"""

from __future__ import annotations

import base64
import html
import io
import math
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from fmigen.verify.compare import coordinate_error
from fmigen.verify.validate import Report


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _references(report: Report):
    """(name, times, {coordinate: values}) of each reference with a trajectory."""
    out = [("IDA (model DAE)", report.reference.t, {n: report.reference.q[:, i]
                                                    for i, n in enumerate(report.reference.names)})]
    cart = report.cartesian
    if cart is not None:
        out.append(("Cartesian (joint description)", cart.t, {n: cart.column(n) for n in cart.names}))
    return out


def _coordinate_figure(report: Report, units: dict):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(report.max_abs_error)
    cols = min(3, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.6 * rows), squeeze=False, sharex=True)
    styles = ["k:", "r--"]
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        fmu = np.asarray(report.fmu_result[name], dtype=float)
        ax.plot(report.times, fmu, lw=1.6, label="FMU")
        for (label, t, q), style in zip(_references(report), styles):
            if name in q and len(t) == len(report.times):
                ax.plot(t, q[name], style, lw=1, label=label)
        ax.set_title(f"{name} [{units.get(name, '')}]", fontsize=9)
        ax.tick_params(labelsize=7)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].axis("off")
    axes[0][0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("time [s]", fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _error_figure(report: Report, units: dict):
    import matplotlib.pyplot as plt
    refs = _references(report)
    fig, axes = plt.subplots(len(refs), 1, figsize=(9, 3.0 * len(refs)), squeeze=False, sharex=True)
    for ax, (label, t, q) in zip(axes[:, 0], refs):
        for name in report.max_abs_error:
            if name not in q or len(t) != len(report.times):
                continue
            d = coordinate_error(report.fmu_result[name], q[name])
            ax.semilogy(report.times, np.maximum(d, 1e-17), lw=1, label=name)
        ax.axhline(report.tolerances["coordinate"], color="r", ls="--", lw=1, label="tolerance")
        ax.set_ylabel("|FMU − reference|", fontsize=8)
        ax.set_title(f"absolute error against {label}", fontsize=9)
        ax.legend(fontsize=6, ncol=4)
    axes[-1, 0].set_xlabel("time [s]", fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _residual_energy_figure(report: Report):
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(2, 1, figsize=(9, 5.5), sharex=True)
    res = np.abs(np.asarray(report.fmu_result["constraint_residual"], dtype=float))
    a.semilogy(report.times, np.maximum(res, 1e-17), lw=1)
    a.axhline(report.tolerances["constraint_residual"], color="r", ls="--", lw=1, label="tolerance")
    a.set_title("constraint_residual = max |Φ_j(q)| reported by the FMU", fontsize=9)
    a.legend(fontsize=7)
    e = report.energy
    if e:
        E = e["T"] + e["V"]
        scale = max(e["T"].max(), np.abs(e["V"] - e["V"][0]).max(), np.abs(e["W"]).max()) or 1.0
        b.semilogy(e["t"], np.maximum(np.abs(E - E[0] - e["W"]) / scale, 1e-17), lw=1)
        b.axhline(report.tolerances["energy"], color="r", ls="--", lw=1, label="tolerance")
        b.legend(fontsize=7)
    b.set_title(f"energy balance |E(t) − E(0) − W(t)| / scale; T from {report.energy_source}", fontsize=9)
    b.set_xlabel("time [s]", fontsize=8)
    fig.tight_layout()
    return _png(fig)


def _versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for pkg in ("fmigen", "numpy", "sympy", "scipy", "fmpy", "scikit-sundae", "mujoco"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    try:
        out["Singular"] = subprocess.run(["Singular", "--version"], capture_output=True, text=True,
                                         timeout=10).stdout.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.SubprocessError):
        out["Singular"] = "not found"
    return out


def _commit() -> str:
    """The fmigen checkout's commit, with '+changes' when it has uncommitted edits."""
    root = Path(__file__).resolve().parent.parent.parent
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if rev.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return rev.stdout.strip() + (" +uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _table(rows, header=None) -> str:
    esc = html.escape
    head = "" if header is None else "<tr>" + "".join(f"<th>{esc(str(h))}</th>" for h in header) + "</tr>"
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def _verdict(ok: bool) -> str:
    return '<span class="pass">passed</span>' if ok else '<span class="fail">FAILED</span>'


def write_html(report: Report, path) -> Path:
    """Write the page."""
    esc = html.escape
    units = report.units
    tol = report.tolerances
    summary = [["every reference, residual and energy balance", _verdict(report.passed)]]
    for name, ref in report.references.items():
        summary.append([f"reference <b>{esc(name)}</b>", _verdict(ref["passed"])
                        + (f" — {'failed' if ref['max_abs_error'] else 'could not run'}: {esc(str(ref['error']))}"
                           if "error" in ref else "")])
    summary.append([f"max constraint_residual {report.max_constraint_residual:.3e} (≤ {tol['constraint_residual']:g})",
                    _verdict(report.max_constraint_residual <= tol["constraint_residual"])])
    summary.append([f"energy drift {report.energy_drift:.3e} (≤ {tol['energy']:g})",
                    _verdict(report.energy_drift <= tol["energy"])])
    error_rows = []
    for name, ref in report.references.items():
        for coord, e in ref["max_abs_error"].items():
            ve = ref["max_abs_velocity_error"].get(coord, float("nan"))
            error_rows.append([esc(name), esc(coord), f"{e:.3e}", f"{ve:.3e}",
                               _verdict(e <= tol["coordinate"] and ve <= tol["velocity"])])
    settings = {k: v for k, v in report.settings.items() if v is not None}
    settings.update({f"tolerance: {k}": v for k, v in tol.items()})
    settings["reference self-check |ref(rtol) − ref(100·rtol)|"] = (
        f"{report.reference_error_estimate:.3e}" if report.reference_error_estimate is not None else "not run")
    versions = _versions()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>fmigen validation: {esc(report.mechanism)}</title>
<style>
body {{ font-family: sans-serif; max-width: 1400px; margin: 1em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.2em; font-size: 0.9em; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
.pass {{ color: #176617; font-weight: bold; }} .fail {{ color: #b00; font-weight: bold; }}
img {{ max-width: 100%; border: 1px solid #eee; }}
</style></head>
<body>
<h1>{esc(report.mechanism)}: {_verdict(report.passed)}</h1>
<p>fmigen validate, {esc(stamp)}, commit <code>{esc(_commit())}</code>.
The FMU was simulated in fmpy and compared at every output point with the
references below (angles directly: the FMU's are continuous, as the references' are).</p>
<h2>Summary</h2>
{_table(summary)}
<h2>Largest errors per coordinate</h2>
{_table(error_rows, ["reference", "coordinate", "max |error|", "max |der error|", "verdict"])}
<h2>Coordinates: FMU and references</h2>
<img alt="coordinates" src="{_coordinate_figure(report, units)}">
<h2>Absolute error over time</h2>
<img alt="errors" src="{_error_figure(report, units)}">
<h2>Constraint residual and energy balance</h2>
<img alt="residual and energy" src="{_residual_energy_figure(report)}">
<h2>Settings</h2>
{_table([[esc(str(k)), esc(str(v))] for k, v in settings.items()])}
<h2>Versions</h2>
{_table([[esc(k), esc(str(v))] for k, v in versions.items()])}
<p>Command: <code>{esc(" ".join(sys.argv))}</code></p>
</body></html>
"""
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    return path
