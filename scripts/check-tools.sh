#!/usr/bin/env bash
# Tool calling on the default model, driven by the official clients: starts `hearth serve`
# (release build, loopback, an API key), then scripts/check_tools.py in a private venv of
# pinned PyPI packages — the `openai` client (tool_choice required and named, whole and
# streamed, arguments validated with `jsonschema`; an answer after the tool results; the
# Responses API's function_call when forced), the `anthropic` client (tool_choice any, whole and
# streamed) and an `openai-agents` loop completing a two-tool task. Exits 1 on any failed check;
# the server's log must hold neither the key nor the prompt text.
#
# Usage: scripts/check-tools.sh [--binary PATH] [--model PATH]
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

"$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel 2 --ctx 4096 \
    --alias gemma > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: $url (pid $server_pid)"

status=0
"$venv/bin/python" scripts/check_tools.py "${url%/v1}" "$key" gemma || status=$?
kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited during the checks" >&2; cat "$work/log" >&2; exit 1; }
if grep -q -- "$key" "$work/log" || grep -q "weather in Paris" "$work/log"; then
    echo "FAIL the server log contains the API key or prompt text" >&2; exit 1
fi
exit "$status"
