#!/usr/bin/env bash
# Embeddings: N texts of about T tokens in one `hearth embed` call (batched forward passes)
# against the same texts one call each, on the default model (or MODEL=...), alternating,
# R rounds. Reports the embed time only (`--timings`: forward passes and pooling, after the
# model is loaded), so process start and model load do not count against either side.
#
#   benchmarks/embed.sh [-n 16] [-w 56] [-t 2] [-r 3] [--batch 256]
#
# -w is words per text: 56 makes about 64 Gemma tokens, 6 about 8.
#
# Needs a release build (swift build -c release --product hearth; or HEARTH_BIN=...).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
HEARTH="${HEARTH_BIN:-$REPO/.build/release/hearth}"
MODEL="${MODEL:-$REPO/models/gemma-3-270m-q4_k_m.gguf}"
count=16 words=56 threads=2 rounds=3 batch=256
while [ $# -gt 0 ]; do
  case "$1" in
    -n) count="$2"; shift 2 ;;
    -w) words="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -r) rounds="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$HEARTH" ] && [ -f "$MODEL" ] || { echo "needs $HEARTH and $MODEL" >&2; exit 1; }

# Texts of plain English, varied per text (56 words: about 64 Gemma tokens).
texts=()
for i in $(seq 0 $((count - 1))); do
  texts+=("$(python3 -c "
import random; r = random.Random($i)
words = 'the warm hearth kept bread and tea ready while rain fell on quiet stone streets of a small town near hills'.split()
print(' '.join(r.choice(words) for _ in range($words)) + ' end of note $i.')")")
done
together_args=()
for t in "${texts[@]}"; do together_args+=(--text "$t"); done
tokens=$("$HEARTH" embed --model "$MODEL" -t "$threads" "${together_args[@]}" | python3 -c 'import json,sys;print(json.load(sys.stdin)["usage"]["prompt_tokens"])')
echo "model $(basename "$MODEL"), $count texts, $tokens tokens in all ($((tokens / count)) each), $threads threads, batch $batch"

seconds() { python3 -c 'import json,sys;print(json.load(sys.stdin)["timings"]["embed_seconds"])'; }
for round in $(seq "$rounds"); do
  together=$("$HEARTH" embed --model "$MODEL" -t "$threads" --batch "$batch" --timings "${together_args[@]}" | seconds)
  alone=0
  for t in "${texts[@]}"; do
    s=$("$HEARTH" embed --model "$MODEL" -t "$threads" --batch "$batch" --timings --text "$t" | seconds)
    alone=$(python3 -c "print($alone + $s)")
  done
  python3 -c "
t, a, n = $together, $alone, $tokens
print(f'round $round: together {t:.3f} s ({n / t:.0f} tokens/s), one at a time {a:.3f} s ({n / a:.0f} tokens/s): {a / t:.2f}x')"
done
