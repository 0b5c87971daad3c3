#!/usr/bin/env bash
# The whole test suite: the README's second command, and what CI runs (`.ci/run` installs the
# system packages if missing, then runs this). In order: the house rules (format, clippy, the API
# documentation), `cargo test --workspace`, the Python package's pytest
# (scripts/python-tests.sh), every benchmark once as a smoke test, the corpora through the
# binary, and the real-model tier (scripts/real-model-tier.sh). Any failure stops it, non-zero.
#
# It needs only what the README names (checked first, all missing ones named at once): Rust with
# rustfmt and clippy, a C compiler, git, PostgreSQL on 127.0.0.1:5432 with trust auth and a
# database `test` (and psql), Python 3 with venv, Node.js 20 or newer with npm, Chromium at
# /usr/bin/chromium, and the sqlite3 command line. Everything else comes from the package
# registries into target/, installed while the workspace builds and again only when its pin
# changed: the MCP tests' Python (target/mcp-venv, from crates/warrant-cli/tests/mcp/requirements.txt),
# the trace tests' OTLP receiver (target/otlp-venv, from crates/warrant-cli/tests/otlp/requirements.txt),
# the MCP conformance suite (target/mcp-conformance, from its package-lock.json), the real-model
# tier's server and model (target/real-model); the review page's test installs playwright-core
# into target/browser itself, and the Python tests make their virtual environments fresh under
# target/ on every run.
#
# Every cargo step shares one build of the workspace per profile: the test profile (tests,
# benchmarks as tests, the corpus step's binary, the real-model test with the workspace's own
# features) and clippy's check (which `cargo doc` reuses); only maturin's build of the Python
# package resolves features of its own (the Python crate alone), and builds its part again.
#
# Environment: CARGO_TARGET_DIR is honoured by cargo and the scripts; the tests' own variables
# (WARRANT_MCP_PYTHON, WARRANT_MCP_CONFORMANCE, WARRANT_OTLP_PYTHON) are set here to what this script installed.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
target="${CARGO_TARGET_DIR:-target}"
started=$(date +%s)
step() { echo "test [$(( $(date +%s) - started ))s]: $*"; }

# --- What the machine must have: each missing one named, then stop.
missing=()
need() { missing+=("$1"); }
command -v cargo >/dev/null || need "Rust (cargo and rustc; https://rustup.rs)"
if command -v cargo >/dev/null; then
  cargo fmt --version >/dev/null 2>&1 || need "rustfmt (rustup component add rustfmt)"
  cargo clippy --version >/dev/null 2>&1 || need "clippy (rustup component add clippy)"
fi
command -v cc >/dev/null || need "a C compiler as cc (Debian: build-essential), for linking and the bundled SQLite"
command -v git >/dev/null || need "git"
command -v psql >/dev/null || need "psql, PostgreSQL's client (Debian: postgresql-client)"
if command -v psql >/dev/null \
  && ! psql -h 127.0.0.1 -p 5432 -U postgres -d test -w -qAt -c 'select 1' >/dev/null 2>&1; then
  need "PostgreSQL on 127.0.0.1:5432 with trust auth for user postgres and a database test (psql -h 127.0.0.1 -U postgres -d test fails)"
fi
{ command -v python3 >/dev/null && python3 -c 'import venv, ensurepip' 2>/dev/null; } \
  || need "Python 3 with venv (Debian: python3-venv)"
{ command -v node >/dev/null && node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; } \
  || need "Node.js 20 or newer (Debian: nodejs)"
command -v npm >/dev/null || need "npm (Debian: npm)"
[ -x /usr/bin/chromium ] || need "Chromium at /usr/bin/chromium (Debian: chromium)"
command -v sqlite3 >/dev/null || need "the sqlite3 command line (Debian: sqlite3)"
if [ "${#missing[@]}" -gt 0 ]; then
  echo "scripts/test.sh: this machine lacks what the tests need:" >&2
  printf '  - %s\n' "${missing[@]}" >&2
  exit 1
fi

