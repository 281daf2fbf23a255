"""Model Exchange time events: the five-link's F_z(t) is piecewise in t
(mechanisms/five_link.py FZ_PIECES, breakpoints 1, 4, 5 and 5.5 s), and the
FMU announces each breakpoint as nextEventTime, so the importer's integrator
stops there instead of stepping across the kink.  One build (~20 s)."""
import zipfile
from pathlib import Path

import fmpy
import numpy as np
import pytest
from fmpy.fmi3 import FMU3Model

from fmigen.fmi import fmu as fmu_mod
from fmigen.derive.events import time_events
from fmigen.model import t
from fmigen.build.pipeline import build_fmus
from fmigen.verify.reference import solve_reference

BREAKPOINTS = [1.0, 4.0, 5.0, 5.5]
#: a moving start: at rest CVode's difference-quotient Jacobian uses
#: increments of ~1e-26 (they scale with |f|, which is ~0 there) and turns
#: round-off of the derivatives into a huge spurious stiffness
START = {"der(z)": 0.05}
RTOL = 1e-6
#: measured (fmpy 0.3.32, CVode rtol 1e-6): 4.3e-5 to 4.6e-5 with the events;
#: without them (the same sources built with -DFMIGEN_TIME_EVENTS=0) 1.9e-4 on
#: one build and 2.9e-5 on another whose sequence differs only in round-off:
#: F_z is continuous at its breakpoints (only its slope jumps), so stopping
#: there is not reliably more accurate; what the events guarantee is that the
#: integrator stops at each breakpoint, which the test checks instead
ERROR_BOUND = 1e-4


@pytest.fixture(scope="module")
def five_link(tmp_path_factory):
    d = tmp_path_factory.mktemp("events")
    paths, compiled = build_fmus("five_link", [(d / "fl2.fmu", "2", "me"), (d / "fl3.fmu", "3", "me")],
                                 windows=False)
    return paths, compiled.embedding.dae, d


def _without_time_events(path: Path, d: Path) -> Path:
    """The same FMU with its binary rebuilt from its own sources by the
    runtime that announces no time event (the behaviour before)."""
    u = Path(fmpy.extract(str(path), unzipdir=str(d / "noev")))
    so = next((u / "binaries" / "linux64").glob("*.so"))
    fmu_mod.compile_shared(u / "sources", so, "2", extra=["-DFMIGEN_TIME_EVENTS=0"])
    out = d / "noev.fmu"
    with zipfile.ZipFile(out, "w") as z:
        for f in sorted(u.rglob("*")):
            if f.is_file():
                z.write(f, f.relative_to(u).as_posix())
    return out


def test_breakpoints_come_from_the_piecewise_conditions(five_link):
    import sympy as sp
    assert time_events([sp.Piecewise((1, t < 2), (t, sp.And(t >= 3, t < 7)), (0, True)),
                        sp.Piecewise((t, t**2 < 4), (0, True))]) == [-2.0, 2.0, 3.0, 7.0]
    # a condition on the state is a state event, not a time event
    x = sp.Symbol("x")
    assert time_events([sp.Piecewise((1, x < 2), (0, True))]) == []
    paths, dae, _ = five_link
    assert "fmigen_event_times[] = {1.0, 4.0, 5.0, 5.5};" in Path(fmpy.extract(str(paths[0]))).joinpath(
        "sources", "model.c").read_text()


def test_fmi3_announces_each_breakpoint(five_link, tmp_path):
    path = five_link[0][1]
    md = fmpy.read_model_description(str(path))
    s = FMU3Model(guid=md.guid, unzipDirectory=fmpy.extract(str(path), unzipdir=str(tmp_path)),
                  modelIdentifier="five_link", instanceName="ev")
    s.instantiate()
    s.enterInitializationMode(startTime=0.0)
    s.exitInitializationMode()
    seen = []
    for tt in [0.0, *BREAKPOINTS]:
        s.setTime(tt)
        *_, defined, nxt = s.updateDiscreteStates()
        seen.append(nxt if defined else None)
    assert seen == [*BREAKPOINTS, None]
    s.freeInstance()


def test_cvode_across_the_breakpoints_matches_the_dae_reference(five_link):
    paths, dae, d = five_link
    names = dae.names
    T = np.round(np.arange(601) * 0.01, 10)

    def run(path):
        r = fmpy.simulate_fmu(str(path), stop_time=6.0, output_interval=0.01, solver="CVode",
                              relative_tolerance=RTOL, start_values=START,
                              output=[*names, *[f"der({n})" for n in names]])
        _, first = np.unique(r["time"], return_index=True)   # event rows repeat their time
        assert np.allclose(r["time"][first], T)
        return r[first], r["time"]

    with_events, times = run(paths[0])
    # the importer stopped at every breakpoint: fmpy records an event row
    # (a repeated time) at each
    repeated = sorted({float(x) for x in times[1:][np.diff(times) == 0]})
    assert repeated == BREAKPOINTS, repeated
    q0 = np.array([with_events[n][0] for n in names])
    v0 = np.array([with_events[f"der({n})"][0] for n in names])
    ref = solve_reference(dae, q0, v0, T, dae.mechanism.independent, rtol=1e-11)

    def error(r):
        return float(np.abs(np.array([r[n] for n in names]).T - ref.q).max())

    err = error(with_events)
    without, times_before = run(_without_time_events(paths[0], d))
    err_before = error(without)
    print(f"CVode rtol {RTOL}: max coordinate error {err:.3g} with time events, {err_before:.3g} without")
    assert err < ERROR_BOUND
    # without the announcement there is no event row at the breakpoints
    assert not set(times_before[1:][np.diff(times_before) == 0]) & set(BREAKPOINTS)
