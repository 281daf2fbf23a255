"""``mechanisms/quarter_car_joints.py`` with the height of its first link's
chassis point (``C1z``) a hard point: a tunable parameter with a declared
range of ±10 mm around the design value, so the FMU takes a new chassis
point without a rebuild.  ``build(c1z=None)``: with a number, the design
value is moved there (still a hard point), for the warm-rebuild timing."""
from mechanisms import quarter_car_joints

#: half-width of the declared range [m]
HALF_RANGE = 0.01


def build(c1z=None):
    s = quarter_car_joints.build()
    s.name = "quarter_car_hard_point"
    p = next(p for p in s.parameters if p.name == "C1z")
    design = float(p.value)
    if c1z is not None:
        p.value = float(c1z)
    p.tunable = True
    p.range = (design - HALF_RANGE, design + HALF_RANGE)
    return s
