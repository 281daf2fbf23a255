"""MJCF, MuJoCo's model format: export and import.

* ``export_mjcf(system)`` writes a ``joints.JointSystem`` as a MuJoCo model:
  the spanning tree as nested bodies, each tree joint as MuJoCo joints whose
  ``qpos`` *is* the fmigen coordinate (a universal joint is two hinges, a
  spherical one three, z-y-x, a free one three slides and three hinges, all
  in one MuJoCo body, which composes them exactly; a joint traversed from
  child to parent, of any kind, gets negated axes in reverse order), each cut
  joint as equalities between sites (a spherical cut a ``connect``, a
  revolute cut two, on its axis; a universal cut a ``connect`` and a tendon
  equality holding its axes perpendicular; a fixed cut a ``weld``; the other
  kinds have no exact MuJoCo equality and are an error), joint forces as motors,
  rotational spring-dampers as joint stiffness and damping, linear ones as
  spatial tendons.  A planar bar's inertia (0, 0, I) gets I/2 about its
  in-plane axes, which MuJoCo requires and a planar motion never excites.  Preloads, marker forces and load expressions in time or
  state have no MJCF form: ``mujoco_peer.run_mujoco`` applies them itself.  The start
  configuration is the keyframe ``start``; the independent coordinates are
  the custom text ``fmigen:independent``.
* ``import_mjcf(path)`` reads a MuJoCo model (hinge, slide, ball and free
  joints, ``connect`` and ``weld`` equalities, joint motors, joint stiffness
  and damping, straight spatial tendons between two sites as spring-dampers)
  into a JointSystem.  Anything else that changes the dynamics
  (tendons, explicit contact pairs, other actuators, armature, friction loss)
  is an error naming it.  MuJoCo itself compiles the file, so defaults,
  ``fromto`` geoms and inertias inferred from geoms mean what MuJoCo says
  they mean.  Geometry is read to 12 significant digits and kept exact
  (rationals), so the loop closures are polynomial with rational
  coefficients; implicit geom collisions are not modelled.  The actuated
  joints are the preferred independent coordinates
  (``JointSystem.preferred_independent``: taken where Φ_d is regular at the
  start), unless the text ``fmigen:independent`` names them.
* MuJoCo as a peer simulator of a built FMU (``run_mujoco``,
  ``compare_with_mujoco``) is verification: verify/mujoco_peer.py.

``mujoco`` is an optional dependency (``pip install fmigen[mujoco]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np
import sympy as sp

from fmigen.floats import rounded
from fmigen.joints import JointSystem, Joint, X, Y, Z
from fmigen.model import ModelError

DIGITS = 12            # significant digits of imported geometry
AXIS_SITE_OFFSET = 1.0  # a revolute cut's second connect, this far along its axis


class MJCFError(ModelError):
    """An MJCF model that fmigen cannot represent, or a JointSystem that MJCF cannot."""


def _mujoco():
    try:
        import mujoco
    except ImportError:
        raise MJCFError("MuJoCo is not installed: pip install mujoco (or fmigen[mujoco])") from None
    return mujoco


# --- numbers -------------------------------------------------------------------

def parameter_values(system: JointSystem) -> dict:
    return {p.symbol: sp.sympify(p.value) for p in system.parameters}


def _num(expr, values) -> float:
    value = sp.sympify(expr).xreplace(values)
    if value.free_symbols:
        raise MJCFError(f"{expr} depends on {sorted(map(str, value.free_symbols))}: MJCF needs numbers")
    return float(value)


def _vec(v, values) -> np.ndarray:
    return np.array([_num(e, values) for e in v], dtype=float)


def _mat(M, values) -> np.ndarray:
    return np.array([[_num(M[i, j], values) for j in range(3)] for i in range(3)], dtype=float)


def _fmt(x) -> str:
    return " ".join(repr(float(v)) if abs(v) > 1e-300 else "0" for v in np.ravel(x))


def _quat(R) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation matrix."""
    mujoco = _mujoco()
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=float).ravel())
    return q


# --- the tree MuJoCo nests -------------------------------------------------------

@dataclass
class TreeEdge:
    joint: Joint
    parent_body: str         # the body nearer ground
    child_body: str
    reversed: bool           # the joint's child marker is on the body nearer ground


def spanning_tree(system: JointSystem):
    """The FMU's own tree and cuts (``joint_tree.spanning_tree``), so the
    MuJoCo joints are exactly the FMU's coordinates.  Returns (edges in BFS
    order, cut joints)."""
    from fmigen.frontends.joint_tree import spanning_tree as model_tree
    order, cut = model_tree(system)
    edges = []
    for j, reverse in order:
        near, far = (j.child, j.parent) if reverse else (j.parent, j.child)
        edges.append(TreeEdge(j, near.body.name, far.body.name, reversed=reverse))
    return edges, cut


