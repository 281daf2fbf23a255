"""Finding the Gröbner engine: which ``Singular`` executable fmigen runs.

fmigen runs Singular as a subprocess (``groebner.run_singular``).  It can
come from three places, looked for in this order:

1. an explicit setting, the environment variable ``FMIGEN_SINGULAR`` (the
   path of a Singular executable);
2. ``Singular`` on ``PATH`` (Debian's ``apt-get install singular``, or any
   other install);
3. the ``passagemath-singular`` wheel from the Python package index, which
   ships a complete Singular executable inside the installed package at
   ``sage_wheels/bin/Singular``.  pip does not put it on ``PATH``, so it is
   found through the installed package (``importlib``), without importing
   anything from it.  Its in-process module (``PySingular``) is not used:
   the executable is what fmigen already runs.

The version joins every Gröbner cache key (``groebner.engine_key``): bases
are a pure function of the input text *and* the engine that computed them,
so a cache filled by one Singular is never read as another's.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: the environment variable that names the Singular executable explicitly
ENV_VAR = "FMIGEN_SINGULAR"

#: the passagemath wheel the documentation and ``fmigen doctor
#: --install-singular`` install.  Pinned: ``sage_wheels/bin`` is the wheel's
#: internal layout, not an interface its authors promise to keep.
SINGULAR_WHEEL = "passagemath-singular==10.8.13"

#: how to get an engine, for the one message a missing engine gets
HOW_TO_GET = (f"install one with `pip install --no-deps {SINGULAR_WHEEL}` (a 33 MB wheel; "
              f"`fmigen doctor --install-singular` runs it), or `apt-get install singular` on Debian/Ubuntu, "
              f"or set {ENV_VAR} to a Singular executable")


@dataclass(frozen=True)
class Engine:
    """A Singular executable: where it is, how it was found and its version."""
    path: str
    #: "FMIGEN_SINGULAR", "PATH" or "passagemath-singular wheel"
    source: str
    #: Singular's version as it reports it, e.g. "4.3.1 (4313)"
    version: str

    def describe(self) -> str:
        return f"Singular {self.version} ({self.source}: {self.path})"

    def as_json(self) -> dict:
        return {"name": "Singular", "version": self.version, "source": self.source, "path": self.path}


class EngineNotFound(RuntimeError):
    """No Singular executable was found, or the one named cannot run."""


def wheel_executable() -> Path | None:
    """The passagemath wheel's Singular, when the wheel is installed in this
    Python: ``<site-packages>/sage_wheels/bin/Singular``.  ``find_spec`` on
    the namespace package locates it without importing any of it."""
    try:
        spec = importlib.util.find_spec("sage_wheels")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        exe = Path(root) / "bin" / "Singular"
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    return None


def locate() -> tuple[str, str] | None:
    """(path, source) of the Singular to run, in the order of the module
    docstring, or None.  An explicit setting that does not name an
    executable is an error, not a fall-through: the user asked for that one."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        path = shutil.which(explicit)
        if path is None:
            raise EngineNotFound(f"{ENV_VAR}={explicit} is not an executable file")
        return path, ENV_VAR
    path = shutil.which("Singular")
    if path is not None:
        return path, "PATH"
    exe = wheel_executable()
    if exe is not None:
        return str(exe), "passagemath-singular wheel"
    return None


def find() -> Engine | None:
    """The engine fmigen runs, or None when there is none.  The version is
    asked once per executable (``_version``)."""
    found = locate()
    if found is None:
        return None
    path, source = found
    return Engine(path, source, _version(path, _stamp(path)))


def require() -> Engine:
    """``find()``, or ``EngineNotFound`` with the one message that says how
    to get an engine."""
    engine = find()
    if engine is None:
        raise EngineNotFound(f"no Gröbner engine: Singular was not found ({ENV_VAR} unset, no `Singular` on "
                             f"PATH, no passagemath-singular wheel in this Python); {HOW_TO_GET}")
    return engine


def _stamp(path: str) -> tuple:
    """What identifies an executable's build on disk (its real path, size
    and modification time), so that a replaced Singular is asked again."""
    real = os.path.realpath(path)
    st = os.stat(real)
    return real, st.st_size, st.st_mtime_ns


@functools.lru_cache(maxsize=8)
def _version(path: str, stamp: tuple) -> str:
    """Singular's version from its banner (``Singular -v`` with no input:
    "... version 4.3.1 (4313, 64 bit) ..."), e.g. "4.3.1 (4313)".  A banner
    that does not parse is named by its hash, so that it still keys the
    cache; an executable that cannot run is ``EngineNotFound``."""
    try:
        proc = subprocess.run([path, "-v"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise EngineNotFound(f"Singular at {path} could not be run ({why})") from None
    banner = proc.stdout + proc.stderr
    m = re.search(r"version\s+(\d+(?:\.\d+)+)\s*\((\d+)", banner)
    if m:
        return f"{m.group(1)} ({m.group(2)})"
    if not banner.strip():
        raise EngineNotFound(f"Singular at {path} printed no version (exit status {proc.returncode})")
    # not a banner this code knows: the cache key still tells such engines
    # apart by what they print, and no engine output reaches a log line
    return f"unrecognized (banner {hashlib.sha256(banner.encode()).hexdigest()[:12]})"
