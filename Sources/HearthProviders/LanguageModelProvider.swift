/// A language model behind one interface: a cloud API, the on-device engine, or a router over several.
///
/// Conformers stream a reply as ``ChatEvent``s and throw ``ProviderError`` (and nothing else).
/// The stream's contract:
/// - it starts with ``ChatEvent/servedBy(_:)`` carrying ``id`` (a ``FallbackRouter`` adds it if missing),
///   then ``ChatEvent/textDelta(_:)``s, ``ChatEvent/usage(_:)`` when known, and ``ChatEvent/finished(_:)``;
/// - a reasoning model's reasoning comes as ``ChatEvent/reasoningDelta(_:)``s, each part closed by
///   one ``ChatEvent/reasoningEnded(_:)``, never inside a text delta;
/// - when ``ChatRequest/continuation`` is set, the deltas carry only the text that follows it;
/// - cancelling the consuming task, or dropping the stream, stops the work (the HTTP request,
///   the decode loop) promptly; the stream then ends with ``ProviderError/Code/cancelled``
///   or simply finishes.
public protocol LanguageModelProvider: Sendable {
    /// A stable name for logs, events and task routing, such as `"openai"` or `"local"`.
    var id: String { get }
    /// Whether the provider can serve now. Cheap: never a network round trip.
    var availability: ProviderAvailability { get async }
    /// Streams the reply to `request`. Errors are thrown from the stream as ``ProviderError``.
    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error>
    /// The whole reply at once, collected from ``stream(_:)``. Throws ``ProviderError``.
    func complete(_ request: ChatRequest) async throws -> ChatResponse
    /// Gets ready to serve: loads a local model and prefills `request`'s prompt into its cache,
    /// or does nothing for cloud providers. Throws ``ProviderError``.
    func prewarm(_ request: ChatRequest?) async throws
}

extension LanguageModelProvider {
    /// Collects ``stream(_:)`` into one ``ChatResponse``: the concatenated text deltas, the tool calls, the last
    /// usage, the finish reason (``FinishReason/stop`` if the stream ended without one) and the
    /// provider named by the last ``ChatEvent/servedBy(_:)`` (or this provider's ``id``).
    public func complete(_ request: ChatRequest) async throws -> ChatResponse {
        var text = ""
        var usage: Usage?
        var finishReason: FinishReason?
        var provider = id
        var calls = ToolCallCollector()
        var reasoning: [ReasoningPart] = []
        for try await event in stream(request) {
            switch event {
            case .textDelta(let delta): text += delta
            case .usage(let value): usage = value
            case .finished(let reason): finishReason = reason
            case .servedBy(let name): provider = name
            case .switchedProvider(_, let to, _):
                provider = to
                reasoning = []  // the failed provider's reasoning is not this reply's
            case .toolCall(let step): calls.add(step)
            case .reasoningEnded(let part): reasoning.append(part)
            case .contextTruncated, .dialogState, .reasoningDelta: break
            }
        }
        return ChatResponse(
            text: text, toolCalls: calls.calls, usage: usage, finishReason: finishReason ?? .stop, provider: provider,
            reasoning: reasoning)
    }

    /// Does nothing: a provider with nothing to load is always warm.
    public func prewarm(_ request: ChatRequest?) async throws {}
}
