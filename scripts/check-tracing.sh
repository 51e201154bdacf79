#!/usr/bin/env bash
# Tracing (issue 63): `hearth serve --otel-endpoint URL` exports each generation request's spans
# over OTLP/HTTP (JSON). A loopback collector (Python's http.server) receives them while the
# default model answers a request that carries a W3C traceparent and one that does not; the
# server is stopped (its exporter sends what is left) and every export is parsed by the
# reference parser — opentelemetry-proto's ExportTraceServiceRequest through protobuf's
# json_format, strict about field names and types — and checked: the caller's trace, the
# stages under the request span, the model and token attributes, no prompt text.
#
#   scripts/check-tracing.sh [HEARTH_BINARY]
# Needs scripts/setup.sh first (the default model and .build/release/hearth).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
. scripts/serve-common.sh
binary="${1:-.build/release/hearth}"
[ -x "$binary" ] || { echo "no hearth binary at $binary: run scripts/setup.sh" >&2; exit 1; }
checks_venv
"$venv/bin/python" scripts/check_tracing.py "$binary"
echo "check-tracing: $(( $(date +%s) - started )) s"
