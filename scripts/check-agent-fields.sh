#!/usr/bin/env bash
# Coding agents' requests against `hearth serve` on the default model, through the official
# clients: starts the server (release build, loopback, an API key), then
# scripts/check_agent_fields.py in a private venv of pinned PyPI packages — the `anthropic`
# client sending requests as Claude Code does (metadata.user_id, cache_control on system, tool
# and message blocks and tool results, thinking, the beta endpoint's context_management,
# count_tokens), the `openai` client as a Responses-API coding agent does (prompt_cache_key,
# store: false, include, reasoning on a model that cannot reason, parallel_tool_calls,
# stream_options) and as a chat agent does (reasoning_effort, user, metadata, stream_options),
# whole and streamed; logprob tokens joining to exactly the content. Then llm-comply (pinned)
# runs its OpenAI chat and Anthropic messages schema checks (basic, system prompt, multi-turn,
# tool calling, streaming, streaming usage, error handling; not image input or reasoning, which
# a text model without reasoning refuses or leaves out). Prints "N passed, M failed" and exits 1
# on any failed check; the server's log must hold neither the key nor the prompt text.
#
# Usage: scripts/check-agent-fields.sh [--binary PATH] [--model PATH]
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

# --seed 1: requests that set no seed (llm-comply's) sample reproducibly; at a random seed the base
# model's reply to "Say hello in exactly 3 words." runs to the context about 1 time in 100 (measured
# over 300 seeds), and llm-comply expects finish_reason "stop".
"$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel 2 --ctx 4096 --seed 1 \
    --alias gemma > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: $url (pid $server_pid)"

status=0
"$venv/bin/python" scripts/check_agent_fields.py "${url%/v1}" "$key" gemma || status=$?
# llm-comply's schema checks of the current APIs (12 of its tests, plus error handling).
comply=(basic-response system-prompt multi-turn tool-calling streaming-response streaming-usage error-handling)
for format in openai-chat anthropic; do
    prefix=chat; auth=(); [ "$format" = anthropic ] && { prefix=anth; auth=(--auth-header x-api-key --no-bearer -H anthropic-version:2023-06-01); }
    ids="$(printf "$prefix-%s," "${comply[@]}")"
    # Every named test must have run and passed (a renamed test id would otherwise run nothing).
    if "$venv/bin/llm-comply" run --format "$format" -u "$url" -k "$key" -m gemma "${auth[@]}" -f "${ids%,}" > "$work/comply" 2>&1 \
        && grep -qE "Results: ${#comply[@]}/${#comply[@]} passed|All ${#comply[@]} tests passed" "$work/comply"; then
        echo "PASS llm-comply $format: $(grep -iE '[0-9]+ passed|passed' "$work/comply" | tail -1)"
    else
        echo "FAIL llm-comply $format:"; cat "$work/comply"; status=1
    fi
done
kill -0 "$server_pid" 2>/dev/null || { echo "FAIL the server exited during the checks" >&2; cat "$work/log" >&2; exit 1; }
if grep -q -- "$key" "$work/log" || grep -q "Which files are here" "$work/log"; then
    echo "FAIL the server log contains the API key or prompt text" >&2; exit 1
fi
exit "$status"
