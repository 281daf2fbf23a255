"""What a warm rebuild after a start change runs faster must give the same
results: the sweep's solves and condition numbers (workspace.solve, cond),
the Gröbner Polys built from integers (groebner.poly_from_terms), lambdify's
numpy namespace (derive/lambdify_numpy.py), and what is no longer imported
(fmigen/mechanics.py's sympy.physics, no scipy nor importlib.metadata for a four-bar)."""
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from fmigen.derive.workspace import cond, solve
from fmigen.kinematics.groebner import poly_from_terms

ROOT = Path(__file__).resolve().parent.parent


def test_solve_and_cond_are_numpys_to_the_bit():
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 4, 6, 9):
        for scale in (1.0, 1e-9, 1e9):
            for _ in range(50):
                a = rng.normal(size=(n, n)) * scale
                b = rng.normal(size=n)
                assert solve(a, b).tobytes() == np.linalg.solve(a, b).tobytes()
                assert cond(a) == float(np.linalg.cond(a))
    # a strided view (a column selection), as the sweep passes Φ_q[:, dep]
    J = rng.normal(size=(3, 5))
    assert solve(J[:, [0, 2, 4]], J[:, 1]).tobytes() == np.linalg.solve(J[:, [0, 2, 4]], J[:, 1]).tobytes()
    assert cond(J[:, ::2][:, :3]) == float(np.linalg.cond(J[:, ::2][:, :3]))


def test_singular_and_nan_matrices_behave_as_numpys():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(np.linalg.LinAlgError):
        solve(np.zeros((2, 2)), np.ones(2))
    assert cond(singular) == float(np.linalg.cond(singular))
    assert cond(np.zeros((2, 2))) == float(np.linalg.cond(np.zeros((2, 2)))) == float("inf")
    nan = np.array([[np.nan, 1.0], [0.0, 1.0]])
    for f in (np.linalg.cond, cond):
        with pytest.raises(np.linalg.LinAlgError, match="SVD did not converge"):
            f(nan)
    # integer input, a matrix of matrices: the public functions, as before
    assert solve(np.eye(2, dtype=int), np.ones(2)).tobytes() == np.linalg.solve(np.eye(2, dtype=int), np.ones(2)).tobytes()


def test_polys_from_integer_terms_are_from_dicts():
    x, y, z = gens = sp.symbols("x y z")
    rng = np.random.default_rng(7)
    for _ in range(30):
        terms = {tuple(int(e) for e in rng.integers(0, 5, 3)): int(c) * 10**25 + int(d)
                 for c, d in rng.integers(-10**5, 10**5, (8, 2))}
        want = sp.Poly.from_dict({m: sp.Integer(c) for m, c in terms.items()}, *gens, domain=sp.ZZ)
        got = poly_from_terms({m: sp.ZZ(c) for m, c in terms.items()}, gens, sp.ZZ)
        assert got == want and got.rep == want.rep and got.gens == want.gens and repr(got) == repr(want)
    assert poly_from_terms({}, gens, sp.ZZ) == sp.Poly.from_dict({}, *gens, domain=sp.ZZ)


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_lambdify_namespace_is_sympys_without_numpys_lazy_submodules():
    result = json.loads(_run("""
import importlib, json, sys, types
import numpy
from fmigen.derive import lambdify_numpy
L = importlib.import_module("sympy.utilities.lambdify")
lambdify_numpy.prepare()
ours = dict(L.NUMPY)
lazy_loaded = "numpy.f2py" in sys.modules or "numpy.testing" in sys.modules
ref = dict(L.NUMPY_DEFAULT)
exec(L.MODULES["numpy"][3][0], {}, ref)
for a, b in L.NUMPY_TRANSLATIONS.items():
    ref[a] = ref[b]
ref.setdefault("Abs", abs)
print(json.dumps({"lazy": lazy_loaded, "missing_not_modules": sorted(k for k in set(ref) - set(ours)
                  if not isinstance(ref[k], types.ModuleType)), "extra": sorted(set(ours) - set(ref)),
                  "other": sorted(k for k in ours if k in ref and ours[k] is not ref[k])}))
"""))
    assert result == {"lazy": False, "missing_not_modules": [], "extra": [], "other": []}


