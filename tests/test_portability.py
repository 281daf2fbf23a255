"""The same bits on other compilers and platforms (docs/portability.md):
an FMU's sources built with clang -std=c99 -pedantic -Wall -Wextra
-Werror and with tcc, its win64 DLL under wine, its sources cross-compiled
for aarch64 and big-endian powerpc under qemu-user -- each run by
fmigen/runtime/fmi2_master.c for 2,000 steps of 1 ms, every Real variable
after every step compared bit for bit with the shipped linux64 binary.
scripts/portability.py is the full matrix; a platform whose tools are not
installed is skipped, naming them."""
import importlib.util
from pathlib import Path

import pytest

from fmigen.build.pipeline import build_fmu
from fmigen.fmi import fmu

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("portability", ROOT / "scripts" / "portability.py")
portability = importlib.util.module_from_spec(spec)
spec.loader.exec_module(portability)


class _Built(dict):
    """Each mechanism's FMU, built the first time a test asks for it; the
    four-bar with its win64 DLL (the suite leaves the DLL out elsewhere)."""

    def __init__(self, into: Path):
        super().__init__()
        self.into = into

    def __missing__(self, mech):
        windows = mech == "fourbar" and fmu.mingw_available()
        self[mech] = build_fmu(mech, self.into / f"{mech}.fmu", windows=windows)[0]
        return self[mech]


@pytest.fixture(scope="module")
def fmus(tmp_path_factory):
    return _Built(tmp_path_factory.mktemp("portability"))


def _one(fmus, mech, platform):
    gone = portability.missing_tools(platform)
    if gone:
        pytest.skip(f"{platform}: not installed: {', '.join(gone)} (scripts/setup.sh --portability)")
    [row] = portability.check(Path(fmus[mech]), [platform], steps=2000)
    assert row["status"] != "failed", row["reason"]
    return row


@pytest.mark.parametrize("mech", ["fourbar", "stewart", "slider_crank_from_slider", "landing_gear",
                                  "quarter_car_joints"])
def test_sources_build_pedantic_with_clang_and_give_the_shipped_bits(fmus, mech):
    """Before: the four-bar's model.c failed -Werror (an unused parameter),
    and noinline was written unguarded; slider_crank_from_slider's failed
    -Wunused-variable on two adjugate entries its velocities function
    never reads; a kinematic mechanism's (the landing gear's) failed on the
    integrator fmigen_core.c does not use and the accelerations its
    right-hand side does not write; the quarter car's on entries of M·B
    that Bᵀ(M B) never reads."""
    row = _one(fmus, mech, "clang-pedantic")
    assert row["status"] == "identical", row


@pytest.mark.parametrize("mech", ["fourbar", "stewart", "eight_link"])
def test_sources_build_with_tcc_and_give_the_shipped_bits(fmus, mech):
    """tcc has no vector types: the Stewart platform's leg blocks run their
    scalar code.  Their solution has the lanes' bits; the residual rows do
    not (the lanes sum each row's terms in another order), so
    constraint_residual -- and nothing else -- differs, by round-off.  The
    eight-link's motion runs into a singular configuration: identical up to
    the doStep that fails, and that one fails with tcc too (before: the
    check stopped at the shipped binary's failure and compared nothing)."""
    row = _one(fmus, mech, "tcc")
    if mech == "eight_link":
        # the Newton solves end at their round-off floor (STALL_STOP): doStep
        # 939, which wandered to the iteration cap before, converges
        assert row["reference_stopped"] == "doStep 940 failed" and row["values"] == 939 * 18, row
    if mech != "stewart":
        assert row["status"] == "identical", row
    else:
        assert set(row["max_abs_by_name"]) <= {"constraint_residual"}, row["max_abs_by_name"]
        assert row["max_abs_by_name"].get("constraint_residual", 0.0) < 4e-15, row


@pytest.mark.parametrize("platform", ["qemu-aarch64", "qemu-powerpc", "wine-win64"])
def test_fourbar_on_other_platforms_gives_the_shipped_bits(fmus, platform):
    """The four-bar's sources cross-compiled for aarch64 and powerpc, and
    its win64 DLL under wine.  Before: aarch64 and powerpc (gcc contracts
    a*b + c into fused multiply-adds there) differed from step 2 by up to
    4.6e-14; the DLL gave the shipped bits already."""
    row = _one(fmus, "fourbar", platform)
    assert row["status"] == "identical", row


