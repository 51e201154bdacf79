#!/usr/bin/env bash
# Side-by-side benchmark: Hearth against llama.cpp (through llama-cpp-python),
# both engines reading the same GGUF files: a random-weight Phi-3-mini-shaped
# checkpoint quantized by llama.cpp to Q4_0, Q4_K_M, Q5_K_M, Q6_K and Q8_0 (plus
# Hearth's own q4_0 .hqf), and Gemma 3 270M Q4_K_M (models/). Writes
# benchmarks/work/last-run.json; a full run also benchmarks/results/ggufs.json and .md,
# and from benchmarks/results/ the page benchmarks/RESULTS.md with its plots. See benchmarks/README.md.
#
#   benchmarks/run.sh [--threads 2] [--reps 5] [--rounds 2] [--skip-hearth] ...
#   benchmarks/run.sh --models gemma,phi3-q4_k_m   # only these tables
#   benchmarks/run.sh --also-level avx512-vnni     # Hearth once more per file at this kernel level
#                                      # (default auto: so on a host where Hearth runs amx)
#   benchmarks/run.sh --prepare-only   # only make and check the model files
#   benchmarks/run.sh --setup-only     # only create/refresh benchmarks/.venv
#   benchmarks/run.sh --report-only    # only rewrite RESULTS.md and its plots from benchmarks/results/*.json
#   benchmarks/run.sh --check          # fail if RESULTS.md or its plots differ from a fresh rewrite
#                                      # (and run benchmarks/test_page.py)
#
# Everything it makes lives in benchmarks/.venv and benchmarks/work (both
# gitignored). Running it again reuses them: nothing is reinstalled, rebuilt,
# regenerated or re-converted that is already there.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
VENV="$HERE/.venv"
WORK="$HERE/work"
SRC="$WORK/src"
LOGS="$WORK/logs"

# One llama.cpp for everything: the library we benchmark is built from this
# sdist, and its vendored convert_hf_to_gguf.py / gguf-py convert the model.
LLAMA_CPP_PYTHON_VERSION="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
# The converter (vendor/llama.cpp/convert_hf_to_gguf.py) imports torch and
# transformers at module level; these are the versions its own
# requirements-convert_hf_to_gguf.txt names (transformers) or that work with it.
TRANSFORMERS_VERSION="4.57.6"
PY_PKGS=(numpy safetensors sentencepiece "protobuf>=4.21" "transformers==$TRANSFORMERS_VERSION")

setup_only=0
args=()
for a in "$@"; do
  case "$a" in
    --setup-only) setup_only=1 ;;
    -h|--help) sed -n '2,21p' "$0"; exec python3 "$HERE/bench.py" --help ;;
    *) args+=("$a") ;;
  esac
done

# The results page needs no venv, no lock and no benchmark: the committed JSON, python3's standard
# library, seconds (benchmarks/hearthbench/page.py).
for a in "$@"; do
  case "$a" in
    --report-only) exec python3 "$HERE/plot_summary.py" ;;
    --check) python3 "$HERE/plot_summary.py" --check && exec python3 "$HERE/test_page.py" -q ;;
  esac
done

mkdir -p "$WORK" "$SRC" "$LOGS"

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# One run at a time: two runs would share benchmarks/work and disturb each
# other's timings. The lock is released when this process (python after exec) ends.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$WORK/.run.lock"
  if ! flock -n 9; then
    log "another benchmarks/run.sh is running (lock $WORK/.run.lock); waiting for it to finish"
    flock 9
  fi
fi

find_python() {
  for p in "${PYTHON:-}" python3.11 python3.12 python3.10 python3; do
    [ -n "$p" ] && command -v "$p" >/dev/null 2>&1 && { command -v "$p"; return; }
  done
  echo "run.sh: no python3 found" >&2; exit 1
}

# A CPU-only torch wheel if the machine provides one in a pip find-links
# directory (PyPI's Linux torch wheels pull in several GB of CUDA libraries).
find_cpu_torch_wheel() {
  local dirs="${PIP_FIND_LINKS:-} /opt/wheels"
  local d w
  for d in $dirs; do
    d="${d#file://}"
    [ -d "$d" ] || continue
    for w in "$d"/torch-*+cpu-*.whl; do
      [ -f "$w" ] && { echo "$w"; return; }
    done
  done
}

