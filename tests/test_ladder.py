"""The loop-count benchmark families (issue 15, item 3): ``ladder`` (f = L)
and ``fourbar_chain`` (f = 1), validated for L = 1, 2 against the DAE (IDA)
and the Cartesian references, their input checks, and the section count of
``scripts/bench_ladder.py`` on their generated code."""
import importlib.util
import math
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fmigen.frontends.joint_model import to_mechanism
from fmigen.model import ModelError
from fmigen.build.pipeline import build_fmu, load_mechanism
from fmigen.verify.validate import simulate, validate
from mechanisms import fourbar_chain, ladder

ROOT = Path(__file__).resolve().parent.parent


def _bench_ladder():
    spec = importlib.util.spec_from_file_location("bench_ladder", ROOT / "scripts" / "bench_ladder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_runs = {}


def _validated(family, cells, tmp_path_factory):
    key = (family, cells)
    if key not in _runs:
        module = {"ladder": ladder, "fourbar_chain": fourbar_chain}[family]
        fmu = tmp_path_factory.mktemp("ladder") / f"{family}_{cells}.fmu"
        _runs[key] = (validate(module.build(cells=cells), stop_time=1.0, fmu_path=fmu), fmu)
    return _runs[key]


def _passes_both_references(r):
    assert r.passed
    assert set(r.references) == {"ida", "cartesian"}
    for ref in r.references.values():
        assert ref["passed"]
        assert max(ref["max_abs_error"].values()) < 1e-6
    assert r.max_constraint_residual < 1e-12
    assert r.energy_drift < 1e-6


@pytest.mark.parametrize("family", ["ladder", "fourbar_chain"])
@pytest.mark.parametrize("cells", [1, 2])
def test_family_validates_against_the_dae_and_cartesian_references(family, cells, tmp_path_factory):
    r, _ = _validated(family, cells, tmp_path_factory)
    _passes_both_references(r)
    # every coordinate of the run, and the test means something: the
    # mechanism moves (a resting one would match any reference)
    n = 3 * cells if family == "ladder" else 2 * cells + 1
    assert len(r.max_abs_error) == n
    first = "L1" if family == "ladder" else "theta0"
    swing = np.ptp(r.fmu_result[first])
    assert swing > 0.05, swing


def test_sizes_and_independent_coordinates():
    for cells in (1, 3):
        m = to_mechanism(ladder.build(cells=cells))
        assert (len(m.coordinates), len(m.constraints), m.dof) == (3 * cells, 2 * cells, cells)
        assert m.independent == [f"L{k}" for k in range(1, cells + 1)]
        c = to_mechanism(fourbar_chain.build(cells=cells))
        assert (len(c.coordinates), len(c.constraints), c.dof) == (2 * cells + 1, 2 * cells, 1)
        assert c.independent == ["theta0"]


def test_the_cli_builds_the_default_of_four_cells():
    assert ladder.DEFAULT_CELLS == 4 and fourbar_chain.DEFAULT_CELLS == 4
    assert load_mechanism("ladder").name == "ladder_4"
    assert load_mechanism("fourbar_chain").name == "fourbar_chain_4"


def test_start_closes_every_cell():
    """The start of build(): each ladder cell's right node is where rung and
    right rail meet (independently: from the absolute angles by plane
    geometry), and the left rails hang straight down."""
    start = ladder.assemble_start(6)
    left, right = np.array([0.0, 0.0]), np.array([ladder.BASE, 0.0])
    for k, (th, psi, phi) in enumerate(start, 1):
        bl, br = ladder.rails(k)
        assert th == -math.pi / 2
        p = left + bl * np.array([math.cos(th), math.sin(th)])
        q1 = p + ladder.RUNG * np.array([math.cos(psi), math.sin(psi)])
        q2 = right + br * np.array([math.cos(phi), math.sin(phi)])
        assert np.allclose(q1, q2, atol=1e-14, rtol=0)
        assert q1[0] > p[0]            # the branch hint's side
        left, right = p, q1
    thetas, couplers = fourbar_chain.assemble_start(5)
    for k in range(1, 6):
        a = np.array([3.0 * (k - 1) + math.cos(thetas[k - 1]), math.sin(thetas[k - 1])])
        b = a + 4.0 * np.array([math.cos(couplers[k - 1]), math.sin(couplers[k - 1])])
        tip = np.array([3.0 * k, 0.0]) + 2.5 * np.array([math.cos(thetas[k]), math.sin(thetas[k])])
        assert np.allclose(b, tip, atol=1e-14, rtol=0) and tip[1] > 0


@pytest.mark.parametrize("bad", [0, -3, 1.5, "4", True, None])
def test_bad_cell_counts_are_refused(bad):
    for module in (ladder, fourbar_chain):
        with pytest.raises(ModelError, match="cells must be an integer >= 1"):
            module.build(cells=bad)


def test_unknown_rung_joint_is_refused():
    with pytest.raises(ModelError, match="rungs must be 'revolute' or 'planar', got 'spherical'"):
        ladder.build(cells=2, rungs="spherical")


def test_planar_rungs_are_the_same_ladder(tmp_path_factory):
    """The ladder with its rungs in absolute coordinates (planar joints on
    ground, A_k and B_k cut: other coordinates, other constraints, other
    blocks) moves exactly like the validated one with revolute rungs: the
    independent L_k, relative to the rung above in both, agree."""
    r, _ = _validated("ladder", 2, tmp_path_factory)
    m = to_mechanism(ladder.build(cells=2, rungs="planar"))
    assert [c.name for c in m.coordinates] == ["L1", "P1_x", "P1_y", "P1_angle", "R1",
                                               "L2", "P2_x", "P2_y", "P2_angle", "R2"]
    assert len(m.constraints) == 8 and m.independent == ["L1", "L2"]
    fmu, compiled = _built_with("ladder_planar", 2, "embedded", tmp_path_factory)   # as built by default
    assert compiled.dynamics == "embedded"
    res = simulate(fmu, ["L1", "L2"], 1.0, 0.01)
    assert len(res) == len(r.fmu_result)
    for name in ("L1", "L2"):
        assert np.ptp(res[name]) > 0.05
        assert np.max(np.abs(res[name] - r.fmu_result[name])) < 1e-9
    assert np.max(np.abs(res["constraint_residual"])) < 1e-12


def test_bench_section_count_covers_the_whole_right_hand_side(tmp_path_factory):
    """Every statement of the generated right-hand side falls in one of the
    bench's sections (the names codegen_embedding gives its temporaries), and
    the f × f part is there for the ladder: BᵀMB has f(f+1)/2 entries.  The
    same for the recursive elimination (codegen_recursive's names)."""
    bl = _bench_ladder()
    _, fmu = _validated("ladder", 2, tmp_path_factory)
    with zipfile.ZipFile(fmu) as z:
        ops = bl.op_counts(z.read("sources/model.c").decode())
    assert ops["other"] == 0
    assert all(ops[label] > 0 for _, label in bl.EMBEDDED_SECTIONS)
    assert all(ops[label] == 0 for _, label in bl.RECURSIVE_SECTIONS)


def test_bench_section_count_reads_chunked_functions(tmp_path_factory):
    """A large model's embedding functions are generated in chunks
    (``chunking.chunked``); the count is the same as over the whole
    function (it once counted 0 there, and a chunk's ``S->`` hand-over is no
    subtraction)."""
    from fmigen.generate.chunking import chunked
    bl = _bench_ladder()
    _, fmu = _validated("ladder", 2, tmp_path_factory)
    with zipfile.ZipFile(fmu) as z:
        model_c = z.read("sources/model.c").decode()
    whole = bl.op_counts(model_c)
    for name in ("fmigen_embedded_prepare", "fmigen_embedded_finish"):
        i = model_c.index(f"\nint {name}(") + 1
        j = model_c.index("\n{\n", i)
        k = model_c.index("\n}\n", j)
        params = model_c[i + len(f"int {name}("):j - 1]
        model_c = model_c[:i] + chunked(name, params, model_c[j + 3:k], size=7, above=0) + model_c[k + 3:]
    assert model_c.count("FMIGEN_CHUNK int fmigen_embedded_prepare_chunk") > 3
    assert "S->" in model_c
    assert bl.op_counts(model_c) == whole
    assert sum(whole.values()) > 100


def test_bench_section_count_covers_the_recursive_right_hand_side(tmp_path_factory):
    bl = _bench_ladder()
    fmu, _ = _built_with("ladder_planar", 2, "recursive", tmp_path_factory)
    with zipfile.ZipFile(fmu) as z:
        ops = bl.op_counts(z.read("sources/model.c").decode())
    assert ops["other"] == 0
    assert all(ops[label] > 0 for _, label in bl.RECURSIVE_SECTIONS)


def test_bench_fit_recovers_known_exponents():
    bl = _bench_ladder()
    assert bl.fit([(x, 3 * x**1.5) for x in (1, 2, 4, 8)]) == pytest.approx(1.5)
    assert bl.fit([(8, 5.0)]) is None


# --- the recursive dynamics (fmigen/generate/codegen_recursive.py) ---------------------------------------

def _mechanism(family, cells):
    if family == "ladder_planar":
        return ladder.build(cells=cells, rungs="planar")
    return {"ladder": ladder, "fourbar_chain": fourbar_chain}[family].build(cells=cells)


_built = {}


def _built_with(family, cells, dynamics, tmp_path_factory):
    """(FMU, compiled) of the family with ``dynamics``.  "embedded" is
    built as "auto" (which resolves to it for these few loops, and the
    tests assert that it did): the derived-model cache's key, under which
    the validate runs recorded the same model, so its C comes from that
    cache instead of being generated again."""
    key = (family, cells, dynamics)
    if key not in _built:
        fmu = tmp_path_factory.mktemp("dyn") / f"{family}_{cells}_{dynamics}.fmu"
        _built[key] = build_fmu(_mechanism(family, cells), fmu,
                                dynamics="auto" if dynamics == "embedded" else dynamics)
    return _built[key]


@pytest.mark.parametrize("family,cells", [("ladder_planar", 1), ("ladder_planar", 2), ("ladder_planar", 4),
                                          ("fourbar_chain", 2), ("ladder", 2)])
def test_recursive_dynamics_moves_as_the_embedding(family, cells, tmp_path_factory):
    """The elimination solves the same equations as Bᵀ M B: every coordinate
    and velocity of a 1 s run (rk4, h = 1 ms) agrees to round-off
    (measured 2.7e-15 at most, docs/benchmarks.md)."""
    runs = {}
    for dyn in ("embedded", "recursive"):
        fmu, compiled = _built_with(family, cells, dyn, tmp_path_factory)
        assert compiled.dynamics == dyn
        runs[dyn] = simulate(fmu, list(compiled.dae.names), 1.0, 0.01)
    a, b = runs["embedded"], runs["recursive"]
    names = [n for n in a.dtype.names if n != "time"]
    assert len(names) == 2 * len(compiled.dae.names) + 1
    assert np.ptp(a[compiled.independent_names[0]]) > 0.05     # it moves
    err = max(np.max(np.abs(a[n] - b[n])) for n in names)
    assert err < 1e-12, err


@pytest.mark.parametrize("family", ["ladder_planar", "fourbar_chain"])
def test_recursive_dynamics_validates_against_the_dae_and_cartesian_references(family, tmp_path_factory):
    """The recursive FMU through the validate machinery: IDA on the index-3
    DAE and the Cartesian body-level reference."""
    fmu, _ = _built_with(family, 2, "recursive", tmp_path_factory)
    r = validate(_mechanism(family, 2), stop_time=1.0, existing_fmu=fmu)
    _passes_both_references(r)


def test_recursive_elimination_is_leaves_first_and_bounded_per_cell():
    """The build-time order eats the ladder from its bottom cell, and no
    piece couples more coordinates for more cells (the code per cell is the
    same size: linear growth)."""
    from fmigen.generate.codegen_embedding import _blocks
    from fmigen.generate.codegen_recursive import elimination_order
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.derive.embed import embed

    def order_and_degrees(cells):
        dae = build_dae(to_mechanism(ladder.build(cells=cells, rungs="planar")))
        emb = embed(dae, choose_partition(dae))
        blocks = [(list(b.equations), list(b.unknowns)) for b in choose_partition(dae).blocks]
        assert blocks == _blocks(emb, SimpleNamespace(partition=choose_partition(dae)))
        n = dae.n
        mass = [(r, s) for r in range(n) for s in range(r + 1, n) if emb.M[r, s] != 0]
        rows = {j: {i for i in range(n) if emb.Phi_q[j, i] != 0} for j in range(dae.m)}
        order = elimination_order(n, blocks, mass, rows, emb.independent)
        return dae, blocks, order

    dae, blocks, order = order_and_degrees(3)
    assert sorted(x for k, x in order if k == "coordinate") == sorted(dae.names.index(f"L{k}") for k in (1, 2, 3))
    assert sorted(x for k, x in order if k == "block") == list(range(len(blocks)))
    # cell by cell from the bottom: the independent L_k after the loop blocks
    # of its cell, L3 before L2 before L1
    coords = [dae.names[x] for k, x in order if k == "coordinate"]
    assert coords == ["L3", "L2", "L1"]


def test_recursive_code_grows_linearly(tmp_path_factory):
    """A further cell adds no more elimination work than the one before
    (ladder_planar at L = 2, 3, 4): code and work per step linear in the
    loops."""
    bl = _bench_ladder()
    per = {}
    for cells in (2, 3, 4):
        fmu, _ = _built_with("ladder_planar", cells, "recursive", tmp_path_factory)
        with zipfile.ZipFile(fmu) as z:
            ops = bl.op_counts(z.read("sources/model.c").decode())
        assert all(ops[label] == 0 for _, label in bl.EMBEDDED_SECTIONS[2:])   # no X, M·B, BᵀMB, LDLᵀ
        per[cells] = [ops[label] for _, label in bl.RECURSIVE_SECTIONS]
        assert all(per[cells])
    # the third and fourth cells add no more than the second did (to the
    # order's ties at the top, measured 175 against 195 operations of the
    # elimination): the embedding's increments grow with L instead
    for a, b, c in zip(per[2], per[3], per[4]):
        assert c - b <= 1.1 * (b - a), per


def test_dynamics_choice():
    from fmigen.generate.codegen_recursive import RECURSIVE_FROM_F, choose
    assert choose("auto", SimpleNamespace(f=RECURSIVE_FROM_F))[0] == "recursive"
    assert choose("auto", SimpleNamespace(f=RECURSIVE_FROM_F - 1))[0] == "embedded"
    assert choose("embedded", SimpleNamespace(f=40)) == ("embedded", "requested")
    assert choose("recursive", SimpleNamespace(f=1)) == ("recursive", "requested")
    with pytest.raises(ModelError, match="unknown dynamics 'fast'"):
        choose("fast", SimpleNamespace(f=1))


def test_auto_dynamics_needs_a_dense_B():
    """B's structural density from the partition's blocks: eight independent
    corners (each block reads its own coordinate) leave B 1/8 dense, and
    auto keeps the embedding; a chain whose every block reads all the
    independent coordinates through the block before it is dense, and
    auto eliminates.  And the planar ladder's real partition."""
    from fmigen.generate.codegen_recursive import RECURSIVE_FROM_COUPLING, choose, coupling
    from fmigen.derive.partition import Block
    f = 8
    corners = SimpleNamespace(independent=list(range(f)), dependent=list(range(f, 2 * f)),
                              blocks=[Block([k], [f + k], [k]) for k in range(f)])
    assert coupling(corners) == pytest.approx(1 / f)
    assert choose("auto", SimpleNamespace(f=f), corners)[0] == "embedded"
    chain = SimpleNamespace(independent=list(range(f)), dependent=list(range(f, 2 * f)),
                            blocks=[Block([0], [f], list(range(f)))] +
                                   [Block([k], [f + k], [f + k - 1]) for k in range(1, f)])
    assert coupling(chain) == 1.0
    assert choose("auto", SimpleNamespace(f=f), chain)[0] == "recursive"
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import as_mechanism, prepare_mechanism
    from mechanisms.ladder import build
    part = choose_partition(build_dae(prepare_mechanism(as_mechanism(build(cells=4, rungs="planar")))))
    assert coupling(part) == pytest.approx(0.625) and coupling(part) > RECURSIVE_FROM_COUPLING


def test_recursive_dynamics_refused_where_there_is_no_embedding(tmp_path):
    with pytest.raises(ModelError, match="--dynamics recursive solves the embedded ODE"):
        build_fmu(fourbar_chain.build(cells=1), tmp_path / "x.fmu", kinematics="baumgarte", dynamics="recursive")