def test_asin_acos_atan_outputs_give_the_shipped_bits_under_wine(tmp_path):
    """The generated code's asin, acos and atan are fmigen's own
    (fmigen_asin, fmigen_acos, fmigen_atan), not the C library's: the
    win64 DLL calls the Windows C runtime's (msvcrt.dll; under wine,
    wine's), which rounds them otherwise than glibc.
    Before: the vehicle's DLL differed in its four wheel pitches (asin) by
    up to 6.9e-18, and this four-bar's (tests/data/fourbar_inverse_trig.py)
    in 359 of its 32,000 values, in all three outputs."""
    gone = portability.missing_tools("wine-win64")   # mingw-w64's gcc among them
    if gone:
        pytest.skip(f"wine-win64: not installed: {', '.join(gone)} (scripts/setup.sh --portability)")
    path = build_fmu(str(ROOT / "tests" / "data" / "fourbar_inverse_trig.py"), tmp_path / "fourbar_inverse_trig.fmu",
                     windows=True)[0]
    [row] = portability.check(Path(path), ["wine-win64"], steps=2000)
    assert row["status"] == "identical" and row["values"] == 2000 * 16, row


@pytest.fixture(scope="module")
def exp_log_tan_fmu(tmp_path_factory):
    """tests/data/fourbar_exp_log_tan.py's FMU, with its win64 DLL when
    mingw-w64 is installed."""
    return build_fmu(str(ROOT / "tests" / "data" / "fourbar_exp_log_tan.py"),
                     tmp_path_factory.mktemp("exp_log_tan") / "fourbar_exp_log_tan.fmu",
                     windows=fmu.mingw_available())[0]


@pytest.mark.parametrize("platform", ["wine-win64", "qemu-aarch64", "qemu-powerpc"])
def test_exp_log_tan_give_the_shipped_bits_on_other_platforms(exp_log_tan_fmu, platform):
    """The generated code's tan, exp and log are fmigen's own (fmigen_tan,
    fmigen_exp, fmigen_log), not the C library's, in a four-bar's crank
    moment (every step) and outputs (tests/data/fourbar_exp_log_tan.py).
    Before: its DLL under wine differed in 110 of 32,000 values from step
    7 (built without the log10 output, whose M_LN10 did not compile under
    -std=c99), tan_out by up to 1.8e-15 and log_out by 2.2e-16, and on
    powerpc glibc's static libm died with an illegal instruction."""
    row = _one({"fourbar_exp_log_tan": exp_log_tan_fmu}, "fourbar_exp_log_tan", platform)
    assert row["status"] == "identical" and row["values"] == 2000 * 17, row


@pytest.mark.parametrize("platform", ["wine-win64", "qemu-aarch64", "qemu-powerpc"])
def test_a_linux64_state_restores_or_is_refused_naming_the_byte_order(fmus, platform):
    """A state serialized by the shipped linux64 binary after 100 steps and
    restored on another platform: the same little-endian layout (the win64
    DLL, aarch64) steps on with the linux64 run's bits; big-endian powerpc
    refuses it, saying why.  Before: the master could not carry a state, and
    powerpc's refusal said only that the bytes were not an fmigen state."""
    gone = portability.missing_tools(platform)
    if gone:
        pytest.skip(f"{platform}: not installed: {', '.join(gone)} (scripts/setup.sh --portability)")
    row = portability.carry_state(Path(fmus["fourbar"]), platform, steps=200, at=100)
    if platform == "qemu-powerpc":
        assert row["status"] == "refused", row
        assert "serialized on a little-endian platform and this one is big-endian" in row["reason"], row
    else:
        assert row["status"] == "identical" and row["values"] == 100 * 13, row


def test_the_fmu_documentation_states_the_iteration_caps(fmus):
    """The caps a HIL target budgets for are in the FMU itself, with the
    numbers the runtime compiles in (the headers' defines and the Newton
    generator's chord steps)."""
    import zipfile
    from fmigen.generate.codegen_newton import iteration_caps
    cap = iteration_caps()
    with zipfile.ZipFile(fmus["fourbar"]) as z:
        html = z.read("documentation/index.html").decode()
    for phrase in (f"at most {cap['newton']} iterations per attempt", f"at most {cap['polish']};",
                   f"at most {cap['poly_newton']} Newton steps", f"at most {cap['aberth']} Aberth iterations"):
        assert phrase in html, (phrase, html)