# --- export --------------------------------------------------------------------

def _joint_elements(edge: TreeEdge, values) -> tuple[np.ndarray, list[tuple[str, str, np.ndarray]]]:
    """(joint position in the child body's frame, [(name, hinge|slide,
    axis in that frame)] in MuJoCo's application order)."""
    j = edge.joint
    near, far = (j.child, j.parent) if edge.reversed else (j.parent, j.child)
    R_far = _mat(far.rotation, values)
    a = _vec(j.axis, values)
    b = _vec(j.axis2, values) if j.axis2 is not None else None
    names = [c.name for c in j.coordinates]
    ex, ey, ez = np.eye(3)
    kinds = {"revolute": [("hinge", a)], "prismatic": [("slide", a)],
             "cylindrical": [("hinge", a), ("slide", a)], "universal": [("hinge", a), ("hinge", b)],
             "spherical": [("hinge", ez), ("hinge", ey), ("hinge", ex)],
             "planar": [("slide", ex), ("slide", ey), ("hinge", ez)],
             "free": [("slide", ex), ("slide", ey), ("slide", ez), ("hinge", ez), ("hinge", ey), ("hinge", ex)],
             "fixed": []}[j.kind]
    if j.kind == "free":     # coordinates x, y, z, rx, ry, rz; hinges applied z, y, x
        names = names[:3] + names[3:][::-1]
    if edge.reversed:
        # the inverse transform: the same axes, negated, in reverse order.
        # Every kind is a chain of elementary rotations and translations, each
        # about or along an axis fixed in the frame after the previous ones
        # (planar and free too: translations first, then rotations), and
        # MuJoCo applies a body's joints in that way, so the inverse chain is
        # exact for all of them
        kinds = [(k, -ax) for k, ax in kinds[::-1]]
        names = names[::-1]
    return _vec(far.position, values), [(nm, k, R_far @ ax) for nm, (k, ax) in zip(names, kinds)]


def _plane_normal(system, edges, values, rest):
    """The world normal n of a planar mechanism (every revolute axis along n,
    every prismatic axis perpendicular to it, at zero coordinates), or None."""
    n = None
    for e in edges:
        j = e.joint
        near = j.child if e.reversed else j.parent
        a = rest[e.parent_body] @ _mat(near.rotation, values) @ _vec(j.axis, values)
        if j.kind == "revolute":
            if n is None:
                n = a
            elif np.linalg.norm(np.cross(n, a)) > 1e-12:
                return None
        elif j.kind not in ("prismatic", "fixed"):
            return None
    if n is None:
        return None
    for e in edges:
        j = e.joint
        near = j.child if e.reversed else j.parent
        a = rest[e.parent_body] @ _mat(near.rotation, values) @ _vec(j.axis, values)
        if j.kind == "prismatic" and abs(a @ n) > 1e-12:
            return None
    return n


def _padded_inertia(body, I, mass, R_rest, plane_normal):
    """MuJoCo needs positive principal moments.  A planar bar's (0, 0, I_n)
    has none about the in-plane axes, which a motion about the normal n never
    excites: give them I_n/2 each (the smallest the triangle inequality
    allows).  Anything else singular is an error."""
    if np.linalg.eigvalsh(I).min() > 0:
        return I
    if plane_normal is None:
        raise MJCFError(f"body '{body.name}' has a singular inertia {np.round(I, 9).tolist()}; MuJoCo needs "
                        "positive principal moments, and this mechanism is not planar, so they matter")
    n = R_rest.T @ plane_normal                      # the normal in the body's frame
    I_n = float(n @ I @ n)
    pad = max(I_n / 2, 1e-12 * mass)                 # a non-rotating point mass: a negligible moment
    return I + pad * (np.eye(3) - np.outer(n, n)) + (1e-12 * mass if I_n <= 0 else 0.0) * np.outer(n, n)


