"""Stage 1 front end — a ``joints.JointSystem`` as a low-level ``Mechanism``.

``to_mechanism`` derives, from bodies, markers and joints (conventions in
``fmigen/joints.py``):

1. *A spanning tree.*  Joints are taken greedily (Kruskal) in the order
   "most worth keeping first": joints whose coordinates are loaded, named
   independent or given a start, then by kind (free, fixed, planar,
   prismatic, cylindrical, universal, revolute, spherical: a spherical or
   revolute joint is cut first because it removes its coordinates for the
   fewest closure equations — 3 for 3, and 2 for 1 in a plane), then by
   distance from ground (BFS), then declaration order.  The joints left over are *cut*
   (``system.cut`` overrides the choice).  The tree is oriented from ground
   by BFS, so a joint may be traversed child -> parent.
2. *Coordinates.*  The relative coordinates of the tree joints are the
   mechanism's coordinates (rad for angles, m otherwise); a cut joint's
   coordinates do not exist.
3. *Poses.*  Each body's world pose composes the joint transforms along its
   tree path.  A body that only turns about the world z axis keeps its
   orientation as one angle (a sum of joint angles), so a planar chain's
   frames are ``Axis`` rotations about z (the equations of motion stay small) and its
   positions contain cos/sin of sums that ``expand_trig`` turns into products
   of the joint angles' s/c — polynomial, as the Gröbner stage needs.  Other
   bodies get a chain of ``Axis``/body-fixed frames (angular velocities are
   then sums of joint rates, not derivatives of a DCM).
4. *Closure constraints* of every cut joint, written from the joint's
   definition in the frame of the lowest body both its markers hang from in
   the tree: the world frame when that is ground, a chassis' frame for the
   loops of a suspension below it (then the chassis pose, which every row
   would otherwise contain, drops out, and each corner's loops keep the
   structure they have on a fixed chassis).  The loops of one coupled
   block that would close in different bodies share one frame instead (of
   theirs, the one where the fewest rows contain knowns: ``_shared_frames``),
   so every angle in the block is relative to the same body.  Identically zero equations are dropped
   (the out-of-plane ones of a planar loop), then the redundant ones: the
   rows of Φ_q are selected greedily at points on the constraint manifold
   (the start projected onto it and two nearby points), keeping a row only
   when it raises the rank.

   *Distance links.*  A cut spherical joint S whose one marker is on a body
   (the link) placed in the tree by a universal joint U (its child marker on
   the link; its parent on the body the loop closes in, or on a body moving
   below it, such as a steering rack carrying a tie rod) does not get S's
   three position rows d = 0.  With w = R_Pᵀ (r_S − r_P) the S point on the other
   body seen from U's centre in U's parent-marker frame, ℓ the link vector
   from U's to S's marker (U's child-marker frame) and e = R_U(q1, q2) ℓ =
   Rot(a, q1) Rot(b, q2) ℓ its direction from U's angles, it gets

       dist:   |r_S − r_P|² − |ℓ|² = 0        (the other body's pose only)
       dir_a:  a · Rot(b, q2) ℓ − a · w = 0   (= a·e − a·w: q2 only)
       dir_b:  a · (e × w) = 0                (e ∥ w across the axis a)

   These are T(q)·(w − e) with T's rows (w + e)ᵀ, aᵀ and (a × e)ᵀ, so they
   hold wherever d = 0 does, with the same constraint manifold and tangent
   space (T is regular while e has a component across a), and each link's
   distance row no longer contains its angles: a suspension's distance rows
   form one block in the carrier pose and every (q2, q1) pair is triangular
   (``five_link``'s hand-written formulation, derived).  They also admit
   the mirror w⊥ = −e⊥ (U's q1 + π image, the link pointing away from S);
   the start assembly is checked against d = 0 (and e across a, where T is
   regular), and the run-time kinematics continue the start's branch.  Only a universal joint is rewritten: a
   spherical one at the link's other end leaves the link's spin about ℓ
   free (a degree of freedom without inertia for a slim link).
   ``system.distance_links = False`` keeps the three position rows.
5. *Loads* as gravity, generalized forces and point forces (virtual power),
   outputs, limits (documentation) and the start assembly (branch hints pick
   among all real assemblies; a big system takes Newton from the guesses).
"""

from __future__ import annotations


import numpy as np
import sympy as sp

from fmigen.differentiation import FunctionDerivative, second_time_derivative, time_derivative
from fmigen.floats import check_rule, rational
from fmigen.frontends.closure_rows import _Numeric, _select_constraints, _shared_frames
from fmigen.frontends.joint_poses import _Tree, _world_poses, joint_transform, rot
from fmigen.frontends.joint_tree import spanning_tree
from fmigen.joints import JointSystem, Marker
from fmigen.model import FloatingBase, Mechanism, ModelError, t
from fmigen.symbolic import shared_xreplace


# --- closure equations ----------------------------------------------------------

def _perpendicular(a):
    """Two exact unit-free vectors perpendicular to the exact axis a."""
    a = sp.Matrix(a)
    helper = sp.Matrix([1, 0, 0]) if abs(float(a[0])) < 0.9 else sp.Matrix([0, 1, 0])
    u = a.cross(helper)
    return u, a.cross(u)


