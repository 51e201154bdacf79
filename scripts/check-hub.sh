#!/usr/bin/env bash
# Hearth and the official huggingface_hub package (PyPI, pinned, in a private venv) share one
# hub cache: both are pointed with HF_ENDPOINT at the fake hub (`hub-fake`, the same fake the
# Swift tests use: loopback HTTP with the hub's revision, tree and resolve routes, redirects to
# another host, X-Repo-Commit / ETag / X-Linked-Etag / X-Linked-Size and Range), serving the
# default model as a GGUF repository and the tiny Gemma 3 fixture as a safetensors checkpoint.
# scripts/check_hub.py then checks: a checkpoint Hearth pulled is found by
# hf_hub_download(local_files_only=True), snapshot_download and scan_cache_dir; a GGUF
# huggingface_hub downloaded is used by `hearth generate --model org/repo:Q4_K_M` with no
# request to the hub; `hearth pull` of it downloads nothing; offline mode; `hearth rm`.
# Prints "N passed, M failed"; exits 1 on any failure.
#
# Usage: scripts/check-hub.sh [--binary PATH] [--fake PATH] [--model PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
binary=""
fake=""
model="models/gemma-3-270m-q4_k_m.gguf"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --fake) fake="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
binary="$(hearth_binary "$binary")"
fake="$(hub_fake_binary "$fake")"
require_model "$model"

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt

work="$(mktemp -d)"
fake_pid=""
cleanup() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The repositories the fake serves: links to the real files, no copies.
mkdir -p "$work/repos/gguf" "$work/repos/tiny"
ln -s "$(realpath "$model")" "$work/repos/gguf/gemma-3-270m-it-Q4_K_M.gguf"
printf '# Gemma 3 270M, Q4_K_M\n' > "$work/repos/gguf/README.md"
for f in config.json generation_config.json tokenizer.model tokenizer_config.json special_tokens_map.json added_tokens.json model.safetensors; do
    ln -s "$(realpath "Tests/Fixtures/gemma3-tiny/$f")" "$work/repos/tiny/$f"
done

start_hub_fake "$fake" "$work" --repo "hearth-test/gemma-3-270m-it-GGUF=$work/repos/gguf" --repo "hearth-test/gemma3-tiny=$work/repos/tiny"
echo "fake hub: $endpoint (pid $fake_pid)"

env -u HF_TOKEN -u HF_HUB_OFFLINE HF_ENDPOINT="$endpoint" HF_HUB_CACHE="$work/cache" HF_HOME="$work/hf-home" \
    HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_XET=1 HF_HUB_DISABLE_PROGRESS_BARS=1 \
    "$venv/bin/python" scripts/check_hub.py "$binary" "$work/fake.log" "$work/repos"
