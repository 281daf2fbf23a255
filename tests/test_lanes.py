"""The kinematics' lanes (fmigen/generate/codegen_lanes.py): the Stewart platform's
six legs solved four at a time, with the scalar code's bits, and every
lane that fails left to its block's scalar code."""
import json
import subprocess

import pytest
import sympy as sp

from fmigen.tools.bench import compile_harness
from fmigen.generate.codegen_kinematics import hoisted_knowns
from fmigen.generate.codegen_lanes import lane_classes
from fmigen.derive.embed import embed
from fmigen.fmi.fmu import RUNTIME_DIR
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import load_mechanism
from fmigen.derive.workspace import unit_scales
from fmigen.generate import codegen

from conftest import compiled_model, derivation_for_generate


@pytest.fixture(scope="module")
def stewart():
    # the shipped Stewart's model as fmigen build generates it (its C from
    # the derived-model cache when a build of it in the suite recorded it),
    # with the DAE and triangularization it was generated from
    compiled = compiled_model("stewart")
    return compiled.generated, compiled.dae, compiled.triangular


def _classes(dae, tri):
    """The lane classes' members of a DAE triangularized as ``tri``."""
    part = choose_partition(dae)
    return [c.members for c in lane_classes(tri, hoisted_knowns(embed(dae, part), tri), unit_scales(dae))]


