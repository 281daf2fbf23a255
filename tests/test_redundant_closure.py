"""An overconstrained loop's references stay on its motion: the Bennett linkage.

The Bennett linkage (``tests/corpus/bennett.py``) is a spatial 4R loop that
moves although a generic 4R loop is rigid: its cut revolute gives five
closure rows of which only two are independent.  The front end keeps two
(J4_x, J4_y, chosen by rank at the start) and the rest as redundant rows.
Those two lose rank at the folded pose θ1 = π, θ2 = 0, θ3 = −π (t ≈ 0.72 s
under the corpus's torque) while the full closure does not; IDA on the two
rows alone left the Bennett motion there for another solution of them
(|θ3 + θ1| reached 2.7 rad).

The oracle is Bennett's closed-form input–output relation, independent of
every stage (Bennett, "A new mechanism", Engineering 76, 1903; in the form of
Perez & McCarthy, ASME J. Mech. Des. 125(1), 2003): with opposite links
equal and a / sin α = b / sin β,

    θ3 = −θ1,    tan(θ1/2) tan(θ2/2) = sin((β + α)/2) / sin((β − α)/2) = 5

for the corpus's dimensions (sin α = 3/5, sin β = 4/5).  The second is
checked as sin(θ1/2) sin(θ2/2) − 5 cos(θ1/2) cos(θ2/2) = 0, which stays
finite through the folded pose.
"""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from fmigen.verify.cartesian import CartesianModel
from fmigen.derive.dae import build_dae
from fmigen.frontends.joint_model import to_mechanism
from fmigen.verify.reference import assemble_newton, solve_reference

# the corpus modules import their helpers as ``corpus._spatial`` (tests/
# first, as scripts/corpus.py's own _import_corpus does)
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import bennett  # noqa: E402

K = 5.0   # sin((β + α)/2) / sin((β − α)/2) for sin α = 3/5, sin β = 4/5


def bennett_residuals(q1, q2, q3):
    """(max |θ3 + θ1| modulo 2π, max |sin(θ1/2) sin(θ2/2) − K cos(θ1/2) cos(θ2/2)|)."""
    e3 = np.abs(np.angle(np.exp(1j * (q3 + q1)))).max()
    e2 = np.abs(np.sin(q1 / 2) * np.sin(q2 / 2) - K * np.cos(q1 / 2) * np.cos(q2 / 2)).max()
    return e3, e2


@pytest.fixture(scope="module")
def ida():
    mech = to_mechanism(bennett.build())
    dae = build_dae(mech)
    q0 = assemble_newton(dae, dae.start_guess(), ["theta1"])
    times = np.linspace(0.0, 1.0, 101)
    ref = solve_reference(dae, q0, dae.start_velocity_guess(), times, ["theta1"])
    return mech, dae, q0, ref


def test_the_closed_form_relation_of_the_dimensions():
    # the right-hand side the test uses is the one of the corpus geometry
    alpha, beta = math.asin(3 / 5), math.asin(4 / 5)
    assert math.sin((beta + alpha) / 2) / math.sin((beta - alpha) / 2) == pytest.approx(K, rel=1e-14)


def test_the_dae_reference_stays_on_the_bennett_motion_through_the_folded_pose(ida):
    mech, dae, _, ref = ida
    i1, i2, i3 = (dae.names.index(n) for n in ("theta1", "theta2", "theta3"))
    q = ref.q
    # the motion passes the folded pose θ1 = π (where the two kept rows lose rank)
    assert q[0, i1] < math.pi < q[-1, i1]
    e3, e2 = bennett_residuals(q[:, i1], q[:, i2], q[:, i3])
    assert e3 < 1e-9 and e2 < 1e-9, (e3, e2)
    # the velocities too: d/dt of the relation, θ̇3 = −θ̇1
    assert np.abs(ref.v[:, i3] + ref.v[:, i1]).max() < 1e-8
    # the rows the model keeps are fewer than the closure's: the rest are
    # redundant at the start, kept for the reference
    assert len(mech.constraints) == 2 and len(mech.redundant_constraints) == 3


def test_the_cartesian_reference_agrees_with_ida(ida):
    # absolute coordinates, all 20 joint rows (rank 17): its redundant rows
    # are in the least-squares solve of its augmented system
    mech, dae, q0, ref = ida
    system = mech.joint_system
    model = CartesianModel(system, parameters={p.name: p.value for p in mech.parameters},
                           inputs={i.name: i.start for i in mech.inputs})
    sol = model.simulate(dict(zip(dae.names, q0)), dict(zip(dae.names, dae.start_velocity_guess())),
                         ["theta1"], ref.t)
    for name in ("theta1", "theta2", "theta3"):
        k, i = model.coord_names.index(name), dae.names.index(name)
        assert np.abs(sol.q[:, k] - ref.q[:, i]).max() < 1e-8, name
    e3, e2 = bennett_residuals(*(sol.q[:, model.coord_names.index(n)] for n in ("theta1", "theta2", "theta3")))
    assert e3 < 1e-9 and e2 < 1e-9, (e3, e2)


def test_the_corpus_case_passes_every_reference():
    # the whole corpus case (build, start check, FMU in fmpy over 1 s, IDA,
    # Cartesian, MuJoCo when importable): IDA on the two start rows alone was
    # 3.8 rad from the FMU after the folded pose
    import importlib.util
    spec = importlib.util.spec_from_file_location("corpus_script",
                                                  Path(__file__).resolve().parent.parent / "scripts" / "corpus.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script._import_corpus()
    r = script.run_case({"name": "bennett"}, 1.0)
    assert r["outcome"] == "passed", r
    for ref in ("ida", "cartesian"):
        # measured: 1.2e-9 / 1.2e-8 (IDA), 1.8e-9 / 1.6e-8 (Cartesian)
        assert r["refs"][ref]["max_abs_error"] < 1e-7, (ref, r["refs"][ref])
        assert r["refs"][ref]["max_abs_velocity_error"] < 1e-6, (ref, r["refs"][ref])
    assert r["t_end"] == pytest.approx(1.0)


def test_the_derived_model_key_holds_the_redundant_rows(ida):
    # the DAE's Phi_redundant is built from them, so a cached derivation
    # must not be read back for a mechanism whose redundant rows differ
    import copy
    import dataclasses
    import sympy as sp
    from fmigen.derive.cache_key import key_text
    mech = ida[0]
    first = mech.redundant_constraints[0]
    changed = copy.copy(mech)           # the same world frame and bodies (dataclasses.replace makes a new world)
    changed.redundant_constraints = [dataclasses.replace(first, expr=sp.sympify(first.expr) + sp.Rational(1, 1000)),
                                     *mech.redundant_constraints[1:]]
    assert key_text(mech, {}) != key_text(changed, {})
    assert key_text(mech, {}, start=False) != key_text(changed, {}, start=False)
