"""The shipped full vehicle (``mechanisms/vehicle.py``) as a vehicle-dynamics
engineer reads it: its trimmed ride height, the loads at its chassis mounts
and its bump and rebound stops, on the FMU (FMI 2 Co-Simulation, RK4 at
1 ms) against numbers computed here from the mechanism's data alone.

The FMU is conftest.py's ``vehicle_fmu``, built once per session for this
file, ``tests/test_masters.py``'s libcosim test and ``tests/test_examples.py``
(the vehicle's derivation is minutes of CPU).  The shipped start has the
front-left wheel moving up at 0.5 m/s and every wheel spinning; the rest
start sets those rates to 0 (they are the independent coordinates'
``der()``, settable before initialization).
"""
import dataclasses
import math

import numpy as np
import pytest
from fmpy import read_model_description, simulate_fmu

from mechanisms.five_link import GRAVITY, carrier_mass
from mechanisms.front_corner import DOUBLE_WISHBONE, RACK_MASS
from mechanisms.quarter_car_joints import WHEEL_MASS, static_preload
from mechanisms.vehicle import (BUMP_STOP_AT, BUMP_STOP_TABLE, CHASSIS_MASS, CORNERS, FRONT, HARD_POINTS,
                                REBOUND_STOP_AT, REBOUND_STOP_DAMPING, REBOUND_STOP_STIFFNESS, axle_loads,
                                chassis_mounts, geometry_of)

AT_REST = {**{f"der({p}spin)": 0.0 for p in CORNERS}, "der(fl_z)": 0.0}
WEIGHT = CHASSIS_MASS * GRAVITY


def unsprung_mass(prefix):
    geometry = geometry_of(prefix)
    return carrier_mass() + WHEEL_MASS + sum(geometry.link_mass(k) for k in range(5))


def static_tire_load(prefix):
    """The corner's tire load at rest: its sprung share and its unsprung bodies."""
    return (axle_loads()[prefix] + unsprung_mass(prefix)) * GRAVITY


def reaction(res, joint):
    """The joint's reaction force (N, world), one row per output point."""
    return np.stack([res[f"reaction_{joint}_f{ax}"] for ax in "xyz"], axis=1)


@pytest.fixture(scope="module")
def at_rest(vehicle_fmu):
    return simulate_fmu(str(vehicle_fmu), stop_time=1.0, output_interval=0.01, start_values=AT_REST)


def test_trimmed_vehicle_rests_at_its_design_ride_height(at_rest):
    """Each corner's coil-over preload is the static trim along its travel
    (``s.trim``): the FMU reports the preload that the hand-made virtual-work
    balance of ``quarter_car_joints.static_preload`` gives (central
    differences of the geometry, which limit the agreement), and started at
    rest the chassis stays at its design ride height and attitude."""
    for p in CORNERS:
        hand = static_preload(axle_loads()[p], geometry_of(p))
        assert at_rest[f"trim_{p}coilover"][0] == pytest.approx(hand, rel=1e-9)
    for name, tol in (("zc", 1e-11), ("pitchc", 1e-11), ("rollc", 1e-11), ("xc", 1e-11), ("yc", 1e-11)):
        start = 0.25 if name == "zc" else 0.0
        assert np.abs(at_rest[name] - start).max() < tol, name
    for p in CORNERS:
        assert np.abs(at_rest[f"{p}travel"]).max() < 1e-11