def _cut_equalities(cut, values, site, eq_attrs):
    """The MJCF equalities that close the loops at the ``cut`` joints, and
    the names of the cut universal joints (their axes' tendon, held at √2 L
    by ``_hold_perpendicular``); ``site(marker, name, offset)`` places a
    site and returns its name."""
    equalities = []
    perpendicular = []
    for j in cut:
        if j.kind in ("spherical", "revolute"):
            equalities.append(f'<connect name="{j.name}" site1="{site(j.parent, j.name + "__p")}" '
                              f'site2="{site(j.child, j.name + "__c")}"{eq_attrs}/>')
        if j.kind == "revolute":
            # a second point on the axis fixes the axis direction too
            ap = _mat(j.parent.rotation, values) @ _vec(j.axis, values) * AXIS_SITE_OFFSET
            ac = _mat(j.child.rotation, values) @ _vec(j.axis, values) * AXIS_SITE_OFFSET
            equalities.append(f'<connect name="{j.name}__axis" site1="{site(j.parent, j.name + "__pa", ap)}" '
                              f'site2="{site(j.child, j.name + "__ca", ac)}"{eq_attrs}/>')
        elif j.kind == "universal":
            # MuJoCo has no universal equality.  The joint is exactly its
            # centre (a connect) plus one condition on the relative rotation:
            # the first axis a (fixed in the parent marker) stays
            # perpendicular to the second axis b (fixed in the child marker,
            # R_C b = R_P Rot(a, q1) b).  With both centres held together, a
            # point at distance L along a and one at L along b are
            # |L a − L b| = L √(2 − 2 a·b) apart, so a·b = 0 is that distance
            # being √2 L: a two-site spatial tendon held at that length by a
            # tendon equality.  Both are holonomic and exact (no added body or
            # mass); the rotation condition is regular everywhere (its
            # gradient vanishes only where a = ±b, which the point
            # constraint's a ⟂ b never reaches).
            equalities.append(f'<connect name="{j.name}" site1="{site(j.parent, j.name + "__p")}" '
                              f'site2="{site(j.child, j.name + "__c")}"{eq_attrs}/>')
            ap = _mat(j.parent.rotation, values) @ _vec(j.axis, values) * AXIS_SITE_OFFSET
            bc = _mat(j.child.rotation, values) @ _vec(j.axis2, values) * AXIS_SITE_OFFSET
            site(j.parent, j.name + "__pa", ap)
            site(j.child, j.name + "__cb", bc)
            perpendicular.append(j.name)
            equalities.append(f'<tendon name="{j.name}__perpendicular" tendon1="{j.name}__axes" '
                              f'polycoef="{{{j.name}__a0}} 0 0 0 0"{eq_attrs}/>')
        elif j.kind == "fixed":
            equalities.append(f'<weld name="{j.name}" site1="{site(j.parent, j.name + "__p")}" '
                              f'site2="{site(j.child, j.name + "__c")}"{eq_attrs}/>')
        elif j.kind != "spherical":
            raise MJCFError(f"joint '{j.name}' ({j.kind}) closes a loop; MuJoCo has no {j.kind} equality "
                            "(nor one made exactly of its connect, weld and tendon equalities). Cut a "
                            "revolute, spherical, universal or fixed joint of that loop instead (system.cut)")
    return equalities, perpendicular


def _actuator_lines(system, tree_coords, values):
    """The ``<actuator>`` lines of the loads on tree coordinates, and each
    motor's start control (the keyframe's ctrl)."""
    loaded = [ld for ld in system.joint_loads if any(ld.coordinate is c for c in tree_coords)]
    inputs = {i.symbol: i for i in system.inputs}
    lines, ctrl = [], []
    if loaded:
        lines.append("  <actuator>")
        for k, ld in enumerate(loaded):
            # gear · input is a motor driven by that input (its start in the
            # keyframe's ctrl); any other expression has no MJCF form: a motor
            # at 0 that run_mujoco drives from the description
            expr = sp.sympify(ld.expr).xreplace(values)
            used = [u for u in expr.free_symbols if u in inputs]
            gear = sp.simplify(expr / used[0]) if len(used) == 1 else None
            if gear is not None and gear.is_number:
                name, g, c0 = inputs[used[0]].name, float(gear), inputs[used[0]].start
            else:
                name, g, c0 = f"{ld.coordinate.name}__force{k}", 1.0, 0.0
                lines.append(f"    <!-- {ld.coordinate.name}: {ld.expr} (applied by fmigen's MuJoCo peer run) -->")
            lines.append(f'    <motor name="{name}" joint="{ld.coordinate.name}" gear="{g!r}"/>')
            ctrl.append(c0)
        lines.append("  </actuator>")
    return lines, ctrl


def _hold_perpendicular(xml, perpendicular):
    """``xml`` with each cut universal joint's tendon equality holding its
    axes perpendicular (the placeholder ``{name__a0}`` filled in)."""
    if not perpendicular:
        return xml
    # MuJoCo's tendon equality holds L − L(qpos0) = polycoef[0], L(qpos0)
    # the length at zero joint coordinates, where the cut joint need not
    # be closed: compile once to read it, then write √2 L − L(qpos0)
    mujoco = _mujoco()
    held = xml
    for name in perpendicular:
        held = held.replace(f"{{{name}__a0}}", "0")
    model = mujoco.MjModel.from_xml_string(held)
    for name in perpendicular:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_TENDON, f"{name}__axes")
        a0 = np.sqrt(2.0) * AXIS_SITE_OFFSET - float(model.tendon_length0[k])
        xml = xml.replace(f"{{{name}__a0}}", repr(float(a0)))
    return xml


