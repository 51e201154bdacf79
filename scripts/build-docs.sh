#!/usr/bin/env bash
# Builds the DocC archives of HearthProviders, HearthLocal and HearthHub (issue 64, item 6) from
# the debug build's modules, failing on any DocC warning, and prints each module's public symbol
# count and the wall time.
#
# `swift package generate-documentation` rebuilds every module to emit symbol graphs (minutes on
# two cores); this script instead extracts them from the modules `swift build --build-tests` has
# already built (swift-symbolgraph-extract, with the search paths SwiftPM gave the module) and
# converts each catalog with `docc convert --warnings-as-errors`: seconds.
set -euo pipefail

usage() {
    cat <<'EOF'
Usage: scripts/build-docs.sh [--output DIR] [--modules "A B ..."] [--count-all]

Builds the DocC documentation of Hearth's app-facing modules (HearthProviders, HearthLocal,
HearthHub) as .doccarchive folders, from the debug build's modules: run
`swift build --build-tests` (or `swift build`) first. Fails on any DocC warning, including
a broken ``symbol`` link in a doc comment or an article.

Options:
  --output DIR      where the archives go (default .build/docs); DIR/<Module>.doccarchive
  --modules "A B"   build only these modules (each needs Sources/<Module>/<Module>.docc)
  --count-all       also print the public symbol count of every library product's module
                    (symbol graphs only, no archive; about 3 s more)
  -h, --help        this text

Prints each module's public symbol count (from its symbol graphs: the public declarations,
those in extensions of other modules' types included, and apart from them the members the
compiler synthesizes) and the wall time.
To browse an archive, serve it from any static web server (it is built for static hosting),
e.g. `python3 -m http.server -d .build/docs/HearthLocal.doccarchive 8000`, and open
http://127.0.0.1:8000/documentation/hearthlocal.
Exit status: 0 when every archive built without a warning, 1 on a warning or error, 2 when it
cannot run (no debug build, or sources edited since it; no docc).
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
output=$root/.build/docs
modules="HearthProviders HearthLocal HearthHub"
count_all=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --output) [ $# -ge 2 ] || { echo "--output needs a directory" >&2; exit 2; }; output=$2; shift 2 ;;
        --modules) [ $# -ge 2 ] || { echo "--modules needs a list" >&2; exit 2; }; modules=$2; shift 2 ;;
        --count-all) count_all=1; shift ;;
        *) echo "unknown option: $1 (see --help)" >&2; exit 2 ;;
    esac
done

start=$(date +%s.%N)
output=$(realpath -m "$output")
cd "$root"   # DocC names the files of its diagnostics relative to here
swift_bin=$(dirname "$(readlink -f "$(command -v swift)")")
docc=$swift_bin/docc
extract=$swift_bin/swift-symbolgraph-extract
[ -x "$docc" ] || docc=$(command -v docc || true)
[ -x "$extract" ] || extract=$(command -v swift-symbolgraph-extract || true)
[ -n "$docc" ] && [ -n "$extract" ] || { echo "docc and swift-symbolgraph-extract not found beside swift" >&2; exit 2; }
yaml=$root/.build/debug.yaml
[ -f "$yaml" ] || { echo "no debug build: run swift build --build-tests first" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$output"

# Writes the public symbol graphs of module $1 into $work/graphs/$1 and its counts into
# $work/$1.count; returns 1 when the module cannot be read.
extract_graphs() {
    local module=$1 graphs=$work/graphs/$1
    # The search paths SwiftPM compiled the module with (its imports' modules and C module maps).
    python3 "$root/scripts/module_search_flags.py" "$yaml" "$module" > "$work/$module.flags" || { echo "$module: not in the debug build: run swift build --build-tests first"; return 1; }
    local flags
    mapfile -t flags < "$work/$module.flags"
    mkdir -p "$graphs"
    if ! "$extract" -module-name "$module" -minimum-access-level public -skip-inherited-docs \
        -output-dir "$graphs" "${flags[@]}" > "$work/$module.extract" 2>&1; then
        echo "$module: swift-symbolgraph-extract failed:"
        head -20 "$work/$module.extract"
        return 1
    fi
    # Public declarations (the module's own and those in its extensions of other modules' types),
    # and the members the compiler synthesizes (Equatable's `!=`, Codable's `init(from:)`…) apart.
    python3 -c '
import glob, json, sys
symbols = [s for p in glob.glob(sys.argv[1] + "/*.symbols.json") for s in json.load(open(p))["symbols"]]
synthesized = sum("::SYNTHESIZED::" in s["identifier"]["precise"] for s in symbols)
print(len(symbols) - synthesized, synthesized)' "$graphs" > "$work/$module.count"
}

status=0
for module in $modules; do
    catalog=$root/Sources/$module/$module.docc
    [ -d "$catalog" ] || { echo "$module: no catalog at Sources/$module/$module.docc" >&2; exit 2; }
    # Doc comments come from the build's .swiftdoc and their positions from its source info:
    # a source edited since would be quoted at the wrong lines.
    newer=$(find "Sources/$module" -name '*.swift' -newer "$root/.build/debug/Modules/$module.swiftdoc" 2>/dev/null | head -1)
    [ -z "$newer" ] || { echo "$newer changed after the debug build: run swift build --build-tests first" >&2; exit 2; }
    extract_graphs "$module" || { status=1; continue; }
    graphs=$work/graphs/$module
    read -r declared synthesized < "$work/$module.count"
    rm -rf "$output/$module.doccarchive"
    if "$docc" convert "$catalog" --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.hearth.$module" \
        --transform-for-static-hosting --warnings-as-errors --ide-console-output \
        --output-path "$output/$module.doccarchive" > "$work/$module.docc" 2>&1; then
        echo "$module: $declared public declarations (+$synthesized synthesized members); archive $output/$module.doccarchive"
    else
        echo "$module: $declared public declarations (+$synthesized synthesized members); DocC FAILED:"
        grep -vE '^(Error: An error was encountered|$)' "$work/$module.docc" | sed "s|$root/||" | head -60
        status=1
    fi
done
if [ "$count_all" = 1 ]; then
    # The library products' modules (Package.swift's `.library(name:targets:)` lines).
    total=0
    for module in $(grep -oE '\.library\(name: "[A-Za-z]+", targets: \["[A-Za-z]+"\]' Package.swift | grep -oE '"[A-Za-z]+"\]' | tr -d '"]'); do
        [ -f "$work/$module.count" ] || extract_graphs "$module" || { status=1; continue; }
        read -r declared synthesized < "$work/$module.count"
        echo "  $module: $declared (+$synthesized synthesized)"
        total=$((total + declared))
    done
    echo "public declarations of all library modules: $total"
fi
echo "build-docs: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s wall time"
exit $status
