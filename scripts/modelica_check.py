#!/usr/bin/env python
"""The Modelica export of a mechanism, simulated by rumoca, against its FMU.

For a longer horizon or another mechanism than tests/test_modelica.py
simulates (the four-bar, the slider-crank, the Stewart platform, the
five-link and the Stephenson III six-bar, over short horizons): exports
MECH (``fmigen export-modelica``), loads it in rumoca (balance), simulates it
to --stop-time with rumoca's explicit solver at rtol 1e-11, builds the FMU of
the same derivation (rk4, 1e-4 internal step) and prints the largest
difference of every coordinate and velocity at the --step output grid, with
the CPU seconds of each stage.

    .venv/bin/python scripts/modelica_check.py five_link [--stop-time 0.2] [--step 0.01] [--json]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fmigen.build.pipeline import build_fmu  # noqa: E402
from fmigen.tools.modelica import export_mechanism  # noqa: E402
from fmigen.verify.validate import simulate  # noqa: E402


def _cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mechanism")
    ap.add_argument("--stop-time", type=float, default=0.2)
    ap.add_argument("--step", type=float, default=0.01, help="output grid of the comparison (s)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import rumoca
    cpu = {}
    c = _cpu()
    text, name, compiled = export_mechanism(args.mechanism)
    cpu["export"], c = _cpu() - c, _cpu()
    model = rumoca.Session().loads(text, model=name)
    balanced = model.structure().is_balanced
    cpu["load"], c = _cpu() - c, _cpu()
    result = model.simulate((0, args.stop_time), dt=args.step,
                            config=rumoca.SimConfig(solver="rk-like", rtol=1e-11, atol=1e-13))
    cpu["simulate"], c = _cpu() - c, _cpu()
    with tempfile.TemporaryDirectory() as tmp:
        fmu, _ = build_fmu(args.mechanism, Path(tmp) / "m.fmu", solver="rk4", step=1e-4, windows=False)
        ref = simulate(fmu, compiled.dae.names, args.stop_time, args.step)
    cpu["fmu"] = _cpu() - c
    t = np.asarray(result.time)
    keep = np.r_[np.diff(t) > 0, True]   # an event repeats its time: the value after it
    diff = {}
    for q in compiled.dae.names:
        for mname, fname in ((q, q), ("v_" + q, f"der({q})")):
            got = np.interp(ref["time"], t[keep], np.asarray(result[mname])[keep])
            diff[fname] = float(np.max(np.abs(got - ref[fname])))
    worst = max(diff, key=diff.get)
    out = {"mechanism": args.mechanism, "model": name, "balanced": balanced, "stop_time": args.stop_time,
           "max_difference": diff[worst], "worst": worst, "cpu_s": {k: round(v, 2) for k, v in cpu.items()}}
    print(json.dumps(out) if args.json else
          f"{name}: balanced {balanced}; max |Modelica - FMU| over {args.stop_time} s = {diff[worst]:.3g} "
          f"({worst}); CPU s: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
    return 0 if balanced and diff[worst] <= 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
