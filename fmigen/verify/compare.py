"""The one comparison of an FMU's coordinate with a reference's, shared by
``validate`` (IDA, Cartesian), the MuJoCo peer (mujoco_peer.py) and the HTML
report."""
from __future__ import annotations

import numpy as np


def coordinate_error(fmu, ref):
    """|FMU − reference| at every output point: the one comparison of a
    coordinate, in the text (the maxima), the plots and the report.  Angles
    too are compared directly, without a modulo: the FMU's angles are
    continuous, as IDA's, the Cartesian reference's (its winding angles) and
    MuJoCo's hinge positions are, so a turn the FMU missed or added is an
    error of 2π, not a pass."""
    return np.abs(np.asarray(fmu, dtype=float) - np.asarray(ref, dtype=float))
