#!/usr/bin/env bash
# Serving benchmark: Hearth's server (`hearth serve`) against llama.cpp's own `llama-server`
# (parallel slots, continuous batching; build it with benchmarks/build-llama-server.sh) on the
# same GGUF and thread count, with 1, 4 and 16 concurrent streaming clients
# (benchmarks/serve_load.py): aggregate generated tokens/s, TTFT p50/p99, inter-token p50/p99.
#
# For every client count C each server is started fresh with C slots (Hearth --parallel C,
# llama-server -np C -c C*ctx --cont-batching), one warm-up request is sent, then the load;
# the server is stopped before the next one starts, so only one engine runs at a time.
# llama-server runs once with flash attention off and once on (-fa off / -fa on); the report
# compares Hearth with the faster of the two at each level. Engines alternate: within each
# round the order is Hearth, llama fa=off, llama fa=on, and reversed in every other round.
#
# Builds nothing. On a shared machine hold the CPU lock for the whole run:
#   nice -n 10 flock /tmp/hearth-cpu.lock benchmarks/serve.sh --hearth .build/release/hearth
#
# Options:
#   --hearth PATH          hearth binary (default $HEARTH_BIN, else .build/release/hearth)
#   --llama-server PATH    llama-server binary (default $LLAMA_SERVER, else /work/llama-build/build/bin/llama-server)
#   --model PATH           GGUF served by both (default models/gemma-3-270m-q4_k_m.gguf)
#   --threads N            threads for both engines (default 2)
#   --clients "1 4 16"     client counts
#   --requests-per-client R  requests each client sends one after another (default 4; at least
#                          16 requests in all at each level, so 1 client sends 16)
#   --max-tokens N         tokens generated per request (default 128; ignore_eos is sent)
#   --ctx N                context per slot (default 1024)
#   --rounds N             alternating rounds (default 1)
#   --fa "off on"          llama-server flash-attention settings to try
#   --engines "hearth llama"  which engines to run
#   HEARTH_SERVE_ARGS      extra `hearth serve` flags (environment), e.g. "--prefill-while-decoding 128"
#   --out FILE             JSON lines of every run (default benchmarks/work/serve-<time>.jsonl)
set -euo pipefail
caller="$PWD"
cd "$(dirname "$0")/.."
abs() { case "$1" in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }  # paths given as options: relative to the caller
hearth="${HEARTH_BIN:-.build/release/hearth}"
llama="${LLAMA_SERVER:-/work/llama-build/build/bin/llama-server}"
model="models/gemma-3-270m-q4_k_m.gguf"
threads=2
clients_list="1 4 16"
per_client=4
max_tokens=128
ctx=1024
rounds=1
fa_list="off on"
engines="hearth llama"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --hearth) hearth="$(abs "$2")"; shift 2 ;;
        --llama-server) llama="$(abs "$2")"; shift 2 ;;
        --model) model="$(abs "$2")"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --clients) clients_list="$2"; shift 2 ;;
        --requests-per-client) per_client="$2"; shift 2 ;;
        --max-tokens) max_tokens="$2"; shift 2 ;;
        --ctx) ctx="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --fa) fa_list="$2"; shift 2 ;;
        --engines) engines="$2"; shift 2 ;;
        --out) out="$(abs "$2")"; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
case " $engines " in *" hearth "*) [ -x "$hearth" ] || { echo "no hearth binary at $hearth (swift build -c release --product hearth, or --hearth PATH)" >&2; exit 1; } ;; esac
case " $engines " in *" llama "*) [ -x "$llama" ] || { echo "no llama-server at $llama (benchmarks/build-llama-server.sh, or --llama-server PATH)" >&2; exit 1; } ;; esac
[ -f "$model" ] || { echo "no model at $model (scripts/fetch-default-model.sh)" >&2; exit 1; }
python="${PYTHON:-python3}"
mkdir -p benchmarks/work
[ -n "$out" ] || out="benchmarks/work/serve-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
: > "$out"
logs="${out%.jsonl}-logs"
mkdir -p "$logs"

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
server=""
cleanup() { if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; }
trap cleanup EXIT
wait_ready() {  # url pid
    for _ in $(seq 1 600); do
        kill -0 "$2" 2>/dev/null || { echo "server exited before it was ready" >&2; return 1; }
        curl -sf "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "server at $1 did not become ready" >&2; return 1
}
stop_server() {
    kill -TERM "$server" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=""
}
# engine spec: "hearth" or "llama-fa-off" / "llama-fa-on"
start_server() {  # spec clients port log
    local spec="$1" c="$2" port="$3" log="$4"
    case "$spec" in
        hearth)
            "$hearth" serve --model "$model" --host 127.0.0.1 --port "$port" --parallel "$c" --ctx "$ctx" \
                --threads "$threads" --alias bench --log-level warning ${HEARTH_SERVE_ARGS:-} > "$log" 2>&1 &
            ;;
        llama-fa-*)
            "$llama" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" -np "$c" \
                -c $((c * ctx)) --cont-batching -fa "${spec#llama-fa-}" --no-webui > "$log" 2>&1 &
            ;;
    esac
    server=$!
    wait_ready "http://127.0.0.1:$port/health" "$server"
}

