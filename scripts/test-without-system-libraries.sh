#!/usr/bin/env bash
# The build an app gets on a platform without OpenBLAS or libsentencepiece: builds everything
# and runs the whole test suite with the package's default traits off (no `SystemLibraries`:
# Hearth's own GEMM does the BLAS products, the tokenizer tests check the committed ids of the
# PyPI sentencepiece package), then shows with `ldd` that neither library is linked into the
# `hearth` binary or the test bundle. A second full build, by default in its own scratch path so
# the default build is left alone; `--scratch-path .build` builds in the default folder instead, where the dependencies' objects are reused and only
# Hearth's own modules recompile (236 s against 482 s cold, 2 cores) — the next default build
# then recompiles them again. It prints how long the build and the tests took.
#
# The example apps' tests and HearthMacrosTests are skipped too:
# they drive the same engine paths the suites here cover (issue 60: CI's budget).
# Seven test modules whose code paths the trait and the kernel level do not reach are skipped
# unless --all is given: HearthServerTests, HearthCloudTests, HearthProvidersTests,
# HearthTemplatesTests, HearthHubTests, HearthFormatsTests and HearthConstraintsTests (HTTP, cloud
# wire formats, the provider protocol, the Jinja interpreter, the hub client, file parsing and
# grammar compilation: no BLAS product, no SentencePiece call and no kernel dispatch of their own;
# the model they drive runs through the engine suites that do run here). They are ~70 s of the
# default suite, which runs them (issue 60: CI's budget). So are the CLI suites that drive commands'
# behaviour rather than the model's numbers (the chat REPL, serve, the hub, the gateway, tools,
# reasoning, templates, option declarations, the generated reference: ~25 s); the CLI's accuracy
# suites (CLITests, RealModelTests, KLDivergenceTests, EmbedCLITests, MLXCLITests…) run. Four slow suites are skipped too: WindowCacheTests,
# QuantizedKVCacheTests, RepackCacheTests and SpeculativeRealModelTests compare two paths of the
# same build with each other (window-sized against full-length cache, quantized against f16
# cache, repack-cache file against the in-memory repack, speculative against plain decoding), so
# whatever the trait changes (which GEMM runs the products, which tokenizer runs) runs on both
# sides of each comparison; they take ~160 s of the suite (~360 s before debug builds compiled whole-module; 2026-11-28, 2 cores) and run in the
# default build's whole suite.
#
# With --lower-level the tests run at one kernel level below this CPU's best (HEARTH_CPU, which the
# release-binary CLI tests inherit; avx2 below an AVX-512 best, portable below avx2:
# scripts/lower-level.sh): CI's run at a lower level, on the whole suite rather than the
# accuracy suites scripts/test-variants.sh runs at each level (their filter is a subset of what
# runs here).
#
# With --same-build (what CI runs, issue 60: its budget) nothing is rebuilt: the same tests run on
# the default build (`swift test`'s, in .build) with `HEARTH_BLAS=hearth`, which makes a build that
# links OpenBLAS run Hearth's own GEMM — the code the trait-off build runs for every BLAS product
# (Sources/HearthKernels/BLAS.swift; the only run-time difference the trait makes). That the
# package still compiles and links without the trait is CI's embedding check
# (scripts/check-embedding.sh builds its app on Hearth with `traits: []` and runs ldd on it).
#
# Usage: scripts/test-without-system-libraries.sh [--same-build | --scratch-path DIR] [--lower-level] [--all] [-- swift test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=".build-no-system-libraries"
same=0
if [ "${1:-}" = "--same-build" ]; then same=1; shift; fi
if [ "${1:-}" = "--scratch-path" ]; then scratch="$2"; shift 2; fi
level=()
if [ "${1:-}" = "--lower-level" ]; then
  source scripts/lower-level.sh
  lower=$(lower_level)
  [ -n "$lower" ] && level=(env "HEARTH_CPU=$lower")
  echo "tests at kernel level ${lower:-portable, the best this CPU runs}"
  shift
fi
skip=(--skip 'WindowCacheTests|QuantizedKVCacheTests|RepackCacheTests|SpeculativeRealModelTests|TenLineAppExampleTests|ServerInAppExampleTests|^(HearthMacrosTests|HearthServerTests|HearthCloudTests|HearthProvidersTests|HearthTemplatesTests|HearthHubTests|HearthFormatsTests|HearthConstraintsTests)\.|^HearthCLITests\.(ChatTests|BailianChatTests|ResponsesChatTests|ReasoningCLITests|HubCLITests|GatewayCLITests|ServeCLITests|ServePromptCacheModelsTests|ToolsCLITests|StructuredCLITests|ChatTemplateCLITests|OptionDeclarationTests|CLIReferenceTests|RegistryLocationCLITests)/')
if [ "${1:-}" = "--all" ]; then skip=(); shift; fi
[ "${1:-}" = "--" ] && shift
flags=(--disable-default-traits --scratch-path "$scratch")

if [ "$same" = 1 ]; then
  start=$(date +%s)
  echo "the default build with HEARTH_BLAS=hearth (Hearth's own GEMM, as without the trait)"
  ${level[@]+"${level[@]}"} env HEARTH_BLAS=hearth swift test --skip-build --no-parallel "${skip[@]}" "$@"
  echo "own GEMM on the default build: tests $(( $(date +%s) - start )) s"
  exit 0
fi

start=$(date +%s)
swift build --build-tests "${flags[@]}"
built=$(date +%s)
${level[@]+"${level[@]}"} swift test --skip-build --no-parallel "${flags[@]}" "${skip[@]}" "$@"
tested=$(date +%s)

bin="$(swift build --show-bin-path "${flags[@]}")"
status=0
for file in "$bin/hearth" "$bin/HearthPackageTests.xctest"; do
    [ -f "$file" ] || { echo "missing $file" >&2; status=1; continue; }
    linked="$(ldd "$file")"
    if grep -Ei 'openblas|libblas|sentencepiece' <<< "$linked"; then
        echo "FAIL: $file links a system library the SystemLibraries trait should have kept out" >&2
        status=1
    else
        echo "ldd $(basename "$file"): no OpenBLAS, no libsentencepiece ($(wc -l <<< "$linked") libraries)"
    fi
done
echo "without system libraries: build $((built - start)) s, tests $((tested - built)) s"
exit $status
