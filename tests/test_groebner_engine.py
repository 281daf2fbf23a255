"""The Gröbner engine's input and its failures: Singular gets integer
polynomials it cannot misread, and a failing engine costs a block its
Gröbner sequence (Newton instead, one warning line) or is one clear error,
never a traceback or the engine's raw output."""
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

from fmigen.kinematics import assemble as asm
from fmigen.kinematics.groebner import GroebnerError, groebner_lex, run_singular, singular_poly
from fmigen.build.pipeline import compile_model, load_mechanism

pytestmark = pytest.mark.skipif(not __import__("shutil").which("Singular"), reason="Singular not installed")

ROOT = Path(__file__).resolve().parent.parent
c, s, K, L = sp.symbols("c s K L")


def monic_set(polys, variables, domain):
    """A reduced basis as a set of monic polynomials: Singular's (integer,
    denominators cleared) and sympy's (monic over the field) compare."""
    return {sp.Poly(p, *variables, domain=domain).monic().as_expr() for p in polys}


def test_rational_coefficient_after_a_power_matches_sympy():
    # the term: sympy prints it '169*K*c**2*s**2/10000', which
    # Singular read as s^(2/10000) ("`poly` ^ `number` failed")
    polys = [sp.Rational(169, 10000) * K * c**2 * s**2 + c - K, c**2 + s**2 - 1]
    basis = groebner_lex(polys, [c, s], [K], use_cache=False)
    field = sp.QQ.frac_field(K)
    reference = sp.groebner(polys, c, s, order="lex", domain=field)
    assert monic_set([b.as_expr() for b in basis], [c, s], field) == monic_set(reference.exprs, [c, s], field)
    assert len(basis) == 2


def test_rational_function_coefficients_are_cleared():
    # a coefficient with a parameter in its denominator (a unit of Q(K, L))
    polys = [c**2 / K + s**2 * L / 3 - 1, c - L * s / (K + 1)]
    basis = groebner_lex(polys, [c, s], [K, L], use_cache=False)
    field = sp.QQ.frac_field(K, L)
    reference = sp.groebner(polys, c, s, order="lex", domain=field)
    assert monic_set([b.as_expr() for b in basis], [c, s], field) == monic_set(reference.exprs, [c, s], field)


def test_singular_poly_is_integer_and_unambiguous():
    text = singular_poly(sp.Rational(169, 10000) * K * c**2 * s**2 - sp.Rational(3, 7) * c + 2, [c, s], [K])
    assert "/" not in text and "**" not in text
    # scaled by lcm(10000, 7) = 70000
    assert text == "1183*c^2*s^2*K - 30000*c + 140000"
    with pytest.raises(GroebnerError, match=r"ring variable in a denominator"):
        singular_poly(1 / c + s, [c, s])
    with pytest.raises(GroebnerError, match=r"symbols \['L'\]"):
        singular_poly(c + L, [c, s], [K])


def test_assembly_basis_with_rational_coefficients_matches_sympy():
    # the assembly's grevlex basis (its own script) reads the same input
    x, y = sp.symbols("x y")
    polys = [sp.Rational(1, 3) * x**2 * y**2 + y - 1, x**2 + y**2 - sp.Rational(5, 4)]
    basis, vdim = asm.groebner_basis(polys, [x, y], use_cache=False)
    ours = {sp.Poly.from_dict({e: sp.Rational(v.numerator, v.denominator) for e, v in d.items()}, x, y,
                              domain=sp.QQ).monic().as_expr() for d in basis}
    reference = sp.groebner(polys, x, y, order="grevlex")
    assert ours == {sp.Poly(p, x, y, domain=sp.QQ).monic().as_expr() for p in reference.exprs}
    assert vdim == 8


def test_a_mechanism_with_such_a_term_builds_its_groebner_sequence():
    # the four-bar's loop_x plus 0.0169·cos²α·sin²φ: its block's ideal has
    # the term 169*c_alpha^2*s_phi^2/10000 (on main: a traceback from Singular)
    from sympy import cos, sin
    m = load_mechanism("fourbar")
    theta, alpha, phi = m.q
    loop_x = next(c for c in m.constraints if c.name == "loop_x")
    loop_x.expr = loop_x.expr + 0.0169 * cos(alpha)**2 * sin(phi)**2
    compiled = compile_model(m, use_cache=False)
    [solved_block] = compiled.triangular.blocks
    assert solved_block.method == "groebner" and not solved_block.engine_failed
    st = compiled.triangular.start
    import math
    ca, sp_ = math.cos(st["alpha"]), math.sin(st["phi"])
    assert abs(math.cos(st["theta"]) + 4 * ca - 3 - 2.5 * math.cos(st["phi"]) + 0.0169 * ca**2 * sp_**2) < 1e-14
    assert abs(math.sin(st["theta"]) + 4 * math.sin(st["alpha"]) - 2.5 * sp_) < 1e-14