specs=()
for e in $engines; do
    case "$e" in
        hearth) specs+=(hearth) ;;
        llama) for fa in $fa_list; do specs+=("llama-fa-$fa"); done ;;
        *) echo "unknown engine $e" >&2; exit 2 ;;
    esac
done

echo "# host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cpus; model $model; threads $threads; max_tokens $max_tokens; ctx/slot $ctx" >&2
[ -x "$hearth" ] && echo "# hearth: $hearth ($(cd "$(dirname "$hearth")" && git rev-parse --short HEAD 2>/dev/null || echo '?'))" >&2
[ -x "$llama" ] && echo "# llama-server: $llama ($("$llama" --version 2>&1 | grep -m1 -i version || true))" >&2
for round in $(seq 1 "$rounds"); do
    order=("${specs[@]}")
    if [ $((round % 2)) -eq 0 ]; then
        order=(); for ((i=${#specs[@]}-1; i>=0; i--)); do order+=("${specs[$i]}"); done
    fi
    for c in $clients_list; do
        r="$per_client"
        [ $((c * r)) -ge 16 ] || r=$(( (16 + c - 1) / c ))
        for spec in "${order[@]}"; do
            port="$(free_port)"
            log="$logs/$spec-c$c-r$round.log"
            start_server "$spec" "$c" "$port" "$log"
            "$python" benchmarks/serve_load.py --url "http://127.0.0.1:$port" --clients "$c" --requests-per-client "$r" \
                --max-tokens "$max_tokens" --model bench --label "$spec" --seed $((round * 1000)) \
                --dump "$logs/$spec-c$c-r$round.requests.jsonl" > "$logs/last.json" || true
            "$python" - "$logs/last.json" "$round" "$threads" "$c" >> "$out" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(round=int(sys.argv[2]), threads=int(sys.argv[3]), parallel=int(sys.argv[4]))
print(json.dumps(d))
EOF
            tail -n 1 "$out" >&2
            stop_server
        done
    done
done

# Summary: median over rounds per (engine, clients); llama = the faster fa setting by tokens/s.
"$python" - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = ["tokens_per_s", "ttft_p50_ms", "ttft_p99_ms", "itl_p99_ms"]
agg = {}
for r in rows:
    agg.setdefault((r["label"], r["clients"]), []).append(r)
def med(rs, k):
    v = [r[k] for r in rs if r.get(k) is not None]
    return statistics.median(v) if v else None
def fmt(x, k):
    if x is None: return "—"
    return f"{x:.1f}" if k == "tokens_per_s" else f"{x:.0f} ms" if x >= 100 else f"{x:.1f} ms"
levels = sorted({c for _, c in agg})
print("| clients | server | tokens/s | TTFT p50 | TTFT p99 | inter-token p99 | prompt tokens | tokens/request | errors |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
ratios = []
for c in levels:
    best = None
    for label in sorted({l for l, cc in agg if cc == c}):
        rs = agg[(label, c)]
        vals = {k: med(rs, k) for k in keys}
        def span(lo, hi):
            a = [r[lo] for r in rs if r.get(lo) is not None]; b = [r[hi] for r in rs if r.get(hi) is not None]
            return f"{min(a)}–{max(b)}" if a and b else "?"
        toks = span("prompt_tokens_min", "prompt_tokens_max") + " | " + span("tokens_per_request_min", "tokens_per_request_max")
        print(f"| {c} | {label} | " + " | ".join(fmt(vals[k], k) for k in keys) + f" | {toks} | {sum(r['errors'] for r in rs)} |")
        if label.startswith("llama") and vals["tokens_per_s"] is not None and (best is None or vals["tokens_per_s"] > best[1]["tokens_per_s"]):
            best = (label, vals)
    if ("hearth", c) in agg and best:
        h = {k: med(agg[("hearth", c)], k) for k in keys}
        ratios.append((c, best[0], {k: (h[k] / best[1][k]) if h[k] and best[1][k] else None for k in keys}))
if ratios:
    print()
    print("| clients | Hearth ÷ llama-server (best fa) | tokens/s | TTFT p50 | TTFT p99 | inter-token p99 |")
    print("|---:|---|---:|---:|---:|---:|")
    for c, label, r in ratios:
        print(f"| {c} | vs {label} | " + " | ".join("—" if r[k] is None else f"{r[k]:.2f}×" for k in keys) + " |")
EOF
echo "raw results: $out" >&2
