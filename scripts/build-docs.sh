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
Usage: scripts/build-docs.sh [--output DIR] [--modules "A B ..."]

Builds the DocC documentation of Hearth's app-facing modules (HearthProviders, HearthLocal,
HearthHub) as .doccarchive folders, from the debug build's modules: run
`swift build --build-tests` (or `swift build`) first. Fails on any DocC warning, including
a broken ``symbol`` link in a doc comment or an article.

Options:
  --output DIR      where the archives go (default .build/docs); DIR/<Module>.doccarchive
  --modules "A B"   build only these modules (each needs Sources/<Module>/<Module>.docc)
  -h, --help        this text

Prints each module's public symbol count (from its symbol graph: the module's own declarations,
and members it adds to other modules' types) and the wall time.
To browse an archive: `docc preview Sources/HearthLocal/HearthLocal.docc` with the same
symbol graphs, or serve DIR/HearthLocal.doccarchive from any static web server (it is built
for static hosting) and open /documentation/hearthlocal.
Exit status: 0 when every archive built without a warning, 1 on a warning or error, 2 when it
cannot run (no debug build, no docc).
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
output=$root/.build/docs
modules="HearthProviders HearthLocal HearthHub"
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --output) [ $# -ge 2 ] || { echo "--output needs a directory" >&2; exit 2; }; output=$2; shift 2 ;;
        --modules) [ $# -ge 2 ] || { echo "--modules needs a list" >&2; exit 2; }; modules=$2; shift 2 ;;
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

status=0
for module in $modules; do
    catalog=$root/Sources/$module/$module.docc
    [ -d "$catalog" ] || { echo "$module: no catalog at Sources/$module/$module.docc" >&2; exit 2; }
    # The search paths SwiftPM compiled the module with (its imports' modules and C module maps).
    python3 - "$yaml" "$module" > "$work/$module.flags" <<'PY' || { echo "$module: not in the debug build: run swift build --build-tests first" >&2; exit 2; }
import json, sys
module = sys.argv[2]
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith('args: [') and '"-module-name","%s"' % module in line and '"-emit-module"' in line:
        args = json.loads(line[len('args: '):])
        break
else:
    sys.exit(1)
keep, i = [], 0
while i < len(args):
    if args[i] in ('-I', '-F', '-Xcc', '-target', '-module-cache-path'):
        keep += args[i:i + 2]; i += 2; continue
    if args[i].startswith('-I') and len(args[i]) > 2: keep.append(args[i])
    i += 1
print('\n'.join(keep))
PY
    mapfile -t flags < "$work/$module.flags"
    graphs=$work/graphs/$module
    mkdir -p "$graphs"
    if ! "$extract" -module-name "$module" -minimum-access-level public -skip-inherited-docs \
        -output-dir "$graphs" "${flags[@]}" > "$work/$module.extract" 2>&1; then
        echo "$module: swift-symbolgraph-extract failed:" >&2
        head -20 "$work/$module.extract" >&2
        status=1; continue
    fi
    # Public symbols: the module's own, and those it adds in extensions of other modules' types.
    own=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["symbols"]))' "$graphs/$module.symbols.json")
    extensions=$(python3 -c 'import json,sys; print(sum(len(json.load(open(p))["symbols"]) for p in sys.argv[1:]))' \
        $(find "$graphs" -name "$module@*.symbols.json"))
    rm -rf "$output/$module.doccarchive"
    if "$docc" convert "$catalog" --additional-symbol-graph-dir "$graphs" \
        --fallback-display-name "$module" --fallback-bundle-identifier "org.hearth.$module" \
        --transform-for-static-hosting --warnings-as-errors \
        --output-path "$output/$module.doccarchive" > "$work/$module.docc" 2>&1; then
        echo "$module: $((own + extensions)) public symbols ($own its own, $extensions in extensions of other modules' types); archive $output/$module.doccarchive"
    else
        echo "$module: $((own + extensions)) public symbols; DocC FAILED:" >&2
        grep -vE '^(Error: An error was encountered|$)' "$work/$module.docc" | head -60 >&2
        status=1
    fi
done
echo "build-docs: $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s wall time"
exit $status
