"""Bad input gets a clear error naming the cause."""
import math

import pytest
import sympy as sp
from sympy import cos, sin

from fmigen.model import ModelError, t
from fmigen.build.pipeline import build_fmu, compile_model, load_mechanism


def fourbar(**changes):
    m = load_mechanism("fourbar")
    for k, v in changes.items():
        setattr(m, k, v)
    return m


def test_redundant_constraint_is_named():
    m = fourbar()
    theta, alpha, phi = m.q
    m.constraint("loop_x_again", 2 * (cos(theta) + 4 * cos(alpha) - 3 - 2.5 * cos(phi)))
    m.dof = None
    m.independent = None
    with pytest.raises(ModelError, match=r"redundant or inconsistent constraint 'loop_x_again'.*loop_x"):
        compile_model(m)


def test_wrong_dof_count_is_reported():
    m = fourbar(dof=2)
    with pytest.raises(ModelError, match=r"wrong DOF count.*3 coordinates and 2 constraints.*dof=2"):
        compile_model(m)


def test_wrong_number_of_independent_coordinates():
    m = fourbar(independent=["theta", "alpha"])
    with pytest.raises(ModelError, match="wrong DOF count"):
        compile_model(m)


def test_start_that_cannot_be_assembled():
    m = fourbar()
    # rocker pivot moved out of reach: |A - D| > l2 + l3 at theta = pi/2
    next(p for p in m.parameters if p.name == "d").value = 10.0
    with pytest.raises(ModelError, match="cannot be assembled"):
        compile_model(m)


def test_non_polynomial_constraint_is_named():
    m = fourbar()
    m.constraints[0].expr = m.constraints[0].expr + sp.exp(m.q[1]) * 0.001
    with pytest.raises(ModelError, match=r"constraint 'loop_x' is not polynomial"):
        compile_model(m)


def test_constraint_using_tunable_parameter_is_rejected():
    m = fourbar()
    g = next(p.symbol for p in m.parameters if p.name == "g")
    m.constraints[0].expr = m.constraints[0].expr + 0 * g + g / 1000
    with pytest.raises(ModelError, match=r"constraint 'loop_x' depends on \['g'\]"):
        compile_model(m)


def test_unknown_mechanism_lists_the_known_ones():
    with pytest.raises(ModelError, match=r"no mechanism 'nosuch'.*fourbar"):
        load_mechanism("nosuch")


def test_a_mechanism_module_that_does_not_import_names_its_cause(tmp_path):
    # a module copied away from its siblings: its sibling import has nothing
    # to resolve against (this was a traceback through the loader)
    module = tmp_path / "mine.py"
    module.write_text("from my_mechanisms.stephenson3 import THETA0\n")
    with pytest.raises(ModelError, match=r"mine.py does not import: ModuleNotFoundError: "
                                         r"No module named 'my_mechanisms'; its own imports resolve from"):
        load_mechanism(str(module))
    module.write_text("def build(:\n")
    with pytest.raises(ModelError, match=r"mine.py does not import: SyntaxError: .*line 1"):
        load_mechanism(str(module))


def test_nonpositive_step_is_rejected(tmp_path):
    from fmigen.fmi.fmu import BuildError
    with pytest.raises(BuildError, match="step must be > 0"):
        build_fmu("fourbar", tmp_path / "x.fmu", step=0.0)


def test_a_misspelt_mechanism_option_is_an_error():
    from fmigen.model import Mechanism
    m = Mechanism("typo")
    m.newton_blocks = [["x"]]
    with pytest.raises(ModelError, match="no field 'newton_block'"):
        m.newton_block = [["x"]]


def test_a_negative_mass_names_its_body():
    m = fourbar()
    next(p for p in m.parameters if p.name == "m2").value = -0.2
    with pytest.raises(ModelError, match=r"the mass of body 'coupler' \(m2\) is -0.2; a mass must be >= 0"):
        compile_model(m)


def test_an_inertia_that_is_not_positive_semidefinite_names_its_body_and_minor():
    """A body whose central inertia has a negative determinant although every
    diagonal entry (1) and 2x2 principal minor (1 - 0.36) is positive: its
    eigenvalues are 1.6, 1.6 and -0.2, det I = -0.512 (numpy)."""
    m = fourbar()
    crank = m.bodies[0]
    crank.inertia = sp.Matrix([[1, 0.6, -0.6], [0.6, 1, 0.6], [-0.6, 0.6, 1]])
    with pytest.raises(ModelError, match=r"the central inertia of body 'crank' is not positive semidefinite: "
                                         r"det I = -0\.512 < 0"):
        compile_model(m)


