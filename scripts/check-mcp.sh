#!/usr/bin/env bash
# Tools from real MCP servers in `hearth chat --mcp`, the REPL driven in tmux as a person would
# type (docs/MCP.md): `mcp-server-time` and scripts/mcp_check_server.py (the official `mcp`
# Python SDK: a tool with a nested schema, one that fails, one that sleeps past the timeout;
# over stdio, and again over streamable HTTP with a secret header),
# from pinned PyPI packages in .build/mcp-venv. Checks that /mcp lists servers, tools, resources
# and prompts; a call the person confirms runs, its result is shown and the model answers (the
# default model is tiny, so each call is forced with /mcp choice TOOL, as the tool tests force
# tool_choice); the failing and the sleeping tool give clear messages and the chat goes on;
# a server killed mid-call is reported and /mcp enable starts it again; an allowed tool runs
# without asking; no server process outlives hearth (after /quit, and after SIGTERM); the
# server's env value never reaches the screen or the saved chat. Then the same file through
# `hearth serve --mcp`, driven by the official openai client (scripts/check_mcp_serve.py, pinned
# in the same venv): Responses requests naming the servers get mcp_list_tools, mcp_call items and
# an answer, whole and streamed; the approval flow; 400s for what the file does not list; no
# server outlives SIGTERM; the HTTP server asserts the secret header reached it. Prints its wall
# time (and each part's).
#
# Usage: scripts/check-mcp.sh [--binary PATH] [--model PATH]
# (default binary: .build/release/hearth, which scripts/setup.sh builds; this script never builds)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
started=$(date +%s)
binary=".build/release/hearth"
model="models/gemma-3-270m-q4_k_m.gguf"
while [ $# -gt 0 ]; do
    case "$1" in
        --binary) binary="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$binary" ] || { echo "no hearth binary at $binary: run scripts/setup.sh (or pass --binary)" >&2; exit 1; }
require_model "$model"
if ! command -v tmux >/dev/null; then
    # As scripts/setup.sh installs its libraries: Debian's package, when root.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux >/dev/null; }
    fi
    command -v tmux >/dev/null || { echo "tmux is not installed (apt-get install tmux)" >&2; exit 1; }
fi

mcp_venv=".build/mcp-venv"
requirements_venv "$mcp_venv" scripts/requirements-mcp.txt
echo "venv ready after $(( $(date +%s) - started )) s"

