/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// The model ended its reply, or a stop string matched.
    case stop
    /// The `maxTokens` limit (or the context window) was reached.
    case length
    /// The request was cancelled.
    case cancelled
    /// The model called tools (``ChatResponse/toolCalls``); the app runs them and sends
    /// their results back as ``ChatMessage/Role/tool`` messages.
    case toolCalls = "tool_calls"
}

/// Token counts and speed of one reply.
public struct Usage: Sendable, Equatable, Codable {
    /// Tokens in the prompt (the whole conversation as the model saw it).
    public var promptTokens: Int
    /// Tokens generated.
    public var completionTokens: Int
    /// Prompt tokens served from a cache (provider prompt cache, or a local KV cache); `nil` when unknown.
    public var cachedPromptTokens: Int?
    /// Seconds from sending the request to the first text, as measured by the client; `nil` when unknown.
    public var timeToFirstToken: Double?
    /// Generated tokens per second after the first one; `nil` when unknown.
    public var tokensPerSecond: Double?
    /// Speculative decoding (the local engine): tokens drafted for verification, and how many
    /// of them were accepted; `nil` when the provider does not say.
    public var draftedTokens: Int?
    public var acceptedDraftTokens: Int?
    /// Structured output (the local engine): tokens the finish-in-budget rule chose so the
    /// answer ends complete within its token budget (``ChatOptions/finishInBudget``); `nil`
    /// or 0 when the budget did not shape the answer.
    public var budgetShapedTokens: Int?
    /// Of ``completionTokens``, how many were reasoning (a reasoning part's tokens; nil when the
    /// provider does not say, 0 when the reply had no reasoning).
    public var reasoningTokens: Int?

    /// Creates usage figures.
    public init(
        promptTokens: Int, completionTokens: Int, cachedPromptTokens: Int? = nil,
        timeToFirstToken: Double? = nil, tokensPerSecond: Double? = nil
    ) {
        self.promptTokens = promptTokens
        self.completionTokens = completionTokens
        self.cachedPromptTokens = cachedPromptTokens
        self.timeToFirstToken = timeToFirstToken
        self.tokensPerSecond = tokensPerSecond
    }
}

/// One event of a streamed reply.
///
/// A provider's stream is: ``servedBy(_:)``, any number of ``textDelta(_:)`` (and possibly
/// ``contextTruncated(droppedMessages:)`` before the first), then ``usage(_:)`` when known,
/// then ``finished(_:)``; errors end the stream by throwing ``ProviderError``.
/// A ``FallbackRouter`` adds ``switchedProvider(from:to:reason:)`` when it moves to the next provider.
/// Realtime dialog providers add ``dialogState(_:)`` as their server's state changes; consumers
/// that only want text can ignore it (and every other case they do not use).
public enum ChatEvent: Sendable {
    /// The next piece of the reply's text (whole Unicode characters, never a split UTF-8 sequence).
    case textDelta(String)
    /// Token counts and speed, sent once near the end.
    case usage(Usage)
    /// The reply is complete.
    case finished(FinishReason)
    /// The provider (its ``LanguageModelProvider/id``) whose text follows.
    case servedBy(String)
    /// The router left provider `from` because of `reason` and continues with provider `to`.
    /// Text already streamed stays valid: `to` continues it.
    case switchedProvider(from: String, to: String, reason: ProviderError)
    /// The oldest `droppedMessages` turns were dropped to fit the context window
    /// (only when the request set ``ChatRequest/allowTruncation``).
    case contextTruncated(droppedMessages: Int)
    /// A realtime dialog's server changed state (Bailian's dialog: listening → thinking →
    /// responding → listening). Informational: it carries no reply text, and providers without
    /// such a state never send it.
    case dialogState(DialogState)
    /// A step of a tool call: its start (id, name), a piece of its arguments, or its end. A
    /// reply may mix text and calls; text never carries a call.
    case toolCall(ToolCallEvent)
    /// The next piece of the reply's reasoning (whole Unicode characters), apart from its text:
    /// no byte of reasoning is ever in a ``textDelta(_:)``. Providers that do not reason never
    /// send it.
    case reasoningDelta(String)
    /// A reasoning part is complete: its whole text and what the provider needs back (a
    /// signature, encrypted content; a redacted part arrives only as this event). Keep the parts
    /// and send them back in the assistant message (``ChatMessage/reasoning``).
    case reasoningEnded(ReasoningPart)
}

/// The state of a realtime dialog server, as a ``ChatEvent/dialogState(_:)`` reports it.
///
/// A struct rather than an enum, so a state the server adds later arrives as its raw value
/// instead of breaking consumers' `switch`es.
public struct DialogState: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The server's name for the state, such as `Listening`.
    public var rawValue: String

    /// Wraps a state name as the server spells it.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Connected, no dialog yet.
    public static let idle = DialogState(rawValue: "Idle")
    /// Ready for the next request.
    public static let listening = DialogState(rawValue: "Listening")
    /// The request was accepted; the model is working on the answer.
    public static let thinking = DialogState(rawValue: "Thinking")
    /// The answer is being sent (text, and audio for voice clients).
    public static let responding = DialogState(rawValue: "Responding")

    /// The raw value.
    public var description: String { rawValue }
}

/// A complete (non-streamed) reply.
public struct ChatResponse: Sendable {
    /// The whole reply text.
    public var text: String
    /// The tool calls the reply made, in order (empty for a text answer).
    public var toolCalls: [ToolCall]
    /// Token counts and speed, when the provider reported them.
    public var usage: Usage?
    /// Why generation ended.
    public var finishReason: FinishReason
    /// The provider that produced the (end of the) reply.
    public var provider: String
    /// The reply's reasoning parts, in order (empty when the model did not reason). Send them
    /// back in the assistant message (``ChatMessage/reasoning``).
    public var reasoning: [ReasoningPart]

    /// Creates a response.
    public init(
        text: String, toolCalls: [ToolCall] = [], usage: Usage?, finishReason: FinishReason, provider: String,
        reasoning: [ReasoningPart] = []
    ) {
        self.reasoning = reasoning
        self.text = text
        self.toolCalls = toolCalls
        self.usage = usage
        self.finishReason = finishReason
        self.provider = provider
    }
}
