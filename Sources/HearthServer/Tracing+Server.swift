import Foundation
import HearthLocal
import Tracing

/// When a local request asked for its fair-queue turn (its chat template rendered and its
/// prompt tokenized) and when it got it: the `prepare` and `queue` stages of its trace.
/// `@unchecked Sendable`: the instants are guarded by `lock`.
final class StageMarks: @unchecked Sendable {
    private let lock = NSLock()
    private var marks: (asked: ContinuousClock.Instant?, granted: ContinuousClock.Instant?) = (nil, nil)

    /// The first turn's instants (of several choices, the first wave's).
    var instants: (asked: ContinuousClock.Instant?, granted: ContinuousClock.Instant?) { lock.withLock { marks } }

    /// `admission`, noting when it is asked and when it grants.
    func timing(_ admission: @escaping LocalProvider.Admission) -> LocalProvider.Admission {
        { [self] slots in
            lock.withLock { if marks.asked == nil { marks.asked = .now } }
            let release = try await admission(slots)
            lock.withLock { if marks.granted == nil { marks.granted = .now } }
            return release
        }
    }
}

extension HearthServer {
    /// The spans of one generation request, when tracing is configured: a server span for the
    /// request (`POST /v1/chat/completions`), and under it one per stage the request reached —
    /// for the local model `prepare` (the body read and parsed, the route, the cache, the model
    /// loaded if it was not, the chat template rendered, the prompt tokenized), `queue` (its
    /// fair-queue turn), `prefill` (a schema compiled, the prompt, to the first token); for a
    /// cloud route `admit` and `upstream` (to its first token); then `decode` (to the last
    /// token) and `settle` (metrics, the log line, the quota and usage ledger). Attributes: the model as the client
    /// named it, the route, the provider, token counts, the finish reason, the status — never
    /// a prompt, an answer or a key. A `traceparent` header makes the request span a child of
    /// the caller's span; its `sampled` flag off records nothing.
    func traceGeneration(_ outcome: RouteOutcome, call: GenerationCall) {
        guard let tracer else { return }
        let now = ContinuousClock.now
        let wallNow = DefaultTracerClock.now.nanosecondsSinceEpoch
        func wall(_ instant: ContinuousClock.Instant) -> WallInstant { WallInstant(instant, now: now, wallNow: wallNow) }
        var parent = InstrumentationContext.topLevel
        if let header = call.traceParent, let caller = TraceParent(header: header) { parent.traceParent = caller }
        let model = UsageLedger.safeName(call.model)
        let route = call.endpoint.rawValue
        let request = tracer.startSpan("POST \(route)", context: parent, ofKind: .server, at: wall(call.started))
        var usage = outcome.usage
        if usage.promptTokens == 0, let reservation = call.reservation, !outcome.usageReported, usage.completionTokens > 0 {
            usage.promptTokens = reservation.promptEstimate
        }
        request.updateAttributes { attributes in
            attributes["http.request.method"] = "POST"
            attributes["http.route"] = route
            attributes["http.response.status_code"] = outcome.status
            attributes["hearth.request_id"] = call.requestID
            attributes["gen_ai.request.model"] = model
            if !outcome.servedBy.isEmpty { attributes["hearth.provider"] = UsageLedger.safeName(outcome.servedBy) }
            attributes["gen_ai.usage.input_tokens"] = usage.promptTokens
            attributes["gen_ai.usage.output_tokens"] = usage.completionTokens
            if let cached = usage.cachedPromptTokens { attributes["hearth.cached_tokens"] = cached }
            if outcome.status == 200 { attributes["gen_ai.response.finish_reasons"] = [outcome.reason.rawValue] }
            if outcome.cacheHit { attributes["hearth.response_cache"] = "hit" }
            if let code = outcome.code { attributes["error.type"] = code }
        }
        if outcome.status >= 500 { request.setStatus(SpanStatus(code: .error)) }
        // Each stage from where the last ended to its own mark; a stage the request never reached
        // (refused, failed, cut) has no span.
        let firstToken = outcome.firstTokenAt
        let turn = call.stageMarks.instants
        var stages: [(name: String, end: ContinuousClock.Instant, attributes: SpanAttributes)] = []
        if let asked = turn.asked {
            stages.append(("prepare", asked, [:]))
            if let granted = turn.granted { stages.append(("queue", granted, [:])) }
        } else if let ready = outcome.promptAt ?? outcome.servedAt ?? firstToken ?? outcome.finishedAt {
            stages.append(("admit", ready, [:]))
        }
        if let firstToken, let from = turn.granted ?? outcome.promptAt ?? outcome.servedAt, from <= firstToken {
            var attributes = SpanAttributes([:])
            attributes["gen_ai.usage.input_tokens"] = usage.promptTokens
            if let cached = usage.cachedPromptTokens { attributes["hearth.cached_tokens"] = cached }
            stages.append((outcome.local ? "prefill" : "upstream", firstToken, attributes))
        }
        if let firstToken, let finished = outcome.finishedAt, firstToken <= finished {
            var attributes = SpanAttributes([:])
            attributes["gen_ai.usage.output_tokens"] = usage.completionTokens
            attributes["gen_ai.response.finish_reasons"] = [outcome.reason.rawValue]
            stages.append(("decode", finished, attributes))
        }
        if let finished = outcome.finishedAt ?? stages.last?.end { stages.append(("settle", max(finished, now), [:])) }
        var start = call.started
        for stage in stages {
            let span = tracer.startSpan(stage.name, context: request.context, ofKind: .internal, at: wall(start))
            var attributes = stage.attributes
            attributes["gen_ai.request.model"] = model
            span.attributes = attributes
            let end = max(stage.end, start)
            span.end(at: wall(end))
            start = end
        }
        request.end(at: wall(now))
    }
}