def closure_equations(joint, RP, rP, RC, rC):
    """[(name, expr)] that hold when the cut joint closes: parent marker pose
    (RP, rP), child marker pose (RC, rC), all in the world frame."""
    k, name = joint.kind, joint.name
    d = rC - rP
    eqs = []
    a = sp.Matrix(joint.axis)
    u, v = _perpendicular(joint.axis)
    if k in ("revolute", "spherical", "universal", "fixed"):
        eqs += [(f"{name}_{c}", d[i]) for i, c in enumerate("xyz")]
    elif k in ("prismatic", "cylindrical"):
        # only across the axis: the slide is free
        eqs += [(f"{name}_across1", (RP * u).dot(d)), (f"{name}_across2", (RP * v).dot(d))]
    elif k == "planar":
        eqs += [(f"{name}_normal", (RP * sp.Matrix([0, 0, 1])).dot(d))]
    if k in ("revolute", "cylindrical"):
        # the axis fixed in the child stays along the parent's
        eqs += [(f"{name}_axis1", (RP * u).dot(RC * a)), (f"{name}_axis2", (RP * v).dot(RC * a))]
    elif k == "universal":
        eqs += [(f"{name}_cross", (RP * a).dot(RC * sp.Matrix(joint.axis2)))]
    elif k == "planar":
        z = sp.Matrix([0, 0, 1])
        eqs += [(f"{name}_tilt1", (RP * sp.Matrix([1, 0, 0])).dot(RC * z)),
                (f"{name}_tilt2", (RP * sp.Matrix([0, 1, 0])).dot(RC * z))]
    elif k in ("prismatic", "fixed"):
        # R_Pᵀ R_C = I: its three off-diagonal elements above the diagonal
        # vanish to first order only at the identity (locally independent)
        ex, ey, ez = (sp.Matrix(e) for e in ((1, 0, 0), (0, 1, 0), (0, 0, 1)))
        eqs += [(f"{name}_rot_z", (RP * ex).dot(RC * ey)), (f"{name}_rot_x", (RP * ey).dot(RC * ez)),
                (f"{name}_rot_y", (RP * ez).dot(RC * ex))]
    return eqs


def _distance_link(system, joint, tree_links: _Tree):
    """(universal joint U, link-side marker, other marker) when the cut
    spherical ``joint`` closes through a link hung by U (module docstring,
    item 4), else None."""
    if joint.kind != "spherical":
        return None
    for mine, other in ((joint.parent, joint.child), (joint.child, joint.parent)):
        if mine.body.name not in tree_links.up:
            continue
        u, reverse = tree_links.up[mine.body.name]
        if u.kind != "universal" or reverse:
            continue
        # the link must not carry the other side.  U's parent body need not
        # be where the loop closes: on a steering rack below the chassis, w
        # below also contains the rack's coordinate, a known of the loop
        # (d = 0 ⇔ T(w − e) = 0 holds whatever w depends on)
        if mine.body.name in tree_links.path(other.body.name):
            continue
        ell = u.child.rotation.T * (sp.Matrix(mine.position) - sp.Matrix(u.child.position))
        # ℓ along the second axis: q2 only spins the link about itself, and
        # dir_a would not contain it
        if sp.Matrix(u.axis2).cross(ell).applyfunc(sp.expand) == sp.zeros(3, 1):
            continue
        return u, mine, other
    return None


def distance_link_equations(joint, u, mine, other, marker_pose):
    """[(name, expr)]: the dist, dir_a and dir_b rows of a distance link
    (module docstring, item 4) replacing the cut spherical joint's d = 0."""
    a, b = sp.Matrix(u.axis), sp.Matrix(u.axis2)
    q1, q2 = (c.symbol for c in u.coordinates)
    ell = u.child.rotation.T * (sp.Matrix(mine.position) - sp.Matrix(u.child.position))
    RP, rP = marker_pose(u.parent)          # in the loop's frame: constant, or moved by a rack
    r_other = marker_pose(other)[1]
    d = r_other - rP
    w = RP.T * d
    e = rot(a, q1) * rot(b, q2) * ell
    name = joint.name
    return [(f"{name}_dist", d.dot(d) - ell.dot(ell)),
            (f"{name}_dir_a", sp.expand(a.dot(rot(b, q2) * ell)) - a.dot(w)),
            (f"{name}_dir_b", a.dot(e.cross(w)))]


def _check_start_closes(system, coords, position_checks, projected):
    """The rewritten distance links also admit the mirror assembly (U's
    q1 + π image), and their rows are regular only while the link has a
    component across U's first axis: check both at the start guesses
    projected onto the constraints (the assembly the build continues)."""
    if not position_checks:
        return
    params = {p.symbol: rational(p.value, system.float_rule) for p in system.parameters}
    exprs = []
    for j, closure, u, mine in position_checks:
        ell = u.child.rotation.T * (sp.Matrix(mine.position) - sp.Matrix(u.child.position))
        q1, q2 = (c.symbol for c in u.coordinates)
        e = rot(u.axis, q1) * rot(u.axis2, q2) * ell
        across = sp.Matrix(u.axis).cross(e)
        exprs += closure + [across.dot(across) / ell.dot(ell)]
    num = _Numeric(exprs, coords, params)
    values = num.f(projected)
    scale = max(1.0, *(abs(float(p.value)) for p in system.parameters if not p.tunable), 1.0)
    for k, (j, closure, u, _) in enumerate(position_checks):
        n = len(closure) + 1
        gap, across2 = np.abs(values[k * n:k * n + n - 1]).max(), values[k * n + n - 1]
        # a mirror's gap is of the link's size; the projection's own
        # residual (≤ 1e-8 scale on the rewritten rows) is far below this
        if gap > 1e-6 * scale:
            raise ModelError(f"'{system.name}': the start assembly satisfies the distance-link equations of "
                             f"'{j.name}' but not the spherical joint itself (gap {gap:.3g}): it is the mirror "
                             f"assembly, the link turned by π about the first axis of '{u.name}'; give starts "
                             f"(guesses) of '{u.name}''s angles on the wanted branch")
        if across2 < 1e-12:
            raise ModelError(f"'{system.name}': at the start the link of '{j.name}' lies along the first axis "
                             f"of '{u.name}', where its distance-link equations are singular; start elsewhere "
                             "or set distance_links = False")


# --- the conversion -------------------------------------------------------------

def to_mechanism(system: JointSystem) -> Mechanism:
    """The low-level mechanism of a joint system; see the module docstring."""
    return convert(system)[0]


