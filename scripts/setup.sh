#!/usr/bin/env bash
# Set up everything fmigen needs on a fresh Debian machine (run as root):
# Singular (only when missing), a virtual environment in .venv, and the package.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v Singular >/dev/null 2>&1; then
    echo "setup: installing Singular (Gröbner engine)" >&2
    apt-get update
    apt-get install -y --no-install-recommends singular
fi
if ! command -v gcc >/dev/null 2>&1; then
    echo "setup: installing gcc" >&2
    apt-get update
    apt-get install -y --no-install-recommends gcc libc6-dev
fi
if ! command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1; then
    echo "setup: installing mingw-w64 (cross-compiles the win64 DLL of every FMU)" >&2
    apt-get update
    apt-get install -y --no-install-recommends gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
fi
if ! command -v valgrind >/dev/null 2>&1; then
    echo "setup: installing valgrind (leak check of the FMU runtime)" >&2
    apt-get update
    apt-get install -y --no-install-recommends valgrind
fi
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
echo "setup: ready ($(.venv/bin/python --version), $(Singular --version 2>&1 | head -n1 | tr -s ' '))" >&2
