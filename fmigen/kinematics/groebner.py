"""The Gröbner engine used by ``triangular``: Singular as a subprocess.

Polynomials have rational coefficients and may contain *parameters* (the
abstraction symbols that stand for known quantities); the basis is computed
over the rational function field Q(parameters) in lex order, so it is valid
for generic values of the knowns and its leading coefficients say exactly
where it is not (a run-time singularity).

Bases are cached on disk, keyed by a hash of the Singular input (the ideal,
the variable order and the parameters), because a basis is a pure function of
that text and the engine's version.  Which Singular runs is found by
``engine`` (an explicit setting, ``PATH``, or the passagemath wheel).  When
there is none the sympy ``groebner`` fallback is used and says so; it is only
practical for small systems.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sympy as sp

from fmigen.kinematics import engine as engine_finder

CACHE_DIR = Path(os.environ.get("FMIGEN_CACHE", Path.home() / ".cache" / "fmigen" / "groebner"))


class GroebnerError(RuntimeError):
    """The Gröbner engine failed; the message is one line naming the cause,
    ``output`` keeps what the engine printed (for a developer, never shown
    to a user)."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


class GroebnerLimit(GroebnerError):
    """Singular used up its CPU-time safety limit (``run_singular``)."""


#: Singular's safety limit, in seconds of *CPU* time (its own process's, not
#: the wall clock's): a block whose basis needs more is an error naming it,
#: never a quiet change of method.  Why CPU time and an error: a run cut
#: short by the wall clock makes the generated model depend on the machine's
#: load (the same module gave other C on a busy machine); CPU time barely
#: depends on what else runs, and a limit that only ever fails the build
#: cannot give other C.  The largest basis any shipped mechanism needs takes
#: well under a tenth of it.
SINGULAR_CPU_LIMIT = 600


def singular() -> engine_finder.Engine | None:
    """The Singular fmigen runs (``engine.find``), or None.  An explicit
    setting that names no executable is a ``GroebnerError``."""
    try:
        return engine_finder.find()
    except engine_finder.EngineNotFound as e:
        raise GroebnerError(str(e)) from None


def singular_available() -> bool:
    return singular() is not None


def engine_key() -> str:
    """The engine part of every Gröbner cache key, and what the build log
    and ``--json`` report: Singular with its version, or the sympy fallback
    with sympy's.  A basis is a pure function of its input and the engine."""
    found = singular()
    return f"Singular {found.version}" if found else f"sympy {sp.__version__}"


def engine_description() -> str:
    """One line for the build log: which engine, which version, from where."""
    found = singular()
    return found.describe() if found else ("none: the sympy fallback (slow; "
                                           + engine_finder.HOW_TO_GET + ")")


def engine_json() -> dict:
    """The engine for ``--json`` output (``fmigen build``, ``fmigen doctor``)."""
    found = singular()
    return found.as_json() if found else {"name": "sympy", "version": sp.__version__, "source": "fallback",
                                          "path": None}


