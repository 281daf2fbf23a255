"""The Python runtime's FMU instance: ``Core`` (state, integrators, the
embedding's solve) and ``SlaveMethods`` (the pythonfmu slave's FMI
methods), copied verbatim into every generated Python FMU
(pyruntime.RUNTIME_OBJECTS, SLAVE_METHODS).
"""

from __future__ import annotations

import math
from math import fabs, isfinite, nan as NAN

from fmigen.pyfmu.numeric import (EULER, FMIGEN_LIMIT_GAIN, FMIGEN_MESSAGE_SIZE, SYMPLECTIC, fmax,
                                  ldlt_factor, ldlt_solve, lu_factor, lu_solve)


class Core:
    """FmigenCore and its functions (fmigen_core.c).  ``m`` is the model:
    sizes, index maps, start values, structure and generated functions."""

    def __init__(self, m, solver, h):
        self.m = m
        self.t = 0.0
        self.q = list(m.q_start)
        self.v = list(m.v_start)
        self.p = list(m.p_default)
        self.u = list(m.u_default)
        self.y = [0.0] * m.NY
        # FmigenBase: the last accepted kinematics solution, from which every
        # solve predicts and against which it checks continuity; before the
        # first assembly (continuity 0) the prediction is the build-time start
        self.base = {"continuity": 0, "t": 0.0, "sol": list(m.sol_start), "q": list(m.q_start),
                     "v": [0.0] * m.NQ}
        self.h = h
        self.residual = 0.0
        self.solver = solver
        self.message = ""
        # max|v_i|, max|v_d| of the last two accepted step starts ([0] the older)
        self.lim_vi, self.lim_vd, self.lim_n = [0.0, 0.0], [0.0, 0.0], 0

    # -- state snapshots (FMU state) --
    FIELDS = ("t", "q", "v", "p", "u", "y", "base", "h", "residual", "solver", "message",
              "lim_vi", "lim_vd", "lim_n")

    @staticmethod
    def _copy(x):
        if isinstance(x, dict):
            return {k: Core._copy(v) for k, v in x.items()}
        return list(x) if isinstance(x, list) else x

    def snapshot(self):
        return {k: Core._copy(getattr(self, k)) for k in self.FIELDS}

    def restore(self, s):
        for k in self.FIELDS:
            setattr(self, k, Core._copy(s[k]))

    def kinematics(self, t, q, sol):
        """fmigen_core.c's kinematics(): the generated solve from self.base,
        the new solution vector into sol; on failure the message names the
        configuration and the block (as C, cut to its char[512])."""
        m = self.m
        k = m.kinematics(t, q, self.p, self.base, sol)
        if k:
            at = ", ".join(f"{m.names[i]}={q[i]:.9g}" for i in m.independent)
            msg = f"singular configuration at t={t:.9g} ({at}): {m.failure[k]}"
            self.message = msg.encode()[:FMIGEN_MESSAGE_SIZE - 1].decode(errors="ignore")
        return k

    def base_accept(self, t, q, v, sol):
        """fmigen_base_accept: (t, q, v, sol) is what the next solve continues."""
        b = self.base
        b["continuity"] = 1
        b["t"] = t
        b["sol"] = list(sol)
        b["q"] = list(q)
        b["v"] = list(v)

    # Φ_d = ∂Φ/∂q_d and its factorization: per diagonal block
    # (codegen_embedding.structure_tables), or none without constraints.
    def phid_factor(self, J):
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if m.blocked:
            lus = []
            for b in range(m.nblocks):
                p0, nb = m.blk_ptr[b], m.blk_ptr[b + 1] - m.blk_ptr[b]
                A = [J[m.blk_rows[p0 + r] * NQ + dep[m.blk_cols[p0 + k]]] for r in range(nb) for k in range(nb)]
                piv = [0] * nb
                if lu_factor(nb, A, piv):
                    return None
                lus.append((A, piv))
            return lus
        A = [J[r * NQ + dep[k]] for r in range(ND) for k in range(ND)]
        piv = [0] * ND
        if lu_factor(ND, A, piv):
            return None
        return [(A, piv)]

    def phid_solve_cols(self, J, lus, b, ncol):
        """b (ND×ncol, rows by constraint) := Φ_d⁻¹ b (rows by dependent position)."""
        m = self.m
        NQ, ND, dep = m.NQ, m.ND, m.dependent
        if not m.blocked:
            A, piv = lus[0]
            cols = [[b[r * ncol + j] for r in range(ND)] for j in range(ncol)]
            for col in cols:
                lu_solve(ND, A, piv, col)
            return [cols[j][r] for r in range(ND) for j in range(ncol)]
        tmp, x = [0.0] * (ND * ncol), [0.0] * (ND * ncol)
        c = 0
        for bl in range(m.nblocks):
            p0, nb = m.blk_ptr[bl], m.blk_ptr[bl + 1] - m.blk_ptr[bl]
            for r in range(nb):
                for j in range(ncol):
                    tmp[(p0 + r) * ncol + j] = b[m.blk_rows[p0 + r] * ncol + j]
            while c < m.ncouple and m.couple[2 * c] < p0 + nb:
                pr, pc = m.couple[2 * c], m.couple[2 * c + 1]
                a = J[m.blk_rows[pr] * NQ + dep[m.blk_cols[pc]]]
                for j in range(ncol):
                    tmp[pr * ncol + j] -= a * x[m.blk_cols[pc] * ncol + j]
                c += 1
            A, piv = lus[bl]
            for j in range(ncol):
                col = [tmp[(p0 + r) * ncol + j] for r in range(nb)]
                lu_solve(nb, A, piv, col)
                for r in range(nb):
                    x[m.blk_cols[p0 + r] * ncol + j] = col[r]
        return x

    def velocities(self, t, q, v):
        """Fill v_d from q and v_i; returns (status, J, lus, X) with
        X = Φ_d⁻¹Φ_i (ND×NI, row-major)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        if NC == 0:
            return 0, None, None, []
        J = [0.0] * (NC * NQ)
        pt = [0.0] * NC
        m.phi_q(t, q, v, self.p, self.u, J)
        m.phi_t(t, q, v, self.p, self.u, pt)
        lus = self.phid_factor(J)
        if lus is None:
            self.message = ("singular configuration at t=%.9g: the constraint Jacobian with respect to the "
                            "dependent coordinates is singular" % t)
            return 1, None, None, None
        ncol = NI + 1
        rhs = [0.0] * (ND * ncol)
        for r in range(ND):
            for k in range(NI):
                rhs[r * ncol + k] = J[r * NQ + m.independent[k]]
            rhs[r * ncol + NI] = pt[r]
        rhs = self.phid_solve_cols(J, lus, rhs, ncol)
        X = [0.0] * (ND * NI)
        for r in range(ND):
            for k in range(NI):
                X[r * NI + k] = rhs[r * ncol + k]
            s = rhs[r * ncol + NI]
            for k in range(NI):
                s += X[r * NI + k] * v[m.independent[k]]
            v[m.dependent[r]] = -s
        return 0, J, lus, X

    def rhs(self, t, x, accept=False):
        """fmigen_core_rhs: dx of x = [q_i, v_i], or None (message set).
        ``accept``: fmigen_core_rhs_accept, the solve becomes the base (the
        first stage of every internal step; no memo here, so always)."""
        m = self.m
        NQ, NI, ND, NC = m.NQ, m.NI, m.ND, m.NC
        q, v = [0.0] * NQ, [0.0] * NQ
        for k in range(NI):
            q[m.independent[k]] = x[k]
            v[m.independent[k]] = x[NI + k]
        sol = [0.0] * m.NSOL
        if self.kinematics(t, q, sol):
            return None
        st, J, lus, X = self.velocities(t, q, v)
        if st:
            return None
        ac = [0.0] * NQ
        u = self.u
        if m.prescribed:
            # the drives are solved below, from drive 0 (``prescribe``)
            u = list(self.u)
            for _, _, drive, _ in m.prescribed:
                u[drive] = 0.0
        if NC > 0:
            g = [0.0] * NC
            m.gamma(t, q, v, self.p, u, g)
            g = self.phid_solve_cols(J, lus, g, 1)
            for r in range(ND):
                ac[m.dependent[r]] = g[r]
        M, F = [0.0] * (NQ * NQ), [0.0] * NQ
        m.mass(t, q, v, self.p, u, M)
        m.forcing(t, q, v, self.p, u, F)
        B = [0.0] * (NQ * NI)
        for k in range(NI):
            B[m.independent[k] * NI + k] = 1.0
        for r in range(ND):
            for k in range(NI):
                B[m.dependent[r] * NI + k] = -X[r * NI + k]
        MB = [0.0] * (NQ * NI)
        res = list(F)
        for i, j in m.m_nz:   # M's structural non-zeros
            mij = M[i * NQ + j]
            res[i] -= mij * ac[j]
            for k in range(NI):
                MB[i * NI + k] += mij * B[j * NI + k]
        Mh, rh = [0.0] * (NI * NI), [0.0] * NI
        for a in range(NI):
            s = 0.0
            for i in range(NQ):
                s += B[i * NI + a] * res[i]
            rh[a] = s
            for b in range(NI):
                mm = 0.0
                for i in range(NQ):
                    mm += B[i * NI + a] * MB[i * NI + b]
                Mh[a * NI + b] = mm
        # solved as the C runtime solves it, which also refuses a matrix
        # that is not positive definite (an LU solved one with negative
        # masses)
        factor = ldlt_factor(NI, Mh)
        if factor is None:
            self.message = ("singular configuration at t=%.9g: the reduced mass matrix B^T M B is not "
                            "positive definite" % t)
            return None
        ldlt_solve(NI, *factor, rh)
        if m.prescribed:
            self.prescribe(t, x, q, v, u, F, B, factor, rh)
        dx = [0.0] * (2 * NI)
        for k in range(NI):
            dx[k] = x[NI + k]
            dx[NI + k] = rh[k]
        for k in range(2 * NI):
            if not isfinite(dx[k]):
                self.message = "non-finite state derivative at t=%.9g" % t
                return None
        if accept:
            self.base_accept(t, q, v, sol)
        return dx

    def prescribe(self, t, x, q, v, u, F, B, factor, rh):
        """fmigen_core.c's prescribe: the reduced accelerations ``rh`` (at
        drive 0, forcing ``F``) with the prescribed coordinates following
        their inputs.  They are affine in the drives (generalized forces,
        inputs of the forcing): a unit drive r changes them by s_r, the
        reduced solve of Bᵀ(F(drive r = 1) − F).  The drives λ solve
        Σ_r λ_r s_r[j] = ω_j²(u_j − q_j) − 2ω_j q̇_j − rh[j] on the
        prescribed rows j; ``rh`` += Σ_r λ_r s_r and ``u`` gets the drives
        (for the outputs: ``self.u_drives``).  A singular system or a
        non-finite input leaves non-finite accelerations, which the caller
        reports."""
        m = self.m
        NQ, NI = m.NQ, m.NI
        NR = len(m.prescribed)
        slot = [m.independent.index(coord) for coord, _, _, _ in m.prescribed]
        S = []
        for _, _, drive, _ in m.prescribed:
            Fr = [0.0] * NQ
            u[drive] = 1.0
            m.forcing(t, q, v, self.p, u, Fr)
            u[drive] = 0.0
            s = [0.0] * NI
            for a in range(NI):
                for i in range(NQ):
                    s[a] += B[i * NI + a] * (Fr[i] - F[i])
            ldlt_solve(NI, *factor, s)
            S.append(s)
        A, lam, piv = [0.0] * (NR * NR), [0.0] * NR, [0] * NR
        for j, (_, inp, _, w) in enumerate(m.prescribed):
            for r in range(NR):
                A[j * NR + r] = S[r][slot[j]]
            lam[j] = w * w * (u[inp] - x[slot[j]]) - 2.0 * w * x[NI + slot[j]] - rh[slot[j]]
        if lu_factor(NR, A, piv):
            lam = [NAN] * NR
        else:
            lu_solve(NR, A, piv, lam)
        for r, (_, _, drive, _) in enumerate(m.prescribed):
            u[drive] = lam[r]
            for i in range(NI):
                rh[i] += lam[r] * S[r][i]
        self.u_drives = u

    def trim(self):
        """fmigen_core_trim: the static trims' preloads (hidden inputs) at
        the assembled start, so that Nᵀ F = 0 on the trimmed coordinates'
        rows, F the generalized force at v = 0 (affine in the preloads: at
        preload 0 and at each unit preload), N = [I; −Φ_d⁻¹Φ_i]; 1 with the
        message when the system is singular."""
        m = self.m
        NQ, NI, ND, NT = m.NQ, m.NI, m.ND, len(m.trims)
        # the inputs at their declared starts: the design loads the trim
        # balances (as fmigen_core_trim)
        u = list(m.u_default)
        for _, inp in m.trims:
            u[inp] = 0.0
        st, _, _, X = self.velocities(self.t, self.q, list(self.v))
        if st:
            return 1
        cols = [m.independent.index(coord) for coord, _ in m.trims]
        zero = [0.0] * NQ

        def along(F):
            return [F[m.independent[k]] - sum(X[r * NI + k] * F[m.dependent[r]] for r in range(ND)) for k in cols]

        F0 = [0.0] * NQ
        m.forcing(self.t, self.q, zero, self.p, u, F0)
        b = [-x for x in along(F0)]
        A = [0.0] * (NT * NT)
        for j, (_, inp) in enumerate(m.trims):
            F = [0.0] * NQ
            u[inp] = 1.0
            m.forcing(self.t, self.q, zero, self.p, u, F)
            u[inp] = 0.0
            for i, a in enumerate(along([F[k] - F0[k] for k in range(NQ)])):
                A[i * NT + j] = a
        piv = [0] * NT
        bad = lu_factor(NT, A, piv)
        if not bad:
            lu_solve(NT, A, piv, b)
        if bad or not all(isfinite(x) for x in b):
            self.message = ("the static trim has no unique solution at the start (t=%.9g): %s" % (
                self.t, "the solved preloads are not finite" if not bad else
                "a trimmed spring does not act on its coordinate there, or two act alike"))
            return 1
        for (_, inp), x in zip(m.trims, b):
            self.u[inp] = x
        return 0

    def assemble(self, trim=False):
        """fmigen_core_assemble: complete q, v from q_i, v_i; residual,
        outputs.  ``trim``: and the static trims at that start (``trim``,
        initialization).  0; 1 when the start cannot be assembled; 2 when
        the trims cannot be solved at it (the messages differ, as in
        fmigen_instance.c)."""
        m = self.m
        for k in range(m.NI):
            if not isfinite(self.q[m.independent[k]]) or not isfinite(self.v[m.independent[k]]):
                self.message = "non-finite independent coordinate or velocity at t=%.9g" % self.t
                return 1
        sol = [0.0] * m.NSOL
        if self.kinematics(self.t, self.q, sol):
            return 1
        if self.velocities(self.t, self.q, self.v)[0]:
            return 1
        # the accepted solution: the next solve predicts from it
        self.base_accept(self.t, self.q, self.v, sol)
        if trim and m.trims and self.trim():
            return 2
        if m.NC > 0:
            phi = [0.0] * m.NC
            m.phi(self.t, self.q, self.v, self.p, self.u, phi)
            self.residual = 0.0
            for j in range(m.NC):
                if fabs(phi[j]) > self.residual:
                    self.residual = fabs(phi[j])
        if m.NY > 0:
            u = self.u
            if m.prescribed:
                # the outputs (drive_<coordinate>, reactions) read the drives
                # at this state: the right-hand side solves them
                x = [self.q[i] for i in m.independent] + [self.v[i] for i in m.independent]
                if self.rhs(self.t, x) is not None:
                    u = self.u_drives
                else:   # no drive at this state: the outputs say so
                    u = list(self.u)
                    for _, _, drive, _ in m.prescribed:
                        u[drive] = NAN
            m.outputs(self.t, self.q, self.v, self.p, u, self.y)
        return 0

    def limit(self):
        """fmigen_core_limit: is the accepted state in self.base at most
        about two steps short of a limit position of the partition
        (FMIGEN_LIMIT_GAIN, fmigen_runtime.h)?  Keeps its max|v_i| and
        max|v_d| (unit scales; with two independent coordinates
        |v_d| / ‖B‖ and |v_d|, Euclidean, ``velocity_gain``, with more
        ``velocity_norm``); 1 with the
        message when, against the state two accepted steps earlier, the
        first fell by the gain and their ratio (the amplification ‖B‖)
        rose by it."""
        m, v, b = self.m, self.base["v"], self.base
        if m.NQ == m.NI:      # FMIGEN_LIMIT_TEST: a loop
            return 0
        vi, vd = 0.0, 0.0
        if m.NI == 1:
            for i in m.independent:
                vi = fmax(vi, fabs(v[i]) / m.unit_scale[i])
            for i in m.dependent:
                vd = fmax(vd, fabs(v[i]) / m.unit_scale[i])
        else:
            vi2, vd2 = 0.0, 0.0
            for i in m.independent:
                x = v[i] / m.unit_scale[i]
                vi2 += x * x
            for i in m.dependent:
                x = v[i] / m.unit_scale[i]
                vd2 += x * x
            vd = math.sqrt(vd2)
            if vi2 > 0.0:
                g = self.velocity_gain(math.sqrt(vi2), vd) if m.NI == 2 else self.velocity_norm()
                if g is not None and g > 0.0:
                    vi = vd / g
                else:
                    vd = 0.0
        vi0, vd0, full = self.lim_vi[0], self.lim_vd[0], self.lim_n >= 2
        self.lim_vi = [self.lim_vi[1], vi]
        self.lim_vd = [self.lim_vd[1], vd]
        self.lim_n = min(self.lim_n + 1, 2)
        if not (full and FMIGEN_LIMIT_GAIN * vi < vi0 and vd > 0.0 and vd * vi0 >= FMIGEN_LIMIT_GAIN * vd0 * vi):
            return 0
        at = ", ".join(f"{m.names[i]}={b['q'][i]:.9g}" for i in m.independent)
        fell, rose = ("max|v_i|", "max|v_d|/max|v_i|") if m.NI == 1 else ("|v_d|/|B|", "|B| = |dq_d/dq_i|")
        msg = (f"limit position at t={b['t']:.9g} ({at}): the Jacobian of the constraints with respect to the "
               f"dependent coordinates is turning singular (in two steps {fell} fell {vi0 / vi:.3g}-fold while "
               f"{rose} rose {vd * vi0 / (vd0 * vi):.3g}-fold, to {vd / vi:.3g}); the mechanism "
               "passes onto another assembly branch, which these independent coordinates do not parametrize: "
               "declare switch_independent to carry the motion through")
        self.message = msg.encode()[:FMIGEN_MESSAGE_SIZE - 1].decode(errors="ignore")
        return 1

    def velocity_gain(self, nvi, nvd):
        """fmigen_core.c's velocity_gain (two independent coordinates): the
        Frobenius ‖B‖ (unit scales) on the base's direction of motion u and
        the one across it; None when the solve fails."""
        m, b = self.m, self.base
        v = b["v"]
        i0, i1 = m.independent
        u0, u1 = v[i0] / m.unit_scale[i0] / nvi, v[i1] / m.unit_scale[i1] / nvi
        w = list(v)
        w[i0] -= nvi * m.unit_scale[i0] * u1
        w[i1] += nvi * m.unit_scale[i1] * u0
        message = self.message           # a failed solve here is no failure of the step
        if self.velocities(b["t"], b["q"], w)[0]:
            self.message = message
            return None
        bp = 0.0
        for i in m.dependent:
            e = (w[i] - v[i]) / m.unit_scale[i] / nvi
            bp += e * e
        bu = nvd / nvi
        return math.sqrt(bu * bu + bp)

    def velocity_norm(self):
        """The Frobenius ‖B‖ (unit scales) with more than two independent
        coordinates, column by column: a velocities solve per independent
        coordinate (the C FMU reads it from its embedding, which forms
        Φ_d⁻¹Φ_i anyway; this runtime is not for real time).  None when a
        solve fails."""
        m, b = self.m, self.base
        v = b["v"]
        message = self.message           # a failed solve here is no failure of the step
        total = 0.0
        for k in m.independent:
            w = list(v)
            w[k] += m.unit_scale[k]
            if self.velocities(b["t"], b["q"], w)[0]:
                self.message = message
                return None
            for i in m.dependent:
                e = (w[i] - v[i]) / m.unit_scale[i]
                total += e * e
        return math.sqrt(total)

    def one_step(self, x, t, h):
        n = len(x)
        k1 = self.rhs(t, x, accept=True)   # the step's start continues the trajectory
        if k1 is None:
            return 1
        if self.limit():
            return 1
        if self.solver == EULER:
            for i in range(n):
                x[i] += h * k1[i]
            return 0
        if self.solver == SYMPLECTIC:      # velocities first, then positions with them
            half = n // 2
            for i in range(half):
                x[half + i] += h * k1[half + i]
            for i in range(half):
                x[i] += h * x[half + i]
            return 0
        xs = [x[i] + 0.5 * h * k1[i] for i in range(n)]
        k2 = self.rhs(t + 0.5 * h, xs)
        if k2 is None:
            return 1
        xs = [x[i] + 0.5 * h * k2[i] for i in range(n)]
        k3 = self.rhs(t + 0.5 * h, xs)
        if k3 is None:
            return 1
        xs = [x[i] + h * k3[i] for i in range(n)]
        k4 = self.rhs(t + h, xs)
        if k4 is None:
            return 1
        for i in range(n):
            x[i] += h / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i])
        return 0

    def commit_or_restore(self, t, q_good, v_good, t_good):
        """fmigen_core.c's commit_or_restore: assemble the state at t (its
        independent coordinates already set); on failure put back the last
        good q, v and t, so GetReal never reports a half-solved state."""
        self.t = t
        if not self.assemble():
            return 0
        self.q, self.v, self.t = q_good, v_good, t_good
        return 1

    def step(self, H):
        """fmigen_core_step: full internal steps of h, then one shorter step."""
        m = self.m
        NI = m.NI
        q_good, v_good = list(self.q), list(self.v)
        if m.kinematic:
            # q_i, v_i are inputs held over the step: re-solve at its end
            return self.commit_or_restore(self.t + H, q_good, v_good, self.t)
        x = [self.q[m.independent[k]] for k in range(NI)] + [self.v[m.independent[k]] for k in range(NI)]
        t_end = self.t + H
        t = self.t
        nfull = int(math.floor(H / self.h))
        rem = H - nfull * self.h
        if rem < 1e-9 * self.h and nfull > 0:
            rem = 0.0
        elif self.h - rem < 1e-9 * self.h:
            nfull += 1
            rem = 0.0
        for s in range(nfull):
            h = t_end - t if (s == nfull - 1 and rem == 0.0) else self.h
            if self.one_step(x, t, h):
                return 1
            t = self.t + (s + 1) * self.h
        if rem > 0.0 and self.one_step(x, t, t_end - t):
            return 1
        # x finite: the commit's assembly tests it (the same values)
        for k in range(NI):
            self.q[m.independent[k]] = x[k]
            self.v[m.independent[k]] = x[NI + k]
        return self.commit_or_restore(t_end, q_good, v_good, self.t)


class FmuError(Exception):
    """Raised inside the FMU: pythonfmu turns it into fmi2Error with the message."""


class SlaveMethods:
    """The FMI 2.0 Co-Simulation instance (fmigen_instance.c, CS part) as
    methods of the generated ``Fmi2Slave`` subclass.  Value references: the
    group offsets of the variable table (fmigen/variables.py) in ``MODEL``."""

    def __init__(self, **kwargs):
        Fmi2Slave.__init__(self, **kwargs)  # noqa: F821 (names of the generated module)
        self.modelName = MODEL.identifier  # noqa: F821
        self.description = MODEL.description  # noqa: F821
        self._defaults()

    def _defaults(self):
        self.core = Core(MODEL, MODEL.default_solver, MODEL.default_step)  # noqa: F821
        self.fg_state = "instantiated"
        self.assembled = False
        self.terminated = False
        self.last_successful_time = 0.0

    def to_xml(self, model_options=None):
        from xml.etree import ElementTree
        return ElementTree.fromstring(MODEL.model_description)  # noqa: F821

    def _fail(self, msg):
        raise FmuError(msg)

    def _vr_name(self, r):
        """A value reference's variable name, for messages (fmigen_instance.c's fg_vr_name)."""
        names = MODEL.vr_names  # noqa: F821
        return names[r] if 0 <= r < len(names) else "an unknown variable"

    def _allowed(self, fn, states):
        if self.fg_state not in states:
            state = self.fg_state
            self.fg_state = "error"
            self._fail("%s is not allowed in state '%s'" % (fn, state))

    def setup_experiment(self, start_time, stop_time=None, tolerance=None):
        self._allowed("fmi2SetupExperiment", ("instantiated",))
        if not isfinite(start_time):
            self._fail("fmi2SetupExperiment: start time is not finite")
        self.core.t = float(start_time)

    def enter_initialization_mode(self):
        self._allowed("fmi2EnterInitializationMode", ("instantiated",))
        self.assembled = False
        self.fg_state = "init"

    def _check_masses(self, fn, p, suffix=""):
        """_fail unless every body's mass is >= 0 and its inertia positive
        semidefinite at p (fmigen_instance.c's fg_check_masses)."""
        m = MODEL  # noqa: F821
        if not m.mass_labels:
            return
        j, bad, minor = m.mass_check(p)
        if j and minor < 0:
            self._fail("%s: these parameter values make %s %g; a mass must be >= 0%s" % (
                fn, m.mass_labels[j - 1], bad, suffix))
        if j:
            self._fail("%s: these parameter values make %s not positive semidefinite: %s = %g < 0%s" % (
                fn, m.mass_labels[j - 1], m.psd3_minors[minor], bad, suffix))

    def exit_initialization_mode(self):
        self._allowed("fmi2ExitInitializationMode", ("init",))
        # the parameters as the importer left them: checked here, not at each
        # SetReal before, where a condition on two parameters set one per
        # call would fail in between
        try:
            self._check_masses("fmi2ExitInitializationMode", self.core.p)
        except FmuError:
            self.fg_state = "error"
            raise
        failed = self.core.assemble(trim=True)
        if failed:
            self.fg_state = "error"
            # (the messages of fmigen_instance.c; the method is copied into
            # the generated module alone, so no module constant)
            self._fail("%s: %s" % ("the start cannot be assembled" if failed == 1 else "fmi2ExitInitializationMode",
                                   self.core.message))
        self.assembled = True
        self.last_successful_time = self.core.t
        self.fg_state = "step"

    def terminate(self):
        self._allowed("fmi2Terminate", ("step", "discarded"))
        self.fg_state = "terminated"

    def _ensure_assembled(self):
        if self.assembled:
            return
        snap = self.core.snapshot()
        # in initialization the trims follow the start (as fmigen_instance.c)
        failed = self.core.assemble(trim=self.fg_state == "init")
        if failed:
            msg = self.core.message
            self.core.restore(snap)
            what = "the start cannot be assembled" if failed == 1 else "fmi2ExitInitializationMode"
            self._fail("%s: %s" % (what if self.fg_state == "init" else "GetReal", msg))
        self.assembled = True

    def get_real(self, vrs):
        if self.fg_state == "instantiated":
            self._allowed("fmi2GetReal", ())
        if self.fg_state not in ("error", "discarded"):
            self._ensure_assembled()
        c, m = self.core, MODEL  # noqa: F821
        out = []
        for r in vrs:
            if r < m.VR_V:
                out.append(c.q[r])
            elif r < m.VR_RES:
                out.append(c.v[r - m.VR_V])
            elif r == m.VR_RES:
                out.append(c.residual)
            elif r < m.VR_P:
                out.append(c.u[r - m.VR_U])
            elif r < m.VR_H:
                out.append(c.p[r - m.VR_P])
            elif r == m.VR_H:
                out.append(c.h)
            elif r < m.VR_A:
                out.append(c.y[r - m.VR_Y])
            else:
                self._fail("fmi2GetReal: unknown value reference %d" % r)   # (no name to give)
        return out

    def set_real(self, vrs, values):
        self._allowed("fmi2SetReal", ("instantiated", "init", "step"))
        m = MODEL  # noqa: F821
        before_init = self.fg_state in ("instantiated", "init")
        for r, val in zip(vrs, values):
            if not isfinite(val):
                self._fail("fmi2SetReal: %s (value reference %d) set to a non-finite value (NaN or Inf)"
                           % (self._vr_name(r), r))
            ok = False
            if r < m.VR_RES:
                i = r if r < m.VR_V else r - m.VR_V
                ok = (before_init or m.kinematic) and i in m.independent
            elif m.VR_U <= r < m.VR_P:
                ok = True
            elif m.VR_P <= r < m.VR_H and (r - m.VR_P) in m.hard_points:
                # geometry: assembled from at ExitInitializationMode, swept in its range only
                if not before_init:
                    self._fail("fmi2SetReal: hard point %s (value reference %d) is a fixed parameter: it can be "
                               "set only before fmi2ExitInitializationMode, which assembles the start from it"
                               % (self._vr_name(r), r))
                lower, upper = m.hard_points[r - m.VR_P]
                if not (lower <= val <= upper):
                    self._fail("fmi2SetReal: hard point %s (value reference %d) set to %.17g, outside its declared "
                               "range [%.17g, %.17g], the only values the build swept (nothing was set)"
                               % (self._vr_name(r), r, val, lower, upper))
                ok = True
            elif m.VR_P <= r < m.VR_H:
                ok = True           # tunable: also between communication steps (fmigen_instance.c)
            elif r == m.VR_H:
                ok = before_init
                if ok and not (val > 0.0):
                    self._fail("internal_step must be > 0 (got %g)" % val)
            if not ok and r == m.VR_H:
                self._fail("fmi2SetReal: internal_step (value reference %d) is a fixed parameter: it can be set "
                           "only before fmi2ExitInitializationMode" % r)
            if not ok:
                self._fail("fmi2SetReal: %s (value reference %d) cannot be set %s" % (
                    self._vr_name(r), r, "(it is calculated or unknown)" if before_init else "after initialization"))
        if not before_init and any(m.VR_P <= r < m.VR_H for r in vrs):
            # the bodies' masses and inertias as the new values make them,
            # before anything changes (fmigen_instance.c's fg_set_real)
            p = list(self.core.p)
            for r, val in zip(vrs, values):
                if m.VR_P <= r < m.VR_H:
                    p[r - m.VR_P] = float(val)
            self._check_masses("fmi2SetReal", p, " (nothing was set)")
        c = self.core
        changed = False
        for r, val in zip(vrs, values):
            val = float(val)
            if r < m.VR_V:
                arr, i = c.q, r
            elif r < m.VR_RES:
                arr, i = c.v, r - m.VR_V
            elif r < m.VR_P:
                arr, i = c.u, r - m.VR_U
            elif r < m.VR_H:
                arr, i = c.p, r - m.VR_P
            else:
                if c.h != val:
                    changed = True
                c.h = val
                continue
            if arr[i] != val:
                changed = True
            arr[i] = val
        if changed:
            self.assembled = False

    def do_step(self, current_time, step_size):
        self._allowed("fmi2DoStep", ("step",))
        c = self.core
        H, t = step_size, current_time
        if not (H > 0.0) or not isfinite(H):
            self._fail("fmi2DoStep: communication step size must be > 0 (got %g)" % H)
        if not isfinite(t) or fabs(t - c.t) > 1e-9 * (1.0 + fabs(t)) + 1e-12 * H:
            self._fail("fmi2DoStep: currentCommunicationPoint %.17g does not match the FMU time %.17g" % (t, c.t))
        c.t = t
        if c.step(H):
            self.log(c.message, Fmi2Status.discard,  # noqa: F821
                     "logStatusError")
            self.fg_state = "discarded"
            self.last_successful_time = c.t
            self.terminated = True
            return False
        self.assembled = True
        self.last_successful_time = c.t
        return True

    def _get_fmu_state(self):
        return {"core": self.core.snapshot(), "fg_state": self.fg_state, "assembled": self.assembled,
                "terminated": self.terminated, "last_successful_time": self.last_successful_time}

    def _set_fmu_state(self, state):
        self.core.restore(state["core"])
        self.fg_state = state["fg_state"]
        self.assembled = state["assembled"]
        self.terminated = state["terminated"]
        self.last_successful_time = state["last_successful_time"]
