"""fmigen export-modelica: the exported Modelica model, loaded and simulated by
a real Modelica compiler (rumoca), against the FMU of the same derivation and
against the IDA reference (which shares no equation with the embedding)."""

import numpy as np
import pytest

rumoca = pytest.importorskip("rumoca")

from fmigen.tools.modelica import export_mechanism, mo  # noqa: E402
from fmigen.build.pipeline import build_fmu  # noqa: E402
from fmigen.verify.validate import simulate  # noqa: E402

STOP = 1.0
H = 0.01


def _rumoca(text, name):
    model = rumoca.Session().loads(text, model=name)
    structure = model.structure()
    # solver "rk-like": rumoca's BDF at these tolerances stops on its own
    # dense-output consistency check across the predictor's sample events
    result = model.simulate((0, STOP), dt=H, config=rumoca.SimConfig(solver="rk-like", rtol=1e-11, atol=1e-13))
    return structure, result


def _at(result, name, times):
    t, y = np.asarray(result.time), np.asarray(result[name])
    keep = np.r_[np.diff(t) > 0, True]   # an event repeats its time: the value after it
    return np.interp(times, t[keep], y[keep])


@pytest.fixture(scope="module", params=["fourbar", "slider_crank"])
def exported(request, tmp_path_factory):
    text, name, compiled = export_mechanism(request.param)
    return request.param, text, name, compiled, tmp_path_factory.mktemp(request.param)


def test_exported_model_loads_balanced_and_matches_the_fmu(exported):
    mech, text, name, compiled, tmp = exported
    structure, result = _rumoca(text, name)
    assert structure.is_balanced
    assert structure.n_states == 2 * len(compiled.independent_names)
    fmu, _ = build_fmu(mech, tmp / f"{mech}.fmu", solver="rk4", step=1e-4, windows=False)
    names = compiled.dae.names
    ref = simulate(fmu, names, STOP, H)
    worst = 0.0
    for c in names:
        got = _at(result, c, ref["time"])
        worst = max(worst, float(np.max(np.abs(got - ref[c]))))
        vel = _at(result, "v_" + c, ref["time"])
        worst = max(worst, float(np.max(np.abs(vel - ref[f"der({c})"]))))
    print(f"{mech}: max |Modelica - FMU| = {worst:.3g}")
    assert worst <= 1e-6


def test_exported_model_matches_the_ida_reference(exported):
    from fmigen.verify.reference import solve_reference
    mech, text, name, compiled, tmp = exported
    _, result = _rumoca(text, name)
    dae = compiled.dae
    times = np.arange(0, STOP + H / 2, H)
    q0 = np.array([compiled.start[n] for n in dae.names])
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


def test_cli_writes_the_model_and_refuses_a_kinematic_mechanism(tmp_path):
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
    bad = subprocess.run([sys.executable, "-m", "fmigen.cli", "export-modelica", "landing_gear", "-o",
                          str(tmp_path / "lg.mo")], capture_output=True, text=True, cwd=root)
    assert bad.returncode == 2 and "kinematic mechanism" in bad.stderr and "Traceback" not in bad.stderr


def test_stewart_exports_loads_and_is_balanced():
    """The Stewart platform (six Gröbner leg blocks, 24 coordinates): rumoca
    loads it and finds it balanced.  Not simulated here: rumoca 0.10.2 had not
    integrated 1 s of it (solver rk-like, rtol 1e-11) after 13 minutes."""
    text, name, compiled = export_mechanism("stewart")
    structure = rumoca.Session().loads(text, model=name).structure()
    assert structure.is_balanced and structure.n_states == 12
    assert text.count("  function stewart_block") == len(compiled.triangular.blocks) == 6
