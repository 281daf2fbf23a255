"""Grashof double-crank four-bar (drag link): both cranks turn fully, never singular.

Same structure and coordinate names as ``fourbar``: crank OA (l1) about the
origin, coupler AB (l2), second crank DB (l3) about D = (d, 0); absolute link
angles from the x axis: crank ``theta`` (independent), coupler ``alpha``,
second crank ``phi``.  Every link is a uniform bar of 1 kg (centre of mass at
mid-link, I = m l²/12); gravity 9.8 m/s² along −y; the crank is driven by the
input torque ``tau`` (default 10 N·m).

Lengths l1 = 2.5 (crank), l2 = 3.5 (coupler), l3 = 3 (second crank), d = 1.2
(ground).  Grashof: shortest s = d = 1.2, longest l = l2 = 3.5, the others
p = l1 = 2.5, q = l3 = 3: s + l = 4.7 < p + q = 5.5, and the shortest link is
the ground, so both links pivoted to the ground turn fully (double crank).
It is never singular with θ independent: Φ_d is singular only when coupler and
second crank are aligned, i.e. when |AD| = l2 ± l3 = 6.5 or 0.5, while
|AD|² = l1² + d² − 2 l1 d cos θ keeps |AD| within [l1 − d, l1 + d] = [1.3, 3.7]
for every θ: the angle between coupler and second crank,
arccos((l2² + l3² − |AD|²) / (2 l2 l3)), stays within [21.3°, 68.9°].

Why it exists: the mechanism is regular everywhere, but the Gröbner sequence
of ``fourbar`` solves s_phi from a quadratic and c_phi from a linear step
whose leading coefficient is (up to sign) l1 cos θ − d.  For the crank-rocker
(l1 = 1 < d = 3) that never vanishes; here it vanishes at
θ = ±arccos(d / l1) = ±arccos(0.48) ≈ 1.0701 and 5.2130 rad, where line AD is
vertical, both assemblies share s_phi and the root labelled by the fixed sign
changes from one assembly to its mirror image about AD.  A run-time kinematics
whose square-root branch is fixed at build time therefore jumps to the mirror
assembly there (``tests/test_exact_kinematics.py``).

Start: θ = 1.0 rad at rest.  α ≈ −2.664603 and φ ≈ 2.975225 are only
guesses that pick the assembly with B to the left of line AD (the other one is
α ≈ −0.620071, φ ≈ 0.023286); the build assembles them exactly from θ.  The
branch matters for the drive: the potential energy g Σ m y spans 79 J over a
turn on either branch, and from θ = 1 on the other branch the crank would need
54 N·m to climb it, while on this one 0.8 N·m suffices (max over the next turn
of (V(θ) − V(1)) / (θ − 1)).  With 10 N·m the DAE reference gives 3.26 turns
in 5 s and 4.40 in 6 s (crank speed 8.9 rad/s at 6 s); the crank passes
θ = 1.0701 + 2πk first at t ≈ 0.228 s.
"""
from fmigen.model import Mechanism
from mechanisms.fourbar import build as build_fourbar

#: the four-bar's structure with these lengths (m); the second crank is
#: ``fourbar``'s rocker
LENGTHS = {"l1": 2.5, "l2": 3.5, "l3": 3.0, "d": 1.2}


def build() -> Mechanism:
    m = build_fourbar()
    m.name = "fourbar_double_crank"
    m.description = __doc__.splitlines()[0]
    for p in m.parameters:
        p.value = LENGTHS.get(p.name, p.value)
    m.coordinate_by_name("phi").description = "second crank angle"
    m.override_starts({"theta": 1.0, "alpha": -2.664603, "phi": 2.975225})
    m.inputs[0].start = 10.0       # tau, N·m
    return m
