#!/usr/bin/env bash
# MLX 4-bit against Hearth's own q4_1 on the same weights: converts the random
# Phi-3-mini-shaped F16 checkpoint (made by benchmarks/run.sh) with mlx_lm.convert
# (4-bit, group 64 — the settings of mlx-community's Phi-3.5-mini-instruct-4bit),
# quantizes it to a q4_1 HQF with `hearth quantize`, then runs `hearth bench` on
# both, alternating, each in its own process. Both run on the same q4_1 kernels;
# the MLX file holds 4.5 bits/weight on disk (f16 scale+bias per 64) and 5.0 in
# memory after the load-time rearrangement (f16 d+m per 32), the HQF 5.0 on disk —
# except lm_head, which mlx-lm quantizes to 4 bits and Hearth's q4_1 plan keeps at
# q8_0, so the MLX model reads ≈2% fewer bytes per token (Phi-3-mini: 43 MB of 2.4 GB).
#
#   benchmarks/mlx_compare.sh [-t 2] [-r 5] [-p 512] [-n 128] [--rounds 2]
#
# Needs: a release build (swift build -c release --product hearth; or HEARTH_BIN=...), the checkpoint at $SRC (default
# benchmarks/work/phi3-mini-random, made by benchmarks/run.sh), and a Python with
# mlx-lm for the conversion (MLX_PY, default /opt/hearth-mlx/bin/python, see
# scripts/make_mlx_fixtures.py). Outputs go to benchmarks/work (gitignored) as
# $NAME-mlx-q4-g64/ and $NAME-q4_1.hqf; existing conversions are reused.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
WORK="$HERE/work"
SRC="${SRC:-$WORK/phi3-mini-random}"
MLX_PY="${MLX_PY:-/opt/hearth-mlx/bin/python}"
HEARTH="${HEARTH_BIN:-$REPO/.build/release/hearth}"
NAME="$(basename "$SRC")"
MLX_DIR="$WORK/$NAME-mlx-q4-g64"
HQF="$WORK/$NAME-q4_1.hqf"
threads=2 reps=5 prompt=512 gen=128 rounds=2
while [ $# -gt 0 ]; do
  case "$1" in
    -t|--threads) threads="$2"; shift 2 ;;
    -r|--reps) reps="$2"; shift 2 ;;
    -p|--prompt) prompt="$2"; shift 2 ;;
    -n|--gen) gen="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

[ -x "$HEARTH" ] || { echo "no hearth binary at $HEARTH (swift build -c release --product hearth)" >&2; exit 1; }
[ -f "$SRC/config.json" ] || { echo "no checkpoint at $SRC (benchmarks/run.sh makes it; or set SRC=...)" >&2; exit 1; }
mkdir -p "$WORK"

if [ ! -f "$MLX_DIR/config.json" ]; then
  echo "converting $SRC to MLX 4-bit (group 64) → $MLX_DIR" >&2
  "$MLX_PY" -m mlx_lm convert --hf-path "$SRC" --mlx-path "$MLX_DIR" -q --q-group-size 64 --q-bits 4
  # mlx-lm writes tokenizer.json; Hearth reads the SentencePiece model the source ships.
  cp "$SRC/tokenizer.model" "$MLX_DIR/"
fi
if [ ! -f "$HQF" ]; then
  echo "quantizing $SRC to q4_1 → $HQF" >&2
  "$HEARTH" quantize --model "$SRC" --output "$HQF" --type q4_1 -t "$threads"
fi

"$HEARTH" inspect --model "$MLX_DIR" | grep -E '^(weights|quantization):'
for round in $(seq 1 "$rounds"); do
  for model in "$MLX_DIR" "$HQF"; do
    echo "round $round: $(basename "$model")" >&2
    "$HEARTH" bench --model "$model" -p "$prompt" -n "$gen" -r "$reps" -t "$threads" --json \
      | tee "$WORK/mlx-compare-$(basename "$model")-r$round.json"
    echo
  done
done
