#!/usr/bin/env bash
# Which of Hearth's public names clash with FoundationModels' (issue 64, item 4): compiles a file
# that imports a stand-in "FoundationModels" module (scripts/foundationmodels-standin: the
# framework's public top-level type names) beside each Hearth library module, naming every
# FoundationModels type unqualified, and lists the names the compiler finds ambiguous.
# Uses the debug build's modules (run `swift build` first); prints its wall time.
# Exit status: 0 when nothing clashes, 1 when something does, 2 when it cannot run.
set -euo pipefail
start=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/.build/debug
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -f "$root/.build/debug.yaml" ] || { echo "no debug build: run swift build --build-tests" >&2; exit 2; }

# The search paths SwiftPM gives the test targets that import the library modules (the C
# modules' maps among them).
python3 - "$root/.build/debug.yaml" > "$work/flags" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
keep = []
for target in ('HearthCloudTests', 'HearthServerTests', 'HearthMCPTests'):
    start = text.find('"C.%s-' % target)
    if start < 0: continue
    start = text.find('args: ', start) + 6
    args = json.loads(text[start:text.find('\n', start)])
    i = 0
    while i < len(args):
        if args[i] in ('-I', '-Xcc', '-target', '-module-cache-path'):
            if args[i] != '-target' or '-target' not in keep: keep += args[i:i + 2]
            i += 2; continue
        if args[i].startswith(('-I', '-D')): keep.append(args[i])
        i += 1
print('\n'.join(keep))
PY
mapfile -t flags < "$work/flags"

standin=$root/scripts/foundationmodels-standin/FoundationModels.swift
swiftc -parse-as-library -emit-module -module-name FoundationModels -o "$work/FoundationModels.swiftmodule" "$standin" 2>/dev/null
names=$(grep -oE '^(@resultBuilder )?public (final class|struct|protocol|enum) [A-Za-z]+' "$standin" | awk '{print $NF}')

status=0
for module in HearthProviders HearthMacros HearthLocal HearthHub HearthCloud HearthEngine HearthMCP HearthServer HearthConstraints HearthTemplates HearthTokenizers HearthFormats HearthKernels; do
    {
        echo "import FoundationModels"
        echo "import $module"
        n=0
        for name in $names; do n=$((n + 1)); echo "typealias Probe$n = $name"; done
    } > "$work/probe-$module.swift"
    if swiftc -typecheck -I "$work" "${flags[@]}" "$work/probe-$module.swift" > "$work/out-$module" 2>&1; then
        echo "$module: no clash"
    else
        clashes=$(grep -oE "'[A-Za-z]+' is ambiguous for type lookup" "$work/out-$module" | cut -d"'" -f2 | sort -u | tr '\n' ' ' || true)
        if [ -z "$clashes" ]; then
            echo "$module: the probe did not compile for another reason:" >&2
            head -20 "$work/out-$module" >&2
            exit 2
        fi
        echo "$module: $clashes"
        status=1
    fi
done
echo "check-foundationmodels-names: $(( $(date +%s) - start )) s"
exit $status
