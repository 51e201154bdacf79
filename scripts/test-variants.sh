#!/usr/bin/env bash
# Runs the accuracy-sensitive suites under other summation orders than the default run's: every
# kernel level this CPU runs below its best (forced at run time with HEARTH_CPU — same build, the
# CLI subprocesses inherit it) and other OpenBLAS kernels (OPENBLAS_CORETYPE), to show that the
# tests hold on every CPU (docs/ACCURACY.md, docs/KERNELS.md). Run after scripts/setup.sh.
#
#   scripts/test-variants.sh             # every variant below
#   scripts/test-variants.sh ci          # one other OpenBLAS core type (what CI runs; CI's lower kernel level runs the whole
#                                        # suite instead: scripts/test-without-system-libraries.sh --lower-level)
#   scripts/test-variants.sh levels      # HEARTH_CPU=portable, avx2, avx512, avx512-vnni, amx (those this CPU runs)
#   scripts/test-variants.sh openblas    # OPENBLAS_CORETYPE=Haswell, =Sandybridge, and =SkylakeX where the CPU has AVX-512
#
# Suites: the kernel reference tests, the golden tests against transformers, the quantized
# accuracy tests, MLX, the KL-divergence tool, the CLI tests (`hearth embed`'s too), the embeddings
# against transformers and the real model against the exact math — but SpeculativeRealModelTests
# (matched by the filter's RealModelTests): it compares speculative with plain decoding of the same
# build, both in whatever order the forced kernels sum, and took ~55 s of each run. Exits non-zero
# when any run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

FILTER='HearthKernelsTests|GoldenTests|QuantizedAccuracyTests|MLXTests|KLDivergenceTests|CLITests|RealModelTests|BatchedDecodingTests|EmbeddingTests'
SKIP='SpeculativeRealModelTests'
which="${1:-all}"
status=0

run() {
  local label="$1"; shift
  echo "== $label"
  local log; log=$(mktemp)
  if env "$@" swift test --no-parallel --filter "$FILTER" --skip "$SKIP" >"$log" 2>&1; then
    grep -E "Test run with" "$log" | tail -1
    grep -h "hearth: HEARTH_CPU" "$log" | sort -u | head -3 || true
  else
    grep -E "✘|error:" "$log" | head -40
    echo "!! $label failed (log: $log)" >&2
    status=1
  fi
}

# levels_supported and lower_level: the levels this CPU runs, the one CI forces.
source scripts/lower-level.sh
if [ "$which" = all ] || [ "$which" = levels ]; then
  all_levels=$(levels_supported)
  best=${all_levels##* }
  echo "kernel levels this CPU runs: $all_levels (the default run used $best)"
  forced=""
  for level in $all_levels; do [ "$level" != "$best" ] && forced="$forced $level"; done
  for level in $forced; do
    run "HEARTH_CPU=$level" HEARTH_CPU=$level
  done
  for level in portable avx2 avx512 avx512-vnni amx; do
    case " $all_levels " in *" $level "*) ;; *) echo "-- $level: this CPU cannot run it (not tested here)" ;; esac
  done
fi

if [ "$which" = all ] || [ "$which" = openblas ] || [ "$which" = ci ]; then
  # Only core types this CPU can run: OpenBLAS's SkylakeX kernels die with SIGILL without AVX-512.
  cores="Haswell Sandybridge"
  grep -qw avx512f /proc/cpuinfo 2>/dev/null && cores="$cores SkylakeX"
  [ "$which" = ci ] && cores=Sandybridge
  for core in $cores; do
    run "OPENBLAS_CORETYPE=$core" OPENBLAS_CORETYPE=$core
  done
fi
exit $status