def singular_poly(expr, variables, parameters=()) -> str:
    """``expr``, a polynomial in ``variables`` (sympy symbols) whose
    coefficients are rational numbers or rational functions of
    ``parameters``, as Singular reads it unambiguously: scaled by the least
    common multiple of its denominators, so it is a polynomial with integer
    coefficients in variables and parameters, printed term by term as
    ``c*x^2*y``.

    Why not sympy's printer: it writes ``169*K*c**2*s**2/10000``, and in
    Singular ``s^2/10000`` is ``s^(2/10000)``, an error.  The scaled
    polynomial generates the same ideal over Q(parameters), where a
    denominator in the parameters is a unit.  A symbol that is neither, or a
    variable in a denominator, is a ``GroebnerError`` naming it."""
    gens = [*variables, *parameters]
    expr = sp.sympify(expr)
    floats = expr.atoms(sp.Float)
    if floats:
        raise GroebnerError(f"the polynomial {_short(expr)} has the float {min(floats, key=float)}; the Gröbner "
                            "engine takes exact coefficients only")
    stray = expr.free_symbols - set(gens)
    if stray:
        raise GroebnerError(f"the polynomial {_short(expr)} has symbols {sorted(map(str, stray))} that are "
                            "neither ring variables nor parameters")
    try:
        P = sp.Poly(expr, *gens, domain=sp.QQ)
    except (sp.PolynomialError, sp.CoercionFailed):
        # a rational function: its numerator, when the denominator is a
        # polynomial of the parameters only
        num, den = sp.fraction(sp.together(expr))
        if den.free_symbols & set(variables):
            raise GroebnerError(f"{_short(expr)} is not a polynomial in {', '.join(map(str, variables))} "
                                "(a ring variable in a denominator)") from None
        P = sp.Poly(sp.expand(num), *gens, domain=sp.QQ)
    _, P = P.clear_denoms(convert=True)
    names = [str(g) for g in gens]
    out = []
    with _long_integers():
        for monom, coeff in P.terms():
            factors = [f"{n}^{e}" if e > 1 else n for n, e in zip(names, monom) if e]
            if abs(coeff) != 1 or not factors:
                factors.insert(0, str(abs(int(coeff))))
            out.append(("-" if coeff < 0 else "+", "*".join(factors)))
    if not out:
        return "0"
    head = ("-" if out[0][0] == "-" else "") + out[0][1]
    return head + "".join(f" {sign} {term}" for sign, term in out[1:])


@contextlib.contextmanager
def _long_integers():
    """Python refuses to print an int of more than 4300 digits by default;
    an exact coefficient may have more."""
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def _short(expr, limit=120) -> str:
    text = sp.sstr(expr)
    return text if len(text) <= limit else text[:limit] + "..."


def cache_path(key_text: str, subdir=None, suffix=".json") -> Path:
    """Where ``disk_cache`` keeps the entry of ``key_text``: by its sha256,
    under CACHE_DIR (``subdir``)."""
    key = hashlib.sha256(key_text.encode()).hexdigest()
    return (CACHE_DIR / subdir if subdir else CACHE_DIR) / f"{key}{suffix}"


def disk_cache(key_text: str, compute, use_cache=True, subdir=None, suffix=".json", force=False):
    """(text, cache file, hit): ``compute()``'s text, kept under CACHE_DIR
    (``subdir``) by the sha256 of ``key_text`` and written atomically, so a
    build interrupted mid-write never leaves a truncated entry.  ``force``:
    compute and (over)write even when an entry exists."""
    path = cache_path(key_text, subdir, suffix)
    if use_cache and not force and path.exists():
        return path.read_text(), path, True
    text = compute()
    if use_cache:
        write_atomically(path, text.encode())
    return text, path, False


