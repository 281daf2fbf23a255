"""The kinematics' lanes (fmigen/codegen_lanes.py): the Stewart platform's
six legs solved four at a time, with the scalar code's bits, and every
lane that fails left to its block's scalar code."""
import json
import subprocess

import pytest
import sympy as sp

from fmigen.bench import compile_harness, generate_sources
from fmigen.codegen_lanes import lane_classes
from fmigen.dae import build_dae
from fmigen.fmu import RUNTIME_DIR
from fmigen.partition import choose_partition
from fmigen.pipeline import load_mechanism
from fmigen.triangular import triangularize


@pytest.fixture(scope="module")
def stewart():
    mech = load_mechanism("stewart")
    gen = generate_sources(mech, ["groebner"])["groebner"][0]
    dae = build_dae(mech)
    tri = triangularize(dae, choose_partition(dae))
    return gen, dae, tri


def test_the_legs_form_two_classes_by_their_coefficients(stewart):
    """Legs 1-4 have the same monomials in every step; legs 5 and 6 (base
    points on x = 0) lack the terms of the base's x and form a class of their
    own (two lanes of four)."""
    gen, dae, tri = stewart
    hoisted = {K for tb in tri.blocks for K in tb.abstractions}
    classes = lane_classes(tri, hoisted, [1.0] * dae.n)
    assert [c.members for c in classes] == [[0, 1, 2, 3], [4, 5]]
    for k in range(4):
        assert f"if (!(lanes0 & {1 << k}u))" in gen.model_c
    for k in range(2):
        assert f"if (!(lanes1 & {1 << k}u))" in gen.model_c


