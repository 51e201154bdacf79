#!/usr/bin/env bash
# Structured output on the default model, checked by references: starts `hearth serve`, samples
# every schema of the corpus (Tests/Fixtures/schemas/*.json) at temperature 1.0 with several
# seeds, and validates every answer with the `jsonschema` package (format checks on); answers
# cut by max_tokens (finish_reason "length") are counted apart, neither valid nor invalid. Then
# the official `openai` client's chat.completions.parse (and responses.parse) with pydantic
# models, and `hearth generate --json-schema` once (scripts/check_structured.py); then the front
# ends — instructor (JSON-schema and tools modes), LangChain `with_structured_output`
# (json_schema and function_calling) and openai's parse helper — at max_tokens 200 over
# --frontend-seeds seeds, every answer parsed (scripts/check_frontends.py, its own venv). Exits 1
# on any invalid answer or failed request.
#
# Usage: scripts/check-structured.sh [--binary PATH] [--model PATH] [--seeds N] [--max-tokens N]
#                                    [--parallel N] [--schemas DIR] [--report FILE]
#                                    [--multiple-samples N]   (answers per multipleOf schema; 0 skips)
#                                    [--frontend-seeds N]     (seeds per front end, default 20; 0 skips)
#                                    [--budget-matrix 256,512,1024]  (instead of the checks: the corpus at
#                                       each max_tokens with the budget rule on and off; issue 59)
#                                    [--budget-baseline on|off]  (which of the two runs twice as the baseline)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
binary=""
model="models/gemma-3-270m-q4_k_m.gguf"
seeds=3
max_tokens=768
parallel=4
schemas="Tests/Fixtures/schemas"
report=""
multiple_samples=200
frontend_seeds=20
budget_matrix=""
budget_baseline=off
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --seeds) seeds="$2"; shift 2 ;;
        --max-tokens) max_tokens="$2"; shift 2 ;;
        --parallel) parallel="$2"; shift 2 ;;
        --schemas) schemas="$2"; shift 2 ;;
        --report) report="$2"; shift 2 ;;
        --multiple-samples) multiple_samples="$2"; shift 2 ;;
        --frontend-seeds) frontend_seeds="$2"; shift 2 ;;
        --budget-matrix) budget_matrix="$2"; frontend_seeds=0; shift 2 ;;
        --budget-baseline) budget_baseline="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"
require_model "$model"
ls "$schemas"/*.json > /dev/null 2>&1 || { echo "no schemas in $schemas" >&2; exit 1; }

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt
[ "$frontend_seeds" -gt 0 ] && frontends_venv   # .build/frontends-venv: scripts/requirements-frontends.txt

server_scratch
key="hk-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$key" > "$work/key"

"$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel "$parallel" --ctx 4096 \
    --alias gemma > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: $url (pid $server_pid)"

args=("${url%/v1}" "$key" gemma --schemas "$schemas" --seeds "$seeds" --max-tokens "$max_tokens" --parallel "$parallel"
      --binary "$binary" --model-path "$model" --multiple-samples "$multiple_samples")
[ -n "$report" ] && args+=(--report "$report")
[ -n "$budget_matrix" ] && args+=(--budget-matrix "$budget_matrix" --budget-baseline "$budget_baseline")
status=0
"$venv/bin/python" scripts/check_structured.py "${args[@]}" || status=$?
if [ "$frontend_seeds" -gt 0 ]; then
    # instructor (JSON-schema and tools modes), LangChain with_structured_output and openai's parse
    # helper at max_tokens 200: every answer parses (issue 59).
    "$frontends_venv/bin/python" scripts/check_frontends.py "${url%/v1}" "$key" gemma --seeds "$frontend_seeds" \
        --max-tokens 200 --parallel "$parallel" || status=$?
fi
exit $status
