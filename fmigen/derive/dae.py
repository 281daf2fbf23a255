"""Stage 2 — dae: the index-3 system M q̈ + Φ_qᵀ λ = F, Φ(q, t) = 0.

Everything from here on uses plain symbols: ``q_sym`` for coordinates,
``v_sym`` for their velocities and ``t`` for time.  Structural parameters
(geometry) are replaced by exact rationals; tunable ones stay symbols and
become run-time parameters of the FMU.  This stage also checks the degrees of
freedom, so a redundant or missing constraint is reported by name here.

The same ``DAE`` object is the input of the independent reference solver in
``reference.py``.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sympy as sp

from fmigen.derive import lambdify_numpy
from fmigen.derive.derivatives import jacobian
from fmigen.floats import exact_floats, rational
from fmigen.model import Mechanism, ModelError, acceleration_symbol, t
from fmigen.symbolic import shared_xreplace, times


#: the DAE's derivatives of Φ (cached properties), which take tunable
#: parameters as symbols
DERIVATIVES = ("Phi_q", "Phi_t", "gamma")


@dataclass
class DAE:
    mechanism: Mechanism
    names: list[str]                 # coordinate names, model order
    q_sym: list[sp.Symbol]
    v_sym: list[sp.Symbol]
    tunable: list[sp.Symbol]         # run-time parameters, in order
    tunable_values: list[float]
    inputs: list[sp.Symbol]
    input_values: list[float]
    M: sp.Matrix                     # n x n, in q and tunable parameters
    F: sp.Matrix                     # n, in q, v, t, parameters, inputs
    Phi: sp.Matrix                   # m, in q and t (geometry is exact)
    constraint_names: list[str]
    outputs: dict[str, sp.Expr]
    #: the mechanism's redundant closure rows (``Mechanism.redundant_constraints``),
    #: plain like Phi; empty (0 x 1) for all but an overconstrained loop
    Phi_redundant: sp.Matrix = None
    redundant_names: list[str] = None

    @property
    def n(self):
        return len(self.q_sym)

    @property
    def m(self):
        return len(self.constraint_names)

    @cached_property
    def Phi_q(self) -> sp.Matrix:
        return jacobian(self.Phi, self.q_sym)

    @property
    def redundant(self) -> int:
        return 0 if self.Phi_redundant is None else self.Phi_redundant.rows

    @cached_property
    def closure(self) -> "DAE":
        """The same DAE with every closure row: Phi, then the redundant
        rows (rank m on the motion, m + ``redundant`` rows).  What the
        reference integrates: which m rows are independent can change along
        the motion of an overconstrained loop, the full set's rank does not.
        ``self`` when there is no redundant row."""
        if not self.redundant:
            return self
        return DAE(self.mechanism, self.names, self.q_sym, self.v_sym, self.tunable, self.tunable_values,
                   self.inputs, self.input_values, self.M, self.F, self.Phi.col_join(self.Phi_redundant),
                   self.constraint_names + self.redundant_names, self.outputs)

    @cached_property
    def Phi_t(self) -> sp.Matrix:
        return self.Phi.diff(t)

    @cached_property
    def gamma(self) -> sp.Matrix:
        """Right side of the acceleration constraint Φ_q q̈ = γ.

        γ = −(Φ_q q̇)_q q̇ − 2 Φ_qt q̇ − Φ_tt."""
        v = sp.Matrix(self.v_sym)
        # the products by times: sympy's, without its search for infinite
        # entries in Φ_q (symbolic.py)
        Phiq_v = times(self.Phi_q, v)
        return -times(jacobian(Phiq_v, self.q_sym), v) - 2 * times(self.Phi_q.diff(t), v) - self.Phi_t.diff(t)

    @cached_property
    def hard_points(self) -> dict:
        """{symbol: exact value} of the hard points (tunable parameters with
        a range, which may enter Φ) at this DAE's tunable values: what every
        build-time evaluation of the kinematics substitutes (the start
        assembly, the branches, the workspace sweep), while the generated C
        keeps them as run-time parameters."""
        ranged = {p.symbol for p in self.mechanism.parameters if p.is_hard_point}
        return {s: rational(v, self.mechanism.float_rule)
                for s, v in zip(self.tunable, self.tunable_values) if s in ranged}

    def at_hard_points(self, values: dict) -> "DAE":
        """The same DAE with hard points {name: value} set (the others kept):
        the build samples each hard point's range with it."""
        # (a symbol's name, not str(): the printer costs the sweep of a vehicle's samples seconds)
        by_name = {s.name: k for k, s in enumerate(self.tunable)}
        tunable_values = list(self.tunable_values)
        for name, v in values.items():
            tunable_values[by_name[name]] = float(v)
        out = dataclasses.replace(self, tunable_values=tunable_values)
        # Φ's derivatives and the lambdified functions take the parameters as
        # symbols and arguments: shared, not derived again per sample (the
        # quarter car's Φ_q alone is seconds of sympy)
        for name in DERIVATIVES:
            if name in self.__dict__:
                out.__dict__[name] = self.__dict__[name]
        numeric = copy.copy(self.numeric)
        numeric.dae, numeric.pu = out, [*tunable_values, *self.input_values]
        out.__dict__["numeric"] = numeric
        return out

    @cached_property
    def numeric(self) -> "NumericDAE":
        return NumericDAE(self)

    def start_guess(self) -> np.ndarray:
        return np.array([c.start for c in self.mechanism.coordinates])

    def start_velocity_guess(self) -> np.ndarray:
        return np.array([c.velocity_start for c in self.mechanism.coordinates])


