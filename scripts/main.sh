#!/usr/bin/env bash
# The main job end to end: set up, build the four-bar FMU from its bodies and
# joints (mechanisms/fourbar_joints.py), and validate it in fmpy against both
# references: the DAE of the model stage (IDA) and the Cartesian one written
# from the joint description alone, plus the energy balance; an HTML report
# beside the plot (exit status 1 if anything fails).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/fmigen build fourbar_joints -o out/fourbar_joints.fmu
.venv/bin/fmigen validate fourbar_joints --fmu out/fourbar_joints.fmu --check-reference \
    --plot out/fourbar_validation.png --report out/fourbar_validation.html "$@"