def write_atomically(path: Path, data: bytes):
    """``path`` with ``data``, through a temporary file of its own in the same
    directory and a rename: a reader sees the old entry or the whole new one,
    and two processes writing the same entry at once (the test suite's
    pytest-xdist workers, parallel builds) never write into one temporary
    file, one renaming it away while the other still writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _singular_script(polys, variables, parameters) -> str:
    params = ",".join(str(p) for p in parameters)
    coeff_field = f"(0,{params})" if parameters else "0"
    ideal = ",\n  ".join(singular_poly(p, variables, parameters) for p in polys)
    # cleardenom: Singular clears the denominators (rational functions of
    # the parameters) itself, so every printed coefficient is a polynomial
    # with integer coefficients; the term-wise parser below reads that
    return (
        f"ring r = {coeff_field},({','.join(str(v) for v in variables)}),lp;\n"
        # Singular prints x^2 as "x2" when every name is one letter (its
        # "short" output), which the parser below does not read
        "short = 0;\n"
        "option(redSB);\n"
        f"ideal i =\n  {ideal};\n"
        "ideal g = groebner(i);\n"
        'int k; for (k = 1; k <= size(g); k++) { print("@@" + string(cleardenom(g[k]))); }\n'
        "quit;\n"
    )


#: cache entries hold the basis as term lists (exponents, integer
#: coefficient) since this format; the key changes with it
CACHE_FORMAT = "terms-1"


def groebner_lex(polys, variables, parameters=(), use_cache=True, log=None, cpu_limit=None) -> list[sp.Poly]:
    """Reduced lex Gröbner basis of ``polys`` with ``variables`` highest first,
    as integer polynomials (sp.Poly over ZZ) in ``variables`` + ``parameters``
    (denominators in the parameters cleared).

    Why term lists and not expressions: a six-bar's basis is 561 KB of text;
    sympy's parser took minutes to read it (again on every cache hit), and
    Poly conversions of the parsed expressions more.  Singular's output is
    read by a term-wise parser straight into exponent dictionaries, the cache
    keeps those, and ``sequences.extract`` works on them.

    ``cpu_limit``: Singular's CPU-time safety limit (``run_singular``)."""
    log = log or (lambda msg: None)
    script = _singular_script(polys, variables, parameters)
    engine = "singular" if singular_available() else "sympy"
    key = engine_key()
    gens = [*variables, *parameters]

    def compute():
        started = time.perf_counter()
        if engine == "singular":
            out = run_singular(script, cpu_limit)
            singular_s = time.perf_counter() - started
            lines = [line[2:] for line in out.splitlines() if line.startswith("@@")]
            if not lines:
                raise GroebnerError("Singular returned no basis", out)
            index = {str(g): k for k, g in enumerate(gens)}
            try:
                basis = [parse_singular_poly(line, index) for line in lines]
            except (KeyError, ValueError, IndexError) as e:
                raise GroebnerError(f"Singular's basis could not be read ({type(e).__name__}: {e})", out) from None
            log(f"Gröbner basis (singular): {len(basis)} polynomials, Singular {singular_s:.2f} s, "
                f"read {time.perf_counter() - started - singular_s:.2f} s ({sum(map(len, lines)) / 1e3:.0f} kB)")
        else:
            print("fmigen: no Gröbner engine found; using the sympy groebner fallback (slow): "
                  + engine_finder.HOW_TO_GET, file=sys.stderr)
            basis = [dict(sp.Poly(_clear_denominators(b), *gens).terms())
                     for b in _run_sympy(polys, variables, parameters)]
            basis = [{tuple(m): int(c) for m, c in d.items()} for d in basis]
            log(f"Gröbner basis (sympy): {len(basis)} polynomials in {time.perf_counter() - started:.2f} s")
        return json.dumps({"gens": [str(g) for g in gens],
                           "polys": [[[list(m), str(c)] for m, c in d.items()] for d in basis]})

    with _long_integers():
        text, path, hit = disk_cache(CACHE_FORMAT + "\n" + key + "\n" + script, compute, use_cache)
        if hit:
            log(f"Gröbner basis from cache ({path.name[:12]})")
        data = json.loads(text)
        return [poly_from_terms({tuple(m): sp.ZZ(int(c)) for m, c in terms}, gens, sp.ZZ)
                for terms in data["polys"]]


def poly_from_terms(terms: dict, gens, domain) -> sp.Poly:
    """``sp.Poly.from_dict(terms, *gens, domain=domain)`` for coefficients
    that are ``domain``'s elements already: the same Poly (the dense
    representation from the same dict), without converting each coefficient
    through the domain, whose test of every one against nan and infinity
    was most of the time of reading a large basis and of extracting its
    sequence (the Stephenson six-bar's: ~20,000 coefficients)."""
    from sympy.polys.polyclasses import DMP
    return sp.Poly.new(DMP.from_dict(terms, len(gens) - 1, domain), *gens)


def parse_singular_poly(text: str, index: dict) -> dict:
    """{exponent tuple: int} of a polynomial as Singular prints it after
    cleardenom: terms joined by + and -, each a product (by *) of an
    integer, a parenthesized polynomial (a coefficient in the parameters,
    read recursively) and powers name^k of the ring variables and
    parameters (``index``: name -> position in the exponent tuple)."""
    n = len(index)
    out: dict = {}
    for sign, term in _split_terms(text):
        coeff = sign
        exps = [0] * n
        poly = None
        for f in _split_factors(term):
            if f[0] == "(":
                inner = parse_singular_poly(f[1:-1], index)
                poly = inner if poly is None else _mul(poly, inner)
            elif f[0].isdigit():
                coeff *= int(f)
            else:
                name, _, e = f.partition("^")
                exps[index[name]] += int(e) if e else 1
        base = tuple(exps)
        if poly is None:
            out[base] = out.get(base, 0) + coeff
        else:
            for m, c in poly.items():
                key = tuple(a + b for a, b in zip(m, base))
                out[key] = out.get(key, 0) + coeff * c
    return {m: c for m, c in out.items() if c != 0}


