"""``fmigen doctor``: what this machine has for fmigen, and what a missing
piece costs.

fmigen needs three things to build and validate an FMU: a Gröbner engine
(Singular, found by ``fmigen.kinematics.engine``), a C compiler (gcc) and
fmpy.  Everything else is optional and costs one feature when missing: the
win64 cross-compiler (FMUs then carry Linux binaries and their sources),
MuJoCo (the MuJoCo peer and MJCF), rumoca (the Modelica export's checks) and
the third-party FMI masters the FMUs are tested in.  The report says, per
piece, whether it was found, its version, and that cost.

``--install-singular`` installs the pinned passagemath-singular wheel into
the Python that runs fmigen, without its dependencies (a 33 MB wheel; its
dependencies would add about 320 MB that fmigen does not use).
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass

from fmigen.fmi.fmu import MINGW_CC
from fmigen.kinematics import engine as engine_finder
from fmigen.kinematics import groebner


@dataclass
class Piece:
    """One thing fmigen may use: whether it is here and what its absence costs."""
    name: str
    required: bool
    found: bool
    version: str | None
    where: str | None
    #: what the user loses without it (said when it is missing)
    cost: str
    #: how to get it
    get: str

    def line(self) -> str:
        mark = "ok     " if self.found else ("MISSING" if self.required else "absent ")
        head = f"{mark} {self.name}"
        if self.found:
            return head + "".join(f" {x}" for x in (self.version, f"({self.where})" if self.where else None) if x)
        return f"{head}: {self.cost}; {self.get}"


def _command_version(argv: list[str]) -> str | None:
    """The first line a program prints for ``argv`` (its version), or None."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return next((ln.strip() for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()), None)


def _distribution(dist: str) -> str | None:
    """An installed Python distribution's version, without importing it."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _engine_piece() -> Piece:
    cost = ("no Gröbner engine: triangularization falls back to sympy's groebner, practical for small "
            "systems only, and `fmigen assemble` does not run")
    try:
        found = engine_finder.find()
        problem = None
    except engine_finder.EngineNotFound as e:
        found, problem = None, str(e)
    return Piece("Gröbner engine (Singular)", True, found is not None,
                 found.version if found else None,
                 f"{found.source}: {found.path}" if found else None,
                 problem or cost, engine_finder.HOW_TO_GET)


def _program_piece(name, program, required, cost, get, version_args=("--version",)) -> Piece:
    where = shutil.which(program)
    version = _command_version([where, *version_args]) if where else None
    return Piece(name, required, where is not None, version, where, cost, get)


def _python_piece(name, dist, required, cost, get) -> Piece:
    version = _distribution(dist)
    return Piece(name, required, version is not None, version, None, cost, get)


def pieces() -> list[Piece]:
    """Everything the report lists, required pieces first."""
    return [
        _engine_piece(),
        _program_piece("C compiler (gcc)", "gcc", True,
                       "no FMU can be compiled", "apt-get install gcc libc6-dev (or your system's gcc)"),
        _python_piece("fmpy", "fmpy", True, "FMUs cannot be run or validated", "pip install fmpy"),
        _program_piece("win64 cross-compiler (mingw-w64)", MINGW_CC, False,
                       "FMUs carry linux64 binaries and their C sources only, no win64 DLL (an importer "
                       "on Windows compiles the sources)", "apt-get install gcc-mingw-w64-x86-64"),
        _python_piece("MuJoCo", "mujoco", False,
                      "no `validate --peer mujoco` and no MJCF export/import checks", "pip install 'fmigen[mujoco]'"),
        _python_piece("rumoca (Modelica compiler)", "rumoca", False,
                      "exported Modelica models cannot be checked or simulated here",
                      "pip install 'fmigen[modelica]'"),
        _python_piece("libcosimpy (FMI 2 master)", "libcosimpy", False,
                      "the FMUs are not tested in libcosim", "pip install libcosimpy"),
        _python_piece("ecospy (FMI master)", "ecospy", False,
                      "the FMUs are not tested in ecos", "pip install ecospy (needs libtbb12)"),
        _python_piece("fmu-manipulation-toolbox", "fmu-manipulation-toolbox", False,
                      "the FMUs are not checked by the FMU manipulation toolbox",
                      "pip install fmu-manipulation-toolbox"),
    ]


def install_singular(log=print) -> int:
    """pip-install the pinned Singular wheel into this Python, without its
    dependencies; returns pip's exit status."""
    argv = [sys.executable, "-m", "pip", "install", "--no-deps", engine_finder.SINGULAR_WHEEL]
    log("fmigen doctor: " + " ".join(argv))
    return subprocess.call(argv, stdout=sys.stderr)


def cmd_doctor(args) -> int:
    if args.install_singular:
        status = install_singular(log=lambda m: print(m, file=sys.stderr))
        if status != 0:
            print(f"fmigen: error: pip could not install {engine_finder.SINGULAR_WHEEL} (exit status {status})",
                  file=sys.stderr)
            return 2
    found = pieces()
    ready = all(p.found for p in found if p.required)
    if args.json:
        print(json.dumps({"ready": ready, "python": sys.version.split()[0],
                          "groebner_engine": groebner.engine_json() if found[0].found else None,
                          "pieces": [asdict(p) for p in found]}))
    else:
        print(f"fmigen doctor (Python {sys.version.split()[0]} at {sys.executable})")
        for p in found:
            print("  " + p.line())
        print("ready to build and validate FMUs" if ready else
              "not ready: a required piece is missing (above)")
    return 0 if ready else 1


def add_parser(sub):
    """The ``doctor`` verb of the CLI (fmigen/cli.py calls this)."""
    p = sub.add_parser("doctor", help="report the Gröbner engine, compilers and optional tools this machine has",
                       description="Report what fmigen finds on this machine: the Gröbner engine (Singular: "
                                   "from FMIGEN_SINGULAR, PATH or the passagemath-singular wheel) and its "
                                   "version, the C compiler, fmpy, the optional win64 cross-compiler, MuJoCo, "
                                   "rumoca and the FMI masters, with what each missing piece costs.  Exit "
                                   "status 0 when everything needed to build and validate FMUs is there, "
                                   "1 when not.")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--install-singular", action="store_true",
                   help=f"first pip-install the Singular wheel into this Python: pip install --no-deps "
                        f"{engine_finder.SINGULAR_WHEEL} (33 MB)")
    p.set_defaults(func=cmd_doctor)
    return p
