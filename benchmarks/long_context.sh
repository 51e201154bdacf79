#!/usr/bin/env bash
# Long-context prompt processing and decode, Hearth against llama.cpp in one run (issue 27, item 2):
# pp4096 / pp8192 / pp16384 from an empty cache and tg64 at depth 8192, 2 threads, Hearth and
# llama-bench (flash attention off, then on) alternating per test, each under /usr/bin/time -v for
# its peak RSS. Run it under the shared CPU lock:
#   nice -n 0 flock /tmp/hearth-cpu.lock benchmarks/long_context.sh [model.gguf] [hearth binary] > out.txt
set -u
MODEL=${1:-models/gemma-3-270m-q4_k_m.gguf}
HEARTH=${2:-.build/release/hearth}
LLAMA_BENCH=${LLAMA_BENCH:-/work/llama-build/build/bin/llama-bench}
REPS=${REPS:-1}
run() {  # label, command...
    local label=$1; shift
    echo "=== $label: $*"
    /usr/bin/time -v "$@" 2> /tmp/long_context_time.txt | grep -E '^\|' | grep -vE '^\| *(model|---|:-)'
    grep -E "Maximum resident set size|Elapsed" /tmp/long_context_time.txt
}
for p in 4096 8192 16384; do
    run "hearth pp$p" "$HEARTH" bench --model "$MODEL" -p $p -n 0 -r $REPS -t 2
    for fa in 0 1; do
        run "llama.cpp fa$fa pp$p" "$LLAMA_BENCH" -m "$MODEL" -p $p -n 0 -fa $fa -t 2 -r $REPS
    done
done
run "hearth tg64@d8192" "$HEARTH" bench --model "$MODEL" -p 0 -n 64 -d 8192 -r $REPS -t 2
for fa in 0 1; do
    run "llama.cpp fa$fa tg64@d8192" "$LLAMA_BENCH" -m "$MODEL" -p 0 -n 64 -d 8192 -fa $fa -t 2 -r $REPS
done
