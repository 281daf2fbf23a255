"""fmigen export-modelica: the exported Modelica model, loaded and simulated by
a real Modelica compiler (rumoca), against the FMU of the same derivation and
against the IDA reference (which shares no equation with the embedding)."""

import numpy as np
import pytest

rumoca = pytest.importorskip("rumoca")

from fmigen.tools.modelica import export_mechanism, mo  # noqa: E402
from fmigen.build.pipeline import build_fmu  # noqa: E402
from fmigen.verify.validate import simulate  # noqa: E402

STOP_LARGE = 0.1
H = 0.01

#: the coordinate-switching mechanisms simulated against the FMU's partition
#: sequence, with their horizons (s): the slider-crank driven from its slider
#: switches to the crank at its start and passes the inner (0.16 s) and outer
#: (0.34 s) dead centres; the four-bar of test_limit_position switches to its
#: rocker angle at 0.82 s, ahead of its crank angle's limit position
SWITCHING = {"slider_crank_from_slider": 0.4, "limit_fourbar": 1.0}


def _rumoca(text, name, stop, params=None):
    model = rumoca.Session().loads(text, model=name)
    structure = model.structure()
    # solver "rk-like": rumoca's BDF at these tolerances stops on its own
    # dense-output consistency check across the predictor's sample events
    result = model.simulate((0, stop), dt=H, config=rumoca.SimConfig(solver="rk-like", rtol=1e-11, atol=1e-13),
                            params=params or None)
    return structure, result


def _at(result, name, times):
    t, y = np.asarray(result.time), np.asarray(result[name])
    keep = np.r_[np.diff(t) > 0, True]   # an event repeats its time: the value after it
    return np.interp(times, t[keep], y[keep])


#: every mechanism whose export is simulated against the FMU and the IDA
#: reference, with its horizon (s): the large ones over a shorter one, which
#: still covers their motion at many predictor samples (docs/modelica.md
#: has what each costs)
SIMULATED = {"fourbar": 1.0, "slider_crank": 1.0, "stewart": STOP_LARGE, "five_link": STOP_LARGE,
             "stephenson3": STOP_LARGE, "slider_crank_from_slider": SWITCHING["slider_crank_from_slider"]}

#: tunable parameters set away from their defaults, the same in rumoca, the
#: FMU and the IDA reference: at their defaults the Stewart platform (g = 0,
#: leg forces of 0.1 N) and the five-link (F0 holds the carrier against
#: gravity) hardly move within a short horizon; under gravity, unheld, both
#: fall
PARAMETERS = {"stewart": {"g": 9.81}, "five_link": {"F0": 0.0}}

#: the least excursion of the mechanism's largest-moving coordinate over its
#: horizon: a thousand times the 1e-6 to which the trajectories must agree,
#: so that agreeing says more than that nothing moved
MOVES = 1e-3

#: what the export does with every other module of mechanisms/
#: (docs/modelica.md's table has each one's outcome and cost): loaded and
#: checked balanced here, each in a few seconds of CPU ...
LOADED = ["fourbar_joints", "fourbar_double_crank", "slider_crank_joints", "fourbar_chain", "eight_link",
          "landing_gear_dynamic", "landing_gear_dynamic_joints", "landing_gear_joints"]
#: ... simulated in tests/test_modelica_motion.py (a kinematic mechanism) ...
MOTION = ["landing_gear"]
#: ... and left to docs/modelica.md: exported and balanced there, but each
#: costs the suite 10 s to minutes of derivation and loading (the vehicle's
#: hundreds of seconds), and the two that do not build minutes of their
#: derivation before they fail
NOT_HERE = {"stewart_joints", "ladder", "five_link_joints", "quarter_car_joints", "front_corner",
            "stephenson3_joints", "vehicle", "stewart_66", "stewart_66_platform"}


@pytest.fixture(scope="module", params=["fourbar", "slider_crank"])
def exported(request, tmp_path_factory):
    text, name, compiled = export_mechanism(request.param)
    return request.param, text, name, compiled, tmp_path_factory.mktemp(request.param)


