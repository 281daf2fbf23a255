"""The derived-model cache (fmigen/build/derived.py): a second build packages the
recorded model without deriving, its FMU simulates exactly like the first,
a tunable parameter's value is not part of the key, a structural one is."""

import re
import zipfile

import fmpy
import numpy as np
import pytest

from fmigen.kinematics import groebner
from fmigen.build.derived import Derived
from fmigen.build.pipeline import Compiled, build_fmu, load_mechanism

HIT = "from the cache"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    return tmp_path / "cache"


def _build(mech, out):
    lines = []
    path, model = build_fmu(mech, out, reuse=True, windows=False, log=lines.append)
    return path, model, "\n".join(lines)


def _simulate(path):
    r = fmpy.simulate_fmu(str(path), stop_time=0.5, output_interval=0.01, output=["theta", "alpha", "phi"])
    return np.column_stack([r[n] for n in ("theta", "alpha", "phi")])


def _source(path, name):
    with zipfile.ZipFile(path) as z:
        return z.read(f"sources/{name}").decode()


def test_second_build_hits_and_simulates_identically(cache, tmp_path):
    cold, compiled, log1 = _build(load_mechanism("fourbar"), tmp_path / "cold.fmu")
    assert isinstance(compiled, Compiled) and HIT not in log1
    assert list((cache / "derived").glob("*.json"))
    warm, hit, log2 = _build(load_mechanism("fourbar"), tmp_path / "warm.fmu")
    assert isinstance(hit, Derived) and HIT in log2 and "[3/5]" not in log2
    assert hit.independent_names == compiled.independent_names and hit.start == compiled.start
    assert _source(warm, "model.c") == _source(cold, "model.c")
    assert _source(warm, "model_config.h") == _source(cold, "model_config.h")
    # the variable table is made at packaging (variables.py is no part of the
    # key): an entry holds no value reference, and a hit's layout is the fresh one
    assert "VR_" not in next((cache / "derived").glob("*.json")).read_text()
    assert _source(warm, "fmu_variables.h") == _source(cold, "fmu_variables.h")
    assert [(v.name, v.valueReference) for v in fmpy.read_model_description(str(warm)).modelVariables] == \
        [(v.name, v.valueReference) for v in fmpy.read_model_description(str(cold)).modelVariables]
    np.testing.assert_array_equal(_simulate(warm), _simulate(cold))


def test_tunable_value_hits_structural_value_misses(cache, tmp_path):
    _build(load_mechanism("fourbar"), tmp_path / "a.fmu")
    heavier = load_mechanism("fourbar")
    next(p for p in heavier.parameters if p.name == "m2").value = 2.5
    path, model, log = _build(heavier, tmp_path / "b.fmu")
    assert HIT in log
    # the new default reaches the FMU (p_default and the modelDescription)
    md = fmpy.read_model_description(str(path))
    assert next(v for v in md.modelVariables if v.name == "m2").start == "2.5"
    assert "2.5" in _source(path, "model.c").split("fmigen_p_default")[1].split(";")[0]
    longer = load_mechanism("fourbar")
    next(p for p in longer.parameters if p.name == "l1").value = 1.1
    _, model, log = _build(longer, tmp_path / "c.fmu")
    assert HIT not in log and isinstance(model, Compiled)


def test_no_cache_derives(cache, tmp_path):
    _build(load_mechanism("fourbar"), tmp_path / "a.fmu")
    lines = []
    _, model = build_fmu("fourbar", tmp_path / "b.fmu", reuse=True, use_cache=False, windows=False,
                         log=lines.append)
    assert isinstance(model, Compiled) and not any(HIT in m for m in lines)


def test_validate_reuses_the_cached_build(cache):
    from fmigen.verify.validate import validate
    first, second = [], []
    r1 = validate("fourbar", stop_time=0.5, log=first.append)
    r2 = validate("fourbar", stop_time=0.5, log=second.append)
    assert not any(HIT in m for m in first) and any(HIT in m for m in second)
    assert r2.passed and r2.max_abs_error == r1.max_abs_error
    assert r2.max_abs_velocity_error == r1.max_abs_velocity_error


# --- the joint-system conversion cache (derived.mechanism_of) -----------------

def _joint_system(name="stewart_joints"):
    import importlib
    return importlib.import_module(f"mechanisms.{name}").build()


