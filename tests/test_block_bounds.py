"""A block too large for a lex Gröbner basis is solved by Newton, decided
from its polynomials before any engine run (issue 33, item 4): the same
module gives the same C on any machine, and the build does not spend
Singular's 600 s safety limit first.

The block is the double wishbone's upright (``tests/corpus/double_wishbone.py``):
the upper arm's angle and the lower ball joint's three Euler angles under
the upper ball's three rows and the tie rod's distance row.  Its Bézout
number (degrees 3, 3, 3, 6 and four circles of degree 2) is 2,592; its
basis did not finish within 600 s of CPU time, which made the build an
error after ten minutes.
"""
import pytest

from fmigen.kinematics import triangular
from fmigen.build.derived import dae_of
from fmigen.derive.partition import choose_partition
from fmigen.build.pipeline import prepare_mechanism

from tests.corpus.double_wishbone import build

UPRIGHT = {"upper", "ball_l_z", "ball_l_y", "ball_l_x"}


@pytest.fixture(scope="module")
def double_wishbone():
    m = prepare_mechanism(build())
    # the DAE a build derives (derived.dae_of: from the DAE cache when the
    # suite derived this mechanism before: tests/test_start_pose.py does)
    dae = dae_of(m)
    return dae, choose_partition(dae)


def test_an_oversized_block_is_newton_with_one_warning_and_no_engine_run(double_wishbone, monkeypatch):
    dae, part = double_wishbone
    engine = triangular.groebner_lex
    asked = []

    def only_small_blocks(polys, variables, *args, **kwargs):
        names = {str(v) for v in variables}
        asked.append(names)
        assert not names & {"c_upper", "s_upper"}, "Singular was run on the upright block"
        return engine(polys, variables, *args, **kwargs)
    monkeypatch.setattr(triangular, "groebner_lex", only_small_blocks)
    lines = []
    tri = triangular.triangularize(dae, part, log=lines.append, cover=False)
    by_unknowns = {frozenset(dae.names[i] for i in solved_block.block.unknowns): solved_block for solved_block in tri.blocks}
    upright = by_unknowns[frozenset(UPRIGHT)]
    assert upright.method == "newton"
    assert "Bézout number 2592 (degrees 3, 3, 3, 6, 2, 2, 2, 2) > 1024" in upright.reason
    # the other blocks (the tie rod's two angles) still get their sequences
    assert [solved_block.method for solved_block in tri.blocks if solved_block is not upright] == ["groebner", "groebner"]
    assert len(asked) == 2
    warnings = [line for line in lines if line.startswith("warning:")]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert warnings[0].startswith("warning: block {upper, ball_l_z, ball_l_y, ball_l_x}: Bézout number 2592")
    # the start is the design pose, every joint coordinate 0, solved by that Newton block
    assert max(abs(tri.start[n]) for n in UPRIGHT) < 1e-12


def test_the_bound_leaves_the_shipped_blocks_to_groebner(monkeypatch):
    """The largest shipped block whose basis finishes (the landing gear's,
    Bézout number 256) is still triangularized."""
    dae = dae_of(prepare_mechanism("landing_gear"))
    tri = triangular.triangularize(dae, choose_partition(dae), cover=False)
    assert [solved_block.method for solved_block in tri.blocks] == ["groebner"]