class NumericDAE:
    """Lambdified numpy callables of a DAE, with the default parameter values.

    Each function is lambdified on first use: the DOF check needs only Φ_q,
    and lambdifying M, F and γ of the Stewart platform costs seconds."""

    def __init__(self, dae: DAE):
        self.dae = dae
        self.pu = [*dae.tunable_values, *dae.input_values]

    def _lambdify(self, expr, with_v=False, with_pu=False):
        lambdify_numpy.prepare()
        d = self.dae
        args = [t, *d.q_sym] + (list(d.v_sym) if with_v else []) + ([*d.tunable, *d.inputs] if with_pu else [])
        return sp.lambdify(args, expr, "numpy", cse=True)

    @cached_property
    def _M(self):
        return self._lambdify(self.dae.M, with_pu=True)

    @cached_property
    def _F(self):
        return self._lambdify(self.dae.F, with_v=True, with_pu=True)

    @cached_property
    def _Phi(self):
        return self._lambdify(self.dae.Phi, with_pu=True)

    @cached_property
    def _Phi_q(self):
        # only the structural non-zeros, scattered into a zero matrix: Φ_q
        # of a chain of loops is sparse (a few entries per row), and building the dense nested list and converting it took most of
        # the workspace sweep's time
        nonzero = self.dae.Phi_q.todok()
        rows, cols = (np.array([key[a] for key in nonzero], dtype=int) for a in (0, 1))
        return rows, cols, self._lambdify(list(nonzero.values()), with_pu=True) if nonzero else None

    @cached_property
    def _Phi_t(self):
        return self._lambdify(self.dae.Phi_t, with_pu=True)

    @cached_property
    def _gamma(self):
        return self._lambdify(self.dae.gamma, with_v=True, with_pu=True)

    def M(self, tt, q):
        return np.array(self._M(tt, *q, *self.pu), dtype=float)

    def F(self, tt, q, v):
        return np.array(self._F(tt, *q, *v, *self.pu), dtype=float).ravel()

    def Phi(self, tt, q):
        return np.array(self._Phi(tt, *q, *self.pu), dtype=float).ravel()

    def Phi_q(self, tt, q):
        rows, cols, values = self._Phi_q
        out = np.zeros((self.dae.m, len(q)))
        if values is not None:
            out[rows, cols] = values(tt, *q, *self.pu)
        return out

    def Phi_t(self, tt, q):
        return np.array(self._Phi_t(tt, *q, *self.pu), dtype=float).ravel()

    def gamma(self, tt, q, v):
        return np.array(self._gamma(tt, *q, *v, *self.pu), dtype=float).ravel()


