"""Argument types of the command line that the verbs' own parsers share
(cli.py; ``fmigen sweep``'s in tools/sweep.py, ``fmigen bundle``'s in
verify/bundle.py), so those modules need not import the CLI."""
from __future__ import annotations

import argparse
import math


def positive(x):
    v = float(x)
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (got {x})")
    return v
