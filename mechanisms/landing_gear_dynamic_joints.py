"""The dynamic landing gear of ``landing_gear_dynamic`` written as bodies and joints.

The bodies and joints of ``landing_gear_joints`` in metres, with
``landing_gear_dynamic``'s assumed masses (uniform bars between their end
joints: main strut 60 kg, drag strut 20 kg, lower link 10 kg; cylinder and
piston massless), gravity ``g`` along −y, and the piston force
``holding_force`` + ``piston_force`` on ``p_BC``.  Start p_BC = 2.0 m on the
branch of Fig. 7, at rest.
"""
from mechanisms.landing_gear_joints import build_system


def build():
    return build_system("landing_gear_dynamic_joints", __doc__.splitlines()[0], metres=True, kinematic=False)
