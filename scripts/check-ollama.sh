#!/usr/bin/env bash
# Ollama's native API and the chat page of `hearth serve` (issue 65), driven by the official
# clients of each: the `ollama` Python client (PyPI, pinned, in the checks' venv) runs chat whole
# and streamed, generate, `format` with a pydantic model's schema (parsed), a tool call and its
# answer, embed (and the legacy embeddings), list, show, ps, pull from the loopback hub stand-in
# (`hub-fake`, as scripts/check-hub.sh uses it) and delete, version and errors
# (scripts/check_ollama.py); then headless Chromium (Debian's `chromium` + `chromium-driver`,
# installed here when missing) driven by selenium (PyPI, pinned) opens the chat page at `/`,
# sends a message and sees its text stream in and end, stops a long reply, switches to the
# second model, reloads and finds the conversation, renders a stored reply holding `<script>`
# as text, and checks from the browser's network log that the page asked no host but the
# server (scripts/check_chat_page.py); it saves the page's screenshot to a temporary file, or to
# PATH with --screenshot PATH (`--screenshot docs/chat-page.png` updates the docs' picture). Not into
# the checkout by default: a changed tracked file makes `git describe --dirty` change, and the
# build-info plugin then has every later `swift build` recompile the `hearth` module (CI paid
# ~240 s for it once per configuration switch).
# The server runs the default model twice, under two names (a link to the file), to switch.
# Prints "N passed, M failed" for each part and its wall time; exits 1 on any failure.
#
# Usage: scripts/check-ollama.sh [--binary PATH] [--fake PATH] [--model PATH] [--screenshot PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
source scripts/serve-common.sh
binary=""
fake=""
model="models/gemma-3-270m-q4_k_m.gguf"
screenshot=""
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --fake) fake="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --screenshot) screenshot="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
# The release build setup.sh made (no second build when it is there).
if [ -z "$binary" ] && [ -x .build/release/hearth ]; then binary=".build/release/hearth"; fi
binary="$(hearth_binary "$binary")"
fake="$(hub_fake_binary "$fake")"
require_model "$model"

install_chromium   # headless Chromium and its driver, Debian's packages

checks_venv   # .build/checks-venv: scripts/requirements-checks.txt (ollama, selenium, pydantic)

server_scratch
fake_pid=""
cleanup_all() {
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
    server_cleanup
}
trap cleanup_all EXIT

# The hub stand-in serves the tiny Gemma 3 checkpoint (small: the pull takes well under a second).
mkdir -p "$work/repos/tiny"
for f in config.json generation_config.json tokenizer.model tokenizer_config.json special_tokens_map.json added_tokens.json model.safetensors; do
    ln -s "$(realpath "Tests/Fixtures/gemma3-tiny/$f")" "$work/repos/tiny/$f"
done
start_hub_fake "$fake" "$work" --repo "hearth-test/gemma3-tiny=$work/repos/tiny"

# The default model under a second name, to switch models in the page.
ln -s "$(realpath "$model")" "$work/second.gguf"
first="$(basename "$model" .gguf)"
env -u HF_TOKEN -u HF_HUB_OFFLINE HF_ENDPOINT="$endpoint" HF_HUB_CACHE="$work/cache" HF_HOME="$work/hf-home" \
    "$binary" serve --model "$model" --model "$work/second.gguf" --port 0 --ctx 2048 --parallel 2 \
    > "$work/out" 2> "$work/log" &
server_pid=$!
url="$(server_url "$server_pid" "$work/out" "$work/log")"
base="${url%/v1}"
echo "server: $base (pid $server_pid), hub stand-in: $endpoint"

status=0
"$venv/bin/python" scripts/check_ollama.py "$base" "$first" second "$work/cache" || status=1
[ -n "$screenshot" ] || screenshot="$(mktemp /tmp/hearth-chat-page-XXXXXX.png)"
SE_OFFLINE=true "$venv/bin/python" scripts/check_chat_page.py "$base" "$first" second "$screenshot" || status=1
echo "check-ollama wall time: $(( $(date +%s) - started )) s"
exit $status