def convert(system: JointSystem):
    """(``to_mechanism(system)``, its ``joint_start.StartFree`` record or
    None): the record holds what the conversion computed that does not
    depend on the coordinates' start values, and the decisions that did
    (``at_start`` replays them at another start); None when a
    start change can change more than those decisions (a trim, loops
    closing in frames that ``_shared_frames`` chooses at the start)."""
    from fmigen.frontends.joint_start import StartFree, selection_of
    if not isinstance(system, JointSystem):
        raise ModelError(f"to_mechanism wants a JointSystem, got {type(system).__name__}")
    tree, cut = spanning_tree(system)
    m = Mechanism(system.name, description=system.description or system.name)
    m.parameters = list(system.parameters)
    m.inputs = list(system.inputs)
    N = m.world

    coords = _tree_coordinates(system, m, tree)
    poses = _world_poses(system, m, tree)

    def marker_pose(mk: Marker):
        p = poses[mk.body.name]
        return p.R * mk.rotation, p.point(mk.position)

    tree_links = _Tree(system, tree)
    relative_cache = {}
    base = _floating_base(system, tree, tree_links)
    if base is not None:
        joint, name = base
        frame = poses[name].frame
        m.floating_base = FloatingBase(name, [c.name for c in joint.coordinates], frame, tuple(poses[name].r),
                                       tuple(frame.ang_vel_in(N).to_matrix(frame)))

    def in_base(body: str, position):
        """A point of ``body`` (body-frame ``position``) relative to the
        floating base, base-frame components, or None when the body does not
        move with the base's subtree."""
        if base is None or base[1] not in tree_links.path(body):
            return None
        return tree_links.relative_pose(body, base[1], relative_cache).point(position)

    # bodies (ground and massless bodies add nothing to M)
    for b in system.bodies.values():
        if b.name == system.ground.name or (b.mass == 0 and b.inertia == sp.zeros(3, 3)):
            continue
        p = poses[b.name]
        com = p.point(b.com)
        rel = in_base(b.name, b.com)
        m.body(b.name, b.mass, b.inertia, tuple(com), p.frame, com_in_base=None if rel is None else tuple(rel))
    m.gravity = tuple(sp.sympify(g) for g in system.gravity)

    # closure equations of the cut joints, each in the frame of the lowest
    # body both its markers hang from (ground: the world frame), except that
    # the loops of one coupled block share one frame (``_shared_frames``)
    def loop_rows(j, frame_body):
        """(closure rows of the cut joint ``j`` in ``frame_body``'s frame,
        its distance-link position check or None)."""
        def loop_pose(mk: Marker):
            if frame_body == system.ground.name:
                return marker_pose(mk)
            p = tree_links.relative_pose(mk.body.name, frame_body, relative_cache)
            return p.R * mk.rotation, p.point(mk.position)

        RP, rP = loop_pose(j.parent)
        RC, rC = loop_pose(j.child)
        link = _distance_link(system, j, tree_links) if system.distance_links else None
        if link is not None:
            return (distance_link_equations(j, *link, loop_pose),
                    (j, [e for _, e in closure_equations(j, RP, rP, RC, rC)], link[0], link[1]))
        return closure_equations(j, RP, rP, RC, rC), None

    frames = {j.name: tree_links.common_ancestor(j.parent.body.name, j.child.body.name) for j in cut}
    rows = {j.name: loop_rows(j, frames[j.name]) for j in cut}
    # (the frames are chosen at the start only when the loops close in more than one)
    start_free = len(set(frames.values())) < 2 and not system.trims
    shared = _shared_frames(system, m, coords, cut, frames, rows, loop_rows, tree_links)
    for j in cut:
        if shared[j.name] != frames[j.name]:
            rows[j.name] = loop_rows(j, shared[j.name])
    candidates = [row for j in cut for row in rows[j.name][0]]
    position_checks = [rows[j.name][1] for j in cut if rows[j.name][1] is not None]
    projected = _select_constraints(system, m, coords, candidates)
    selection = selection_of(m)
    _check_start_closes(system, coords, position_checks, projected)

    # a trimmed spring's preload is a placeholder until _trim solves it
    trim_preloads = {spring: sp.Symbol(f"_trim_{spring}", real=True) for spring, _ in system.trims}
    _loads(system, m, poses, marker_pose, in_base, base, trim_preloads)

    cut_coords = _outputs_and_independent(system, m, cut, marker_pose)
    _pass_through_options(system, m, cut_coords)
    _reaction_outputs(system, m, tree, cut, poses, marker_pose, tree_links, shared, relative_cache, trim_preloads)
    _limits_as_documentation(m)
    hints = _hint_values(system, m, marker_pose)
    record = StartFree.of(candidates, selection, position_checks, hints) if start_free else None
    _start_assembly(system, m, hints)
    if trim_preloads:
        _trim(system, m, trim_preloads)
    m.joint_system = system
    m.described_start = {c.name: float(c.start) for c in m.coordinates}
    return m, record


def at_start(system, m: Mechanism, record) -> Mechanism | None:
    """``joint_model.to_mechanism(system)`` from ``m``, the conversion of
    ``system`` at other start values (``record`` its ``joint_start.StartFree``), which
    this changes; None when the selection at ``system``'s starts differs
    from ``m``'s (then only a full conversion gives the model).  A start
    that cannot be converted raises what the conversion raises."""
    from fmigen.frontends.joint_start import selection_of
    tree, _ = spanning_tree(system)
    scratch = Mechanism(system.name)
    scratch.parameters = list(system.parameters)
    coords = _tree_coordinates(system, scratch, tree)
    if [c.name for c in scratch.coordinates] != [c.name for c in m.coordinates]:
        return None
    projected = _select_constraints(system, scratch, coords, record.candidates)
    if selection_of(scratch) != record.selection:
        return None
    for mine, fresh in zip(m.coordinates, scratch.coordinates):
        mine.start = fresh.start
    checks = [(system.joints[j], closure, system.joints[u], system.bodies[body].markers[marker])
              for j, closure, u, (body, marker) in record.position_checks]
    _check_start_closes(system, coords, checks, projected)
    _start_assembly(system, m, list(zip(system.branch_hints, record.hints)))
    m.joint_system = system
    m.described_start = {c.name: float(c.start) for c in m.coordinates}
    return m


