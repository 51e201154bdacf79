#!/usr/bin/env bash
# An app that embeds Hearth gets the fast kernels: makes a scratch package outside the repo that
# depends on Hearth the way users add it — by URL and version tag (a clone of this repository's
# HEAD, tagged, reached by a file:// URL) — builds it with a plain `swift build -c release`
# (no environment variable), and runs a short greedy generation on the default model next to
# the CLI's, alternating, same prompt, tokens and threads, speculative decoding off on both
# sides (its draft lengths follow the step times it measures, so two runs of one text can differ
# by ±20% — 136 to 203 tokens/s in one check — where plain decoding measures the kernels).
# Fails when the app's best decode speed is more than 5% below the CLI's best. With --readme-example the
# app also compiles the README's embedding example verbatim (it links HearthCloud, whose
# NIO/BoringSSL release build takes 10–20 minutes on 2 cores, so CI leaves it out).
#
#   scripts/check-embedding.sh [--runs 3] [--tokens 64] [--keep] [--readme-example]
#
# The app takes Hearth with `traits: []` (no `ModelHub`: no HearthHub and its HTTP stack, which
# doubled the app's build; no `SystemLibraries`: no OpenBLAS, no libsentencepiece,
# as on a platform without them), and `ldd` must show neither library in it: CI's check that the
# package builds and links without the trait (the tests of the trait-off code path run on the
# default build with `HEARTH_BLAS=hearth`: scripts/test-without-system-libraries.sh --same-build).
# Decoding calls no BLAS, so the speed comparison with the CLI is the same either way.
#
# --build-only DIR makes and builds the app in DIR and stops; --prebuilt DIR runs the comparison
# on it (and removes DIR unless --keep). CI starts the build in the background right after the
# system libraries are installed, beside setup.sh's release build (one build leaves about 15% of
# 2 cores idle: 170% CPU measured), and runs the comparison later on a quiet machine.
#
#   scripts/check-embedding.sh [--runs 3] [--tokens 64] [--keep] [--readme-example] [--build-only DIR | --prebuilt DIR]
# Needs scripts/setup.sh first (the default model and .build/release/hearth); --build-only needs
# only the system libraries (scripts/setup.sh --deps).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
runs=3 tokens=64 keep=0 readme=0 phase=all work=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --tokens) tokens="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --readme-example) readme=1; shift ;;
    --build-only) phase=build; work="$2"; shift 2 ;;
    --prebuilt) phase=run; work="$2"; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
model="$ROOT/models/$(python3 -c 'import json;r=json.load(open("models/registry.json"));d=r["default"];print(next(m["file"] for m in r["models"] if m["name"]==d))')"
cli="$ROOT/.build/release/hearth"
if [ "$phase" != build ]; then
  [ -f "$model" ] && [ -x "$cli" ] || { echo "run scripts/setup.sh first (model or CLI missing)" >&2; exit 1; }
fi
if [ -z "$work" ]; then
  work=$(mktemp -d /tmp/hearth-embed-XXXXXX)
  [ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
else
  mkdir -p "$work"
  if [ "$phase" = run ] && [ "$keep" = 0 ]; then trap 'rm -rf "$work"' EXIT; fi
fi
echo "scratch: $work"
app="$work/app/.build/release/EmbeddingCheck"
if [ "$phase" = run ]; then
  [ -x "$app" ] || { echo "FAIL: no app built in $work (scripts/check-embedding.sh --build-only $work first)" >&2; exit 1; }
else

# The dependency: HEAD of this repository, tagged as a release.
git clone -q --no-local "$ROOT" "$work/hearth"
git -C "$work/hearth" tag 999.0.0

mkdir -p "$work/app/Sources/EmbeddingCheck"
cat > "$work/app/Package.swift" <<EOF
// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "EmbeddingCheck",
    platforms: [.macOS(.v15)],
    dependencies: [.package(url: "file://$work/hearth", from: "999.0.0", traits: [])],
    targets: [
        .executableTarget(
            name: "EmbeddingCheck",
            dependencies: [
                .product(name: "HearthEngine", package: "hearth"), .product(name: "HearthKernels", package: "hearth"),
                .product(name: "HearthLocal", package: "hearth"), .product(name: "HearthProviders", package: "hearth"),
            ])
    ]
)
EOF

