"""MuJoCo peer row for docs/benchmarks.md: paper 000's Stewart experiment in
MuJoCo, timed natively (scripts/bench_mujoco.c linked against libmujoco).

    python scripts/bench_mujoco.py --mujoco-dir <site-packages>/mujoco [--repeats 7]

MuJoCo is not a dependency of fmigen; point --mujoco-dir at an installed
`mujoco` wheel (pip install mujoco, any venv).  Writes docs/benchmarks_mujoco.json,
which scripts/bench_report.py adds to docs/benchmarks.md as a peer row.

Model: the platform is a free body (1.5 kg, I = 0.08); each leg a hinge about
X (α_k), a hinge about the rotated Y′ (β_k), the cylinder segment, a slide
joint (s_k) and the piston segment (0.1 kg each, centre 0.5 m from its end
joint, inertia diag(t, t, t/10), t = 0.00625); a `connect` equality joins the
piston tip to the platform point (a, b, c).  The bodies' reference frames are
the assembled home pose (mechanisms/stewart.py leg_guesses), so qpos0 is
consistent.  Gravity 0, motors on the slides with the paper's ±0.1 sin(2πt/3)
N.  MuJoCo's constraints are soft (default solref 0.02 1, solimp) and its
"Euler" integrator is semi-implicit, so its accuracy is of another kind than
the exact embedded formulations'; the row reports both the cost and the
constraint violation, and the final yaw against fmigen's.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "mechanisms"))

import stewart  # noqa: E402


def mjcf(solref=None):
    t = 0.00625
    inertia = f"{t} {t} {t / 10}"
    eq_opts = f' solref="{solref}"' if solref else ""
    legs, eqs, motors = [], [], []
    for k, ((xo, yo, a, b, c), (alpha, beta, s0)) in enumerate(zip(stewart.LEGS, stewart.leg_guesses()), start=1):
        alpha, beta, L = float(alpha), float(beta), float(stewart.L0 + s0)
        legs.append(f"""
    <body name="u{k}" pos="{xo} {yo} 0" euler="{alpha!r} 0 0">
      <joint name="alpha{k}" type="hinge" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="1e-9" diaginertia="1e-12 1e-12 1e-12"/>
      <body name="cyl{k}" euler="0 {beta!r} 0">
        <joint name="beta{k}" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 0.5" mass="0.1" diaginertia="{inertia}"/>
        <body name="pis{k}">
          <joint name="s{k}" type="slide" axis="0 0 1"/>
          <inertial pos="0 0 {L - 0.5!r}" mass="0.1" diaginertia="{inertia}"/>
        </body>
      </body>
    </body>""")
        eqs.append(f'    <connect body1="pis{k}" body2="platform" anchor="0 0 {L!r}"{eq_opts}/>')
        motors.append(f'    <motor joint="s{k}" gear="1"/>')
    x, y, z = stewart.HOME[:3]
    return f"""<mujoco model="stewart">
  <compiler angle="radian"/>
  <option timestep="0.001" integrator="Euler" gravity="0 0 0"/>
  <worldbody>
    <body name="platform" pos="{x} {y} {z}">
      <freejoint name="pose"/>
      <inertial pos="0 0 0" mass="1.5" diaginertia="0.08 0.08 0.08"/>
    </body>{''.join(legs)}
  </worldbody>
  <equality>
{chr(10).join(eqs)}
  </equality>
  <actuator>
{chr(10).join(motors)}
  </actuator>
</mujoco>
"""


def yaw(qpos):
    w, x, y, z = qpos[3:7]
    return math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))


def run(mjdir: Path, repeats: int, solref=None):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d / "stewart.xml").write_text(mjcf(solref))
        lib = next(mjdir.glob("libmujoco.so*"))
        exe = d / "bench_mujoco"
        subprocess.run(["gcc", "-O2", "-std=c99", f"-I{mjdir / 'include'}", str(ROOT / "scripts/bench_mujoco.c"),
                        str(lib), f"-Wl,-rpath,{mjdir}", "-lm", "-o", str(exe)], check=True)
        out = json.loads(subprocess.run([str(exe), str(d / "stewart.xml"), "3", str(repeats)], check=True,
                                        capture_output=True, text=True).stdout)
        ir = None
        if shutil.which("valgrind"):
            cg = d / "cg.out"
            subprocess.run(["valgrind", "--tool=callgrind", "--toggle-collect=run_steps",
                            f"--callgrind-out-file={cg}", str(exe), str(d / "stewart.xml"), "3", "1", "callgrind"],
                           check=True, capture_output=True)
            for line in cg.read_text().splitlines():
                if line.startswith(("summary:", "totals:")):
                    ir = int(line.split()[1]) / out["steps"]
    return {"kinematics": f"MuJoCo {mjdir.parent.name} soft constraints"
                          + (f" (solref {solref})" if solref else " (default solref)"),
            "ms_per_simulated_s": statistics.median(out["cpu_ms_per_run"]) / 3.0,
            "ms_per_simulated_s_min": min(out["cpu_ms_per_run"]) / 3.0,
            "max_step_us": statistics.median(out["step_ns_max"]) / 1e3,
            "median_step_us": out["step_ns_median_last"] / 1e3,
            "instructions_per_step": ir,
            "peak_constraint_violation": out["peak_violation"],
            "final_psi": yaw(out["qpos"]), "final_platform_pos": out["qpos"][:3]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mujoco-dir", required=True, help="the installed mujoco package directory")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    mjdir = Path(args.mujoco_dir)
    ver = {}
    exec((mjdir / "_version.py").read_text(), ver)
    version = ver.get("__version__", "?")
    rows = [run(mjdir, args.repeats), run(mjdir, args.repeats, solref="0.002 1")]
    for r in rows:
        r["kinematics"] = r["kinematics"].replace(f"MuJoCo {mjdir.parent.name}", f"MuJoCo {version}")
    (ROOT / "docs" / "benchmarks_mujoco.json").write_text(json.dumps(
        {"mechanism": "stewart", "mujoco": version, "repeats": args.repeats, "rows": rows}, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
