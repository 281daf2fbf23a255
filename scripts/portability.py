"""The same FMU on other platforms and compilers, bit for bit.

    python scripts/portability.py [FMU or mechanism ...] [--steps 2000] [--platform NAME ...] [--json]

For each FMU (a path to an FMI 2.0 Co-Simulation .fmu, or a mechanism name,
built here with its win64 DLL when mingw-w64 is installed) runs
fmigen/runtime/fmi2_master.c -- STEPS doSteps of 1 ms, every Real variable
read after each -- on each platform below, and compares every value with
the shipped linux64 binary's, bit for bit:

  gcc-O2, gcc-O0      the FMU's sources with the host's gcc (GNU C mode: FP
                      contraction on wherever the target has an FMA)
  clang-pedantic      clang -std=c99 -pedantic -Wall -Wextra -Werror -O2
  tcc                 the Tiny C Compiler
  wine-win64          the shipped win64 DLL, under wine64
  qemu-aarch64        the sources cross-compiled (aarch64-linux-gnu-gcc -O2,
                      static), under qemu-user
  qemu-powerpc        the same for 32-bit big-endian powerpc

A motion that runs into a singular configuration before STEPS (the
eight-link's at 0.939 s) is compared up to the doStep that fails, and must
fail at that step on every platform.  A platform whose tools are missing is
reported as skipped, with the tool.
Prints one row per FMU and platform: identical, or how many values differ,
the first step that does and the largest difference.  Exit status 1 when
any platform that ran differs or failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MASTER = ROOT / "fmigen" / "runtime" / "fmi2_master.c"
#: the flags an importer might use; the sources must give the shipped bits
#: with each (the GNU C modes of gcc contract a*b + c into an FMA where the
#: target has one, -std=c99 does not: so no -std for gcc and the cross builds)
PEDANTIC = ["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror"]
#: platform -> (tools it needs, compiler command, runner prefix)
PLATFORMS = {
    "gcc-O2": (["gcc"], ["gcc", "-O2"], []),
    "gcc-O0": (["gcc"], ["gcc", "-O0"], []),
    "clang-pedantic": (["clang"], ["clang", "-O2", *PEDANTIC], []),
    "tcc": (["tcc"], ["tcc"], []),
    "wine-win64": (["x86_64-w64-mingw32-gcc", "wine64"], None, ["wine64"]),
    "qemu-aarch64": (["aarch64-linux-gnu-gcc", "qemu-aarch64"], ["aarch64-linux-gnu-gcc", "-O2", "-static"],
                     ["qemu-aarch64"]),
    "qemu-powerpc": (["powerpc-linux-gnu-gcc", "qemu-ppc"], ["powerpc-linux-gnu-gcc", "-O2", "-static"],
                     ["qemu-ppc"]),
}
#: Debian installs wine64 outside PATH
WINE64 = "/usr/lib/wine/wine64"


def tool(name: str) -> str | None:
    if name == "wine64" and not shutil.which(name) and os.access(WINE64, os.X_OK):
        return WINE64
    return shutil.which(name)


def missing_tools(platform: str) -> list[str]:
    return [t for t in PLATFORMS[platform][0] if tool(t) is None]


class Unpacked:
    """An FMI 2.0 CS .fmu unpacked: its GUID, identifier, every Real's value
    reference and name, its sources and binaries."""

    def __init__(self, fmu_path: Path, into: Path):
        with zipfile.ZipFile(fmu_path) as z:
            z.extractall(into)
        self.root = into
        md = etree.parse(str(into / "modelDescription.xml")).getroot()
        self.guid = md.get("guid")
        cs = md.find("CoSimulation")
        if cs is None:
            raise SystemExit(f"{fmu_path}: not a Co-Simulation FMU")
        self.identifier = cs.get("modelIdentifier")
        self.reals = [(int(v.get("valueReference")), v.get("name")) for v in md.iter("ScalarVariable")
                      if v.find("Real") is not None]
        self.sources = sorted((into / "sources").glob("*.c"))

    def binary(self, platform: str) -> Path:
        ext = {"linux64": "so", "win64": "dll"}[platform]
        return self.root / "binaries" / platform / f"{self.identifier}.{ext}"


def _run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def build(u: Unpacked, platform: str, work: Path) -> tuple[list[str] | None, str]:
    """The command that runs the master on ``platform`` (None and the reason
    when it cannot be built)."""
    inc = f"-I{u.root / 'sources'}"
    if platform == "linux64":
        exe = work / "master-linux64"
        r = _run(["gcc", "-O1", inc, MASTER, u.binary("linux64"), f"-Wl,-rpath,{u.binary('linux64').parent}",
                  "-o", exe])
    elif platform == "wine-win64":
        dll = u.binary("win64")
        if not dll.exists():
            return None, "the FMU has no win64 DLL"
        exe = dll.parent / "master.exe"   # next to the DLL, where Windows looks for it
        r = _run([tool("x86_64-w64-mingw32-gcc"), "-O1", inc, MASTER, dll, "-o", exe])
    else:
        exe = work / f"master-{platform}"
        r = _run([*PLATFORMS[platform][1], inc, *u.sources, MASTER, "-o", exe, "-lm"])
    if r.returncode:
        return None, f"compile failed:\n{r.stderr[-3000:]}"
    runner = [tool(t) for t in PLATFORMS[platform][2]] if platform in PLATFORMS else []
    return [*runner, str(exe)], r.stderr


def run(cmd: list[str], u: Unpacked, steps: int, h: float, timeout: float = 900,
        state: tuple = (), stop_ok: bool = False) -> tuple[list[list[int]] | None, str]:
    """The master's rows, one per step (None and why when it failed);
    ``state``: ("--save" or "--load", K, file), fmi2_master's option.
    ``stop_ok``: a doStep that fails (the motion running into a singular
    configuration: the eight-link's at 0.939 s) ends the rows, and the
    second value says which step it was ("doStep K failed")."""
    env = dict(os.environ, WINEDEBUG="-all")
    if cmd[0].endswith("wine64"):
        env.setdefault("WINEPREFIX", str(Path(tempfile.gettempdir()) / f"fmigen-wine-{os.getuid()}"))
    r = subprocess.run([*cmd, *map(str, state), u.guid, str(steps), repr(h), *(str(v) for v, _ in u.reals)],
                       capture_output=True, text=True, env=env, timeout=timeout)
    rows = [[int(x, 16) for x in line.split()] for line in r.stdout.splitlines()]
    first = int(state[1]) if state and state[0] == "--load" else 0
    if r.returncode == 3 and stop_ok:   # fmi2_master: a doStep returned an error
        return rows, f"doStep {first + len(rows) + 1} failed"
    if r.returncode:
        return None, f"exit status {r.returncode}: {r.stderr.strip()[-2000:]}"
    if len(rows) != steps - first:
        return None, f"{len(rows)} of {steps - first} steps printed"
    return rows, ""


def carry_state(fmu_path: Path, platform: str, steps: int = 200, at: int = 100, h: float = 1e-3) -> dict:
    """An FMU state serialized by the shipped linux64 binary after ``at``
    steps, restored on ``platform`` (fmi2DeSerializeFMUstate,
    fmi2SetFMUstate) and stepped on to ``steps``: "identical" when every
    value of those steps has the bits the linux64 run gave, "differs", or
    "refused" with the FMU's message (the master's exit status 5)."""
    row = {"fmu": fmu_path.stem, "platform": platform}
    gone = missing_tools(platform)
    if gone:
        return {**row, "status": "skipped", "reason": f"not installed: {', '.join(gone)}"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        u = Unpacked(fmu_path, tmp / "fmu")
        state = tmp / "state.bin"
        cmd, msg = build(u, "linux64", tmp)
        if cmd is None:
            raise SystemExit(f"{fmu_path}: the reference master: {msg}")
        ref, msg = run(cmd, u, steps, h, state=("--save", at, state))
        if ref is None:
            raise SystemExit(f"{fmu_path}: the shipped linux64 binary saving its state: {msg}")
        cmd, msg = build(u, platform, tmp)
        if cmd is None:
            return {**row, "status": "failed", "reason": msg}
        got, why = run(cmd, u, steps, h, state=("--load", at, state))
        if got is None:
            return {**row, "status": "refused" if why.startswith("exit status 5:") else "failed", "reason": why}
        c = compare(ref[at:], got, [n for _, n in u.reals])
        return {**row, "status": "identical" if c["differ"] == 0 else "differs", **c}


def as_double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def compare(ref: list[list[int]], got: list[list[int]], names: list[str]) -> dict:
    """How ``got`` differs from ``ref``: values unequal in their bits, the
    first step that has one, the largest absolute difference and where."""
    differ, first, worst, where, by_name = 0, None, 0.0, None, {}
    for k, (a, b) in enumerate(zip(ref, got)):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                differ += 1
                first = k if first is None else first
                d = abs(as_double(x) - as_double(y))
                if not d <= by_name.get(names[i], 0.0):
                    by_name[names[i]] = d
                if not d <= worst:   # NaN on one side counts as the worst
                    worst, where = d, f"{names[i]} at step {k + 1}"
    return {"values": len(ref) * len(ref[0]) if ref else 0, "differ": differ, "first_step": first,
            "max_abs": worst, "where": where, "max_abs_by_name": by_name}


def check(fmu_path: Path, platforms, steps: int = 2000, h: float = 1e-3) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        u = Unpacked(fmu_path, tmp / "fmu")
        cmd, msg = build(u, "linux64", tmp)
        if cmd is None:
            raise SystemExit(f"{fmu_path}: the reference master: {msg}")
        ref, ref_stop = run(cmd, u, steps, h, stop_ok=True)
        if ref is None:
            raise SystemExit(f"{fmu_path}: the shipped linux64 binary: {ref_stop}")
        names = [n for _, n in u.reals]
        for p in platforms:
            row = {"fmu": fmu_path.stem, "platform": p}
            gone = missing_tools(p)
            if gone:
                rows.append({**row, "status": "skipped", "reason": f"not installed: {', '.join(gone)}"})
                continue
            cmd, msg = build(u, p, tmp)
            if cmd is None:
                rows.append({**row, "status": "failed", "reason": msg})
                continue
            got, stop = run(cmd, u, steps, h, stop_ok=True)
            if got is None:
                rows.append({**row, "status": "failed", "reason": stop})
                continue
            c = compare(ref, got, names)
            # a motion that ends in a failed doStep must end there everywhere
            same = c["differ"] == 0 and len(got) == len(ref) and stop == ref_stop
            rows.append({**row, "status": "identical" if same else "differs", "warnings": msg, "stopped": stop,
                         "reference_stopped": ref_stop, **c})
    return rows


def fmu_of(arg: str, into: Path) -> Path:
    if arg.endswith(".fmu"):
        return Path(arg)
    from fmigen.build.pipeline import build_fmu
    out = into / f"{Path(arg).stem}.fmu"
    build_fmu(arg, out, windows=None)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fmus", nargs="*", default=["fourbar", "stewart"], help="FMU paths or mechanism names")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--platform", action="append", choices=list(PLATFORMS), help="default: all")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in args.fmus:
            rows += check(fmu_of(f, Path(tmp)), args.platform or list(PLATFORMS), args.steps)
            if not args.json:
                for r in rows[-len(args.platform or PLATFORMS):]:
                    detail = (f"{r['differ']} of {r['values']} values differ, from step {r['first_step'] + 1}, "
                              f"max |diff| {r['max_abs']:.3g} ({r['where']})" if r["status"] == "differs"
                              else r.get("reason", "").splitlines()[0] if r["status"] != "identical" else
                              f"{r['values']} values")
                    if r.get("stopped") or r.get("reference_stopped"):
                        detail += f" (stopped: {r.get('stopped') or 'no'}; the shipped binary: " \
                                  f"{r.get('reference_stopped') or 'no'})"
                    print(f"{r['fmu']:<12} {r['platform']:<15} {r['status']:<10} {detail}", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 1 if any(r["status"] in ("differs", "failed") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
