import HearthProviders
import Synchronization

/// Passes events to the consumer and remembers whether reply text or a tool call went out:
/// after that, a retry would show it twice, so the runner stops retrying.
final class EventSink: Sendable {
    private let continuation: AsyncThrowingStream<ChatEvent, Error>.Continuation
    private let state = Mutex(State())

    private struct State {
        var sentText = false
        var metrics = StreamMetrics()
    }

    init(_ continuation: AsyncThrowingStream<ChatEvent, Error>.Continuation) {
        self.continuation = continuation
    }

    /// Sends a text delta (empty deltas are dropped).
    func text(_ delta: String) {
        guard !delta.isEmpty else { return }
        output(.textDelta(delta))
    }

    /// Sends a piece of reasoning (empty pieces are dropped). Counts as reply output: a retry
    /// would show it twice, so the runner stops retrying after it.
    func reasoning(_ delta: String) {
        guard !delta.isEmpty else { return }
        output(.reasoningDelta(delta))
    }

    /// Sends the end of a reasoning part (counts as reply output, like its deltas: a redacted
    /// part has no deltas, and a retry would deliver it twice).
    func reasoningEnded(_ part: ReasoningPart) {
        state.withLock { $0.sentText = true }
        continuation.yield(.reasoningEnded(part))
    }

    /// Sends a step of a tool call (counts as reply output, like text).
    func toolCall(_ event: ToolCallEvent) {
        output(.toolCall(event))
    }

    /// Sends a piece of reply output (text, reasoning, a tool call's step): from now on a retry
    /// would repeat it, and it times the first output and the pace.
    private func output(_ event: ChatEvent) {
        state.withLock {
            $0.sentText = true
            $0.metrics.textArrived()
        }
        continuation.yield(event)
    }

    /// Sends any other event.
    func yield(_ event: ChatEvent) {
        continuation.yield(event)
    }

    /// Whether any reply text (or tool call) was sent.
    var hasSentText: Bool { state.withLock { $0.sentText } }

    /// Usage with this reply's client-side timings.
    func usage(prompt: Int, completion: Int, cached: Int?) -> Usage {
        state.withLock { $0.metrics }.usage(prompt: prompt, completion: completion, cached: cached)
    }

    /// Ends the consumer's stream now (the reply is complete); the provider may still drain the
    /// connection so it can be reused, and nothing it throws afterwards reaches the consumer.
    func finish() {
        continuation.finish()
    }

    /// Restarts the timing for a new attempt (retries happen only before any text).
    func restartTiming() {
        state.withLock { $0.metrics = StreamMetrics() }
    }
}

/// The part every cloud provider shares: the stream, `.servedBy`, the idle timeout, retries
/// before the first byte, cancellation, and turning any failure into a ``ProviderError``.
struct CloudStreamRunner: Sendable {
    let provider: String
    let timeouts: CloudTimeouts
    let retry: RetryPolicy
    let redactor: Redactor

    /// Runs `attempt` (one request, start to end) inside a stream. `attempt` gets the sink for
    /// its events and a watchdog to touch whenever bytes arrive; it throws `ProviderError`s for
    /// what it understands, and the runner classifies everything else.
    func stream(
        _ attempt: @escaping @Sendable (EventSink, IdleWatchdog) async throws -> Void
    ) -> AsyncThrowingStream<ChatEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChatEvent.self, throwing: Error.self)
        let sink = EventSink(continuation)
        let runner = self
        let task = Task {
            sink.yield(.servedBy(runner.provider))
            do {
                try await runner.runWithRetries(sink, attempt)
                continuation.finish()
            } catch {
                continuation.finish(throwing: runner.classify(error))
            }
        }
        // Only a consumer that went away cancels the work; a finished reply may still be
        // draining its connection for reuse.
        continuation.onTermination = { termination in
            if case .cancelled = termination { task.cancel() }
        }
        return stream
    }

    private func runWithRetries(
        _ sink: EventSink, _ attempt: @escaping @Sendable (EventSink, IdleWatchdog) async throws -> Void
    ) async throws {
        var number = 0
        while true {
            do {
                sink.restartTiming()
                try await withIdleTimeout(timeouts.idle) { watchdog in try await attempt(sink, watchdog) }
                return
            } catch {
                let failure = classify(error)
                if Task.isCancelled || sink.hasSentText { throw failure }
                guard let wait = retry.delay(afterAttempt: number, for: failure, unit: Double.random(in: 0..<1))
                else { throw failure }
                try await Task.sleep(for: wait)
                number += 1
            }
        }
    }

    /// Any error as this provider's ``ProviderError``, with credentials redacted.
    func classify(_ error: any Error) -> ProviderError {
        var failure = TransportErrors.classify(error, provider: provider, timeouts: timeouts)
        failure.message = redactor(failure.message)
        return failure
    }
}
