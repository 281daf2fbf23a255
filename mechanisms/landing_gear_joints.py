"""The landing gear of ``landing_gear`` written as bodies and joints (kinematic FMU).

The bodies and joints follow the vector loops of ``landing_gear`` (A at the
origin, lengths in the paper's unit, cm):

* the main strut BAF on a revolute joint at A (``theta_A``), with the piston
  pivot B = (−42, −62) and the lower-link pivot F = (−25, 212) in its frame;
* the hydraulic cylinder on a revolute joint at B (``theta_B``, relative to
  the main strut) and the piston on a prismatic joint along the cylinder's
  −x axis (``p_BC``): C = B + R(θA+θB)(−p_BC, 0);
* the drag strut CDE on a revolute joint at D = (−231, −62) about −z, so its
  coordinate is ``landing_gear``'s clockwise ``theta_D``: C = D +
  R(−θD)(−6.08, −16.97), E = D + R(−θD)(164.4, 0);
* the lower link on a revolute joint at F (``theta_F``, relative to the main
  strut), E at (−178.4, 0) in its frame.

The revolute joints at C (piston–drag strut) and E (lower link–drag strut)
are cut; their in-plane position rows are the paper's eqs. 16–19 (x
components, and the y components with the opposite sign), the same
polynomials in the same coordinates as ``landing_gear``, so its Gröbner order
applies unchanged.  ``build()`` returns the converted mechanism with
``p_BC`` labelled cm (the joint API calls every translation m).
``build_system(..., metres=True, kinematic=False)`` is the dynamic variant
in metres with ``landing_gear_dynamic``'s assumed masses and loads
(``landing_gear_dynamic_joints``).

Measured: driven from 200 to 300 cm (and back to the end of stroke at
178.6 cm, where both stop with Discard) the angles equal ``landing_gear``'s
to 2.9e-15 and their rates to 1.5e-12; the dynamic variant equals
``landing_gear_dynamic`` to 1.7e-15 (velocities 2.6e-14) over 0.75 s and
validates against IDA (5.5e-11) and the Cartesian reference (3.0e-11).
"""
import sympy as sp

from fmigen.frontends.joint_model import to_mechanism
from fmigen.joints import JointSystem

from mechanisms.landing_gear import GUESSES, P_START
from mechanisms.landing_gear_dynamic import P_START as P_START_M

ORDER = ["c_theta_F", "s_theta_F", "c_theta_A", "s_theta_A", "c_theta_D", "s_theta_D",
         "c_theta_B", "s_theta_B", "p_BC"]
ANGLES = ["theta_A", "theta_B", "theta_D", "theta_F"]


def build_system(name, description, metres, kinematic) -> JointSystem:
    s = JointSystem(name, description=description)
    # the paper's exact values in cm, divided exactly for metres
    scale = sp.Integer(100) if metres else sp.Integer(1)

    def pt(x, y):
        return (sp.Rational(x) / scale, sp.Rational(y) / scale)

    B, F, D = pt(-42, -62), pt(-25, 212), pt(-231, -62)
    C_drag, E_drag, E_link = pt("-6.08", "-16.97"), pt("164.4", 0), pt("-178.4", 0)
    if kinematic:
        masses = dict.fromkeys(["main_strut", "drag_strut", "lower_link"], (0, (0, 0, 0), (0, 0)))
    else:
        m_main = s.parameter("m_main_strut", 60.0, "kg", tunable=True, description="assumed")
        m_drag = s.parameter("m_drag_strut", 20.0, "kg", tunable=True, description="assumed")
        m_link = s.parameter("m_lower_link", 10.0, "kg", tunable=True, description="assumed")

        def bar(m, P, Q):
            # uniform bar between its end joints P and Q (body frame)
            L2 = (P[0] - Q[0])**2 + (P[1] - Q[1])**2
            return m, (0, 0, m * L2 / 12), ((P[0] + Q[0]) / 2, (P[1] + Q[1]) / 2)

        masses = {"main_strut": bar(m_main, B, F), "drag_strut": bar(m_drag, C_drag, E_drag),
                  "lower_link": bar(m_link, (0, 0), E_link)}
    main = s.body("main_strut", *masses["main_strut"])
    drag = s.body("drag_strut", *masses["drag_strut"])
    link = s.body("lower_link", *masses["lower_link"])
    # the piston carries no mass in either variant (landing_gear_dynamic)
    cylinder = s.body("cylinder", 0, (0, 0, 0))
    piston = s.body("piston", 0, (0, 0, 0))

    s.revolute("A", s.ground.origin, main.origin, coordinates=["theta_A"], start=GUESSES["theta_A"])
    s.revolute("B", main.marker("B", B), cylinder.origin, coordinates=["theta_B"], start=GUESSES["theta_B"])
    s.prismatic("piston", cylinder.origin, piston.origin, axis=(-1, 0, 0), coordinates=["p_BC"],
                start=P_START_M if metres else P_START)
    s.revolute("D", s.ground.marker("D", D), drag.origin, axis=(0, 0, -1), coordinates=["theta_D"],
               start=GUESSES["theta_D"])
    s.revolute("F", main.marker("F", F), link.origin, coordinates=["theta_F"], start=GUESSES["theta_F"])
    s.revolute("C", drag.marker("C", C_drag), piston.origin)
    s.revolute("E", drag.marker("E", E_drag), link.marker("E", E_link))
    s.cut = ["C", "E"]
    if not kinematic:
        g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
        hold = s.parameter("holding_force", 0.0, "N", tunable=True, description="constant piston force")
        force = s.input("piston_force", 0.0, "N", description="actuator force along BC, positive extends")
        s.gravity = (0, -g, 0)
        s.joint_force("piston", hold + force)
    s.independent = ["p_BC"]
    s.dof = 1
    s.kinematic = kinematic
    s.groebner_order = list(ORDER)
    # The paper's system (eqs. 16-19) in the relative angles θ_B, θ_F, whose
    # sequence (Table 4) is known.  Solved in the absolute angles θ_A + θ_B,
    # θ_A + θ_F instead (``polynomialize.angle_plan``), the basis has ~190-digit
    # coefficients and its sequences degenerate at 440-495 of the 495 swept
    # configurations whatever the order, and the start no longer assembles.
    s.angle_sums = False
    return s


def build():
    system = build_system("landing_gear_joints", __doc__.splitlines()[0], metres=False, kinematic=True)
    m = to_mechanism(system)
    # the joint API labels every translation m; this variant keeps the
    # paper's cm like ``landing_gear`` (the unit is the FMU variable's label)
    m.coordinate_by_name("p_BC").unit = "cm"
    return m