@pytest.fixture(scope="module", params=list(SIMULATED))
def simulated(request, tmp_path_factory):
    """(mechanism, its Compiled derivation, rumoca's structure, rumoca's
    result, the horizon): each export loaded and simulated once for the
    checks below."""
    mech, stop = request.param, SIMULATED[request.param]
    text, name, compiled = export_mechanism(mech)
    structure, result = _rumoca(text, name, stop, PARAMETERS.get(mech))
    return mech, compiled, structure, result, stop, tmp_path_factory.mktemp(mech)


def test_every_shipped_mechanism_has_its_outcome():
    """A mechanism added to mechanisms/ must be put in one of the lists
    (and docs/modelica.md's table)."""
    from pathlib import Path
    shipped = {p.stem for p in (Path(__file__).resolve().parent.parent / "mechanisms").glob("*.py")}
    listed = [*SIMULATED, *LOADED, *MOTION, *NOT_HERE, "corner_geometry"]   # the last a helper module
    assert len(listed) == len(set(listed)) and set(listed) == shipped


@pytest.mark.parametrize("mech", LOADED)
def test_exported_model_loads_balanced(mech):
    text, name, compiled = export_mechanism(mech)
    structure = rumoca.Session().loads(text, model=name).structure()
    assert structure.is_balanced
    # a kinematic mechanism's independent coordinates are inputs, not states
    kinematic = compiled.dae.mechanism.kinematic
    assert structure.n_states == (0 if kinematic else 2 * len(compiled.independent_names))


def _limit_fourbar(reaction=False):
    """The four-bar of test_limit_position whose crank angle reaches a limit
    position, with its rocker angle as a second set of independent
    coordinates (and optionally a joint reaction)."""
    from test_limit_position import fuzz_fourbar
    from fmigen.build.pipeline import as_mechanism
    s = fuzz_fourbar()
    if reaction:
        s.reaction("A")
    m = as_mechanism(s)
    m.switch_independent = [["phi"]]
    return m


def test_switching_with_reactions_is_refused():
    from fmigen.model import ModelError
    with pytest.raises(ModelError, match="has coordinate switching .* together with joint reactions"):
        export_mechanism(_limit_fourbar(reaction=True))


def _fmu_partitions(fmu, names, stop):
    """The FMU's trajectory at every 1 ms and its switches: (the end of the
    1 ms communication step in which it switched, the new independent
    coordinates), from its log."""
    import fmpy
    from conftest import reset_fmpy_logger
    messages, switches = [], []

    def logger(component, instance, status, category, message):
        messages.append(message.decode())

    def step_finished(time, recorder):
        switches.extend((time, m.split("independent coordinates now ")[1].split(" (")[0]) for m in messages
                        if "coordinate switching" in m)
        messages.clear()
        return True
    ref = fmpy.simulate_fmu(str(fmu), stop_time=stop, output_interval=1e-3, logger=logger, debug_logging=True,
                            step_finished=step_finished, output=[*names, *[f"der({c})" for c in names]])
    reset_fmpy_logger()   # later FMUs must not log through the freed logger
    return ref, switches


@pytest.mark.parametrize("mech", SWITCHING)
def test_switching_follows_the_fmus_partitions(mech, tmp_path):
    """Coordinate switching: the model switches to the same independent
    coordinates as the FMU, at the same time (the FMU at the first step
    start past the model's event, so within the 1 ms communication step
    that logs it, plus its 0.1 ms step), and their trajectories agree to
    1e-6 through the switches; the FMU does switch on the horizon."""
    stop = SWITCHING[mech]
    spec = _limit_fourbar() if mech == "limit_fourbar" else mech
    text, name, compiled = export_mechanism(spec)
    structure, result = _rumoca(text, name, stop)
    assert structure.is_balanced and structure.n_states == 2 * len(compiled.independent_names)
    fmu, _ = build_fmu(spec, tmp_path / "switching.fmu", solver="rk4", step=1e-4, windows=False)
    names = compiled.dae.names
    ref, fmu_switches = _fmu_partitions(fmu, names, stop)
    assert fmu_switches and ref["time"][-1] == pytest.approx(stop)
    sets = [", ".join(names[i] for i in e.independent)
            for e, _ in [(compiled.embedding, None), *compiled.alternatives]]
    t, part = np.asarray(result.time), np.asarray(result["fmigen_part"]).astype(int)
    # a switch at the start shows in the first sample already
    model_switches = [(float(t[0]), sets[part[0] - 1])] if part[0] != 1 else []
    model_switches += [(float(t[k + 1]), sets[part[k + 1] - 1]) for k in np.nonzero(np.diff(part))[0]]
    print(f"{mech}: switches, model {model_switches}, FMU {fmu_switches}")
    assert [s for _, s in model_switches] == [s for _, s in fmu_switches]
    for (tm, _), (tf, _) in zip(model_switches, fmu_switches):
        assert tm <= tf <= tm + 1e-3 + 1e-4 + 1e-9
    worst = 0.0
    for c in names:
        for mname, fname in ((c, c), ("v_" + c, f"der({c})")):
            worst = max(worst, float(np.max(np.abs(_at(result, mname, ref["time"]) - ref[fname]))))
    print(f"{mech}: max |Modelica - FMU| over {stop} s = {worst:.3g}")
    assert worst <= 1e-6


