"""The offset slider-crank of ``slider_crank`` written as bodies and joints.

Same geometry, masses, loads and start as ``mechanisms/slider_crank.py``:
crank (r = 0.2 m, 1 kg) about the origin, rod (l = 0.6 m, 0.5 kg), slider
(0.3 kg) on a prismatic joint along x on the line y = e = 0.05 m with
viscous friction c·ẋ, gravity 9.81 m/s² along −y, input torque ``tau``
(0.5 N·m) on the crank.  Coordinates: ``theta`` (crank), ``x`` (slider,
as in ``slider_crank``) and the rod angle ``B`` relative to the crank, so
slider_crank's β = θ + B.  The joint C (rod–slider) is cut.  The branch hint
keeps the slider to the right of the crank pivot.
"""
import math

from fmigen.joints import X, JointSystem


def build() -> JointSystem:
    s = JointSystem("slider_crank_joints", description=__doc__.splitlines()[0])
    r = s.parameter("r", 0.2, "m", description="crank length")
    l = s.parameter("l", 0.6, "m", description="rod length")
    e = s.parameter("e", 0.05, "m", description="slider line offset")
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    m1 = s.parameter("m_crank", 1.0, "kg", tunable=True)
    m2 = s.parameter("m_rod", 0.5, "kg", tunable=True)
    m3 = s.parameter("m_slider", 0.3, "kg", tunable=True)
    c = s.parameter("c_slider", 0.5, "N.s/m", tunable=True, description="slider viscous friction")
    tau = s.input("tau", 0.5, "N.m", description="crank torque")

    crank = s.body("crank", m1, (0, 0, m1 * r**2 / 12), com=(r / 2, 0))
    rod = s.body("rod", m2, (0, 0, m2 * l**2 / 12), com=(l / 2, 0))
    slider = s.body("slider", m3, (0, 0, 0))

    s.revolute("theta", s.ground.origin, crank.origin, start=math.pi / 3)
    s.revolute("B", crank.marker("A", (r, 0)), rod.origin)
    x = s.prismatic("x", s.ground.marker("guide", (0, e)), slider.origin, axis=X, start=0.7)
    s.revolute("C", rod.marker("C", (l, 0)), slider.origin)
    s.branch_hint(slider.origin, s.ground.origin, X, +1)

    s.gravity = (0, -g, 0)
    s.joint_force("theta", tau)
    s.joint_force("x", -c * x.diff())
    s.independent = ["theta"]
    s.dof = 1
    return s
