"""The runtime's dense LU against numpy, on matrices that need row pivoting."""
import subprocess
from pathlib import Path

import numpy as np

RUNTIME = Path(__file__).resolve().parent.parent / "fmigen" / "runtime"

HARNESS = r"""
#include <stdio.h>
#include "fmigen_runtime.h"
int main(void) {
    int n; double A[400], b[20]; int piv[20];
    while (scanf("%d", &n) == 1) {
        for (int i = 0; i < n * n; i++) scanf("%lf", &A[i]);
        for (int i = 0; i < n; i++) scanf("%lf", &b[i]);
        if (fmigen_lu_factor(n, A, piv)) { printf("singular\n"); continue; }
        fmigen_lu_solve(n, A, piv, b);
        for (int i = 0; i < n; i++) printf("%.17g ", b[i]);
        printf("\n");
    }
    return 0;
}
"""


def test_lu_solve_matches_numpy(tmp_path):
    (tmp_path / "model_config.h").write_text("#define NQ 1\n#define NC 0\n#define NI 1\n#define NP 0\n"
                                             "#define NU 0\n#define NY 0\n#define NSOL 0\n")
    (tmp_path / "h.c").write_text(HARNESS)
    exe = tmp_path / "lu"
    subprocess.run(["gcc", "-O2", "-std=c99", f"-I{tmp_path}", f"-I{RUNTIME}", str(tmp_path / "h.c"),
                    str(RUNTIME / "fmigen_core.c"), "-o", str(exe), "-lm", "-no-pie",
                    "-Wl,--unresolved-symbols=ignore-all"], check=True)
    rng = np.random.default_rng(1)
    cases, expected = [], []
    for n in (2, 3, 5, 8, 18):
        for _ in range(5):
            A = rng.normal(size=(n, n))
            A[0, 0] = 1e-6  # force pivoting
            b = rng.normal(size=n)
            cases.append(f"{n} " + " ".join(repr(float(v)) for v in A.ravel()) + " " + " ".join(repr(float(v)) for v in b))
            expected.append(np.linalg.solve(A, b))
    out = subprocess.run([str(exe)], input="\n".join(cases), capture_output=True, text=True, check=True)
    assert len(out.stdout.splitlines()) == len(expected)
    for line, x in zip(out.stdout.splitlines(), expected):
        got = np.array([float(v) for v in line.split()])
        assert np.abs(got - x).max() <= 1e-10 * (1 + np.abs(x).max())