def _tendon_lines(system, perpendicular, values):
    """The ``<tendon>`` lines: each cut universal joint's axes tendon, and
    each spring-damper as a straight spatial tendon between its sites."""
    lines = []
    if system.springs or perpendicular:
        # MuJoCo's spatial tendon spring: −k (L − springlength) − d L̇ (no preload;
        # the peer run adds preloads itself)
        lines.append("  <tendon>")
        for name in perpendicular:
            lines.append(f'    <spatial name="{name}__axes">')
            lines.append(f'      <site site="{name}__pa"/>')
            lines.append(f'      <site site="{name}__cb"/>')
            lines.append("    </spatial>")
        for sd in system.springs:
            lines.append(f'    <spatial name="{sd.name}" stiffness="{_num(sd.stiffness, values)!r}" '
                         f'damping="{_num(sd.damping, values)!r}" springlength="{_num(sd.free_length, values)!r}">')
            lines.append(f'      <site site="{sd.name}__a"/>')
            lines.append(f'      <site site="{sd.name}__b"/>')
            lines.append("    </spatial>")
        lines.append("  </tendon>")
    return lines


def export_mjcf(system: JointSystem, start: dict | None = None, timestep=1e-3, integrator="RK4",
                solref=None, solimp=None, independent=None) -> str:
    """The MJCF text of ``system``; ``start``: coordinate values for the
    keyframe ``start`` (default the description's starts, 0 where unset)."""
    if system.prescribed:
        # its drive is a runtime's solve, which a motor at ctrl 0 is not
        raise ModelError(f"export-mjcf: '{system.name}' prescribes "
                         f"{', '.join(p.coordinate for p in system.prescribed)} (s.prescribe), which has no "
                         "MuJoCo form yet")
    values = parameter_values(system)
    edges, cut = spanning_tree(system)
    children: dict[str, list[TreeEdge]] = {}
    for e in edges:
        children.setdefault(e.parent_body, []).append(e)
    sites: dict[str, list[str]] = {}

    def site(marker, name, offset=np.zeros(3)):
        pos = _vec(marker.position, values) + offset
        sites.setdefault(marker.body.name, []).append(f'<site name="{name}" pos="{_fmt(pos)}"/>')
        return name

    eq_attrs = ""
    if solref is not None:
        eq_attrs += f' solref="{_fmt(solref)}"'
    if solimp is not None:
        eq_attrs += f' solimp="{_fmt(solimp)}"'
    equalities, perpendicular = _cut_equalities(cut, values, site, eq_attrs)
    for s in system.springs:
        site(s.a, f"{s.name}__a")
        site(s.b, f"{s.name}__b")
    for f in system.forces:
        site(f.at, f"{f.name}__at")

    # every body's orientation at zero joint coordinates, for the inertia check
    rest = {"ground": np.eye(3)}
    for e in edges:
        j = e.joint
        near, far = (j.child, j.parent) if e.reversed else (j.parent, j.child)
        rest[e.child_body] = rest[e.parent_body] @ _mat(near.rotation, values) @ _mat(far.rotation, values).T
    plane_normal = _plane_normal(system, edges, values, rest)
    springs_on = {}
    for r in system.rotational_springs:
        if r.coordinate.name in springs_on:
            raise MJCFError(f"coordinate '{r.coordinate.name}' has two rotational spring-dampers; MJCF holds one")
        springs_on[r.coordinate.name] = r

    def body_xml(edge: TreeEdge, indent):
        j = edge.joint
        near, far = (j.child, j.parent) if edge.reversed else (j.parent, j.child)
        # the child body's frame at zero joint coordinates, in the parent body's frame
        R_rel = _mat(near.rotation, values) @ _mat(far.rotation, values).T
        p_rel = _vec(near.position, values) - R_rel @ _vec(far.position, values)
        body = system.bodies[edge.child_body]
        mass = _num(body.mass, values)
        if mass <= 0:
            raise MJCFError(f"body '{body.name}' has mass {mass:g}; MuJoCo needs a positive mass on a moving body")
        I = _padded_inertia(body, _mat(body.inertia, values), mass, rest[body.name], plane_normal)
        pad = "  " * indent
        lines = [f'{pad}<body name="{body.name}" pos="{_fmt(p_rel)}" quat="{_fmt(_quat(R_rel))}">',
                 f'{pad}  <inertial pos="{_fmt(_vec(body.com, values))}" mass="{mass!r}" '
                 f'fullinertia="{_fmt([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>']
        pos, elements = _joint_elements(edge, values)
        for name, kind, axis in elements:
            spring = springs_on.get(name)
            extra = "" if spring is None else (
                f' stiffness="{_num(spring.stiffness, values)!r}" damping="{_num(spring.damping, values)!r}" '
                f'springref="{_num(spring.free_angle, values)!r}"')
            lines.append(f'{pad}  <joint name="{name}" type="{kind}" pos="{_fmt(pos)}" axis="{_fmt(axis)}"{extra}/>')
        lines += [f"{pad}  {s}" for s in sites.get(body.name, [])]
        for e in children.get(body.name, []):
            lines += body_xml(e, indent + 1)
        lines.append(f"{pad}</body>")
        return lines

    g = _vec(system.gravity, values)
    start = dict(start or {})
    tree_coords = [c for e in edges for c in e.joint.coordinates]
    # MuJoCo's qpos order is the joints' order in the file (depth first)
    order = []

    def walk(body):
        for e in children.get(body, []):
            order.extend(nm for nm, _, _ in _joint_elements(e, values)[1])
            walk(e.child_body)
    walk("ground")
    qstart = [start.get(nm, system.coordinate_by_name(nm).start or 0.0) for nm in order]
    independent = independent or system.independent
    lines = [f'<mujoco model="{system.name}">',
             '  <compiler angle="radian" balanceinertia="true" autolimits="true"/>',
             f'  <option timestep="{timestep!r}" integrator="{integrator}" gravity="{_fmt(g)}">',
             '    <flag contact="disable"/>',
             '  </option>']
    if independent:
        lines += ["  <custom>", f'    <text name="fmigen:independent" data={quoteattr(" ".join(independent))}/>',
                  "  </custom>"]
    lines.append("  <worldbody>")
    lines += [f"    {s}" for s in sites.get("ground", [])]
    for e in children.get("ground", []):
        lines += body_xml(e, 2)
    lines.append("  </worldbody>")
    if equalities:
        lines += ["  <equality>"] + [f"    {e}" for e in equalities] + ["  </equality>"]
    lines += _tendon_lines(system, perpendicular, values)
    actuators, ctrl = _actuator_lines(system, tree_coords, values)
    lines += actuators
    lines.append("  <keyframe>")
    lines.append(f'    <key name="start" qpos="{_fmt(qstart)}"' + (f' ctrl="{_fmt(ctrl)}"' if ctrl else "") + "/>")
    lines.append("  </keyframe>")
    lines.append("</mujoco>")
    xml = "\n".join(lines) + "\n"
    return _hold_perpendicular(xml, perpendicular)


