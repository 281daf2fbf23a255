"""``s.position``, ``s.orientation`` and ``s.velocity`` of a marker as FMU
outputs (issue 35, item 4: wheel-centre pose without re-deriving it by hand).

The four-bar's joint B is cut: the coupler's marker B and the rocker's
marker B are placed along different tree paths (crank and coupler; rocker),
so their positions and velocities agree only where the kinematics closes
the loop — an independent check — and each equals its closed form in the
joint coordinates.
"""
import math

import numpy as np
import pytest
import sympy as sp
from fmpy import simulate_fmu

from fmigen.build.pipeline import build_fmu
from fmigen.joints import JointSystem
from fmigen.model import ModelError


def fourbar():
    from mechanisms.fourbar_joints import build
    s = build()
    cB, rB = s.bodies["coupler"].markers["B"], s.bodies["rocker"].markers["B"]
    for tag, mk in (("c", cB), ("r", rB)):
        p, v = s.position(mk), s.velocity(mk)
        for i, ax in enumerate("xyz"):
            s.output(f"{tag}B_{ax}", p[i], "m")
            s.output(f"{tag}B_v{ax}", v[i], "m/s")
    R = s.orientation(cB)
    s.output("coupler_angle", sp.atan2(R[1, 0], R[0, 0]), "rad")
    return s


def test_marker_position_velocity_orientation_outputs(tmp_path):
    path, _ = build_fmu(fourbar(), tmp_path / "fourbar_markers.fmu", windows=False)
    res = simulate_fmu(str(path), stop_time=1.0, output_interval=0.01)
    th, A, phi = res["theta"], res["A"], res["phi"]
    dth, dA, dphi = res["der(theta)"], res["der(A)"], res["der(phi)"]
    l1, l2, l3, d = 1.0, 4.0, 2.5, 3.0
    # closed forms along each path
    assert np.abs(res["cB_x"] - (l1 * np.cos(th) + l2 * np.cos(th + A))).max() < 1e-12
    assert np.abs(res["cB_y"] - (l1 * np.sin(th) + l2 * np.sin(th + A))).max() < 1e-12
    assert np.abs(res["rB_x"] - (d + l3 * np.cos(phi))).max() < 1e-12
    assert np.abs(res["cB_vx"] - (-l1 * np.sin(th) * dth - l2 * np.sin(th + A) * (dth + dA))).max() < 1e-11
    assert np.abs(res["rB_vy"] - l3 * np.cos(phi) * dphi).max() < 1e-11
    assert np.abs(res["cB_z"]).max() == 0 and np.abs(res["cB_vz"]).max() == 0
    # the two paths meet at the cut joint: positions to the constraint residual, velocities too
    for ax in "xy":
        assert np.abs(res[f"cB_{ax}"] - res[f"rB_{ax}"]).max() < 1e-12
        assert np.abs(res[f"cB_v{ax}"] - res[f"rB_v{ax}"]).max() < 1e-11
    wrapped = (res["coupler_angle"] - (th + A) + math.pi) % (2 * math.pi) - math.pi
    assert np.abs(wrapped).max() < 1e-12


def test_marker_pose_errors():
    s = JointSystem("bad")
    rod = s.body("rod", 1.0, (0, 0, 0.1), com=(0.5, 0))
    s.revolute("pivot", s.ground.origin, rod.origin)
    other = JointSystem("other").body("x", 1.0, (0, 0, 0.1))
    with pytest.raises(ModelError, match="is not a marker of a body of 'bad'"):
        s.position(other.origin)
    s.joint_force("pivot", s.position(rod.marker("tip", (1, 0)))[1])
    from fmigen.frontends.joint_model import to_mechanism
    with pytest.raises(ModelError, match="for outputs only"):
        to_mechanism(s)
