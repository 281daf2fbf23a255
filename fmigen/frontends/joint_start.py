"""The part of a joint system's conversion that follows its start values.

``joint_model.convert`` makes the low-level ``Mechanism`` of a
``JointSystem``: world poses, closure rows, loads, outputs and reactions,
all symbolic and the same at every start, and a few things decided or
computed at the start:

* the closure rows kept (``_select_constraints``: the rank of Φ_q at the
  start projected onto the constraints and two nearby points), with the
  degrees of freedom, a preferred independent set taken or not, and the
  projected values of coordinates without a start;
* the distance links' mirror and alignment checks (``_check_start_closes``);
* the start assembly the branch hints pick (``_start_assembly``).

``StartFree`` keeps what those steps read that the rest of the conversion
computed (the candidate rows, the hint expressions, the distance links'
closure rows) and the selection's outcome.  ``joint_model.at_start`` takes a mechanism
converted at one start and gives the one the conversion makes at another:
it runs the selection at the new start and, when it keeps what it kept
before, the checks and the start assembly, on the old mechanism with the
new starts.  When the selection decides otherwise, it returns None and the
caller converts in full: a start change that changes the model is never
answered from the other start's model.

Why: a build after a start change converted the joint system again (the
Stephenson III six-bar: world poses and closure rows, ~0.3 s of sympy),
though only the selection, the checks and the assembly follow the start.
A conversion whose other steps read the start is not recorded
(``joint_model.convert`` returns no ``StartFree``): loops closing in more
than one frame (``_shared_frames`` picks their common frame from the blocks
at the start).  A hard point's value is geometry of the start in the same
way (the conversion is symbolic in it): the entry is keyed without it, and
``at_start`` replays the selection, the checks and the assembly at the new
value.  The trims (solved by the runtime at initialization) are checked at
the build's start by the full conversion only (``joint_trim.trim_solution``);
at a replayed start the runtime's solve is the check.
"""

from __future__ import annotations

from dataclasses import dataclass

from fmigen.model import Mechanism


def selection_of(m: Mechanism) -> tuple:
    """What ``_select_constraints`` decided, as comparable data."""
    return ([c.name for c in m.constraints], [c.name for c in m.redundant_constraints], m.dof,
            None if m.independent is None else list(m.independent), m.independent_note)


@dataclass
class StartFree:
    #: the closure rows the selection chose from: [(name, expression)]
    candidates: list
    #: ``selection_of`` the mechanism right after the selection
    selection: tuple
    #: the distance links' checks: [(cut joint, its closure rows, the
    #: universal joint, (body, marker) of the link's spherical end)]
    position_checks: list
    #: each branch hint's expression in the coordinates, in the system's order
    hints: list

    @classmethod
    def of(cls, candidates, selection, position_checks, hints):
        checks = [(j.name, closure, u.name, (mine.body.name, mine.name))
                  for j, closure, u, mine in position_checks]
        return cls(list(candidates), selection, checks, [e for _, e in hints])