def test_the_legs_form_two_classes_by_their_coefficients(stewart):
    """Legs 1-4 have the same monomials in every step; legs 5 and 6 (base
    points on x = 0) lack the terms of the base's x and form a class of their
    own (two lanes of four)."""
    gen, dae, tri = stewart
    assert _classes(dae=dae, tri=tri) == [[0, 1, 2, 3], [4, 5]]
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
    for (int k = 0; k < NQ; k++) q[k] = -7.0;
    for (int k = 0; k < NSOL; k++) sol[k] = -7.0;
    for (int k = 0; k < 2 * NQ; k++) trig[k] = -7.0;
    const unsigned a = fmigen_lanes0(K, 0.0, 0.0, 1, &base, q, sol, trig);
    const unsigned b = fmigen_lanes1(K + 12, 0.0, 0.0, 1, &base, q, sol, trig);
    printf("{\"masks\": [%u, %u], \"sol\": [", a, b);
    for (int k = 0; k < NSOL; k++) printf("%s%.17g", k ? ", " : "", sol[k]);
    printf("], \"q\": [");
    for (int k = 0; k < NQ; k++) printf("%s%.17g", k ? ", " : "", q[k]);
    printf("], \"trig\": [");
    for (int k = 0; k < 2 * NQ; k++) printf("%s%.17g", k ? ", " : "", trig[k]);
    printf("]}\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def lane_driver(tmp_path_factory, stewart):
    """LANE_DRIVER on the Stewart's model.c, compiled once for the jumps
    below (the jump is its argument, not part of its build)."""
    return _driver(tmp_path_factory.mktemp("lanes"), stewart[0], LANE_DRIVER)


@pytest.mark.parametrize("jump", [-1, 1, 4])
def test_a_lane_solves_its_leg_or_leaves_it_to_the_scalar_code(lane_driver, stewart, jump):
    """At the start pose every lane solves its leg (masks 15 and 3) to the
    start assembly; a leg whose last solution is 1 m away fails its lane's
    continuity check, only that lane, and its slots in sol are not written
    (the block's scalar code then runs, as before the lanes)."""
    gen, dae, tri = stewart
    start = {s: tri.start[str(s)] for s in dae.q_sym}
    K = [float(sp.sympify(e).subs(start)) for solved_block in tri.blocks for e in solved_block.abstractions.values()]
    assert len(K) == 18
    out = json.loads(subprocess.run([str(lane_driver), *map(repr, K), str(jump)], capture_output=True, text=True,
                                    check=True).stdout)
    masks = [15, 3]
    if jump >= 0:
        masks[jump // 4] &= ~(1 << (jump % 4))
    assert out["masks"] == masks
    for leg in range(6):
        got = out["sol"][5 * leg:5 * leg + 5]
        # its pairs (s_alpha, c_alpha, s_beta, c_beta) to trig, its
        # extension to q; the deferred angles themselves are not written
        pairs = out["trig"][12 + 6 * leg:16 + 6 * leg]
        ext, angles = out["q"][8 + 3 * leg], out["q"][6 + 3 * leg:8 + 3 * leg]
        assert angles == [-7.0, -7.0]
        if leg == jump:
            assert got == [-7.0] * 5 and pairs == [-7.0] * 4 and ext == -7.0
        else:
            want = [float(v) for v in gen_sol_start(gen)[5 * leg:5 * leg + 5]]
            assert max(abs(a - b) for a, b in zip(got, want)) < 1e-13
            assert pairs == got[:4] and ext == got[4]
    # nothing else: the platform's entries are the kinematics' own
    assert out["q"][:6] == [-7.0] * 6 and out["trig"][:12] == [-7.0] * 12


def _driver(tmp_path, gen, source, defines=()):
    """A C driver that includes the generated model.c, compiled as the FMU
    binary is (-O2, no errno) with ``defines``."""
    (tmp_path / "model.c").write_text(gen.whole_c)
    (tmp_path / "model_config.h").write_text(gen.config_h)
    (tmp_path / "driver.c").write_text(source)
    exe = tmp_path / f"driver{len(defines)}"
    subprocess.run(["gcc", "-O2", "-std=c99", "-fno-math-errno", *defines, f"-I{tmp_path}", f"-I{RUNTIME_DIR}",
                    str(tmp_path / "driver.c"), str(RUNTIME_DIR / "fmigen_core.c"),
                    str(RUNTIME_DIR / "fmigen_augmented.c"), "-o", str(exe), "-lm"],
                   check=True, capture_output=True, text=True)
    return exe


def gen_sol_start(gen):
    text = gen.start_c.split("const double fmigen_sol_start[] = {", 1)[1].split("}", 1)[0]
    return [float(x) for x in text.split(",")]


@pytest.mark.parametrize("avx", [True, False], ids=["avx-copy", "sse2"])
def test_the_lanes_give_the_scalar_codes_bits(tmp_path, stewart, avx):
    """Paper 000's 3 s of explicit Euler with the lanes (the AVX copy, or
    SSE2 with the vectors in halves) and with the build for a compiler
    without vector types (FMIGEN_VECTORS 0: every leg by its block's scalar
    code): the same final state to the bit.  The peak violation is the
    residual the FMU reports (fmigen_residual_trig, the max of
    fmigen_phi_trig's rows), whose rows the lanes
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


#: fmigen_phi_trig of the generated model.c at argv[1] random states: every
#: coordinate moved by up to 0.1 from its start and every sin of a pair
#: scaled by up to 5 % (the pairs off the unit circle, the rows far from
#: zero); after the rows, fmigen_residual_trig (the max the FMU reports)
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
        fmigen_phi_trig(0.0, q, NULL, fmigen_p_default, fmigen_u_default, trig, out);
        for (int j = 0; j < NC; j++) printf("%.17g ", out[j]);
        printf("%.17g\n", fmigen_residual_trig(0.0, q, NULL, fmigen_p_default, fmigen_u_default, trig));
    }
    return 0;
}
"""


def test_the_residual_rows_in_lanes_are_the_scalar_rows(tmp_path, stewart):
    """fmigen_phi_trig with the lanes (the legs' rows term by term) and
    without vector types (the CSE of every row) at 200 random states off
    the constraint manifold (rows of 0.01-1): the same rows to round-off;
    a row written to another row's place, or a lane's constants for
    another leg, would be off by their difference.  In both builds
    fmigen_residual_trig is max |row| of those rows, to the bit."""
    gen, dae, _ = stewart
    _same_residual_rows(tmp_path, gen, dae.m)


def _same_residual_rows(tmp_path, gen, m):
    rows = []
    for defines in ([], ["-DFMIGEN_VECTORS=0"]):
        exe = _driver(tmp_path, gen, RESIDUAL_DRIVER, defines)
        out = subprocess.run([str(exe), "200"], capture_output=True, text=True, check=True).stdout
        rows.append([[float(x) for x in line.split()] for line in out.splitlines()])
    # the residual the FMU reports is max |row| of the same rows, to the bit
    # (the lanes take it from their vectors, the scalar code row by row)
    for build in rows:
        for r in build:
            assert r[-1] == max(abs(x) for x in r[:-1])
    lanes, scalar = ([r[:-1] for r in build] for build in rows)
    assert len(lanes) == 200 and all(len(r) == m for r in lanes)
    assert max(abs(x) for r in scalar for x in r) > 0.01
    assert max(abs(a - b) for ra, rb in zip(lanes, scalar) for a, b in zip(ra, rb)) < 1e-14


#: two four-bars on one crank whose rocker tips a dyad joins: the four-bars
#: are one lane class, and the dyad's rows (a later block) read their
#: rockers' angles (a review's mechanism; fmigen_phi_trig did not compile)
TWIN = """
import math
from sympy import cos, sin
from fmigen.model import Mechanism

def build():
    m = Mechanism("twin", description="two four-bars on one crank, their rocker tips joined by a dyad")
    l1, l2, l3 = 1.0, 4.0, 2.5
    g = m.parameter("g", 9.8, "m/s2", tunable=True, description="gravity")
    th = m.coordinate("theta1", math.pi / 2, "rad")
    al = [m.coordinate("alpha1", 0.353281, "rad"), m.coordinate("alpha2", 0.25, "rad")]
    ph = [m.coordinate("phi1", 1.26486, "rad"), m.coordinate("phi2", 1.26486, "rad")]
    tips = []
    for k, d in enumerate((3.0, 4.5)):
        ax, ay = l1 * cos(th), l1 * sin(th)
        if k == 0:
            m.planar_body("crank", 1.0, l1**2 / 12, (ax / 2, ay / 2), th)
        m.planar_body(f"coupler{k}", 1.0, l2**2 / 12, (ax + l2 / 2 * cos(al[k]), ay + l2 / 2 * sin(al[k])), al[k])
        m.planar_body(f"rocker{k}", 1.0, l3**2 / 12, (d + l3 / 2 * cos(ph[k]), l3 / 2 * sin(ph[k])), ph[k])
        m.constraint(f"loop{k}_x", ax + l2 * cos(al[k]) - d - l3 * cos(ph[k]))
        m.constraint(f"loop{k}_y", ay + l2 * sin(al[k]) - l3 * sin(ph[k]))
        tips.append((d + l3 * cos(ph[k]), l3 * sin(ph[k])))
    ga, de = m.coordinate("gamma", 1.4, "rad"), m.coordinate("delta", 1.75, "rad")
    m.planar_body("bar4", 1.0, 0.75, (tips[0][0] + 1.5 * cos(ga), tips[0][1] + 1.5 * sin(ga)), ga)
    m.planar_body("bar5", 1.0, 0.75, (tips[1][0] + 1.5 * cos(de), tips[1][1] + 1.5 * sin(de)), de)
    m.constraint("join_x", tips[0][0] + 3 * cos(ga) - tips[1][0] - 3 * cos(de))
    m.constraint("join_y", tips[0][1] + 3 * sin(ga) - tips[1][1] - 3 * sin(de))
    m.gravity = (0, -g, 0)
    m.independent = ["theta1"]
    m.dof = 1
    return m
"""


def test_a_later_block_reading_a_lane_class_angles(tmp_path):
    """Lanes followed by a block that reads their angles: the residual's
    other rows keep the class's unit-circle pairs (they were declared only in
    the class's scalar fallback, and model.c did not compile), and its rows
    are the scalar build's to round-off."""
    path = tmp_path / "twin.py"
    path.write_text(TWIN)
    mech = load_mechanism(str(path))
    dae, _, emb, tri, dynamics = derivation_for_generate(mech)
    assert _classes(dae=dae, tri=tri) == [[0, 1]]
    gen = codegen.generate(emb, tri, mech.name, dynamics=dynamics)
    assert "fmigen_residual_lanes0(q, trig, out, &peak)" in gen.model_c
    _same_residual_rows(tmp_path, gen, 6)