def test_psd3_agrees_with_the_eigenvalues():
    """dae.psd3 (the principal minors the C and Python runtimes test) against
    numpy's eigenvalues on random symmetric matrices, away from the boundary
    (smallest eigenvalue beyond ±1e-6 of the largest |entry|)."""
    import numpy as np
    from fmigen.derive.dae import psd3
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for _ in range(20000):
        A = rng.normal(size=(3, 3))
        S = A @ A.T - rng.uniform(0, 1.5) * np.eye(3) * rng.choice([0, 1])
        lam = np.linalg.eigvalsh(S).min()
        if abs(lam) < 1e-6 * np.abs(S).max():
            continue
        k, value = psd3((S[0, 0], S[0, 1], S[0, 2], S[1, 1], S[1, 2], S[2, 2]))
        assert (k < 0) == (lam > 0), (S, lam, k, value)
        assert k < 0 or value < 0
        seen[lam > 0] += 1
    assert min(seen.values()) > 2000, seen


@pytest.mark.parametrize("expr,message", [
    # a constant once sin² + cos² folds: before, "redundant ... identically zero"
    (lambda th, al, ph: cos(al) ** 2 + sin(al) ** 2 + 1,
     r"constraint 'loop_y' in 'fourbar' does not depend on the coordinates: it reduces to 2 = 0, which no "
     r"motion can make hold \(inconsistent\)"),
    (lambda th, al, ph: 0 * al,
     r"constraint 'loop_y' in 'fourbar' is identically zero: it constrains nothing \(redundant\)"),
    (lambda th, al, ph: t - 1,
     r"constraint 'loop_y' in 'fourbar' does not depend on the coordinates, only on time: t - 1 = 0 is no "
     r"constraint on the motion"),
    # no real solution anywhere: before, only the block's coordinates were named
    (lambda th, al, ph: al ** 2 + 1,
     r"block \['alpha'\] \(constraints \['loop_y'\]\) has no real solution for alpha for any configuration: "
     r"these constraints are inconsistent"),
    (lambda th, al, ph: cos(al) - 2,
     r"block \['alpha'\] \(constraints \['loop_y'\]\) has no real solution for s_alpha for any configuration"),
    # a row that is zero only here: before, "identically zero", which it is not
    (lambda th, al, ph: sin(th) - 2,
     r"redundant or inconsistent constraint 'loop_y' in 'fourbar': its Jacobian row is zero at the start "
     r"configuration"),
])
def test_an_inconsistent_or_empty_constraint_says_which_and_why(expr, message):
    m = fourbar()
    m.constraints[1].expr = expr(*m.q)
    with pytest.raises(ModelError, match=message):
        compile_model(m)


def test_a_mass_checked_in_the_fmus_own_arithmetic():
    """m2 - 3·mw at m2 = 0.6, mw = 0.2 is 0 exactly but -1.1e-16 in doubles,
    which the FMU would run with (and refuse to be set to): the build tests
    the defaults as the FMU evaluates them (found by a review)."""
    m = fourbar()
    m2 = next(p for p in m.parameters if p.name == "m2")
    m2.value = 0.6
    mw = m.parameter("mw", 0.2, "kg", tunable=True)
    coupler = next(b for b in m.bodies if b.name == "coupler")
    coupler.mass = m2.symbol - 3 * mw
    with pytest.raises(ModelError, match=r"the mass of body 'coupler' \(m2, mw\) is -1.11022e-16 at the default "
                                         r"parameter values, evaluated in doubles as the FMU does"):
        compile_model(m)


def test_no_real_solution_on_the_chosen_branch_is_not_called_inconsistent():
    """y² = x and x² + y² = 2 hold at x = 1, y = ±1; with the guess x = -1.8
    the first step picks the root x = -2 (x² + x - 2 = 0, nearest the
    guess) and y² = -2 has none.  Before, the message called the constraints
    inconsistent (they are not: a review's case); it names the branch now.
    The twelve unit blocks keep the start off the all-assemblies solver."""
    from fmigen.model import Mechanism
    m = Mechanism("branch")
    th = m.coordinate("theta", 0.3, "rad")
    x = m.coordinate("xs", -1.8, "m")
    y = m.coordinate("ys", 0.5, "m")
    mass = m.parameter("mass", 1.0, "kg", tunable=True)
    m.planar_body("crank", mass, mass / 12, (0.5 * cos(th), 0.5 * sin(th)), th)
    m.planar_body("slider", mass, 0, (x, y), 0)
    m.constraint("c1", y ** 2 - x)
    m.constraint("c2", x ** 2 + y ** 2 - 2)
    for i in range(12):
        z = m.coordinate(f"z{i}", 0.1 * i, "m")
        m.planar_body(f"b{i}", mass, 0, (z, 0), 0)
        m.constraint(f"k{i}", z - sp.Rational(i, 10))
    m.independent = ["theta"]
    m.dof = 1
    with pytest.raises(ModelError) as e:
        compile_model(m, order=["ys", "xs"], use_cache=False)
    assert "block ['xs', 'ys'] (constraints ['c1', 'c2']) has no real solution for ys on the branches the start " \
           "guesses choose for ['xs']" in str(e.value)
    assert "inconsistent" not in str(e.value)
    m.coordinate_by_name("xs").start = 0.8
    compile_model(m, order=["ys", "xs"], use_cache=False)   # the other branch assembles
