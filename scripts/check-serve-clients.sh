#!/usr/bin/env bash
# Drives `hearth serve` on the default model with the official openai and anthropic Python
# clients (from PyPI, in a private venv), curl -N, raw sockets and a bounded load test
# (scripts/check_serve_clients.py), then checks the SIGTERM drain: an in-flight stream
# finishes, /health turns 503, and the server exits 0.
#
# Usage: scripts/check-serve-clients.sh [--binary PATH] [--model PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
binary=""
model="models/gemma-3-270m-q4_k_m.gguf"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"
require_model "$model"

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt

server_scratch
key="hk-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$key" > "$work/key"

start_server() {
    "$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel 4 --ctx 1024 --max-queue 64 \
        --alias gemma --idle-timeout 5 --grace 20 "$@" > "$work/out" 2> "$work/log" &
    server_pid=$!
    for _ in $(seq 1 600); do
        url="$(grep -o 'http://[^ ]*/v1' "$work/out" | head -1 || true)"
        [ -n "$url" ] && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$work/log" >&2; echo "the server exited" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$url" ] || { echo "the server did not become ready" >&2; exit 1; }
    base="${url%/v1}"
}

start_server
echo "server: $base (pid $server_pid)"
"$venv/bin/python" scripts/check_serve_clients.py "$base" "$key" gemma "$server_pid"

# No key or prompt text in the log.
if grep -q -- "$key" "$work/log" || grep -q "Name three colours" "$work/log"; then
    echo "FAIL the server log contains the API key or prompt text" >&2; exit 1
fi
echo "ok   the log has one line per request and no key or prompt text ($(grep -c 'request' "$work/log") request lines)"

# SIGTERM drain: a long stream in flight finishes; /health is 503 meanwhile; exit status 0.
curl -sN "$base/v1/completions" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"model":"gemma","prompt":"Chapter One\n\nIt was a dark and stormy night","max_tokens":200,"stream":true,"temperature":0.8,"seed":4}' \
    > "$work/drain.sse" &
curl_pid=$!
for _ in $(seq 1 100); do grep -q 'data: ' "$work/drain.sse" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$server_pid"
health="$(curl -s -o /dev/null -w '%{http_code}' "$base/health" || true)"
wait "$curl_pid" || true
status=0
wait "$server_pid" || status=$?
server_pid=""
tail -c 200 "$work/drain.sse" | grep -q 'data: \[DONE\]' || { echo "FAIL the in-flight stream did not finish after SIGTERM" >&2; exit 1; }
[ "$health" = "503" ] || [ "$health" = "000" ] || { echo "FAIL /health during drain was $health" >&2; exit 1; }
[ "$status" = 0 ] || { echo "FAIL the server exited $status after SIGTERM" >&2; exit 1; }
echo "ok   SIGTERM drain: in-flight stream finished with [DONE], /health during drain $health, exit status 0"
echo "all serve checks passed"
