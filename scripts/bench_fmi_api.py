"""Instructions per communication step through the FMI 2.0 API of a real
binary: what an importer pays, where `fmigen bench`'s "FMU doStep at h"
counts the runtime core (fmigen_core_step and what the first read computes).

    python scripts/bench_fmi_api.py [mechanism] [--steps 3000] [--json]

Builds the mechanism's Co-Simulation FMU (explicit Euler, h = 1 ms), loads
its Linux binary with dlopen from fmigen/runtime/fmi2_driver.c, and counts with
callgrind the loop of fmi2DoStep(1 ms) followed by one fmi2GetReal of the
first N Real variables (value references in model-description order), for
N = 0, the coordinates, velocities and constraint_residual (2·NQ + 1), and
every Real.  Prints instructions per step; deterministic, so one run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    import fmpy

    from fmigen.fmi import fmu
    from fmigen.build.pipeline import build_fmu
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mechanism", nargs="?", default="stewart")
    ap.add_argument("--steps", type=int, default=3000, help="communication steps of 1 ms (default 3000)")
    ap.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        print(f"building {args.mechanism} (FMI 2.0 CS, explicit Euler, h = 1 ms)", file=sys.stderr)
        path, _ = build_fmu(args.mechanism, tmp / "m.fmu", solver="euler", step=1e-3, windows=False)
        md = fmpy.read_model_description(str(path))
        reals = [v for v in md.modelVariables if v.type == "Real"]
        with zipfile.ZipFile(path) as z:
            so = next(n for n in z.namelist() if n.endswith(".so"))
            z.extract(so, tmp)
        subprocess.run(["gcc", "-O1", f"-I{fmu.RUNTIME_DIR / 'fmi2'}", str(fmu.RUNTIME_DIR / "fmi2_driver.c"),
                        "-ldl", "-o", str(tmp / "driver")], check=True)
        # the coordinates, their velocities and the residual lead the table
        lead = next((i for i, v in enumerate(reals) if v.name == "constraint_residual"), None)
        counts = {"nothing": 0, **({"q, der(q), constraint_residual": lead + 1} if lead is not None else {}),
                  "every Real": len(reals)}
        out = {"mechanism": args.mechanism, "steps": args.steps, "instructions_per_step": {}}
        for label, n in counts.items():
            print(f"callgrind: fmi2DoStep + fmi2GetReal of {n} ({label})", file=sys.stderr)
            cg = tmp / f"cg.{n}"
            r = subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=run", f"--callgrind-out-file={cg}",
                                str(tmp / "driver"), str(tmp / so), md.guid, str(args.steps),
                                *(str(v.valueReference) for v in reals[:n])], capture_output=True, text=True)
            if r.returncode:
                raise SystemExit(f"the driver failed ({r.returncode}): {r.stderr[-2000:]}")
            total = next(int(line.split()[1]) for line in cg.read_text().splitlines() if line.startswith("summary:"))
            out["instructions_per_step"][f"{label} ({n} reals)"] = total / args.steps
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        for label, ir in out["instructions_per_step"].items():
            print(f"{args.mechanism}: fmi2DoStep + fmi2GetReal of {label}: {ir:,.0f} instructions per step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
