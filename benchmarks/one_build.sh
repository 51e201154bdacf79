#!/usr/bin/env bash
# Issue 12's measurement: two hearth binaries side by side — e.g. a build made with the old
# HEARTH_CPU=native (per-machine kernels) and the one-build binary (kernels chosen at run time) —
# alternating rounds of `hearth bench` on the same files and threads; prints each run and the
# median pp/tg of each binary and their ratio.
#
#   benchmarks/one_build.sh OLD_BINARY NEW_BINARY [ROUNDS=4] [MODEL...]
#
# PROMPT and GEN (environment) set the prompt and generated token counts (default 128 and 32).
# Also issue 30's measurement: the OpenBLAS build against the build without the SystemLibraries
# trait (Hearth's own GEMM), e.g. PROMPT=512 benchmarks/one_build.sh .build/release/hearth \
#   .build-no-system-libraries-release/release/hearth 4 models/gemma-3-270m-q4_k_m.gguf
set -euo pipefail
cd "$(dirname "$0")/.."
old="$1" new="$2" rounds="${3:-4}"
shift 2; [ $# -gt 0 ] && shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(models/gemma-3-270m-q4_k_m.gguf benchmarks/work/phi3-mini-q4_0.hqf)
for m in "${models[@]}"; do
  out=$(mktemp)
  for round in $(seq "$rounds"); do
    for b in "$old" "$new"; do
      env -u HEARTH_CPU "$b" bench --model "$m" -p "${PROMPT:-128}" -n "${GEN:-32}" -t 2 -r 3 --json 2>/dev/null \
        | python3 -c 'import json,sys;d=json.load(sys.stdin);print(sys.argv[1], d["pp"]["tokens_per_second"], d["tg"]["tokens_per_second"], d.get("kernel_level","-"))' "$b" | tee -a "$out"
    done
  done
  python3 - "$out" "$old" "$new" "$m" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(b, i): return statistics.median(float(r[i]) for r in rows if r[0] == b)
o, n = sys.argv[2], sys.argv[3]
print(f"{sys.argv[4]}: pp {med(o,1):.2f} -> {med(n,1):.2f} ({med(n,1)/med(o,1):.3f}x), "
      f"tg {med(o,2):.2f} -> {med(n,2):.2f} ({med(n,2)/med(o,2):.3f}x)  [medians of {len(rows)//2} rounds]")
PY
done