def test_joint_conversion_is_read_back_as_converted(cache, monkeypatch):
    """The second conversion of the same joint system is the recorded one:
    to_mechanism does not run, and the mechanism is the fresh one to every
    detail the derived-model key reads (bodies' DCMs and angular velocities,
    constraints, forces, outputs, starts)."""
    import fmigen.frontends.joint_model as joint_model
    from fmigen.build.derived import mechanism_of
    from fmigen.derive.cache_key import key_text
    fresh = joint_model.to_mechanism(_joint_system())
    first = mechanism_of(_joint_system())
    # this start's entry and the start-free one (``joint_start``)
    entries = list((cache / "joint_models").glob("*.pickle"))
    assert len(entries) == 2

    def refuse(system):
        raise AssertionError("converted again although the entry exists")
    monkeypatch.setattr(joint_model, "convert", refuse)
    second = mechanism_of(_joint_system())
    options = {"order": None, "kinematics": "groebner"}
    assert key_text(second, options) == key_text(fresh, options) == key_text(first, options)
    assert [c.start for c in second.coordinates] == [c.start for c in fresh.coordinates]
    assert second.joint_system.name == fresh.name


def test_joint_conversion_key_follows_the_system(cache, monkeypatch):
    """A changed joint system (a structural parameter's value) is a new
    entry with its own result; use_cache=False neither reads nor writes;
    a damaged entry is converted again and rewritten."""
    from fmigen.build.derived import mechanism_of
    base = mechanism_of(_joint_system("fourbar_joints"))
    changed = _joint_system("fourbar_joints")
    p = next(p for p in changed.parameters if not p.tunable)
    p.value = float(p.value) * 1.1
    other = mechanism_of(changed)
    # each with its start-free entry (``joint_start``)
    entries = sorted((cache / "joint_models").glob("*.pickle"))
    assert len(entries) == 4
    assert next(q.value for q in other.parameters if q.name == p.name) == p.value
    assert [c.start for c in other.coordinates] != [c.start for c in base.coordinates]
    mechanism_of(_joint_system("slider_crank_joints"), use_cache=False)
    assert len(list((cache / "joint_models").glob("*.pickle"))) == 4
    import fmigen.frontends.joint_model as joint_model
    calls = []
    convert = joint_model.convert
    # ... and does not read one that exists
    monkeypatch.setattr(joint_model, "convert", lambda s: calls.append(s) or convert(s))
    mechanism_of(_joint_system("fourbar_joints"), use_cache=False)
    assert len(calls) == 1
    monkeypatch.setattr(joint_model, "convert", convert)
    for e in entries:
        e.write_bytes(b"not a pickle")
    again = mechanism_of(_joint_system("fourbar_joints"))
    assert [c.start for c in again.coordinates] == [c.start for c in base.coordinates]
    # the damaged fourbar_joints entries rewritten, the changed system's left
    assert sorted(e.read_bytes() == b"not a pickle" for e in entries) == [False, False, True, True]


def test_a_joint_systems_start_assemblies_are_solved_once(cache, monkeypatch):
    """A joint system with branch hints lists every assembly at its start
    input twice: for the hints (the conversion) and for the start assembly
    (``prepare_mechanism``'s hook), the same polynomial system at the same
    input.  The second is the first's result (``start_assembly._SOLVED``):
    one solve, and the starts a build that solves twice assembles, to the
    bit.  Before, both solved (the six-bar: ~0.3 s each)."""
    from fmigen.build.pipeline import prepare_mechanism
    from fmigen.kinematics import start_assembly
    solve, calls = start_assembly.assemble, []
    monkeypatch.setattr(start_assembly, "assemble", lambda mech, **kw: calls.append(mech.name) or solve(mech, **kw))
    monkeypatch.setattr(start_assembly, "_SOLVED", {})
    once = prepare_mechanism(_joint_system("stephenson3_joints"), use_cache=False)
    assert calls == ["stephenson3_joints"]
    # as before: every call solves
    monkeypatch.setattr(start_assembly, "_all_assemblies",
                        lambda mech, cpu_limit, system: start_assembly.assemble(mech, cpu_limit=cpu_limit, system=system))
    twice = prepare_mechanism(_joint_system("stephenson3_joints"), use_cache=False)
    assert len(calls) == 3
    assert [(c.name, c.start) for c in once.coordinates] == [(c.name, c.start) for c in twice.coordinates]
    from mechanisms.stephenson3 import GUESS
    assert once.coordinate_by_name("psi").start != GUESS["psi"]   # assembled, not the guess


