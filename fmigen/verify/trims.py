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

from types import SimpleNamespace

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


def dae_trims(dae, num, tt, q0, independent, error):
    """{spring: preload} of the mechanism's trims (``model.Trim``) in the
    reference on the DAE (``reference.py``) at its assembled start ``q0``,
    put into the DAE's input values (``dae.numeric.pu``) that its
    evaluations read: the generalized force at rest (``num``, a
    ``CompiledDAE``, at v = 0) along the motions the constraints allow
    with the trimmed coordinate moving at unit rate and the other
    independent ones held (Φ_q's own solve, numpy).  ``error``: the
    reference's exception class."""
    mech = dae.mechanism
    inputs = [str(u) for u in dae.inputs]
    slot = {tr.spring: len(dae.tunable) + inputs.index(tr.input) for tr in mech.trims}
    pu, n = dae.numeric.pu, dae.n
    dep = [k for k, name in enumerate(dae.names) if name not in independent]
    rest = np.zeros(n)
    num.eval(tt, q0, rest)
    J = num.Phi_q
    N = np.zeros((len(mech.trims), n))
    for i, tr in enumerate(mech.trims):
        if tr.coordinate not in independent:
            raise error(f"trimmed coordinate '{tr.coordinate}' is not an independent coordinate of "
                        f"'{mech.name}' (have {', '.join(independent)})")
        j = dae.names.index(tr.coordinate)
        N[i, j] = 1.0
        if dep:
            N[i, dep] = -np.linalg.lstsq(J[:, dep], J[:, j], rcond=None)[0]

    def set_preloads(p):
        for spring, k in slot.items():
            pu[k] = p.get(spring, 0.0)

    def along():
        num.eval(tt, q0, rest)
        return N @ num.F

    described = SimpleNamespace(name=mech.name, trims=[(tr.spring, tr.coordinate) for tr in mech.trims])
    values = affine_preloads(described, set_preloads, along, error)
    set_preloads(values)
    return values
