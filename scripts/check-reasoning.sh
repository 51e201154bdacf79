#!/usr/bin/env bash
# Reasoning from a local reasoning model, read by the official clients (issue 57): starts
# `hearth serve` (release build, loopback, an API key) on the reasoning fixture
# Tests/Fixtures/phi4-mini-reasoning-tiny (Phi-4-mini-reasoning's shape, template and
# <think>/</think> tokens; it opens a block after these prompts), then scripts/check_reasoning.py
# in a private venv of the pinned openai and anthropic clients: chat `reasoning_content` whole
# and streamed, Responses reasoning items whole and streamed, Anthropic thinking blocks with
# signatures (whole and streamed) and a tool round trip that sends them back. Then the cloud
# side: `hearth serve --config` (the gateway, no local model) with an `openai-responses` route to
# the fake OpenAI Responses API of `dashscope-fake` (debug build, as check-dashscope-fakes.sh
# makes it), read by the same openai client (scripts/check_reasoning_cloud.py): reasoning items
# with summaries and encrypted content whole and streamed, a tool round trip that sends the
# reasoning item back to the cloud, chat `reasoning_content` from it; and a route to the fake
# Anthropic API read by the anthropic client (the cloud's signed thinking and redacted blocks
# whole and streamed, sent back in a tool round trip the cloud verifies). Exits 1 on any failed
# check. Takes well under a minute after the builds.
#
# Usage: scripts/check-reasoning.sh [--binary PATH] [--fake PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
started=$(date +%s)
binary=""
fake=""
model="Tests/Fixtures/phi4-mini-reasoning-tiny"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --fake) fake="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"
[ -f "$model/model.safetensors" ] || { echo "no reasoning fixture at $model" >&2; exit 1; }

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt

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
kill "$server_pid" 2>/dev/null || true

# The cloud side: the fake Responses API behind a gateway route.
if [ -z "$fake" ]; then
    swift build --product dashscope-fake >/dev/null
    fake="$(swift build --show-bin-path)/dashscope-fake"
fi
fake_pid=""
gateway_pid=""
trap 'kill $fake_pid $gateway_pid 2>/dev/null || true; server_cleanup' EXIT
"$fake" --lifetime 300 > "$work/fake.json" 2> "$work/fake.log" &
fake_pid=$!
for _ in $(seq 1 100); do [ -s "$work/fake.json" ] && break; sleep 0.05; done
responses_url="$(grep -o '"responses":"[^"]*"' "$work/fake.json" | cut -d'"' -f4)"
anthropic_url="$(grep -o '"anthropic":"[^"]*"' "$work/fake.json" | cut -d'"' -f4)"
[ -n "$responses_url" ] || { echo "FAIL the fake did not start" >&2; cat "$work/fake.log" >&2; exit 1; }
cat > "$work/gateway.json" <<EOF
{"clients": [{"name": "app", "key_env": "REASONING_APP_KEY"}],
 "models": {"o-cloud": {"provider": "openai-responses", "model": "gpt-5-fake", "timeout_seconds": 10},
            "claude-cloud": {"provider": "anthropic", "model": "claude-fake", "timeout_seconds": 10}}}
EOF
REASONING_APP_KEY="$key" OPENAI_API_KEY="sk-fake-dashscope-key" OPENAI_BASE_URL="$responses_url" \
    ANTHROPIC_API_KEY="sk-fake-dashscope-key" ANTHROPIC_BASE_URL="$anthropic_url" \
    "$binary" serve --config "$work/gateway.json" --port 0 > "$work/gateway.out" 2> "$work/gateway.log" &
gateway_pid=$!
server_pid="$gateway_pid"
gateway_url="$(server_url "$gateway_pid" "$work/gateway.out" "$work/gateway.log")"
echo "gateway: $gateway_url (pid $gateway_pid), fake responses API: $responses_url"
"$venv/bin/python" scripts/check_reasoning_cloud.py "${gateway_url%/v1}" "$key" o-cloud claude-cloud || status=$?
kill -0 "$gateway_pid" 2>/dev/null || { echo "FAIL the gateway exited during the checks" >&2; cat "$work/gateway.log" >&2; exit 1; }
kill "$fake_pid" 2>/dev/null || true
wait "$fake_pid" 2>/dev/null || true
if grep -q "^violation" "$work/fake.log"; then
    echo "FAIL a request Hearth sent the cloud fakes broke their protocol:" >&2
    grep "^violation" "$work/fake.log" >&2
    status=1
fi
echo "check-reasoning: $(( $(date +%s) - started )) s"
exit "$status"
