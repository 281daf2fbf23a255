"""MuJoCo as a peer simulator of an FMU (``fmigen validate --peer mujoco``).

* ``run_mujoco`` integrates a joint description exported to MJCF
  (frontends/mjcf.py, ``export_mjcf``) in MuJoCo (RK4, small step, stiff
  constraints) from given joint coordinates and velocities, with every load
  evaluated from the description at each RK4 stage, and reports the
  trajectories and MuJoCo's own constraint violation.  MuJoCo's constraints
  are soft, so the violation is the floor of what the comparison can show.
* ``compare_with_mujoco`` runs it from an FMU run's start and compares.

A prescribed coordinate (``JointSystem.prescribe``) is driven by MuJoCo's
own equations: at every RK4 stage the drive is the generalized force on its
degree of freedom that gives the filter's acceleration ω²(u − q) − 2ω q̇.
MuJoCo's acceleration is affine in an applied generalized force (with
equality constraints only, its constraint solve minimizes a quadratic), so
``mj_forward`` on a scratch copy of the state at force 0 and at a unit force
on each prescribed degree of freedom determines it, as the FMU's runtime
solves its own (``_Drives``).

``mujoco`` is an optional dependency (``pip install fmigen[mujoco]``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import sympy as sp

from fmigen.frontends.mjcf import MJCFError, _mujoco, export_mjcf, parameter_values
from fmigen.joints import JointSystem
from fmigen.model import t
from fmigen.verify.compare import coordinate_error
from fmigen.verify.trims import affine_preloads


@dataclass
class PeerResult:
    t: np.ndarray
    q: dict                  # coordinate name -> trajectory
    v: dict
    max_violation: float     # MuJoCo's own max |constraint| over the run [m]
    settings: dict


def _load_functions(system: JointSystem, names, input_values):
    """Numeric functions of (t, q, qdot) for every load, from the description."""
    values = parameter_values(system)
    values.update({i.symbol: sp.sympify(input_values.get(i.name, i.start)) for i in system.inputs})
    qs = [system.coordinate_by_name(n).symbol for n in names]
    Q = sp.symbols(f"q0:{len(names)}")
    V = sp.symbols(f"v0:{len(names)}")
    T = sp.Symbol("t_")
    rep = {**{q.diff(t): v for q, v in zip(qs, V)}}

    def fn(expr):
        e = sp.sympify(expr).xreplace(values).xreplace(rep).xreplace(dict(zip(qs, Q))).xreplace({t: T})
        return sp.lambdify((T, Q, V), e, "math")
    return fn


def run_mujoco(system: JointSystem, q0: dict, v0: dict, times, dt=1e-4, inputs=None,
               solref=(2e-4, 1.0), solimp=(0.9999, 0.9999, 1e-4, 0.5, 2), independent=None) -> PeerResult:
    """Integrate ``system`` in MuJoCo from joint coordinates ``q0`` and
    velocities ``v0`` (by name; coordinates of cut joints are ignored) and
    sample at ``times``; ``inputs``: {input name: value or expression in
    t}, the others at their start.  Loads are evaluated from the description in
    MuJoCo's passive-force callback, which runs at every RK4 stage, and so
    are the drives of prescribed coordinates (module docstring).  Trimmed
    springs (``JointSystem.trim``) get the preloads ``_solve_trims`` finds at
    the start along the ``independent`` coordinates (default: the
    description's ``independent``)."""
    mujoco = _mujoco()
    times = np.asarray(times, dtype=float)
    # the MJCF of the joints and loads: export_mjcf refuses a prescription,
    # whose drive no MJCF element holds; here the drive is the callback's.
    # (A shallow copy: dataclasses.replace would run __post_init__, which
    # puts a new ground body into the shared bodies.)
    described = system
    if system.prescribed:
        described = copy.copy(system)
        described.prescribed = []
    xml = export_mjcf(described, start=q0, timestep=dt, integrator="RK4", solref=solref, solimp=solimp)
    xml = xml.replace('<flag contact="disable"/>', '<flag contact="disable" refsafe="disable"/>')
    model = mujoco.MjModel.from_xml_string(xml)
    model.opt.tolerance = 1e-14
    model.opt.iterations = 200
    data = mujoco.MjData(model)
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, i) for i in range(model.njnt)]
    qadr = [int(model.jnt_qposadr[i]) for i in range(model.njnt)]
    vadr = [int(model.jnt_dofadr[i]) for i in range(model.njnt)]
    mujoco.mj_resetDataKeyframe(model, data, 0)
    data.ctrl[:] = 0.0        # every joint load comes from the description, in the callback
    for nm, a in zip(names, vadr):
        data.qvel[a] = v0.get(nm, 0.0)
    fn = _load_functions(system, names, inputs or {})
    index = {nm: k for k, nm in enumerate(names)}
    joint_loads = [(vadr[index[ld.coordinate.name]], fn(ld.expr), None) for ld in system.joint_loads]
    # stiffness and damping are in the XML (joint springs, tendons); preloads are not
    for r in system.rotational_springs:
        joint_loads.append((vadr[index[r.coordinate.name]], fn(-r.preload), r.name))
    #: the trimmed springs' preloads by name (``_solve_trims``), read by ``passive``
    trim = {}
    site_id = {mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, i): i for i in range(model.nsite)}
    springs = [(site_id[f"{s.name}__a"], site_id[f"{s.name}__b"], fn(s.preload), s.name) for s in system.springs]
    forces = [(site_id[f"{f.name}__at"], [fn(e) for e in f.force], [fn(e) for e in f.torque],
               None if f.reaction is None or f.reaction.body.name == "ground"
               else mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f.reaction.body.name)) for f in system.forces]

    drives = _Drives(model, system, vadr, index, fn) if system.prescribed else None

    def passive(m, d):
        tt, q, v = float(d.time), [d.qpos[a] for a in qadr], [d.qvel[a] for a in vadr]
        if drives is not None and not drives.busy:
            d.qfrc_passive[drives.dofs] += drives.solve(m, d, tt, q, v)
        for dof, f, name in joint_loads:
            d.qfrc_passive[dof] += f(tt, q, v) - trim.get(name, 0.0)
        for sa, sb, pre, name in springs:
            ra, rb = d.site_xpos[sa].copy(), d.site_xpos[sb].copy()
            u = (rb - ra) / float(np.linalg.norm(rb - ra))
            tension = pre(tt, q, v) + trim.get(name, 0.0)
            mujoco.mj_applyFT(m, d, tension * u, np.zeros(3), ra, int(m.site_bodyid[sa]), d.qfrc_passive)
            mujoco.mj_applyFT(m, d, -tension * u, np.zeros(3), rb, int(m.site_bodyid[sb]), d.qfrc_passive)
        for sid, F, Tq, reaction in forces:
            f = np.array([e(tt, q, v) for e in F])
            tq = np.array([e(tt, q, v) for e in Tq])
            point = d.site_xpos[sid].copy()
            mujoco.mj_applyFT(m, d, f, tq, point, int(m.site_bodyid[sid]), d.qfrc_passive)
            if reaction is not None:
                mujoco.mj_applyFT(m, d, -f, -tq, point, reaction, d.qfrc_passive)

    eq_sites = [(int(model.eq_obj1id[k]), int(model.eq_obj2id[k])) for k in range(model.neq)
                if int(model.eq_type[k]) != int(mujoco.mjtEq.mjEQ_TENDON)]
    # a cut universal joint's axes tendon: its length's distance from √2 L,
    # in metres like the connects' (export_mjcf)
    eq_tendons = [(int(model.eq_obj1id[k]), float(model.tendon_length0[int(model.eq_obj1id[k])])
                   + float(model.eq_data[k, 0])) for k in range(model.neq)
                  if int(model.eq_type[k]) == int(mujoco.mjtEq.mjEQ_TENDON)]

    def violation():
        return max([float(np.linalg.norm(data.site_xpos[a] - data.site_xpos[b])) for a, b in eq_sites]
                   + [abs(float(data.ten_length[k]) - held) for k, held in eq_tendons], default=0.0)

    qs = np.empty((len(times), len(names)))
    vs = np.empty_like(qs)
    worst = 0.0
    mujoco.set_mjcb_passive(passive)
    try:
        if system.trims:
            trim.update(_solve_trims(model, data, system, index, vadr,
                                     system.independent if independent is None else independent, trim))
        mujoco.mj_forward(model, data)
        for k, target in enumerate(times):
            while data.time < target - dt / 2:
                mujoco.mj_step(model, data)
                worst = max(worst, violation())
            qs[k] = [data.qpos[a] for a in qadr]
            vs[k] = [data.qvel[a] for a in vadr]
    finally:
        mujoco.set_mjcb_passive(None)
    return PeerResult(times, {nm: qs[:, i] for i, nm in enumerate(names)},
                      {nm: vs[:, i] for i, nm in enumerate(names)}, worst,
                      {"timestep": dt, "integrator": "RK4", "solref": list(solref), "solimp": list(solimp),
                       "trims": dict(trim)})


