#!/usr/bin/env bash
# The Python package's tests (docs/python.md): a fresh virtual environment, the test
# requirements pinned in python/requirements-test.txt from PyPI, the package installed from
# ./python (built by maturin with cargo's dev profile, so the crates `cargo test` built are
# reused), the `warrant` binary that the Client's tests serve (as `cargo test --workspace`
# builds it), then pytest; then the same wheel and the framework-free tests on Python 3.9, the
# oldest the package claims, where the machine has one. Any failure fails it.
#
# Environment: PYTHON_VENV (default $CARGO_TARGET_DIR/python-venv, else target/python-venv),
# PYTHON (default python3), PYTHON_OLDEST (default python3.9 on PATH, else pyenv's 3.9),
# CARGO_TARGET_DIR as usual.
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
# One abi3 wheel, built once from ./python, installed in both environments.
wheels="$target/python-wheels"
rm -rf "$wheels"
MATURIN_PEP517_ARGS="--profile dev" "$venv/bin/pip" wheel --quiet --disable-pip-version-check \
  --no-build-isolation --no-deps --wheel-dir "$wheels" "./python"
wheel=$(ls "$wheels"/warrant_gate-*.whl)
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
say "warrant-gate built from ./python and installed ($(basename "$wheel"))"
# The binary `cargo test --workspace` builds, with the same features (after that step, nothing
# is built again; `cargo build -p warrant-cli` would build it again with the package's own).
cargo test --workspace --locked --no-run --quiet
say "warrant built for the Client's tests"
"$venv/bin/python" -m pytest python/tests -q -p no:cacheprovider
say "pytest passed"

# The oldest Python the package claims (requires-python in python/pyproject.toml, the abi3
# floor of python/Cargo.toml): the same wheel, the tests that need no agent framework (both
# frameworks need a newer Python), with python/requirements-oldest.txt.
# A pyenv shim named python3.9 may be on the path without running: each candidate must run.
oldest="${PYTHON_OLDEST:-}"
if [ -z "$oldest" ]; then
  for candidate in python3.9 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.9*/bin/python3.9; do
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 9))' 2>/dev/null; then
      oldest="$candidate"
    fi
  done
fi
if [ -z "$oldest" ]; then
  say "no Python 3.9 on this machine (set PYTHON_OLDEST): the oldest claimed Python is not checked"
  exit 0
fi
old_venv="$venv-oldest"
rm -rf "$old_venv"
"$oldest" -m venv "$old_venv"
"$old_venv/bin/pip" install --quiet --disable-pip-version-check -r python/requirements-oldest.txt "$wheel"
say "$("$old_venv/bin/python" --version) environment in $old_venv"
"$old_venv/bin/python" -m pytest -q -p no:cacheprovider python/tests/test_gate.py python/tests/test_tools.py \
  python/tests/test_inputs.py python/tests/test_async.py python/tests/test_docs.py \
  python/tests/test_threads.py python/tests/test_client.py python/tests/test_retail.py \
  python/tests/test_cli.py
say "pytest passed on the oldest claimed Python"
