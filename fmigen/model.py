"""Stage 1 — model: a mechanism described with sympy objects.

A mechanism module in ``mechanisms/`` exposes ``build() -> Mechanism``.  The
``Mechanism`` collects coordinates, parameters, inputs, rigid bodies, holonomic
constraints, loads and outputs.  ``equations_of_motion()`` derives the
*unconstrained* mass matrix M(q) and forcing F(q, q̇, t) over all n coordinates,
body by body (each body's Newton-Euler terms projected on the coordinates it
depends on: the Lagrange equations KanesMethod would give with u = q̇, at a
cost linear in the bodies), which is all the later stages need from this one.

A *floating base* (``FloatingBase``: a body on a free joint from ground with
bodies hanging below it, a vehicle's chassis) changes only how M and F are
derived: Kane's method then runs in the base's body-frame velocity and
angular velocity as generalized speeds, u = T(q) q̇, with every body below
the base placed relative to it (``Body.com_in_base``), and the result is
turned back into q̇: M = Tᵀ M̃ T, F = Tᵀ (F̃ − M̃ Ṫ q̇).  In world-frame
speeds each body's velocity carries the base's rotation multiplied out with
its own (one five-link corner on a free chassis: M and F of 68k and 170k
operations); in the base's frame they do not (Kane's M̃ and F̃ of the same corner in a
prototype: 8k and 39k).
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field

import sympy as sp
from fmigen.mechanics import me

from fmigen.differentiation import FunctionDerivative, time_derivative
from fmigen.kanes_method import KanesMethod

#: The time symbol shared with ``sympy.physics.mechanics``.
t = me.dynamicsymbols._t


class ModelError(ValueError):
    """A mechanism description that cannot be turned into an FMU."""


def acceleration_symbol(name: str) -> sp.Symbol:
    """The plain symbol ``build_dae`` gives the second time derivative of
    coordinate ``name`` (only reaction outputs read accelerations)."""
    return sp.Symbol(f"fmigen_qdd[{name}]", real=True)


def multiplier_symbol(name: str) -> sp.Symbol:
    """The Lagrange multiplier of constraint ``name`` in M q̈ + Φ_qᵀλ = F
    (reaction outputs read it; the code generators solve for it)."""
    return sp.Symbol(f"fmigen_lambda[{name}]", real=True)


@dataclass
class Coordinate:
    name: str
    symbol: sp.Function          # dynamicsymbol q(t)
    start: float                 # exact start for independent, guess for dependent
    unit: str
    velocity_start: float = 0.0
    description: str = ""
    #: (lower, upper) joint limits from a ``JointSystem``: documentation only
    #: (they are written into the FMU variable's description), not enforced
    limits: tuple | None = None


@dataclass
class Parameter:
    name: str
    symbol: sp.Symbol
    value: float
    unit: str
    #: Tunable parameters stay symbols in the generated C (masses, inertias,
    #: gravity, force amplitudes).  Structural ones (geometry) are baked into the
    #: Gröbner basis as exact rationals, so changing them means rebuilding.
    tunable: bool
    description: str = ""
    #: (lower, upper) of a *hard point*: a tunable parameter that may enter
    #: constraints (geometry set at run time, ``docs/writing-mechanisms.md``
    #: "Hard points").  The FMU refuses a value outside it, and the build's
    #: workspace sweep samples it.  None for every other parameter.
    range: tuple | None = None

    @property
    def is_hard_point(self) -> bool:
        """Tunable geometry that may enter constraints (``declare_parameter``
        takes a range only with ``tunable``)."""
        return self.tunable and self.range is not None


@dataclass
class Input:
    name: str
    symbol: sp.Symbol
    start: float
    unit: str
    description: str = ""
    #: an input of the generated code only, not of the FMU: a prescribed
    #: coordinate's driving force (``Prescription.drive``) or a trimmed
    #: preload (``Trim.input``), which the runtime sets itself; absent from
    #: the modelDescription
    hidden: bool = False


@dataclass
class Prescription:
    """A coordinate that follows an input (``JointSystem.prescribe``).

    The coordinate stays an independent coordinate of the kinematics, but
    its acceleration is not the dynamics': it is the critically damped
    second-order filter q̈ = ω²(u − q) − 2ω q̇ of the input u (ω = 1 /
    ``time_constant``), so q and q̇ are the filter's states and follow u
    smoothly (a ramp lags by 2·time_constant; a step settles in about
    6·time_constant).  The runtime applies the generalized force ``drive``
    (an input hidden from the FMU) that gives exactly this acceleration:
    q̈ is affine in it, so two evaluations of the acceleration, at drive 0
    and 1, determine it (``fmigen_core.c``, ``prescribe``)."""
    coordinate: str
    input: str
    drive: str
    time_constant: float


@dataclass
class Trim:
    """A static trim (``JointSystem.trim``): the preload of ``spring`` is
    the hidden input ``input``, which the runtime solves at initialization,
    after the start is assembled at the current parameters, so that the
    start is at rest along the independent coordinate ``coordinate``: the
    projected generalized force at rest, Nᵀ F with N = [I; −Φ_d⁻¹ Φ_i], is 0
    on the trimmed coordinates' rows.  Nᵀ F is affine in the preloads, so
    one evaluation at preload 0 and one per unit preload give the linear
    system (``fmigen_core.c``, ``fmigen_core_trim``)."""
    spring: str
    coordinate: str
    input: str


@dataclass
class Body:
    name: str
    mass: sp.Expr
    inertia: sp.Matrix           # 3x3 central inertia in the body frame
    com: tuple                   # centre of mass, world coordinates, functions of q
    frame: me.ReferenceFrame
    #: with a floating base: the centre of mass relative to the base origin in
    #: base-frame components (functions of the coordinates below the base
    #: only), or None for a body not below the base
    com_in_base: tuple | None = None


@dataclass
class FloatingBase:
    """A body on a free joint from ground that other bodies hang below."""
    body: str
    coordinates: list[str]       # the free joint's six coordinate names
    frame: me.ReferenceFrame     # the body's frame
    origin: tuple                # its origin, world coordinates (functions of the six)
    #: its angular velocity in its own frame's components, linear in the six
    #: rates; taken when the frame is made, because ``equations_of_motion``
    #: sets the frames' angular velocities in the generalized speeds
    angular_velocity: tuple


def _identity_solver(A, b):
    """Kane's kinematic-equation solver when the q̇ coefficients are the
    identity by construction (``_floating_base_equations``); LU otherwise."""
    if A.is_square and A == sp.eye(A.rows):
        return b
    return A.LUsolve(b)


@dataclass
class Constraint:
    name: str
    expr: sp.Expr                # Φ_j(q, t) = 0


def declare_parameter(parameters: list, name, value, unit="", tunable=False, description="", range=None):
    """Append a parameter to ``parameters`` (a Mechanism's or a JointSystem's)
    and return its symbol.  ``range`` (lower, upper), with ``tunable``, makes
    it a hard point (``Parameter.range``)."""
    if any(p.name == name for p in parameters):
        raise ModelError(f"parameter '{name}' declared twice")
    if range is not None:
        if not tunable:
            raise ModelError(f"parameter '{name}': a range makes a hard point, which must be tunable=True "
                             "(a structural parameter has one value, baked into the kinematics)")
        lower, upper = (float(b) for b in range)
        if not (math.isfinite(lower) and math.isfinite(upper) and lower < float(value) < upper):
            raise ModelError(f"parameter '{name}': its range {range} must be finite and hold its value "
                             f"{value} strictly inside")
        range = (lower, upper)
    sym = sp.Symbol(name, real=True)
    parameters.append(Parameter(name, sym, value, unit, tunable, description, range))
    return sym


def output_info(name, unit, description) -> tuple[str, str]:
    """(unit, description) of an output, checked: both end up as XML
    attributes, so anything but text is an error naming the output."""
    for what, value in (("unit", unit), ("description", description)):
        if not isinstance(value, str):
            raise ModelError(f"output '{name}': its {what} must be a string (got {value!r})")
    return unit, description


def declare_input(inputs: list, name, start=0.0, unit="", description=""):
    """Append an input to ``inputs`` and return its symbol."""
    if any(i.name == name for i in inputs):
        raise ModelError(f"input '{name}' declared twice")
    sym = sp.Symbol(name, real=True)
    inputs.append(Input(name, sym, float(start), unit, description))
    return sym


@dataclass
class Mechanism:
    name: str
    description: str = ""
    coordinates: list[Coordinate] = field(default_factory=list)
    parameters: list[Parameter] = field(default_factory=list)
    inputs: list[Input] = field(default_factory=list)
    bodies: list[Body] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    #: Rows that hold wherever ``constraints`` hold on the motion but were
    #: left out of them because their Jacobian rows were linear combinations
    #: of the kept ones at the start (an overconstrained loop: a Bennett
    #: linkage's cut revolute gives five rows, two of them independent).
    #: Which rows are independent can change along the motion (the kept pair
    #: may lose rank where the full set does not), so the stages that must
    #: stay on the true motion use them too: the Gröbner ideal of a block
    #: (``triangular``) and the DAE reference (``reference``).  Not counted
    #: in m (the DOF count and the embedding use ``constraints``).
    redundant_constraints: list[Constraint] = field(default_factory=list)
    #: (point expression (3-tuple, world), force (3-tuple, world)) pairs.
    point_forces: list[tuple] = field(default_factory=list)
    #: per point force, with a floating base: (point relative to the base
    #: origin, force) in base-frame components, or None (not below the base)
    point_forces_in_base: list[tuple | None] = field(default_factory=list)
    #: ``FloatingBase`` or None: how ``equations_of_motion`` derives M and F
    floating_base: FloatingBase | None = None
    #: generalized forces, keyed by coordinate name (a torque on a revolute
    #: joint angle or a force along a prismatic joint coordinate).
    generalized_forces: dict[str, sp.Expr] = field(default_factory=dict)
    gravity: tuple = (0, 0, 0)
    outputs: dict[str, sp.Expr] = field(default_factory=dict)
    #: per output name, (unit, description) for its modelDescription entry
    output_info: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: The outputs that are joint reactions (``JointSystem.reaction``): their
    #: expressions read the accelerations (second derivatives of the
    #: coordinates) and the multipliers (``multiplier_symbol``), which the
    #: generated code solves for at each output from M q̈ + Φ_qᵀλ = F and
    #: Φ_q q̈ = γ.
    reactions: list[str] = field(default_factory=list)
    #: Coordinates that follow an input (``Prescription``), in request order.
    prescribed: list[Prescription] = field(default_factory=list)
    #: Static trims (``Trim``), in request order.
    trims: list[Trim] = field(default_factory=list)
    #: Names of the independent coordinates; None lets ``partition`` pick them.
    independent: list[str] | None = None
    #: Why a ``JointSystem``'s preferred independent coordinates were not
    #: taken (the build logs it); "" when they were or there were none.
    independent_note: str = ""
    #: Declared degrees of freedom; checked against n − m when given.
    dof: int | None = None
    #: Optional polynomial-variable order per block for the Gröbner basis,
    #: highest first, e.g. ["c_alpha", "s_alpha", "c_phi", "s_phi"].
    groebner_order: list[str] | None = None
    #: Kinematic FMU: the independent coordinates and their velocities are FMU
    #: inputs and a step only re-solves the kinematics (no dynamics).
    kinematic: bool = False
    #: Paper 000's kinematic simulation for ``fmigen bench``: amplitude per
    #: independent coordinate name of the drive q_i(t) = q_i(0) + A sin(2πt/P),
    #: and its period P (s).  None: the mechanism has no kinematic run.
    kinematic_drive: dict[str, float] | None = None
    kinematic_drive_period: float = 3.0
    #: Coordinate switching (paper 004): further sets of independent
    #: coordinates, each of length ``dof``, that a Co-Simulation FMU may take
    #: over when the active set approaches a singularity of its Φ_d (a dead
    #: centre).  ``fmigen check`` reports the sets that are regular where a
    #: sweep path stops.  None or []: no switching.
    switch_independent: list[list[str]] | None = None
    #: Blocks to solve by Newton rather than a Gröbner sequence, each a list
    #: of coordinate names (e.g. the five-link's carrier pose).
    newton_blocks: list[list[str]] | None = None
    #: ``assemble.AssemblyHints`` for the all-assemblies solver (variable
    #: order, hidden variable, auxiliary and implied equations).
    assembly_hints: object | None = None
    #: The ``joints.JointSystem`` this mechanism was derived from, if any:
    #: what the Cartesian reference integrates.
    joint_system: object | None = None
    #: The start the joint description states, by coordinate name: the
    #: joints' given starts, the front end's assembly for those left to it
    #: (``start=None``) and, with branch hints, the hinted assembly.  The
    #: build checks the FMU's start pose against it (``start_pose``).
    described_start: dict | None = None
    #: Solve blocks whose sin/cos arguments are sums of angles (relative joint
    #: angles) in the summed angles (``polynomialize.angle_plan``).  False keeps
    #: the expanded products of the coordinates' own sines and cosines.
    angle_sums: bool = True
    #: How a float literal becomes an exact rational (``fmigen.floats``):
    #: "decimal" (the default: the short decimal the user meant, 0.7 - 0.3
    #: -> 2/5) or "binary" (the double's exact value).
    float_rule: str = "decimal"
    world: me.ReferenceFrame = field(init=False, repr=False)

    def __post_init__(self):
        self.world = me.ReferenceFrame("N")

    def __setattr__(self, name, value):
        # a misspelt option (``m.newton_block = ...``) must not be ignored
        if name not in self.__dataclass_fields__:
            raise ModelError(f"Mechanism has no field '{name}' (have {', '.join(self.__dataclass_fields__)})")
        object.__setattr__(self, name, value)

    # --- declarations -------------------------------------------------
    def coordinate(self, name, start, unit="rad", velocity_start=0.0, description=""):
        if any(c.name == name for c in self.coordinates):
            raise ModelError(f"coordinate '{name}' declared twice")
        if not (math.isfinite(float(start)) and math.isfinite(float(velocity_start))):
            raise ModelError(f"coordinate '{name}': start {start} and velocity start {velocity_start} must be "
                             "finite numbers")
        sym = me.dynamicsymbols(name)
        self.coordinates.append(Coordinate(name, sym, float(start), unit,
                                           float(velocity_start), description))
        return sym

    def parameter(self, name, value, unit="", tunable=False, description="", range=None):
        return declare_parameter(self.parameters, name, value, unit, tunable, description, range)

    def input(self, name, start=0.0, unit="", description=""):
        return declare_input(self.inputs, name, start, unit, description)

    def planar_frame(self, name, angle):
        """A body frame rotated by ``angle`` about the world z axis."""
        return self.world.orientnew(name, "Axis", (angle, self.world.z))

    def body_fixed_frame(self, name, angles, rotation_order="321", parent=None):
        """A body frame from successive body-fixed rotations (e.g. 3-2-1 Euler)."""
        frame = me.ReferenceFrame(name)
        frame.orient_body_fixed(parent or self.world, angles, rotation_order)
        return frame

    def body(self, name, mass, inertia, com, frame, com_in_base=None):
        """A rigid body.  ``inertia`` is a 3x3 central inertia in ``frame`` or
        a 3-tuple of principal moments; ``com`` is its world position
        (``com_in_base``: see ``Body``)."""
        if not isinstance(inertia, sp.MatrixBase):
            inertia = sp.diag(*inertia) if len(inertia) == 3 else sp.Matrix(inertia)
        com = tuple(com) + (0,) * (3 - len(com))
        self.bodies.append(Body(name, sp.sympify(mass), sp.Matrix(inertia), com, frame,
                                None if com_in_base is None else tuple(com_in_base)))

    def planar_body(self, name, mass, inertia_z, com, angle):
        """A body moving in the xy-plane: ``com`` = (x, y), rotated by ``angle``."""
        frame = self.planar_frame(name, angle)
        self.body(name, mass, (0, 0, inertia_z), com, frame)
        return frame

    def constraint(self, name, expr):
        if any(c.name == name for c in self.constraints):
            raise ModelError(f"constraint '{name}' declared twice")
        self.constraints.append(Constraint(name, sp.sympify(expr)))

    def generalized_force(self, coordinate, expr):
        self.coordinate_by_name(coordinate)
        self.generalized_forces[coordinate] = self.generalized_forces.get(coordinate, 0) + sp.sympify(expr)

    def point_force(self, point, force, in_base=None):
        """A force at a point, both world 3-tuples; ``in_base``: the same as
        (point relative to the base origin, force) in base-frame components
        when the point moves with the floating base's subtree."""
        self.point_forces.append((tuple(point) + (0,) * (3 - len(point)),
                                  tuple(force) + (0,) * (3 - len(force))))
        self.point_forces_in_base.append(None if in_base is None else (tuple(in_base[0]), tuple(in_base[1])))

    def output(self, name, expr, unit="", description=""):
        """An extra FMU output ``name`` = ``expr``; ``unit`` and
        ``description`` go to its modelDescription entry."""
        self.outputs[name] = sp.sympify(expr)
        self.output_info[name] = output_info(name, unit, description)

    # --- queries ------------------------------------------------------
    def coordinate_by_name(self, name) -> Coordinate:
        for c in self.coordinates:
            if c.name == name:
                return c
        raise ModelError(f"unknown coordinate '{name}' (have {[c.name for c in self.coordinates]})")

    def override_starts(self, starts: dict[str, float]):
        for name, value in starts.items():
            self.coordinate_by_name(name).start = float(value)

    @property
    def q(self):
        return [c.symbol for c in self.coordinates]

    # --- dynamics -----------------------------------------------------
    def _vec(self, xyz):
        N = self.world
        return xyz[0] * N.x + xyz[1] * N.y + xyz[2] * N.z

    def equations_of_motion(self):
        """Return (M, F): M(q) q̈ = F(q, q̇, t) with no constraints applied.

        Assembled body by body (``_body_equations``): each body adds its
        terms only in the rows and columns of the coordinates its position
        and orientation depend on.  A floating base goes through Kane's
        method in the base's body-frame speeds instead
        (``_floating_base_equations``).
        """
        if self.floating_base is not None:
            return self._floating_base_equations()
        return self._body_equations()

    def forces_at_rest(self):
        """F of ``equations_of_motion`` at q̇ = 0, without M: every inertia
        term of F carries a rate (the velocity products, and Ṫ q̇ of a
        floating base), so at rest F is the applied loads alone, J_qᵀ f
        over the bodies' weights and the point forces (J_q = ∂r/∂q of the
        point, world), plus the generalized forces, their rates set to 0.
        What a static trim reads (``joint_model._trim``): Kane's method,
        which a floating base's M and F go through, is most of the cost of
        the whole M and F."""
        q = self.q
        rest = {qi.diff(t): 0 for qi in q}
        index = {qi: i for i, qi in enumerate(q)}
        F = [sp.Integer(0)] * len(q)
        g = sp.Matrix(self.gravity)
        loads = [(b.com, b.mass * g) for b in self.bodies] + list(self.point_forces)
        # sympy's diff by q_i(t), each sub-expression once over all points
        # (the same expressions: fmigen/differentiation.py)
        by_q = [FunctionDerivative(qi) for qi in q]
        for point, force in loads:
            point = [sp.sympify(e) for e in point]
            force = [sp.sympify(f).xreplace(rest) for f in force]
            for qi in {f for e in point for f in e.atoms(sp.Function) if f in index}:
                F[index[qi]] += sum(by_q[index[qi]](e) * f for e, f in zip(point, force) if f != 0)
        for i, c in enumerate(self.coordinates):
            if c.name in self.generalized_forces:
                F[i] += sp.sympify(self.generalized_forces[c.name]).xreplace(rest)
        return sp.Matrix(F)

    def _body_equations(self):
        """M and F as the sum over bodies of their Newton-Euler terms
        projected on the coordinates (the unconstrained Lagrange equations,
        what KanesMethod with u = q̇ gives):

            M = Σ_b m J_vᵀ J_v + J_ωᵀ I J_ω
            F = Σ_b J_vᵀ m (g − a_b) − J_ωᵀ (I α_b + ω × I ω) + Σ_p J_pᵀ f_p + Q

        J_v = ∂r/∂q of the centre of mass r (world components), J_ω = ∂ω/∂q̇
        of the angular velocity ω in the body frame's components (where I is
        constant), a_b and α_b the accelerations with q̈ = 0 (r̈ and ω̇ less
        their q̈ terms).  Only the coordinates a body depends on enter its
        Jacobians, so the cost is the sum over bodies of their own sizes, not
        bodies × n² as in KanesMethod's dense partial velocities (24 of 33 s
        of a 16-cell ladder's equations).
        """
        q = self.q
        n = len(q)
        qdot = [qi.diff(t) for qi in q]
        index = {qi: i for i, qi in enumerate(q)}
        no_qddot = {qi.diff(t, 2): 0 for qi in q}
        entries: dict = {}
        F = [sp.Integer(0)] * n
        g = sp.Matrix(self.gravity)
        # sympy's diff by t, q_i(t) and q̇_i(t) without its bookkeeping at
        # every node, each sub-expression once over all bodies (the same
        # expressions: fmigen/differentiation.py)
        by_t: dict = {}
        by_q = [FunctionDerivative(qi) for qi in q]
        by_qdot = [FunctionDerivative(qd) for qd in qdot]

        def depends_on(exprs):
            found = set()
            for e in exprs:
                found |= {index[f] for f in sp.sympify(e).atoms(sp.Function) if f in index}
            return sorted(found)

        def add_point(r, weight, force):
            """A point r (world) of mass ``weight`` under ``force``:
            J_rᵀ (force − weight·(r̈ with q̈ = 0)) into F, weight·J_rᵀJ_r into M."""
            r = sp.Matrix(r)
            cols = depends_on(r)
            if not cols:
                return
            J = [[by_q[i](r[a]) for i in cols] for a in range(3)]
            load = sp.Matrix(force)
            if weight != 0:
                # element by element: Matrix.diff goes through sympy's
                # array-derivative machinery, 5x slower here; and twice by
                # t, not diff(t, 2): sympy's second derivative of a product
                # (the general Leibniz rule) gives the same expression at
                # more cost
                bias = [time_derivative(time_derivative(e, t, by_t), t, by_t).xreplace(no_qddot) for e in r]
                load = [load[a] - weight * bias[a] for a in range(3)]
                add_mass(cols, J, weight * sp.eye(3))
            add_force(cols, J, load)

        def add_mass(cols, J, inertia):
            """Jᵀ·inertia·J into M's upper triangle (J: 3 rows, one column
            per coordinate in ``cols``)."""
            for k1, i in enumerate(cols):
                for k2 in range(k1, len(cols)):
                    j = cols[k2]
                    term = sum(J[a][k1] * inertia[a, c] * J[c][k2]
                               for a in range(3) for c in range(3) if inertia[a, c] != 0)
                    if term != 0:
                        entries[(i, j)] = entries.get((i, j), 0) + term

        def add_force(cols, J, load):
            """Jᵀ·load into F."""
            for k, i in enumerate(cols):
                F[i] += sum(J[a][k] * load[a] for a in range(3) if J[a][k] != 0)

        for b in self.bodies:
            add_point(b.com, b.mass, b.mass * g)
            w = b.frame.ang_vel_in(self.world).to_matrix(b.frame)
            cols = depends_on(w)
            if cols:
                I = b.inertia
                Jw = [[by_qdot[i](w[a]) for i in cols] for a in range(3)]
                alpha = sp.Matrix([time_derivative(e, t, by_t).xreplace(no_qddot) for e in w])
                torque = -(I * alpha + w.cross(I * w))
                add_mass(cols, Jw, I)
                add_force(cols, Jw, torque)
        for point, force in self.point_forces:
            add_point(point, 0, force)
        for i, c in enumerate(self.coordinates):
            if c.name in self.generalized_forces:
                F[i] += self.generalized_forces[c.name]
        # symmetric as written: one expression per pair for the code generator
        M = sp.Matrix(n, n, lambda i, j: entries.get((min(i, j), max(i, j)), 0))
        return M, sp.Matrix(F)

    def _kane_loads(self, place):
        """Kane's bodies and loads; ``place(com, com_in_base, name)`` gives a
        point with its velocity set (world or base-relative)."""
        bodies, loads = [], []
        g = self._vec(self.gravity)
        for b in self.bodies:
            p = place(b.com, b.com_in_base, f"P_{b.name}")
            I = me.inertia(b.frame, b.inertia[0, 0], b.inertia[1, 1], b.inertia[2, 2],
                           b.inertia[0, 1], b.inertia[1, 2], b.inertia[0, 2])
            bodies.append(me.RigidBody(b.name, p, b.frame, b.mass, (I, p)))
            if g != 0:
                loads.append((p, b.mass * g))
        return bodies, loads

    def _floating_base_equations(self):
        """M and F with the floating base's body-frame speeds (module
        docstring): u_b = T(q) q̇_b for the base's six coordinates, u = q̇ for
        the others; Kane gives M̃ u̇ = F̃(q, u); with u̇ = T q̈ + Ṫ q̇ and the
        projection Tᵀ (Kane's equations in u are T⁻ᵀ times Lagrange's in q),
        M = Tᵀ M̃ T and F = Tᵀ (F̃ − M̃ Ṫ q̇)."""
        fb, N = self.floating_base, self.world
        B = fb.frame
        q = self.q
        n = len(q)
        qdot = [qi.diff(t) for qi in q]
        base = [self.coordinates.index(self.coordinate_by_name(name)) for name in fb.coordinates]
        base_set = set(base)
        u = [me.dynamicsymbols(f"u_{c.name}") for c in self.coordinates]
        to_u = {qdot[i]: u[i] for i in range(n) if i not in base_set}
        # T: the base's origin velocity and angular velocity in B components,
        # as functions of its coordinates' rates
        r0 = sp.Matrix(fb.origin)
        speeds = list(B.dcm(N) * r0.diff(t)) + list(fb.angular_velocity)
        qb_dot = [qdot[i] for i in base]
        T = sp.Matrix([[sp.expand(sp.diff(e, qd)) for qd in qb_dot] for e in speeds])
        if any(sp.expand(e - sum(T[k, j] * qb_dot[j] for j in range(6))) != 0 for k, e in enumerate(speeds)):
            raise ModelError(f"floating base '{fb.body}': its speeds are not linear in its coordinates' rates")
        ub = [u[i] for i in base]
        # q̇_b = T⁻¹ u_b written out, so Kane's q̇ coefficient matrix is the
        # identity (its own LU of the symbolic T block took 25 s of a vehicle)
        if T[:3, 3:].is_zero_matrix and T[3:, :3].is_zero_matrix and r0.diff(t) == sp.Matrix(qb_dot[:3]):
            # the origin's speeds are B.dcm(N) q̇_r, a rotation: its inverse
            # is its transpose (the simplified inverse of T, 4 s of a vehicle)
            Tinv = sp.diag(T[:3, :3].T, T[3:, 3:].inv().applyfunc(sp.simplify))
        else:
            Tinv = T.inv().applyfunc(sp.simplify)
        kd = [qdot[base[k]] - sum(Tinv[k, j] * ub[j] for j in range(6)) for k in range(6)]
        kd += [qdot[i] - u[i] for i in range(n) if i not in base_set]

        origin = me.Point("O")
        origin.set_vel(N, 0)
        base_point = origin.locatenew("P_base", self._vec(list(r0)))
        base_point.set_vel(N, ub[0] * B.x + ub[1] * B.y + ub[2] * B.z)
        omega = ub[3] * B.x + ub[4] * B.y + ub[5] * B.z
        base_q = {q[i] for i in base}

        def in_base(rel):
            return rel[0] * B.x + rel[1] * B.y + rel[2] * B.z

        def place(world, rel, name):
            if rel is None:
                moving = {f for e in world for f in sp.sympify(e).atoms(sp.Function)} & base_q
                if moving:
                    raise ModelError(f"floating base '{fb.body}': '{name}' moves with the base but has no "
                                     "position relative to it")
                p = origin.locatenew(name, self._vec(world))
                p.set_vel(N, self._vec(world).dt(N).xreplace(to_u))
                return p
            r = in_base(rel)
            p = base_point.locatenew(name, r)
            rdot = sum((sp.sympify(c).diff(t).xreplace(to_u) * e for c, e in zip(rel, (B.x, B.y, B.z))),
                       me.Vector(0))
            p.set_vel(N, base_point.vel(N) + omega.cross(r) + rdot)
            return p

        bodies, loads = self._kane_loads(place)
        # Only the base's angular velocity is set (in u): a body below it
        # composes its own along its frames' chain through the base (Kane
        # maps the chain's joint rates to u by the kinematic equations).
        # Setting every body's would link each frame to N directly, and
        # sympy's frame path search then grows with every link (20 s of a
        # vehicle).  Bodies off the base get theirs in u as in the world case,
        # all computed before any is set.
        off_base = [(b.frame, b.frame.ang_vel_in(N).xreplace(to_u)) for b in self.bodies if b.com_in_base is None]
        # The speeds are set on the mechanism's own frames for Kane only, and
        # put back after: the frames describe the mechanism (the derived-model
        # cache's key reads their angular velocities), and a key that changed
        # with the derivation filed each cold build's entry where no later
        # lookup finds it.
        frames = [N, B, *(frame for frame, _ in off_base)]
        described = {frame: dict(frame._ang_vel_dict) for frame in frames}
        try:
            B.set_ang_vel(N, omega)
            for frame, w in off_base:
                frame.set_ang_vel(N, w)
            for k, ((point, force), rel) in enumerate(zip(self.point_forces, self.point_forces_in_base)):
                if rel is None:
                    loads.append((place(point, None, f"F_{k}"), self._vec(force)))
                else:
                    loads.append((place(point, rel[0], f"F_{k}"), in_base(rel[1])))
            kane = KanesMethod(N, q_ind=q, u_ind=u, kd_eqs=kd, kd_eqs_solver=_identity_solver)
            kane.kanes_equations(bodies, loads)
            Mt, Ft = kane.mass_matrix, kane.forcing
        finally:
            for frame, velocities in described.items():
                frame._ang_vel_dict.clear()
                frame._ang_vel_dict.update(velocities)
        # back to q̇.  T is the identity off the base's six coordinates, so
        # only their rows and columns change (a dense n×n product would cost
        # n³ symbolic operations: minutes for a vehicle's 74 coordinates)
        u_of_qdot = {u[i]: sum(T[a, b_] * qdot[base[b_]] for b_ in range(6)) for a, i in enumerate(base)}
        u_of_qdot.update({u[i]: qdot[i] for i in range(n) if i not in base_set})
        Tdot_qdot = [sum(T[a, b_].diff(t) * qdot[base[b_]] for b_ in range(6)) for a in range(6)]
        MT = Mt.as_mutable()                                   # M̃ T
        for r in range(n):
            row = [Mt[r, base[a]] for a in range(6)]
            for j in range(6):
                MT[r, base[j]] = sum(row[a] * T[a, j] for a in range(6))
        M = MT.copy()                                          # Tᵀ (M̃ T)
        for col in range(n):
            for i in range(6):
                M[base[i], col] = sum(T[a, i] * MT[base[a], col] for a in range(6))
        # symmetric as written (Tᵀ M̃ T is), so the code generator sees one
        # expression per pair
        M = sp.Matrix(n, n, lambda i, j: M[min(i, j), max(i, j)])
        # F = Tᵀ (F̃ − M̃ Ṫ q̇), Ṫ q̇ non-zero in the base's six rows only
        Fu = [Ft[r].xreplace(u_of_qdot) - sum(Mt[r, base[a]] * Tdot_qdot[a] for a in range(6)) for r in range(n)]
        F = sp.Matrix(Fu)
        for i in range(6):
            F[base[i]] = sum(T[a, i] * Fu[base[a]] for a in range(6))
        for i, c in enumerate(self.coordinates):
            if c.name in self.generalized_forces:
                F[i] += self.generalized_forces[c.name]
        return M, F