def _solve_trims(model, data, system, index, vadr, independent, trim):
    """The trimmed preloads from MuJoCo's own equations at the start pose,
    at rest: the generalized force along each trimmed coordinate with the
    other independent ones held is zero.  The tree's force qfrc_passive −
    qfrc_bias (gravity at rest) is projected on the tree velocities that
    keep the loop equalities (their rows of efc_J) and give the independent
    rates, a unit rate of one trimmed coordinate; it is affine in the
    preloads (``trim``, which the passive callback reads): at 0 and per
    unit preload."""
    mujoco = _mujoco()
    if independent is None:
        raise MJCFError(f"'{system.name}' has trims: the MuJoCo peer needs its independent coordinates")
    off_tree = [n for n in [*independent, *(c for _, c in system.trims)] if n not in index]
    if off_tree:
        raise MJCFError(f"the MuJoCo peer solves trims along coordinates of its tree; {off_tree} are "
                        "coordinates of cut joints")
    absent = [c for _, c in system.trims if c not in independent]
    if absent:
        raise MJCFError(f"trimmed coordinates {absent} are not independent coordinates of '{system.name}' "
                        f"(have {', '.join(independent)})")
    qvel = data.qvel.copy()
    data.qvel[:] = 0.0
    trim.clear()
    mujoco.mj_forward(model, data)
    rows = np.flatnonzero(data.efc_type[:data.nefc] == int(mujoco.mjtConstraint.mjCNSTR_EQUALITY))
    J = np.zeros((data.nefc, model.nv))
    if mujoco.mj_isSparse(model):
        mujoco.mju_sparse2dense(J, data.efc_J, data.efc_J_rownnz, data.efc_J_rowadr, data.efc_J_colind)
    else:
        J[:] = data.efc_J[:data.nefc * model.nv].reshape(data.nefc, model.nv)
    E = np.zeros((len(independent), model.nv))
    E[np.arange(len(independent)), [vadr[index[n]] for n in independent]] = 1.0
    A = np.vstack([J[rows], E])
    B = np.zeros((len(A), len(system.trims)))
    for i, (_, c) in enumerate(system.trims):
        B[len(rows) + independent.index(c), i] = 1.0
    twists = np.linalg.lstsq(A, B, rcond=1e-10)[0]

    def along():
        mujoco.mj_forward(model, data)
        return twists.T @ (data.qfrc_passive - data.qfrc_bias)

    def set_preloads(p):
        trim.clear()
        trim.update(p)

    try:
        return affine_preloads(system, set_preloads, along, MJCFError)
    finally:
        data.qvel[:] = qvel