def _tree_coordinates(system, m, tree):
    """The coordinates of the tree joints, in joint declaration order, made
    coordinates of ``m`` (the user's symbols, starts and limits)."""
    tree_joints = {j.name for j, _ in tree}
    coords = []
    for j in system.joints.values():
        if j.name not in tree_joints:
            continue
        for c in j.coordinates:
            desc = f"{j.kind} joint '{j.name}' ({j.parent.label} -> {j.child.label})"
            m.coordinate(c.name, 0.0 if c.start is None else c.start, "rad" if c.angle else "m",
                         velocity_start=c.velocity_start, description=desc)
            mc = m.coordinate_by_name(c.name)
            mc.symbol = c.symbol            # the user's dynamicsymbol, so loads and outputs match
            mc.limits = c.limits
            coords.append(c)
    return coords


def _loads(system, m, poses, marker_pose, in_base, base, preloads=None):
    """The joint loads, rotational springs, spring-dampers and marker forces
    of ``system`` as generalized and point forces of ``m``.  ``preloads``:
    spring name -> the preload to use instead of the declared one (the
    trimmed springs' placeholders, ``_trim``)."""
    preloads = preloads or {}
    for ld in system.joint_loads:
        m.generalized_force(ld.coordinate.name, ld.expr)
    for rs in system.rotational_springs:
        q = rs.coordinate.symbol
        m.generalized_force(rs.coordinate.name,
                            -(preloads.get(rs.name, rs.preload) + rs.stiffness * (q - rs.free_angle)
                              + rs.damping * q.diff(t)))
    def tension_vector(ra, rb, sd):
        """T d/|d| (the force on a; −it on b): tension pulls them together."""
        d = rb - ra
        L = sp.sqrt(d.dot(d))
        Ldot = d.dot(d.diff(t)) / L
        T = preloads.get(sd.name, sd.preload) + sd.stiffness * (L - sd.free_length) + sd.damping * Ldot
        return T * d / L

    for sd in system.springs:
        ra, rb = marker_pose(sd.a)[1], marker_pose(sd.b)[1]
        f = tension_vector(ra, rb, sd)
        pa, pb = in_base(sd.a.body.name, sd.a.position), in_base(sd.b.body.name, sd.b.position)
        if pa is not None and pb is not None:
            # both ends below the floating base: its rotation drops out
            fb = tension_vector(pa, pb, sd)
        elif pa is not None or pb is not None:
            fb = poses[base[1]].R.T * f
        m.point_force(tuple(ra), tuple(f), in_base=None if pa is None else (pa, fb))
        m.point_force(tuple(rb), tuple(-f), in_base=None if pb is None else (pb, -fb))
    for fc in system.forces:
        _marker_force(m, fc, poses, marker_pose)


def _outputs_and_independent(system, m, cut, marker_pose):
    """The outputs and the independent coordinates of ``m``: none may name a
    coordinate of a cut joint (it does not exist in the model).  Returns the
    cut joints' coordinate names."""
    cut_coords = {c.name for j in cut for c in j.coordinates}
    cut_syms = {c.symbol for j in cut for c in j.coordinates}
    _no_marker_poses_in_loads(system)
    for name, expr in system.outputs.items():
        expr = _marker_poses(system, expr, marker_pose, f"output '{name}'")
        bad = sorted(str(s) for s in expr.atoms(sp.Function) if s in cut_syms)
        if bad:
            raise ModelError(f"output '{name}' uses {bad}, coordinates of a cut joint "
                             f"({', '.join(j.name for j in cut)}), which do not exist in the model")
        m.output(name, expr, *system.output_info.get(name, ("", "")))
    if system.independent is not None:
        for name in system.independent:
            if name in cut_coords:
                raise ModelError(f"independent coordinate '{name}' belongs to a cut joint")
            system.coordinate_by_name(name)
        m.independent = list(system.independent)
    for pr in system.prescribed:
        # the kinematics take a prescribed coordinate as known, like any
        # independent one; only its acceleration is not the dynamics'
        if m.independent is None or pr.coordinate not in m.independent:
            raise ModelError(f"prescribe: coordinate '{pr.coordinate}' must be one of s.independent "
                             f"(declared: {', '.join(m.independent or []) or 'none'})")
        if system.kinematic:
            raise ModelError(f"prescribe '{pr.coordinate}': a kinematic FMU has no dynamics to drive; "
                             "its independent coordinates are inputs already")
    m.prescribed = list(system.prescribed)
    return cut_coords


# --- marker poses in outputs ----------------------------------------------------------

def _placeholders(expr):
    """{placeholder f(t): (kind, body, marker, component)} in ``expr``
    (``joints.marker_placeholder``)."""
    from fmigen.joints import MARKER_PLACEHOLDER
    out = {}
    for f in sp.sympify(expr).atoms(sp.core.function.AppliedUndef):
        hit = MARKER_PLACEHOLDER.match(f.func.__name__)
        if hit:
            out[f] = (hit.group(1), hit.group(2), hit.group(3), int(hit.group(4)))
    return out


