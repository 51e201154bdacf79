import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ServiceLifecycle
import Tracing

/// Where and how `hearth serve` exports spans: OTLP/HTTP with the JSON encoding
/// (`application/json`, an `ExportTraceServiceRequest`), in batches.
public struct TracingOptions: Sendable {
    /// The traces URL the spans are POSTed to (e.g. `http://collector:4318/v1/traces`).
    public var endpoint: String
    /// The resource's `service.name`.
    public var serviceName = "hearth"
    /// Spans waiting to be sent; when full, new spans are dropped (and counted), never waited for.
    public var maxQueue = 2048
    /// Spans per export request at most.
    public var maxBatch = 512
    /// How often the queue is sent.
    public var interval: Duration = .seconds(1)
    /// A request to the collector that takes longer fails (its spans are dropped).
    public var timeout: Duration = .seconds(10)

    public init(endpoint: String) { self.endpoint = endpoint }

    /// The URL without user, password or query (for a log line); nil when it is not an http
    /// or https URL with a host.
    public static func redacted(_ url: String) -> String? {
        guard var parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(), ["http", "https"].contains(scheme),
            let host = parts.host, !host.isEmpty
        else { return nil }
        parts.user = nil
        parts.password = nil
        parts.query = nil
        parts.fragment = nil
        return parts.string
    }

    /// The traces URL from `--otel-endpoint` or the standard environment: a given URL is the
    /// collector's base (`/v1/traces` is appended, as for `OTEL_EXPORTER_OTLP_ENDPOINT`);
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as it is; nil when none is set.
    public static func endpoint(option: String?, environment: [String: String]) -> String? {
        func base(_ url: String) -> String { (url.hasSuffix("/") ? url : url + "/") + "v1/traces" }
        if let option, !option.isEmpty { return base(option) }
        if let traces = environment["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], !traces.isEmpty { return traces }
        if let all = environment["OTEL_EXPORTER_OTLP_ENDPOINT"], !all.isEmpty { return base(all) }
        return nil
    }
}

/// Sends finished spans to an OTLP/HTTP collector: a bounded queue filled by ``export(_:)``
/// (a lock and an append: a request never waits for the collector), sent every
/// ``TracingOptions/interval`` or as soon as a batch is full, and once more at shutdown. A
/// failed send drops its batch with a warning (at most one a minute). Runs as a service of the
/// server's group, shut down after the server has drained.
/// `@unchecked Sendable`: the queue and counters are guarded by `lock`.
final class OTLPTraceExporter: SpanSink, Service, @unchecked Sendable {
    let options: TracingOptions
    let logger: Logger
    private let lock = NSLock()
    private var queue: [SpanRecord] = []
    private var lastWarning: ContinuousClock.Instant?
    /// Spans dropped because the queue was full, and because a send failed.
    private var dropped = (full: 0, failed: 0)

    init(options: TracingOptions, logger: Logger) {
        self.options = options
        self.logger = logger
    }

    /// Spans dropped so far: the queue full, a send failed.
    var droppedSpans: (full: Int, failed: Int) { lock.withLock { dropped } }

    func export(_ span: SpanRecord) {
        lock.withLock {
            if queue.count < options.maxQueue { queue.append(span) } else { dropped.full += 1 }
        }
    }

    func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        var last = ContinuousClock.now
        // Polled every 50 ms: a full batch goes at once, the rest every interval.
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(50))
            let full = lock.withLock { queue.count >= options.maxBatch }
            if full || ContinuousClock.now - last >= options.interval {
                while await send(client) {}
                last = .now
            }
        }
        // Shutdown (after the server drained): what is left, within 5 s in all (a collector
        // that does not answer must not hold the process).
        let deadline = ContinuousClock.now + .seconds(5)
        while ContinuousClock.now < deadline {
            guard await send(client, timeout: min(options.timeout, deadline - .now)) else { break }
        }
        try? await client.shutdown()
    }

    /// Sends one batch (within `timeout`, else ``TracingOptions/timeout``); false when the
    /// queue was empty.
    private func send(_ client: HTTPClient, timeout: Duration? = nil) async -> Bool {
        let batch: [SpanRecord] = lock.withLock {
            let count = min(queue.count, options.maxBatch)
            defer { queue.removeFirst(count) }
            return Array(queue.prefix(count))
        }
        guard !batch.isEmpty else { return false }
        var request = HTTPClientRequest(url: options.endpoint)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "hearth")
        request.body = .bytes(ByteBuffer(bytes: OTLPJSON.request(batch, serviceName: options.serviceName)))
        do {
            let limit = timeout ?? options.timeout
            let nanoseconds = limit.components.seconds * 1_000_000_000 + limit.components.attoseconds / 1_000_000_000
            let response = try await client.execute(request, timeout: .nanoseconds(max(1_000_000, nanoseconds)))
            _ = try? await response.body.collect(upTo: 64 * 1024)
            guard (200..<300).contains(Int(response.status.code)) else {
                failed(batch.count, "the collector answered \(response.status.code)")
                return true
            }
        } catch {
            failed(batch.count, "\(type(of: error))")
        }
        return true
    }

    private func failed(_ count: Int, _ reason: String) {
        let warn: Bool = lock.withLock {
            dropped.failed += count
            let now = ContinuousClock.now
            guard lastWarning.map({ now - $0 > .seconds(60) }) ?? true else { return false }
            lastWarning = now
            return true
        }
        if warn { logger.warning("spans not exported", metadata: ["spans": "\(count)", "reason": "\(reason)"]) }
    }
}

