"""The embedding's per-block code in vector lanes (fmigen/generate/codegen_slp.py):
the Stewart platform's legs four at a time in fmigen_embedded_velocities,
_prepare and _finish, checked against the same generator's code without
the pass (every leg by its own scalar statements) and between the vector
build and the build for a compiler without vector types."""
import re
import subprocess

import pytest

import fmigen.generate.codegen_slp as slp
from fmigen.fmi.fmu import RUNTIME_DIR
from fmigen.generate import codegen

from conftest import compiled_model

#: the embedding at random states (argv[1] of them; argv[2]: a model index
#: whose angle gets cos = 0, argv[3]: a coordinate set to NaN, -1 for
#: none): the return codes of velocities, prepare and finish, v_d and q̈_i
#: in hexadecimal floating point (exact)
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.c"
static double r1(void) { return (double)rand() / RAND_MAX - 0.5; }
int main(int argc, char **argv)
{
    (void)argc;
    srand(11);
    const int n = atoi(argv[1]), flat = atoi(argv[2]), bad = atoi(argv[3]);
    for (int s = 0; s < n; s++) {
        double q[NQ], v[NQ], trig[2 * NQ], work[FMIGEN_NWORK + 1], qdd[NI + 1], u[NU + 1];
        for (int k = 0; k < NQ; k++) q[k] = fmigen_q_start[k] + 0.2 * r1();
        for (int k = 0; k < NQ; k++) v[k] = 2.0 * r1();
        for (int k = 0; k < NU; k++) u[k] = 100.0 * r1();
        if (bad >= 0) q[bad] = NAN;
        for (int k = 0; k < NQ; k++) { trig[2 * k] = sin(q[k]); trig[2 * k + 1] = cos(q[k]); }
        if (flat >= 0) { trig[2 * flat] = 1.0; trig[2 * flat + 1] = 0.0; }
        const int a = fmigen_embedded_velocities(0.0, q, v, fmigen_p_default, u, trig);
        const int b = fmigen_embedded_prepare(0.0, q, v, fmigen_p_default, trig, work);
        const int c = b ? -1 : fmigen_embedded_finish(0.0, q, v, fmigen_p_default, u, trig, work, qdd);
        printf("%d %d %d", a, b, c);
        for (int k = 0; k < NQ; k++) printf(" %a", v[k]);
        for (int k = 0; k < NI; k++) printf(" %a", b ? 0.0 : qdd[k]);
        printf("\n");
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def models():
    """Stewart's model.c with the pass and without it (the generator's
    scalar statements as they were)."""
    # the model as fmigen build generates it (its C from the derived-model
    # cache when a build of the Stewart platform in the suite recorded it),
    # and generated again from the same derivation with the pass off
    compiled = compiled_model("stewart")
    packed = compiled.generated
    original = slp.vectorize
    slp.vectorize = lambda body, blocks, slots=frozenset(): None
    try:
        plain = codegen.generate(compiled.embedding, compiled.triangular, compiled.mechanism.name,
                                 dynamics=compiled.dynamics)
    finally:
        slp.vectorize = original
    return packed, plain


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """``run(gen, args, defines=(), flags=(), strict=True)``: the driver on
    ``gen``'s model.c, run with ``args``.  Each build (model, defines, flags)
    is compiled once for the module: the states, the flattened angle and the
    NaN are the driver's arguments, not part of its build.  With ``strict``,
    compiled without a warning (the pass drops what nothing reads; the
    generator's own code leaves the ±1 entries of Φ_i unread)."""
    built = {}

    def driver(gen, defines, flags, strict):
        key = (id(gen), tuple(defines), tuple(flags), strict)
        if key not in built:
            workdir = tmp_path_factory.mktemp("driver")
            (workdir / "model.c").write_text(gen.whole_c)
            (workdir / "model_config.h").write_text(gen.config_h)
            (workdir / "driver.c").write_text(DRIVER)
            exe = workdir / "driver"
            warnings = ["-Wall", "-Wextra", "-Werror"] if strict else []
            subprocess.run(["gcc", "-O2", "-std=c99", "-fno-math-errno", *warnings, *flags,
                            *[f"-D{d}" for d in defines], f"-I{workdir}", f"-I{RUNTIME_DIR}",
                            str(workdir / "driver.c"), str(RUNTIME_DIR / "fmigen_core.c"),
                            str(RUNTIME_DIR / "fmigen_augmented.c"), "-o", str(exe), "-lm"],
                           check=True, capture_output=True, text=True)
            # the model object stays alive (the module's fixture holds it),
            # so its id is not reused for another while this key exists
            built[key] = (gen, exe)
        return built[key][1]

    def run_driver(gen, args, defines=(), flags=(), strict=True):
        exe = driver(gen, defines, flags, strict)
        out = subprocess.run([str(exe), *map(str, args)], check=True, capture_output=True, text=True).stdout
        return [[int(x) for x in ln.split()[:3]] + [float.fromhex(x) for x in ln.split()[3:]]
                for ln in out.strip().split("\n")]

    return run_driver


def test_the_legs_run_in_lanes(models):
    """Most of the per-leg statements became vector statements, in the three
    functions the pass reads, and the fallback is there."""
    packed, plain = models
    for fn in ("fmigen_embedded_velocities", "fmigen_embedded_prepare", "fmigen_embedded_finish"):
        assert "fmigen_v4d" not in plain.model_c.split(f"int {fn}(")[1].split("\n}\n")[0]
        body = packed.model_c.split(f"int {fn}(")[1].split("\n}\n")[0]
        vec, scalar = body.split("#else")
        assert vec.count("const fmigen_v4d") > 10
        assert "const fmigen_v4d" not in scalar
        # the checks of the blocks' determinants, as masks
        assert ("fmigen_lane_bits" in vec) == (fn != "fmigen_embedded_finish")


@pytest.mark.parametrize("flags", [[], ["-mavx"]], ids=["sse2", "avx"])
def test_lanes_and_their_scalar_build_give_the_same_bits(run, models, flags):
    """500 random states: v_d and q̈_i of the vector build and of the build
    without vector types, bit for bit (the same operations lane by lane);
    and against the generator's code without the pass, the same to
    rounding: the lanes evaluate some sums in another order."""
    packed, plain = models
    a = run(packed, [500, -1, -1], flags=flags)
    b = run(packed, [500, -1, -1], defines=["FMIGEN_VECTORS=0"])
    c = run(plain, [500, -1, -1], strict=False)
    assert a == b
    assert all(row[:3] == [0, 0, 0] for row in a)
    worst = 0.0
    for x, y in zip(a, c):
        assert x[:3] == y[:3]
        scale = max(abs(v) for v in y[3:])
        worst = max(worst, max(abs(p - q) for p, q in zip(x[3:], y[3:])) / scale)
    assert worst < 1e-14, worst   # measured: 9.7e-16


@pytest.mark.parametrize("leg", range(6))
def test_a_singular_leg_is_refused_in_every_lane(run, models, leg):
    """A leg whose Jacobian block is singular (cos β = 0: the block's
    determinant is zero) makes velocities and prepare return 1, whichever
    lane it is in (legs 5 and 6 share a chunk with two repeated lanes); a
    NaN in a leg's coordinate too, as the scalar code does."""
    packed, plain = models
    beta = 6 + 3 * leg + 1
    for args in ([20, beta, -1], [20, -1, beta + 1]):
        a = run(packed, args)
        b = run(packed, args, defines=["FMIGEN_VECTORS=0"])
        c = run(plain, args, strict=False)
        assert [r[:3] for r in a] == [r[:3] for r in b] == [r[:3] for r in c]
        assert all(r[1] == 1 for r in a), [r[:3] for r in a]


#: two blocks of one coordinate each (q[2], q[3]), as the generator would
#: emit them, with what sympy's CSE does differently from block to block:
#: block 0 names a product in a temporary that block 1 computes in place,
#: the terms of a sum come in another order, constants differ, a negation
#: sits on another factor; then a check, stores and a sum over both blocks
SYNTHETIC = """    (void)t; (void)q; (void)v; (void)p; (void)trig; (void)work;
    const double w1 = trig[4]*q[2];
    const double J_1 = -w1;
    const double J_2 = -trig[6]*q[3];
    const double d_1 = J_1*q[2] - 3*trig[5] + p[0];
    const double d_2 = p[0] + q[3]*J_2 - 5*trig[7];
    if (!(fabs(J_1) > 1e-13*fmigen_max(fabs(d_1), fabs(q[2])))) return 1;
    if (!(fabs(J_2) > 1e-13*fmigen_max(fabs(d_2), fabs(q[3])))) return 1;
    v[2] = d_1/J_1;
    v[3] = d_2/J_2;
    const double m = q[0] + d_1*J_1 - (-2.0)*v[2]*w1 + d_2*J_2 + v[3]*(2.0*trig[6]*q[3]);
    work[0] = m;
    const double w9 = p[0]*trig[0];
    const double g_1 = w9*p[0] + q[2]*J_1 - 3*w9;
    const double g_2 = J_2*q[3] + trig[1]*trig[1];
    work[1] = g_1*g_2;
    return 0;"""
SYNTHETIC_TAGS = {"J_1": (0, ("J", 0)), "J_2": (1, ("J", 0)), "d_1": (0, ("d", 0)), "d_2": (1, ("d", 0)),
                  "if (!(fabs(J_1) > 1e-13*fmigen_max(fabs(d_1), fabs(q[2])))) return 1;": (0, ("c", 0)),
                  "if (!(fabs(J_2) > 1e-13*fmigen_max(fabs(d_2), fabs(q[3])))) return 1;": (1, ("c", 0)),
                  "v[2]": (0, ("s", 0)), "v[3]": (1, ("s", 0)), "g_1": (0, ("g", 0)), "g_2": (1, ("g", 0))}
SYNTHETIC_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmigen_runtime.h"
static int f(double t, const double *q, double *v, const double *p, const double *trig, double *work)
{
BODY
}
int main(void)
{
    srand(3);
    for (int s = 0; s < 2000; s++) {
        double q[4], v[4] = {0}, trig[8], p[1], work[2] = {0};
        for (int k = 0; k < 4; k++) q[k] = 4.0 * rand() / RAND_MAX - 2.0;
        for (int k = 0; k < 8; k++) trig[k] = 2.0 * rand() / RAND_MAX - 1.0;
        p[0] = rand() / (double)RAND_MAX;
        if (s % 97 == 5) q[2 + s % 2] = 0.0;      /* a block's check fails */
        if (s % 89 == 7) trig[4 + 2 * (s % 2)] = NAN;
        const int r = f(0.0, q, v, p, trig, work);
        printf("%d %a %a %a %a\n", r, v[2], v[3], work[0], work[1]);
    }
    return 0;
}
"""


def test_blocks_that_sympy_printed_differently_share_lanes(tmp_path, models):
    """The pass on a body written to have the differences the joint CSE
    leaves between blocks: it packs them (one vector statement per group,
    the check a mask, the sum over the blocks in lanes, the sums g whose
    terms without a block's own values differ from block to block as that
    value per block plus the rest in lanes), the vector build
    and the lane-by-lane build agree bit for bit, and both agree with the
    body as written to rounding, failed checks and NaN included."""
    packed_model, _ = models
    blocks = slp.Blocks(coords=[[2], [3]], tags=SYNTHETIC_TAGS, chunks=[(0, 1, 1, 1)])
    packed = slp.vectorize(SYNTHETIC, blocks)
    assert packed is not None
    vec = packed.split("#else")[0]
    assert "fmigen_lane_bits" in vec and "fmigen_hsum_4" in vec
    assert "const double J_1" not in vec and "const double d_2" not in vec and "const double g_2 " not in vec
    assert "const double g_1_rest" in vec
    failed = _same_as_written(tmp_path, packed_model, SYNTHETIC, packed)
    assert 20 < failed < 200


def _same_as_written(tmp_path, model, body, packed):
    """The synthetic driver on ``packed`` (the vector build and the lane by
    lane build) and on ``body`` as written: the same return codes, the
    builds the same bits, the values the same to rounding.  Returns how many
    states a check refused."""
    runs = []
    for name, text, defines in (("vec", packed, []), ("lanes", packed, ["-DFMIGEN_VECTORS=0"]),
                                ("plain", body, [])):
        d = tmp_path / name
        d.mkdir(parents=True)
        (d / "model_config.h").write_text(model.config_h)
        (d / "driver.c").write_text(SYNTHETIC_DRIVER.replace("BODY", text))
        subprocess.run(["gcc", "-O2", "-std=c99", "-fno-math-errno", "-mavx", *defines, f"-I{d}", f"-I{RUNTIME_DIR}",
                        str(d / "driver.c"), "-o", str(d / "driver"), "-lm"], check=True, capture_output=True)
        out = subprocess.run([str(d / "driver")], check=True, capture_output=True, text=True).stdout
        runs.append([ln.split() for ln in out.strip().split("\n")])
    vec_run, lane_run, plain_run = runs
    assert vec_run == lane_run
    failed = 0
    for a, b in zip(vec_run, plain_run):
        assert a[0] == b[0]
        failed += a[0] != "0"
        if a[0] == "0":
            x, y = [float.fromhex(z) for z in a[1:]], [float.fromhex(z) for z in b[1:]]
            assert all(abs(p - q) <= 1e-14 * max(1.0, abs(q)) for p, q in zip(x, y)), (x, y)
    return failed


def _synthetic(body):
    return slp.vectorize(body, slp.Blocks(coords=[[2], [3]], tags=SYNTHETIC_TAGS, chunks=[(0, 1, 1, 1)]))


def test_checks_pack_only_what_fails_alike(tmp_path, models):
    """A review's cases: checks whose blocks return different codes stay
    scalar (a mask cannot say which lane failed); a check reading a value
    that is the same in every lane (the vector macros need it as a vector)
    compiles and packs."""
    packed_model, _ = models
    check2 = "if (!(fabs(J_2) > 1e-13*fmigen_max(fabs(d_2), fabs(q[3])))) return 1;"
    codes = SYNTHETIC.replace(check2, check2.replace("return 1;", "return 3;"))
    tags = dict(SYNTHETIC_TAGS)
    tags[check2.replace("return 1;", "return 3;")] = tags.pop(check2)
    packed = slp.vectorize(codes, slp.Blocks(coords=[[2], [3]], tags=tags, chunks=[(0, 1, 1, 1)]))
    assert "fmigen_lane_bits" not in packed.split("#else")[0]
    assert _same_as_written(tmp_path / "codes", packed_model, codes, packed) > 20
    uniform = SYNTHETIC.replace("fabs(q[2])", "fabs(p[0])").replace("fabs(q[3])", "fabs(p[0])")
    tags = {k.replace("fabs(q[2])", "fabs(p[0])").replace("fabs(q[3])", "fabs(p[0])"): v
            for k, v in SYNTHETIC_TAGS.items()}
    packed = slp.vectorize(uniform, slp.Blocks(coords=[[2], [3]], tags=tags, chunks=[(0, 1, 1, 1)]))
    assert "fmigen_lane_bits" in packed.split("#else")[0]
    assert _same_as_written(tmp_path / "uniform", packed_model, uniform, packed) > 20


def test_what_the_pass_does_not_read_stays_as_it_was():
    """None (the function as generated) for a body that reads an element
    of v before it stores it (the pass places definitions where they are
    first needed, which could be after the store), a return before the end,
    a name the pass would make up, or a check that is no comparison; a
    sum of 1,200 terms is read without running out of stack."""
    assert _synthetic(SYNTHETIC) is not None
    early = SYNTHETIC.replace("    const double w1 =", "    const double old = v[3]*2.0;\n    const double w1 =")
    early = early.replace("    return 0;", "    work[1] = old;\n    return 0;")
    assert _synthetic(early) is None
    assert _synthetic(SYNTHETIC.replace("    work[0] = m;", "    return 0;\n    work[0] = m;")) is None
    assert _synthetic(SYNTHETIC.replace("w1", "lv1")) is None
    check = "if (!(fabs(J_1) > 1e-13*fmigen_max(fabs(d_1), fabs(q[2])))) return 1;"
    blocks = slp.Blocks(coords=[[2], [3]], tags={**SYNTHETIC_TAGS, "if (!(J_1)) return 1;": SYNTHETIC_TAGS[check]},
                        chunks=[(0, 1, 1, 1)])
    packed = slp.vectorize(SYNTHETIC.replace(check, "if (!(J_1)) return 1;"), blocks)
    vec = packed.split("#else")[0]
    assert "fmigen_lane_bits" not in vec and re.search(r"if \(!\(\w+(\[0\])?\)\) return 1;", vec)
    long_sum = " + ".join(f"{k}.0*q[0]" for k in range(1200))
    assert _synthetic(SYNTHETIC.replace("    work[0] = m;", f"    work[0] = m + {long_sum};")) is not None
