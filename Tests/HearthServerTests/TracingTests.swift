import Foundation
import HearthFakeServers
@testable import HearthServer
import Testing

/// Request spans exported over OTLP/HTTP (issue 63): a loopback collector receives the JSON
/// export; the spans join the caller's trace (`traceparent`), nest the stages under the
/// request, carry the model and tokens, and never the prompt or the key.
@Suite struct TracingTests {
    static let callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let callerSpan = "00f067aa0ba902b7"
    static let unsampledTrace = "0af7651916cd43dd8448eb211c80319c"

    /// The spans in the collector's requests, each as its JSON object.
    static func spans(_ requests: [RecordedRequest]) -> [[String: Any]] {
        requests.flatMap { request -> [[String: Any]] in
            guard let body = try? JSONSerialization.jsonObject(with: Data(request.body.utf8)) as? [String: Any],
                let resources = body["resourceSpans"] as? [[String: Any]]
            else { return [] }
            return resources.flatMap { ($0["scopeSpans"] as? [[String: Any]] ?? []).flatMap { $0["spans"] as? [[String: Any]] ?? [] } }
        }
    }

    /// A span's attribute value (`stringValue`, `intValue`, or an array's strings).
    static func attribute(_ span: [String: Any], _ key: String) -> String? {
        guard let pair = (span["attributes"] as? [[String: Any]])?.first(where: { $0["key"] as? String == key }),
            let value = pair["value"] as? [String: Any]
        else { return nil }
        if let text = value["stringValue"] as? String ?? value["intValue"] as? String { return text }
        let array = (value["arrayValue"] as? [String: Any])?["values"] as? [[String: Any]]
        return array?.compactMap { $0["stringValue"] as? String }.joined(separator: ",")
    }

    @Test func generationSpansReachTheCollectorInTheCallersTrace() async throws {
        let collector = try await TestHTTPServer.start { _, _, out in
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: "{}")
            return .close
        }
        var options = ServerOptions(port: 0, alias: "tiny")
        options.apiKey = "sk-trace-secret-key"
        var tracing = TracingOptions(endpoint: "http://127.0.0.1:\(collector.port)/v1/traces")
        tracing.interval = .milliseconds(100)
        options.tracing = tracing
        let harness = try await ServerHarness(options: options)
        let secret = "PROMPT-TEXT-NEVER-EXPORTED"
        let auth = ("Authorization", "Bearer sk-trace-secret-key")
        let body: [String: Any] = ["model": "tiny", "messages": [["role": "user", "content": secret]], "temperature": 0, "max_tokens": 4]
        let traced = try await harness.send(
            "/v1/chat/completions", json: body, headers: [auth, ("traceparent", "00-\(Self.callerTrace)-\(Self.callerSpan)-01")])
        #expect(traced.status == 200, "\(traced.body)")
        let fresh = try await harness.send("/v1/chat/completions", json: body, headers: [auth])
        #expect(fresh.status == 200)
        let unsampled = try await harness.send(
            "/v1/chat/completions", json: body, headers: [auth, ("traceparent", "00-\(Self.unsampledTrace)-\(Self.callerSpan)-00")])
        #expect(unsampled.status == 200)
        // A refusal (no key) is traced too: its request span only, status 401.
        let refused = try await harness.send("/v1/chat/completions", json: body)
        #expect(refused.status == 401)
        // Stopping the server sends what is left.
        try await harness.stop()
        await collector.stop()

        let requests = collector.requests
        #expect(!requests.isEmpty)
        for request in requests {
            #expect(request.method == "POST" && request.uri == "/v1/traces")
            #expect(request.headers.first(name: "content-type") == "application/json")
            #expect(!request.body.contains(secret) && !request.body.contains("sk-trace-secret-key"))
        }
        let spans = Self.spans(requests)
        let roots = spans.filter { $0["kind"] as? Int == 2 }
        #expect(roots.count == 3, "\(roots.map { $0["traceId"] ?? "" })")  // the unsampled request records nothing
        #expect(!spans.contains { $0["traceId"] as? String == Self.unsampledTrace })

        let root = try #require(roots.first { $0["traceId"] as? String == Self.callerTrace })
        #expect(root["parentSpanId"] as? String == Self.callerSpan)
        #expect(root["name"] as? String == "POST /v1/chat/completions")
        #expect(Self.attribute(root, "gen_ai.request.model") == "tiny")
        #expect(Self.attribute(root, "http.response.status_code") == "200")
        let usage = traced.json["usage"] as? [String: Any]
        let choice = (traced.json["choices"] as? [[String: Any]])?.first
        #expect(Self.attribute(root, "gen_ai.usage.output_tokens") == "\(usage?["completion_tokens"] as? Int ?? -1)")
        #expect(Self.attribute(root, "gen_ai.usage.input_tokens") == "\(usage?["prompt_tokens"] as? Int ?? -1)")
        #expect(Self.attribute(root, "gen_ai.response.finish_reasons") == choice?["finish_reason"] as? String)
        let rootID = try #require(root["spanId"] as? String)
        #expect(rootID.count == 16)
        let children = spans.filter { $0["parentSpanId"] as? String == rootID }
        #expect(children.map { $0["name"] as? String ?? "" } == ["prepare", "queue", "prefill", "decode", "settle"])
        // The stages tile the request: each starts where the last ended, within the request.
        func time(_ span: [String: Any], _ key: String) -> UInt64 { UInt64(span[key] as? String ?? "") ?? 0 }
        var at = time(root, "startTimeUnixNano")
        for child in children {
            #expect(child["traceId"] as? String == Self.callerTrace && child["kind"] as? Int == 1)
            #expect(time(child, "startTimeUnixNano") == at)
            #expect(time(child, "endTimeUnixNano") >= at)
            at = time(child, "endTimeUnixNano")
        }
        #expect(at <= time(root, "endTimeUnixNano") && at > time(root, "startTimeUnixNano"))

