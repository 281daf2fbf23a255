"""The Gröbner engine used by ``triangular``: Singular as a subprocess.

Polynomials have rational coefficients and may contain *parameters* (the
abstraction symbols that stand for known quantities); the basis is computed
over the rational function field Q(parameters) in lex order, so it is valid
for generic values of the knowns and its leading coefficients say exactly
where it is not (a run-time singularity).

Bases are cached on disk, keyed by a hash of the Singular input (the ideal,
the variable order and the parameters), because a basis is a pure function of
that text.  When Singular is not installed the sympy ``groebner`` fallback is
used and says so; it is only practical for small systems.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sympy as sp

CACHE_DIR = Path(os.environ.get("FMIGEN_CACHE", Path.home() / ".cache" / "fmigen" / "groebner"))


class GroebnerError(RuntimeError):
    pass


class GroebnerTimeout(GroebnerError):
    """The engine did not finish within the time allowed for one block."""


def singular_available() -> bool:
    return shutil.which("Singular") is not None


def singular_poly(expr) -> str:
    """A polynomial in Singular's syntax."""
    return sp.sstr(sp.expand(expr)).replace("**", "^")


def disk_cache(key_text: str, compute, use_cache=True, subdir=None, suffix=".json"):
    """(text, cache file, hit): ``compute()``'s text, kept under CACHE_DIR
    (``subdir``) by the sha256 of ``key_text`` and written atomically, so a
    build interrupted mid-write never leaves a truncated entry."""
    key = hashlib.sha256(key_text.encode()).hexdigest()
    path = (CACHE_DIR / subdir if subdir else CACHE_DIR) / f"{key}{suffix}"
    if use_cache and path.exists():
        return path.read_text(), path, True
    text = compute()
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return text, path, False


def _singular_script(polys, variables, parameters) -> str:
    params = ",".join(str(p) for p in parameters)
    coeff_field = f"(0,{params})" if parameters else "0"
    ideal = ",\n  ".join(singular_poly(p) for p in polys)
    return (
        f"ring r = {coeff_field},({','.join(str(v) for v in variables)}),lp;\n"
        "option(redSB);\n"
        f"ideal i =\n  {ideal};\n"
        "ideal g = groebner(i);\n"
        'int k; for (k = 1; k <= size(g); k++) { print("@@" + string(g[k])); }\n'
        "quit;\n"
    )


def groebner_lex(polys, variables, parameters=(), use_cache=True, log=None, timeout=None) -> list[sp.Expr]:
    """Reduced lex Gröbner basis of ``polys`` with ``variables`` highest first.

    Returns polynomials with integer-polynomial coefficients (denominators in
    the parameters cleared)."""
    log = log or (lambda msg: None)
    script = _singular_script(polys, variables, parameters)
    engine = "singular" if singular_available() else "sympy"
    symbols = {str(s): s for s in [*variables, *parameters]}

    def compute():
        started = time.perf_counter()
        if engine == "singular":
            basis = _run_singular(script, symbols, timeout)
        else:
            print("fmigen: Singular not found; using the sympy groebner fallback "
                  "(slow: install Singular with apt-get install singular)", file=sys.stderr)
            basis = _run_sympy(polys, variables, parameters)
        basis = [_clear_denominators(b) for b in basis]
        log(f"Gröbner basis ({engine}): {len(basis)} polynomials in {time.perf_counter() - started:.2f} s")
        return json.dumps([sp.sstr(b) for b in basis])

    text, path, hit = disk_cache(engine + "\n" + script, compute, use_cache)
    if hit:
        log(f"Gröbner basis from cache ({path.name[:12]})")
    return [sp.sympify(x, locals=symbols) for x in json.loads(text)]


def run_singular(script: str, timeout: float | None = None) -> str:
    """Run a Singular script (quiet, no init file) and return its output;
    GroebnerTimeout after ``timeout`` s, GroebnerError when Singular reports
    an error.  Shared by the triangularization and the assembly."""
    if not singular_available():
        raise GroebnerError("Singular is required here (apt-get install singular)")
    with tempfile.NamedTemporaryFile("w", suffix=".sing", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        try:
            proc = subprocess.run(["Singular", "-q", "--no-rc", path], capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired as e:
            raise GroebnerTimeout(f"Singular did not finish in {timeout} s") from e
    finally:
        os.unlink(path)
    if proc.returncode != 0 or "? " in proc.stdout:
        raise GroebnerError(f"Singular failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def _run_singular(script, symbols, timeout=None):
    out = run_singular(script, timeout)
    basis = []
    for line in out.splitlines():
        if line.startswith("@@"):
            basis.append(sp.sympify(line[2:].replace("^", "**"), locals=symbols))
    if not basis:
        raise GroebnerError(f"Singular returned no basis:\n{out}")
    return basis


def _run_sympy(polys, variables, parameters):
    domain = sp.QQ.frac_field(*parameters) if parameters else sp.QQ
    G = sp.groebner([sp.expand(p) for p in polys], *variables, order="lex", domain=domain)
    return list(G.exprs)


def _clear_denominators(expr):
    num, _ = sp.fraction(sp.together(expr))
    return sp.expand(num)