# --- compile_model's C from the entry (derived.generated_of) ------------------

def _c(compiled):
    g = compiled.generated
    return g.model_c, g.config_h, g.guid


def test_compile_model_takes_its_c_from_the_entry(cache, monkeypatch):
    """compile_model records the C it generated, and a later derivation of
    the same mechanism (another process: a pytest-xdist worker, a CLI
    build) takes it from the entry, byte for byte the C generated without
    the cache, a tunable parameter's new default included; use_cache=False
    generates; an entry whose start is not the derivation's is not taken,
    the body recorded apart is; a damaged entry is none."""
    import json

    from fmigen.build.pipeline import compile_model, prepare_mechanism
    from fmigen.generate import codegen
    fresh = compile_model(prepare_mechanism("fourbar", use_cache=False), use_cache=False)
    assert not (cache / "derived").exists()
    first = compile_model(prepare_mechanism("fourbar"))
    [entry] = (cache / "derived").glob("*.json")
    generate = codegen.generate

    def refuse(*args, **kw):
        raise AssertionError("generated again although the entry holds this C")
    monkeypatch.setattr(codegen, "generate", refuse)
    lines = []
    second = compile_model(prepare_mechanism("fourbar"), log=lines.append)
    assert "[4/5] generated C from the derived-model cache" in lines
    assert _c(second) == _c(first) == _c(fresh)
    with pytest.raises(AssertionError, match="generated again"):
        compile_model(prepare_mechanism("fourbar", use_cache=False), use_cache=False)
    heavier = prepare_mechanism("fourbar")
    next(p for p in heavier.parameters if p.name == "m2").value = 2.5
    from_entry = compile_model(heavier)
    assert "2.5" in from_entry.generated.model_c.split("fmigen_p_default")[1].split(";")[0]
    monkeypatch.setattr(codegen, "generate", generate)
    heavier = prepare_mechanism("fourbar", use_cache=False)
    next(p for p in heavier.parameters if p.name == "m2").value = 2.5
    assert _c(from_entry) == _c(compile_model(heavier, use_cache=False))
    # the entry holds the start: one recorded for another is not this C;
    # its body, recorded apart without the start (derived.body_of), is,
    # with this start's solution start written in
    d = json.loads(entry.read_text())
    d["start"]["phi"] += 1e-9
    entry.write_text(json.dumps(d))
    monkeypatch.setattr(codegen, "generate", refuse)
    lines = []
    assert _c(compile_model(prepare_mechanism("fourbar"), log=lines.append)) == _c(fresh)
    assert "[4/5] generated C from the derived-model cache (the body recorded at another start)" in lines
    # and this start's entry is recorded (the next build is a derived-model hit)
    assert json.loads(entry.read_text())["start"] == fresh.triangular.start
    [body] = (cache / "bodies").glob("*.json")
    body.write_text("{not json")
    entry.write_text("{not json")
    with pytest.raises(AssertionError, match="generated again"):
        compile_model(prepare_mechanism("fourbar"))
    monkeypatch.setattr(codegen, "generate", generate)
    assert _c(compile_model(prepare_mechanism("fourbar"))) == _c(fresh)
    assert json.loads(entry.read_text())["start"] == fresh.triangular.start


# --- the DAE from the entry (derived.dae_of) ----------------------------------

def _dae_text(dae):
    import sympy as sp
    return sp.srepr([dae.names, dae.q_sym, dae.v_sym, dae.tunable, dae.tunable_values, dae.inputs, dae.input_values,
                     dae.M, dae.F, dae.Phi, dae.constraint_names, dae.outputs, dae.Phi_redundant,
                     dae.redundant_names, dae.Phi_q, dae.Phi_t, dae.gamma])


