"""The IDA reference's compiled functions (``reference.CompiledDAE``): the
C printed from the DAE's expressions gives the numbers numpy's lambdified
expressions give (``NumericDAE``), at states off the motion, for every
function the residual reads — trigonometry and rationals (Stewart), the
tables of a bump stop (piecewise), a limit, and a prescribed coordinate's
drive B = (∂F/∂d)ᵀ."""
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from fmigen.build.derived import dae_of
from fmigen.build.pipeline import as_mechanism, load_mechanism
from fmigen.model import t as T
from fmigen.verify.prescribed import DAEDrives
from fmigen.verify.reference import CompiledDAE, c_source

sys.path.insert(0, str(Path(__file__).parent))
from test_limits import bump_rotor, rotor  # noqa: E402
from test_prescribe import cart_pendulum  # noqa: E402


def _close(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    assert a.shape == b.shape
    assert np.abs(a - b).max(initial=0.0) <= 1e-13 * max(1.0, np.abs(b).max(initial=0.0))


@pytest.mark.parametrize("spec", ["stewart", "fourbar", "rotor", "bump_rotor", "cart"])
def test_compiled_functions_equal_the_lambdified_ones(spec):
    built = {"rotor": rotor, "bump_rotor": bump_rotor, "cart": cart_pendulum}.get(spec)
    mech = as_mechanism(built()) if built else load_mechanism(spec)
    dae = dae_of(mech)
    drives = DAEDrives(dae) if mech.prescribed else None
    c = CompiledDAE(dae, None if drives is None else drives.B)
    num = dae.numeric
    rng = np.random.default_rng(3)
    # rotors: into and through the stops' tables (every branch)
    for q0 in ([-0.5, -0.25, 0.05, 0.12, 0.2, 0.35] if spec.endswith("rotor") else [None] * 4):
        q = dae.start_guess() + rng.uniform(-0.2, 0.2, dae.n) if q0 is None else np.array([q0])
        v, tt = rng.uniform(-2, 2, dae.n), float(rng.uniform(0, 1))
        c.eval(tt, q, v)
        _close(c.M, num.M(tt, q))
        _close(c.F, num.F(tt, q, v))
        if dae.m:
            _close(c.Phi, num.Phi(tt, q))
            _close(c.Phi_q, num.Phi_q(tt, q))
            _close(c.Phi_t, num.Phi_t(tt, q))
            _close(c.gamma, num.gamma(tt, q, v))
        if drives is not None:
            B = sp.lambdify([T, *dae.q_sym, *dae.v_sym, *dae.tunable, *dae.inputs], drives.B, "numpy")
            _close(c.B, B(tt, *q, *v, *dae.tunable_values, *dae.input_values))
            assert np.abs(c.B).max() > 0


def test_a_stray_symbol_is_named():
    x, y = sp.symbols("x y")
    with pytest.raises(Exception, match="neither coordinates.*'y'"):
        c_source([sp.sin(x) * y], [x])


def test_a_parameter_changed_after_compiling_is_the_one_evaluated():
    """A tunable parameter changed in ``dae.numeric.pu`` between two runs
    of the reference (tests/test_fmu_robustness.py's mass step) is the value
    the compiled functions read, as the lambdified ones do (the compiled
    ones had fixed the values when made, and the reference integrated the
    old mass: test_fmu_robustness's mass step 0.31 off)."""
    dae = dae_of(load_mechanism("fourbar"))
    num = dae.numeric
    c = CompiledDAE(dae)
    k = [str(s) for s in dae.tunable].index("m2")
    q, v = dae.start_guess(), np.array([1.0, -0.5, 0.3])
    before = c.eval(0.0, q, v).M.copy()
    default = num.pu[k]
    try:
        num.pu[k] = 3 * default
        c.eval(0.0, q, v)
        _close(c.M, num.M(0.0, q))
        _close(c.F, num.F(0.0, q, v))
        assert np.abs(c.M - before).max() > 0.1
    finally:
        num.pu[k] = default