class _Drives:
    """The prescribed coordinates' drives in MuJoCo (module docstring):
    their degrees of freedom, ω, the demands u(t) and a scratch MjData on
    which ``solve`` runs the trial forward passes (the passive callback
    adds the loads there too, but no drive)."""

    def __init__(self, model, system, vadr, index, fn):
        mujoco = _mujoco()
        pr = system.prescribed
        self.dofs = [vadr[index[p.coordinate]] for p in pr]
        for p, k in zip(pr, self.dofs):
            if int(model.jnt_type[model.dof_jntid[k]]) not in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                                int(mujoco.mjtJoint.mjJNT_SLIDE)):
                raise MJCFError(f"the MuJoCo peer drives prescribed coordinates of hinge and slide joints; "
                                f"'{p.coordinate}' is a coordinate of a MuJoCo ball or free joint")
        self.omega = np.array([1.0 / float(p.time_constant) for p in pr])
        by_name = {i.name: i.symbol for i in system.inputs}
        self.demand = [fn(by_name[p.input]) for p in pr]
        self.scratch = mujoco.MjData(model)
        #: True while ``solve`` runs its trial passes (their callbacks add loads, no drive)
        self.busy = False

    def solve(self, m, d, tt, q, v):
        """The drives at the state of ``d``: S x = ā − a₀ with a₀ the
        prescribed accelerations at drive 0 and S's columns their change
        per unit drive."""
        mujoco, s = _mujoco(), self.scratch
        s.time, s.qpos[:], s.qvel[:], s.act[:], s.ctrl[:] = d.time, d.qpos, d.qvel, d.act, d.ctrl
        acc = []
        self.busy = True
        try:
            for r in range(-1, len(self.dofs)):
                s.qfrc_applied[:] = 0.0
                if r >= 0:
                    s.qfrc_applied[self.dofs[r]] = 1.0
                    # the same state: positions, velocities and the passive
                    # loads of the first pass stand, only the accelerations
                    # and the constraint solve see the unit force
                    mujoco.mj_forwardSkip(m, s, int(mujoco.mjtStage.mjSTAGE_VEL), 1)
                else:
                    mujoco.mj_forward(m, s)
                acc.append(s.qacc[self.dofs].copy())
        finally:
            self.busy = False
        a0 = acc[0]
        S = np.column_stack([a - a0 for a in acc[1:]])
        qk, vk = np.array([d.qpos[m.jnt_qposadr[m.dof_jntid[k]]] for k in self.dofs]), d.qvel[self.dofs]
        u = np.array([f(tt, q, v) for f in self.demand])
        return np.linalg.solve(S, self.omega**2 * (u - qk) - 2 * self.omega * vk - a0)


