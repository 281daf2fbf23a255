"""Which attempt of the generated kinematics solves each configuration of
``fmigen check``'s workspace sweep: per block, how many calls each lex
sequence, the exact completion, the Newton polish and the Newton fallback
ran (a call that enters the completion has failed the sequence before it).

    PYTHONPATH=. .venv/bin/python scripts/kinematics_attempts.py fourbar_double_crank five_link [--json]

The counters are in an instrumented copy of model.c (one at each attempt's
label), compiled and called as ``fmigen check`` calls it; the FMU's model.c
is not changed.  A Newton block (one the mechanism forces, or too big for a
lex basis) has no attempts and is not listed: it iterates on every call.
"""
import argparse
import ctypes
import json
import re
import sys

from fmigen.verify import check as check_mod
from fmigen.fmi import fmu as fmu_mod
from fmigen.build.pipeline import compile_model, prepare_mechanism

PATTERNS = [r"case \d+: \{ /\* ((?:sequence|exact completion)[^*]*)\*/",
            r"default: \{ /\* (Newton from the prediction)", r"/\* (polish): Newton from the result"]


def attempts(spec):
    labels, libs = [], []
    write, core = fmu_mod.write_sources, check_mod._core_library

    def instrumented(dest, gen, *a, **k):
        write(dest, gen, *a, **k)
        out, block = [], "?"
        for line in (dest / "model.c").read_text().split("\n"):
            m = re.search(r"/\* (block \{[^}]*\})", line)
            block = m.group(1) if m else block
            out.append(line)
            for pat in PATTERNS:
                m = re.search(pat, line)
                if m:
                    labels.append(f"{block}: {m.group(1).strip()}")
                    out.append(f"fmigen_attempts[{len(labels) - 1}]++;")
        text = "\n".join(out).replace("#include", f"long fmigen_attempts[{max(1, len(labels))}];\n#include", 1)
        (dest / "model.c").write_text(text)

    def keep(compiled, workdir):
        libs.append(core(compiled, workdir))
        return libs[-1]
    fmu_mod.write_sources, check_mod._core_library = instrumented, keep
    try:
        compiled = compile_model(prepare_mechanism(spec))
        r = check_mod.branch_consistency(compiled, compiled.triangular.sweep)
    finally:
        fmu_mod.write_sources, check_mod._core_library = write, core
    counts = (ctypes.c_long * max(1, len(labels))).in_dll(libs[0], "fmigen_attempts")
    return {"mechanism": compiled.mechanism.name, "solves": r["solves"], "max_deviation": r["max_deviation"],
            "near_physical_singularity": r["near_singular"]["solves"],
            "attempts": {label: int(counts[k]) for k, label in enumerate(labels)}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mechanisms", nargs="+")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    for spec in args.mechanisms:
        r = attempts(spec)
        if args.json:
            print(json.dumps(r))
            continue
        print(f"{r['mechanism']}: {r['solves']} solves along the sweep, max deviation {r['max_deviation']:.3g}")
        for label, n in r["attempts"].items():
            print(f"  {n:6d}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