# llama.cpp's extra compiler flags on this CPU (without AMX where it has AMX; the file says why).
. "$HERE/llama-cpu-flags.sh"

stamp_text() {
  echo "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  echo "cflags: $(llama_cpu_flags)"
  printf '%s\n' "${PY_PKGS[@]}"
}

setup_venv() {
  local stamp="$VENV/.hearth-bench-stamp"
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(stamp_text)" ] \
     && "$VENV/bin/python" -c 'import llama_cpp, gguf, numpy, safetensors, sentencepiece, google.protobuf, torch, transformers' 2>/dev/null; then
    log "venv ready: $VENV (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION)"
    return
  fi
  local py; py="$(find_python)"
  if [ ! -x "$VENV/bin/python" ]; then
    log "creating venv $VENV with $py"
    "$py" -m venv "$VENV"
  fi
  local pip=("$VENV/bin/python" -m pip --disable-pip-version-check)

  # The llama-cpp-python sdist: built into the venv, and its vendored
  # llama.cpp supplies convert_hf_to_gguf.py and gguf-py.
  local tgz="$SRC/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
  local dir="$SRC/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
  if [ ! -f "$tgz" ]; then
    log "downloading llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist"
    # --no-binary for this package only: ':all:' would also force its build
    # backend's dependencies (cmake, ninja) to be compiled from source.
    "${pip[@]}" download --no-deps --no-binary llama-cpp-python \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$SRC" >"$LOGS/pip-download.log" 2>&1
  fi
  if [ ! -f "$dir/vendor/llama.cpp/convert_hf_to_gguf.py" ]; then
    rm -rf "$dir"
    tar -xzf "$tgz" -C "$SRC"
  fi

  if ! "$VENV/bin/python" -c 'import torch' 2>/dev/null; then
    local whl; whl="$(find_cpu_torch_wheel)"
    if [ -n "$whl" ]; then
      log "installing CPU torch (for the converter) from $whl"
      "${pip[@]}" install "$whl" >"$LOGS/pip-torch.log" 2>&1
    else
      log "installing torch from PyPI (for the converter; no CPU-only wheel found locally, this is large)"
      "${pip[@]}" install torch >"$LOGS/pip-torch.log" 2>&1
    fi
  fi
  log "installing ${PY_PKGS[*]} and gguf (from the vendored gguf-py)"
  "${pip[@]}" install "${PY_PKGS[@]}" "$dir/vendor/llama.cpp/gguf-py" >"$LOGS/pip-deps.log" 2>&1

  if ! "$VENV/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null \
     || [ "$(cat "$VENV/.llama-cflags" 2>/dev/null)" != "$(llama_cpu_flags)" ]; then
    local cflags; cflags="$(llama_cpu_flags)"
    local again=()   # built before with other flags: pip would keep that build
    "$VENV/bin/python" -c 'import llama_cpp' 2>/dev/null && again=(--force-reinstall --no-deps)
    log "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (default flags, native CPU${cflags:+; $cflags}); this takes a while — log: $LOGS/pip-llama-cpp-python.log"
    local t0=$SECONDS
    CFLAGS="${CFLAGS:-} $cflags" CXXFLAGS="${CXXFLAGS:-} $cflags" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
      "${pip[@]}" install --no-cache-dir --verbose "${again[@]}" "$tgz" >"$LOGS/pip-llama-cpp-python.log" 2>&1 || {
        log "llama-cpp-python build failed; tail of the log:"; tail -n 40 "$LOGS/pip-llama-cpp-python.log" >&2; exit 1; }
    log "llama-cpp-python built in $((SECONDS - t0)) s"
    llama_cpu_flags >"$VENV/.llama-cflags"
  fi
  "$VENV/bin/python" -c 'import llama_cpp, gguf, numpy, safetensors, sentencepiece, google.protobuf, torch, transformers'
  stamp_text >"$stamp"
  log "venv ready: $VENV"
}

setup_venv
[ "$setup_only" = 1 ] && exit 0

cd "$REPO"
exec "$VENV/bin/python" "$HERE/bench.py" "${args[@]+"${args[@]}"}"