        // The request without a traceparent starts a trace of its own.
        let own = try #require(roots.first { $0["traceId"] as? String != Self.callerTrace && Self.attribute($0, "http.response.status_code") == "200" })
        #expect((own["traceId"] as? String)?.count == 32 && own["parentSpanId"] == nil)
        let refusedSpan = try #require(roots.first { Self.attribute($0, "http.response.status_code") == "401" })
        #expect(!spans.contains { $0["parentSpanId"] as? String == refusedSpan["spanId"] as? String })
    }

    @Test func traceparentHeadersParseAsTheW3CSpecSays() {
        let good = TraceParent(header: "00-\(Self.callerTrace)-\(Self.callerSpan)-01")
        #expect(good == TraceParent(traceID: Self.callerTrace, spanID: Self.callerSpan, sampled: true))
        #expect(good?.header == "00-\(Self.callerTrace)-\(Self.callerSpan)-01")
        #expect(TraceParent(header: "00-\(Self.callerTrace)-\(Self.callerSpan)-00")?.sampled == false)
        // A later version may carry more fields; version ff, upper case, zero ids, wrong lengths are refused.
        #expect(TraceParent(header: "01-\(Self.callerTrace)-\(Self.callerSpan)-01-extra") != nil)
        for bad in [
            "ff-\(Self.callerTrace)-\(Self.callerSpan)-01", "00-\(Self.callerTrace.uppercased())-\(Self.callerSpan)-01",
            "00-\(String(repeating: "0", count: 32))-\(Self.callerSpan)-01", "00-\(Self.callerTrace)-0000000000000000-01",
            "00-\(Self.callerTrace)-\(Self.callerSpan)-01-extra", "00-abc-\(Self.callerSpan)-01", "", "garbage",
        ] {
            #expect(TraceParent(header: bad) == nil, "\(bad)")
        }
    }

    @Test func theEndpointComesFromTheOptionOrTheStandardEnvironment() {
        #expect(TracingOptions.endpoint(option: "http://c:4318", environment: [:]) == "http://c:4318/v1/traces")
        #expect(TracingOptions.endpoint(option: "http://c:4318/", environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/t"]) == "http://c:4318/v1/traces")
        #expect(TracingOptions.endpoint(option: nil, environment: ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://x/t", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://y"]) == "http://x/t")
        #expect(TracingOptions.endpoint(option: nil, environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "http://y/base"]) == "http://y/base/v1/traces")
        #expect(TracingOptions.endpoint(option: nil, environment: [:]) == nil)
        #expect(TracingOptions.redacted("http://user:pw@c:4318/v1/traces?k=1") == "http://c:4318/v1/traces")
        #expect(TracingOptions.redacted("ftp://c") == nil && TracingOptions.redacted("not a url") == nil)
    }

    /// A request never waits for the collector: past the queue's bound spans are dropped and
    /// counted; a collector that fails loses its batch (counted, warned), and the exporter goes on.
    @Test func theQueueIsBoundedAndAFailingCollectorLosesOnlyItsBatch() async throws {
        let collector = try await TestHTTPServer.start { _, _, out in
            try await out.respond(500, "Internal Server Error", body: "no")
            return .close
        }
        var options = TracingOptions(endpoint: "http://127.0.0.1:\(collector.port)/v1/traces")
        options.maxQueue = 3
        options.interval = .milliseconds(50)
        let exporter = OTLPTraceExporter(options: options, logger: .init(label: "test.tracing"))
        let tracer = HearthTracer(sink: exporter)
        for index in 0..<5 { tracer.startSpan("span \(index)", context: .topLevel).end() }
        #expect(exporter.droppedSpans.full == 2)
        let run = Task { try await exporter.run() }
        var waited = 0
        while exporter.droppedSpans.failed < 3, waited < 200 {
            try await Task.sleep(for: .milliseconds(25))
            waited += 1
        }
        run.cancel()
        try await run.value
        await collector.stop()
        #expect(exporter.droppedSpans.failed == 3 && collector.requests.count == 1)
        // Later spans queue again.
        tracer.startSpan("after", context: .topLevel).end()
        #expect(exporter.droppedSpans.full == 2)
    }
}
