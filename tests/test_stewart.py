"""Gough–Stewart platform (paper 000's experiment): 3 s, the paper's forces."""
import json

import numpy as np
import pytest

from conftest import cached_validate
from fmigen.cli import main as cli_main


def test_six_leg_blocks_triangularize_without_iteration(capsys):
    assert cli_main(["triangularize", "stewart", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["blocks"]) == 6
    for k, block in enumerate(out["blocks"], start=1):
        assert block["unknowns"] == [f"alpha{k}", f"beta{k}", f"s{k}"]
        assert block["method"] == "groebner"
        seq = [(s["variable"], s["degree"]) for s in block["sequence"]]
        assert seq == [(f"s{k}", 2), (f"s_beta{k}", 1), (f"c_beta{k}", 2),
                       (f"s_alpha{k}", 1), (f"c_alpha{k}", 1)]


def test_explicit_euler_1ms_keeps_constraints_and_agrees_with_dae_reference():
    r = cached_validate("stewart", stop_time=3.0, solver="euler", step=1e-3)
    assert np.abs(r.fmu_result["constraint_residual"]).max() <= 1e-12
    # the platform yaws under the alternating leg forces
    assert abs(r.fmu_result["psi"][-1]) > 1.0
    # explicit Euler at 1 ms: first-order error, measured 8.4e-4 rad on psi
    assert max(r.max_abs_error.values()) <= 1e-3
    half = cached_validate("stewart", stop_time=3.0, solver="euler", step=5e-4)
    ratio = r.max_abs_error["psi"] / half.max_abs_error["psi"]
    assert 1.8 < ratio < 2.2, ratio   # the error is Euler's, not the model's


def test_rk4_1ms_agrees_with_dae_reference_to_1e_9():
    r = cached_validate("stewart", stop_time=3.0, solver="rk4", step=1e-3)
    assert max(r.max_abs_error.values()) <= 1e-9     # measured 7.8e-11
    assert np.abs(r.fmu_result["constraint_residual"]).max() <= 1e-12


def test_accelerations_depend_on_the_force_amplitude_and_time():
    """The legs' forces are ∓A sin(2πt/3), alternating in sign: summed over
    the coordinates they cancel, so a dependency analysis of ΣF once left A
    and time out of every acceleration's ModelStructure dependencies."""
    from fmigen.fmi import structure
    from fmigen.build.derived import dae_of
    from fmigen.derive.embed import embed
    from fmigen.derive.partition import choose_partition
    from fmigen.build.pipeline import load_mechanism
    dae = dae_of(load_mechanism("stewart"))      # the DAE a build derives, from the DAE cache
    deps = structure.dependencies(embed(dae, choose_partition(dae)))
    for q in ("x", "y", "z", "phi", "theta", "psi"):
        assert "time" in deps.runtime[f"der({q},2)"] and "F1" in deps.runtime[f"der({q},2)"]
        assert "force_amplitude" in deps.initial[f"der({q},2)"]