#: includes the generated model.c and calls its lane functions directly:
#: argv = the six legs' knowns (K_1..K_18), then the leg whose last
#: solution has its extension 1 m off (-1: none)
LANE_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.c"
int main(int argc, char **argv)
{
    double K[18];
    for (int k = 0; k < 18; k++) K[k] = strtod(argv[1 + k], NULL);
    const int jump = atoi(argv[19]);
    static FmigenBase base;
    base.t = 0.0;
    base.continuity = 1;
    memcpy(base.q, fmigen_q_start, sizeof base.q);
    memcpy(base.sol, fmigen_sol_start, sizeof base.sol);
    /* the nearest root of the leg's quadratic in s is then 1 m from its
     * prediction: a jump the continuity check refuses */
    if (jump >= 0) base.sol[5 * jump + 4] += 1.0;
    double q[NQ], sol[NSOL], trig[2 * NQ];
    memcpy(q, fmigen_q_start, sizeof q);
    for (int k = 0; k < NSOL; k++) sol[k] = -7.0;
    const unsigned a = fmigen_lanes0(K, 0.0, 0.0, 1, &base, q, sol, trig);
    const unsigned b = fmigen_lanes1(K + 12, 0.0, 0.0, 1, &base, q, sol, trig);
    printf("{\"masks\": [%u, %u], \"sol\": [", a, b);
    for (int k = 0; k < NSOL; k++) printf("%s%.17g", k ? ", " : "", sol[k]);
    printf("]}\n");
    return 0;
}
"""


@pytest.mark.parametrize("jump", [-1, 1, 4])
def test_a_lane_solves_its_leg_or_leaves_it_to_the_scalar_code(tmp_path, stewart, jump):
    """At the start pose every lane solves its leg (masks 15 and 3) to the
    start assembly; a leg whose last solution is 1 m away fails its lane's
    continuity check, only that lane, and its slots in sol are not written
    (the block's scalar code then runs, as before the lanes)."""
    gen, dae, tri = stewart
    start = {s: tri.start[str(s)] for s in dae.q_sym}
    K = [float(sp.sympify(e).subs(start)) for tb in tri.blocks for e in tb.abstractions.values()]
    assert len(K) == 18
    exe = _driver(tmp_path, gen, LANE_DRIVER)
    out = json.loads(subprocess.run([str(exe), *map(repr, K), str(jump)], capture_output=True, text=True,
                                    check=True).stdout)
    masks = [15, 3]
    if jump >= 0:
        masks[jump // 4] &= ~(1 << (jump % 4))
    assert out["masks"] == masks
    for leg in range(6):
        got = out["sol"][5 * leg:5 * leg + 5]
        if leg == jump:
            assert got == [-7.0] * 5
        else:
            want = [float(v) for v in gen_sol_start(gen)[5 * leg:5 * leg + 5]]
            assert max(abs(a - b) for a, b in zip(got, want)) < 1e-13


def _driver(tmp_path, gen, source, defines=()):
    """A C driver that includes the generated model.c, compiled as the FMU
    binary is (-O2, no errno) with ``defines``."""
    (tmp_path / "model.c").write_text(gen.model_c)
    (tmp_path / "model_config.h").write_text(gen.config_h)
    (tmp_path / "driver.c").write_text(source)
    exe = tmp_path / f"driver{len(defines)}"
    subprocess.run(["gcc", "-O2", "-std=c99", "-fno-math-errno", *defines, f"-I{tmp_path}", f"-I{RUNTIME_DIR}",
                    str(tmp_path / "driver.c"), str(RUNTIME_DIR / "fmigen_core.c"),
                    str(RUNTIME_DIR / "fmigen_augmented.c"), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    return exe


def gen_sol_start(gen):
    text = gen.model_c.split("const double fmigen_sol_start[] = {", 1)[1].split("}", 1)[0]
    return [float(x) for x in text.split(",")]


@pytest.mark.parametrize("avx", [True, False], ids=["avx-copy", "sse2"])
def test_the_lanes_give_the_scalar_codes_bits(tmp_path, stewart, avx):
    """Paper 000's 3 s of explicit Euler with the lanes (the AVX copy, or
    SSE2 with the vectors in halves) and with the build for a compiler
    without vector types (FMIGEN_VECTORS 0: every leg by its block's scalar
    code): the same final state to the bit.  The peak violation is the
    residual the FMU reports (fmigen_phi_trig), whose rows the lanes
    evaluate term by term and the scalar code through its CSE: the same to
    round-off (1.55e-15 and 1.33e-15, measured)."""
    gen, _, _ = stewart
    runs = []
    for defines in ([], ["-DFMIGEN_VECTORS=0"]):
        exe = compile_harness(gen, tmp_path / f"v{len(defines)}", defines=defines, avx=avx)
        r = subprocess.run([str(exe), "3", "0.001", "1"], capture_output=True, text=True, check=True)
        runs.append(json.loads(r.stdout))
    a, b = runs
    assert a["final_q"] == b["final_q"] and a["final_v"] == b["final_v"]
    assert a["peak_violation"] < 4e-15 and b["peak_violation"] < 4e-15
    assert abs(a["peak_violation"] - b["peak_violation"]) < 1e-15


#: fmigen_phi_trig of the generated model.c at argv[1] random states: the
#: platform pose and every leg's pair and extension moved by up to 0.1
#: (the pairs off the unit circle, the rows far from zero)
RESIDUAL_DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "model.c"
int main(int argc, char **argv)
{
    srand(7);
    const int n = atoi(argv[1]);
    for (int s = 0; s < n; s++) {
        double q[NQ], trig[2 * NQ], out[NC];
        for (int k = 0; k < NQ; k++) q[k] = fmigen_q_start[k] + 0.1 * ((double)rand() / RAND_MAX - 0.5);
        for (int k = 0; k < NQ; k++) {
            trig[2 * k] = sin(q[k]) * (1.0 + 0.1 * ((double)rand() / RAND_MAX - 0.5));
            trig[2 * k + 1] = cos(q[k]);
        }
        /* the platform's pairs are sin, cos of its coordinates (trig_from_q) */
        for (int k = 3; k < 6; k++) { trig[2 * k] = sin(q[k]); trig[2 * k + 1] = cos(q[k]); }
        fmigen_phi_trig(0.0, q, NULL, fmigen_p_default, fmigen_u_default, trig, out);
        for (int j = 0; j < NC; j++) printf("%.17g%s", out[j], j + 1 < NC ? " " : "\n");
    }
    return 0;
}
"""


def test_the_residual_rows_in_lanes_are_the_scalar_rows(tmp_path, stewart):
    """fmigen_phi_trig with the lanes (the legs' rows term by term) and
    without vector types (the CSE of every row) at 200 random states off
    the constraint manifold (rows of 0.01-1): the same rows to round-off;
    a row written to another row's place, or a lane's constants for
    another leg, would be off by their difference."""
    gen, dae, _ = stewart
    rows = []
    for defines in ([], ["-DFMIGEN_VECTORS=0"]):
        exe = _driver(tmp_path, gen, RESIDUAL_DRIVER, defines)
        out = subprocess.run([str(exe), "200"], capture_output=True, text=True, check=True).stdout
        rows.append([[float(x) for x in line.split()] for line in out.splitlines()])
    lanes, scalar = rows
    assert len(lanes) == 200 and all(len(r) == dae.m for r in lanes)
    assert max(abs(x) for r in scalar for x in r) > 0.01
    assert max(abs(a - b) for ra, rb in zip(lanes, scalar) for a, b in zip(ra, rb)) < 1e-14
