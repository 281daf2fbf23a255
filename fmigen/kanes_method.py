"""sympy's ``KanesMethod`` with its generalized inertia forces formed
without the work that cannot change them.

``_form_frstar`` is sympy's (``sympy.physics.mechanics.kane``, version
1.14: the same operations in the same order, so the same mass matrix and
forcing vector), for rigid bodies without auxiliary or dependent speeds
(what ``model.py``'s floating base passes; anything else goes to sympy's
own), with three changes:

* a body's contributions are summed only over the speeds its partial
  velocities depend on: sympy forms every pair of the o speeds for every
  body, and a zero partial velocity adds zero (a vehicle: 30 bodies, 75
  speeds, of which a body moves with 6 to 13);
* the substitutions (``msubs``) visit each sub-expression object once
  (``symbolic.shared_msubs``).  The ones with an empty rule (sympy's
  "auxiliary speeds to zero", of which there are none) stay: msubs
  rebuilds every node from its arguments, and a product the vector algebra
  left out of canonical form comes out another expression (equal in
  value, not in form);
* the product of the mass matrix and u̇ in Fr* skips sympy's search for
  infinite entries (``symbolic.times``).
"""

from __future__ import annotations

import sympy as sp

from fmigen.mechanics import me
from fmigen.symbolic import shared_msubs, times


def _substituted(x, rule: dict, memo: dict):
    """``msubs(x, rule)`` of an expression, matrix, vector or dyadic (each
    entry or component by ``shared_msubs``, through the container's own
    ``applyfunc`` as msubs goes)."""
    if isinstance(x, (sp.MatrixBase, me.Vector, me.Dyadic)):
        return x.applyfunc(lambda e: shared_msubs(e, rule, memo))
    return shared_msubs(x, rule, memo)


class KanesMethod(me.KanesMethod):
    """``me.KanesMethod`` with ``_form_frstar`` as the module docstring says."""

    def _form_frstar(self, bl):
        if self._uaux or self._udep or not all(isinstance(b, me.RigidBody) for b in bl):
            return super()._form_frstar(bl)
        t = me.dynamicsymbols._t
        N = self._inertial
        udot_zero = dict.fromkeys(self._udot, 0)
        q_ddot_u_map = {k.diff(t): v.diff(t).xreplace(self._qdot_u_map) for (k, v) in self._qdot_u_map.items()}
        q_ddot_u_map.update(self._qdot_u_map)
        uaux_zero = {}                           # (no auxiliary speeds: msubs still rebuilds every node)
        to_u, no_udot, to_udot, no_uaux = {}, {}, {}, {}      # the memos of the four rules
        partials = [me.partial_velocity([_substituted(vel, self._qdot_u_map, to_u)
                                         for vel in (body.masscenter.vel(N), body.frame.ang_vel_in(N))], self.u, N)
                    for body in bl]
        o = len(self.u)
        MM = sp.zeros(o, o)
        nonMM = sp.zeros(o, 1)
        for i, body in enumerate(bl):
            M, I = body.mass, body.central_inertia
            vel, omega = body.masscenter.vel(N), body.frame.ang_vel_in(N)
            M, I, vel, omega = (_substituted(x, uaux_zero, no_uaux) for x in (M, I, vel, omega))
            acc = _substituted(body.masscenter.acc(N), udot_zero, no_udot)
            acc = _substituted(acc, uaux_zero, no_uaux)
            inertial_force = (M.diff(t) * vel + M * acc)
            inertial_torque = ((I.dt(body.frame).dot(omega)) +
                               _substituted(I.dot(body.frame.ang_acc_in(N)), udot_zero, no_udot) +
                               (omega.cross(I.dot(omega))))
            inertial_torque = _substituted(inertial_torque, uaux_zero, no_uaux)
            v, w = partials[i]
            moving = [j for j in range(o) if v[j].args or w[j].args]
            for j in moving:
                tmp_vel = v[j]
                tmp_ang = I.dot(w[j]) if w[j].args else None
                tmp_vel = _substituted(tmp_vel, uaux_zero, no_uaux)
                tmp_ang = None if tmp_ang is None else _substituted(tmp_ang, uaux_zero, no_uaux)
                for k in moving:
                    if tmp_vel.args and v[k].args:
                        MM[j, k] += M * tmp_vel.dot(v[k])
                    if tmp_ang is not None and w[k].args:
                        MM[j, k] += tmp_ang.dot(w[k])
                if tmp_vel.args:
                    nonMM[j] += inertial_force.dot(v[j])
                if w[j].args:
                    nonMM[j] += inertial_torque.dot(w[j])
        MM = _substituted(MM, q_ddot_u_map, to_udot)
        MM = _substituted(MM, uaux_zero, no_uaux)
        nonMM = _substituted(_substituted(nonMM, q_ddot_u_map, to_udot), udot_zero, no_udot)
        fr_star = -(times(MM, sp.Matrix(self._udot)) + nonMM)
        self._bodylist = bl
        self._frstar = fr_star
        self._k_d = MM
        self._f_d = -(self._fr - nonMM)
        return fr_star
