"""fmigen: closed-loop mechanisms to exact, real-time-capable FMUs."""

import os as _os
import sys as _sys

# One BLAS thread unless the user set it, when fmigen is imported before
# numpy (the CLI always is): fmigen's dense algebra is on small matrices
# (the workspace sweep's Φ_d, the references' per-step solves: up to a few
# hundred rows), where OpenBLAS's threads only spin against the compiler
# and whatever else shares the cores (docs/benchmarks.md, "Measurements
# behind the code's choices").
if "numpy" not in _sys.modules:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        _os.environ.setdefault(_var, "1")

__version__ = "0.1.0"