def test_a_four_bars_start_and_partition_import_neither_units_scipy_nor_metadata():
    """What a start change of the four-bar runs before its sweep: the
    module (Mechanism), the start assembly, the DAE and the partition,
    whose scipy graph the first process here writes to the cache."""
    code = """
import json, sys
from fmigen.build.pipeline import prepare_mechanism
from fmigen.build import derived
from fmigen.derive.partition import choose_partition
mech = prepare_mechanism("fourbar")
units = "sympy.physics.units" in sys.modules
part = choose_partition(derived.dae_of(mech), derived.partition_graph)
print(json.dumps({"units": units, "scipy": "scipy" in sys.modules, "blocks": [b.unknowns for b in part.blocks],
                  "metadata": "importlib.metadata" in sys.modules}))
"""
    first, second = json.loads(_run(code)), json.loads(_run(code))
    # nor importlib.metadata (with its email parser), for the scipy version
    # that keys the graph
    assert first["units"] is False and second == {**first, "scipy": False, "metadata": False}
    # the cached graph's blocks are those of scipy's graph computed here
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.build import derived
    from fmigen.derive.partition import choose_partition
    import importlib.metadata
    import scipy
    version = derived._scipy_version_text()   # the graph's key: the installed scipy's version and revision
    assert f'version = "{importlib.metadata.version("scipy")}"' in version and scipy.version.git_revision in version
    assert second["blocks"] == [b.unknowns for b in choose_partition(derived.dae_of(prepare_mechanism("fourbar"))).blocks]
    import sympy.physics                                          # the package still works as sympy's
    assert sympy.physics.units.meter is not None and callable(sympy.physics.mgamma)


def test_a_star_import_of_sympy_physics_after_fmigen_gets_the_real_package():
    names = json.loads(_run("""
import json
import fmigen.mechanics
from sympy.physics import *
print(json.dumps(sorted(k for k in ("mgamma", "msigma", "hydrogen", "qapply") if k in globals())))
"""))
    import sympy.physics
    assert names == sorted(k for k in ("mgamma", "msigma", "hydrogen", "qapply") if k in sympy.physics.__all__)
    assert "mgamma" in names


def _nearest_root_one_by_one(co, target):
    """sweep_measures' cover evaluation before ``nearest_roots``: numpy.roots
    and min, point by point."""
    x = np.empty(len(target), dtype=complex)
    for j in range(len(target)):
        cj = [c_[j] for c_ in co]
        rts = np.roots(cj) if np.all(np.isfinite(cj)) else [np.nan]
        x[j] = min(rts, key=lambda z: abs(z - target[j]))
    return x


def test_nearest_roots_are_numpy_roots_point_by_point_to_the_bit():
    from fmigen.kinematics.sweep_measures import nearest_roots
    rng = np.random.default_rng(11)
    for degree in (3, 4, 6, 8):
        for scale in (1.0, 1e-12, 1e12):
            n = 300
            co = [rng.normal(size=n) * scale + 0j for _ in range(degree + 1)]
            # what numpy.roots trims or refuses: zero leading and trailing
            # coefficients, a linear polynomial, NaN and inf, a complex coefficient
            co[0][:5] = 0
            co[-1][5:10] = 0
            co[0][10:12] = co[1][10:12] = 0
            for c_ in co[:-2]:
                c_[12] = 0
            co[2][13], co[1][14], co[0][15] = np.nan, np.inf, np.nan
            co[3][16] = 1e-300j
            co[0][17] = 1e-9 * scale               # a leading coefficient near zero
            target = rng.normal(size=n)
            target[18] = np.nan
            with np.errstate(all="ignore"):
                want = _nearest_root_one_by_one(co, target)
                got = nearest_roots(co, target)
            assert got.tobytes() == want.tobytes()


