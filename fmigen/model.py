"""Stage 1 — model: a mechanism described with sympy objects.

A mechanism module in ``mechanisms/`` exposes ``build() -> Mechanism``.  The
``Mechanism`` collects coordinates, parameters, inputs, rigid bodies, holonomic
constraints, loads and outputs.  ``equations_of_motion()`` derives the
*unconstrained* mass matrix M(q) and forcing F(q, q̇, t) over all n coordinates
with ``sympy.physics.mechanics.KanesMethod`` (u = q̇), which is all the later
stages need from this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp
from sympy.physics import mechanics as me

#: The time symbol shared with ``sympy.physics.mechanics``.
t = me.dynamicsymbols._t


class ModelError(ValueError):
    """A mechanism description that cannot be turned into an FMU."""


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


@dataclass
class Input:
    name: str
    symbol: sp.Symbol
    start: float
    unit: str
    description: str = ""


@dataclass
class Body:
    name: str
    mass: sp.Expr
    inertia: sp.Matrix           # 3x3 central inertia in the body frame
    com: tuple                   # centre of mass, world coordinates, functions of q
    frame: me.ReferenceFrame


@dataclass
class Constraint:
    name: str
    expr: sp.Expr                # Φ_j(q, t) = 0


def declare_parameter(parameters: list, name, value, unit="", tunable=False, description=""):
    """Append a parameter to ``parameters`` (a Mechanism's or a JointSystem's)
    and return its symbol."""
    if any(p.name == name for p in parameters):
        raise ModelError(f"parameter '{name}' declared twice")
    sym = sp.Symbol(name, real=True)
    parameters.append(Parameter(name, sym, value, unit, tunable, description))
    return sym


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
    #: (point expression (3-tuple, world), force (3-tuple, world)) pairs.
    point_forces: list[tuple] = field(default_factory=list)
    #: generalized forces, keyed by coordinate name (a torque on a revolute
    #: joint angle or a force along a prismatic joint coordinate).
    generalized_forces: dict[str, sp.Expr] = field(default_factory=dict)
    gravity: tuple = (0, 0, 0)
    outputs: dict[str, sp.Expr] = field(default_factory=dict)
    #: Names of the independent coordinates; None lets ``partition`` pick them.
    independent: list[str] | None = None
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
    #: Solve blocks whose sin/cos arguments are sums of angles (relative joint
    #: angles) in the summed angles (``triangular.angle_plan``).  False keeps
    #: the expanded products of the coordinates' own sines and cosines.
    angle_sums: bool = True
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
        sym = me.dynamicsymbols(name)
        self.coordinates.append(Coordinate(name, sym, float(start), unit,
                                           float(velocity_start), description))
        return sym

    def parameter(self, name, value, unit="", tunable=False, description=""):
        return declare_parameter(self.parameters, name, value, unit, tunable, description)

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

    def body(self, name, mass, inertia, com, frame):
        """A rigid body.  ``inertia`` is a 3x3 central inertia in ``frame`` or
        a 3-tuple of principal moments; ``com`` is its world position."""
        if not isinstance(inertia, sp.MatrixBase):
            inertia = sp.diag(*inertia) if len(inertia) == 3 else sp.Matrix(inertia)
        com = tuple(com) + (0,) * (3 - len(com))
        self.bodies.append(Body(name, sp.sympify(mass), sp.Matrix(inertia), com, frame))

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

    def point_force(self, point, force):
        self.point_forces.append((tuple(point) + (0,) * (3 - len(point)),
                                  tuple(force) + (0,) * (3 - len(force))))

    def output(self, name, expr):
        self.outputs[name] = sp.sympify(expr)

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

        ``u`` is q̇ (kinematic differential equations q̇ − u = 0), so KanesMethod's
        mass matrix and forcing are exactly the unconstrained Lagrange equations.
        Each body's velocity is set explicitly as the time derivative of its
        centre of mass in the world frame, so sympy never has to guess a path.
        """
        q = self.q
        u = [me.dynamicsymbols(f"u_{c.name}") for c in self.coordinates]
        qdot = [qi.diff(t) for qi in q]
        to_u = dict(zip(qdot, u))
        origin = me.Point("O")
        origin.set_vel(self.world, 0)
        bodies, loads = [], []
        g = self._vec(self.gravity)
        for b in self.bodies:
            p = origin.locatenew(f"P_{b.name}", self._vec(b.com))
            p.set_vel(self.world, self._vec(b.com).dt(self.world).xreplace(to_u))
            frame = b.frame
            I = me.inertia(frame, b.inertia[0, 0], b.inertia[1, 1], b.inertia[2, 2],
                           b.inertia[0, 1], b.inertia[1, 2], b.inertia[0, 2])
            bodies.append(me.RigidBody(b.name, p, frame, b.mass, (I, p)))
            if g != 0:
                loads.append((p, b.mass * g))
        for k, (point, force) in enumerate(self.point_forces):
            p = origin.locatenew(f"F_{k}", self._vec(point))
            p.set_vel(self.world, self._vec(point).dt(self.world).xreplace(to_u))
            loads.append((p, self._vec(force)))
        # Angular velocities of frames are written in q̇; express them in u.
        for b in bodies:
            w = b.frame.ang_vel_in(self.world)
            b.frame.set_ang_vel(self.world, w.xreplace(to_u))
        kane = me.KanesMethod(self.world, q_ind=q, u_ind=u,
                              kd_eqs=[qd - ui for qd, ui in zip(qdot, u)])
        kane.kanes_equations(bodies, loads)
        M = kane.mass_matrix
        F = kane.forcing
        for i, c in enumerate(self.coordinates):
            if c.name in self.generalized_forces:
                F[i] += self.generalized_forces[c.name]
        back = {ui: qd for ui, qd in zip(u, qdot)}
        return M.xreplace(back), F.xreplace(back)
