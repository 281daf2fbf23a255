#!/usr/bin/env bash
# Set up everything fmigen needs on a fresh Debian machine (run as root):
# the system packages that are missing (Singular, the Gröbner engine, only
# when it is missing; Python's venv; gcc; mingw-w64 for the win64 DLL;
# valgrind for the leak check; libtbb12 for the ecospy test master;
# gcc-multilib (amd64) for a 32-bit build's test;
# chromium and its driver for the report test; clang and tcc, the source
# FMU's compilers in tests/test_portability.py), a virtual environment in
# .venv, and the package.  With --portability also the cross-compilers for
# aarch64 and powerpc, qemu-user and wine64 (hundreds of MB: the four-bar's
# runs under them in tests/test_portability.py, the full matrix in
# scripts/portability.py; the tests skip, naming what is missing, without).
set -euo pipefail
portability=0
[ "${1:-}" = --portability ] && portability=1
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
missing=()
command -v Singular >/dev/null 2>&1 || missing+=(singular)
command -v "$PYTHON" >/dev/null 2>&1 || missing+=(python3)
if ! command -v "$PYTHON" >/dev/null 2>&1 || ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    missing+=(python3-venv)
fi
command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || missing+=(gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
# ecospy (a test master) loads libtbb.so.12
ldconfig -p 2>/dev/null | grep -q 'libtbb\.so\.12' || missing+=(libtbb12)
# gcc -m32 (32-bit x86, x87 arithmetic) for the runtime header's test on amd64
if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] &&
   ! echo 'int main(void) { return 0; }' | gcc -m32 -x c - -o /dev/null >/dev/null 2>&1; then
    missing+=(gcc-multilib)
fi
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v tcc >/dev/null 2>&1 || missing+=(tcc)
if [ $portability = 1 ]; then
    command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
    command -v powerpc-linux-gnu-gcc >/dev/null 2>&1 || missing+=(gcc-powerpc-linux-gnu libc6-dev-powerpc-cross)
    command -v qemu-aarch64 >/dev/null 2>&1 || missing+=(qemu-user)
    [ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null 2>&1 || missing+=(wine64)
fi
# headless Chromium renders the HTML validation report in its test
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    apt-get update
    apt-get install -y --no-install-recommends "${missing[@]}"
fi
if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
echo "setup: ready ($(.venv/bin/python --version), $(Singular --version 2>&1 | head -n1 | tr -s ' '))" >&2