# --- MuJoCo as a peer ----------------------------------------------------------

def _exact(x) -> sp.Rational:
    # MuJoCo's compiled values (computed from the file, e.g. rotation
    # matrices from quaternions), not a user's Python literals: the import's
    # own rule, DIGITS significant digits (``floats.rounded``)
    return rounded(x, DIGITS)


def _exact_vec(v):
    return tuple(_exact(x) for x in v)


def _exact_rotation(R, what) -> sp.Matrix:
    """A rotation matrix with exact entries, or an error: an irrational
    rotation (45°) would make the loop closures non-rational."""
    E = sp.Matrix(3, 3, [_exact(x) for x in np.ravel(R)])
    if sp.simplify(E.T * E - sp.eye(3)) != sp.zeros(3, 3):
        raise MJCFError(f"{what}: its orientation {np.round(R, 6).tolist()} has no exact rational rotation "
                        "matrix at 12 digits (e.g. a 45° turn); fmigen needs exact geometry for the loop "
                        "closures: rotate by a multiple of 90° or by a Pythagorean angle, or move the "
                        "rotation into the joint axis")
    return E


def _straight_tendons(model, mujoco, nm):
    """The model's straight two-site spatial tendons (name, sites,
    stiffness, damping, spring length), or an error naming everything in the
    model that changes the dynamics and that fmigen does not model."""
    obj = mujoco.mjtObj
    unsupported = []
    tendons = []
    for k in range(model.ntendon):
        adr, num = int(model.tendon_adr[k]), int(model.tendon_num[k])
        sites = [int(model.wrap_objid[adr + i]) for i in range(num)]
        if num != 2 or any(int(model.wrap_type[adr + i]) != int(mujoco.mjtWrap.mjWRAP_SITE) for i in range(num)):
            unsupported.append(f"tendon '{nm(obj.mjOBJ_TENDON, k, k)}' (only a straight spatial tendon "
                               "between two sites, a spring-damper, is supported)")
        else:
            tendons.append((nm(obj.mjOBJ_TENDON, k, f"tendon{k}"), sites, float(model.tendon_stiffness[k]),
                            float(model.tendon_damping[k]), float(model.tendon_lengthspring[k, 0])))
    if model.npair:
        unsupported.append(f"{model.npair} explicit contact pair(s)")
    if model.nflex:
        unsupported.append("flex bodies")
    for i in range(model.nu):
        if int(model.actuator_trntype[i]) != int(mujoco.mjtTrn.mjTRN_JOINT) or model.actuator_biastype[i] != 0 \
                or model.actuator_gaintype[i] != 0 or model.actuator_dyntype[i] != 0:
            unsupported.append(f"actuator '{nm(obj.mjOBJ_ACTUATOR, i, i)}' (only joint motors are supported)")
    for i in range(model.njnt):
        j = nm(obj.mjOBJ_JOINT, i, f"joint{i}")
        if model.dof_armature[model.jnt_dofadr[i]] != 0:
            unsupported.append(f"armature on joint '{j}'")
        if model.dof_frictionloss[model.jnt_dofadr[i]] != 0:
            unsupported.append(f"friction loss on joint '{j}'")
    for k in range(model.neq):
        if int(model.eq_type[k]) not in (int(mujoco.mjtEq.mjEQ_CONNECT), int(mujoco.mjtEq.mjEQ_WELD)):
            unsupported.append(f"equality '{nm(obj.mjOBJ_EQUALITY, k, k)}' of type {mujoco.mjtEq(int(model.eq_type[k])).name}")
    if unsupported:
        raise MJCFError("the MJCF model uses what fmigen does not model: " + "; ".join(unsupported))

    return tendons


