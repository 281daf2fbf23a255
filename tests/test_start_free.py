"""A joint system's conversion at another start (``joint_model.at_start``, fmigen/frontends/joint_start.py):
a build after a start change replays only what follows the start (the row
selection, the start checks and assembly) on the conversion cached without
the start, and its FMU is, file for file, the one a build with an empty cache
makes of the new start; a start at which the selection decides otherwise
is converted in full."""

import importlib
import importlib.util
import math
import re
import zipfile
from pathlib import Path

import pytest

from fmigen.build import derived
from fmigen.build.pipeline import build_fmu
from fmigen.derive.cache_key import key_text
from fmigen.frontends import joint_model
from fmigen.kinematics import groebner, start_assembly

#: (mechanism, coordinate, change): a start change of each
CHANGES = [("stephenson3_joints", "theta", 0.05), ("fourbar_joints", "theta", 0.1),
           ("five_link_joints", "z", 0.005), ("stewart_joints", "psi", 0.05), ("front_corner", "z", 0.005)]


def _system(name, coordinate=None, change=0.0):
    s = importlib.import_module(f"mechanisms.{name}").build()
    if coordinate is not None:
        c = next(c for j in s.joints.values() for c in j.coordinates if c.name == coordinate)
        c.start += change
    return s


def _members(path):
    """Every file of an FMU, modelDescription.xml without its generation time."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    files["modelDescription.xml"] = re.sub(rb' generationDateAndTime="[^"]*"', b"", files["modelDescription.xml"])
    return files


def _build(system, out, cache, monkeypatch):
    monkeypatch.setattr(groebner, "CACHE_DIR", cache)
    lines = []
    build_fmu(system, out, reuse=True, windows=False, log=lines.append)
    return _members(out), "\n".join(lines)


def _refuse_conversion(monkeypatch):
    def refuse(system):
        raise AssertionError("the joint system converted in full after a start change")
    monkeypatch.setattr(joint_model, "convert", refuse)


@pytest.mark.parametrize("name,coordinate,change", CHANGES)
def test_a_start_change_replays_the_conversion_and_builds_the_cold_bytes(tmp_path, monkeypatch, name,
                                                                         coordinate, change):
    """Built at its shipped start, then at a changed one: the second build
    does not convert the joint system (the start-free entry and
    ``joint_model.at_start``), and its FMU (model.c, model_start.c,
    modelDescription.xml, the shared library: every file) is the one an
    empty-cache build of the changed start makes."""
    _build(_system(name), tmp_path / "first.fmu", tmp_path / "cache", monkeypatch)
    convert = joint_model.convert
    _refuse_conversion(monkeypatch)
    monkeypatch.setattr(start_assembly, "_SOLVED", {})
    warm, _ = _build(_system(name, coordinate, change), tmp_path / "warm.fmu", tmp_path / "cache", monkeypatch)
    monkeypatch.setattr(joint_model, "convert", convert)
    monkeypatch.setattr(start_assembly, "_SOLVED", {})
    cold, _ = _build(_system(name, coordinate, change), tmp_path / "cold.fmu", tmp_path / "cold", monkeypatch)
    assert sorted(warm) == sorted(cold)
    assert any(n.endswith(".so") for n in cold)
    assert [n for n in cold if warm[n] != cold[n]] == []


def test_a_hard_point_default_change_builds_the_cold_bytes(tmp_path, monkeypatch):
    """The quarter car with link 1's chassis point ``C1z`` a hard point
    (15 dependent coordinates: too many for the start-assembly check, so
    the derivation assembles the start), built at its default and again
    with the default 1 mm higher in the same cache: the second FMU is, file
    for file, the one an empty-cache build at the new default makes.  The
    derived model's key holds the hard points' defaults (the geometry its
    assembled start belongs to); without them the second build took the
    first's derived model whole, its start assembled at the old default."""
    spec = importlib.util.spec_from_file_location("quarter_car_hard_point",
                                                  Path(__file__).with_name("data") / "quarter_car_hard_point.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    design = next(float(p.value) for p in module.build().parameters if p.name == "C1z")
    _build(module.build(), tmp_path / "first.fmu", tmp_path / "cache", monkeypatch)
    warm, _ = _build(module.build(design + 0.001), tmp_path / "warm.fmu", tmp_path / "cache", monkeypatch)
    cold, _ = _build(module.build(design + 0.001), tmp_path / "cold.fmu", tmp_path / "cold", monkeypatch)
    assert sorted(warm) == sorted(cold)
    assert [n for n in cold if warm[n] != cold[n]] == []


def _fourbar_preferring_the_rocker(toggle):
    """fourbar_joints with the rocker ``phi`` preferred independent, at its
    shipped start or (``toggle``) where crank and coupler are collinear:
    there Φ_d is singular with the rocker independent, and the selection
    leaves the choice to the partition (another model)."""
    s = _system("fourbar_joints")
    s.independent, s.preferred_independent = None, ["phi"]
    if toggle:
        # |B| = l1 + l2 = 5 on the rocker's circle of 2.5 about (3, 0)
        x = 4.625
        y = math.sqrt(25 - x * x)
        s.joints["theta"].coordinates[0].start = math.atan2(y, x)
        s.joints["A"].coordinates[0].start = 0.0
        s.joints["phi"].coordinates[0].start = math.atan2(y, x - 3)
    return s


def test_a_start_where_the_selection_decides_otherwise_converts_in_full(tmp_path, monkeypatch):
    """The start-free entry is a conversion at another start; where the row
    selection at the new start decides otherwise (here: the preferred
    independent coordinate is taken at the first start, not at the second),
    ``at_start`` refuses it and the system is converted in full, to the
    mechanism a conversion with no cache makes."""
    from fmigen.frontends.joint_model import at_start
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    first = derived.mechanism_of(_fourbar_preferring_the_rocker(False))
    assert first.independent == ["phi"]
    mech, record = derived._read_pickle(derived._joint_entry(_fourbar_preferring_the_rocker(False),
                                                             derived.JOINT_START_FREE_FORMAT, False))
    assert at_start(_fourbar_preferring_the_rocker(True), mech, record) is None
    calls, convert = [], joint_model.convert
    monkeypatch.setattr(joint_model, "convert", lambda s: calls.append(s) or convert(s))
    moved = derived.mechanism_of(_fourbar_preferring_the_rocker(True))
    assert len(calls) == 1
    fresh = joint_model.to_mechanism(_fourbar_preferring_the_rocker(True))
    assert moved.independent is None and "not taken" in moved.independent_note
    options = {"order": None}
    assert key_text(moved, options) == key_text(fresh, options) != key_text(first, options)


def test_a_trimmed_system_replays_a_start_or_hard_point_change(tmp_path, monkeypatch):
    """A trim is solved by the runtime at initialization (its preload a
    hidden input), so nothing of the conversion follows the start beyond
    what ``at_start`` replays: a start change, and a change of a hard
    point's value (the spring's anchor), reuse the start-free entry with no
    conversion, to the mechanism a conversion with no cache makes (on main
    the trimmed preload's numbers followed the start: a conversion each
    time, and another derivation)."""
    from test_trim import ANCHOR, sprung_mass
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    assert joint_model.convert(sprung_mass(anchor=ANCHOR))[1] is not None
    first = derived.mechanism_of(sprung_mass(anchor=ANCHOR))
    calls, convert = [], joint_model.convert
    monkeypatch.setattr(joint_model, "convert", lambda s: calls.append(s) or convert(s))
    moved_system = sprung_mass(anchor=ANCHOR)
    moved_system.joints["z"].coordinates[0].start += 0.01
    moved = derived.mechanism_of(moved_system)
    anchored = derived.mechanism_of(sprung_mass(anchor=0.24))
    assert calls == []
    options = {"order": None}
    for mech, system in ((moved, moved_system), (anchored, sprung_mass(anchor=0.24))):
        fresh = convert(system)[0]
        assert key_text(mech, options) == key_text(fresh, options)
        assert [(p.name, p.value) for p in mech.parameters] == [(p.name, p.value) for p in fresh.parameters]
        assert key_text(mech, options, start=False) == key_text(first, options, start=False)
    assert next(p.value for p in anchored.parameters if p.name == "a") == 0.24


def test_a_start_change_replays_the_conversion(tmp_path, monkeypatch):
    """``mechanism_of`` at a changed start, from the start-free entry: no
    conversion, the mechanism of a conversion with no cache to every
    detail the derived-model key reads (starts and described start too),
    and this start's own entry written."""
    monkeypatch.setattr(groebner, "CACHE_DIR", tmp_path / "cache")
    derived.mechanism_of(_system("stephenson3_joints"))
    convert = joint_model.convert
    _refuse_conversion(monkeypatch)
    moved = derived.mechanism_of(_system("stephenson3_joints", "theta", 0.05))
    monkeypatch.setattr(joint_model, "convert", convert)
    fresh = joint_model.to_mechanism(_system("stephenson3_joints", "theta", 0.05))
    options = {"order": None}
    assert key_text(moved, options) == key_text(fresh, options)
    assert moved.described_start == fresh.described_start
    assert len(list((tmp_path / "cache" / "joint_models").glob("*.pickle"))) == 3
