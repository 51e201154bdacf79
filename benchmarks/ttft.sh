#!/usr/bin/env bash
# Time to first token of a cold process, Hearth beside llama.cpp, on the same GGUF files:
# the wall time of a whole process that loads the model, reads a short prompt and writes one
# token, with the file in the page cache (it is read once beforehand).
#
#   hearth generate --model FILE --prompt P --raw --max-tokens 1 --temperature 0 -t T
#       run 1 with Hearth's repack cache emptied (it rearranges and writes the cache),
#       runs 2 and 3 with it warm (they map it);
#   llama-completion -m FILE -p P -n 1 --temp 0 -t T -no-cnv   (three runs)
#
#   benchmarks/ttft.sh [FILE.gguf …]     default: the Phi-3 files of benchmarks/work and the default model
#
# Environment: HEARTH_BIN (default .build/release/hearth), LLAMA_COMPLETION (default
# /work/llama-build/build/bin/llama-completion; build it with
# `cmake --build /work/llama-build/build --target llama-completion`), THREADS (2).
# Hearth's repack cache is benchmarks/work/repack-cache-ttft during the run. Prints a
# markdown table: seconds (wall) and peak RSS per run.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
HEARTH="${HEARTH_BIN:-$REPO/.build/release/hearth}"
LLAMA="${LLAMA_COMPLETION:-/work/llama-build/build/bin/llama-completion}"
THREADS="${THREADS:-2}"
PROMPT="The capital of France is"
export HEARTH_REPACK_CACHE_DIR="$HERE/work/repack-cache-ttft"
LOGS="$HERE/work/logs"
mkdir -p "$LOGS"

if [ "$#" -gt 0 ]; then
  files=("$@")
else
  files=()
  for t in q4_0 q4_k_m q5_k_m q6_k q8_0; do
    [ -f "$HERE/work/phi3-mini-$t.gguf" ] && files+=("$HERE/work/phi3-mini-$t.gguf")
  done
  [ -f "$REPO/models/gemma-3-270m-q4_k_m.gguf" ] && files+=("$REPO/models/gemma-3-270m-q4_k_m.gguf")
fi

# Wall seconds and peak RSS (MiB) of one command, its output in a log.
measure() {
  local log="$1"; shift
  /usr/bin/time -f '%e %M' -o "$log.time" "$@" >"$log" 2>&1 </dev/null || { echo "failed (see $log)"; return; }
  awk '{ printf "%.2f s, %.0f MiB", $1, $2 / 1024 }' "$log.time"
}

echo "| file | Hearth run 1 (cache emptied) | Hearth run 2 (cache warm) | Hearth run 3 | llama.cpp run 1 | llama.cpp run 2 | llama.cpp run 3 |"
echo "|---|---|---|---|---|---|---|"
for f in "${files[@]}"; do
  name="$(basename "$f" .gguf)"
  cat "$f" >/dev/null   # into the page cache: both engines start warm
  rm -rf "$HEARTH_REPACK_CACHE_DIR"
  row="| \`$name\`"
  for run in 1 2 3; do
    row+=" | $(measure "$LOGS/ttft-hearth-$name-$run.log" "$HEARTH" generate --model "$f" --prompt "$PROMPT" --raw \
      --max-tokens 1 --temperature 0 -t "$THREADS")"
  done
  for run in 1 2 3; do
    row+=" | $(measure "$LOGS/ttft-llama-$name-$run.log" "$LLAMA" -m "$f" -p "$PROMPT" -n 1 --temp 0 -t "$THREADS" -no-cnv)"
  done
  echo "$row |"
done
rm -rf "$HEARTH_REPACK_CACHE_DIR"
