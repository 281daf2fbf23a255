"""``fmigen check``: where the generated kinematics can be trusted.

Over the workspace reachable from the start (``workspace.sweep``: Newton
continuation on the full constraints, independent of the Gröbner sequences)
it reports

- **representation singularities**: where a block's primary lex sequence
  degenerates (a leading coefficient or discriminant vanishes at a regular
  configuration) and whether the exact completion covers it, or none does (then the
  run-time Newton fallback does);
- **physical singularities** of the partition: where a continuation path
  stops because Φ_d, the constraint Jacobian of the dependent coordinates,
  is singular (a dead centre, a limit of the workspace), with the
  independent coordinates that are regular there and, when the mechanism
  declares ``switch_independent``, the set the FMU switches to (paper 004);
- **branch consistency**: the generated C kinematics, compiled and called
  along every sweep path as a run would call it (each solve continuing the
  one before), against the continuation's configurations.

``passed`` is the branch consistency: the generated kinematics stays on the
continuation's branch to 1e-8 (unit-scaled) at every swept configuration.
Physical singularities are reported, not failed: at one the FMU reports
Discard naming the block.
"""

from __future__ import annotations

import ctypes
import math
import tempfile
from pathlib import Path

import numpy as np
import scipy.linalg

from fmigen.model import ModelError

#: largest deviation (unit-scaled) of the generated kinematics from the
#: continuation that still counts as the same branch
BRANCH_TOL = 1e-8
#: a swept configuration whose cond(Φ_d) exceeds this multiple of the
#: start's, or one of the last two of a path that stopped at a physical
#: singularity, is near one (a fold where two assemblies meet): there the
#: continuation itself is ill-defined, and a deviation is reported as such
#: rather than as a branch failure
NEAR_SINGULAR = 30.0


#: the model's internal functions and tables that the check calls, exported
#: under names of their own.  An FMU binary hides them (-fvisibility=hidden),
#: and compiling model.c again with other flags would cost as much as the
#: build's compile (gcc -O2 on a large model.c is seconds); instead the
#: library links the build's own object files (fmu.compile_shared's object
#: cache, the same sources and flags) and this file, whose functions see
#: the hidden symbols because they are linked into the same library.  They
#: call the SSE2 copy, which the AVX one equals bit for bit.
EXPORTS_SOURCE = "fmigen_check_exports.c"
EXPORTS = """/* fmigen check: the generated kinematics, exported for ctypes. */
#include "fmigen_runtime.h"
#define FG_CHECK_EXPORT __attribute__((visibility("default")))
FG_CHECK_EXPORT int fmigen_check_kinematics(double t, double *q, const double *p, const FmigenBase *base,
                                            double *sol, double *trig)
{ return fmigen_kinematics(t, q, p, base, sol, trig); }
FG_CHECK_EXPORT void fmigen_check_kinematic_angles(double *q, const double *trig, const FmigenBase *base)
{ fmigen_kinematic_angles(q, trig, base); }
FG_CHECK_EXPORT void fmigen_check_angle_turns(FmigenBase *base, const double *trig)
{ fmigen_angle_turns(base, trig); }
FG_CHECK_EXPORT const double *fmigen_check_sol_start(void) { return fmigen_sol_start; }
FG_CHECK_EXPORT const char *const *fmigen_check_failures(void) { return fmigen_kinematics_failure; }
"""


def _core_library(compiled, workdir: Path, use_cache=True):
    from fmigen.fmi import fmu, variables
    src = workdir / "sources"
    # the instance layer compiles too: it needs the FMU's variable table
    fmu.write_sources(src, compiled.generated, variables.table(fmu.Interface.of(compiled.embedding), 1e-3))
    (workdir / EXPORTS_SOURCE).write_text(EXPORTS)
    lib = workdir / "kinematics.so"
    fmu.compile_shared(src, lib, use_cache=use_cache, extra_sources=[workdir / EXPORTS_SOURCE])
    return ctypes.CDLL(str(lib))


def _base_type(nsol, nq):
    class Base(ctypes.Structure):
        _fields_ = [("continuity", ctypes.c_int), ("t", ctypes.c_double),
                    ("sol", ctypes.c_double * max(nsol, 1)), ("q", ctypes.c_double * nq),
                    ("v", ctypes.c_double * nq), ("turn", ctypes.c_double * nq),
                    ("wind_s", ctypes.c_double * nq)]
    return Base


