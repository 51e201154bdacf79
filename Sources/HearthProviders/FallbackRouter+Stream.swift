extension FallbackRouter {
    /// Streams the reply from the first provider that can give it, failing over as described
    /// on ``FallbackRouter``. Throws ``ProviderError``: the error that ended the last attempt,
    /// or ``ProviderError/Code/modelUnavailable`` when no provider is available.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: ChatEvent.self, throwing: Error.self)
        let task = Task {
            do {
                try await run(request, into: continuation)
                continuation.finish()
            } catch {
                continuation.finish(throwing: ProviderError.wrapping(error, provider: id))
            }
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    /// The failover loop. Returns when a provider finished; throws when none could.
    private func run(
        _ request: ChatRequest, into output: AsyncThrowingStream<ChatEvent, Error>.Continuation
    ) async throws {
        let candidates = order(for: request)
        var streamed = ""  // text already shown to the consumer, across providers
        var unavailable: [String] = []
        var index = try await nextAvailable(candidates, from: 0, skipped: &unavailable)
        guard var current = index else {
            throw ProviderError(
                .modelUnavailable, provider: id,
                message: "No provider is available (\(unavailable.joined(separator: "; "))). "
                    + "Check the network and credentials, or download the local model.")
        }
        while true {
            try Task.checkCancellation()
            let provider = candidates[current]
            // Each provider sees only the reasoning it may be sent (never another's sealed parts).
            var attempt = request.keepingReasoning(for: provider.id)
            if !streamed.isEmpty { attempt.continuation = (request.continuation ?? "") + streamed }

            let failure: ProviderError
            do {
                try await relay(provider, attempt, streamed: &streamed, into: output)
                return
            } catch {
                failure = ProviderError.wrapping(error, provider: provider.id)
            }
            if failure.code == .cancelled || Task.isCancelled { throw failure }
            guard shouldFailOver(failure) else { throw failure }
            index = try await nextAvailable(candidates, from: current + 1, skipped: &unavailable)
            guard let next = index else { throw failure }
            output.yield(.switchedProvider(from: provider.id, to: candidates[next].id, reason: failure))
            current = next
        }
    }

    /// Forwards one provider's events, adding its `.servedBy` before its first event and
    /// appending its text to `streamed`. An error after `.finished` is ignored: the answer is
    /// already complete.
    ///
    /// Tool calls are held back until the provider's reply is complete (see
    /// ``ToolCallHoldBack``): text streams live, but from a reply's first tool-call event on,
    /// its calls and the events after them (usage) wait for its `.finished` (or its stream's
    /// end), and a failure before then drops them, so the next provider makes the calls anew
    /// and the consumer never receives half a call — nor a call twice.
    private func relay(
        _ provider: any LanguageModelProvider, _ request: ChatRequest, streamed: inout String,
        into output: AsyncThrowingStream<ChatEvent, Error>.Continuation
    ) async throws {
        var announced = false
        var finished = false
        var held = ToolCallHoldBack()
        do {
            for try await event in provider.stream(request) {
                if !announced {
                    output.yield(.servedBy(provider.id))
                    announced = true
                }
                switch event {
                case .servedBy(let name) where name == provider.id:
                    continue
                case .textDelta(let text):
                    streamed += text
                case .finished:
                    finished = true
                    held.release(into: output)
                default:
                    break
                }
                if held.hold(event) { continue }
                output.yield(event)
            }
        } catch where finished {
            return
        }
        held.release(into: output)
    }

    /// The index of the first available provider at or after `start`, recording the reasons of
    /// the ones skipped; `nil` when none is left.
    private func nextAvailable(
        _ candidates: [any LanguageModelProvider], from start: Int, skipped: inout [String]
    ) async throws -> Int? {
        var index = start
        while index < candidates.count {
            try Task.checkCancellation()
            switch await candidates[index].availability {
            case .available: return index
            case .unavailable(let reason): skipped.append("\(candidates[index].id): \(reason)")
            }
            index += 1
        }
        return nil
    }
}

/// The tool-call events of one provider's reply that the router has not forwarded yet.
///
/// Why a whole reply's calls and not each call as it finishes: a provider that fails after
/// one complete call would leave the next provider — which does not see that call — to make
/// it again, and the consumer would run the tool twice. Holding every call until the reply is
/// complete keeps the rule simple: a failed reply's calls never reach the consumer, the next
/// provider's calls are numbered from 0, and the text already shown is continued as before.
/// Calls come at the end of a reply, so this delays them little; their arguments then arrive
/// in one burst rather than piece by piece.
struct ToolCallHoldBack {
    private var events: [ChatEvent] = []
    private var holding = false

    /// Whether `event` is held: every tool-call event, and after the first one everything but
    /// text (so usage still comes after the calls).
    mutating func hold(_ event: ChatEvent) -> Bool {
        switch event {
        case .toolCall: holding = true
        case .textDelta, .servedBy, .switchedProvider: return false
        default: break
        }
        if holding { events.append(event) }
        return holding
    }

    /// Forwards the held events (the reply is complete) and stops holding.
    mutating func release(into output: AsyncThrowingStream<ChatEvent, Error>.Continuation) {
        for event in events { output.yield(event) }
        events = []
        holding = false
    }
}
