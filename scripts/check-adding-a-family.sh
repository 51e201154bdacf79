#!/usr/bin/env bash
# Checks that docs/adding-a-family.patch still adds a model family the way docs/ARCHITECTURE.md
# says: exactly one new file in Sources/HearthEngine/Families/ plus one added line in the registry
# (`ModelFamilies.all` in Sources/HearthEngine/ModelFamily.swift), and that HearthEngine builds
# with it. It applies the patch to the working tree, builds the HearthEngine target in the
# default build folder (only HearthEngine recompiles; the modules below it are reused) and takes
# the patch out again on every way out, failure and interrupt included. It prints how long the
# build took. The next build then recompiles HearthEngine and what depends on it, so CI runs
# this last.
#
# Usage: scripts/check-adding-a-family.sh [--scratch-path DIR] [-- swift build flags]
# (CI passes `-- --disable-default-traits`: the build folder then holds the trait-off build the
# step before it made, and only HearthEngine recompiles.)
set -euo pipefail
cd "$(dirname "$0")/.."
patch=docs/adding-a-family.patch
flags=()
if [ "${1:-}" = "--scratch-path" ]; then flags=(--scratch-path "$2"); shift 2; fi
[ "${1:-}" = "--" ] && shift
flags+=("$@")
registry=Sources/HearthEngine/ModelFamily.swift

fail() { echo "FAIL: $*" >&2; exit 1; }

# The shape: one created family file, one line added to the registry, nothing else.
numstat="$(git apply --numstat "$patch")"
[ "$(wc -l <<< "$numstat")" -eq 2 ] || fail "$patch touches $(wc -l <<< "$numstat") files, not a family file and the registry:"$'\n'"$numstat"
grep -qxP "1\t0\t$registry" <<< "$numstat" || fail "$patch must add exactly one line to $registry:"$'\n'"$numstat"
family="$(grep -v -P "\t$registry\$" <<< "$numstat" | cut -f3)"
[[ "$family" =~ ^Sources/HearthEngine/Families/[A-Za-z0-9]+\.swift$ ]] || fail "the new file $family is not in Sources/HearthEngine/Families/"
git apply --summary "$patch" | grep -qx " create mode 100644 $family" || fail "$family must be a new file"
# It describes a family Hearth does not run yet: none of its architecture strings (Hugging Face
# `architectures`, GGUF `ggufArchitecture`) is claimed by a registered family's file. (Once a
# family is registered for real, as Qwen2 was, the patch must move on to another one.)
claimed="$(grep -ohP '(?:public|package) static let (architectures|ggufArchitecture)\b[^=]*=\s*\K.*' Sources/HearthEngine/Families/*.swift | grep -oP '"[^"]+"' | tr -d '"')"
names="$(grep -oP '^\+\s*(?:public|package) static let (architectures|ggufArchitecture)\b[^=]*=\s*\K.*' "$patch" | grep -oP '"[^"]+"' | tr -d '"' || true)"
[ -n "$names" ] || fail "$family declares no architectures"
while read -r name; do
    grep -qxF "$name" <<< "$claimed" && fail "$name is already run by a registered family: $patch must describe one that is not"
done <<< "$names"

git apply --check "$patch" || fail "$patch no longer applies: regenerate it against this tree"

applied=0
restore() { if [ "$applied" = 1 ]; then git apply -R "$patch" && applied=0; fi; }
trap restore EXIT
trap 'exit 130' INT TERM
git apply "$patch"
applied=1

start=$(date +%s)
# In the background, so an interrupt stops the build and restores the tree at once.
swift build --target HearthEngine "${flags[@]}" &
build=$!
trap 'kill "$build" 2>/dev/null; wait "$build" 2>/dev/null || true; exit 130' INT TERM
wait "$build" || fail "HearthEngine does not build with $patch applied"
echo "adding-a-family: $family plus one registry line; HearthEngine built in $(( $(date +%s) - start ))s"
