#!/usr/bin/env bash
# Reasoning from a local reasoning model, read by the official clients (issue 57): starts
# `hearth serve` (release build, loopback, an API key) on the reasoning fixture
# Tests/Fixtures/phi4-mini-reasoning-tiny (Phi-4-mini-reasoning's shape, template and
# <think>/</think> tokens; it opens a block after these prompts), then scripts/check_reasoning.py
# in a private venv of the pinned openai and anthropic clients: chat `reasoning_content` whole
# and streamed, Responses reasoning items whole and streamed, Anthropic thinking blocks with
# signatures (whole and streamed) and a tool round trip that sends them back. Exits 1 on any
# failed check. Takes well under a minute after the build.
#
# Usage: scripts/check-reasoning.sh [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
binary=""
model="Tests/Fixtures/phi4-mini-reasoning-tiny"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"
[ -f "$model/model.safetensors" ] || { echo "no reasoning fixture at $model" >&2; exit 1; }

venv=".build/reasoning-venv"
private_venv "$venv" openai==3.57.0 anthropic==2.14.0

server_scratch
key="hk-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$key" > "$work/key"

"$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel 2 --ctx 512 \
    --prompt-style chat-template --alias phi-reasoning > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: $url (pid $server_pid)"

status=0
"$venv/bin/python" scripts/check_reasoning.py "${url%/v1}" "$key" phi-reasoning || status=$?
kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited during the checks" >&2; cat "$work/log" >&2; exit 1; }
exit "$status"
