"""The vehicle FMU in a driving-simulator loop: Python tyres, a road with a bump, 1 kHz.

``mechanisms/vehicle.py`` built as an FMI 2.0 Co-Simulation FMU takes each
wheel's tyre loads as inputs (``*_Fx *_Fy *_Fz *_Mx *_My *_Mz``, world
components, at the wheel centre) and gives what a tyre model needs as
outputs (the wheel centre's position ``*_wheel_x/y/z`` and velocity
``*_wheel_vx/vy/vz``, the carrier's orientation ``*_wheel_yaw/pitch/roll``,
the travel ``*_travel``; the spin rate is the state ``der(*_spin)``).  This
script closes that loop the way a driving simulator does: the FMU is
instantiated once, and every millisecond the master reads the wheels, runs
its tyre model on the road under them, sets the four tyres' loads and calls
``doStep`` (the loads are held over the step: a zero-order hold).

The car coasts straight ahead at ``--speed``, its wheels rolling freely,
onto a (1 − cos) bump under its left wheels.  It prints the real-time factor
(simulated time over the time the loop took, and over the ``doStep`` calls
alone) and, with ``--plot``, draws the chassis' heave, pitch and roll, the
tyres' vertical loads and the suspension travels.

The tyre (``TyreModel``, ``tyre_loads``), after H. B. Pacejka, *Tyre and
Vehicle Dynamics*, 2nd ed., Butterworth-Heinemann, 2006, ch. 3 (the brush
model of steady-state slip):

* vertical: a point follower, a radial spring-damper on the road height
  straight under the wheel centre (no enveloping of short obstacles), zero
  when the tyre leaves the road;
* horizontal, ``--tyre brush`` (default): the isotropic brush model with
  combined slip, in Pacejka's theoretical slip σ = −V_s / V_r (V_s the
  contact point's slip velocity, V_r = Ω r_e the rolling speed): with
  θ = C / (3 μ F_z), |F| = μ F_z (3θσ − 3(θσ)² + (θσ)³) up to full sliding
  at θσ = 1, μ F_z beyond, along σ; the slip stiffness C = 2 c_p a² (c_p the
  tread's stiffness per unit length, a the half contact length), and a from
  the deflection δ of a tyre of free radius r_0 on a flat road,
  a² = 2 r_0 δ − δ²;
* ``--tyre linear``: the brush model's small-slip limit,
  F_x = C κ, F_y = C α (κ = −V_sx/|V_x|, tan α = −V_sy/|V_x|);
* steady-state slip (no relaxation length) and no aligning moment; the
  forces act at the contact point, so at the wheel centre they come with the
  moment of the horizontal force about it.

Slip forces that follow the slip at once make the wheel's spin a stiff
feedback loop with time constant |V_x| I_wheel / (C r_e²), which the
zero-order hold at 1 ms keeps stable above about 2.5 m/s; ``--speed`` must
be at least ``MIN_SPEED``.

Start: the FMU's design pose is a static equilibrium for the tyre loads its
inputs start with (``vehicle.axle_loads``).  Each tyre's free radius is
trimmed so that it carries exactly that load on the flat road in that pose
(``trimmed_free_radii``), so the car starts in equilibrium and needs no
settling phase.  The FMU's start velocities are set before initialization:
the chassis moving at ``--speed``, every wheel spinning at speed / r_e (free
rolling), no suspension motion.

Run:  python examples/vehicle_bump.py [--stop-time 2] [--plot bump.png] [--json]
(with no ``--fmu``, the FMU is built once through fmigen's Python API and
then comes from fmigen's cache, ``FMIGEN_CACHE``).
"""
import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

CORNERS = ("fl_", "fr_", "rl_", "rr_")
#: what the loop reads of each wheel (FMU output or state names after the prefix)
WHEEL_SIGNALS = ("wheel_x", "wheel_y", "wheel_z", "wheel_vx", "wheel_vy", "wheel_vz",
                 "wheel_yaw", "wheel_pitch", "wheel_roll", "travel")
#: the chassis' pose and forward speed (coordinates of the FMU)
CHASSIS_SIGNALS = ("xc", "zc", "pitchc", "rollc", "der(xc)")
#: the master's step [s]: 1 kHz, a driving simulator's rate
COMMUNICATION_STEP = 1e-3
#: below this speed [m/s] the steady-state slip loop is too stiff for 1 ms steps
MIN_SPEED = 5.0