def _marker_poses(system, expr, marker_pose, what):
    """``expr`` with every ``s.position``/``s.orientation`` placeholder, and
    its time derivatives (``s.velocity``), written along the spanning tree:
    the world pose of the marker, in the tree joints' coordinates."""
    found = _placeholders(expr)
    if not found:
        return expr
    values = {}
    for f, (kind, body, marker, k) in found.items():
        mk = system.bodies.get(body, None)
        mk = mk.markers.get(marker) if mk is not None else None
        if mk is None:
            raise ModelError(f"'{system.name}': {what} uses the pose of marker '{body}.{marker}', which is no "
                             "marker of this system")
        R, r = marker_pose(mk)
        values[f] = r[k] if kind == "position" else R[k // 3, k % 3]
    # the derivatives first (xreplace replaces the largest matching node)
    subs = {}
    for d in sp.sympify(expr).atoms(sp.Derivative):
        if d.expr in values:
            subs[d] = values[d.expr].diff(*d.variable_count)
    subs.update(values)
    return sp.sympify(expr).xreplace(subs)


def _no_marker_poses_in_loads(system):
    """Marker poses (``s.position`` ...) are for outputs: the Cartesian and
    MuJoCo references evaluate loads in joint coordinates and would not
    know them."""
    loads = [(f"joint_force on '{ld.joint.name}'", [ld.expr]) for ld in system.joint_loads]
    loads += [(f"rotational_spring_damper '{r.name}'", [r.stiffness, r.damping, r.free_angle, r.preload])
              for r in system.rotational_springs]
    loads += [(f"spring_damper '{sd.name}'", [sd.stiffness, sd.damping, sd.free_length, sd.preload])
              for sd in system.springs]
    loads += [(f"force '{fc.name}'", [*fc.force, *fc.torque]) for fc in system.forces]
    for what, exprs in loads:
        if any(_placeholders(e) for e in exprs):
            raise ModelError(f"'{system.name}': {what} uses s.position, s.orientation or s.velocity, which are "
                             "for outputs only; write the load in the joint coordinates")


# --- reactions ---------------------------------------------------------------------

#: the six outputs of a reaction, with their units
_REACTION_COMPONENTS = (("fx", "N"), ("fy", "N"), ("fz", "N"), ("mx", "N.m"), ("my", "N.m"), ("mz", "N.m"))


def _skew(w):
    return sp.Matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])


def _reaction_outputs(system, m, tree, cut, poses, marker_pose, tree_links, frames, relative_cache, preloads):
    """The outputs of ``system.reactions`` (``JointSystem.reaction``): the
    wrench (force, moment about the child marker's origin; world axes) that
    the parent body exerts on the child body through the joint, as
    expressions in the coordinates, their first and second derivatives and
    the multipliers λ of the kept closure rows (``multiplier_symbol``).  The
    generated code solves M q̈ + Φ_qᵀλ = F, Φ_q q̈ = γ at each output for q̈
    and λ (the equations the embedding reduces), so both are exact to
    round-off at the state, and nothing is integrated.

    *A cut joint* acts only through its closure rows: each row k exerts on
    the child body the wrench −λ_k ∂Φ_k/∂ε, ε a virtual twist of the child
    body alone about the child marker's origin (the virtual power of the
    constraint forces −Φ_qᵀλ).  The rows depend on the child body only
    through its marker's pose, so ∂Φ_k/∂ε is exact from the rows as written
    (in the frame of the body the loop closes in).  The distance-link rows
    (module docstring, item 4) are T(q)·R_Pᵀ(r_S,other − r_S,link), T
    regular: on the constraint manifold the factor R_Pᵀ(...) vanishes, so
    only its derivative contributes and T's does not.  Rows dropped as
    redundant carry no multiplier; an overconstrained loop's reactions are
    then the ones with those rows' forces zero (a planar loop in 3D: its
    out-of-plane forces, which its planar loads do not determine, are 0).

    *A tree joint* has no multiplier: its wrench is the Newton–Euler balance
    of the subtree it carries (every body below it in the spanning tree),
    the rate of change of the subtree's momentum and angular momentum about
    the child marker's origin less every external load on the subtree:
    gravity, springs and marker forces at their points, and the cut joints
    that join the subtree to the rest, through their multipliers as above.
    Loads between two bodies of the subtree cancel, and the loads on the
    joint's own coordinates (a drive, a rotational spring) are not counted
    as external: the wrench is then all the joint transmits, constraint and
    drive.  Exact: the balance is an identity of rigid-body mechanics given
    the accelerations and the cut joints' forces, and those are the model's.
    When the subtree is on the parent side (the joint traversed from its
    child marker), the child gets the opposite wrench."""
    if not system.reactions:
        return
    from fmigen.model import multiplier_symbol
    if system.kinematic:
        raise ModelError(f"'{system.name}': reactions ({', '.join(system.reactions)}) need the dynamics, and a "
                         "kinematic FMU integrates none (its motion is an input); drop s.kinematic or the reactions")
    N = m.world
    kept = {c.name for c in m.constraints}
    cut_names = {j.name for j in cut}
    eps = sp.symbols("_reaction_eps0:6", real=True)
    at_zero = {e: 0 for e in eps}
    cut_wrench_cache = {}
    # sympy's diff(t) and diff(t, 2), each sub-expression once over every subtree
    # (they share the chassis' and corners' poses): the same expressions (differentiation.py)
    by_t, by_tt = {}, {}

    def loop_pose(mk, frame_body):
        if frame_body == system.ground.name:
            return marker_pose(mk)
        p = tree_links.relative_pose(mk.body.name, frame_body, relative_cache)
        return p.R * mk.rotation, p.point(mk.position)

    def cut_wrench(j):
        """(force, moment) on j's child body at its child marker, world."""
        if j.name in cut_wrench_cache:
            return cut_wrench_cache[j.name]
        fb = frames[j.name]
        Rf = poses[fb].R if fb != system.ground.name else sp.eye(3)
        dp, dth = Rf.T * sp.Matrix(eps[:3]), Rf.T * sp.Matrix(eps[3:])   # the twist in the loop's frame
        link = _distance_link(system, j, tree_links) if system.distance_links else None
        if link is None:
            RP, rP = loop_pose(j.parent, fb)
            RC, rC = loop_pose(j.child, fb)
            rows = closure_equations(j, RP, rP, (sp.eye(3) + _skew(dth)) * RC, rC + dp)
        else:
            rows = _distance_link_rows(j, link, lambda mk: loop_pose(mk, fb), dp)
        W = sp.zeros(6, 1)
        for rname, expr in rows:
            if rname not in kept:
                continue
            lam = multiplier_symbol(rname)
            for i in range(6):
                g = sp.diff(expr, eps[i]).xreplace(at_zero)
                if g != 0:
                    W[i] -= lam * g
        out = (W[:3, 0], W[3:, 0])
        cut_wrench_cache[j.name] = out
        return out

    def tree_wrench(j, reverse):
        top = (j.parent if reverse else j.child).body.name
        subtree = {b for b in system.bodies if b != system.ground.name and top in tree_links.path(b)}
        rC = marker_pose(j.child)[1]
        g = sp.Matrix(system.gravity)
        force, moment = sp.zeros(3, 1), sp.zeros(3, 1)

        def external(f, at, tau=None):
            nonlocal force, moment
            f = sp.Matrix(f)
            force -= f
            moment -= (sp.Matrix(at) - rC).cross(f) + (sp.Matrix(tau) if tau is not None else sp.zeros(3, 1))

        for name in sorted(subtree, key=list(system.bodies).index):
            b = system.bodies[name]
            if b.mass == 0 and b.inertia == sp.zeros(3, 3):
                continue
            pose = poses[name]
            com = pose.point(b.com)
            acc = sp.Matrix([second_time_derivative(sp.sympify(e), t, by_tt, by_t) for e in com])
            omega = _angular_velocity(pose.frame, N)
            alpha = sp.Matrix([time_derivative(e, t, by_t) for e in omega])
            Iw = pose.R * b.inertia * pose.R.T
            force += b.mass * acc
            moment += (com - rC).cross(b.mass * acc) + Iw * alpha + omega.cross(Iw * omega)
            external(b.mass * g, com)
        _subtree_loads(system, subtree, marker_pose, cut, cut_wrench, external, preloads)
        # the subtree's balance gives the wrench on the subtree through j
        return (force, moment) if not reverse else (-force, -moment)

    reversed_in_tree = {jt.name: rev for jt, rev in tree}
    for name in system.reactions:
        j = system.joints[name]
        f, mom = cut_wrench(j) if name in cut_names else tree_wrench(j, reversed_in_tree[name])
        m.reactions += _declare_reaction(system, m, j, f, mom)


