"""Static trims (``JointSystem.trim``) solved by the independent references
from their own equations: each trimmed spring's preload makes the start pose
a static equilibrium along its coordinate — at rest, the generalized force
on that independent coordinate, the others held, is zero.  The condition
comes from the joint description alone; the model stage's solve
(``joint_model._trim``) is not used.

The force along the coordinates is affine in the preloads, so it is
evaluated at preload 0 and once per unit preload, and the linear system
solved (as the drives of ``prescribed.py`` are).
"""

from __future__ import annotations

import numpy as np


def affine_preloads(system, set_preloads, along, error):
    """{spring: preload} of ``system.trims``: ``set_preloads(dict)`` puts
    trial preloads in the reference's loads, ``along()`` returns the
    generalized forces along the trimmed coordinates (trims' order) under
    them; ``error``: the reference's exception class."""
    trims = system.trims
    set_preloads({})
    base = along()
    A = np.empty((len(trims), len(trims)))
    for i, (spring, _) in enumerate(trims):
        set_preloads({spring: 1.0})
        A[:, i] = along() - base
    set_preloads({})
    sv = np.linalg.svd(A, compute_uv=False)
    if not sv.max() > 0 or sv.min() <= 1e-12 * sv.max():
        pairs = ", ".join(f"'{s}' along '{c}'" for s, c in trims)
        raise error(f"the trims of '{system.name}' ({pairs}) do not determine their preloads at the start: "
                    "a preload does not act along its coordinate")
    return dict(zip((s for s, _ in trims), map(float, np.linalg.solve(A, -base))))


def cartesian_trims(model, tt, X, R, independent, wind, error):
    """The trims in the Cartesian reference (``CartesianModel``) at the pose
    (X, R): the virtual power of every body's wrench at rest (gravity and the
    loads, ``body_forces`` at V = 0) along the twist of a unit rate of the
    trimmed coordinate with the other independent ones held
    (``start_velocity``: the constraints' own Jacobian)."""
    if not model.system.trims:
        return {}
    absent = [c for _, c in model.system.trims if c not in independent]
    if absent:
        raise error(f"trimmed coordinates {absent} are not independent coordinates of "
                    f"'{model.system.name}' (have {', '.join(independent)})")
    twists = np.array([model.start_velocity(X, R, {n: float(n == c) for n in independent})
                       for _, c in model.system.trims])
    rest = np.zeros(6 * model.N)

    def set_preloads(p):
        model.trim_preloads = p

    return affine_preloads(model.system, set_preloads,
                           lambda: twists @ model.body_forces(tt, X, R, rest, wind)[0], error)