def test_the_dae_is_read_back_as_derived(cache, monkeypatch):
    """compile_model's DAE (and validate's after a derived-model hit) comes
    from the entry the first derivation wrote: build_dae does not run, and
    the DAE is the fresh one to every field and derivative, with the
    caller's mechanism and its tunable values (no part of the key); a
    structural value is a new entry; a damaged entry is derived again and
    rewritten; use_cache=False neither reads nor writes."""
    from fmigen.build import derived
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    from fmigen.derive import dae as dae_mod
    fresh = dae_mod.build_dae(prepare_mechanism("fourbar"))
    first = compile_model(prepare_mechanism("fourbar")).dae
    [entry] = (cache / "dae").glob("*.pickle")
    build_dae = dae_mod.build_dae

    def refuse(mech):
        raise AssertionError("derived again although the entry exists")
    monkeypatch.setattr(dae_mod, "build_dae", refuse)
    heavier = prepare_mechanism("fourbar")
    m2 = next(p for p in heavier.parameters if p.name == "m2")
    default, m2.value = m2.value, 2.5
    second = derived.dae_of(heavier)
    # the DOF check ran on the hit (numeric is made then), with the caller's values
    assert second.mechanism is heavier and second.numeric.dae is second
    assert second.tunable_values[second.tunable.index(m2.symbol)] == 2.5
    assert second.numeric.pu[second.tunable.index(m2.symbol)] == 2.5
    m2.value = default
    assert _dae_text(derived.dae_of(heavier)) == _dae_text(fresh) == _dae_text(first)
    with pytest.raises(AssertionError, match="derived again"):
        derived.dae_of(prepare_mechanism("fourbar"), use_cache=False)
    monkeypatch.setattr(dae_mod, "build_dae", build_dae)
    entry.write_bytes(b"not a pickle")
    assert _dae_text(derived.dae_of(prepare_mechanism("fourbar"))) == _dae_text(fresh)
    assert entry.read_bytes() != b"not a pickle"
    derived.dae_of(prepare_mechanism("fourbar"), use_cache=False)
    assert len(list((cache / "dae").glob("*.pickle"))) == 1
    longer = prepare_mechanism("fourbar")
    next(p for p in longer.parameters if not p.tunable).value *= 1.1
    derived.dae_of(longer)
    assert len(list((cache / "dae").glob("*.pickle"))) == 2


def _members(path):
    """Every file of an FMU, modelDescription.xml without its generation
    time (the one attribute that differs between two builds of one model)."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files["modelDescription.xml"] = re.sub(rb' generationDateAndTime="[^"]*"', b"",
                                           files["modelDescription.xml"])
    return files


def test_a_start_change_reuses_the_equations_and_gives_the_cold_bytes(cache, tmp_path, monkeypatch,
                                                                      compiled_sources):
    """The equations of motion do not depend on the start, so their entry
    is keyed without it: a build after a change of the crank's start does
    not derive them again (it did: the Stewart platform spent ~10 s of CPU
    on it), and its FMU is, file for file, the FMU a build with an empty
    cache makes of the new start.  The DOF check, which reads the start,
    still runs on a hit: a start at which Φ_q loses rank is refused as a
    derivation refuses it.  The start values are a translation unit of their
    own (model_start.c), so the rebuild compiles that and fmu_config.c (the
    GUID) only: model.c and its AVX copy come from the object cache (they
    were compiled again, 2 s of the four-bar's 5 s rebuild)."""
    from fmigen.derive import dae as dae_mod
    from fmigen.build import derived
    from fmigen.model import ModelError

    def moved():
        mech = load_mechanism("fourbar")
        next(c for c in mech.coordinates if c.name == "theta").start += 0.1
        return mech
    _build(load_mechanism("fourbar"), tmp_path / "a.fmu")
    build_dae = dae_mod.build_dae

    def refuse(mech):
        raise AssertionError("equations of motion derived again after a start change")
    monkeypatch.setattr(dae_mod, "build_dae", refuse)
    compiled_sources.clear()
    warm, model, log = _build(moved(), tmp_path / "warm.fmu")
    assert sorted(compiled_sources) == ["fmu_config.c", "model_start.c"]
    assert isinstance(model, Compiled) and HIT not in log   # the start keys the derived model
    assert model.start["theta"] == pytest.approx(np.pi / 2 + 0.1, abs=1e-15)
    # every coordinate at 0: the links along x, loop_x's row (the sines) is zero
    flat = load_mechanism("fourbar")
    for c in flat.coordinates:
        c.start = 0.0
    with pytest.raises(ModelError, match=r"constraint 'loop_x' .* rank Φ_q = 1 < m = 2"):
        derived.dae_of(flat)
    monkeypatch.setattr(dae_mod, "build_dae", build_dae)
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cold-cache")
    cold, _, _ = _build(moved(), tmp_path / "cold.fmu")
    a, w, c = _members(tmp_path / "a.fmu"), _members(warm), _members(cold)
    assert sorted(w) == sorted(c)
    assert [n for n in c if w[n] != c[n]] == []
    assert w["sources/model_start.c"] != a["sources/model_start.c"]   # the new start is in the FMU
    assert w["sources/model.c"] == a["sources/model.c"]


# --- the body recorded at another start (derived.body_of) ---------------------

def _double_crank(theta, open_=True):
    """tests/corpus's Grashof double-crank four-bar with its crank at
    ``theta``, the coupler-follower joint left (``open_``) or right of the
    line from the crank pin to the follower's pivot: the two assembly
    circuits.  Its primary sequence degenerates at two swept configurations
    that the exact completion covers, so its model.c holds the cover's
    decision."""
    from corpus._planar import four_bar
    return four_bar("fourbar_double_crank", "double crank", ground=2.0, crank=5.0, coupler=6.0, rocker=5.5,
                    theta=theta, open_=open_, tau=10.0)


def _cold(tmp_path, monkeypatch, mech, tag):
    """The FMU of a build with an empty cache of its own (and none of the
    assemblies this process solved before)."""
    from fmigen.kinematics import start_assembly
    monkeypatch.setattr(start_assembly, "_SOLVED", {})
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / f"cold-{tag}")
    path, model, _ = _build(mech, tmp_path / f"cold-{tag}.fmu")
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    return _members(path), model