def _ball_or_free(system, model, mujoco, i, ball, jname, bname, pm, cm, parent, start_qpos):
    """MuJoCo's ball or free joint ``i`` as fmigen's spherical or free joint
    from marker ``pm`` to ``cm``."""
    # the same motion in fmigen's coordinates: a ball joint is the
    # spherical joint (3-2-1 angles, R = Rz Ry Rx), a free joint the
    # free joint (the body frame's position in the world, then the
    # same angles), their starts the keyframe quaternion's angles.
    # The angles are singular where the second is ±π/2, as any
    # three-angle set; MuJoCo's quaternion is not
    dof = int(model.jnt_dofadr[i])
    if float(model.jnt_stiffness[i]) or any(model.dof_damping[dof:dof + (3 if ball else 6)]):
        raise MJCFError(f"joint '{jname}': stiffness or damping on a MuJoCo {'ball' if ball else 'free'} "
                        "joint acts on its rotation vector, which fmigen's angle coordinates have no "
                        "spring for; remove it or write the joint as hinges")
    adr = int(model.jnt_qposadr[i]) + (0 if ball else 3)
    w, x, y, z = (float(v) for v in start_qpos[adr:adr + 4])
    from scipy.spatial.transform import Rotation
    angles = Rotation.from_quat([x, y, z, w]).as_euler("ZYX")       # R = Rz(a) Ry(b) Rx(c)
    if ball:
        system.spherical(jname, pm, cm, coordinates=[f"{jname}_{k}" for k in (1, 2, 3)],
                         start=[float(a) for a in angles])
    else:
        if parent is not system.ground:
            raise MJCFError(f"body '{bname}': a free joint below another body, which MuJoCo does not "
                            "allow either")
        system.free(jname, pm, cm, coordinates=[f"{jname}_{k}" for k in ("x", "y", "z", "rx", "ry", "rz")],
                    start=[float(v) for v in start_qpos[adr - 3:adr]] + [float(a) for a in angles[::-1]])


def _bodies(system, model, mujoco, nm):
    """{MuJoCo body id: fmigen body} for every body, ground 0; masses,
    inertias and centres of mass as MuJoCo compiled them."""
    obj = mujoco.mjtObj
    bodies = {0: system.ground}
    for b in range(1, model.nbody):
        bname = nm(obj.mjOBJ_BODY, b, f"body{b}")
        R = np.zeros(9)
        mujoco.mju_quat2Mat(R, model.body_iquat[b])
        R = R.reshape(3, 3)
        inertia = R @ np.diag(model.body_inertia[b]) @ R.T
        # symmetric as the tensor is: the product's rounding is not (a link
        # along (4, 3) gave off-diagonal pairs one ulp apart, which the
        # body's symmetry check refused)
        inertia = (inertia + inertia.T) / 2
        bodies[b] = system.body(bname, float(model.body_mass[b]), sp.Matrix(inertia),
                                com=_exact_vec(model.body_ipos[b]))
    return bodies


