"""The printer's C and Python spellings of a user's expression: strict C99,
fmigen's own elementary functions, and the same doubles in both."""
import math
import subprocess
from pathlib import Path

import sympy as sp

from fmigen.generate import elementary
from fmigen.generate.printer import c, pyexpr

RUNTIME = Path(__file__).resolve().parent.parent / "fmigen" / "runtime"


def test_constants_and_elementary_functions_print_as_strict_c99_with_the_python_bits(tmp_path):
    """sympy's C printer writes M_PI_2, M_LN10, M_SQRT2, M_E, ... for the
    constants it knows, which -std=c99 does not define (nor Python's math):
    an output log(g, 10) did not compile.  They print as their doubles now,
    and tan, exp and log as fmigen_tan, fmigen_exp and fmigen_log, never
    libm's (whose last bit differs between C libraries).  Compiled with
    gcc -std=c99 -pedantic -Werror and evaluated by the Python runtime's
    spelling: the same bits."""
    x = sp.Symbol("x[0]")
    exprs = [sp.log(x, 10), sp.pi / 2 + x, sp.sqrt(2) * x / 2, 2 / sp.pi * x, sp.E * x, sp.exp(x) - sp.log(2),
             sp.tan(x) + sp.EulerGamma, sp.GoldenRatio * sp.exp(-x ** 2), 1 / sp.log(2) * sp.cot(x)]
    printed = [c(e) for e in exprs]
    for e, p in zip(exprs, printed):
        assert "M_" not in p and "const" not in p and not any(f"{f}(" in p.replace(f"fmigen_{f}(", "")
                                                              for f in ("tan", "exp", "log")), (e, p)
    (tmp_path / "model_config.h").write_text("#define MODEL_IDENTIFIER h\n#define NQ 1\n#define NC 0\n#define NI 1\n#define NP 0\n"
                                             "#define NU 0\n#define NY 0\n#define NSOL 0\n")
    body = "\n".join(f'        printf("%a\\n", {p});' for p in printed)
    (tmp_path / "h.c").write_text('#include <stdio.h>\n#include "fmigen_runtime.h"\nint main(void) {\n'
                                  '    double x[1];\n    while (scanf("%la", &x[0]) == 1) {\n'
                                  f"{body}\n    }}\n    return 0;\n}}\n")
    exe = tmp_path / "h"
    subprocess.run(["gcc", "-O2", "-std=c99", "-pedantic", "-Wall", "-Werror", f"-I{tmp_path}", f"-I{RUNTIME}",
                    str(tmp_path / "h.c"), str(RUNTIME / "fmigen_core.c"), "-o", str(exe), "-lm", "-no-pie",
                    "-Wl,--unresolved-symbols=ignore-all"], check=True)
    xs = [0.3, 1.7, 2.5e-3, 11.0]
    out = subprocess.run([str(exe)], input="".join(f"{v.hex()}\n" for v in xs), capture_output=True, text=True,
                         check=True).stdout.split()
    namespace = {"sqrt": math.sqrt, **{n: getattr(elementary, n) for n in dir(elementary) if n.startswith("fmigen_")}}
    for k, v in enumerate(xs):
        for j, e in enumerate(exprs):
            py = eval(pyexpr(e), dict(namespace, x=[v]))   # noqa: S307 - the printer's own output
            assert float.fromhex(out[k * len(exprs) + j]) == py, (e, v)
            assert math.isclose(py, float(e.subs(x, v)), rel_tol=1e-14), (e, v)