def _distance_link_rows(j, link, loop_pose, dp):
    """The closure rows of cut joint ``j`` closed by a distance link
    (``_distance_link``), with the link's end on j's child body moved by
    ``dp`` (loop frame); ``loop_pose(marker)``: its pose in the loop's frame."""
    u, mine, other = link
    a = sp.Matrix(u.axis)
    q1, q2 = (c.symbol for c in u.coordinates)
    ell = u.child.rotation.T * (sp.Matrix(mine.position) - sp.Matrix(u.child.position))
    e = rot(u.axis, q1) * rot(u.axis2, q2) * ell
    RPu, rPu = loop_pose(u.parent)
    r_other, r_mine = loop_pose(other)[1], loop_pose(mine)[1]
    w = RPu.T * (r_other - rPu)
    moved = (r_other + dp, r_mine) if other is j.child else (r_other, r_mine + dp)
    gap = RPu.T * (moved[0] - moved[1])            # w − e, perturbed
    return [(f"{j.name}_dist", (w + e).dot(gap)), (f"{j.name}_dir_a", -a.dot(gap)),
            (f"{j.name}_dir_b", a.cross(e).dot(gap))]


def _subtree_loads(system, subtree, marker_pose, cut, cut_wrench, external, preloads):
    """Pass every load from outside ``subtree`` on it to ``external(force,
    point, torque)``: springs with one end in it, marker forces acting on it
    and not reacted in it, and the cut joints joining it to the rest.
    ``preloads``: a trimmed spring's preload (``_loads``'), in place of its
    declared one."""
    for sd in system.springs:
        ends = [mk for mk in (sd.a, sd.b) if mk.body.name in subtree]
        if len(ends) == 1:
            ra, rb = marker_pose(sd.a)[1], marker_pose(sd.b)[1]
            d = rb - ra
            L = sp.sqrt(d.dot(d))
            tension = preloads.get(sd.name, sd.preload) + sd.stiffness * (L - sd.free_length) \
                + sd.damping * d.dot(d.diff(t)) / L
            f = tension * d / L                          # on a; −f on b
            external(f if ends[0] is sd.a else -f, marker_pose(ends[0])[1])
    for fc in system.forces:
        r = marker_pose(fc.at)[1]
        on_at = fc.at.body.name in subtree
        on_reaction = fc.reaction is not None and fc.reaction.body.name in subtree
        if on_at != on_reaction:
            sign = 1 if on_at else -1
            external(sign * sp.Matrix(fc.force), r, sign * sp.Matrix(fc.torque))
    for k in cut:
        sides = (k.parent.body.name in subtree, k.child.body.name in subtree)
        if sides[0] != sides[1]:
            f, mom = cut_wrench(k)
            sign = 1 if sides[1] else -1                 # on k's child, or its opposite on k's parent
            at = marker_pose(k.child)[1]
            external(sign * f, at, sign * mom)