def _refusing_generate(monkeypatch):
    """codegen.generate replaced by one that fails; returns the original."""
    from fmigen.generate import codegen
    generate = codegen.generate

    def refuse(*args, **kw):
        raise AssertionError("C generated again")
    monkeypatch.setattr(codegen, "generate", refuse)
    return generate


def test_a_start_change_takes_the_body_recorded_at_another_start(cache, tmp_path, monkeypatch, compiled_sources):
    """A build after a start change derives again (the start assembly,
    the branches, the workspace sweep and the cover's decisions follow the
    start) but takes the generated body recorded at the first start when
    what it holds of the start is unchanged: the partition, the cover's
    decisions, the unit scales (``derived.body_key``).  Its solution start
    is written for the new start.  The FMU is, file for file, the one a
    build with an empty cache makes of the new start: along the same
    circuit (the crank + 0.3 rad) and on the other circuit (the other
    assembly at the first crank angle: every dependent angle, and so the
    solution start's sines and cosines, differs).  Before the body was
    keyed without the start, these builds generated the C again."""
    from fmigen.generate import codegen
    first, first_model, _ = _build(_double_crank(np.pi / 2), tmp_path / "a.fmu")
    a = _members(first)
    for tag, theta, open_ in [("along", np.pi / 2 + 0.3, True), ("other-circuit", np.pi / 2, False)]:
        generate = _refusing_generate(monkeypatch)
        compiled_sources.clear()
        warm, model, log = _build(_double_crank(theta, open_), tmp_path / f"warm-{tag}.fmu")
        assert "[4/5] generated C from the derived-model cache (the body recorded at another start)" in log
        assert sorted(compiled_sources) == ["fmu_config.c", "model_start.c"]
        [solved_block] = model.triangular.blocks
        assert solved_block.completion is not None      # the cover's decision, taken at this start
        w = _members(warm)
        assert w["sources/model.c"] == a["sources/model.c"]
        assert w["sources/model_start.c"] != a["sources/model_start.c"]
        monkeypatch.setattr(codegen, "generate", generate)
        c, cold_model = _cold(tmp_path, monkeypatch, _double_crank(theta, open_), tag)
        assert cold_model.start == model.start
        assert sorted(w) == sorted(c)
        assert [n for n in c if w[n] != c[n]] == []
    assert all(abs(model.start[n] - v) > 0.5 for n, v in first_model.start.items() if n != "theta")