def test_nearest_roots_raise_as_numpy_roots_where_it_cannot_answer():
    """numpy.roots raises where −p[1:]/p[0] overflows to inf (eigvals
    refuses it), and min where a polynomial is zero (no roots); the batched
    path leaves such a point to them, so the same errors."""
    from fmigen.kinematics.sweep_measures import nearest_roots
    overflow = [np.array([1e-300, 1.0]), np.array([1e300, 1.0]), np.array([1.0, 2.0]), np.array([1.0, 3.0])]
    zero = [np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 2.0]), np.array([0.0, 3.0])]
    for co, error in ((overflow, np.linalg.LinAlgError), (zero, ValueError)):
        for f in (_nearest_root_one_by_one, nearest_roots):
            with np.errstate(all="ignore"), pytest.raises(error):
                f(co, np.zeros(2))


def test_a_build_command_line_imports_neither_the_tools_nor_fmpy():
    """``fmigen build``'s parser leaves out the tools' verbs (their modules
    import the benchmark harness, the sweep, the bundle and the doctor), and
    packaging finds fmpy's FMI 3 headers without importing fmpy, and the
    pipeline and the derived-model cache (codegen's ``finish``) import none
    of the C generators, which a body from the cache does not run; the
    parsers a verb gets are those of the full command line."""
    result = json.loads(_run("""
import json, sys
from fmigen import cli
parser = cli.build_parser("build")
from fmigen.fmi import fmu
heads = str(fmu.fmi_header_dir("3"))
from fmigen.build import derived, pipeline
loaded = sorted(m for m in ("fmpy", "fmigen.tools.bench", "fmigen.tools.sweep", "fmigen.verify.bundle",
                            "fmigen.tools.doctor", "fmigen.generate.codegen_embedding",
                            "fmigen.generate.codegen_kinematics", "fmigen.generate.codegen_lanes",
                            "fmigen.generate.chunking", "fmigen.generate.statements") if m in sys.modules)
sub = next(a for a in parser._actions if a.dest == "command")
full = next(a for a in cli.build_parser()._actions if a.dest == "command")
print(json.dumps({"loaded": loaded, "heads": heads, "verbs": sorted(sub.choices), "all": sorted(full.choices),
                  "same_build": sub.choices["build"].format_help() == full.choices["build"].format_help()}))
"""))
    import fmpy
    assert result["loaded"] == []
    assert result["heads"] == str(Path(fmpy.__file__).parent / "c-code")
    assert result["same_build"] and "build" in result["verbs"]
    assert set(result["all"]) - set(result["verbs"]) == {"bench", "sweep", "bundle", "doctor"}
    from fmigen import cli
    for verb in ("bench", "doctor", "nonsense", None):   # a tool's verb, or none: the full parser
        parser = cli.build_parser(verb)
        assert sorted(next(a for a in parser._actions if a.dest == "command").choices) == result["all"]


def test_a_joint_systems_conversion_loads_none_of_numpys_lazy_submodules():
    """The closure rows' lambdified system is a joint system's first numpy
    lambdify (before the DAE's): it takes the namespace
    ``lambdify_numpy.prepare`` makes, not sympy's star import of numpy,
    which loads ``numpy.testing``, ``numpy.f2py`` and the rest."""
    result = json.loads(_run("""
import importlib, json, sys
from fmigen.build import derived
m = derived.mechanism_of(importlib.import_module("mechanisms.fourbar_joints").build(), use_cache=False)
print(json.dumps({"lazy": sorted(x for x in ("numpy.testing", "numpy.f2py") if x in sys.modules),
                  "dof": m.dof}))
"""))
    assert result == {"lazy": [], "dof": 1}


