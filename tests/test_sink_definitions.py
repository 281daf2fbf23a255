"""codegen.sink_definitions: the generated functions' constants moved down
to where they are needed.  It may only reorder, never change a result:
checked on a function written to trip it (a constant read before a write
of what it reads must stay before that write), and on real mechanisms
against the same model.c generated without it, compiled and run in the
native benchmark harness, bit for bit."""
import json
import subprocess

import pytest

from fmigen.build import derived
from fmigen.generate import codegen
from fmigen.tools.bench import compile_harness
from fmigen.build.pipeline import compile_model, load_mechanism

SOURCE = """int f(double *q, double *out)
{
    const double a = q[0] + 1;
    const double b = a*2;
    const double c = sqrt(q[1]);
    double acc = 0.0;
    const double d = acc + 3;
    q[0] = 5.0;
    acc += 1.0;
    const double unused = c*3;
    const double r = 1.0/sqrt(q[2]); const double s = q[3]*r, k = q[4]*r;
    { /* nested */
        const double e = b*b;
        const double f2 = e + 1;
        out[1] = f2 + s + k;
    }
    out[0] = c + d;
    return 0;
}"""


def test_constants_move_down_to_their_first_use_and_never_past_a_write_of_what_they_read():
    out = codegen.sink_definitions(SOURCE).split("\n")
    where = {name: next(i for i, ln in enumerate(out) if f"double {name} =" in ln)
             for name in ("a", "b", "c", "d", "e", "unused", "r")}
    line = {text: out.index(text) for text in ("    q[0] = 5.0;", "    acc += 1.0;", "    { /* nested */")}
    # a reads q[0]: it stays before q[0] = 5.0; d reads acc: before acc += 1.0
    assert where["a"] < line["    q[0] = 5.0;"] and where["d"] < line["    acc += 1.0;"]
    # b is first needed in the nested block: it moves down to just before it
    assert where["b"] == line["    { /* nested */"] - 1
    # inside the block, e stays before f2; a line of several declarations stays whole
    assert where["e"] < next(i for i, ln in enumerate(out) if "double f2 =" in ln)
    assert "    const double r = 1.0/sqrt(q[2]); const double s = q[3]*r, k = q[4]*r;" in out
    # read by nothing: it stays where it was, not after the return
    assert where["unused"] < out.index("    return 0;")
    assert sorted(out) == sorted(SOURCE.split("\n"))


GUARDED = """int g(double *q, double *out, int c)
{
    if (c) {
        const double a = q[0];
        const double y = a + 1;
        out[0] = y;
    } else {
        const double a = q[1];
        const double y = a + 2;
        out[0] = y;
    }
    const double m = q[2] * 2; /* a comment with a brace { */
    fail("a message with { and ;");
    switch (c) {
    case 0: {
        const double z = m + 1;
        out[1] = z;
        break; }
    default: {
        out[1] = 0.0;
        break; }
    }
    return 0;
}
int h(double *q, double *out)
{
    const double early = q[3];
    const double late = q[4];
#if 1
    q[3] = 0.0;
#endif
    out[0] = 0.0;
    out[2] = early + late;
    return 0;
}"""


def test_an_else_a_case_label_a_brace_in_a_string_and_a_preprocessor_line_stop_it():
    """What the generator does not write today, read safely all the same: a
    constant never crosses "} else {" (both branches define a and y), braces
    and semicolons in comments and strings are not code, and a block with a
    preprocessor line is left as it is (in h, ``early`` must stay before the
    q[3] write inside #if)."""
    out = codegen.sink_definitions(GUARDED).split("\n")
    i_else = out.index("    } else {")
    assert out.index("        const double a = q[0];") < out.index("        const double y = a + 1;") < i_else
    assert i_else < out.index("        const double a = q[1];")
    # m is first read inside the switch's case: it moves down to just before the switch
    assert out.index("    const double m = q[2] * 2; /* a comment with a brace { */") == \
        out.index("    switch (c) {") - 1
    # h: left as it is (late could move, early could not)
    assert out[out.index("    const double early = q[3];") + 1] == "    const double late = q[4];"
    assert out.index("    const double early = q[3];") < out.index("    q[3] = 0.0;")
    assert sorted(out) == sorted(GUARDED.split("\n"))


@pytest.mark.parametrize("name", ["stewart", "landing_gear_dynamic", "fourbar_chain"])
def test_a_sunk_model_runs_bit_for_bit_like_the_model_as_generated(name, tmp_path, monkeypatch):
    """Stewart: the embedding's ~940 constants and the kinematics' blocks;
    the landing gear: its Newton-first block with chord steps and the
    sequences' coefficient functions (mutable a0 += ...); fourbar_chain: γ
    by forward differentiation.  Both builds run 0.3 s of explicit Euler in
    the native harness and must end in the same bits."""
    # one derivation gives both: the generator's source is kept as it was
    # before the pass, and finished as generate() finishes the sunk one
    real_sink, real_finish = codegen.sink_definitions, codegen.finish
    before, finished = [], []
    monkeypatch.setattr(codegen, "sink_definitions", lambda source: before.append(source) or real_sink(source))
    monkeypatch.setattr(codegen, "finish", lambda *args: finished.append(args) or real_finish(*args))
    # generated here, not read from the derived-model cache an earlier build filled
    monkeypatch.setattr(derived, "generated_of", lambda *args: None)
    sunk = compile_model(load_mechanism(name)).generated
    assert len(before) == len(finished) == 1
    identifier, body, *rest = finished[0]
    # the model is that sunk body, finished (finish moves the start values
    # out of it into model_start.c, so model.c no longer starts with it)
    assert body == real_sink(before[0]) and sunk.body == body
    assert sunk.model_c == real_finish(identifier, body, *rest).model_c
    plain = real_finish(identifier, before[0], *rest)
    assert sunk.model_c != plain.model_c
    runs = []
    for label, gen in (("sunk", sunk), ("plain", plain)):
        exe = compile_harness(gen, tmp_path / label)
        r = subprocess.run([str(exe), "0.3", "0.001", "1"], capture_output=True, text=True)
        assert r.returncode == 0, (label, r.stderr)
        runs.append(json.loads(r.stdout))
    for key in ("final_q", "final_v", "peak_violation"):
        assert runs[0][key] == runs[1][key], key