def test_a_body_is_not_taken_where_the_start_changes_it(cache, tmp_path, monkeypatch):
    """What the body holds of the start keys it: a start that moves a unit
    scale (the slider-crank's slider, whose scale is its start beyond the
    rod's 0.6 m: 0.687 m at θ = π/3, 0.6 m at π/2; the continuity
    tolerances hold it) and a start whose workspace cover decides
    otherwise (here: the double crank with no exact completion on offer,
    so its degenerate points go to the run-time Newton fallback) each
    generate their own body, the one a build with an empty cache makes;
    taking the body recorded at the first start would give other model.c
    bytes than that build (the scale's constants; the completion's code)."""
    from fmigen.kinematics import triangular

    def slider_at(theta, x_guess):
        mech = load_mechanism("slider_crank")
        for c in mech.coordinates:
            c.start = {"theta": theta, "x": x_guess}.get(c.name, c.start)
        return mech
    _build(slider_at(np.pi / 3, 0.7), tmp_path / "slider-a.fmu")
    _build(_double_crank(np.pi / 2), tmp_path / "crank-a.fmu")
    a_slider, a_crank = _members(tmp_path / "slider-a.fmu"), _members(tmp_path / "crank-a.fmu")
    warm, _, _ = _build(slider_at(np.pi / 2, 0.58), tmp_path / "slider-b.fmu")
    w = _members(warm)
    assert w["sources/model.c"] != a_slider["sources/model.c"]
    c, _ = _cold(tmp_path, monkeypatch, slider_at(np.pi / 2, 0.58), "slider")
    assert [n for n in c if w[n] != c[n]] == [] and sorted(w) == sorted(c)

    monkeypatch.setattr(triangular, "completion_plan", lambda solved_block: None)
    warm, model, _ = _build(_double_crank(np.pi / 2 + 0.3), tmp_path / "crank-b.fmu")
    [solved_block] = model.triangular.blocks
    assert solved_block.completion is None and solved_block.singular_points   # degenerate, not covered
    w = _members(warm)
    assert w["sources/model.c"] != a_crank["sources/model.c"]
    c, _ = _cold(tmp_path, monkeypatch, _double_crank(np.pi / 2 + 0.3), "crank")
    assert [n for n in c if w[n] != c[n]] == [] and sorted(w) == sorted(c)


def test_deriving_a_floating_base_leaves_its_key_as_it_was():
    """The floating base's equations set its frames' speeds for Kane's
    method; the frames are part of the mechanism's description, and the
    derived-model key reads them.  Before they were put back, a cold build
    filed its entry under the key of the derived mechanism, which no later
    lookup (made before deriving) computes: every new process derived
    again (the vehicle's suite tests, 80 s of CPU)."""
    from test_joint_model import floating_system
    from fmigen.build.pipeline import derivation_options, prepare_mechanism
    from fmigen.derive.cache_key import key_text
    mech = prepare_mechanism(floating_system(), lambda m: None, True)
    assert mech.floating_base is not None
    options = derivation_options(None, "groebner", None, "auto")
    described = key_text(mech, options)
    mech.equations_of_motion()
    assert key_text(mech, options) == described


def test_key_text_prints_each_expression_as_srepr_does(monkeypatch):
    """The key's printer prints each sub-expression object once
    (``cache_key._SharedRepr``): the text must be srepr's, character for
    character, for expressions that share objects, for equal floats of
    other precisions, for matrices and tuples, and for a whole mechanism's
    key."""
    import sympy as sp
    from fmigen.derive import cache_key
    x, y = sp.symbols("x y", real=True)
    shared = sp.sin(x) * sp.cos(y) + 3 * x
    exprs = [shared, shared ** 2 + shared, sp.Float(0.1, 15) * x, sp.Float(0.1, 30) * x,
             sp.Matrix([[shared, 0], [x, sp.Rational(1, 3)]]), (shared, x, sp.Integer(2)), sp.pi * shared]
    printer = cache_key._SharedRepr()
    assert [printer.doprint(e) for e in exprs] == [sp.srepr(e, order="none") for e in exprs]

    class Plain:
        def doprint(self, e):
            return sp.srepr(e, order="none")
    mech = load_mechanism("quarter_car_joints")
    options = {"order": None, "kinematics": "groebner"}
    shared_text = [cache_key.key_text(mech, options, start=s) for s in (True, False)]
    monkeypatch.setattr(cache_key, "_SharedRepr", Plain)
    plain_text = [cache_key.key_text(mech, options, start=s) for s in (True, False)]
    assert shared_text == plain_text