def build_dae(mech: Mechanism, at_rest: bool = False) -> DAE:
    """Turn a Mechanism into a DAE and check its degrees of freedom.
    ``at_rest``: F only at q̇ = 0 (``Mechanism.forces_at_rest``, the applied
    loads), M None and no outputs, for a static question (the trim) that
    must not pay for the equations of motion or the outputs (a vehicle's
    joint reactions are most of its expressions)."""
    if not mech.coordinates:
        raise ModelError(f"mechanism '{mech.name}' has no coordinates")
    names = [c.name for c in mech.coordinates]
    q_sym = [sp.Symbol(n, real=True) for n in names]
    v_sym = [sp.Symbol(f"v_{n}", real=True) for n in names]
    dyn = [c.symbol for c in mech.coordinates]
    # Replace velocities before coordinates so Derivative(q(t)) survives intact.
    to_plain = {qd.diff(t): v for qd, v in zip(dyn, v_sym)}
    to_plain_q = dict(zip(dyn, q_sym))
    structural = {p.symbol: rational(p.value, mech.float_rule) for p in mech.parameters if not p.tunable}
    tunable = [p for p in mech.parameters if p.tunable]

    # one pass: xreplace matches a node before its arguments, so each
    # Derivative(q(t), t) becomes its velocity before q(t) inside it could
    # (the same result as the three replacements in turn, in half the time:
    # 2.8 against 5.5 s of the vehicle's M and F)
    replace = {**to_plain, **to_plain_q, **structural}
    # a reaction output reads accelerations: each second derivative becomes
    # its own symbol (before q(t) inside it is replaced, which would make it
    # the derivative of a constant, zero)
    replace.update({qd.diff(t, 2): acceleration_symbol(n) for qd, n in zip(dyn, names)})

    shared = {}

    def plain(expr):
        # xreplace, not subs: structural replacement is all that is needed and
        # subs is ~50x slower on the Stewart platform's forcing vector; each
        # sub-expression object once over M, F, Φ and the outputs, which
        # share them (symbolic.shared_xreplace)
        return shared_xreplace(sp.sympify(expr), replace, shared)

    def plain_exact(expr):
        # floats exact before the geometry is substituted: 0.3·l with l = 0.7
        # must be 21/100, not the double product 0.21 (or one ulp off)
        return plain(exact_floats(expr, mech.float_rule))

    if at_rest:
        M, F = None, mech.forces_at_rest().applyfunc(plain)
    else:
        M, F = mech.equations_of_motion()
        M, F = M.applyfunc(plain), F.applyfunc(plain)
    # a column even with no constraint (an open chain): sp.Matrix([]) is 0 x 0,
    # which has no Jacobian; 0 x 1 gives the 0 x n Φ_q every later stage expects
    Phi = sp.Matrix(len(mech.constraints), 1, [plain_exact(c.expr) for c in mech.constraints])
    redundant = list(mech.redundant_constraints)
    Phi_redundant = sp.Matrix(len(redundant), 1, [plain_exact(c.expr) for c in redundant])
    hard_points = {p.symbol for p in tunable if p.is_hard_point}
    tunable_syms = {p.symbol for p in tunable if not p.is_hard_point} | {i.symbol for i in mech.inputs}
    for c, e in zip(mech.constraints + redundant, [*Phi, *Phi_redundant]):
        bad = e.free_symbols & tunable_syms
        if bad:
            raise ModelError(
                f"constraint '{c.name}' depends on {sorted(map(str, bad))}: constraints may only use "
                "coordinates, time, structural (geometry) parameters and hard points (tunable parameters "
                "with a declared range, m.parameter(..., tunable=True, range=(lower, upper)))")
        stray = e.free_symbols - set(q_sym) - {t} - hard_points
        if stray:
            raise ModelError(f"constraint '{c.name}' uses undeclared symbols {sorted(map(str, stray))}")
    dae = DAE(mech, names, q_sym, v_sym,
              [p.symbol for p in tunable], [float(p.value) for p in tunable],
              [i.symbol for i in mech.inputs], [i.start for i in mech.inputs],
              M, F, Phi, [c.name for c in mech.constraints],
              {} if at_rest else {k: plain(v) for k, v in mech.outputs.items()},
              Phi_redundant, [c.name for c in redundant])
    check_dof(dae)
    # here too, not only in codegen.finish: before the Gröbner bases
    check_mass_properties(mech)
    return dae


