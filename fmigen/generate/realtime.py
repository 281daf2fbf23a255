"""``fmigen build --realtime``: each bounded loop capped at what the
mechanism's workspace sweep needs, plus a margin, instead of the global caps
(``codegen_newton.iteration_caps``) that any mechanism may reach.

The need is measured on the build's own generated model
(``bench.realtime_caps``): the worst-case harness of ``fmigen bench
--worst-case`` without valgrind (``bench.run_worst_case``) steps it at every point of the workspace sweep
with random velocities and inputs (seeded) and records the most iterations
any one call of each loop took, in those steps and in the assembly of the
start and of the samples (which runs the same loops).  The motion from the
start is not part of it: it may run into a singular configuration, where
Newton needs ever more iterations and no cap holds.  The sweep is bounded
by work, not time, so the same mechanism gives the same caps and the same
bytes.

The caps go into model_config.h (``FMIGEN_REALTIME`` and one macro per
loop), which every translation unit includes; the runtime's loop hooks
(fmigen_runtime.h) then end a loop at its cap, unconverged, and the step
fails as at the global caps: Discard, its reason recorded as numbers and
formatted after the step returns.  model.c is the same text as the default
build's."""
from __future__ import annotations

import dataclasses

from fmigen.generate import codegen_newton

#: the bounded loops and their model_config.h macros, as the runtime's hooks read them
MACROS = {"newton": "FMIGEN_REALTIME_NEWTON", "polish": "FMIGEN_REALTIME_POLISH",
          "poly_newton": "FMIGEN_REALTIME_POLY_NEWTON", "aberth": "FMIGEN_REALTIME_ABERTH"}
#: a loop's cap is MARGIN_FACTOR × its measured need + MARGIN_EXTRA iterations
#: (never above the global cap): the sweep samples the workspace, it does not
#: cover every point and velocity, and a Newton iteration that converges
#: quadratically from a warm start needs a few more, not many more, where a
#: sample did not land; the constant keeps a loop the sweep never entered (a
#: need of 0) from failing at its first call
MARGIN_FACTOR = 2
MARGIN_EXTRA = 2


def caps_for(measured: dict) -> dict:
    """Each loop's realtime cap from ``bench.run_worst_case(...,
    instructions=False)``'s counts: the most of the workspace samples'
    steps and the assembly, with the margin, at most the global cap."""
    caps = codegen_newton.iteration_caps()
    return {loop: min(caps[loop], MARGIN_FACTOR * need(measured)[loop] + MARGIN_EXTRA) for loop in MACROS}


def need(measured: dict) -> dict:
    """The most iterations each loop took over the workspace sweep: its
    samples' steps that succeeded and the assembly (of the start and of the
    samples)."""
    return {loop: max(measured["iterations_workspace"][loop], measured["iterations_assembly"][loop])
            for loop in MACROS}


def realtime_model(gen, caps: dict):
    """``gen`` (a codegen.GeneratedModel) with the realtime caps in its
    model_config.h macros; model.c unchanged."""
    return dataclasses.replace(gen, macros={**gen.macros, "FMIGEN_REALTIME": 1,
                                            **{MACROS[loop]: int(caps[loop]) for loop in MACROS}})