work="$(mktemp -d)"
sock="hearth-mcp-check-$$"
tm() { tmux -L "$sock" "$@"; }
web_pid=""
serve_pid=""
cleanup() {
    tm kill-server 2>/dev/null || true
    [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null || true
    [ -n "$web_pid" ] && kill "$web_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

secret="mcp-secret-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
root="$(pwd)"
# The same server over streamable HTTP (its tools then named web_…), with a secret header.
port="$("$mcp_venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
HEARTH_CHECK_SECRET="$secret" "$mcp_venv/bin/python" scripts/mcp_check_server.py --http "$port" > "$work/web.log" 2>&1 &
web_pid=$!
cat > "$work/mcp.json" <<EOF
{"mcpServers": {
  "check": {"command": "$root/$mcp_venv/bin/python", "args": ["$root/scripts/mcp_check_server.py"],
            "env": {"HEARTH_CHECK_SECRET": "$secret"}},
  "time": {"command": "$root/$mcp_venv/bin/mcp-server-time", "args": ["--local-timezone", "UTC"]},
  "web": {"url": "http://127.0.0.1:$port/mcp", "headers": {"Authorization": "Bearer $secret"}}
}}
EOF

passed=0
ok() {
    echo "ok $*"
    passed=$((passed + 1))
}
fail() {
    echo "FAIL $*" >&2
    echo "--- screen ---" >&2
    pane | tail -60 >&2
    exit 1
}
pane() { tm capture-pane -p -J -t chat -S -3000 2>/dev/null || true; }
# Waits until the screen has more than $2 lines matching $1 (default 0), for up to $3 seconds.
wait_for() {
    local pattern="$1" above="${2:-0}" limit="${3:-60}" deadline
    deadline=$(( $(date +%s) + limit ))
    while [ "$(pane | grep -cE -- "$pattern" || true)" -le "$above" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || fail "waited $limit s for: $pattern"
        sleep 0.2
    done
}
count() { pane | grep -cE -- "$1" || true; }
type_line() {
    tm send-keys -t chat -l -- "$1"
    tm send-keys -t chat Enter
}
prompts() { count '^>>> '; }
# Sends a message and waits for the next prompt (the turn is over).
ask() {
    local before
    before=$(prompts)
    type_line "$1"
    wait_for '^>>> ' "$before" "${2:-60}"
}
# Whether process $1 runs (a dead pane's process stays a zombie until tmux reaps it).
running() { ps -o stat= -p "$1" | grep -qv '^Z'; }
# The server processes: hearth's children (each leads its own process group).
servers_of() { ps -o pid= --ppid "$1" | tr -d ' '; }
# Fails when a process of $@ (or of its process group) is still alive 3 s on (a killed process
# lingers as a zombie until it is reaped; zombies do not count).
no_survivors() {
    local pid left deadline
    deadline=$(( $(date +%s) + 3 ))
    while :; do
        left=""
        for pid in "$@"; do
            if ps -eo pid=,pgid=,stat= | awk -v p="$pid" '($1 == p || $2 == p) && $3 !~ /^Z/ {found=1} END {exit !found}'; then
                left="$left $pid"
            fi
        done
        [ -z "$left" ] && return 0
        [ "$(date +%s)" -lt "$deadline" ] || fail "the MCP server process(es)$left (or their groups) outlived hearth"
        sleep 0.1
    done
}
# Starts hearth chat in a tmux pane (the pane's process is hearth itself) and waits for its prompt.
start_chat() {
    tm new-session -d -s chat -x 200 -y 50 \
        "sleep 0.3; exec env NO_COLOR=1 HEARTH_HOME='$work/home' '$binary' chat --model '$model' --sessions-dir '$work/chats' \
         --mcp '$work/mcp.json' --mcp-timeout 3 --max-tool-rounds 1 --allow-tool get_current_time --temperature 0 mcp-check"
    tm set-option -t chat remain-on-exit on >/dev/null
    wait_for '^mcp: ' 0 60
    wait_for '^>>> ' 0 30
    hearth_pid="$(tm display -p -t chat '#{pane_pid}')"
}

# 1. The servers start; /mcp lists them, their tools, resources and prompts.
for _ in $(seq 1 100); do grep -q "Uvicorn running" "$work/web.log" && break; sleep 0.1; done
start_chat
wait_for '^mcp: 8 tools from check, time, web' 0 5
type_line "/mcp"
wait_for 'check \(stdio: python\) · running · hearth-check 1\.0\.0 · 3 tools, 1 resource, 1 prompt'
for expected in 'plan_trip — .*Plan a trip' 'always_fails — ' 'slow_echo — ' 'time \(stdio: mcp-server-time\) · running' \
    'get_current_time — .*\(runs without asking\)' 'resources: readme' 'prompts: trip_prompt' \
    "web \\(http://127\\.0\\.0\\.1:$port/mcp\\) · running · hearth-check 1\\.0\\.0 · 3 tools" 'web_plan_trip — '; do
    wait_for "$expected" 0 5
done
ok "/mcp lists 3 servers (stdio and streamable HTTP), 8 tools, resources and prompts"

# 2. A confirmed call with a nested schema: the call, its result, then the model's answer.
type_line "/mcp choice plan_trip"
wait_for 'tool choice: plan_trip'
before=$(prompts)
type_line "Plan a day in Oslo: the museum, then the fjord."
wait_for 'tool call: plan_trip \(check\) \{"trip": ?\{"city"' 0 60
wait_for 'run plan_trip\? \[y\]es, \[n\]o, \[a\]lways this tool:' 0 10
type_line "y"
wait_for 'result: TRIP-PLANNED: [0-9]+ stops in ' 0 15
wait_for '^>>> ' "$before" 60
wait_for ' tokens · ' 0 5
ok "a confirmed plan_trip call ran, its result was shown, and the model answered"

# 3. A tool that fails: a clear message, the chat goes on.
type_line "/mcp choice always_fails"
wait_for 'tool choice: always_fails'
before=$(prompts)
type_line "Try the failing tool."
wait_for 'run always_fails\? ' 0 60
type_line "y"
wait_for 'always_fails failed: .*always_fails failed on purpose' 0 15
wait_for '^>>> ' "$before" 60
ok "the failing tool's error was shown and the chat went on"

# 3b. The same over streamable HTTP.
type_line "/mcp choice web_always_fails"
wait_for 'tool choice: web_always_fails'
before=$(prompts)
type_line "Try the failing tool on the web."
wait_for 'run web_always_fails\? ' 0 60
type_line "y"
wait_for 'web_always_fails failed: .*always_fails failed on purpose' 0 15
wait_for '^>>> ' "$before" 60
ok "a call over streamable HTTP ran and its error was shown"

# 4. A tool that sleeps past --mcp-timeout 3: reported as a timeout, the chat goes on.
type_line "/mcp choice slow_echo"
wait_for 'tool choice: slow_echo'
before=$(prompts)
type_line "Echo hello."
wait_for 'run slow_echo\? ' 0 60
type_line "y"
wait_for 'MCP server check: the call to slow_echo did not finish within 3 s' 0 10
wait_for '^>>> ' "$before" 60
ok "the sleeping tool timed out with a clear message and the chat went on"

# 5. The server killed mid-call: reported, not fatal; /mcp enable starts it again.
check_pid="$(ps -o pid=,args= --ppid "$hearth_pid" | awk '/mcp_check_server/ {print $1}' | head -1)"
[ -n "$check_pid" ] || fail "no mcp_check_server.py process under hearth ($hearth_pid)"
before=$(prompts)
type_line "Echo again."
wait_for 'run slow_echo\? ' 1 60
type_line "y"
sleep 1
kill -KILL "$check_pid"
wait_for 'MCP server check: the server was killed by signal 9 during the call to slow_echo' 0 10
wait_for '^>>> ' "$before" 60
type_line "/mcp"
wait_for 'check \(stdio: python\) · failed: the server was killed by signal 9' 0 10
type_line "/mcp enable check"
wait_for '^check enabled: 3 tools' 0 30
ok "killing the server mid-call was reported; /mcp enable check started it again"

# 6. An allowed tool (--allow-tool get_current_time) runs without asking.
type_line "/mcp choice get_current_time"
wait_for 'tool choice: get_current_time'
asked=$(count 'run get_current_time\?')
ask "What time is it in UTC?" 60
pane | grep -qE 'tool call: get_current_time \(time\)' || fail "no get_current_time call"
pane | grep -qE 'result: .*"timezone"|get_current_time failed: ' || fail "no get_current_time result"
[ "$(count 'run get_current_time\?')" -eq "$asked" ] || fail "asked before running an allowed tool"
ok "the allowed get_current_time ran without asking"

# 7. /quit: no server outlives hearth; the env value never showed.
servers="$(servers_of "$hearth_pid")"
[ "$(echo "$servers" | wc -w)" -eq 2 ] || fail "expected 2 server processes under hearth, found: $servers"
type_line "/quit"
for _ in $(seq 1 100); do running "$hearth_pid" || break; sleep 0.1; done
running "$hearth_pid" && fail "hearth did not exit within 10 s of /quit"
# shellcheck disable=SC2086
no_survivors $servers
if pane | grep -q -- "$secret" || grep -rq -- "$secret" "$work/chats" "$work/home" 2>/dev/null; then
    fail "the server's env value reached the screen or a file"
fi
chat_file="$(ls "$work/chats"/mcp-check.* 2>/dev/null | head -1)"
[ -n "$chat_file" ] && grep -q '"toolCallID"' "$chat_file" || fail "the saved chat has no tool results"
ok "/quit stopped both servers; the env value never showed"

# 8. SIGTERM: the servers go with hearth.
tm kill-session -t chat
start_chat
servers="$(servers_of "$hearth_pid")"
[ "$(echo "$servers" | wc -w)" -eq 2 ] || fail "expected 2 server processes under hearth, found: $servers"
kill -TERM "$hearth_pid"
for _ in $(seq 1 100); do running "$hearth_pid" || break; sleep 0.1; done
running "$hearth_pid" && fail "hearth did not exit within 10 s of SIGTERM"
# shellcheck disable=SC2086
no_survivors $servers
ok "SIGTERM: no server outlived hearth"

chat_seconds=$(( $(date +%s) - started ))

# 9. The same file through `hearth serve --mcp`, read by the official openai client
#    (scripts/check_mcp_serve.py): mcp_list_tools, mcp_call and an answer; the approval flow;
#    streamed with the failing tool's error; the HTTP server with its secret header; 400s for what
#    the file does not list. Then SIGTERM: no server process outlives hearth serve, and the
#    secret is in no log line.
serve_started=$(date +%s)
serve_port="$("$mcp_venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$binary" serve --model "$model" --port "$serve_port" --mcp "$work/mcp.json" --mcp-timeout 3 --max-tool-rounds 1 \
    --log-level info > "$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$serve_port/health" >/dev/null 2>&1 && break
    kill -0 "$serve_pid" 2>/dev/null || { cat "$work/serve.log" >&2; fail "hearth serve --mcp exited"; }
    sleep 0.1
done
servers="$(servers_of "$serve_pid")"
[ "$(echo "$servers" | wc -w)" -eq 2 ] || fail "expected 2 server processes under hearth serve, found: $servers"
HEARTH_CHECK_SECRET="$secret" "$mcp_venv/bin/python" scripts/check_mcp_serve.py "http://127.0.0.1:$serve_port/v1" "$(basename "$model" .gguf)" \
    || { tail -20 "$work/serve.log" >&2; fail "hearth serve --mcp (scripts/check_mcp_serve.py)"; }
ok "hearth serve --mcp through the openai client (scripts/check_mcp_serve.py)"
kill -TERM "$serve_pid"
for _ in $(seq 1 100); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$serve_pid" 2>/dev/null && fail "hearth serve did not exit within 10 s of SIGTERM"
# shellcheck disable=SC2086
no_survivors $servers
grep -q -- "$secret" "$work/serve.log" && fail "the secret reached hearth serve's log"
ok "SIGTERM: no MCP server outlived hearth serve; the secret is in no log line"
# Every request the HTTP server got carried the file's secret header (it answers 401 without it).
grep -q "refused a request without the secret header" "$work/web.log" && fail "a request reached the HTTP MCP server without its header"
ok "the HTTP MCP server got the secret header on every request"
echo "check-mcp: serve part $(( $(date +%s) - serve_started )) s (chat part ${chat_seconds} s)"

echo "check-mcp: $passed passed, 0 failed in $(( $(date +%s) - started )) s"
