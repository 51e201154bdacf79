#!/usr/bin/env bash
# Installs hearth for use outside the checkout: the release binary, stripped of its debug
# information (47 MB instead of 127), into PREFIX/bin, and shell completions for bash,
# zsh and fish into PREFIX/share. The binary carries the model registry (short names, the
# default model), so it needs nothing from the checkout: the default model is pulled from the
# Hugging Face hub into the user's cache on first use.
#
# Usage: scripts/install.sh [--prefix DIR] [--binary PATH]
#   --prefix DIR   where to install (default /usr/local: DIR/bin/hearth, DIR/share/…)
#   --binary PATH  install this build instead of building the release product
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -z "$binary" ]; then
    swift build -c release --product hearth
    binary="$(swift build -c release --show-bin-path)/hearth"
fi
[ -x "$binary" ] || { echo "no executable at $binary" >&2; exit 1; }

install -d "$prefix/bin" "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
    "$prefix/share/fish/vendor_completions.d"
if command -v strip >/dev/null; then
    strip --strip-debug -o "$prefix/bin/hearth.new" "$binary"
else
    echo "strip not found (binutils): installing with debug information" >&2
    cp "$binary" "$prefix/bin/hearth.new"
fi
chmod 755 "$prefix/bin/hearth.new"
mv "$prefix/bin/hearth.new" "$prefix/bin/hearth"
"$prefix/bin/hearth" --generate-completion-script bash > "$prefix/share/bash-completion/completions/hearth"
"$prefix/bin/hearth" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_hearth"
"$prefix/bin/hearth" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/hearth.fish"
echo "installed $("$prefix/bin/hearth" --version) at $prefix/bin/hearth ($(( $(stat -c %s "$prefix/bin/hearth") / 1048576 )) MB; built $(( $(stat -c %s "$binary") / 1048576 )) MB)"
echo "completions: $prefix/share/{bash-completion/completions/hearth,zsh/site-functions/_hearth,fish/vendor_completions.d/hearth.fish}"