def test_exported_model_loads_balanced_and_matches_the_fmu(simulated):
    mech, compiled, structure, result, stop, tmp = simulated
    assert structure.is_balanced
    assert structure.n_states == 2 * len(compiled.independent_names)
    fmu, _ = build_fmu(mech, tmp / f"{mech}.fmu", solver="rk4", step=1e-4, windows=False)
    names = compiled.dae.names
    ref = simulate(fmu, names, stop, H, start_values=PARAMETERS.get(mech))
    assert len(ref["time"]) == round(stop / H) + 1
    worst = 0.0
    for c in names:
        got = _at(result, c, ref["time"])
        worst = max(worst, float(np.max(np.abs(got - ref[c]))))
        vel = _at(result, "v_" + c, ref["time"])
        worst = max(worst, float(np.max(np.abs(vel - ref[f"der({c})"]))))
    print(f"{mech}: max |Modelica - FMU| = {worst:.3g}")
    assert worst <= 1e-6


def test_the_mechanism_moves_over_the_horizon(simulated):
    mech, compiled, _, result, stop, _ = simulated
    times = np.arange(0, stop + H / 2, H)
    moved = {c: float(np.ptp(_at(result, c, times))) for c in compiled.dae.names}
    print(f"{mech}: excursions over {stop} s: {moved}")
    assert max(moved.values()) >= MOVES


def test_exported_model_matches_the_ida_reference(simulated):
    from fmigen.verify.reference import solve_reference
    mech, compiled, _, result, stop, _ = simulated
    dae = compiled.dae
    times = np.arange(0, stop + H / 2, H)
    q0 = np.array([compiled.start[n] for n in dae.names])
    numeric = dae.closure.numeric   # the reference's parameter values (tunable, then inputs)
    for k, p in enumerate(dae.tunable):
        numeric.pu[k] = PARAMETERS.get(mech, {}).get(str(p), numeric.pu[k])
    ref = solve_reference(dae, q0, dae.start_velocity_guess(), times, compiled.independent_names)
    worst = max(float(np.max(np.abs(_at(result, c, times) - ref.q[:, k]))) for k, c in enumerate(dae.names))
    print(f"{mech}: max |Modelica - IDA| = {worst:.3g}")
    assert worst <= 1e-6


def test_document_units_and_interface(exported):
    mech, text, name, compiled, _ = exported
    model = rumoca.Session().loads(text, model=name)
    m = compiled.dae.mechanism
    for p in m.parameters:
        if p.tunable:
            assert model.parameters[p.name].unit == (p.unit or None)
    for i in compiled.partition.independent:
        c = m.coordinates[i]
        assert model.states[c.name].unit == c.unit
    assert "Documentation(info=" in text and "Gr&ouml;bner" in text
    assert [v for v in model.inputs.names] == [u.name for u in m.inputs]


def test_printer():
    import sympy as sp
    x, y = sp.symbols("x y")
    assert mo(x**2) == "(x*x)"
    assert mo(sp.sqrt(x)) == "sqrt(x)"
    assert mo(1 / x) == "1.0/x"
    assert mo(x**-2) == "1.0/(x*x)"
    assert mo(1 / (x + y)) == "1.0/(x + y)"
    assert mo(-x**2) == "-(x*x)"
    assert mo(sp.Rational(1, 3)) == "(1.0/3.0)"
    assert mo(sp.Piecewise((x, x > 0), (y, True))) == "(if (x > 0) then x else y)"
    assert mo(sp.atan2(y, x)) == "atan2(y, x)"
    assert mo(x**7) == "(x)^(7)"


