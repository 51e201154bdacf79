#!/usr/bin/env bash
# Serving benchmark: Hearth's server (`hearth serve`) against llama.cpp's OpenAI-compatible
# server (llama-cpp-python[server], `python -m llama_cpp.server`) on the same GGUF model and
# threads, with 1, 4 and 16 concurrent streaming clients (benchmarks/serve_bench.py; llama.cpp's
# server with --interrupt_requests False: by default a new request cuts the running stream short):
# requests/s, aggregate tokens/s, TTFT p50/p99, inter-token latency p99.
#
# Usage: benchmarks/serve.sh [--model PATH] [--threads N] [--requests-per-client N] [--max-tokens N]
set -euo pipefail
cd "$(dirname "$0")/.."
model="models/gemma-3-270m-q4_k_m.gguf"
threads="$(nproc)"
per_client=4
max_tokens=64
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
while [ $# -gt 0 ]; do
    case "$1" in
        --model) model="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --requests-per-client) per_client="$2"; shift 2 ;;
        --max-tokens) max_tokens="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
swift build -c release --product hearth >/dev/null
binary="$(swift build -c release --show-bin-path)/hearth"
venv=".build/llama-server-venv"
if ! "$venv/bin/python" -c "import llama_cpp.server, openai" 2>/dev/null; then
    python3 -m venv "$venv"
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$venv/bin/pip" install --quiet "llama-cpp-python[server]==$llama_version" openai
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
work="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
wait_ready() {  # url
    for _ in $(seq 1 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
    echo "server at $1 did not become ready" >&2; return 1
}
run_levels() {  # base label
    for clients in 1 4 16; do
        "$venv/bin/python" benchmarks/serve_bench.py "$1" gemma "$clients" $((clients * per_client)) "$max_tokens" "$2"
    done
}

port="$(free_port)"
"$binary" serve --model "$model" --port "$port" --alias gemma --parallel 16 --ctx 1024 --threads "$threads" \
    --log-level warning > "$work/hearth.out" 2>&1 &
server=$!
wait_ready "http://127.0.0.1:$port/health"
run_levels "http://127.0.0.1:$port" hearth
kill "$server"; wait "$server" 2>/dev/null || true; server=""

port="$(free_port)"
"$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias gemma --host 127.0.0.1 --port "$port" \
    --n_ctx 1024 --n_threads "$threads" --n_threads_batch "$threads" --interrupt_requests False > "$work/llama.out" 2>&1 &
server=$!
wait_ready "http://127.0.0.1:$port/v1/models"
run_levels "http://127.0.0.1:$port" llama-cpp-python
