import Foundation
import Tracing

/// A W3C Trace Context `traceparent` (https://www.w3.org/TR/trace-context/): the trace, the
/// span that is the parent, and whether the caller records the trace.
package struct TraceParent: Sendable, Equatable {
    /// 32 lowercase hex digits, not all zero.
    package var traceID: String
    /// 16 lowercase hex digits, not all zero.
    package var spanID: String
    /// The caller's `sampled` flag: when false, no span of the trace is recorded.
    package var sampled: Bool

    /// A fresh trace and span id (random, as the spec asks), sampled.
    package static func random() -> TraceParent {
        TraceParent(traceID: randomHex(bytes: 16), spanID: randomHex(bytes: 8), sampled: true)
    }

    package init(traceID: String, spanID: String, sampled: Bool) {
        self.traceID = traceID
        self.spanID = spanID
        self.sampled = sampled
    }

    /// Parses a `traceparent` header value; nil when it is malformed (the request then starts
    /// a trace of its own, as the spec says a receiver does).
    package init?(header: String) {
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        // version-traceid-parentid-flags; a later version may add fields after the flags.
        guard parts.count >= 4, parts[0].count == 2, Self.isHex(parts[0]), parts[0] != "ff" else { return nil }
        if parts[0] == "00", parts.count != 4 { return nil }
        let trace = parts[1], span = parts[2], flags = parts[3]
        guard trace.count == 32, Self.isHex(trace), trace.contains(where: { $0 != "0" }),
            span.count == 16, Self.isHex(span), span.contains(where: { $0 != "0" }),
            flags.count == 2, Self.isHex(flags), let bits = UInt8(flags, radix: 16)
        else { return nil }
        self.init(traceID: String(trace), spanID: String(span), sampled: bits & 1 == 1)
    }

    /// The header value (version 00).
    package var header: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }

    static func isHex(_ text: Substring) -> Bool { text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }

    static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        var text = ""
        repeat {
            text = (0..<bytes).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        } while !text.contains(where: { $0 != "0" })
        return text
    }
}

/// The span a context stands for (its trace and span id), in an ``InstrumentationContext``.
enum TraceParentKey: InstrumentationContextKey {
    typealias Value = TraceParent
}

extension InstrumentationContext {
    /// The current span's identity (or the remote caller's, after ``HearthTracer/extract(_:into:using:)``).
    var traceParent: TraceParent? {
        get { self[TraceParentKey.self] }
        set { self[TraceParentKey.self] = newValue }
    }
}

/// A finished span, as the exporter sends it.
struct SpanRecord: Sendable {
    var name: String
    var kind: SpanKind
    var identity: TraceParent
    var parentSpanID: String?
    var start: UInt64
    var end: UInt64
    var attributes: [(String, SpanAttribute)]
    var status: SpanStatus?
    var events: [(name: String, time: UInt64, attributes: [(String, SpanAttribute)])]
}

/// Where finished spans go (``OTLPTraceExporter``; a test's collector).
protocol SpanSink: Sendable {
    func export(_ span: SpanRecord)
}

/// Hearth's tracer: swift-distributed-tracing's `Tracer`, W3C `traceparent` propagation, and
/// every finished (sampled) span handed to a sink — the OTLP exporter of `hearth serve
/// --otel-endpoint`. A context with no span starts a new trace; a remote parent whose
/// `sampled` flag is off is honoured (nothing of its trace is recorded).
package final class HearthTracer: Tracer {
    package typealias Span = HearthSpan
    let sink: any SpanSink

    init(sink: any SpanSink) { self.sink = sink }

    package func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> InstrumentationContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> HearthSpan {
        var context = context()
        let parent = context.traceParent
        var identity = TraceParent.random()
        if let parent {
            identity.traceID = parent.traceID
            identity.sampled = parent.sampled
        }
        context.traceParent = identity
        return HearthSpan(
            name: operationName, kind: kind, context: context, parentSpanID: parent?.spanID,
            start: instant().nanosecondsSinceEpoch, sink: identity.sampled ? sink : nil)
    }

    /// Spans are exported in batches by the exporter's own loop; nothing to do here.
    package func forceFlush() {}

    package func extract<Carrier, Extract>(_ carrier: Carrier, into context: inout InstrumentationContext, using extractor: Extract)
    where Extract: Extractor, Extract.Carrier == Carrier {
        if let value = extractor.extract(key: "traceparent", from: carrier), let parent = TraceParent(header: value) {
            context.traceParent = parent
        }
    }

    package func inject<Carrier, Inject>(_ context: InstrumentationContext, into carrier: inout Carrier, using injector: Inject)
    where Inject: Injector, Inject.Carrier == Carrier {
        if let identity = context.traceParent { injector.inject(identity.header, forKey: "traceparent", into: &carrier) }
    }
}