@dataclass(frozen=True)
class TyreModel:
    """A passenger-car tyre in round numbers (about a 205/55 R16): the
    vertical stiffness and damping of the point follower, the design pose's
    loaded radius (the wheel centres' height above the road), the effective
    rolling radius r_e, the brush model's tread stiffness c_p [N/m²] and the
    friction coefficient.  With these, C ≈ 58 kN/rad at a static load of
    3.9 kN."""
    vertical_stiffness: float = 250e3       # N/m
    vertical_damping: float = 300.0         # N s/m
    loaded_radius: float = 0.300            # m, in the design pose
    rolling_radius: float = 0.305           # m
    tread_stiffness: float = 3.0e6          # N/m², c_p
    friction: float = 1.0                   # μ
    kind: str = "brush"                     # brush | linear


@dataclass(frozen=True)
class Road:
    """A flat road at height ``level`` with a (1 − cos) bump of ``height``
    and ``length`` starting at ``start`` along x, under the left wheels
    (y > 0) only."""
    level: float
    start: float
    height: float = 0.03                    # m
    length: float = 0.5                     # m

    def height_and_slope(self, x, y):
        """(h, ∂h/∂x) at (x, y)."""
        s = x - self.start
        if y <= 0.0 or not 0.0 <= s <= self.length:
            return self.level, 0.0
        w = 2.0 * math.pi / self.length
        return (self.level + 0.5 * self.height * (1.0 - math.cos(w * s)),
                0.5 * self.height * w * math.sin(w * s))


def tyre_loads(tyre: TyreModel, free_radius, road: Road, wheel: dict, spin_rate):
    """The tyre's (Fx, Fy, Fz, Mx, My) at the wheel centre, world axes, from
    the wheel's outputs (``wheel``: WHEEL_SIGNALS without the prefix) and its
    spin rate relative to the carrier [rad/s] (the carrier's own pitch rate,
    a few per cent of it over a bump, is left out of the rolling speed)."""
    x, y, z = wheel["wheel_x"], wheel["wheel_y"], wheel["wheel_z"]
    vx, vy, vz = wheel["wheel_vx"], wheel["wheel_vy"], wheel["wheel_vz"]
    h, dh_dx = road.height_and_slope(x, y)
    deflection = free_radius - (z - h)
    if deflection <= 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0                   # off the road
    fz = max(0.0, tyre.vertical_stiffness * deflection - tyre.vertical_damping * (vz - dh_dx * vx))
    # the wheel's heading in the road plane: along axle × up (3-2-1 angles)
    yaw, pitch, roll = wheel["wheel_yaw"], wheel["wheel_pitch"], wheel["wheel_roll"]
    ax = math.cos(yaw) * math.sin(pitch) * math.sin(roll) - math.sin(yaw) * math.cos(roll)
    ay = math.sin(yaw) * math.sin(pitch) * math.sin(roll) + math.cos(yaw) * math.cos(roll)
    norm = math.hypot(ax, ay)
    ex, ey = ay / norm, -ax / norm                       # longitudinal unit vector; lateral is (-ey, ex)
    v_long = vx * ex + vy * ey
    v_lat = -vx * ey + vy * ex
    v_roll = spin_rate * tyre.rolling_radius
    slip_long, slip_lat = v_long - v_roll, v_lat        # the contact point's slip velocity
    a2 = max(0.0, 2.0 * free_radius * deflection - deflection ** 2)
    stiffness = 2.0 * tyre.tread_stiffness * a2          # C, N per unit slip
    if tyre.kind == "linear":
        f_long = -stiffness * slip_long / abs(v_long)    # C κ
        f_lat = -stiffness * slip_lat / abs(v_long)      # C tan α
    else:
        f_long, f_lat = _brush(stiffness, tyre.friction * fz, -slip_long / v_roll, -slip_lat / v_roll)
    fx, fy = f_long * ex - f_lat * ey, f_long * ey + f_lat * ex
    arm = z - h                                          # the contact point is this far below the centre
    return fx, fy, fz, arm * fy, -arm * fx


def _brush(stiffness, f_max, sigma_x, sigma_y):
    """Pacejka's isotropic brush model (2006, ch. 3), combined slip: the
    force (F_x, F_y) for the theoretical slips σ_x, σ_y, parabolic pressure
    distribution, one friction coefficient for adhesion and sliding."""
    sigma = math.hypot(sigma_x, sigma_y)
    if sigma == 0.0 or f_max <= 0.0:
        return 0.0, 0.0
    ts = stiffness * sigma / (3.0 * f_max)                # θσ
    magnitude = f_max * (3.0 * ts - 3.0 * ts ** 2 + ts ** 3) if ts < 1.0 else f_max
    return magnitude * sigma_x / sigma, magnitude * sigma_y / sigma


