"""Time events: the breakpoints of loads that are piecewise in time.

A load such as the five-link's F_z(t) (``sp.Piecewise`` with conditions
``t < 1``, ``t < 4``, ...) is discontinuous, or has a kink, at known times.
A Model Exchange FMU announces them (``nextEventTime`` from
fmi2NewDiscreteStates / fmi3UpdateDiscreteStates), so the importer's
integrator stops there instead of stepping across the jump; the runtime
(fmigen_instance.c) keeps the branch before a breakpoint until Event Mode.

The times are found at build time from the Piecewise conditions of the
equations of motion (M, F) and the outputs: every relation in a condition
whose only free symbol is ``t`` contributes its real roots.  A condition
that involves the state or a parameter (a state event, or a breakpoint that
moves with a tunable parameter) is not a time event and is not announced.
"""

from __future__ import annotations

import sympy as sp

from fmigen.model import t


def time_events(exprs) -> list[float]:
    """Sorted, distinct real breakpoints in t of the Piecewise conditions in ``exprs``."""
    times = set()
    for e in exprs:
        for pw in sp.sympify(e).atoms(sp.Piecewise):
            for _, cond in pw.args:
                if not isinstance(cond, sp.Basic) or cond in (sp.true, sp.false):
                    continue
                rels = cond.atoms(sp.core.relational.Relational) if not isinstance(
                    cond, sp.core.relational.Relational) else {cond}
                for rel in rels:
                    if rel.free_symbols != {t}:
                        continue
                    for root in sp.solve(sp.Eq(rel.lhs - rel.rhs, 0), t):
                        if root.is_real and root.is_finite:
                            times.add(float(root))
    return sorted(times)


def dae_time_events(dae) -> list[float]:
    """Breakpoints of the DAE's mass matrix, forces and outputs."""
    return time_events([*dae.M, *dae.F, *dae.outputs.values()])


def state_event_indicators(dae) -> list:
    """Event indicators of the loads that switch with the state: per
    relation in a Piecewise condition of M or F that involves a coordinate
    or a velocity (a stop's ``q > upper``, ``JointSystem.limit``), the
    expression that is positive where the relation holds (q − upper for
    ``q > upper``, lower − q for ``q < lower``) and changes sign where the
    load switches.  A Model Exchange FMU reports them (GetEventIndicators),
    so the importer locates the switch (contact and release of a stop)
    instead of stepping across it.  Deduplicated, in order of appearance."""
    state = set(dae.q_sym) | set(dae.v_sym)
    out = []
    for e in [*dae.M, *dae.F]:
        for pw in sorted(sp.sympify(e).atoms(sp.Piecewise), key=sp.default_sort_key):
            for _, cond in pw.args:
                if not isinstance(cond, sp.Basic) or cond in (sp.true, sp.false):
                    continue
                rels = [cond] if isinstance(cond, sp.core.relational.Relational) else sorted(
                    cond.atoms(sp.core.relational.Relational), key=sp.default_sort_key)
                for rel in rels:
                    if not rel.free_symbols & state:
                        continue
                    if isinstance(rel, (sp.StrictLessThan, sp.LessThan)):
                        z = rel.rhs - rel.lhs
                    elif isinstance(rel, (sp.StrictGreaterThan, sp.GreaterThan)):
                        z = rel.lhs - rel.rhs
                    else:       # == or !=: no sign change to locate
                        continue
                    if z not in out:
                        out.append(z)
    return out
