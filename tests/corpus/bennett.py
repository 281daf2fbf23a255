"""Bennett linkage: the movable spatial 4R loop (Bennett, "A new mechanism", Engineering 76, 1903, pp. 777-778; conditions and joint-angle relation as in Perez & McCarthy, "Dimensional synthesis of Bennett linkages", ASME J. Mech. Des. 125(1), 2003, pp. 98-104).

Four revolute joints, links in Denavit–Hartenberg form (joint i's frame:
z along its axis, x along the common normal to joint i+1; link i is
Rot(z, θi) Trans(x, ai) Rot(x, αi)) with no offsets along the axes.
Bennett's conditions: opposite links equal, a1 = a3 = a, a2 = a4 = b,
α1 = α3 = α, α2 = α4 = β, and a / sin α = b / sin β.  A generic 4R loop is
rigid; these make it move with one degree of freedom, with θ3 = −θ1,
θ4 = −θ2 and tan(θ1/2) tan(θ2/2) = sin((β + α)/2) / sin((β − α)/2).

Dimensions chosen for this corpus: a = 0.3 m, b = 0.4 m, sin α = 3/5,
cos α = 4/5, sin β = 4/5, cos β = 3/5 (a / sin α = b / sin β = 0.5; the
twists' sines and cosines are exact rationals, so the conditions hold
exactly in the Gröbner stage, and the right-hand side above is 5).  Link 4
is the ground; joint 4 closes the loop (cut); its closure gives five rows
of which only two are independent on the Bennett motion, the front end
keeps two by rank.

Drive: gravity along −y (link 4's frame) and a torque of 0.2 N·m on θ1;
start at θ1 = 1.3 rad (θ2 = 2.839822…, θ3 = −1.3 from the relation above).
Links are slim bars of 1 kg/m.

Validation (scripts/corpus.py --only bennett, 1 s): passes against IDA
(1.2e-9 in q), the Cartesian reference (1.8e-9) and the MuJoCo peer
(1.8e-8).  The two closure rows the front end keeps (J4_x, J4_y, chosen by
rank at the start) lose rank at the folded pose θ1 = π, θ2 = 0, θ3 = −π
(t ≈ 0.72 s; σ_min of their Jacobian in θ2, θ3: 0.18 at the start, 0
there) while the full closure stays regular (σ_min 0.099), and no fixed
pair of the five rows is regular over the whole turn; so the IDA reference
integrates all five rows (``fmigen/verify/reference.py``), which IDA on the two
rows alone did not (it left the Bennett curve at the folded pose).
``tests/test_redundant_closure.py`` checks the references against the
closed-form relation above.
"""
import math

import sympy as sp

from fmigen.joints import JointSystem, Z

from corpus._spatial import rod_inertia_x, rot_x

A, B = 0.3, 0.4
CA, SA = sp.Rational(4, 5), sp.Rational(3, 5)     # cos α, sin α
CB, SB = sp.Rational(3, 5), sp.Rational(4, 5)     # cos β, sin β
THETA1 = 1.3


def theta2_of(theta1):
    """θ2 from Bennett's relation tan(θ1/2) tan(θ2/2) = K (the guess of the start)."""
    alpha, beta = math.asin(float(SA)), math.asin(float(SB))
    K = math.sin((beta + alpha) / 2) / math.sin((beta - alpha) / 2)
    return 2 * math.atan(K / math.tan(theta1 / 2))


def build():
    s = JointSystem("bennett", description=__doc__.splitlines()[0])
    g = s.parameter("g", 9.81, "m/s2", tunable=True, description="gravity along -y")
    links = []
    for k, length in enumerate((A, B, A), start=1):
        m = round(length, 6)
        links.append(s.body(f"link{k}", m, rod_inertia_x(m, length), com=(length / 2, 0, 0)))
    nxt = [links[0].marker("J2", (A, 0, 0), rot_x(CA, SA)),
           links[1].marker("J3", (B, 0, 0), rot_x(CB, SB)),
           links[2].marker("J4", (A, 0, 0), rot_x(CA, SA))]
    theta2 = theta2_of(THETA1)
    s.revolute("theta1", s.ground.origin, links[0].origin, axis=Z, start=THETA1)
    s.revolute("theta2", nxt[0], links[1].origin, axis=Z, start=theta2)
    s.revolute("theta3", nxt[1], links[2].origin, axis=Z, start=-THETA1)
    # joint 4 from the ground's side: link 4 (the ground) is Rot(z, θ4) after
    # joint 4's frame, and Trans(x, b) Rot(x, β) from the ground frame to
    # joint 1's; so joint 4's ground-side frame is Rot(x, −β) at (−b, 0, 0)
    # and its coordinate is −θ4
    s.revolute("J4", s.ground.marker("J4", (-B, 0, 0), rot_x(CB, -SB)), nxt[2], axis=Z)
    s.cut = ["J4"]
    s.gravity = (0, -g, 0)
    s.joint_force("theta1", s.input("tau", 0.2, "N.m", description="torque on joint 1"))
    s.independent = ["theta1"]
    s.dof = 1
    return s
