#!/usr/bin/env bash
# Hearth's public API, checked (issue 64, item 4): extracts the public symbols of every library
# product's module from the debug build (swift-symbolgraph-extract, with the search paths SwiftPM
# compiled the module with, as scripts/build-docs.sh does: no extra build, seconds) and compares
# them with the committed lists in docs/public-api/<Module>.txt. Fails, naming the symbols, when a
# public symbol appears that is not in its list or one in the list disappears: making something
# public, or taking it away from apps, is then a decision the diff shows. What is public and why:
# docs/SWIFT-API.md#what-is-public.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/check-public-api.sh [--update] [--modules "A B ..."] [--scratch-path DIR]

Compares the public symbols of each library product's module (Package.swift's `.library` lines)
with docs/public-api/<Module>.txt, from the debug build's modules: run `swift build --build-tests`
(or `swift build`) first.

One line per symbol, sorted: its path (an extension of another module's type is prefixed with
"(extension in Module)"), a tab, and its declaration as the symbol graph gives it. The members the
compiler synthesizes (Equatable's `!=`, Codable's `init(from:)`…) are left out.

Options:
  --update             rewrite the lists from the build (then review and commit the diff)
  --modules "A B"      only these modules
  --scratch-path DIR   the build directory (default .build)
  -h, --help           this text

Exit status: 0 when every module matches its list, 1 when one does not (the symbols are named),
2 when it cannot run (no debug build, or sources edited since it; no swift-symbolgraph-extract).
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$root/.build
update=0
modules=""
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --update) update=1; shift ;;
        --modules) [ $# -ge 2 ] || { echo "--modules needs a list" >&2; exit 2; }; modules=$2; shift 2 ;;
        --scratch-path) [ $# -ge 2 ] || { echo "--scratch-path needs a directory" >&2; exit 2; }; scratch=$(realpath -m "$2"); shift 2 ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
done

start=$(date +%s.%N)
cd "$root"
lists=$root/docs/public-api
[ -n "$modules" ] || modules=$(grep -oE '\.library\(name: "[A-Za-z]+", targets: \["[A-Za-z]+"\]' Package.swift | grep -oE '"[A-Za-z]+"\]' | tr -d '"]' | tr '\n' ' ')
swift_bin=$(dirname "$(readlink -f "$(command -v swift)")")
extract=$swift_bin/swift-symbolgraph-extract
[ -x "$extract" ] || extract=$(command -v swift-symbolgraph-extract || true)
[ -n "$extract" ] || { echo "swift-symbolgraph-extract not found beside swift" >&2; exit 2; }
yaml=$scratch/debug.yaml
[ -f "$yaml" ] || { echo "no debug build: run swift build --build-tests first" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$lists"

status=0
for module in $modules; do
    # A module compiled before its sources' last edit would give the old surface.
    swiftmodule=$scratch/debug/Modules/$module.swiftmodule
    [ -f "$swiftmodule" ] || { echo "$module: not in the debug build: run swift build --build-tests first" >&2; exit 2; }
    newer=$(find "Sources/$module" -name '*.swift' -newer "$swiftmodule" 2>/dev/null | head -1)
    [ -z "$newer" ] || { echo "$newer changed after the debug build: run swift build --build-tests first" >&2; exit 2; }
    # The search paths SwiftPM compiled the module with (its imports' modules and C module maps).
    python3 "$root/scripts/module_search_flags.py" "$yaml" "$module" > "$work/$module.flags" || { echo "$module: not in the debug build: run swift build --build-tests first" >&2; exit 2; }
    mapfile -t flags < "$work/$module.flags"
    graphs=$work/graphs/$module
    mkdir -p "$graphs"
    if ! "$extract" -module-name "$module" -minimum-access-level public -skip-inherited-docs \
        -output-dir "$graphs" "${flags[@]}" > "$work/$module.extract" 2>&1; then
        echo "$module: swift-symbolgraph-extract failed:" >&2
        head -20 "$work/$module.extract" >&2
        exit 2
    fi
    # One line per symbol: path, tab, declaration (whitespace collapsed), sorted bytewise. A protocol
    # requirement and its default implementation are two symbols with the same line.
    python3 - "$graphs" "$module" > "$work/$module.txt" <<'PY'
import glob, json, os, re, sys
graphs, module = sys.argv[1], sys.argv[2]
lines = []
for path in glob.glob(graphs + "/*.symbols.json"):
    name = os.path.basename(path)[:-len(".symbols.json")]
    extended = name.split("@", 1)[1] if "@" in name else None
    for s in json.load(open(path))["symbols"]:
        if "::SYNTHESIZED::" in s["identifier"]["precise"]:
            continue
        where = ".".join(s["pathComponents"])
        if extended:
            where = "(extension in %s) %s" % (extended, where)
        declaration = re.sub(r"\s+", " ", "".join(f["spelling"] for f in s.get("declarationFragments", []))).strip()
        lines.append("%s\t%s" % (where, declaration))
for line in sorted(lines, key=lambda l: l.encode()):
    print(line)
PY
    count=$(wc -l < "$work/$module.txt")
    list=$lists/$module.txt
    if [ "$update" = 1 ]; then
        cp "$work/$module.txt" "$list"
        echo "$module: $count public symbols written to docs/public-api/$module.txt"
        continue
    fi
    if [ ! -f "$list" ]; then
        echo "$module: no list at docs/public-api/$module.txt (scripts/check-public-api.sh --update makes it)"
        status=1
        continue
    fi
    added=$(comm -13 <(LC_ALL=C sort "$list") <(LC_ALL=C sort "$work/$module.txt") || true)
    removed=$(comm -23 <(LC_ALL=C sort "$list") <(LC_ALL=C sort "$work/$module.txt") || true)
    if [ -z "$added" ] && [ -z "$removed" ]; then
        echo "$module: $count public symbols, as listed"
        continue
    fi
    status=1
    echo "$module: the public API differs from docs/public-api/$module.txt:"
    [ -z "$added" ] || sed 's/^/  new public: /' <<< "$added"
    [ -z "$removed" ] || sed 's/^/  no longer public: /' <<< "$removed"
done
if [ "$status" != 0 ]; then
    echo "If the change is meant, run scripts/check-public-api.sh --update and commit the lists (docs/SWIFT-API.md#what-is-public);" \
        "otherwise make the declaration \`package\` (shared between Hearth's modules) or internal."
fi
echo "check-public-api: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s wall time"
exit $status