def _declare_reaction(system, m, j, f, mom) -> list[str]:
    """Declare joint ``j``'s reaction wrench (force ``f``, moment ``mom``) as
    six outputs of model ``m``; their names."""
    name = j.name
    outs = []
    for (comp, unit), expr in zip(_REACTION_COMPONENTS, [*f, *mom]):
        out = f"reaction_{name}_{comp}"
        if out in system.outputs:
            raise ModelError(f"'{system.name}': output '{out}' is declared by s.output and by s.reaction('{name}')")
        what = "force" if comp[0] == "f" else "moment about the child marker's origin"
        m.output(out, expr, unit, f"{what}, world {comp[1]}, that {j.parent.label} exerts on {j.child.label} "
                                  f"through joint '{name}'")
        outs.append(out)
    return outs


def _pass_through_options(system, m, cut_coords):
    """Copy the low-level options a JointSystem declares (``joints.py``);
    a coordinate they name must exist in the model (not be a cut joint's)."""
    def check(names, what):
        for name in names:
            if name in cut_coords:
                raise ModelError(f"'{system.name}': {what} names '{name}', a coordinate of a cut joint, "
                                 "which does not exist in the model")
            system.coordinate_by_name(name)

    for block in system.newton_blocks or []:
        check(block, "newton_blocks")
    check(system.kinematic_drive or {}, "kinematic_drive")
    m.newton_blocks = [list(b) for b in system.newton_blocks] if system.newton_blocks is not None else None
    m.groebner_order = list(system.groebner_order) if system.groebner_order is not None else None
    m.kinematic = bool(system.kinematic)
    m.kinematic_drive = dict(system.kinematic_drive) if system.kinematic_drive is not None else None
    m.kinematic_drive_period = float(system.kinematic_drive_period)
    m.angle_sums = bool(system.angle_sums)
    m.float_rule = check_rule(system.float_rule)


def _floating_base(system, tree, tree_links):
    """(free joint, body) of a body on a free joint from ground that other
    bodies hang below in the tree (a vehicle's chassis), or None: then
    ``Mechanism.equations_of_motion`` derives M and F in its body-frame
    speeds (``model.FloatingBase``)."""
    for j, reverse in tree:
        if j.kind != "free" or reverse or j.parent.body.name != system.ground.name:
            continue
        body = j.child.body.name
        if any(b != body and body in tree_links.path(b) for b in tree_links.up):
            return j, body
    return None


def _angular_velocity(frame, world):
    return frame.ang_vel_in(world).to_matrix(world)


def _marker_force(m, fc, poses, marker_pose):
    """A force and torque at a marker's origin, their reaction at the same
    point on the reaction body: generalized forces by virtual power,
    Q_i = F·∂v/∂q̇_i + τ·∂ω/∂q̇_i on the body minus the same for the reaction
    body's material point at that place."""
    N = m.world
    r = marker_pose(fc.at)[1]
    F, tau = sp.Matrix(fc.force), sp.Matrix(fc.torque)
    pose = poses[fc.at.body.name]
    # sympy's diff without its bookkeeping at every node, the same
    # expressions (fmigen/differentiation.py)
    by_t: dict = {}
    v = sp.Matrix([time_derivative(e, t, by_t) for e in r])
    w = _angular_velocity(pose.frame, N)
    power = F.dot(v) + tau.dot(w)
    if fc.reaction is not None and fc.reaction.body.name != "ground":
        rp = poses[fc.reaction.body.name]
        wr = _angular_velocity(rp.frame, N)
        vr = sp.Matrix([time_derivative(e, t, by_t) for e in rp.r]) + wr.cross(r - rp.r)
        power -= F.dot(vr) + tau.dot(wr)
    # only the speeds the power reads (the vehicle's tire loads: 16 of 74)
    rates = power.atoms(sp.Derivative)
    for c in m.coordinates:
        if c.symbol.diff(t) not in rates:
            continue
        Q = FunctionDerivative(c.symbol.diff(t))(power)
        if Q != 0:
            m.generalized_force(c.name, Q)


def _limits_as_documentation(m):
    """Joint limits are not enforced (no contact model): they go into the
    coordinate's description, which the modelDescription carries."""
    for c in m.coordinates:
        if c.limits:
            lo, hi = c.limits
            c.description += f"; limits [{lo:g}, {hi:g}] {c.unit} (documented, not enforced)"


def _hint_values(system, m, marker_pose):
    """[(hint, expression in the coordinates)] of the branch hints."""
    out = []
    for h in system.branch_hints:
        d = marker_pose(h.marker)[1] - marker_pose(h.relative_to)[1]
        out.append((h, d.dot(sp.Matrix(h.direction))))
    return out


def _start_assembly(system, m, hints):
    """With branch hints (``_hint_values``): the real assembly nearest the
    guesses among those that satisfy every hint (all assemblies when the
    system is small enough for ``assemble``; Newton from the guesses
    otherwise, then checked)."""
    if not hints or not m.constraints:
        return
    from fmigen.kinematics import assemble
    from fmigen.kinematics import start_assembly
    from fmigen.kinematics.groebner import GroebnerError, singular_available
    params = {p.symbol: rational(p.value, system.float_rule) for p in system.parameters}
    syms = [c.symbol for c in m.coordinates]
    fns = [(h, sp.lambdify(syms, e.xreplace(params), "numpy")) for h, e in hints]

    def satisfied(values):
        q = [values[c.name] for c in m.coordinates]
        return all(h.sign * float(f(*q)) > 0 for h, f in fns)

    def describe():
        return "; ".join(f"({h.marker.label} − {h.relative_to.label})·{tuple(h.direction)} "
                         f"{'>' if h.sign > 0 else '<'} 0" for h in system.branch_hints)

    system_poly = None
    if singular_available() and len(m.coordinates) - m.dof <= 12:
        try:
            system_poly = assemble.polynomial_system(m)
            if len(system_poly.variables) > 12:
                system_poly = None
        except ModelError:
            system_poly = None
    why_not_all = "the system is too big to list all assemblies"
    if system_poly is not None:
        try:
            start_assembly.choose_start_assembly(m, system=system_poly, accept=satisfied, accept_what=describe())
            return
        except GroebnerError as e:
            # the engine failed (not the hints): what a big system does
            why_not_all = f"listing all assemblies failed ({e})"
    # too big for the all-assemblies solver: the projected start must satisfy them
    values = {c.name: c.start for c in m.coordinates}
    if not satisfied(values):
        raise ModelError(f"'{system.name}': the assembly Newton finds from the start guesses violates the "
                         f"branch hints ({describe()}) and {why_not_all}; "
                         "give guesses of the dependent coordinates on the wanted branch")