def _loop_closures(system, model, mujoco, nm, bodies, data):
    """Each connect equality as a spherical joint and each weld as a fixed
    one, between markers at their anchors (``data``: the kinematics at
    qpos0); returns their names, the cut joints."""
    obj = mujoco.mjtObj
    cut = []
    for k in range(model.neq):
        b1, b2 = int(model.eq_obj1id[k]), int(model.eq_obj2id[k])
        if int(model.eq_objtype[k]) == int(obj.mjOBJ_SITE):
            s1, s2 = b1, b2
            b1, b2 = int(model.site_bodyid[s1]), int(model.site_bodyid[s2])
            a1, a2 = model.site_pos[s1], model.site_pos[s2]
        else:
            a1 = model.eq_data[k, 0:3]
            # body2's anchor: the same world point at qpos0, in body2's frame
            world = data.xpos[b1] + data.xmat[b1].reshape(3, 3) @ a1
            a2 = data.xmat[b2].reshape(3, 3).T @ (world - data.xpos[b2])
        ename = nm(obj.mjOBJ_EQUALITY, k, f"loop{k}")
        m1 = bodies[b1].marker(f"{ename}_1", _exact_vec(a1))
        m2 = bodies[b2].marker(f"{ename}_2", _exact_vec(a2))
        if int(model.eq_type[k]) == int(mujoco.mjtEq.mjEQ_CONNECT):
            system.spherical(ename, m1, m2)
        else:
            system.fixed(ename, m1, m2)
        cut.append(ename)
    return cut


def _motors(system, model, mujoco, nm):
    """Each joint motor as an input times its gear on its coordinate;
    returns the actuated coordinates' names."""
    obj = mujoco.mjtObj
    actuated = []
    for i in range(model.nu):
        jid = int(model.actuator_trnid[i, 0])
        aname = nm(obj.mjOBJ_ACTUATOR, i, f"actuator{i}")
        if int(model.jnt_type[jid]) in (int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE)):
            raise MJCFError(f"actuator '{aname}' drives a ball or free joint; fmigen's motors drive one "
                            "hinge or slide coordinate")
        start = float(model.key_ctrl[0, i]) if model.nkey else 0.0
        u = system.input(aname, start, description=f"MuJoCo motor '{aname}'")
        jname = nm(obj.mjOBJ_JOINT, jid, None)
        owner = next(j for j in system.joints.values() if any(c.name == jname for c in j.coordinates))
        system.joint_force(owner.name, float(model.actuator_gear[i, 0]) * u, coordinate=jname)
        actuated.append(jname)
    return actuated