def trimmed_free_radii(tyre: TyreModel, start_loads: dict) -> dict:
    """Each tyre's free radius such that, in the FMU's design pose (wheel
    centres ``tyre.loaded_radius`` above the road), it carries the load the
    FMU's ``*_Fz`` input starts with: r_0 = r_loaded + F_z0 / k_z."""
    return {c: tyre.loaded_radius + start_loads[c] / tyre.vertical_stiffness for c in CORNERS}


def default_fmu(log=print) -> Path:
    """The vehicle's FMI 2.0 Co-Simulation FMU from fmigen's Python API,
    in fmigen's cache directory: the first call builds it (a few minutes),
    later ones repackage the cached derivation (seconds) and rebuild only
    when ``mechanisms/vehicle.py`` or fmigen changed."""
    from fmigen.build.pipeline import build_fmus
    from fmigen.kinematics.groebner import CACHE_DIR
    out = Path(CACHE_DIR) / "examples" / "vehicle.fmu"
    out.parent.mkdir(parents=True, exist_ok=True)
    (path,), _ = build_fmus("vehicle", [(out, "2", "cs")], reuse=True, log=log)
    return Path(path)


class VehicleFMU:
    """The FMU's Co-Simulation instance with the value references the loop uses."""

    def __init__(self, path: Path, workdir: Path):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Slave
        md = read_model_description(str(path))
        self.variables = {v.name: v for v in md.modelVariables}
        missing = [n for n in self._read_names() + self._input_names() if n not in self.variables]
        if missing:
            raise SystemExit(f"{path}: not the vehicle FMU this example drives (no {', '.join(missing[:5])})")
        self.slave = FMU2Slave(guid=md.guid, unzipDirectory=extract(str(path), unzipdir=str(workdir)),
                               modelIdentifier=md.coSimulation.modelIdentifier, instanceName="vehicle")
        self.read_refs = [self.variables[n].valueReference for n in self._read_names()]
        self.input_refs = [self.variables[n].valueReference for n in self._input_names()]

    @staticmethod
    def _read_names():
        return [c + s for c in CORNERS for s in WHEEL_SIGNALS] + [f"der({c}spin)" for c in CORNERS] + \
            list(CHASSIS_SIGNALS)

    @staticmethod
    def _input_names():
        return [c + f for c in CORNERS for f in ("Fx", "Fy", "Fz", "Mx", "My")]

    def start_value(self, name):
        return float(self.variables[name].start)

    def start(self, speed, spin_rate):
        """Instantiate and initialize with the chassis moving forward at
        ``speed``, the wheels spinning at ``spin_rate`` and the suspension at
        rest (the FMU's own start may move a wheel, as after a bump)."""
        s = self.slave
        s.instantiate()
        starts = {"der(xc)": speed} | {f"der({c}spin)": spin_rate for c in CORNERS} | \
            {f"der({c}z)": 0.0 for c in CORNERS}
        s.setReal([self.variables[n].valueReference for n in starts], list(starts.values()))
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        s.exitInitializationMode()

    def read(self):
        values = self.slave.getReal(self.read_refs)
        n = len(WHEEL_SIGNALS)
        wheels = {c: dict(zip(WHEEL_SIGNALS, values[i * n:(i + 1) * n])) for i, c in enumerate(CORNERS)}
        spins = dict(zip(CORNERS, values[4 * n:4 * n + 4]))
        chassis = dict(zip(CHASSIS_SIGNALS, values[4 * n + 4:]))
        return wheels, spins, chassis

    def close(self):
        self.slave.terminate()
        self.slave.freeInstance()


