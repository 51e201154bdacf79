"""Drives `hearth serve --otel-endpoint` against a loopback OTLP/HTTP collector and parses the
exports with opentelemetry-proto (scripts/check-tracing.sh)."""
import base64
import http.server
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
PROMPT = "Name three colours of the rainbow (TRACE-CHECK-PROMPT)."
received = []


class Collector(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        received.append((self.path, self.headers.get("content-type"), body))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(body):
    """OTLP/JSON into the protobuf message: the spec writes trace and span ids as hex where
    protobuf's JSON mapping of bytes is base64, so the ids are converted first (as the spec
    tells a receiver to); everything else goes through json_format as sent, unknown fields
    and wrong types refused."""
    document = json.loads(body)
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return json_format.Parse(json.dumps(document), ExportTraceServiceRequest())


def main():
    binary = sys.argv[1]
    registry = json.load(open("models/registry.json"))
    model = "models/" + next(m["file"] for m in registry["models"] if m["name"] == registry["default"])
    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    port = free_port()
    log = tempfile.TemporaryFile()
    server = subprocess.Popen(
        [binary, "serve", "-m", model, "--port", str(port), "--alias", "local", "--no-web-ui",
         "--otel-endpoint", f"http://127.0.0.1:{collector.server_port}"],
        stdout=log, stderr=log, env={k: v for k, v in os.environ.items() if not k.startswith("OTEL_")})
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if httpx.get(base + "/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None:
                break
            time.sleep(0.1)
        body = {"model": "local", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 8, "temperature": 0}
        traced = httpx.post(base + "/v1/chat/completions", json=body,
                            headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}, timeout=60)
        assert traced.status_code == 200, traced.text
        plain = httpx.post(base + "/v1/chat/completions", json=body, timeout=60)
        assert plain.status_code == 200, plain.text
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        collector.shutdown()
    assert server.returncode == 0, f"serve exited {server.returncode}"
    assert received, "no export reached the collector"

    spans = []
    resources = []
    for path, content_type, raw in received:
        assert path == "/v1/traces" and content_type == "application/json", (path, content_type)
        assert PROMPT.encode() not in raw and b"TRACE-CHECK-PROMPT" not in raw, "the prompt was exported"
        message = parse(raw)
        for resource_spans in message.resource_spans:
            resources.append({a.key: a.value.string_value for a in resource_spans.resource.attributes})
            for scope in resource_spans.scope_spans:
                spans.extend(scope.spans)
    assert all(r.get("service.name") == "hearth" for r in resources), resources
    for span in spans:
        assert len(span.trace_id) == 16 and len(span.span_id) == 8, span
        assert 0 < span.start_time_unix_nano <= span.end_time_unix_nano, span
    roots = [s for s in spans if s.kind == Span.SPAN_KIND_SERVER]
    assert len(roots) == 2, f"{len(roots)} request spans"
    root = next(s for s in roots if s.trace_id.hex() == CALLER_TRACE)
    assert root.parent_span_id.hex() == CALLER_SPAN and root.name == "POST /v1/chat/completions", root
    attributes = {a.key: a.value for a in root.attributes}
    usage = traced.json()["usage"]
    assert attributes["gen_ai.request.model"].string_value == "local"
    assert attributes["http.response.status_code"].int_value == 200
    assert attributes["gen_ai.usage.output_tokens"].int_value == usage["completion_tokens"]
    assert attributes["gen_ai.usage.input_tokens"].int_value == usage["prompt_tokens"]
    children = sorted((s for s in spans if s.parent_span_id == root.span_id), key=lambda s: s.start_time_unix_nano)
    assert [s.name for s in children] == ["prepare", "queue", "prefill", "decode", "settle"], [s.name for s in children]
    assert all(s.trace_id == root.trace_id and s.kind == Span.SPAN_KIND_INTERNAL for s in children)
    assert root.start_time_unix_nano <= children[0].start_time_unix_nano
    assert children[-1].end_time_unix_nano <= root.end_time_unix_nano
    other = next(s for s in roots if s.trace_id != root.trace_id)
    assert not other.parent_span_id, "a request without traceparent starts its own trace"
    stages = ", ".join(f"{s.name} {(s.end_time_unix_nano - s.start_time_unix_nano) / 1e6:.1f} ms" for s in children)
    print(f"tracing: {len(received)} export(s), {len(spans)} spans parsed by opentelemetry-proto; "
          f"the caller's trace kept; stages {stages}")


if __name__ == "__main__":
    main()
