#!/usr/bin/env bash
# Issue 55's reproductions against a release `hearth serve` on the default model (served twice,
# under two names, with --max-loaded 1) behind a two-client gateway configuration: rule chains,
# huge patterns, hostile tools, alternating models, a disconnected embeddings request, a 3 MB
# tokenize and n=8 beside another client each end in a 4xx or a bounded answer, /live answers
# within 1 s throughout, and resident memory stays within its bound (scripts/check_bounds.py).
# Prints "N passed, M failed"; exits 1 on any failure.
#
# Usage: scripts/check-bounds.sh [--binary PATH] [--model PATH]
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
server_scratch

# The same file under two names: two models, each a mapping of its own.
ln -s "$(realpath "$model")" "$work/gemma-a.gguf"
ln -s "$(realpath "$model")" "$work/gemma-b.gguf"
export BOUNDS_KEY_A="hk-a-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export BOUNDS_KEY_B="hk-b-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
cat > "$work/gateway.json" <<JSON
{
  "clients": [
    {"name": "a", "key_env": "BOUNDS_KEY_A"},
    {"name": "b", "key_env": "BOUNDS_KEY_B"}
  ],
  "models": {
    "ga": {"provider": "local", "model": "gemma-a"},
    "gb": {"provider": "local", "model": "gemma-b"}
  }
}
JSON
"$binary" serve --config "$work/gateway.json" --model "$work/gemma-a.gguf" --model "$work/gemma-b.gguf" --max-loaded 1 \
    --port 0 --parallel 2 --ctx 2048 --threads 2 > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
echo "server: ${url%/v1} (pid $server_pid)"
python3 scripts/check_bounds.py "${url%/v1}" "$server_pid" "$BOUNDS_KEY_A" "$BOUNDS_KEY_B" "$(stat -Lc %s "$model")"