def check_dof(dae: DAE, q: np.ndarray | None = None, tol: float = 1e-9):
    """rank Φ_q must equal m; otherwise name the redundant constraint.

    Evaluated at the user's start guesses: rank is insensitive to the small
    errors of a guess, and the guesses are all we have before assembly."""
    mech = dae.mechanism
    n, m = dae.n, dae.m
    if mech.dof is not None and n - m != mech.dof:
        kind = "missing" if n - m > mech.dof else "too many"
        raise ModelError(
            f"wrong DOF count in '{mech.name}': {n} coordinates and {m} constraints give "
            f"{n - m} degrees of freedom, but the mechanism declares dof={mech.dof} "
            f"({kind} constraints: {abs(n - m - mech.dof)})")
    if m == 0:
        return
    q = dae.start_guess() if q is None else q
    J = dae.numeric.Phi_q(0.0, q)
    scale = max(1.0, np.abs(J).max())
    rank = 0
    rows = []
    for j in range(m):
        rows.append(J[j])
        r = np.linalg.matrix_rank(np.array(rows), tol=tol * scale)
        if r == rank:
            # Which earlier constraints does it depend on?  Least squares tells.
            name = dae.constraint_names[j]
            if all(sp.simplify(sp.expand(dae.Phi[j].diff(s))) == 0 for s in dae.q_sym):
                # the same value at every configuration (no coordinate, or
                # sin² + cos² of one): a constant or a function of time
                # alone, not a constraint on the motion
                value = sp.simplify(dae.Phi[j])
                # a constant simplify leaves unreduced (atan(1/2) + atan(1/3)
                # - pi/4) is zero if 50 digits say so
                if value != 0 and not value.has(t) and abs(sp.N(value, 50)) < sp.Float("1e-45"):
                    value = sp.Integer(0)
                if value == 0:
                    raise ModelError(f"constraint '{name}' in '{mech.name}' is identically zero: it constrains "
                                     "nothing (redundant)")
                raise ModelError(f"constraint '{name}' in '{mech.name}' does not depend on the coordinates: it "
                                 f"reduces to {value} = 0, which no motion can make hold (inconsistent)"
                                 if not value.has(t) else
                                 f"constraint '{name}' in '{mech.name}' does not depend on the coordinates, only "
                                 f"on time: {value} = 0 is no constraint on the motion")
            if rank:
                coef, *_ = np.linalg.lstsq(np.array(rows[:-1]).T, J[j], rcond=None)
                deps = [dae.constraint_names[k] for k in range(j) if abs(coef[k]) > 1e-8]
            else:
                deps = []
            raise ModelError(
                # (redundant, or inconsistent with them: two concentric
                # circles have proportional rows too; the rank cannot tell)
                f"redundant or inconsistent constraint '{name}' in '{mech.name}': its Jacobian row "
                f"is {'a combination of ' + str(deps) if deps else 'zero'} at the start "
                f"configuration, so rank Φ_q = {np.linalg.matrix_rank(J, tol=tol * scale)} < m = {m}")
        rank = r
    if m >= n:
        raise ModelError(f"'{mech.name}' has {m} independent constraints for {n} coordinates: no motion is left")


@dataclass
class MassCheck:
    """One condition that makes a body physical, in the tunable parameters'
    symbols (structural ones substituted): ``kind`` "mass", ``exprs`` its mass,
    which must be >= 0; or "inertia", ``exprs`` its central inertia's entries
    (xx, xy, xz, yy, yz, zz), which must form a positive semidefinite matrix.
    Why at all: the embedding needs only BᵀMB positive definite, and a
    negative mass or inertia on one body can hide behind the others' (a
    four-bar's coupler at -0.2 kg, the other links 1 kg, ran to 1 s with
    fmi2OK before this check)."""
    body: str
    kind: str
    exprs: tuple
    parameters: tuple   # names of the tunable parameters it reads, for messages

    @property
    def label(self) -> str:
        what = "mass" if self.kind == "mass" else "central inertia"
        reads = f" ({', '.join(self.parameters)})" if self.parameters else ""
        return f"the {what} of body '{self.body}'{reads}"


