#!/usr/bin/env bash
# The Python package's tests (docs/python.md): a fresh virtual environment, the test
# requirements pinned in python/requirements-test.txt from PyPI, the package installed from
# ./python (built by maturin with cargo's dev profile, so the crates `cargo test` built are
# reused), the `warrant` binary that the Client's tests serve, then pytest. Any failure fails it.
#
# Environment: PYTHON_VENV (default $CARGO_TARGET_DIR/python-venv, else target/python-venv),
# PYTHON (default python3), CARGO_TARGET_DIR as usual.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
venv="${PYTHON_VENV:-$target/python-venv}"
python="${PYTHON:-python3}"
started=$(date +%s)
say() { echo "python tests [$(( $(date +%s) - started ))s]: $*"; }

rm -rf "$venv"
"$python" -m venv "$venv"
venv="$(cd "$venv" && pwd)"
say "fresh virtual environment in $venv"
# maturin, installed below, is run from the environment by the build without isolation.
export PATH="$venv/bin:$PATH"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-test.txt
say "test requirements installed"
MATURIN_PEP517_ARGS="--profile dev" \
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation "./python"
say "warrant-gate installed from ./python"
cargo build --quiet --locked -p warrant-cli
say "warrant built for the Client's tests"
"$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider
say "pytest passed"