def branch_consistency(compiled, sweep, log=None, use_cache=True) -> dict:
    """Call the generated ``fmigen_kinematics`` along every sweep path."""
    log = log or (lambda msg: None)
    dae, part = compiled.dae, compiled.partition
    from fmigen.derive.workspace import unit_scales
    scales = unit_scales(dae)
    n = dae.n
    nsol = compiled.generated.macros["NSOL"]
    angle = np.array([c.unit == "rad" for c in dae.mechanism.coordinates])
    worst, failures, solves = 0.0, [], 0
    near_singular, near_worst = 0, 0.0
    # the last two points of a path that stopped at a physical singularity:
    # the continuation could not go on even at 1/16 of its step, so a fold
    # (two assemblies meeting) lies within reach
    ends = {i for p in sweep.physical for i in sweep.paths[p["path"]][-2:]}
    with tempfile.TemporaryDirectory() as tmp:
        lib = _core_library(compiled, Path(tmp), use_cache)
        kin = lib.fmigen_check_kinematics
        Dbl = ctypes.c_double * n
        Base = _base_type(nsol, n)
        kin.argtypes = [ctypes.c_double, Dbl, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(Base),
                        ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
        angles = lib.fmigen_check_kinematic_angles
        angles.argtypes = [Dbl, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(Base)]
        turns = lib.fmigen_check_angle_turns
        turns.argtypes = [ctypes.POINTER(Base), ctypes.POINTER(ctypes.c_double)]
        p_default = (ctypes.c_double * max(1, len(dae.tunable_values)))(*dae.tunable_values or [0.0])
        lib.fmigen_check_sol_start.restype = ctypes.POINTER(ctypes.c_double * max(nsol, 1))
        start_sol = lib.fmigen_check_sol_start().contents
        lib.fmigen_check_failures.restype = ctypes.POINTER(ctypes.c_char_p)
        failure_table = lib.fmigen_check_failures()
        for path in sweep.paths:
            base = Base()
            base.continuity = 0
            ctypes.memmove(base.sol, start_sol, ctypes.sizeof(base.sol))
            for k in range(n):
                base.q[k] = sweep.points[path[0]][k]
            prev = None
            for pos, idx in enumerate(path):
                target = sweep.points[idx]
                q = Dbl(*[target[i] if i in part.independent else math.nan for i in range(n)])
                sol = (ctypes.c_double * max(nsol, 1))()
                trig = (ctypes.c_double * (2 * n))()
                code = kin(1.0 if prev is not None else 0.0, q, p_default, ctypes.byref(base), sol, trig)
                solves += 1
                near = sweep.conditions[idx] > NEAR_SINGULAR * sweep.conditions[0] or idx in ends
                if code:
                    # at a fold the FMU's Discard is the right answer
                    if near:
                        near_singular += 1
                    else:
                        failures.append({"at": {dae.names[i]: float(target[i]) for i in part.independent},
                                         "message": failure_table[code].decode()})
                    break
                # accepted as an FMU accepts a state: the deferred angles'
                # turns first (fmigen_base_accept), then the angles
                turns(ctypes.byref(base), trig)
                angles(q, trig, ctypes.byref(base))
                got = np.array(q[:])
                d = got - target
                d[angle] = (d[angle] + np.pi) % (2 * np.pi) - np.pi
                # initial 0: an open chain has no dependent coordinate to deviate
                dev = float(np.max(np.abs(d[part.dependent]) / scales[part.dependent], initial=0.0))
                if near:
                    near_singular += 1
                    near_worst = max(near_worst, dev)
                    dev = 0.0
                worst = max(worst, dev)
                if dev > BRANCH_TOL and len(failures) < 10:
                    failures.append({"at": {dae.names[i]: float(target[i]) for i in part.independent},
                                     "message": f"left the continuation's branch by {dev:.3g}"})
                # accept, as an FMU step's commit, with the velocities an
                # FMU has there: v_i towards the next point (over dt = 1)
                # and v_d = −Φ_d⁻¹ Φ_i v_i from the velocity solve
                vel = np.zeros(n)
                if pos + 1 < len(path):
                    vel[part.independent] = sweep.points[path[pos + 1]][part.independent] - got[part.independent]
                    J = dae.numeric.Phi_q(0.0, got)
                    vel[part.dependent] = -np.linalg.solve(J[:, part.dependent], J[:, part.independent]
                                                           @ vel[part.independent])
                base.continuity, base.t = 1, 0.0
                ctypes.memmove(base.sol, sol, ctypes.sizeof(base.sol))
                for k in range(n):
                    base.q[k], base.v[k] = got[k], vel[k]
                prev = got
    log(f"branch consistency: {solves} solves of the generated kinematics along the sweep, "
        f"max deviation {worst:.3g}, {len(failures)} failure(s); {near_singular} near a physical "
        f"singularity (max deviation there {near_worst:.3g})")
    return {"consistent": not failures and worst <= BRANCH_TOL, "max_deviation": worst,
            "solves": solves, "failures": failures,
            "near_singular": {"solves": near_singular, "max_deviation": near_worst}}


def regular_partition(dae, q) -> list[str]:
    """Independent coordinates for which Φ_d is best conditioned at q
    (pivoted QR, the same rule the partition stage uses)."""
    J = dae.numeric.Phi_q(0.0, q)
    _, _, piv = scipy.linalg.qr(J, pivoting=True)
    dep = set(piv[:dae.m].tolist())
    return [dae.names[i] for i in range(dae.n) if i not in dep]


def check(spec, use_cache=True, log=None) -> dict:
    from fmigen.build.pipeline import compile_model, prepare_mechanism
    from fmigen.kinematics.sequences import block_name
    log = log or (lambda msg: None)
    mech = prepare_mechanism(spec, log, use_cache)
    if mech.kinematic and not mech.coordinates:
        raise ModelError(f"'{mech.name}' has no coordinates to check")
    # the check needs the symbolic derivation (the DAE, the partition, the
    # triangularization and its sweep, each from its own cache); compile_model
    # takes the C from the derived-model entry a build recorded (and records
    # it for the next build when there was none)
    compiled = compile_model(mech, use_cache=use_cache, log=log)
    dae, tri = compiled.dae, compiled.triangular
    sweep = tri.sweep
    representation = []
    for solved_block in tri.blocks:
        for sp_ in solved_block.singular_points:
            representation.append({k: v for k, v in sp_.items() if k != "index"})
    physical = []
    for p in sweep.physical:
        q = np.array([p["configuration"][n] for n in dae.names])
        entry = {**p, "regular_independent": regular_partition(dae, q), "switching": None}
        # the mechanism's own switch sets (paper 004): the best-conditioned one there
        J = dae.numeric.Phi_q(0.0, q)
        best = None
        for names in mech.switch_independent or []:
            dep = [i for i in range(dae.n) if dae.names[i] not in names]
            cond = float(np.linalg.cond(J[:, dep]))
            if best is None or cond < best["condition_number"]:
                best = {"independent": list(names), "condition_number": cond}
        entry["switching"] = best
        physical.append(entry)
    branch = branch_consistency(compiled, sweep, log, use_cache)
    return {"mechanism": mech.name,
            "independent": [dae.names[i] for i in compiled.partition.independent],
            "swept_configurations": int(len(sweep.points)),
            "sequences": {"{" + ", ".join(dae.names[i] for i in solved_block.block.unknowns) + "}":
                          [s.label for s in solved_block.sequences] or [f"newton ({solved_block.reason})"] for solved_block in tri.blocks},
            "representation_singularities": representation,
            "precision_loss": {block_name(dae, solved_block.block): solved_block.precision_loss for solved_block in tri.blocks
                               if solved_block.precision_loss.get("configurations")},
            "physical_singularities": physical,
            "branch_consistent": branch["consistent"],
            "branch_max_deviation": branch["max_deviation"],
            "branch_failures": branch["failures"],
            "branch_near_physical_singularity": branch["near_singular"],
            "passed": bool(branch["consistent"])}


def format_report(r: dict) -> str:
    lines = [f"{r['mechanism']}: independent {', '.join(r['independent'])}, "
             f"{r['swept_configurations']} swept configurations"]
    for block, seqs in r["sequences"].items():
        lines.append(f"  block {block}: " + "; ".join(seqs))
    lines.append(f"  representation singularities: {len(r['representation_singularities'])}")
    for s in r["representation_singularities"]:
        at = ", ".join(f"{k}={v:.6g}" for k, v in s["at"].items())
        lines.append(f"    {s['block']} at {at}: {s['condition']}; "
                     f"covered by {s['covered_by'] or 'the run-time Newton fallback'}")
    for block, loss in r["precision_loss"].items():
        lines.append(f"  precision loss of {block}'s primary sequence in double precision at "
                     f"{loss['configurations']} of {loss['of']} configurations (up to {loss['max_error']:.3g}; "
                     "the run-time Newton polish repairs it)")
    lines.append(f"  physical singularities of the partition: {len(r['physical_singularities'])}")
    for p in r["physical_singularities"]:
        at = ", ".join(f"{k}={v:.6g}" for k, v in p["at"].items())
        cond = f"cond(Φ_d) {p['condition_number']:.3g}" if p["condition_number"] else "Φ_d singular"
        lines.append(f"    at {at}: {p['kind']} ({cond}); regular there with independent "
                     f"{', '.join(p['regular_independent'])}")
        if p["switching"]:
            sw = p["switching"]
            lines.append(f"      the FMU switches to {', '.join(sw['independent'])} (cond(Φ_d) there "
                         f"{sw['condition_number']:.3g}; Co-Simulation)")
    lines.append(f"  branch consistency of the generated kinematics: max deviation "
                 f"{r['branch_max_deviation']:.3g}" + ("" if r["branch_consistent"] else
                                                         f", {len(r['branch_failures'])} failure(s)"))
    for f in r["branch_failures"][:5]:
        at = ", ".join(f"{k}={v:.6g}" for k, v in f["at"].items())
        lines.append(f"    at {at}: {f['message']}")
    lines.append("PASSED" if r["passed"] else "FAILED")
    return "\n".join(lines)