def mass_checks(mech: Mechanism) -> list[MassCheck]:
    """Every body's mass and inertia condition (``MassCheck``), in body order;
    a body without inertia (a point) has only the mass condition."""
    structural = {p.symbol: rational(p.value, mech.float_rule) for p in mech.parameters if not p.tunable}
    names = {p.symbol: p.name for p in mech.parameters if p.tunable}
    checks = []
    for b in mech.bodies:
        m = exact_floats(b.mass, mech.float_rule).xreplace(structural)
        I = sp.Matrix(b.inertia).applyfunc(lambda e: exact_floats(e, mech.float_rule).xreplace(structural))
        entries = (I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2])
        for kind, exprs in (("mass", (m,)), ("inertia", entries)):
            if kind == "inertia" and all(e == 0 for e in exprs):
                continue
            stray = set().union(*(e.free_symbols for e in exprs)) - set(names)
            if stray:
                raise ModelError(f"body '{b.name}': its {kind} uses {sorted(map(str, stray))}; a mass and an "
                                 "inertia may only use parameters and numbers")
            reads = sorted({names[s] for e in exprs for s in e.free_symbols})
            checks.append(MassCheck(b.name, kind, exprs, tuple(reads)))
    return checks


#: the principal minors ``psd3`` tests, in its order, as messages name them
PSD3_MINORS = ("Ixx", "Iyy", "Izz", "Ixx*Iyy - Ixy^2", "Ixx*Izz - Ixz^2", "Iyy*Izz - Iyz^2", "det I")


def psd3(entries) -> tuple[int, float]:
    """Is the symmetric 3x3 matrix (xx, xy, xz, yy, yz, zz) positive
    semidefinite?  Its seven principal minors (``PSD3_MINORS``) must be >= 0,
    to rounding: a minor of order k down to -16·eps·s^k, s the largest
    |entry|.  Returns (-1, 0) when it is, else (the first minor that is
    not, its value).  The C runtime's ``fmigen_psd3`` and the Python
    runtime's ``psd3`` do the same operations; this one checks a build's
    default values."""
    xx, xy, xz, yy, yz, zz = (float(e) for e in entries)
    s = max(abs(xx), abs(xy), abs(xz), abs(yy), abs(yz), abs(zz))
    e = 16.0 * 2.220446049250313e-16 * s
    minors = (xx, yy, zz, xx * yy - xy * xy, xx * zz - xz * xz, yy * zz - yz * yz,
              xx * (yy * zz - yz * yz) - xy * (xy * zz - yz * xz) + xz * (xy * yz - yy * xz))
    floors = (-e, -e * s, -e * s * s)
    for k, value in enumerate(minors):
        if not (value >= floors[0 if k < 3 else 1 if k < 6 else 2]):
            return k, value
    return -1, 0.0


def check_mass_properties(mech: Mechanism):
    """The build-time half of ``mass_checks``: every condition at the
    parameters' values as built, exactly (a tunable one's default; the build
    tests those again in doubles, ``mass_checks.mass_check_defaults``, and the
    FMU whenever an importer sets parameters)."""
    values = {p.symbol: rational(p.value, mech.float_rule) for p in mech.parameters if p.tunable}
    for chk in mass_checks(mech):
        nums = [float(e.xreplace(values)) for e in chk.exprs]
        if chk.kind == "mass":
            if not (nums[0] >= 0.0):
                raise ModelError(f"'{mech.name}': {chk.label} is {nums[0]:g}; a mass must be >= 0")
        else:
            k, value = psd3(nums)
            if k >= 0:
                raise ModelError(f"'{mech.name}': {chk.label} is not positive semidefinite: "
                                 f"{PSD3_MINORS[k]} = {value:g} < 0")
