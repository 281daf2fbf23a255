#!/usr/bin/env bash
# Set up and run the whole test suite (what CI runs), across every core
# (pytest-xdist; a test file's tests stay on one worker, so its
# module-scoped builds are made once, but for the longest file, whose tests
# are shared out one by one: tests/conftest.py, work_unit; the longest
# units start first: LONG_FIRST).  --quick: the quick tier only, for
# edit loops (tests/conftest.py, QUICK: the four-bar, slider-crank and Stewart
# end to end, and the unit tests).  Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
if [ "${1:-}" = "--quick" ]; then
    shift
    select=(-m quick)
fi
bash scripts/setup.sh
.venv/bin/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder "${select[@]}" "$@"
