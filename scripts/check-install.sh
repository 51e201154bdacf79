#!/usr/bin/env bash
# Hearth outside the checkout (issue 63): scripts/install.sh puts the release build, stripped,
# and its completions into a temporary prefix; then, in an empty directory with a fresh HOME
# and only that binary on PATH, against the fake hub (`hub-fake`, serving the default model's
# hub repository as models/registry.json names it): `hearth --version`; `hearth generate`
# with no --model (the default model pulled into the user's hub cache and verified);
# `echo … | hearth generate -n`; `hearth pull NAME` (already there); `hearth run NAME PROMPT`
# and `hearth run NAME` (chat on stdin); `hearth chat`; `hearth show NAME [--json]`; `hearth ps [--json]`
# against a running `hearth serve`; the bash completion parses. Prints "N passed, M failed".
#
# Usage: scripts/check-install.sh [--binary PATH] [--fake PATH] [--model PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
started=$(date +%s)
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
checkout="$(pwd)"

work="$(mktemp -d)"
fake_pid=""
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

bash scripts/install.sh --prefix "$work/prefix" --binary "$binary"

# The hub repository the registry's default-model twin names, serving a link to the real file.
read -r repo repo_file < <(python3 - <<'PY'
import json
r = json.load(open("models/registry.json"))
default = next(m for m in r["models"] if m["name"] == r["default"])
twin = next(m for m in r["models"] if m.get("repo") and m.get("sha256") == default["sha256"])
print(twin["repo"], twin["repo_file"])
PY
)
short=$(python3 -c 'import json;r=json.load(open("models/registry.json"));d=next(m for m in r["models"] if m["name"]==r["default"]);print(next(m["name"] for m in r["models"] if m.get("repo") and m.get("sha256")==d["sha256"]))')
mkdir -p "$work/repo"
ln -s "$(realpath "$model")" "$work/repo/$repo_file"
start_hub_fake "$fake" "$work" --repo "$repo=$work/repo"

# Nothing of the checkout: an empty directory, a fresh HOME, the installed binary alone on PATH.
mkdir -p "$work/home" "$work/empty"
cd "$work/empty"
# `exec`: a backgrounded `run` is then the command itself, so `$!` is what `kill` must stop (the
# server below), not a subshell that would leave it running.
run() {
    exec env -i PATH="$work/prefix/bin:/usr/bin:/bin" HOME="$work/home" HF_ENDPOINT="$endpoint" TERM=dumb "$@"
}
set +e  # each check records its own failure
passed=0
failed=0
check() {  # check NAME STATUS [DETAIL]
    if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok   $1"; else failed=$((failed + 1)); echo "FAIL $1${3:+: $3}"; fi
}

out="$(run hearth --version 2>&1)"; rc=$?
[[ "$out" =~ ^hearth\ [0-9]+\.[0-9]+\.[0-9]+\ \(.+\),\ kernels\ [a-z0-9-]+$ ]] || rc=1
check "hearth --version: $out" "$rc" "$out"

out="$(run hearth generate -n 8 --temperature 0 "Hello" 2>"$work/err")"; rc=$?
cached="$(find "$work/home/.cache/huggingface/hub" -name "$repo_file" 2>/dev/null | head -1)"
[ -n "$cached" ] && [ -n "$out" ] || rc=1
check "hearth generate with no --model pulls the default model into ~/.cache/huggingface and answers" "$rc" "$(tail -3 "$work/err")"
if [ -n "$cached" ] && ! cmp -s "$cached" "$checkout/$model"; then check "the pulled default model is the registry's file" 1; fi

out="$(echo "Hello" | run hearth generate -n 4 2>"$work/err")"; rc=$?
[ -n "$out" ] || rc=1
check "echo Hello | hearth generate -n 4" "$rc" "$(tail -3 "$work/err")"

out="$(run hearth pull "$short" 2>&1)"; rc=$?
check "hearth pull $short (already in the cache)" "$rc" "$out"

out="$(run hearth run "$short" "Hello" -n 4 2>"$work/err")"; rc=$?
[ -n "$out" ] || rc=1
check "hearth run $short PROMPT -n 4" "$rc" "$(tail -3 "$work/err")"

out="$(printf 'Hello\n' | run hearth run "$short" -n 4 2>"$work/err")"; rc=$?
check "hearth run $short (chat on stdin)" "$rc" "$(tail -3 "$work/err")"

out="$(printf 'Hello\n' | run hearth chat -n 4 2>"$work/err")"; rc=$?
check "hearth chat (the default model)" "$rc" "$(tail -3 "$work/err")"

out="$(run hearth show "$short" 2>&1)"; rc=$?
grep -q "architecture: *gemma3" <<<"$out" || rc=1
check "hearth show $short" "$rc" "$out"

out="$(run hearth show "$short" --json 2>&1)"; rc=$?
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["architecture"]' "$out" 2>/dev/null || rc=1
check "hearth show $short --json" "$rc" "$out"

run hearth serve --port 0 --alias installed > "$work/serve.out" 2> "$work/serve.err" &
server_pid=$!
url="$(server_url "$server_pid" "$work/serve.out" "$work/serve.err")"
out="$(run hearth ps --url "${url%/v1}" 2>&1)"; rc=$?
grep -q "^installed " <<<"$out" || rc=1
check "hearth ps lists the running server's model" "$rc" "$out"
out="$(run hearth ps --url "${url%/v1}" --json 2>&1)"; rc=$?
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert [m["name"] for m in d["models"]] == ["installed"]' "$out" 2>/dev/null || rc=1
check "hearth ps --json" "$rc" "$out"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""

bash -n "$work/prefix/share/bash-completion/completions/hearth"; check "the bash completion parses" $?
grep -q "hearth" "$work/prefix/share/zsh/site-functions/_hearth" && grep -q "hearth" "$work/prefix/share/fish/vendor_completions.d/hearth.fish"
check "zsh and fish completions written" $?

echo "$passed passed, $failed failed ($(( $(date +%s) - started )) s)"
[ "$failed" = 0 ]
