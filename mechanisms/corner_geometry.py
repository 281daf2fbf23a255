"""Hard-point geometry of a five-rod suspension corner, in numpy.

A wheel carrier held by five rods, each between a chassis point C_k
(universal joint) and a carrier point W_k (spherical joint), of length L_k.
The same description covers the five-link axle (``five_link``) and a double
wishbone (``double_wishbone``): an A-arm with a revolute inner axis and an
outer ball joint is kinematically two rods from its two inner pivots to one
carrier point, and the tie rod is the fifth rod.  Rods listed in
``rack_links`` start on a steering rack instead of the chassis: their C_k
moves by the rack displacement along the chassis y axis.

Frames: carrier pose ``(x, y, φ, θ, ψ)`` with height ``z``, R = Rz(φ) Ry(θ)
Rx(ψ) (``five_link``'s paper eq. 14), chassis points in the corner's frame
(the design wheel centre at the origin).  Used for start guesses, the
coil-over's static preload and scripts; the mechanisms themselves are
symbolic (``five_link``, ``five_link_joints.add_corner``).
"""
import math
from dataclasses import dataclass

import numpy as np

DENSITY = 8000.0          # kg/m^3, steel rods
LINK_RADIUS = 0.015       # m


def rotation(phi, theta, psi):
    """R = Rz(φ) Ry(θ) Rx(ψ), paper eq. 14 (carrier frame -> world)."""
    cf, sf, ct, st, cp, sp_ = math.cos(phi), math.sin(phi), math.cos(theta), math.sin(theta), \
        math.cos(psi), math.sin(psi)
    return np.array([[cf * ct, cf * st * sp_ - sf * cp, cf * st * cp + sf * sp_],
                     [sf * ct, sf * st * sp_ + cf * cp, sf * st * cp - cf * sp_],
                     [-st, ct * sp_, ct * cp]])


@dataclass(frozen=True)
class LinkCorner:
    names: tuple          # per rod, what it is
    W: tuple              # carrier points, carrier frame [m]
    C: tuple              # chassis points at zero rack displacement, corner frame [m]
    L: tuple              # rod lengths [m]
    rack_links: tuple = ()   # indices (0-based) of the rods hung from the steering rack

    def chassis_points(self, rack=0.0):
        C = np.array(self.C, dtype=float)
        for k in self.rack_links:
            C[k, 1] += rack
        return C

    def link_vectors(self, pose, z, rack=0.0):
        """X_k = carrier point k − C_k (5×3) for pose = (x, y, φ, θ, ψ)."""
        x, y, phi, theta, psi = pose
        return np.array([x, y, z]) + np.array(self.W) @ rotation(phi, theta, psi).T - self.chassis_points(rack)

    def distance_residuals(self, pose, z, rack=0.0):
        X = self.link_vectors(pose, z, rack)
        return (X * X).sum(axis=1) - np.array(self.L) ** 2

    def solve_pose(self, z, guess=None, rack=0.0, tol=1e-15, max_iter=50):
        """Newton on the five distance equations for (x, y, φ, θ, ψ) at height z
        (central-difference Jacobian, which is ample for a 5×5 start guess)."""
        p = np.zeros(5) if guess is None else np.array(guess, dtype=float)
        for _ in range(max_iter):
            f = self.distance_residuals(p, z, rack)
            J = np.empty((5, 5))
            for j in range(5):
                d = np.zeros(5)
                d[j] = 1e-7
                J[:, j] = (self.distance_residuals(p + d, z, rack) - self.distance_residuals(p - d, z, rack)) / 2e-7
            step = np.linalg.solve(J, f)
            p -= step
            if np.abs(step).max() < tol:
                break
        return p

    def joint_angles(self, pose, z, rack=0.0):
        """(α_k, β_k) of the branch sin β_k > 0 from the rod directions
        (u_k = Rx(α_k) Ry(β_k) e_x)."""
        u = self.link_vectors(pose, z, rack) / np.array(self.L)[:, None]
        beta = np.arccos(np.clip(u[:, 0], -1, 1))
        alpha = np.arctan2(u[:, 1], -u[:, 2])
        return alpha, beta

    def start_configuration(self, z=0.0, rack=0.0):
        """All 16 coordinates at height z by name (design-pose Newton start)."""
        pose = self.solve_pose(z, rack=rack)
        alpha, beta = self.joint_angles(pose, z, rack)
        q = dict(zip(("x", "y", "phi", "theta", "psi"), pose))
        q["z"] = z
        for k in range(5):
            q[f"alpha{k + 1}"] = float(alpha[k])
            q[f"beta{k + 1}"] = float(beta[k])
        return q

    def link_mass(self, k):
        return DENSITY * math.pi * LINK_RADIUS**2 * self.L[k]