# --- What comes from the registries, into target/, in the background while the workspace builds
# (the tests that need it start after the house rules). Each is installed again only when its pin
# changed; the pin it was installed from is kept beside it once the install succeeded.
mkdir -p "$target"
target="$(cd "$target" && pwd)"
provision() {
  local t0 conformance lock
  t0=$(date +%s)
  # A virtual environment VENV with the pinned requirements REQ, made again only when they
  # changed. One moved from another path keeps the old one in its scripts, so its path is part
  # of the pin.
  venv_from() {
    local venv="$1" req="$2" stamp
    stamp="$(printf '%s\n' "$venv"; cat "$req")"
    if [ "$(cat "$venv/.installed" 2>/dev/null)" != "$stamp" ]; then
      echo "installing $req into $venv"
      rm -rf "$venv"
      python3 -m venv "$venv"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
      printf '%s' "$stamp" >"$venv/.installed"
    fi
  }
  # The MCP tests' Python: the `mcp` package and its dependencies, pinned.
  venv_from "$target/mcp-venv" crates/warrant-cli/tests/mcp/requirements.txt
  # The trace tests' OTLP receiver: the official `opentelemetry-proto` classes, pinned.
  venv_from "$target/otlp-venv" crates/warrant-cli/tests/otlp/requirements.txt
  # The official MCP conformance suite and its reference server.
  conformance="$target/mcp-conformance"
  lock=crates/warrant-cli/tests/mcp/conformance/package-lock.json
  if ! cmp -s "$lock" "$conformance/node_modules/.installed-lock.json"; then
    echo "installing the MCP conformance suite into $conformance"
    rm -rf "$conformance"
    mkdir -p "$conformance"
    cp crates/warrant-cli/tests/mcp/conformance/package.json "$lock" "$conformance/"
    (cd "$conformance" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$lock" "$conformance/node_modules/.installed-lock.json"
  fi
  # The real-model tier's server and model.
  REAL_MODEL_DIR="$target/real-model" scripts/real-model-tier.sh --install
  echo "provisioned in $(( $(date +%s) - t0 ))s"
}
provision_log="$target/provision.log"
setsid nice -n 10 bash -c "set -euo pipefail; $(declare -f provision); target='$target'; provision" \
  >"$provision_log" 2>&1 &
provisioning=$!
# A step that fails stops the installs too (setsid made them a process group of their own).
trap 'kill -- "-$provisioning" 2>/dev/null || true' EXIT
export WARRANT_MCP_PYTHON="$target/mcp-venv/bin/python"
export WARRANT_MCP_CONFORMANCE="$target/mcp-conformance"
export WARRANT_OTLP_PYTHON="$target/otlp-venv/bin/python"

# --- The house rules, held by tools rather than by discipline: one format (rustfmt.toml) for the
# workspace and the fuzz targets, and clippy with every warning an error. The clippy.toml of
# warrant-core and of warrant-contract forbid every IO entry point (files, network, processes,
# environment, clocks, sleeping, the standard streams), so this step is where "warrant-core and
# warrant-contract do no IO" is checked.
step "house rules"
cargo fmt --all --check
cargo fmt --check --manifest-path fuzz/Cargo.toml
cargo clippy --workspace --all-targets --locked -- -D warnings

# The API documentation builds without a warning: every intra-doc link resolves, and the library
# crates' `#![warn(missing_docs)]` leaves nothing public undocumented. With the examples, whose
# dev-dependencies make cargo resolve features as clippy's `--all-targets` did, so the
# dependencies' checked metadata clippy just built is reused rather than built again.
step "API documentation"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --lib --bins --examples --locked

step "waiting for the installs from the registries"
if ! wait "$provisioning"; then
  echo "installing the tests' packages failed; its log ($provision_log):" >&2
  cat "$provision_log" >&2
  exit 1
fi
cat "$provision_log"

# Unit, integration and doc tests (the doc tests hold the compile-fail checks that no code outside
# the ladder can make a promotion); it also builds every library crate's `examples/*.rs`.
step "the test suite"
cargo test --workspace --locked

# The Python package: a fresh virtual environment installs it from ./python and passes its
# pytest suite (the adapters' tests and the retail counts through Python among them).
step "the Python package"
scripts/python-tests.sh

# Every benchmark once, as a smoke test of itself, on the test build. `--bench '*'` and not
# `--benches`: that also selects every library's and binary's unit tests (bench = true is their
# default), which the test suite has just run.
step "benchmarks as smoke tests"
cargo test --workspace --locked --bench '*'

# The corpora again through the binary, for their closing lines in the log. The binary is the one
# the test suite built, with the workspace's features (`cargo run -p warrant-cli` would build it
# again with the package's own); asking for it here builds nothing.
step "the corpus"
cargo test --workspace --locked --no-run --quiet
warrant="$target/debug/warrant"
"$warrant" corpus run --contract examples/score-ko/contract.toml corpus/score-ko
"$warrant" corpus run --contract examples/score-en/contract.toml corpus/score-en

# A real small model (SmolLM2-135M) behind the tests' own OpenAI-compatible server answers the
# model tasks through the OpenAI provider.
step "the real-model tier"
REAL_MODEL_DIR="$target/real-model" scripts/real-model-tier.sh
step "done: every suite passed in $root"