/// OTLP's JSON encoding of `ExportTraceServiceRequest` (opentelemetry-proto's
/// `trace/v1/trace.proto`, with the OTLP/JSON rules: lowerCamelCase field names, trace and
/// span ids as hex, 64-bit integers as decimal strings, enums as integers).
enum OTLPJSON {
    static func request(_ spans: [SpanRecord], serviceName: String) -> Data {
        let resource: [String: Any] = [
            "attributes": [
                attribute("service.name", .string(serviceName)),
                attribute("telemetry.sdk.name", .string("hearth")),
                attribute("telemetry.sdk.language", .string("swift")),
            ]
        ]
        let body: [String: Any] = [
            "resourceSpans": [
                [
                    "resource": resource,
                    "scopeSpans": [["scope": ["name": "hearth"], "spans": spans.map(span)]],
                ]
            ]
        ]
        return (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data("{}".utf8)
    }

    static func span(_ span: SpanRecord) -> [String: Any] {
        var out: [String: Any] = [
            "traceId": span.identity.traceID, "spanId": span.identity.spanID, "name": span.name,
            "kind": kind(span.kind), "startTimeUnixNano": String(span.start), "endTimeUnixNano": String(span.end),
            "attributes": span.attributes.compactMap { attribute($0.0, $0.1) },
        ]
        if let parent = span.parentSpanID { out["parentSpanId"] = parent }
        if !span.events.isEmpty {
            out["events"] = span.events.map { event in
                ["name": event.name, "timeUnixNano": String(event.time), "attributes": event.attributes.compactMap { attribute($0.0, $0.1) }] as [String: Any]
            }
        }
        if let status = span.status {
            var value: [String: Any] = ["code": status.code == .ok ? 1 : 2]
            if let message = status.message { value["message"] = message }
            out["status"] = value
        }
        return out
    }

    /// SPAN_KIND_INTERNAL 1, SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5.
    static func kind(_ kind: SpanKind) -> Int {
        switch kind {
        case .internal: return 1
        case .server: return 2
        case .client: return 3
        case .producer: return 4
        case .consumer: return 5
        }
    }

    static func attribute(_ key: String, _ value: SpanAttribute) -> [String: Any] {
        ["key": key, "value": any(value)]
    }

    /// An `AnyValue`.
    static func any(_ value: SpanAttribute) -> [String: Any] {
        switch value {
        case .int32(let v): return ["intValue": String(v)]
        case .int64(let v): return ["intValue": String(v)]
        case .double(let v): return v.isFinite ? ["doubleValue": v] : ["stringValue": String(v)]
        case .bool(let v): return ["boolValue": v]
        case .string(let v): return ["stringValue": v]
        case .stringConvertible(let v): return ["stringValue": String(describing: v)]
        case .int32Array(let v): return array(v.map { .int32($0) })
        case .int64Array(let v): return array(v.map { .int64($0) })
        case .doubleArray(let v): return array(v.map { .double($0) })
        case .boolArray(let v): return array(v.map { .bool($0) })
        case .stringArray(let v): return array(v.map { .string($0) })
        case .stringConvertibleArray(let v): return array(v.map { .string(String(describing: $0)) })
        default: return ["stringValue": ""]
        }
    }

    static func array(_ values: [SpanAttribute]) -> [String: Any] { ["arrayValue": ["values": values.map(any)]] }
}