/// A span of ``HearthTracer``: recorded until ``end(at:)``, then handed to the sink once.
/// `@unchecked Sendable`: the mutable fields are guarded by `lock`.
package final class HearthSpan: Tracing.Span, @unchecked Sendable {
    package let context: InstrumentationContext
    private let lock = NSLock()
    private var name: String
    private let kind: SpanKind
    private let parentSpanID: String?
    private let start: UInt64
    private var sink: (any SpanSink)?
    private var values = SpanAttributes([:])
    private var status: SpanStatus?
    private var events: [SpanEvent] = []

    init(name: String, kind: SpanKind, context: InstrumentationContext, parentSpanID: String?, start: UInt64, sink: (any SpanSink)?) {
        self.name = name
        self.kind = kind
        self.context = context
        self.parentSpanID = parentSpanID
        self.start = start
        self.sink = sink
    }

    package var operationName: String {
        get { lock.withLock { name } }
        set { lock.withLock { name = newValue } }
    }

    package var attributes: SpanAttributes {
        get { lock.withLock { values } }
        set { lock.withLock { values = newValue } }
    }

    package var isRecording: Bool { lock.withLock { sink != nil } }

    package func setStatus(_ status: SpanStatus) {
        // OpenTelemetry: Ok is final; an error does not replace it.
        lock.withLock { if self.status?.code != .ok { self.status = status } }
    }

    package func addEvent(_ event: SpanEvent) { lock.withLock { events.append(event) } }

    /// Records the error's type only: an error's message may quote a request (never exported).
    package func recordError<Instant: TracerInstant>(_ error: Error, attributes: SpanAttributes, at instant: @autoclosure () -> Instant) {
        var attributes = attributes
        attributes["exception.type"] = String(describing: type(of: error))
        addEvent(SpanEvent(name: "exception", at: instant(), attributes: attributes))
    }

    /// Links are not exported.
    package func addLink(_ link: SpanLink) {}

    package func end<Instant: TracerInstant>(at instant: @autoclosure () -> Instant) {
        let end = instant().nanosecondsSinceEpoch
        let record: (SpanRecord, any SpanSink)? = lock.withLock {
            guard let sink, let identity = context.traceParent else { return nil }
            self.sink = nil
            var attributes: [(String, SpanAttribute)] = []
            values.forEach { attributes.append(($0, $1)) }
            let events = events.map { event in
                var pairs: [(String, SpanAttribute)] = []
                event.attributes.forEach { pairs.append(($0, $1)) }
                return (name: event.name, time: event.nanosecondsSinceEpoch, attributes: pairs)
            }
            return (
                SpanRecord(
                    name: name, kind: kind, identity: identity, parentSpanID: parentSpanID, start: start, end: max(end, start),
                    attributes: attributes.sorted { $0.0 < $1.0 }, status: status, events: events),
                sink
            )
        }
        if let (span, sink) = record { sink.export(span) }
    }
}

/// A wall-clock instant for the tracer from a `ContinuousClock` instant of this process (the
/// server times its stages on the continuous clock).
struct WallInstant: TracerInstant {
    let nanosecondsSinceEpoch: UInt64

    init(nanosecondsSinceEpoch: UInt64) { self.nanosecondsSinceEpoch = nanosecondsSinceEpoch }

    /// `instant` on the wall clock: now, less how long ago it was.
    init(_ instant: ContinuousClock.Instant, now: ContinuousClock.Instant = .now, wallNow: UInt64 = DefaultTracerClock.now.nanosecondsSinceEpoch) {
        let ago = now - instant
        let (seconds, attoseconds) = ago.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        nanosecondsSinceEpoch = nanoseconds >= 0 ? wallNow - min(wallNow, UInt64(nanoseconds)) : wallNow + UInt64(-nanoseconds)
    }

    static func < (a: WallInstant, b: WallInstant) -> Bool { a.nanosecondsSinceEpoch < b.nanosecondsSinceEpoch }
}