# --- import --------------------------------------------------------------------


def compare_with_mujoco(mech, result, dt=5e-5, log=None, inputs=None, independent=None) -> dict:
    """MuJoCo as a peer of an FMU run: ``result`` is fmpy's structured array
    (time, every coordinate and its der()); MuJoCo starts from the FMU's
    first row and is sampled at its times.  ``inputs``: {input name: value
    or sympy expression in t} for the inputs the FMU was driven with (the
    others at their start).  Returns the max |FMU − MuJoCo| per coordinate
    (angles directly: both are continuous) and per velocity, and MuJoCo's
    own max constraint violation, which bounds what the comparison can show."""
    if mech.joint_system is None:
        raise MJCFError(f"'{mech.name}' is written with the low-level API; the MuJoCo peer needs its bodies "
                        "and joints (fmigen.joints.JointSystem)")
    names = [c.name for c in mech.coordinates]
    q0 = {n: float(result[n][0]) for n in names}
    v0 = {n: float(result[f"der({n})"][0]) for n in names}
    (log or (lambda m: None))(f"running MuJoCo (RK4, dt = {dt:g} s) as a peer")
    peer = run_mujoco(mech.joint_system, q0, v0, result["time"], dt=dt, inputs=inputs, independent=independent)
    errors, verrors = {}, {}
    for c in mech.coordinates:
        if c.name not in peer.q:
            continue
        # directly, as validate compares every reference (compare.coordinate_error)
        errors[c.name] = float(coordinate_error(result[c.name], peer.q[c.name]).max())
        verrors[c.name] = float(np.abs(result[f"der({c.name})"] - peer.v[c.name]).max())
    return {"max_abs_error": errors, "max_abs_velocity_error": verrors,
            "mujoco_constraint_violation": peer.max_violation, "settings": peer.settings}
