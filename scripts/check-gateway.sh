#!/usr/bin/env bash
# Drives `hearth serve --config` (the gateway, docs/SERVER.md#gateway) on the default model as
# an app backend would: the official openai client (PyPI, private venv) signing every request
# like the seed app, raw signed requests (expired, replayed, tampered), keys and tokens, rate
# limits and daily quotas, the cache, the content filter, a cloud route whose fake upstream dies
# mid-answer (the local model finishes it), GET /v1/usage against the sum of the responses'
# usage; then kill -9 during a request and checks the SQLite usage file is consistent and lost
# only that request; restarts on it; and greps the captured logs for every secret.
#
# Usage: scripts/check-gateway.sh [--binary PATH] [--model PATH]
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
py="$venv/bin/python"

work="$(mktemp -d)"
server_pid=""
upstream_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null || true
    [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

random() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
export APP_KEY="hk-app-$(random)" APP_HMAC_SECRET="hs-$(random)" OPS_KEY="hk-ops-$(random)"
export LIMITED_KEY="hk-lim-$(random)" QUOTA_KEY="hk-quo-$(random)" OPENAI_API_KEY="sk-upstream-$(random)"
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }

# The fake OpenAI upstream; the server reads its URL and key from the environment.
"$py" scripts/check_gateway.py upstream "$work/upstream.port" &
upstream_pid=$!
for _ in $(seq 1 100); do [ -f "$work/upstream.port" ] && break; sleep 0.05; done
export OPENAI_BASE_URL="http://127.0.0.1:$(cat "$work/upstream.port")/v1"

printf '# blocked words, one per line; re: for regexes\nbananarama\nre:\\bforbidden\\w*\n' > "$work/blocked.txt"
cat > "$work/gateway.json" <<EOF
{"clients": [{"name": "app", "key_sha256": "$(sha "$APP_KEY")", "hmac_secret_env": "APP_HMAC_SECRET",
              "requests_per_minute": 60, "tokens_per_day": 1000000},
             {"name": "ops", "key_env": "OPS_KEY", "admin": true},
             {"name": "limited", "key_sha256": "$(sha "$LIMITED_KEY")", "requests_per_minute": 2},
             {"name": "quota", "key_sha256": "$(sha "$QUOTA_KEY")", "tokens_per_day": 200}],
 "models": {"local": {"provider": "local"}, "tiny": {"provider": "local", "model": "phi3-mha"},
            "gpt-4o-mini": {"provider": "openai", "fallback": ["local"], "timeout_seconds": 10}},
 "cache": {"ttl_seconds": 3600, "max_entries": 1000},
 "content_filter": {"file": "blocked.txt"},
 "usage_db": "usage.sqlite"}
EOF

start_server() {
    # A second local model (the tiny random-weight fixture) behind its own route: /metrics
    # then has two local models' series beside the cloud route's.
    "$binary" serve --config "$work/gateway.json" --model "$model" --model Tests/Fixtures/phi3-mha --port 0 --parallel 2 --ctx 1024 --log-level debug \
        > "$work/out" 2>> "$work/log" &
    server_pid=$!
    url=""
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
echo "gateway: $base (pid $server_pid), upstream $OPENAI_BASE_URL"
echo "{\"upstream_count_file\": \"$work/upstream.port.count\"}" > "$work/state.json"
"$py" scripts/check_gateway.py checks "$base" "$work/state.json"

# kill -9 while a request is being answered; the usage file must be consistent and complete
# for every finished request.
"$py" scripts/check_gateway.py inflight "$base" > "$work/inflight" &
inflight_pid=$!
for _ in $(seq 1 600); do grep -q "in flight" "$work/inflight" 2>/dev/null && break; sleep 0.05; done
grep -q "in flight" "$work/inflight" || { echo "FAIL the in-flight request never started" >&2; exit 1; }
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=""
wait "$inflight_pid" || true
echo "ok   killed the server (kill -9) with a stream in flight"
"$py" scripts/check_gateway.py ledger "$work/usage.sqlite" "$work/state.json"
start_server
"$py" scripts/check_gateway.py usage "$base" "$work/state.json"
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""

# No secret in the logs (debug level, both runs) or the server's stdout.
token="$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$work/state.json")"
for name in APP_KEY APP_HMAC_SECRET OPS_KEY LIMITED_KEY QUOTA_KEY OPENAI_API_KEY; do
    if grep -q -- "${!name}" "$work/log" "$work/out"; then echo "FAIL the log contains $name" >&2; exit 1; fi
done
if grep -q -- "$token" "$work/log" "$work/out"; then echo "FAIL the log contains a token" >&2; exit 1; fi
if grep -qi "Bananarama\|Name three colours" "$work/log"; then echo "FAIL the log contains prompt text" >&2; exit 1; fi
echo "ok   no key, HMAC secret, upstream key, token or prompt text in $(wc -l < "$work/log") log lines"
echo "all gateway checks passed"