def test_chassis_mount_reactions_balance_the_weights_at_rest(at_rest):
    """Statics, from the mechanism's masses and the tire loads alone: at
    rest each corner's bodies (carrier, wheel, five rods) are held by the
    tire load, the coil-over (vertical in the design pose, its tension the
    trimmed preload) and their mounts, so Σ mounts = (m_u g − F_z − T) ẑ;
    the rack by the chassis less the two tie rods, Σ = m_rack g ẑ; and the
    chassis, which exerts the opposite of every reaction at its mounts,
    Σ mounts + rack = −(m_chassis g + Σ T) ẑ: the weight of everything the
    tires carry, to 1e-9 of the chassis' weight at every output point."""
    tension = {p: static_preload(axle_loads()[p], geometry_of(p)) for p in CORNERS}
    up = np.array([0.0, 0.0, 1.0])
    on_chassis = reaction(at_rest, "rack")
    for p in CORNERS:
        mounts = sum(reaction(at_rest, j) for j in chassis_mounts(p))
        expected = (unsprung_mass(p) * GRAVITY - static_tire_load(p) - tension[p]) * up
        assert np.abs(mounts - expected).max() < 1e-9 * WEIGHT, p
        # a front tie rod hangs from the rack, not from the chassis
        on_chassis = on_chassis + mounts - (reaction(at_rest, f"{p}U5") if p in FRONT else 0)
    rack = reaction(at_rest, "rack") - sum(reaction(at_rest, f"{p}U5") for p in FRONT)
    assert np.abs(rack - RACK_MASS * GRAVITY * up).max() < 1e-9 * WEIGHT
    expected = -(CHASSIS_MASS * GRAVITY + sum(tension.values())) * up
    assert np.abs(on_chassis - expected).max() < 1e-9 * WEIGHT
    # the stops are out of contact: the carriers' own joints transmit nothing
    for p in CORNERS:
        assert np.abs(reaction(at_rest, f"{p}carrier")).max() < 1e-9 * WEIGHT


def bump_stop_force(deflection):
    """The jounce bumper's table, interpolated and extended by its last slope."""
    d, f = np.array(BUMP_STOP_TABLE).T
    slope = (f[-1] - f[-2]) / (d[-1] - d[-2])
    return np.where(deflection <= d[-1], np.interp(deflection, d, f), f[-1] + slope * (deflection - d[-1]))


def stop_force_along_chassis_z(res, prefix):
    """The carrier joint's reaction (the stops' force: nothing else acts on
    the carrier's own coordinates) as the force along the chassis' z axis,
    and the part of it off that axis."""
    cr, sr = np.cos(res["rollc"]), np.sin(res["rollc"])
    cp, sp_ = np.cos(res["pitchc"]), np.sin(res["pitchc"])
    cy, sy = np.cos(res["yawc"]), np.sin(res["yawc"])
    # the chassis' z axis in the world: Rz(yaw) Ry(pitch) Rx(roll) e_z
    axis = np.stack([cy * sp_ * cr + sy * sr, sy * sp_ * cr - cy * sr, cp * cr], axis=1)
    f = reaction(res, f"{prefix}carrier")
    along = (f * axis).sum(axis=1)
    return along, np.linalg.norm(f - along[:, None] * axis, axis=1)


def test_bump_stop_pushes_back_with_its_table_force(vehicle_fmu):
    """A tire load 5 kN above the static one pushes the front-left wheel up
    into its jounce bumper: the force the chassis exerts on the carrier
    through its joint is the table's at the travel past contact, along the
    chassis' z, and zero out of contact."""
    start = {**AT_REST, "fl_Fz": static_tire_load("fl_") + 5000.0}
    res = simulate_fmu(str(vehicle_fmu), stop_time=0.5, output_interval=0.005, start_values=start)
    deflection = res["fl_travel"] - BUMP_STOP_AT
    assert deflection.max() > BUMP_STOP_TABLE[1][0]           # past the table's first point
    along, off = stop_force_along_chassis_z(res, "fl_")
    expected = -bump_stop_force(np.maximum(deflection, 0.0)) * (deflection > 0)
    assert np.abs(along - expected).max() < 1e-9 * np.abs(expected).max()
    assert off.max() < 1e-9 * np.abs(expected).max()
    assert np.abs(reaction(res, "fl_carrier")[:, 2][deflection < 0]).max() < 1e-9 * WEIGHT


def test_rebound_stop_holds_an_unloaded_wheel(vehicle_fmu):
    """With no tire load the front-left wheel drops under its coil-over until
    the rebound stop catches it: the force along the chassis' z is
    max(0, k (lower − z) − c ż) while the travel is below the stop."""
    res = simulate_fmu(str(vehicle_fmu), stop_time=0.5, output_interval=0.005, start_values={**AT_REST, "fl_Fz": 0.0})
    z, zdot = res["fl_travel"], res["der(fl_z)"]
    assert z.min() < REBOUND_STOP_AT - 1e-3
    along, off = stop_force_along_chassis_z(res, "fl_")
    expected = np.where(z < REBOUND_STOP_AT,
                        np.maximum(0.0, REBOUND_STOP_STIFFNESS * (REBOUND_STOP_AT - z) - REBOUND_STOP_DAMPING * zdot),
                        0.0)
    assert np.abs(along - expected).max() < 1e-9 * expected.max()
    assert off.max() < 1e-9 * expected.max()
    assert math.isfinite(res["constraint_residual"].max()) and res["constraint_residual"].max() < 1e-12


