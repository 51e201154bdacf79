#!/usr/bin/env bash
# Several models in one `hearth serve`, driven by the official openai client (PyPI, pinned, in
# a private venv): three small fixture models served with --max-loaded 2; /v1/models lists
# them, each answers chat and completions under its name, the least recently used is unloaded
# when the third is asked for (hearth_model_loaded{model=…} in /metrics), and an unknown name
# is a 404. Prints "N passed, M failed"; exits 1 on any failure.
#
# Usage: scripts/check-serve-models.sh [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt

server_scratch

"$binary" serve --model Tests/Fixtures/phi3-mha --model Tests/Fixtures/llama-tiny --model Tests/Fixtures/gemma3-tiny \
    --max-loaded 2 --port 0 --ctx 64 --parallel 1 --threads 2 > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: $url (pid $server_pid)"
"$venv/bin/python" scripts/check_serve_models.py "$url"