# The README's embedding example, verbatim (compiled; run only when an OpenAI key is set).
if [ "$readme" = 1 ]; then
sed -i 's/.product(name: "HearthLocal", package: "hearth"),/.product(name: "HearthLocal", package: "hearth"), .product(name: "HearthCloud", package: "hearth"),/' "$work/app/Package.swift"
python3 - "$ROOT/README.md" > "$work/app/Sources/EmbeddingCheck/ReadmeExample.swift" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
section = text[text.index("## In an app"):]
code = re.search(r"```swift\n(.*?)```", section, re.S).group(1)
imports = [l for l in code.splitlines() if l.startswith("import ")]
body = [l for l in code.splitlines() if not l.startswith("import ")]
print("\n".join(imports))
print("\nfunc readmeExample() async throws {")
print("\n".join("    " + l if l else l for l in body))
print("}")
PY
else
  echo 'func readmeExample() async throws {}' > "$work/app/Sources/EmbeddingCheck/ReadmeExample.swift"
fi

cat > "$work/app/Sources/EmbeddingCheck/main.swift" <<'EOF'
import Foundation
import HearthEngine

// A short greedy generation through the engine an app embeds; prints decode tokens/s as JSON.
let arguments = CommandLine.arguments
let model = try TransformerModel(path: arguments[1], threads: 2)
let generator = try Generator(model: model, context: 512, threads: 2)
var parameters = GenerationParameters()
parameters.sampling.temperature = 0
parameters.maxTokens = Int(arguments[3]) ?? 64
parameters.speculative = .off  // plain decoding: the kernels' speed, not the drafts' luck
let prompt = try model.tokenizer.encode(arguments[2], addSpecialTokens: true)
var count = 0
let summary = try generator.run(prompt: prompt, parameters: parameters) { _ in count += 1 }
print("{\"decode_tokens_per_second\":\(summary.decodeTokensPerSecond),\"completion_tokens\":\(count),\"kernel\":\"\(quantizedKernelLevelName())\"}")
if ProcessInfo.processInfo.environment["OPENAI_API_KEY"] != nil { try await readmeExample() }
EOF
cat > "$work/app/Sources/EmbeddingCheck/Level.swift" <<'EOF'
import HearthKernels

func quantizedKernelLevelName() -> String { KernelLevel.current.rawValue }
EOF

echo "building the app (swift build -c release, no environment variable, Hearth's traits off)…"
built_start=$(date +%s)
(cd "$work/app" && env -u HEARTH_CPU swift build -c release 2>&1 | tail -3)
[ -x "$app" ] || { echo "FAIL: the app did not build" >&2; exit 1; }
echo "app built in $(( $(date +%s) - built_start )) s"
# Without the trait nothing links OpenBLAS or libsentencepiece.
linked="$(ldd "$app")"
if grep -Ei 'openblas|libblas|sentencepiece' <<< "$linked"; then
  echo "FAIL: the app links a system library the SystemLibraries trait should have kept out" >&2
  exit 1
fi
echo "ldd EmbeddingCheck: no OpenBLAS, no libsentencepiece ($(wc -l <<< "$linked") libraries)"
[ "$phase" = build ] && exit 0
fi

prompt="The history of the printing press"
app_rates=() cli_rates=()
for i in $(seq "$runs"); do
  a=$(env -u HEARTH_CPU "$app" "$model" "$prompt" "$tokens" | python3 -c 'import json,sys;print(json.load(sys.stdin)["decode_tokens_per_second"])')
  c=$(env -u HEARTH_CPU "$cli" generate --model "$model" --prompt "$prompt" --raw --temperature 0 --speculative off --max-tokens "$tokens" -t 2 --ctx 512 --json \
      | tail -1 | python3 -c 'import json,sys;print(json.load(sys.stdin)["decode_tokens_per_second"])')
  echo "run $i: app $a t/s, cli $c t/s"
  app_rates+=("$a") cli_rates+=("$c")
done
level=$(env -u HEARTH_CPU "$app" "$model" "$prompt" 4 | python3 -c 'import json,sys;print(json.load(sys.stdin)["kernel"])')
python3 - "$level" "${app_rates[*]}" "${cli_rates[*]}" <<'PY'
import statistics, sys
level, app, cli = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
# Each side's best run is what its code can do: other work on the machine (a 2-core CI host) only
# slows runs down, so the medians of 5 alternating runs still parted by up to 5% between two
# builds of the same code (0.949 in one run on a busy host); both are printed. One fast outlier
# run moves the best instead (session 36's CI: the CLI's runs 141-147 t/s and one of 161.6, the
# app's 143-149: best ratio 0.921, median ratio 1.015), so the app passes when either ratio is
# at least 0.95: a build that is really slower (a kernel level lost, the engine not optimized)
# is slower in both.
a, c = max(app), max(cli)
ma, mc = statistics.median(app), statistics.median(cli)
print(f"embedding app: kernel level {level}; decode median {ma:.2f} t/s vs CLI {mc:.2f} t/s: ratio {ma / mc:.3f}; "
      f"best {a:.2f} vs {c:.2f} t/s: ratio {a / c:.3f}")
sys.exit(0 if max(a / c, ma / mc) >= 0.95 else 1)
PY