def run(fmu_path: Path, stop_time=2.0, speed=10.0, tyre=TyreModel(), bump_height=0.03, bump_length=0.5,
        bump_ahead=1.0, workdir=None):
    """Drive the FMU over the bump; returns ``{"summary": …, "series": …}``
    (``series``: one list per signal, sampled at every communication point;
    ``*_Fz`` … are the loads the tyre model set for the following step)."""
    import tempfile
    if speed < MIN_SPEED:
        raise ValueError(f"--speed {speed} m/s: the steady-state slip loop needs at least {MIN_SPEED} m/s at 1 ms")
    with tempfile.TemporaryDirectory() as tmp:
        fmu = VehicleFMU(fmu_path, Path(workdir or tmp) / "vehicle")
        start_loads = {c: fmu.start_value(c + "Fz") for c in CORNERS}
        radii = trimmed_free_radii(tyre, start_loads)
        fmu.start(speed, speed / tyre.rolling_radius)
        wheels, spins, chassis = fmu.read()
        road = Road(level=sum(w["wheel_z"] for w in wheels.values()) / 4 - tyre.loaded_radius,
                    start=wheels["fl_"]["wheel_x"] + bump_ahead, height=bump_height, length=bump_length)
        start_x = {c: wheels[c]["wheel_x"] for c in CORNERS}
        h = COMMUNICATION_STEP
        steps = int(round(stop_time / h))
        names = ["t", "xc", "heave", "pitch", "roll", "speed"] + \
            [c + n for c in CORNERS for n in ("Fx", "Fy", "Fz", "travel", "road")]
        series = {n: [] for n in names}
        z0 = chassis["zc"]
        in_step = in_step_cpu = 0.0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for k in range(steps + 1):
            t = k * h
            loads = [tyre_loads(tyre, radii[c], road, wheels[c], spins[c]) for c in CORNERS]
            _record(series, t, chassis, z0, wheels, loads, road)
            if k == steps:
                break
            fmu.slave.setReal(fmu.input_refs, [f for load in loads for f in load])
            before, before_cpu = time.perf_counter(), time.thread_time()
            fmu.slave.doStep(currentCommunicationPoint=t, communicationStepSize=h)
            in_step += time.perf_counter() - before
            in_step_cpu += time.thread_time() - before_cpu
            wheels, spins, chassis = fmu.read()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        fmu.close()
    simulated = steps * h
    summary = {
        "fmu": str(fmu_path), "stop_time": simulated, "step": h, "steps": steps, "speed": speed,
        "tyre": asdict(tyre), "free_radii": radii, "static_loads": start_loads,
        "road": asdict(road),
        # when each left wheel's centre reaches the bump, coasting at the start speed
        "bump_arrival": {c: (road.start - x) / speed for c, x in start_x.items() if c[1] == "l"},
        "real_time_factor": {"loop_wall": simulated / wall, "loop_cpu": simulated / cpu,
                             "dostep_wall": simulated / in_step, "dostep_cpu": simulated / in_step_cpu},
        "loop_seconds": {"wall": wall, "cpu": cpu, "dostep_wall": in_step, "dostep_cpu": in_step_cpu},
    }
    return {"summary": summary, "series": series}


def _record(series, t, chassis, z0, wheels, loads, road):
    series["t"].append(t)
    series["xc"].append(chassis["xc"])
    series["heave"].append(chassis["zc"] - z0)
    series["pitch"].append(chassis["pitchc"])
    series["roll"].append(chassis["rollc"])
    series["speed"].append(chassis["der(xc)"])
    for c, (fx, fy, fz, _, _) in zip(CORNERS, loads):
        series[c + "Fx"].append(fx)
        series[c + "Fy"].append(fy)
        series[c + "Fz"].append(fz)
        series[c + "travel"].append(wheels[c]["travel"])
        series[c + "road"].append(road.height_and_slope(wheels[c]["wheel_x"], wheels[c]["wheel_y"])[0] - road.level)


