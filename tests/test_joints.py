"""The joint description (fmigen/joints.py): declarations and their errors."""
import pytest
import sympy as sp

from fmigen.joints import JointSystem
from fmigen.model import ModelError


def two_links():
    s = JointSystem("two_links")
    a = s.body("a", 1, (0, 0, 1), com=(0.5, 0, 0))
    b = s.body("b", 1, (0, 0, 1), com=(0.5, 0, 0))
    return s, a, b


def test_coordinates_follow_the_joint_kind():
    s, a, b = two_links()
    q1 = s.revolute("hinge", s.ground.origin, a.origin, start=0.3, limits=(-1, 1))
    q2 = s.universal("u", a.marker("end", (1, 0, 0)), b.origin)
    assert isinstance(q1, sp.Function) or q1.is_Function
    assert [c.name for c in s.coordinates] == ["hinge", "u_1", "u_2"]
    assert s.coordinate_by_name("hinge").start == 0.3
    assert s.coordinate_by_name("hinge").limits == (-1.0, 1.0)
    assert s.coordinate_by_name("u_1").start is None
    assert len(q2) == 2


# (0.6, 0.8) is (3/5, 4/5) by the default float rule (tests/test_floats.py)
@pytest.mark.parametrize("axis, rule", [((0, 1, 1), "decimal"), ((0.6, 0.8), "binary")])
def test_an_axis_must_be_an_exact_unit_vector(axis, rule):
    s, a, _ = two_links()
    s.float_rule = rule
    with pytest.raises(ModelError, match="exact unit length"):
        s.revolute("hinge", s.ground.origin, a.origin, axis=axis)


def test_exact_rational_axes_are_accepted():
    s, a, _ = two_links()
    s.revolute("hinge", s.ground.origin, a.origin, axis=(sp.Rational(3, 5), sp.Rational(4, 5), 0))


def test_declaration_errors_name_the_cause():
    s, a, b = two_links()
    s.revolute("hinge", s.ground.origin, a.origin)
    with pytest.raises(ModelError, match="declared twice"):
        s.revolute("hinge", s.ground.origin, b.origin)
    with pytest.raises(ModelError, match="to itself"):
        s.revolute("self", a.origin, a.marker("x", (1, 0, 0)))
    with pytest.raises(ModelError, match="unknown kind"):
        s.joint("ball", "j", a.origin, b.origin)
    with pytest.raises(ModelError, match="3 start values"):
        s.spherical("sph", a.origin, b.origin, start=(0, 0))
    with pytest.raises(ModelError, match="perpendicular"):
        s.universal("uu", a.origin, b.origin, axis=(1, 0, 0), axis2=(1, 0, 0))
    with pytest.raises(ModelError, match="name one"):
        s.universal("u2", a.origin, b.origin)
        s.joint_force("u2", 1.0)
    with pytest.raises(ModelError, match="symmetric"):
        s.body("c", 1, [[1, 2, 0], [0, 1, 0], [0, 0, 1]])
