"""Bad input gets a clear error naming the cause."""
import math

import pytest
import sympy as sp
from sympy import cos, sin

from fmigen.model import ModelError
from fmigen.pipeline import build_fmu, compile_model, load_mechanism


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
    with pytest.raises(ModelError, match=r"redundant constraint 'loop_x_again'.*loop_x"):
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


def test_nonpositive_step_is_rejected(tmp_path):
    from fmigen.fmu import BuildError
    with pytest.raises(BuildError, match="step must be > 0"):
        build_fmu("fourbar", tmp_path / "x.fmu", step=0.0)


def test_a_misspelt_mechanism_option_is_an_error():
    from fmigen.model import Mechanism
    m = Mechanism("typo")
    m.newton_blocks = [["x"]]
    with pytest.raises(ModelError, match="no field 'newton_block'"):
        m.newton_block = [["x"]]
