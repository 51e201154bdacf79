#!/usr/bin/env bash
# What the check scripts would otherwise fetch one by one, fetched at once: the checks' pinned
# venvs (scripts/requirements-*.txt, the same functions the scripts call, so the scripts then find
# them installed) and Debian's Chromium for check-ollama. Mostly network and disk: `.ci/run` runs
# it in the background from its start, beside the builds (issue 60: CI's budget), and waits for it
# before the first check. Run after `scripts/setup.sh --deps` (it uses apt too). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/serve-common.sh
started=$(date +%s)
checks_venv
frontends_venv
[ -f scripts/requirements-mcp.txt ] && requirements_venv .build/mcp-venv scripts/requirements-mcp.txt
install_chromium
echo "prefetched the checks' venvs and Chromium in $(( $(date +%s) - started )) s"