def import_mjcf(source, name=None) -> JointSystem:
    """A JointSystem from an MJCF file path or XML text."""
    mujoco = _mujoco()
    text = Path(source).read_text() if not str(source).lstrip().startswith("<") else str(source)
    try:
        model = mujoco.MjModel.from_xml_string(text)
    except ValueError as e:
        raise MJCFError(f"MuJoCo could not compile the model: {e}") from None
    obj = mujoco.mjtObj

    def nm(kind, i, fallback):
        return mujoco.mj_id2name(model, kind, i) or fallback

    tendons = _straight_tendons(model, mujoco, nm)

    system = JointSystem(name or model.names[:model.names.index(b"\0")].decode() or "mjcf")
    system.gravity = _exact_vec(model.opt.gravity)
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)       # at qpos0, where body-form connects are satisfied
    # starts: the first keyframe when there is one (qpos0 is often a dead
    # centre), else qpos0; exact for independent coordinates, guesses otherwise
    start_qpos = model.key_qpos[0] if model.nkey else model.qpos0
    bodies = _bodies(system, model, mujoco, nm)
    independent_text = None
    for k in range(model.ntext):
        if nm(obj.mjOBJ_TEXT, k, "") == "fmigen:independent":
            adr = model.text_adr[k]
            independent_text = bytes(model.text_data[adr:adr + model.text_size[k]]).split(b"\0")[0].decode()
    for b in range(1, model.nbody):
        bname = bodies[b].name
        parent = bodies[int(model.body_parentid[b])]
        jids = [i for i in range(model.njnt) if model.jnt_bodyid[i] == b]
        types = [int(model.jnt_type[i]) for i in jids]
        H, S, BALL, FREE = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE),
                            int(mujoco.mjtJoint.mjJNT_BALL), int(mujoco.mjtJoint.mjJNT_FREE))
        R_body = np.zeros(9)
        mujoco.mju_quat2Mat(R_body, model.body_quat[b])
        # a free body's own pos and quat are only its qpos0, not geometry
        R_body = sp.eye(3) if types == [FREE] else _exact_rotation(R_body.reshape(3, 3), f"body '{bname}'")
        names = [nm(obj.mjOBJ_JOINT, i, f"{bname}_joint{n}") for n, i in enumerate(jids)]
        pos = [_exact_vec(model.jnt_pos[i]) for i in jids]
        axes = [_exact_vec(model.jnt_axis[i]) for i in jids]
        starts = [float(start_qpos[model.jnt_qposadr[i]]) for i in jids]
        if any(p != pos[0] for p in pos):
            raise MJCFError(f"body '{bname}': its joints {names} are at different positions; fmigen combines "
                            "several joints of one body only about one point")
        anchor = pos[0] if jids else (0, 0, 0)
        # the parent marker: where the joint sits at qpos0, in the parent's frame
        parent_pos = sp.Matrix(_exact_vec(model.body_pos[b])) + R_body * sp.Matrix(anchor)
        if types == [FREE]:
            # MuJoCo's free joint places the body frame itself in the world
            # (qpos = its position, then its quaternion): both markers at
            # the frames' origins
            anchor, parent_pos = (0, 0, 0), sp.zeros(3, 1)
        pm = parent.marker(f"to_{bname}", tuple(parent_pos), R_body)
        cm = bodies[b].marker("joint", anchor)
        jname = names[0] if len(names) == 1 else f"{bname}_joint"
        if not jids:
            system.fixed(f"{bname}_weld", pm, cm)
        elif types == [H]:
            system.revolute(jname, pm, cm, axis=axes[0], coordinates=[names[0]], start=starts[0])
        elif types == [S]:
            system.prismatic(jname, pm, cm, axis=axes[0], coordinates=[names[0]], start=starts[0])
        elif types == [H, S] and axes[0] == axes[1]:
            system.cylindrical(jname, pm, cm, axis=axes[0], coordinates=names, start=starts)
        elif types == [H, H] and sp.simplify(sum(a * c for a, c in zip(*axes))) == 0:
            system.universal(jname, pm, cm, axis=axes[0], axis2=axes[1], coordinates=names, start=starts)
        elif types == [H, H, H] and list(axes) == [Z, Y, X]:
            system.spherical(jname, pm, cm, coordinates=names, start=starts)
        elif types == [S, S, S, H, H, H] and list(axes) == [X, Y, Z, Z, Y, X]:
            # export_mjcf's free joint: fmigen's coordinates x, y, z, rx,
            # ry, rz are these slides, then the hinges in reverse (applied
            # z, y, x, R = Rz Ry Rx)
            system.free(jname, pm, cm, coordinates=names[:3] + names[:2:-1], start=starts[:3] + starts[:2:-1])
        elif types in ([BALL], [FREE]):
            _ball_or_free(system, model, mujoco, jids[0], types == [BALL], jname, bname, pm, cm, parent, start_qpos)
            continue
        else:
            kinds = {H: "hinge", S: "slide", BALL: "ball", FREE: "free"}
            raise MJCFError(f"body '{bname}': the joint combination {[kinds.get(x, x) for x in types]} "
                            "is not one fmigen represents (hinge, slide, hinge+slide on one axis, two "
                            "perpendicular hinges, hinges about z, y, x, slides along x, y, z then "
                            "hinges about z, y, x)")
        for i, jn in zip(jids, names):
            dof = model.jnt_dofadr[i]
            k, d = float(model.jnt_stiffness[i]), float(model.dof_damping[dof])
            if k or d:
                system.rotational_spring_damper(f"{jn}_spring", jname, k, d,
                                                free_angle=float(model.qpos_spring[model.jnt_qposadr[i]]),
                                                coordinate=jn)
    system.cut = _loop_closures(system, model, mujoco, nm, bodies, data) or None
    for tname, (s1, s2), k, d, free in tendons:
        ends = [bodies[int(model.site_bodyid[si])].marker(f"{tname}_{n}", _exact_vec(model.site_pos[si]))
                for n, si in ((1, s1), (2, s2))]
        system.spring_damper(tname, ends[0], ends[1], k, d, free_length=free)
    actuated = _motors(system, model, mujoco, nm)
    if independent_text:
        system.independent = independent_text.split()
    else:
        # the joints the model is driven at: where Φ_d is regular at the
        # start with them independent, the FMU integrates them (its start
        # values are then the keyframe's actuated angles, exact); otherwise
        # the conversion picks as for any joint system and says why
        system.preferred_independent = list(dict.fromkeys(actuated)) or None
    return system
