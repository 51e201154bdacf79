#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` (parallel slots, continuous batching), `llama-bench` and
# `llama-perplexity` from the llama.cpp sources that the llama-cpp-python source distribution on
# PyPI vendors (vendor/llama.cpp), for benchmarks/serve.sh, speculative.py, long_context.sh and
# long_and_speculative.py. Native CPU flags (-DGGML_NATIVE=ON), Release, only those targets.
# No network beyond PyPI: the server's web UI is not downloaded (LLAMA_USE_PREBUILT_UI=OFF,
# LLAMA_BUILD_UI=OFF), HTTPS client support is off (LLAMA_OPENSSL=OFF, LLAMA_CURL=OFF).
#
# Not run by CI (it takes ~10-15 min of 2 cores). On a shared machine wrap it:
#   nice -n 10 flock /tmp/hearth-cpu.lock benchmarks/build-llama-server.sh
#
# Usage: benchmarks/build-llama-server.sh [--dir DIR] [--version V] [--jobs N]
#   --dir      where the sdist, the unpacked sources and the build go (default /work/llama-build,
#              or $LLAMA_BUILD_DIR); the binaries end up in DIR/build/bin/
#   --version  llama-cpp-python version whose vendored llama.cpp is built (default 0.3.36, the
#              version benchmarks/run.sh pins)
#   --jobs     parallel compile jobs (default 2)
# Needs: python3 with pip, cmake >= 3.18, a C++17 compiler (Debian: apt-get install cmake g++).
set -euo pipefail
dir="${LLAMA_BUILD_DIR:-/work/llama-build}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
jobs=2
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir="$2"; shift 2 ;;
        --version) version="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
for tool in cmake c++ python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool (Debian: apt-get install cmake g++ python3-pip)" >&2; exit 1; }
done
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
sdist="$dir/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
    # Only this package as source: its build requirements (scikit-build-core, cmake) may come as
    # wheels while pip prepares the metadata (with --no-binary :all: pip compiles cmake itself).
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$dir"
fi
src="$dir/llama_cpp_python-$version/vendor/llama.cpp"
if [ ! -d "$src" ]; then
    tar -xzf "$sdist" -C "$dir"
fi
server_dir=""
for candidate in tools/server examples/server; do
    [ -f "$src/$candidate/CMakeLists.txt" ] && { server_dir="$candidate"; break; }
done
[ -n "$server_dir" ] || { echo "no llama-server sources (tools/server or examples/server) in $src" >&2; exit 1; }
echo "llama.cpp sources: $src ($server_dir; commit $(cd "$src" && git rev-parse --short HEAD 2>/dev/null || echo unknown))"
# On CPUs with AMX, built without it, as benchmarks/run.sh builds llama-cpp-python
# (benchmarks/llama-cpu-flags.sh says why; LLAMA_AMX=on keeps it).
. "$(dirname "${BASH_SOURCE[0]}")/llama-cpu-flags.sh"
cflags="$(llama_cpu_flags)"
cmake -S "$src" -B "$dir/build" \
    -DCMAKE_C_FLAGS="$cflags" -DCMAKE_CXX_FLAGS="$cflags" \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON \
    -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON \
    -DBUILD_SHARED_LIBS=OFF
cmake --build "$dir/build" --config Release --target llama-server llama-bench llama-perplexity -j "$jobs"
"$dir/build/bin/llama-server" --version 2>&1 | tail -n 3 || true
echo "built llama-server, llama-bench and llama-perplexity in $dir/build/bin"
