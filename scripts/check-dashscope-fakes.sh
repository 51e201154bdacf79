#!/usr/bin/env bash
# Proves the fake DashScope servers faithful: drives them with the official `dashscope` SDK
# from PyPI (MultiModalDialog over DASHSCOPE_WEBSOCKET_BASE_URL, Generation.call over
# DASHSCOPE_HTTP_BASE_URL, with and without tools) and checks the SDK is satisfied
# (scripts/check_dashscope_fakes.py). The same program's tool-calling fakes of OpenAI chat
# completions and Anthropic messages are driven with the official `openai` and `anthropic` SDKs.
# Reasoning too (issue 57): openai reads `reasoning_content` whole and streamed, anthropic reads
# signed thinking and redacted_thinking blocks and sends them back in a tool round trip (the fake
# verifies the signatures), and the dashscope SDK reads `reasoning_content` with enable_thinking;
# openai reads the fake Responses API's reasoning items (summary, reasoning_text, encrypted
# content) whole and streamed, and a tool round trip sends the reasoning item back (verified).
#
#   scripts/check-dashscope-fakes.sh            # builds dashscope-fake (debug) if needed, then checks
#
# The SDK goes into a private venv (scripts/.venv-dashscope, gitignored), pinned to a version
# whose MultiModalDialog the fakes were checked against; DASHSCOPE_SDK_VERSION picks another.
set -euo pipefail
cd "$(dirname "$0")/.."

sdk_version="${DASHSCOPE_SDK_VERSION:-1.27.8}"
openai_version="${OPENAI_SDK_VERSION:-3.57.0}"
anthropic_version="${ANTHROPIC_SDK_VERSION:-2.14.0}"
venv=scripts/.venv-dashscope
if [ -z "${DASHSCOPE_SDK_VERSION:-}${OPENAI_SDK_VERSION:-}${ANTHROPIC_SDK_VERSION:-}" ]; then
  # The pinned versions above are those of scripts/requirements-checks.txt: the checks' one venv.
  source scripts/serve-common.sh
  checks_venv
elif ! "$venv/bin/python" -c "
import sys, dashscope, openai, anthropic
sys.exit((dashscope.__version__, openai.__version__, anthropic.__version__) != ('$sdk_version', '$openai_version', '$anthropic_version'))
" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "dashscope==$sdk_version" "openai==$openai_version" \
    "anthropic==$anthropic_version"
fi

swift build --product dashscope-fake
fake="$(swift build --show-bin-path)/dashscope-fake"
"$venv/bin/python" scripts/check_dashscope_fakes.py --fake "$fake"
