#!/usr/bin/env bash
# Runs the accuracy-sensitive suites under other summation orders than the default build's:
# other OpenBLAS kernels (OPENBLAS_CORETYPE) and another kernel level (the AVX2 build), to show
# that the tests hold on every CPU (docs/ACCURACY.md). Run after scripts/setup.sh.
#
#   scripts/test-variants.sh             # every variant below
#   scripts/test-variants.sh openblas    # OPENBLAS_CORETYPE=Haswell and =SkylakeX, same build (CI runs this)
#   scripts/test-variants.sh avx2        # HEARTH_CPU=haswell in its own scratch path (.build-haswell)
#
# Suites: the kernel reference tests, the golden tests against transformers, the quantized
# accuracy tests, the KL-divergence tool, the CLI greedy tests and the real model against the
# exact math. Exits non-zero when any run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

FILTER='HearthKernelsTests|GoldenTests|QuantizedAccuracyTests|KLDivergenceTests|CLITests|RealModelTests|MLXTests'
which="${1:-all}"
status=0

run() {
  local label="$1"; shift
  echo "== $label"
  local log; log=$(mktemp)
  if env "$@" --filter "$FILTER" >"$log" 2>&1; then
    grep -E "Test run with" "$log" | tail -1
  else
    grep -E "^.*(✘|error:)" "$log" | head -40
    echo "!! $label failed (log: $log)" >&2
    status=1
  fi
}

if [ "$which" = all ] || [ "$which" = openblas ]; then
  export HEARTH_CPU="${HEARTH_CPU:-native}"
  for core in Haswell SkylakeX; do
    run "OPENBLAS_CORETYPE=$core (HEARTH_CPU=$HEARTH_CPU)" OPENBLAS_CORETYPE=$core swift test --no-parallel
  done
fi

if [ "$which" = all ] || [ "$which" = avx2 ]; then
  HEARTH_CPU=haswell swift build -c release --product hearth --scratch-path .build-haswell
  run "HEARTH_CPU=haswell (AVX2 kernels)" HEARTH_CPU=haswell HEARTH_BUILD_DIR=.build-haswell \
    swift test --no-parallel --scratch-path .build-haswell
fi
exit $status
