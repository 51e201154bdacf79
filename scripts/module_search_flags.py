#!/usr/bin/env python3
"""The search paths SwiftPM compiled a module with (its imports' modules and C module maps), read
from the debug build's manifest: `module_search_flags.py .build/debug.yaml MODULE` prints one
argument per line for swift-symbolgraph-extract. Exits 1 when the module is not in the build.
Used by scripts/build-docs.sh and scripts/check-public-api.sh."""
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
