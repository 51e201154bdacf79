#!/usr/bin/env bash
# Proves the fake DashScope servers faithful: drives them with the official `dashscope` SDK
# from PyPI (MultiModalDialog over DASHSCOPE_WEBSOCKET_BASE_URL, Generation.call over
# DASHSCOPE_HTTP_BASE_URL) and checks the SDK is satisfied (scripts/check_dashscope_fakes.py).
#
#   scripts/check-dashscope-fakes.sh            # builds dashscope-fake (debug) if needed, then checks
#
# The SDK goes into a private venv (scripts/.venv-dashscope, gitignored), pinned to a version
# whose MultiModalDialog the fakes were checked against; DASHSCOPE_SDK_VERSION picks another.
set -euo pipefail
cd "$(dirname "$0")/.."

sdk_version="${DASHSCOPE_SDK_VERSION:-1.27.8}"
venv=scripts/.venv-dashscope
if ! "$venv/bin/python" -c "import dashscope, sys; sys.exit(dashscope.__version__ != '$sdk_version')" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "dashscope==$sdk_version"
fi

swift build --product dashscope-fake
fake="$(swift build --show-bin-path)/dashscope-fake"
"$venv/bin/python" scripts/check_dashscope_fakes.py --fake "$fake"