def test_cli_writes_the_model_and_refuses_what_it_cannot_write(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent   # the CLI of this checkout
    out = tmp_path / "fb.mo"
    run = subprocess.run([sys.executable, "-m", "fmigen.cli", "export-modelica", "fourbar", "-o", str(out),
                          "--package", "Plant", "--json"], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"modelica": str(out), "model": "Plant.fourbar"}
    model = rumoca.Session().loads(out.read_text(), model="Plant.fourbar")
    assert model.structure().is_balanced
    # coordinate switching with a kinematic interface: the independent
    # coordinates are the interface's inputs, one fixed set
    spec = tmp_path / "switching_kinematic.py"
    spec.write_text("from mechanisms.slider_crank_from_slider import build as _build\n\n\n"
                    "def build():\n    m = _build()\n    m.kinematic = True\n    return m\n")
    bad = subprocess.run([sys.executable, "-m", "fmigen.cli", "export-modelica", str(spec), "-o",
                          str(tmp_path / "sc.mo")], capture_output=True, text=True, cwd=root)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "coordinate switching" in bad.stderr and "together with a kinematic interface" in bad.stderr


# --- the FMU wrapper (export-modelica --fmu) ---------------------------------

@pytest.fixture(scope="module")
def fourbar_fmu(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wrapper")
    fmu, _ = build_fmu("fourbar", tmp / "fourbar.fmu", windows=False)
    return fmu, tmp


def _stubbed(text):
    """The wrapper with its external functions' bodies replaced by Modelica
    algorithms (rumoca runs no external C and rejects an impure Modelica
    body): the handle 1, and the outputs t + h."""
    import re
    stub = {"fmigen_fmi2_instantiate": "handle := 1;", "fmigen_fmi2_step": "y := fill(t + h, size(yvr, 1));"}
    out, n = re.subn(r'  external "C".*?  end (fmigen_\w+);',
                     lambda m: f"  algorithm\n    {stub[m.group(1)]}\n  end {m.group(1)};", text, flags=re.S)
    assert n == 2
    return out.replace("impure function", "function")


def test_fmu_wrapper_parses_and_flattens_with_stubbed_externals(fourbar_fmu, tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path
    from fmpy import read_model_description
    fmu, _ = fourbar_fmu
    root = Path(__file__).resolve().parent.parent
    out = tmp_path / "fourbar_wrapper.mo"
    run = subprocess.run([sys.executable, "-m", "fmigen.cli", "export-modelica", "fourbar", "--fmu", str(fmu),
                          "-o", str(out), "--json"], capture_output=True, text=True, cwd=root)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["model"] == "fourbar_fmu.fourbar"
    unzipped = Path(report["fmu_directory"])
    assert (unzipped / "binaries" / "linux64" / "fourbar.so").is_file()
    text = out.read_text()
    assert f'fmuDirectory = "{unzipped}"' in text
    model = rumoca.Session().loads(_stubbed(text), model="fourbar_fmu.fourbar")
    assert model.structure().is_balanced
    md = read_model_description(str(fmu))
    tunable = [v for v in md.modelVariables if v.causality == "parameter" and v.variability == "tunable"]
    assert [p for p in model.parameters.names if p not in ("fmuDirectory", "communicationStepSize", "fmigen_fmu")] \
        == [v.name for v in tunable]
    for v in tunable:
        assert model.parameters[v.name].unit == v.unit
    assert list(model.inputs.names) == ["tau"]
    # every output of the FMU, in value-reference order, read at each communication point
    outputs = [v for v in md.modelVariables if v.causality == "output"]
    assert "{" + ", ".join(str(v.valueReference) for v in outputs) + "})" in text
    assert f"communicationStepSize(unit=\"s\") = {float(md.defaultExperiment.stepSize)!r}" in text


def test_fmu_wrapper_c_drives_the_fmu_as_fmpy_does(fourbar_fmu, tmp_path):
    """The C the wrapper carries in its Include annotation, compiled with a
    stand-in for the tool's ModelicaUtilities and called as the wrapper calls
    it (instantiate with the parameters and the input's start, then a step per
    communication point): the outputs equal fmpy's co-simulation of the same
    FMU with the same parameters."""
    import ctypes
    import shutil
    import subprocess
    import zipfile
    from fmpy import simulate_fmu
    from fmigen.tools.modelica_fmu import FMI2_IMPORT_C
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    fmu, _ = fourbar_fmu
    unzipped = tmp_path / "fmu"
    zipfile.ZipFile(fmu).extractall(unzipped)
    (tmp_path / "ModelicaUtilities.h").write_text(
        "#include <stdio.h>\n#include <stdlib.h>\n#include <stdarg.h>\n"
        "static void ModelicaError(const char *m) { fprintf(stderr, \"%s\\n\", m); exit(3); }\n"
        "static void ModelicaFormatError(const char *f, ...) { va_list a; va_start(a, f); vfprintf(stderr, f, a);"
        " va_end(a); exit(3); }\n"
        "static void ModelicaFormatMessage(const char *f, ...) { va_list a; va_start(a, f); vfprintf(stderr, f, a);"
        " va_end(a); }\n")
    (tmp_path / "shim.c").write_text(FMI2_IMPORT_C)
    lib = tmp_path / "shim.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-I", str(tmp_path), str(tmp_path / "shim.c"), "-o", str(lib),
                    "-ldl"], check=True)
    shim = ctypes.CDLL(str(lib))
    ints = lambda xs: (ctypes.c_int * len(xs))(*xs)  # noqa: E731
    reals = lambda xs: (ctypes.c_double * len(xs))(*xs)  # noqa: E731
    # g = 4.0 and m2 = 1.5 instead of the FMU's starts, tau = 2.0: the
    # parameters and the input reach the FMU
    vr_g, vr_m2, vr_tau = 8, 10, 7
    shim.fmigen_fmi2_instantiate.restype = ctypes.c_int
    shim.fmigen_fmi2_instantiate.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_double, ctypes.c_void_p,
                                                                      ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    handle = shim.fmigen_fmi2_instantiate(str(unzipped).encode(), b"fourbar", _guid(fmu).encode(), b"w", 0.0,
                                          ints([vr_g, vr_m2, vr_tau]), 3, reals([4.0, 1.5, 2.0]), 3)
    assert handle == 1
    shim.fmigen_fmi2_step.argtypes = [ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                      ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    h, steps = 1e-3, 200
    yvr = [0, 1, 2, 3]
    got = []
    y = (ctypes.c_double * 4)()
    for k in range(steps + 1):
        shim.fmigen_fmi2_step(handle, k * h, h, ints([vr_tau]), 1, reals([2.0]), 1, ints(yvr), 4, y, 4)
        got.append(list(y))
    got = np.array(got)
    ref = simulate_fmu(str(fmu), stop_time=steps * h, step_size=h, output_interval=h,
                       start_values={"g": 4.0, "m2": 1.5, "tau": 2.0}, output=["theta", "alpha", "phi", "der(theta)"])
    want = np.column_stack([ref[c] for c in ("theta", "alpha", "phi", "der(theta)")])
    assert len(ref) == steps + 1
    assert np.max(np.abs(got - want)) <= 1e-12
    assert np.ptp(got[:, 0]) > 1e-3   # the crank moved


def _guid(fmu):
    from fmpy import read_model_description
    return read_model_description(str(fmu)).guid


def test_fmu_wrapper_refuses_an_fmu_it_cannot_drive(fourbar_fmu, tmp_path):
    from fmigen.model import ModelError
    from fmigen.tools.modelica_fmu import fmu_wrapper
    _, tmp = fourbar_fmu
    me, _ = build_fmu("fourbar", tmp / "fourbar_me.fmu", kind="me", windows=False)
    with pytest.raises(ModelError, match="no Co-Simulation interface"):
        fmu_wrapper(me, tmp_path)
    (tmp_path / "x.fmu").write_text("not a zip")
    with pytest.raises(ModelError, match="not a readable FMU"):
        fmu_wrapper(tmp_path / "x.fmu", tmp_path)


# --- hard points and the refusals --------------------------------------------

def test_hard_point_is_a_ranged_parameter_and_the_export_holds_across_its_range(tmp_path):
    """The four-bar's rocker length l3 as a hard point (tests/data): exported
    as a parameter with its declared range as min/max.  The block's sequence
    is over Q(K), l3 inside the K, so the exported model is the FMU's at
    every value of the range: at both ends, set in rumoca and in the FMU
    before the start, the trajectories agree (the model re-assembles its
    dependent coordinates from the prediction, the FMU from the build's
    branch); outside the range rumoca stops at the model's assert, as the FMU
    refuses the value."""
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    spec = str(root / "tests" / "data" / "fourbar_hard_point.py")
    text, name, compiled = export_mechanism(spec)
    lower, upper = next(p.range for p in compiled.dae.mechanism.parameters if p.name == "l3")
    model = rumoca.Session().loads(text, model=name)
    assert model.structure().is_balanced
    assert (model.parameters["l3"].min, model.parameters["l3"].max) == (lower, upper)
    fmu, _ = build_fmu(spec, tmp_path / "hp.fmu", solver="rk4", step=1e-4, windows=False)
    names, stop = compiled.dae.names, 1.0
    config = rumoca.SimConfig(solver="rk-like", rtol=1e-11, atol=1e-13)
    starts = {}
    for l3 in (lower, upper):
        result = model.simulate((0, stop), dt=H, config=config, params={"l3": l3})
        ref = simulate(fmu, names, stop, H, start_values={"l3": l3})
        worst = max(float(np.max(np.abs(_at(result, m, ref["time"]) - ref[f]))) for c in names
                    for m, f in ((c, c), ("v_" + c, f"der({c})")))
        print(f"l3 = {l3}: max |Modelica - FMU| = {worst:.3g}")
        assert worst <= 1e-6
        starts[l3] = ref["phi"][0]
    assert abs(starts[upper] - starts[lower]) > 1e-2   # l3 reached the assembly
    with pytest.raises(rumoca.SimulationError, match="hard point l3 outside its declared range"):
        model.simulate((0, stop), dt=H, config=config, params={"l3": upper + 0.1})



def test_stops_and_a_static_trim_export():
    """A joint limit or bump stop is a piecewise force (``if`` expressions
    the tool integrates through): the rotors of tests/test_limits.py bounce
    off their stops as their closed forms say (the limit's: the FMU at RK4
    1 ms meets them to 2e-5, rumoca's adaptive solver to 1e-9 measured).  A static trim is the
    preload as an expression of the tunable parameters: the sprung mass of
    tests/test_trim.py rests at its start for other masses and gravities,
    its output ``trim_coil`` the closed-form preload."""
    import math
    from test_limits import AT, D1, J, K1, K2, W, _check_closed_forms, bump_rotor, rotor
    from test_trim import G, K as COIL_RATE, Z0, preload, sprung_mass
    config = rumoca.SimConfig(solver="rk-like", rtol=1e-11, atol=1e-13)
    text, name, _ = export_mechanism(rotor())
    model = rumoca.Session().loads(text, model=name)
    assert model.structure().is_balanced
    result = model.simulate((0, 0.7), dt=1e-3, config=config)
    t = np.asarray(result.time)
    keep = np.r_[np.diff(t) > 0, True]
    _check_closed_forms({"time": t[keep], "q": np.asarray(result["q"])[keep],
                         "der(q)": np.asarray(result["v_q"])[keep]}, 1e-8, 1e-3)
    # the bump stop's table: the deepest deflection (sampled every 1 ms) and
    # the rebound at the speed it came in with
    text, name, _ = export_mechanism(bump_rotor())
    model = rumoca.Session().loads(text, model=name)
    assert model.structure().is_balanced
    result = model.simulate((0, 0.4), dt=1e-3, config=config)
    v1, w2, x_eq = math.sqrt(W**2 - K1 * D1**2 / J), math.sqrt(K2 / J), -K1 * D1 / K2
    deepest = D1 + math.hypot(x_eq, v1 / w2) + x_eq
    assert deepest * math.cos(5e-4 * w2) <= np.max(result["q"]) - AT <= deepest + 1e-9
    assert np.asarray(result["v_q"])[-1] == pytest.approx(-W, abs=1e-8)
    text, name, _ = export_mechanism(sprung_mass())
    model = rumoca.Session().loads(text, model=name)
    assert model.structure().is_balanced
    for m, g in ((2.0, G), (5.0, G), (2.0, 3.7)):
        result = model.simulate((0, 1.0), dt=0.05, config=config, params={"m": m, "g": g})
        assert np.asarray(result["trim_coil"]) == pytest.approx(preload(m, g), abs=1e-12 * COIL_RATE)
        assert np.abs(np.asarray(result["z"]) - Z0).max() < 1e-12