#: the front-left tie rod's inner point height moved inside its declared range [m]
#: moved front-left hard points [m]: the arms' pivots C1, C3 and their
#: knuckle points W1, W3 with those rods' lengths following (the design pose
#: kept), the tie rod's ends with its length kept (the toe changes), and the
#: lower rear rod's length alone
MOVED_POINTS = {"fl_C1z": 0.004, "fl_C1x": -0.003, "fl_W1y": 0.002, "fl_C3y": -0.004, "fl_W3z": 0.003,
                "fl_C5z": -0.004, "fl_W5x": 0.002, "fl_L4": 0.006}
KNUCKLE_POSE = ["fl_x", "fl_y", "fl_phi", "fl_theta", "fl_psi"]


def moved_corner(moved):
    """``DOUBLE_WISHBONE`` with the front-left hard points {name: offset}
    moved, and the rods whose ends moved but whose length is not given
    (rods 1 and 3 in ``MOVED_POINTS``) made |W_k − C_k| at the new points,
    but for the tie rod, which keeps its length: the geometry the FMU is
    given in absolute values (``moved_values``)."""
    C, W, L = (np.array(DOUBLE_WISHBONE.C), np.array(DOUBLE_WISHBONE.W), np.array(DOUBLE_WISHBONE.L))
    for name, d in moved.items():
        k = int(name[4]) - 1
        if name[3] == "L":
            L[k] += d
        else:
            ({"C": C, "W": W}[name[3]])[k, "xyz".index(name[5])] += d
    for k in {int(n[4]) - 1 for n in moved if n[3] in "CW"} - {4} - {int(n[4]) - 1 for n in moved if n[3] == "L"}:
        L[k] = np.linalg.norm(W[k] - C[k])
    return dataclasses.replace(DOUBLE_WISHBONE, C=tuple(map(tuple, C)), W=tuple(map(tuple, W)), L=tuple(L))


def moved_values(geometry):
    """The FMU's start values of the front-left hard points for ``geometry``."""
    out = {}
    for k in range(5):
        out[f"fl_L{k + 1}"] = float(geometry.L[k])
        for j, ax in enumerate("xyz"):
            out[f"fl_C{k + 1}{ax}"], out[f"fl_W{k + 1}{ax}"] = float(geometry.C[k][j]), float(geometry.W[k][j])
    return out


def knuckle_poses(geometry, res):
    """The front-left knuckle's pose (x, y, φ, θ, ψ) at each output point's
    travel and rack displacement, by ``corner_geometry``'s numpy Newton on
    the five rods' lengths (the hard-point table alone: nothing of fmigen's
    derivation), each from the previous point's pose."""
    out, guess = [], None
    for z, rack in zip(res["fl_z"], res["rack"]):
        guess = geometry.solve_pose(z, guess, rack=rack)
        assert np.abs(geometry.distance_residuals(guess, z, rack)).max() < 1e-14
        out.append(guess)
    return np.array(out)