def _split_terms(text):
    """(sign, term) at the top level of parentheses."""
    terms, depth, start, sign = [], 0, 0, 1
    text = text.strip()
    i = 0
    if text.startswith("-"):
        sign, start, i = -1, 1, 1
    elif text.startswith("+"):
        start, i = 1, 1
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and ch in "+-" and i > start and text[i - 1] != "^":
            terms.append((sign, text[start:i]))
            sign, start = (1 if ch == "+" else -1), i + 1
        i += 1
    terms.append((sign, text[start:]))
    return terms


def _split_factors(term):
    out, depth, start = [], 0, 0
    for i, ch in enumerate(term):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "*" and depth == 0:
            out.append(term[start:i])
            start = i + 1
    out.append(term[start:])
    return [f for f in out if f]


def _mul(a, b):
    out = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = tuple(x + y for x, y in zip(ma, mb))
            out[m] = out.get(m, 0) + ca * cb
    return out


def run_singular(script: str, cpu_limit: float | None = None) -> str:
    """Run a Singular script (quiet, no init file) and return its output.
    Every failure is a ``GroebnerError`` whose message is one line naming
    the cause (the raw output stays in its ``output`` attribute):
    ``GroebnerLimit`` when it used up ``cpu_limit`` seconds of CPU time
    (default ``SINGULAR_CPU_LIMIT``); Singular missing or not runnable; a
    non-zero exit status (out of memory, killed); an error Singular reports
    (it exits 0 after one, so its "? " lines are looked for).  Shared by the
    triangularization and the assembly."""
    found = singular()
    if found is None:
        raise GroebnerError(f"Singular is required here and was not found; {engine_finder.HOW_TO_GET}")
    with tempfile.NamedTemporaryFile("w", suffix=".sing", delete=False) as f:
        f.write(script)
        path = f.name
    cpu_limit = SINGULAR_CPU_LIMIT if cpu_limit is None else cpu_limit

    def limit_cpu():
        # in the child, before exec: the kernel sends SIGXCPU at the soft
        # limit (Singular does not catch it) and SIGKILL at the hard one
        seconds = int(math.ceil(cpu_limit))
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
    try:
        proc = subprocess.run([found.path, "-q", "--no-rc", path], capture_output=True, text=True,
                              errors="replace", preexec_fn=limit_cpu)
    except OSError as e:
        raise GroebnerError(f"Singular could not be run ({e.strerror or e})") from None
    finally:
        os.unlink(path)
    output = proc.stdout + proc.stderr
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise GroebnerLimit(f"Singular used up its safety limit of {cpu_limit:g} s of CPU time", output)
    if proc.returncode != 0:
        why = "killed by signal %d" % -proc.returncode if proc.returncode < 0 else \
            f"exited with status {proc.returncode}"
        raise GroebnerError(f"Singular {why}" + _first_line(proc.stderr or proc.stdout), output)
    reported = [line.strip()[2:] for line in proc.stdout.splitlines() if line.lstrip().startswith("? ")]
    if reported:
        raise GroebnerError(f"Singular reported an error: {reported[0]}", output)
    return proc.stdout


def _first_line(text: str) -> str:
    """': <the first non-empty line of text>' (shortened), or ''."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return f": {line[:200]}" if line else ""


def _run_sympy(polys, variables, parameters):
    domain = sp.QQ.frac_field(*parameters) if parameters else sp.QQ
    G = sp.groebner([sp.expand(p) for p in polys], *variables, order="lex", domain=domain)
    return list(G.exprs)


def _clear_denominators(expr):
    num, _ = sp.fraction(sp.together(expr))
    return sp.expand(num)
