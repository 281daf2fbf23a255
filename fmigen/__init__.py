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

# sympy's expression cache (an LRU per cached function, 1,000 entries unless
# SYMPY_CACHE_SIZE says otherwise; read when sympy is first imported) is far
# smaller than one derivation's working set: the equations of motion
# differentiate the same rotation products again and again, and the joint
# CSE's pre-pass and its trials rebuild the same subexpressions.  The cache
# only memoizes, so the expressions, and model.c, are the same bytes
# (docs/benchmarks.md, "Measurements behind the code's choices").
if "sympy" not in _sys.modules:
    _os.environ.setdefault("SYMPY_CACHE_SIZE", "100000")

__version__ = "0.1.0"