def test_front_left_corner_hard_points_are_tunable(vehicle_fmu):
    """Every hard point of the front-left corner (``vehicle.HARD_POINTS``:
    the chassis and rack points C_k, the knuckle points W_k, the rods'
    lengths L_k) is a fixed parameter with its declared range: with eight
    of them moved in fmpy (two arms' points with their lengths following,
    the tie rod's ends with its length kept, a rod's length alone) the FMU
    assembles the knuckle there and keeps its loops closed through the bump
    and a steering step; the knuckle's pose at every output point is the
    numpy geometry's with those points, and not the design's.  The other
    corners' hard points stay structural, and a value outside a range is
    refused."""
    md = read_model_description(vehicle_fmu)
    variables = {v.name: v for v in md.modelVariables}
    design = moved_values(DOUBLE_WISHBONE)
    assert set(HARD_POINTS) == set(design)
    for name, half in HARD_POINTS.items():
        v = variables[name]
        assert (v.variability, float(v.min), float(v.max)) == ("fixed", design[name] - half, design[name] + half)
    others = {f"{p}{k}{i}{ax}" for p in CORNERS if p != "fl_" for k in "CW" for i in range(1, 6) for ax in "xyz"}
    assert not (others | {f"{p}L{i}" for p in CORNERS if p != "fl_" for i in range(1, 6)}) & set(variables)
    moved = moved_corner(MOVED_POINTS)
    start = moved_values(moved)
    assert all(abs(start[n] - design[n]) <= HARD_POINTS[n] for n in start)
    res = simulate_fmu(vehicle_fmu, stop_time=0.1, output_interval=0.005, start_values={**start, "rack_demand": 0.01},
                       output=[*KNUCKLE_POSE, "fl_z", "rack", "constraint_residual"])
    assert res["rack"].max() > 0.005 and res["fl_z"].max() > 0.005          # measured 10.0 mm, 10.1 mm
    got = np.stack([res[n] for n in KNUCKLE_POSE], axis=1)
    err = np.abs(got - knuckle_poses(moved, res)).max()
    # measured 5.3e-16 (fl_theta); the move itself changes the pose by 2.3e-2
    assert err < 1e-14, f"max |knuckle pose - numpy geometry at the moved hard points| = {err:.3g}"
    assert np.abs(got - knuckle_poses(DOUBLE_WISHBONE, res)).max() > 1e-3
    assert res["constraint_residual"].max() < 1e-12
    for name in ("fl_W2y", "fl_L5"):
        with pytest.raises(Exception, match="fmi2SetReal failed"):
            simulate_fmu(vehicle_fmu, stop_time=0.01, start_values={name: design[name] - 1.01 * HARD_POINTS[name]})


def test_trims_follow_a_hard_point_set_in_the_fmu(vehicle_fmu):
    """The coil-over sits on rod 4, so its chassis point ``fl_C4z`` moves the
    front-left trim: set 4 mm up in fmpy before initialization, the FMU
    solves the four trims at the start it assembled there, and they are the
    Cartesian reference's at that start and geometry (its own twists and
    body wrenches, ``verify/trims.py``; measured 2.5e-13 relative), the
    front-left one 1.5 % from the design's (which the build-time trim
    kept), the other three the design's."""
    from fmigen.verify.cartesian import CartesianModel
    from mechanisms.vehicle import build
    system = build()
    point = next(p for p in system.parameters if p.name == "fl_C4z")
    point.value = float(point.value) + 0.004
    at_rest = {**AT_REST, "fl_C4z": point.value}
    res = simulate_fmu(str(vehicle_fmu), stop_time=0.01, output_interval=0.01, start_values=at_rest)
    md = {v.name for v in read_model_description(str(vehicle_fmu)).modelVariables}
    q0 = {c.name: float(res[c.name][0]) for c in system.coordinates if c.name in md}
    reference = CartesianModel(system).simulate(q0, {}, system.independent, np.linspace(0.0, 1e-4, 3)).trims
    for p in CORNERS:
        assert res[f"trim_{p}coilover"][0] == pytest.approx(reference[f"{p}coilover"], rel=1e-9), p
    design = static_preload(axle_loads()["fl_"], geometry_of("fl_"))
    assert abs(res["trim_fl_coilover"][0] - design) > 1e-2 * abs(design)
    assert res["trim_rl_coilover"][0] == pytest.approx(static_preload(axle_loads()["rl_"], geometry_of("rl_")),
                                                       rel=1e-9)