# --- a failing engine --------------------------------------------------------

def fake_singular(tmp_path, body):
    """A directory holding an executable ``Singular`` that runs ``body``
    (shell), to put first on PATH: the real failure path, not a mock of it."""
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "Singular"
    exe.write_text("#!/bin/sh\n" + body + "\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return d


@pytest.fixture
def broken_singular(tmp_path, monkeypatch):
    d = fake_singular(tmp_path, 'for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do echo "   ? noise line $i"; done\n'
                                'echo "error: no more memory" >&2\nexit 3')
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FMIGEN_CACHE", str(tmp_path / "cache"))
    return d


def test_engine_exit_status_is_one_line_error(broken_singular):
    with pytest.raises(GroebnerError) as info:
        groebner_lex([c**2 + s**2 - 1, c - s], [c, s], use_cache=False)
    assert str(info.value) == "Singular exited with status 3: error: no more memory"
    assert "noise line 15" in info.value.output      # kept for a developer, not in the message


def test_engine_reported_error_is_one_line(tmp_path, monkeypatch):
    d = fake_singular(tmp_path, 'echo "   ? \\`poly\\` ^ \\`number\\` failed"; echo "   ? expected \\`poly\\` ^ \\`int\\`"')
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GroebnerError) as info:
        run_singular("quit;\n")
    assert str(info.value) == "Singular reported an error: `poly` ^ `number` failed"


def test_engine_that_cannot_run(tmp_path, monkeypatch):
    d = tmp_path / "bin"
    d.mkdir()
    exe = d / "Singular"
    exe.write_bytes(b"\x7fELF garbage")           # executable, but not a program
    exe.chmod(0o755)
    # only it on PATH: the exec of the next Singular on the path would succeed
    monkeypatch.setenv("PATH", str(d))
    with pytest.raises(GroebnerError, match=r"^Singular at .*/bin/Singular could not be run \(Exec format error\)$"):
        run_singular("quit;\n")


def test_failing_engine_falls_back_to_newton_per_block(broken_singular):
    lines = []
    compiled = compile_model(load_mechanism("fourbar", use_cache=False), use_cache=False, log=lines.append)
    blocks = compiled.triangular.blocks
    assert [solved_block.method for solved_block in blocks] == ["newton"] and blocks[0].engine_failed
    warnings = [ln for ln in lines if "warning" in ln]
    assert warnings == ["      warning: block {alpha, phi}: the Gröbner engine failed: Singular exited with "
                        "status 3: error: no more memory; solving it by Newton iteration instead"]
    assert not any("noise" in ln for ln in lines)
    assert compiled.engine_failed
    # and the Newton kinematics solves the loop: the start closes
    start = compiled.triangular.start
    import math
    ax, ay = math.cos(start["theta"]), math.sin(start["theta"])
    assert abs(ax + 4 * math.cos(start["alpha"]) - 3 - 2.5 * math.cos(start["phi"])) < 1e-12
    assert abs(ay + 4 * math.sin(start["alpha"]) - 2.5 * math.sin(start["phi"])) < 1e-12


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "fmigen.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env)


def test_failing_engine_on_the_command_line(broken_singular):
    # check: the assembly check (which has a fallback) and the block, one
    # line each; assemble (no fallback): one error line, exit status 2
    res = run_cli("check", "fourbar", "--no-cache")
    assert "Traceback" not in res.stderr and "noise" not in res.stderr + res.stdout
    engine = [ln for ln in res.stderr.splitlines() if "no more memory" in ln]
    assert len(engine) == 2, res.stderr
    assert any(ln.startswith("assembly check skipped: Singular exited with status 3") for ln in engine)
    res = run_cli("assemble", "fourbar", "--no-cache")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip() == "fmigen: error: Singular exited with status 3: error: no more memory"
