/// What a request is for, so a ``FallbackRouter`` can send it to the provider that does it best.
public enum TaskKind: String, Sendable, Codable {
    /// General conversation.
    case chat
    /// Writing or editing code.
    case codeGeneration
    /// Translating text.
    case translation
    /// Summarising text.
    case summarization
}

/// One request to a provider: the conversation, the sampling options and routing hints.
public struct ChatRequest: Sendable {
    /// The conversation so far, oldest first; the reply continues after the last message.
    public var messages: [ChatMessage]
    /// Sampling and length options.
    public var options: ChatOptions
    /// A model name that overrides the provider's configured model (`nil`: the provider's own).
    public var model: String?
    /// What the request is for; a ``FallbackRouter`` may route on it.
    public var task: TaskKind?
    /// When the conversation does not fit the context window, drop the oldest turns (the
    /// system message is kept) and report it with ``ChatEvent/contextTruncated(droppedMessages:)``
    /// instead of failing with ``ProviderError/Code/contextLengthExceeded(tokens:limit:)``.
    public var allowTruncation: Bool
    /// Partial assistant text to continue rather than start a new reply.
    ///
    /// Set by ``FallbackRouter`` when a provider fails mid-answer: the next provider gets the
    /// same messages plus the text already shown, and its stream carries **only the text that
    /// follows** it, so the consumer sees one continuous answer.
    public var continuation: String?
    /// Set by a caller inside this package that has already run `options.validate()` on this
    /// request (the server, as it parses it), so the provider does not check it again: a
    /// request is validated once on its way through.
    package var optionsChecked = false

    /// Creates a request.
    public init(
        messages: [ChatMessage], options: ChatOptions = ChatOptions(), model: String? = nil,
        task: TaskKind? = nil, allowTruncation: Bool = false, continuation: String? = nil
    ) {
        self.messages = messages
        self.options = options
        self.model = model
        self.task = task
        self.allowTruncation = allowTruncation
        self.continuation = continuation
    }
}

extension ChatRequest {
    /// The messages with ``continuation`` (when non-empty) as a trailing assistant message,
    /// merged into the last message when that is already an assistant message. This is the
    /// transcript a provider prefills so the model continues the partial answer.
    public var continuedMessages: [ChatMessage] {
        guard let continuation, !continuation.isEmpty else { return messages }
        var result = messages
        if let last = result.last, last.role == .assistant {
            result[result.count - 1].content = last.content + continuation
        } else {
            result.append(.assistant(continuation))
        }
        return result
    }
}
