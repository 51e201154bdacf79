#!/usr/bin/env bash
# Scale-out on an existing engine: N `hearth serve` replicas behind the LiteLLM proxy
# (least-busy routing, retries) on loopback; under load one replica is killed and the
# remaining requests must complete through the others (docs/DEPLOY.md).
#
# Usage: scripts/check-serve-scale-out.sh [--replicas N] [--binary PATH] [--model PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
replicas=2
binary=""
model="models/gemma-3-270m-q4_k_m.gguf"
while [ $# -gt 0 ]; do
    case "$1" in
        --replicas) replicas="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$replicas" -ge 2 ] || { echo "--replicas must be at least 2" >&2; exit 2; }
binary="$(hearth_binary "$binary")"
venv=".build/litellm-venv"
private_venv "$venv" 'litellm[proxy]' openai

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
key="hk-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
master="sk-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$key" > "$work/key"
threads=$(( $(nproc) / replicas )); [ "$threads" -ge 1 ] || threads=1

urls=()
for i in $(seq 1 "$replicas"); do
    "$binary" serve --model "$model" --port 0 --api-key-file "$work/key" --parallel 2 --ctx 1024 --threads "$threads" \
        --alias gemma > "$work/out$i" 2> "$work/log$i" &
    pids+=($!)
done
for i in $(seq 1 "$replicas"); do
    url=""
    for _ in $(seq 1 600); do
        url="$(grep -o 'http://[^ ]*/v1' "$work/out$i" | head -1 || true)"
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { cat "$work/log$i" >&2; echo "replica $i did not start" >&2; exit 1; }
    urls+=("$url")
    echo "replica $i: $url (pid ${pids[$((i - 1))]})"
done

proxy_port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
{
    echo "model_list:"
    for url in "${urls[@]}"; do
        cat <<YAML
  - model_name: gemma
    litellm_params:
      model: openai/gemma
      api_base: $url
      api_key: os.environ/HEARTH_REPLICA_KEY
YAML
    done
    cat <<YAML
router_settings:
  routing_strategy: least-busy
  num_retries: 3
  allowed_fails: 1
  cooldown_time: 60
  retry_after: 0
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
YAML
} > "$work/litellm.yaml"
HEARTH_REPLICA_KEY="$key" LITELLM_MASTER_KEY="$master" "$venv/bin/litellm" --config "$work/litellm.yaml" \
    --host 127.0.0.1 --port "$proxy_port" > "$work/proxy.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$proxy_port/health/liveliness" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -sf "http://127.0.0.1:$proxy_port/health/liveliness" >/dev/null || { tail -20 "$work/proxy.log" >&2; echo "the proxy did not start" >&2; exit 1; }
echo "LiteLLM proxy: http://127.0.0.1:$proxy_port (least-busy over $replicas replicas)"

"$venv/bin/python" scripts/scale_out_litellm.py "http://127.0.0.1:$proxy_port" "$master" gemma "${pids[0]}" 60 8
for i in $(seq 1 "$replicas"); do
    served="$(grep -c "status=200" "$work/log$i" 2>/dev/null || true)"
    echo "replica $i served $served requests"
done