def plot(result, path):
    """Chassis heave, pitch and roll; the tyres' vertical loads; the
    suspension travels with the road height under each wheel."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    s = result["series"]
    t = s["t"]
    fig, ax = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    ax[0, 0].plot(t, [1e3 * v for v in s["heave"]])
    ax[0, 0].set_ylabel("chassis heave [mm]")
    ax[0, 1].plot(t, [1e3 * v for v in s["pitch"]], label="pitch")
    ax[0, 1].plot(t, [1e3 * v for v in s["roll"]], label="roll")
    ax[0, 1].set_ylabel("chassis angle [mrad]")
    for c in CORNERS:
        ax[1, 0].plot(t, [1e-3 * v for v in s[c + "Fz"]], label=c.rstrip("_"))
        line, = ax[1, 1].plot(t, [1e3 * v for v in s[c + "travel"]], label=f"{c.rstrip('_')} travel")
        if c[1] == "l":
            ax[1, 1].plot(t, [1e3 * v for v in s[c + "road"]], ls=":", color=line.get_color(),
                          label=f"{c.rstrip('_')} road")
    ax[1, 0].set_ylabel("tyre vertical load [kN]")
    ax[1, 1].set_ylabel("suspension travel, road height [mm]")
    for a in ax.flat:
        a.grid(True, alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=8)
    for a in ax[1]:
        a.set_xlabel("time [s]")
    summary = result["summary"]
    fig.suptitle(f"vehicle FMU over a {1e3 * summary['road']['height']:.0f} mm bump under the left wheels at "
                 f"{summary['speed']:g} m/s ({summary['tyre']['kind']} tyres, {1e3 * summary['step']:g} ms steps)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                epilog="Prints the real-time factor: simulated time over the wall time of the "
                                       "whole loop (tyres and FMU calls), over its CPU time, and over the wall "
                                       "time of the doStep calls alone.")
    p.add_argument("--stop-time", type=float, default=2.0, help="simulated seconds (default 2)")
    p.add_argument("--speed", type=float, default=10.0, help=f"forward speed, m/s (default 10, at least {MIN_SPEED:g})")
    p.add_argument("--tyre", choices=("brush", "linear"), default="brush",
                   help="horizontal tyre forces: Pacejka's brush model (default) or its linear small-slip limit")
    p.add_argument("--bump-height", type=float, default=0.03, help="m (default 0.03)")
    p.add_argument("--bump-length", type=float, default=0.5, help="m along the road (default 0.5)")
    p.add_argument("--bump-ahead", type=float, default=1.0,
                   help="the bump starts this far ahead of the front-left wheel centre, m (default 1)")
    p.add_argument("--fmu", type=Path, help="an FMI 2.0 Co-Simulation FMU of mechanisms/vehicle.py already built "
                                            "(default: build it with fmigen into its cache, FMIGEN_CACHE)")
    p.add_argument("--plot", type=Path, metavar="FILE.png", help="draw the response into this file")
    p.add_argument("--json", action="store_true", help="print the summary and the time series as JSON")
    args = p.parse_args(argv)
    if args.speed < MIN_SPEED:
        p.error(f"--speed must be at least {MIN_SPEED:g} m/s (steady-state slip at 1 ms steps)")
    if args.fmu is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # fmigen and mechanisms/ of this checkout
        fmu_path = default_fmu(log=(lambda msg: print(msg, file=sys.stderr)) if args.json else print)
    else:
        fmu_path = args.fmu
    result = run(fmu_path, stop_time=args.stop_time, speed=args.speed, tyre=TyreModel(kind=args.tyre),
                 bump_height=args.bump_height, bump_length=args.bump_length, bump_ahead=args.bump_ahead)
    if args.plot:
        plot(result, args.plot)
    if args.json:
        json.dump(result, sys.stdout)
        print()
        return 0
    _print_summary(result, args.plot)
    return 0


def _print_summary(result, plot_path):
    s, series = result["summary"], result["series"]
    rtf, sec = s["real_time_factor"], s["loop_seconds"]
    print(f"{s['steps']} steps of {1e3 * s['step']:g} ms ({s['stop_time']:g} s simulated) at {s['speed']:g} m/s, "
          f"{s['tyre']['kind']} tyres")
    print(f"real-time factor: loop {rtf['loop_wall']:.1f}x (wall {sec['wall']:.3f} s), "
          f"{rtf['loop_cpu']:.1f}x of CPU ({sec['cpu']:.3f} s); doStep alone {rtf['dostep_wall']:.1f}x "
          f"(wall {sec['dostep_wall']:.3f} s), {rtf['dostep_cpu']:.1f}x of CPU ({sec['dostep_cpu']:.3f} s)")
    for c in CORNERS:
        fz = series[c + "Fz"]
        arrival = s["bump_arrival"].get(c)
        when = f", reaches the bump at {arrival:.3f} s" if arrival is not None else ""
        print(f"  {c.rstrip('_')}: static {fz[0]:.0f} N, load {min(fz):.0f} … {max(fz):.0f} N, "
              f"travel {1e3 * min(series[c + 'travel']):+.1f} … {1e3 * max(series[c + 'travel']):+.1f} mm{when}")
    print(f"chassis: heave {1e3 * min(series['heave']):+.2f} … {1e3 * max(series['heave']):+.2f} mm, "
          f"pitch {1e3 * min(series['pitch']):+.2f} … {1e3 * max(series['pitch']):+.2f} mrad, "
          f"roll {1e3 * min(series['roll']):+.2f} … {1e3 * max(series['roll']):+.2f} mrad")
    if plot_path:
        print(f"plot: {plot_path}")


if __name__ == "__main__":
    sys.exit(main())