def test_exact_evaluation_of_sequence_coefficients_is_the_exact_value():
    """``sequences.poly_value`` and ``poly_values_scaled`` (the start's
    branch choice) from the terms' power tables: the exact value of the
    polynomial at the Floats, rounded once, against Fractions; zero,
    negative, tiny and huge values, constant and zero polynomials."""
    import fractions
    from fmigen.kinematics import sequences
    rng = np.random.default_rng(3)
    gens = sp.symbols("K1 K2 x", real=True)
    values = [0.0, -0.0, 1.0, -1.5, 0.1, 1e-300, -3e250, 2.0**-60, 7.25, -1e-5]
    for trial in range(40):
        terms = {tuple(int(e) for e in rng.integers(0, 4, 3)): int(c) * 10**int(rng.integers(0, 30)) + int(d)
                 for c, d in rng.integers(-10**6, 10**6, (int(rng.integers(1, 12)), 2))}
        if trial == 0:
            terms = {(0, 0, 0): 12345678901234567890123}
        if trial == 1:
            terms = {}
        P = sp.Poly.from_dict({m: sp.Integer(c) for m, c in terms.items()}, *gens, domain=sp.ZZ)
        env = {g: sp.Float(float(rng.choice(values)) if trial % 2 else float(rng.uniform(-3, 3))) for g in gens}
        exact = sum((fractions.Fraction(c) * math.prod(fractions.Fraction(float(env[g])) ** e
                                                       for g, e in zip(gens, m))
                     for m, c in terms.items()), fractions.Fraction(0))
        try:
            want = float(exact)
        except OverflowError:
            want = None
        if want is not None:
            assert sequences.poly_value(P, env) == want
        Q = sp.Poly.from_dict({(0, 1, 0): 3, (2, 0, 1): -7}, *gens, domain=sp.ZZ)
        x0, x1, x2 = (fractions.Fraction(float(env[g])) for g in gens)
        q_exact = 3 * x1 - 7 * x0 ** 2 * x2
        # both divided by the one power of two 2^top that brings the larger
        # below 1 (top: ⌊log2 |v|⌋ + 1 of the larger), each rounded once
        top = max((_floor_log2(abs(v)) + 1 for v in (exact, q_exact) if v), default=0)
        assert sequences.poly_values_scaled([P, Q], env) == [float(exact / fractions.Fraction(2) ** top),
                                                             float(q_exact / fractions.Fraction(2) ** top)]


def _floor_log2(v) -> int:
    """⌊log2 v⌋ of a positive Fraction."""
    import fractions
    k = v.numerator.bit_length() - v.denominator.bit_length()
    return k - 1 if fractions.Fraction(2) ** k > v else k


def test_a_coefficient_without_its_scale_is_the_same_value():
    """``poly_evaluator(..., scale=False)``: the value to the bit, no scale
    (the cover evaluates a step's other coefficients so), the terms read
    once per Poly."""
    from fmigen.kinematics import sequences
    rng = np.random.default_rng(5)
    gens = sp.symbols("K1 K2 x", real=True)
    terms = {tuple(int(e) for e in rng.integers(0, 5, 3)): int(c) for c in rng.integers(-10**9, 10**9, 30)}
    P = sp.Poly.from_dict({m: sp.Integer(c) for m, c in terms.items()}, *gens, domain=sp.ZZ)
    f = sequences.poly_evaluator(P, list(gens))
    vals = [rng.uniform(-2, 2, 50) for _ in gens]
    value, scale = f(*vals)
    plain, none = f(*vals, scale=False)
    assert none is None and value.tobytes() == plain.tobytes()
    # what the evaluator computed before: every monomial from ones, factor by factor
    pos, E, coeffs = sequences._exponents(P, list(gens))
    mono = np.ones((len(coeffs), 50))
    for j, k in enumerate(pos):
        mono *= np.stack([vals[k] ** e for e in range(E[:, j].max() + 1)])[E[:, j]]
    c = np.array([float(x) for x in coeffs])
    assert value.tobytes() == (c @ mono).tobytes() and scale.tobytes() == (np.abs(c) @ np.abs(mono)).tobytes()
    assert sequences._terms_of(P) is sequences._terms_of(P)
