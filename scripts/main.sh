#!/usr/bin/env bash
# The main job end to end: set up, build the four-bar FMU, and validate it in
# fmpy against the independent DAE reference (exit status 1 if it fails).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
.venv/bin/fmigen build fourbar -o out/fourbar.fmu
.venv/bin/fmigen validate fourbar --check-reference --plot out/fourbar_validation.png "$@"
