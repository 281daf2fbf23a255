"""Stage 1 front end — a mechanism as bodies, markers, joints and loads.

This module only *describes* a mechanism; it derives nothing.  Two consumers
read the description, each with its own equations, and share nothing else:

* ``joint_model.to_mechanism`` turns it into the low-level ``model.Mechanism``
  (a spanning tree, relative joint coordinates, loop-closure constraints,
  world positions) that the rest of the pipeline builds into an FMU;
* ``cartesian`` integrates it in absolute coordinates (Newton–Euler per body,
  constraints written from the joint definitions) as a reference that is
  independent of the model stage.

Conventions (both consumers implement exactly these)
---------------------------------------------------
* The world frame is the frame of the body ``ground`` (``system.ground``).
* A body's frame B has origin r_B and orientation R_B (body axes -> world).
  Its centre of mass ``com`` and its ``inertia`` (about the centre of mass)
  are given in B.
* A marker M on a body has a position p_M and axes R_M (columns: the marker's
  x, y, z axes) in the body frame.  In the world: R = R_B R_M,
  r = r_B + R_B p_M.
* A joint between a parent marker P and a child marker C places C relative to
  P by its joint transform: R_C = R_P R_J(q), r_C = r_P + R_P p_J(q), with
  Rot(a, q) the right-handed rotation by q about the unit vector a:

  ============  ====================  =================================  ==============
  kind          coordinates           R_J(q)                             p_J(q)
  ============  ====================  =================================  ==============
  revolute      angle                 Rot(a, q1)                         0
  prismatic     translation           I                                  q1 a
  cylindrical   angle, translation    Rot(a, q1)                         q2 a
  universal     angle1, angle2        Rot(a, q1) Rot(b, q2)              0
  spherical     3 angles (3-2-1)      Rot(z, q1) Rot(y, q2) Rot(x, q3)   0
  planar        x, y, angle           Rot(z, q3)                         (q1, q2, 0)
  free          x, y, z, rx, ry, rz   Rot(z, q6) Rot(y, q5) Rot(x, q4)   (q1, q2, q3)
  fixed         none                  I                                  0
  ============  ====================  =================================  ==============

  ``a`` is the joint's ``axis`` and ``b`` its ``axis2`` (universal only, in
  the frame after the first rotation), both in the parent marker's frame and
  of exact unit length; the defaults are z (revolute, prismatic,
  cylindrical) and x then y (universal).  The spherical joint's angles are
  singular at q2 = ±π/2, like any three-angle set.
* Loads: ``gravity`` (world); a generalized force on a joint coordinate
  (a torque for an angle, a force for a translation; on the child, the
  reaction on the parent); a linear spring-damper between two markers'
  origins with tension T = preload + k (L − free_length) + d L̇ pulling them
  together; a rotational spring-damper on a joint coordinate acting as the
  generalized force −(preload + k (q − free_angle) + d q̇); compliant
  stops on a joint coordinate (``limit``, ``bump_stop``: generalized forces
  acting only outside a range); and a general
  force/torque applied at a marker's origin on its body, its reaction at the
  same point on the reaction marker's body (or nowhere when that is ground).
  Load expressions may use the joint coordinates, their time derivatives,
  time ``t``, the inputs and the parameters.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import sympy as sp
from fmigen.mechanics import me

from .floats import rational
from .model import Input, ModelError, Parameter, Prescription, declare_input, declare_parameter, output_info, t

#: joint kind -> number of coordinates and their default name suffixes
JOINT_KINDS = {
    "revolute": ("",),
    "prismatic": ("",),
    "cylindrical": ("_angle", "_slide"),
    "universal": ("_1", "_2"),
    "spherical": ("_1", "_2", "_3"),
    "planar": ("_x", "_y", "_angle"),
    "free": ("_x", "_y", "_z", "_rx", "_ry", "_rz"),
    "fixed": (),
}
#: which coordinates of each kind are angles (unit rad); the others are lengths
ANGLE_SLOTS = {
    "revolute": (True,), "prismatic": (False,), "cylindrical": (True, False),
    "universal": (True, True), "spherical": (True, True, True), "planar": (False, False, True),
    "free": (False, False, False, True, True, True), "fixed": (),
}
X, Y, Z = (1, 0, 0), (0, 1, 0), (0, 0, 1)


#: a marker's pose in an output before the conversion writes it along the
#: spanning tree: fmigen_marker_<kind>[<body>][<marker>][<component>](t)
MARKER_PLACEHOLDER = re.compile(r"^fmigen_marker_(position|orientation)\[(.*)\]\[(.*)\]\[(\d)\]$")


def marker_placeholder(kind, marker, k):
    """Component k of a marker's world position (k < 3) or orientation
    (row-major, k < 9) as an undefined function of t, which ``joint_model``
    replaces (its time derivatives too) by the expression along the tree."""
    return sp.Function(f"fmigen_marker_{kind}[{marker.body.name}][{marker.name}][{k}]", real=True)(t)


def _vec3(v, what):
    v = tuple(sp.sympify(e) for e in v)
    if len(v) == 2:
        v = v + (sp.Integer(0),)
    if len(v) != 3:
        raise ModelError(f"{what}: a 3-vector is needed, got {len(v)} components")
    return v


def _unit_axis(axis, what, rule="decimal"):
    # floats by the system's float rule (``fmigen.floats``): (0.6, 0.8, 0)
    # is (3/5, 4/5, 0) by "decimal"; by "binary" its length is not exactly
    # 1 (an error here)
    a = tuple(rational(e, rule) if isinstance(e, (float, sp.Float)) else e for e in _vec3(axis, what))
    norm2 = sp.expand(sum(e * e for e in a))
    if sp.simplify(norm2 - 1) != 0:
        raise ModelError(f"{what}: axis {tuple(a)} is not of exact unit length (|a|² = {norm2}); "
                         "write it with exact components such as (0, 0, 1) or (3/5, 4/5, 0)")
    return a


@dataclass
class Marker:
    body: "RigidBody"
    name: str
    position: tuple          # in the body frame
    rotation: sp.Matrix      # columns: marker axes in the body frame

    @property
    def label(self):
        return f"{self.body.name}.{self.name}"


@dataclass
class RigidBody:
    name: str
    mass: sp.Expr
    inertia: sp.Matrix       # 3x3, about the centre of mass, body frame
    com: tuple               # body frame
    markers: dict = field(default_factory=dict)

    def marker(self, name, position=(0, 0, 0), rotation=None) -> Marker:
        """A frame fixed on the body: ``position`` and ``rotation`` (3x3,
        columns = the marker's axes) in the body frame."""
        if name in self.markers:
            raise ModelError(f"marker '{self.name}.{name}' declared twice")
        R = sp.eye(3) if rotation is None else sp.Matrix(rotation)
        if R.shape != (3, 3):
            raise ModelError(f"marker '{self.name}.{name}': rotation must be 3x3")
        mk = Marker(self, name, _vec3(position, f"marker '{self.name}.{name}'"), R)
        self.markers[name] = mk
        return mk

    @property
    def origin(self) -> Marker:
        """The body frame itself as a marker."""
        return self.markers.get("origin") or self.marker("origin")


@dataclass
class JointCoordinate:
    name: str
    symbol: sp.Function      # dynamicsymbol q(t)
    angle: bool
    start: float | None      # None: from the assembly
    velocity_start: float
    limits: tuple | None     # (lower, upper) or None


@dataclass
class Joint:
    name: str
    kind: str
    parent: Marker
    child: Marker
    axis: tuple
    axis2: tuple | None
    coordinates: list[JointCoordinate]


@dataclass
class JointLoad:
    """A generalized force ``expr`` on one joint coordinate."""
    joint: Joint
    coordinate: JointCoordinate
    expr: sp.Expr


@dataclass
class SpringDamper:
    name: str
    a: Marker
    b: Marker
    stiffness: sp.Expr
    damping: sp.Expr
    free_length: sp.Expr
    preload: sp.Expr


@dataclass
class RotationalSpringDamper:
    name: str
    joint: Joint
    coordinate: JointCoordinate
    stiffness: sp.Expr
    damping: sp.Expr
    free_angle: sp.Expr
    preload: sp.Expr


@dataclass
class JointStop:
    """A compliant stop on a joint coordinate (``JointSystem.limit``): its
    bounds and its spring and damper; the force itself is a ``JointLoad``."""
    joint: Joint
    coordinate: JointCoordinate
    lower: sp.Expr
    upper: sp.Expr
    stiffness: sp.Expr
    damping: sp.Expr


@dataclass
class MarkerForce:
    """Force and torque (3-vectors, world frame) at ``at``'s origin on its
    body; the reaction at the same point on ``reaction``'s body."""
    name: str
    at: Marker
    force: tuple
    torque: tuple
    reaction: Marker | None


@dataclass
class BranchHint:
    """At the start, (r_marker − r_relative_to) · direction has ``sign``."""
    marker: Marker
    relative_to: Marker
    direction: tuple         # world
    sign: int


@dataclass
class JointSystem:
    """A mechanism as bodies and joints; see the module docstring."""
    name: str
    description: str = ""
    parameters: list[Parameter] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    gravity: tuple = (0, 0, 0)
    joint_loads: list[JointLoad] = field(default_factory=list)
    springs: list[SpringDamper] = field(default_factory=list)
    rotational_springs: list[RotationalSpringDamper] = field(default_factory=list)
    #: compliant stops (``limit``), in declaration order; each also adds its
    #: force to ``joint_loads``
    stops: list[JointStop] = field(default_factory=list)
    forces: list[MarkerForce] = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    #: per output name, (unit, description) for its modelDescription entry
    output_info: dict = field(default_factory=dict)
    branch_hints: list[BranchHint] = field(default_factory=list)
    #: names of the independent coordinates; None lets fmigen pick them
    independent: list[str] | None = None
    #: with ``independent`` None: coordinates to make independent (the rest
    #: completed by pivoted QR) when Φ_d is regular at the start with them
    #: at their starts; otherwise fmigen picks as without it and the build log
    #: says why.  The MJCF import sets it to the actuated joints.
    preferred_independent: list[str] | None = None
    #: declared degrees of freedom, checked when given
    dof: int | None = None
    #: joints to cut to open the loops; None lets fmigen choose
    cut: list[str] | None = None
    # Options of the low-level ``model.Mechanism`` that ``to_mechanism``
    # copies unchanged (see their documentation there); the names are the
    # joint coordinates' names.
    #: polynomial-variable order per block for the Gröbner basis
    groebner_order: list[str] | None = None
    #: blocks (lists of coordinate names) to solve by Newton, not Gröbner
    newton_blocks: list[list[str]] | None = None
    #: a kinematic FMU: the independent coordinates and their rates are inputs
    kinematic: bool = False
    #: ``fmigen bench``'s kinematic drive: amplitude per independent coordinate
    kinematic_drive: dict[str, float] | None = None
    kinematic_drive_period: float = 3.0
    #: solve sums of relative angles as absolute angles (``Mechanism.angle_sums``)
    angle_sums: bool = True
    #: rewrite the closure of a cut spherical joint on a link hung from
    #: ground by a universal joint as a distance and two direction equations
    #: (``joint_model``, item 4); False keeps its three position equations
    distance_links: bool = True
    #: joints whose reactions are FMU outputs (``reaction``), in request order
    reactions: list[str] = field(default_factory=list)
    #: coordinates that follow an input (``prescribe``), in request order
    prescribed: list[Prescription] = field(default_factory=list)
    #: static trims (``trim``): (spring name, coordinate name), in request order
    trims: list[tuple[str, str]] = field(default_factory=list)
    #: how float literals become exact rationals (``Mechanism.float_rule``,
    #: ``fmigen.floats``): "decimal" or "binary".  Axes are converted when
    #: their joint is added: set it before adding joints
    float_rule: str = "decimal"

    def __post_init__(self):
        self.bodies["ground"] = RigidBody("ground", sp.Integer(0), sp.zeros(3, 3), (0, 0, 0))

    @property
    def ground(self) -> RigidBody:
        return self.bodies["ground"]

    # --- declarations -------------------------------------------------
    def parameter(self, name, value, unit="", tunable=False, description="", range=None):
        """As ``Mechanism.parameter``: tunable parameters stay symbols in the
        C; structural ones (geometry) are exact in the Gröbner bases; a
        tunable one with a ``range`` is a hard point, which may enter a
        marker position."""
        return declare_parameter(self.parameters, name, value, unit, tunable, description, range)

    def input(self, name, start=0.0, unit="", description=""):
        return declare_input(self.inputs, name, start, unit, description)

    def body(self, name, mass, inertia, com=(0, 0, 0)) -> RigidBody:
        """A rigid body: ``inertia`` about the centre of mass in the body
        frame (3x3, or 3 principal moments), ``com`` in the body frame."""
        if name in self.bodies:
            raise ModelError(f"body '{name}' declared twice")
        if not isinstance(inertia, sp.MatrixBase):
            inertia = sp.diag(*inertia) if len(inertia) == 3 else sp.Matrix(inertia)
        if inertia.shape != (3, 3) or inertia != inertia.T:
            raise ModelError(f"body '{name}': the inertia must be a symmetric 3x3 matrix")
        b = RigidBody(name, sp.sympify(mass), sp.Matrix(inertia), _vec3(com, f"body '{name}' com"))
        self.bodies[name] = b
        return b

    def joint(self, kind, name, parent: Marker, child: Marker, axis=None, axis2=None,
              coordinates=None, start=None, velocity_start=None, limits=None):
        """A joint of ``kind`` (see ``JOINT_KINDS``) placing ``child`` relative
        to ``parent``.  ``coordinates``: names (default the joint's name plus
        a suffix); ``start``: exact start values of independent coordinates,
        guesses for dependent ones, or None to leave them to the assembly;
        ``limits``: (lower, upper) per coordinate.  Returns the coordinate
        symbols (one symbol for one-coordinate joints)."""
        if kind not in JOINT_KINDS:
            raise ModelError(f"joint '{name}': unknown kind '{kind}' (have {', '.join(JOINT_KINDS)})")
        if name in self.joints:
            raise ModelError(f"joint '{name}' declared twice")
        for mk in (parent, child):
            if not isinstance(mk, Marker) or self.bodies.get(mk.body.name) is not mk.body:
                raise ModelError(f"joint '{name}': {mk!r} is not a marker of a body of '{self.name}'")
        if parent.body is child.body:
            raise ModelError(f"joint '{name}' connects body '{parent.body.name}' to itself")
        n = len(JOINT_KINDS[kind])
        default_axis = X if kind == "universal" else Z
        a = _unit_axis(axis if axis is not None else default_axis, f"joint '{name}'", self.float_rule)
        b = None
        if kind == "universal":
            b = _unit_axis(axis2 if axis2 is not None else Y, f"joint '{name}' second axis", self.float_rule)
            if sp.simplify(sum(x * y for x, y in zip(a, b))) != 0:
                raise ModelError(f"joint '{name}': the universal joint's axes must be perpendicular")
        names = list(coordinates) if coordinates is not None else [name + s for s in JOINT_KINDS[kind]]

        def per_coordinate(value, what):
            if value is None:
                return [None] * n
            # one-coordinate joints take a bare value (limits: a bare pair)
            bare = not isinstance(value, (list, tuple)) or (what == "limits" and not isinstance(value[0], (list, tuple)))
            values = [value] if bare else list(value)
            if len(values) != n:
                raise ModelError(f"joint '{name}': {n} {what} values needed, got {len(values)}")
            return values

        if len(names) != n:
            raise ModelError(f"joint '{name}' ({kind}) has {n} coordinates, got names {names}")
        taken = {c.name for j in self.joints.values() for c in j.coordinates}
        for nm in names:
            if nm in taken:
                raise ModelError(f"joint '{name}': coordinate '{nm}' already belongs to another joint")
        starts = per_coordinate(start, "start")
        vstarts = per_coordinate(velocity_start, "velocity_start")
        lims = per_coordinate(limits, "limits")
        coords = [JointCoordinate(nm, me.dynamicsymbols(nm), is_angle,
                                  None if s is None else float(s), 0.0 if v is None else float(v),
                                  None if lim is None else (float(lim[0]), float(lim[1])))
                  for nm, is_angle, s, v, lim in zip(names, ANGLE_SLOTS[kind], starts, vstarts, lims)]
        self.joints[name] = Joint(name, kind, parent, child, a, b, coords)
        syms = [c.symbol for c in coords]
        return syms[0] if n == 1 else syms

    def revolute(self, name, parent, child, axis=Z, **kw):
        return self.joint("revolute", name, parent, child, axis=axis, **kw)

    def prismatic(self, name, parent, child, axis=Z, **kw):
        return self.joint("prismatic", name, parent, child, axis=axis, **kw)

    def cylindrical(self, name, parent, child, axis=Z, **kw):
        return self.joint("cylindrical", name, parent, child, axis=axis, **kw)

    def universal(self, name, parent, child, axis=X, axis2=Y, **kw):
        return self.joint("universal", name, parent, child, axis=axis, axis2=axis2, **kw)

    def spherical(self, name, parent, child, **kw):
        return self.joint("spherical", name, parent, child, **kw)

    def planar(self, name, parent, child, **kw):
        return self.joint("planar", name, parent, child, **kw)

    def free(self, name, parent, child, **kw):
        return self.joint("free", name, parent, child, **kw)

    def fixed(self, name, parent, child):
        return self.joint("fixed", name, parent, child)

    # --- loads ------------------------------------------------------------
    def _coordinate(self, joint, coordinate):
        j = self.joints.get(joint if isinstance(joint, str) else joint.name)
        if j is None:
            raise ModelError(f"unknown joint '{joint}' (have {', '.join(self.joints)})")
        if coordinate is None:
            if len(j.coordinates) != 1:
                raise ModelError(f"joint '{j.name}' has {len(j.coordinates)} coordinates: name one")
            return j, j.coordinates[0]
        for c in j.coordinates:
            if c.name == coordinate:
                return j, c
        raise ModelError(f"joint '{j.name}' has no coordinate '{coordinate}'")

    def joint_force(self, joint, expr, coordinate=None):
        """A generalized force (torque for an angle) on a joint coordinate."""
        j, c = self._coordinate(joint, coordinate)
        self.joint_loads.append(JointLoad(j, c, sp.sympify(expr)))

    def spring_damper(self, name, a: Marker, b: Marker, stiffness, damping=0, free_length=0, preload=0):
        self.springs.append(SpringDamper(name, a, b, *map(sp.sympify, (stiffness, damping, free_length, preload))))

    def rotational_spring_damper(self, name, joint, stiffness, damping=0, free_angle=0, preload=0,
                                 coordinate=None):
        j, c = self._coordinate(joint, coordinate)
        self.rotational_springs.append(RotationalSpringDamper(
            name, j, c, *map(sp.sympify, (stiffness, damping, free_angle, preload))))

    def _stop_coordinate(self, verb, joint, coordinate):
        """(joint, coordinate) a stop acts on (``limit``, ``bump_stop``); a
        joint without coordinates (fixed) is named as such."""
        name = joint if isinstance(joint, str) else getattr(joint, "name", joint)
        if name in self.joints and not self.joints[name].coordinates:
            raise ModelError(f"{verb}: joint '{name}' is {self.joints[name].kind} and has no coordinate to limit")
        return self._coordinate(joint, coordinate)

    def _stop_value(self, what, name, expr) -> float:
        """The value of a stop's ``name`` (a bound, stiffness, damping, contact
        point) with the parameters' values: numbers and parameters only, ±inf
        allowed (the caller says where it is not)."""
        values = {p.symbol: p.value for p in self.parameters}
        stray = expr.free_symbols - set(values)
        if stray:
            raise ModelError(f"{what}: {name} may use parameters only, not {sorted(map(str, stray))}")
        v = expr.xreplace(values)
        if not (v.is_number and (v.is_real or v.is_infinite)) or v is sp.nan:
            raise ModelError(f"{what}: {name} must be a real number (got {expr})")
        return float(v)

    def limit(self, joint, lower, upper, stiffness, damping=0, coordinate=None):
        """A compliant stop on a joint coordinate q: no force inside
        [lower, upper]; beyond ``upper`` the generalized force
        −max(0, k (q − upper) + c q̇), below ``lower`` +max(0, k (lower − q) − c q̇)
        (k = ``stiffness``, c = ``damping``; a torque for an angle).  The
        damper acts only while the stop is penetrated, and the max keeps it
        from ever pulling the joint back into the stop (on the way out, a
        fast rebound just leaves the stop with zero force).  Bounds in the
        coordinate's unit; either may be ±inf (``math.inf``) for a one-sided
        stop.  Model Exchange FMUs report the entry and exit as state events
        (event indicators q − upper and lower − q)."""
        j, c = self._stop_coordinate("limit", joint, coordinate)
        what = f"limit on '{c.name}'"
        lo, hi, k, d = (sp.sympify(v) for v in (lower, upper, stiffness, damping))
        num = {nm: self._stop_value(what, nm, e)
               for nm, e in (("lower", lo), ("upper", hi), ("stiffness", k), ("damping", d))}
        if num["lower"] > num["upper"]:
            raise ModelError(f"{what}: lower {num['lower']:g} is above upper {num['upper']:g}")
        if num["lower"] == -float("inf") and num["upper"] == float("inf"):
            raise ModelError(f"{what}: both bounds are infinite, the stop would never act")
        for nm in ("stiffness", "damping"):
            if not (0 <= num[nm] < float("inf")):
                raise ModelError(f"{what}: {nm} must be finite and ≥ 0 (got {num[nm]:g})")
        if num["stiffness"] == 0 and num["damping"] == 0:
            raise ModelError(f"{what}: stiffness and damping are both 0, the stop would never act")
        if any(st.coordinate is c for st in self.stops):
            raise ModelError(f"{what}: the coordinate already has a limit; give both bounds in one call")
        q, qd = c.symbol, c.symbol.diff(t)
        branches = []
        if num["upper"] != float("inf"):
            branches.append((-sp.Max(0, k * (q - hi) + d * qd), q > hi))
        if num["lower"] != -float("inf"):
            branches.append((sp.Max(0, k * (lo - q) - d * qd), q < lo))
        self.stops.append(JointStop(j, c, lo, hi, k, d))
        self.joint_loads.append(JointLoad(j, c, sp.Piecewise(*branches, (0, True))))

    def bump_stop(self, joint, at, table, side="upper", damping=0, coordinate=None):
        """A one-sided stop given by its force–deflection curve, the way bump
        and rebound stops are specified: the deflection is δ = q − ``at``
        (``side="upper"``) or ``at`` − q (``"lower"``), and while δ > 0 the
        stop pushes back with max(0, F(δ) + c δ̇) (c = ``damping``), F the
        piecewise-linear interpolation of ``table`` = [(δ0 = 0, F0), (δ1, F1),
        ...] (δ strictly increasing, F ≥ 0; F0 > 0 is a force step at contact;
        past the last point F continues with the last segment's slope).  A
        joint load like ``limit``'s; Model Exchange reports contact and each
        table point as state events (the importer also locates the kinks)."""
        j, c = self._stop_coordinate("bump_stop", joint, coordinate)
        what = f"bump_stop on '{c.name}'"
        if side not in ("upper", "lower"):
            raise ModelError(f"{what}: side must be 'upper' or 'lower' (got {side!r})")
        try:
            points = [(float(d), float(f)) for d, f in table]
        except (TypeError, ValueError):
            raise ModelError(f"{what}: the table must be (deflection, force) pairs of numbers, got {table!r}") from None
        if len(points) < 2:
            raise ModelError(f"{what}: the table needs at least two (deflection, force) points")
        if points[0][0] != 0:
            raise ModelError(f"{what}: the table must start at deflection 0 (got {points[0][0]:g})")
        for (d0, _), (d1, _) in zip(points, points[1:]):
            if not d1 > d0:
                raise ModelError(f"{what}: the table's deflections must increase strictly ({d0:g} then {d1:g})")
        if any(not (0 <= f < float("inf")) for _, f in points) or any(d != d for d, _ in points):
            raise ModelError(f"{what}: the table's forces must be finite and ≥ 0")
        at_e, d = sp.sympify(at), sp.sympify(damping)
        num = {nm: self._stop_value(what, nm, e) for nm, e in (("at", at_e), ("damping", d))}
        if not math.isfinite(num["at"]):
            raise ModelError(f"{what}: at must be finite (got {num['at']:g})")
        if not 0 <= num["damping"] < math.inf:
            raise ModelError(f"{what}: damping must be ≥ 0 and finite (got {num['damping']:g})")
        q, qd = c.symbol, c.symbol.diff(t)
        sign = 1 if side == "upper" else -1
        delta, rate = sign * (q - at_e), sign * qd
        # the table's numbers by the system's float rule, as every other
        # float literal (fmigen.floats)
        pts = [(rational(dd, self.float_rule), rational(ff, self.float_rule)) for dd, ff in points]
        segments = []
        for k in range(len(pts) - 1):
            (d0, f0), (d1, f1) = pts[k], pts[k + 1]
            line = f0 + (f1 - f0) / (d1 - d0) * (delta - d0)
            segments.append((line, True if k == len(pts) - 2 else delta < d1))
        force = sp.Piecewise(*segments)
        self.joint_loads.append(JointLoad(j, c, sp.Piecewise((-sign * sp.Max(0, force + d * rate), delta > 0),
                                                             (0, True))))

    def force(self, name, at: Marker, force=(0, 0, 0), torque=(0, 0, 0), reaction: Marker | None = None):
        self.forces.append(MarkerForce(name, at, _vec3(force, f"force '{name}'"),
                                       _vec3(torque, f"torque '{name}'"), reaction))

    def branch_hint(self, marker: Marker, relative_to: Marker, direction, sign=+1):
        """Pick the start assembly where marker lies on the ``sign`` side of
        ``relative_to`` along the world ``direction`` (e.g. "E right of C")."""
        self.branch_hints.append(BranchHint(marker, relative_to, _vec3(direction, "branch hint"),
                                            1 if sign > 0 else -1))

    def output(self, name, expr, unit="", description=""):
        """An extra FMU output ``name`` = ``expr`` (in the joint coordinates,
        parameters, inputs, t); ``unit`` and ``description`` go to its
        modelDescription entry."""
        self.outputs[name] = sp.sympify(expr)
        self.output_info[name] = output_info(name, unit, description)

    # --- marker pose as expressions ------------------------------------------
    def position(self, marker: Marker) -> sp.Matrix:
        """The world position of ``marker``'s origin (3x1), for outputs: it
        is written along the spanning tree when the system is converted
        (``joint_model``), so it may be taken before every joint is
        declared.  Outputs only: a load cannot depend on it (the Cartesian
        and MuJoCo references read loads in joint coordinates)."""
        return sp.Matrix([marker_placeholder("position", self._own(marker), i) for i in range(3)])

    def orientation(self, marker: Marker) -> sp.Matrix:
        """The world orientation of ``marker`` (3x3, columns: its axes in
        world components), for outputs (see ``position``)."""
        mk = self._own(marker)
        return sp.Matrix(3, 3, [marker_placeholder("orientation", mk, k) for k in range(9)])

    def velocity(self, marker: Marker) -> sp.Matrix:
        """The world velocity of ``marker``'s origin (3x1), the time
        derivative of ``position``, for outputs."""
        return self.position(marker).diff(t)

    def _own(self, marker):
        if not isinstance(marker, Marker) or self.bodies.get(marker.body.name) is not marker.body \
                or marker.body.markers.get(marker.name) is not marker:
            raise ModelError(f"{marker!r} is not a marker of a body of '{self.name}'")
        return marker

    def prescribe(self, joint, input, time_constant=0.01, coordinate=None):
        """The joint coordinate q follows the input ``input`` (its symbol or
        name, declared with ``input``) instead of its dynamics: its
        acceleration is the critically damped filter
        q̈ = ω²(u − q) − 2ω q̇, ω = 1/``time_constant`` [s], so q and q̇ are
        the filter's states (a ramp in u lags by 2·time_constant, a step
        settles in about 6·time_constant; an integrator step h needs
        time_constant ≳ h for RK4).  The runtime applies the generalized
        force that produces exactly that acceleration; it is the output
        ``drive_<coordinate>`` [N or N.m], and the joint's reaction
        (``reaction``) includes it.  The coordinate must be one of
        ``s.independent``; give the input the coordinate's start so that
        nothing moves at t = 0 by itself.  Not for a kinematic FMU."""
        j, c = self._coordinate(joint, coordinate)
        name = input if isinstance(input, str) else str(input)
        if not any(i.name == name for i in self.inputs):
            raise ModelError(f"prescribe: '{name}' is not a declared input (declare it with s.input)")
        if any(p.coordinate == c.name for p in self.prescribed):
            raise ModelError(f"prescribe: coordinate '{c.name}' prescribed twice")
        tc = self._stop_value(f"prescribe '{c.name}'", "time_constant", sp.sympify(time_constant))
        if not (0 < tc < math.inf):
            raise ModelError(f"prescribe '{c.name}': time_constant must be positive and finite (got {tc})")
        drive = f"drive_{c.name}"
        unit = "N.m" if c.angle else "N"
        sym = declare_input(self.inputs, drive, 0.0, unit, f"generalized force that makes {c.name} follow {name}")
        self.inputs[-1].hidden = True
        self.joint_force(joint, sym, coordinate)
        self.output(drive, sym, unit, f"generalized force driving {c.name} along {name} (prescribed)")
        self.prescribed.append(Prescription(c.name, name, drive, tc))

    def reaction(self, joint):
        """Outputs ``reaction_<joint>_fx``, ``_fy``, ``_fz`` [N] and ``_mx``,
        ``_my``, ``_mz`` [N.m]: the force and moment the joint's parent body
        exerts on its child body through the joint, about the child
        marker's origin, in world axes, including the loads on the joint's
        own coordinates (``joint_force``, ``rotational_spring_damper``):
        everything the joint transmits.  Computed at each output from the
        accelerations and constraint multipliers of the equations of motion
        (``joint_model``, "Reactions"); not for a kinematic FMU."""
        name = joint if isinstance(joint, str) else getattr(joint, "name", joint)
        if name not in self.joints:
            raise ModelError(f"reaction: unknown joint '{name}' (have {', '.join(self.joints)})")
        if name in self.reactions:
            raise ModelError(f"reaction of joint '{name}' requested twice")
        self.reactions.append(name)

    def trim(self, spring, coordinate):
        """Static trim: the preload of ``spring`` (a ``spring_damper`` or
        ``rotational_spring_damper``, by name) becomes the value that makes
        the start pose a static equilibrium along ``coordinate`` (an
        independent coordinate): at rest there, the generalized force on it
        (gravity, every load, the inputs at their starts) is zero.  The FMU solves
        the preload at initialization, at the start it assembled for the
        parameters set (masses, stiffnesses, g, hard points), so any of them
        set before initialization re-trims (``frontends/joint_trim.py``);
        it is reported as the output ``trim_<spring>``
        (initial="calculated") and fixed after initialization.  Several
        trims are solved together (one linear system).  Leave the spring's
        own ``preload`` at 0: the trim replaces it."""
        if not any(sd.name == spring for sd in [*self.springs, *self.rotational_springs]):
            have = [sd.name for sd in [*self.springs, *self.rotational_springs]]
            raise ModelError(f"trim: unknown spring '{spring}' (have {', '.join(have) or 'no springs'})")
        sd = next(sd for sd in [*self.springs, *self.rotational_springs] if sd.name == spring)
        if sd.preload != 0:
            raise ModelError(f"trim: spring '{spring}' already has a preload ({sd.preload}); the trim computes it, "
                             "declare the spring with preload 0")
        names = [c.name for c in self.coordinates]
        if coordinate not in names:
            raise ModelError(f"trim: unknown coordinate '{coordinate}' (have {', '.join(names)})")
        if any(s == spring for s, _ in self.trims):
            raise ModelError(f"trim: spring '{spring}' trimmed twice")
        if any(c == coordinate for _, c in self.trims):
            raise ModelError(f"trim: coordinate '{coordinate}' already balanced by another trimmed spring")
        self.trims.append((spring, coordinate))

    # --- queries ----------------------------------------------------------
    @property
    def coordinates(self) -> list[JointCoordinate]:
        return [c for j in self.joints.values() for c in j.coordinates]

    def coordinate_by_name(self, name) -> JointCoordinate:
        for c in self.coordinates:
            if c.name == name:
                return c
        raise ModelError(f"unknown coordinate '{name}' (have {[c.name for c in self.coordinates]})")


__all__ = ["JointSystem", "RigidBody", "Marker", "Joint", "JointCoordinate", "JOINT_KINDS", "X", "Y", "Z", "t"]