def test_front_left_corner_assembles_over_its_hard_point_ranges():
    """The declared ranges are ones the geometry admits: at the box's two
    extreme corners and at random vertices of it (every hard point at a
    bound; 35 of them, so the vertices are sampled), the knuckle's pose
    solves (numpy Newton on the rods' lengths, continued along the travel)
    from 70 mm below to 90 mm above the design pose (the rebound stop to
    the bump stop's 30 mm of compression) at the rack's centre and ±30 mm,
    its five rod equations well conditioned all the way."""
    rng = np.random.default_rng(0)
    names = list(HARD_POINTS)
    signs = [np.full(len(names), -1.0), np.full(len(names), 1.0)] + \
        [rng.choice([-1.0, 1.0], len(names)) for _ in range(10)]
    travel = np.round(np.arange(-7, 10) * 0.01, 3)
    worst = np.inf
    for sign in signs:
        geometry = moved_corner({n: s * HARD_POINTS[n] for n, s in zip(names, sign)})
        for rack in (-0.03, 0.0, 0.03):
            design = geometry.solve_pose(0.0, rack=rack)
            for branch in (travel[travel > 0], travel[travel < 0][::-1]):
                pose = design
                for z in branch:
                    pose = geometry.solve_pose(z, pose, rack=rack)
                    assert np.abs(geometry.distance_residuals(pose, z, rack)).max() < 1e-14
                    worst = min(worst, 1 / np.linalg.cond(_pose_jacobian(geometry, pose, z, rack)))
    # measured 0.029 (70 mm rebound, rack -30 mm); the design corner's 0.042
    assert worst > 0.01


def _pose_jacobian(geometry, pose, z, rack, h=1e-7):
    """∂(rod distance residuals)/∂(x, y, φ, θ, ψ) by central differences."""
    cols = []
    for j in range(5):
        d = np.zeros(5)
        d[j] = h
        cols.append((geometry.distance_residuals(pose + d, z, rack) - geometry.distance_residuals(pose - d, z, rack))
                    / (2 * h))
    return np.stack(cols, axis=1)


#: the horizon over which the FMU is checked against the independent references [s]
REFERENCE_HORIZON = 0.03


def test_vehicle_fmu_agrees_with_the_independent_references(vehicle_fmu):
    """The shipped start (the front-left wheel moving up at 0.5 m/s, the
    wheels spinning) over 30 ms: the FMU against the two references that
    share no equation with it, each from the FMU's first row, with
    ``fmigen validate``'s default tolerances: the Cartesian reference
    (Newton–Euler in absolute coordinates from the joint description) and
    MuJoCo (the exported description).  Each solves the coil-overs'
    ``s.trim`` preloads from its own equations: at preload 0 the chassis
    falls away from the FMU's."""
    from fmigen.verify.cartesian import CartesianModel
    from fmigen.verify.compare import coordinate_error
    from fmigen.verify.validate import DEFAULT_COORD_TOL, DEFAULT_VELOCITY_TOL
    from mechanisms.vehicle import build
    md = read_model_description(str(vehicle_fmu))
    declared = {v.name for v in md.modelVariables}
    names = [n for n in (c.name for c in build().coordinates) if n in declared and f"der({n})" in declared]
    res = simulate_fmu(str(vehicle_fmu), stop_time=REFERENCE_HORIZON, output_interval=0.005,
                       output=[*names, *[f"der({n})" for n in names]])
    q0 = {n: float(res[n][0]) for n in names}
    v0 = {n: float(res[f"der({n})"][0]) for n in names}
    system = build()
    cart = CartesianModel(system).simulate(q0, v0, system.independent, res["time"])
    assert set(cart.trims) == {f"{p}coilover" for p in CORNERS}
    for n in names:
        assert coordinate_error(res[n], cart.column(n)).max() <= DEFAULT_COORD_TOL, n
        assert np.abs(res[f"der({n})"] - cart.v[:, cart.names.index(n)]).max() <= DEFAULT_VELOCITY_TOL, n
    pytest.importorskip("mujoco")
    from fmigen.verify.mujoco_peer import run_mujoco
    peer = run_mujoco(build(), q0, v0, res["time"], dt=5e-5, independent=system.independent)
    for n in names:
        if n in peer.q:
            assert coordinate_error(res[n], peer.q[n]).max() <= DEFAULT_COORD_TOL, n
            assert np.abs(res[f"der({n})"] - peer.v[n]).max() <= DEFAULT_VELOCITY_TOL, n
    assert {"fl_z", "zc", "fr_alpha2"} <= set(peer.q)
