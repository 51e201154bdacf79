#!/usr/bin/env bash
# First-run check (issue 18): asks the fixed questions in questions.txt, each in a fresh
# `hearth chat` read from a pipe (as a newcomer would after the README's first command),
# and checks that every reply ends within the REPL's reply cap and that no reply repeats
# a line more than twice. Writes a transcript.
#
#   benchmarks/first-run/run.sh [HEARTH_BINARY] [TRANSCRIPT]
#
# Environment: HEARTH_MODEL (default: the default model from models/registry.json, which
# scripts/setup.sh installs), CAP (512: the reply cap to check against), TIMEOUT (seconds per
# question, 300: a reply still running then is killed and counted as not ended), SEED (1),
# CHAT_ARGS (more `hearth chat` flags, e.g. --instruct).
# Exit status: 0 when every reply passes, 1 otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../.build/release/hearth}"
out="${2:-/dev/stdout}"
cap="${CAP:-512}"
timeout="${TIMEOUT:-300}"
seed="${SEED:-1}"
model_args=()
[ -n "${HEARTH_MODEL:-}" ] && model_args=(--model "$HEARTH_MODEL")
read -r -a chat_args <<<"${CHAT_ARGS:-}"
sessions="$(mktemp -d)"
trap 'rm -rf "$sessions"' EXIT
failures=0
{
  echo "# hearth chat ${CHAT_ARGS:-}, piped, one fresh chat per question (seed $seed, cap checked: $cap tokens)"
  echo "# binary: $bin"
  echo
} >"$out"
n=0
while IFS= read -r question; do
  [ -z "$question" ] && continue
  n=$((n + 1))
  start=$(date +%s.%N)
  answer="$(printf '%s\n' "$question" | timeout "$timeout" "$bin" chat "${model_args[@]}" "${chat_args[@]}" --seed "$seed" \
    --sessions-dir "$sessions" 2>"$sessions/stderr")"
  status=$?
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  notes="$(cat "$sessions/stderr")"
  tokens="$(printf '%s\n' "$notes" | sed -n 's/^\([0-9][0-9]*\) tokens ·.*/\1/p' | tail -1)"
  # The most often repeated non-empty line of the reply, and how often it stands.
  repeats="$(printf '%s\n' "$answer" | sed 's/[[:space:]]*$//' | grep -v '^$' | sort | uniq -c | sort -rn | head -1 | awk '{print $1}')"
  repeats="${repeats:-0}"
  verdict="ok"
  if [ "$status" = 124 ]; then verdict="NOT ENDED (killed after ${timeout}s)"
  elif [ -z "$tokens" ]; then verdict="NO STATS (exit $status)"
  elif [ "$tokens" -gt "$cap" ]; then verdict="PAST THE CAP ($tokens > $cap tokens)"
  fi
  if [ "$repeats" -gt 2 ]; then verdict="$verdict; A LINE REPEATED $repeats TIMES"; fi
  [ "$verdict" = ok ] || failures=$((failures + 1))
  {
    echo "## $n. $question"
    printf '%s\n' "$answer"
    echo
    echo "[stderr] $(printf '%s' "$notes" | tr '\n' '|')"
    printf '[check] %s · %s tokens · most repeated line x%s · %.1f s\n' "$verdict" "${tokens:-?}" "$repeats" "$seconds"
    echo
  } >>"$out"
done <"$here/questions.txt"
echo "# $((n - failures)) of $n replies pass" >>"$out"
[ "$failures" = 0 ]