__all__ = ["to_mechanism", "spanning_tree", "closure_equations", "joint_transform", "rot"]


def _trim(system, m, placeholders):
    """Static trim (``JointSystem.trim``): solve each trimmed spring's
    preload so that the start pose is at rest along its coordinate, and put
    the solution in place of the placeholder everywhere ``m`` holds it.

    At rest (q̇ = 0) the equations of motion M q̈ = F + Φ_qᵀ λ have q̈ = 0
    when the generalized force projected on the motions the constraints
    allow vanishes: Nᵀ F = 0 with N = [I; −Φ_d⁻¹ Φ_i] (rows ordered as the
    coordinates), one row per independent coordinate.  The rows of the
    trimmed coordinates are linear in the preloads (a spring's tension is
    linear in its preload), with coefficients that are numbers at the start
    pose; their constant parts are sums of tunable parameters (masses, g,
    stiffnesses) times numbers.  So the preloads are expressions in the
    tunable parameters, which the FMU evaluates with their current values:
    a parameter set before initialization re-trims.  The start pose is the
    design pose the build assembled; the trim holds there, not at a start
    changed in the FMU, and a hard point enters it at its default value."""
    from fmigen.derive.dae import build_dae
    from fmigen.derive.partition import choose_partition
    dae = build_dae(m, at_rest=True)
    names = list(dae.names)
    start = {c.name: float(c.start) for c in m.coordinates}
    # the independent set the build will use (declared, or chosen as the build chooses it)
    independent = [names[k] for k in choose_partition(dae).independent]
    for spring, coord in system.trims:
        if coord not in independent:
            raise ModelError(f"'{system.name}': trim of spring '{spring}' along '{coord}': '{coord}' is a dependent "
                             f"coordinate (the independent ones are {', '.join(independent)}); trim along an "
                             "independent coordinate, or declare s.independent")
    q0 = np.array([start[n] for n in names])
    ind = [names.index(n) for n in independent]
    dep = [k for k in range(len(names)) if k not in ind]
    N = np.zeros((len(names), len(ind)))
    N[ind, range(len(ind))] = 1.0
    if dep:
        J = dae.numeric.Phi_q(0.0, q0)
        N[dep, :] = -np.linalg.solve(J[:, dep], J[:, ind])
    at_rest = {**dict(zip(dae.q_sym, q0.tolist())), **{v: 0 for v in dae.v_sym}, t: 0,
               **dict(zip(dae.inputs, dae.input_values))}
    # the trim holds at the design pose of the default geometry (N above is Φ_q's there): a hard
    # point enters it at its default, and setting one in the FMU moves the start without trimming again
    hard = {p.symbol: rational(p.value, m.float_rule) for p in m.parameters if p.is_hard_point}
    F = [sp.sympify(f).xreplace({**at_rest, **hard}) for f in dae.F]
    rows = []
    for spring, coord in system.trims:
        col = independent.index(coord)
        rows.append(sp.Add(*[sp.Float(N[k, col]) * F[k] for k in range(len(names)) if N[k, col] != 0 and F[k] != 0]))
    unknowns = [placeholders[spring] for spring, _ in system.trims]
    A, b = sp.linear_eq_to_matrix([sp.expand(r) for r in rows], unknowns)
    stray = set().union(*(e.free_symbols for e in A)) if A else set()
    if stray:
        raise ModelError(f"'{system.name}': the trimmed preloads' coefficients depend on {sorted(map(str, stray))}; "
                         "a trim needs them to be numbers at the start pose")
    An = np.array(A.tolist(), dtype=float)
    if np.linalg.matrix_rank(An, tol=1e-12 * max(1.0, np.abs(An).max())) < len(unknowns):
        pairs = ", ".join(f"'{s}' along '{c}'" for s, c in system.trims)
        raise ModelError(f"'{system.name}': the trim ({pairs}) has no unique solution: at the start pose a "
                         "trimmed spring does not act on its coordinate, or two act the same way")
    Ainv = np.linalg.inv(An)
    solution = {}
    for i, (spring, _) in enumerate(system.trims):
        solution[placeholders[spring]] = sp.Add(*[sp.Float(Ainv[i, j]) * b[j] for j in range(len(unknowns))])
    # build_dae replaced structural parameters by numbers and kept tunable ones as their own
    # symbols, the same symbols m uses: the solution substitutes into m directly
    shared = {}   # each sub-expression object once over m's expressions (symbolic.shared_xreplace)

    def put(e):
        return shared_xreplace(sp.sympify(e), solution, shared)

    # point forces (and their floating-base forms) are (point, force) pairs of tuples
    m.point_forces = [tuple(tuple(put(x) for x in part) for part in pf) for pf in m.point_forces]
    m.point_forces_in_base = [None if pb is None else tuple(tuple(put(x) for x in part) for part in pb)
                              for pb in m.point_forces_in_base]
    m.generalized_forces = {k: put(v) for k, v in m.generalized_forces.items()}
    m.outputs = {k: put(v) for k, v in m.outputs.items()}
    for spring, _ in system.trims:
        sd = next(sd for sd in [*system.springs, *system.rotational_springs] if sd.name == spring)
        unit = "N" if sd in system.springs else "N.m"
        m.output(f"trim_{spring}", solution[placeholders[spring]], unit,
                 f"trimmed preload of spring '{spring}' (static equilibrium at the start pose)")
