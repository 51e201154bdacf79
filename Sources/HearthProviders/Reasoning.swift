/// One part of a model's reasoning: the text of its thinking (or a summary of it), and what the
/// provider that produced it needs back to continue the conversation.
///
/// A reply's reasoning streams as ``ChatEvent/reasoningDelta(_:)`` events and each part ends
/// with one ``ChatEvent/reasoningEnded(_:)`` carrying the whole part. Send a reply's parts back
/// in ``ChatMessage/reasoning`` of its assistant message: Anthropic requires a thinking block's
/// signature with the tool results that follow it, and OpenAI's Responses API continues a
/// stateless conversation from the encrypted content. A provider sends back only the parts
/// whose ``provider`` is its own ``LanguageModelProvider/id`` (or that carry no seal at all), so
/// one cloud's signature never reaches another.
///
/// ```swift
/// var reasoning: [ReasoningPart] = []
/// for try await event in provider.stream(request) {
///     switch event {
///     case .reasoningDelta(let text): showDimmed(text)
///     case .reasoningEnded(let part): reasoning.append(part)
///     case .textDelta(let text): show(text)
///     default: break
///     }
/// }
/// messages.append(ChatMessage(role: .assistant, content: answer, reasoning: reasoning))
/// ```
public struct ReasoningPart: Sendable, Codable, Hashable {
    /// The reasoning text as the provider showed it (the whole thinking, or a summary; empty for
    /// a redacted part).
    public var text: String
    /// Anthropic's signature of a thinking block (`signature`), to be sent back unchanged.
    public var signature: String?
    /// OpenAI Responses' `encrypted_content` of a reasoning item, to be sent back unchanged for
    /// stateless use.
    public var encryptedContent: String?
    /// The opaque data of a redacted part (Anthropic `redacted_thinking`): no text, only this,
    /// to be sent back unchanged.
    public var redactedData: String?
    /// The provider's own id of the part (an OpenAI reasoning item's `id`), when it has one.
    public var id: String?
    /// The ``LanguageModelProvider/id`` of the provider that produced the part (set by the
    /// provider; the router keeps it).
    public var provider: String?

    /// Creates a part.
    public init(
        text: String, signature: String? = nil, encryptedContent: String? = nil, redactedData: String? = nil,
        id: String? = nil, provider: String? = nil
    ) {
        self.text = text
        self.signature = signature
        self.encryptedContent = encryptedContent
        self.redactedData = redactedData
        self.id = id
        self.provider = provider
    }

    /// Whether the part is redacted: opaque data to send back, nothing to show.
    public var isRedacted: Bool { redactedData != nil }

    /// Whether the part carries something only its own provider can read (a signature,
    /// encrypted content or redacted data).
    public var isSealed: Bool { signature != nil || encryptedContent != nil || redactedData != nil }

    /// Whether a provider with id `providerID` may be sent this part: parts with no seal go to
    /// any provider (as plain reasoning history), sealed parts only to the one that made them.
    public func belongs(to providerID: String) -> Bool {
        !isSealed || provider == nil || provider == providerID
    }
}

/// How much a reasoning model should think (OpenAI's `reasoning_effort`).
public enum ReasoningEffort: String, Sendable, Codable, CaseIterable {
    /// As little as the model can (OpenAI's `minimal`).
    case minimal
    /// A short trace.
    case low
    /// The provider's default.
    case medium
    /// A long trace.
    case high

    /// The reasoning budget, in tokens, that this effort means for a local model or for an API
    /// that takes a budget (Anthropic `budget_tokens`, DashScope `thinking_budget`) rather than an
    /// effort. Documented in docs/REASONING.md.
    public var defaultBudgetTokens: Int {
        switch self {
        case .minimal: return 256
        case .low: return 1024
        case .medium: return 4096
        case .high: return 16384
        }
    }
}

/// Reasoning options of a request (``ChatOptions/reasoning``).
///
/// `nil` options mean the provider's default (a reasoning model reasons, as its API does by
/// default). A model that cannot reason accepts any of these and answers without reasoning:
/// they are permission, not a demand.
public struct ReasoningOptions: Sendable, Codable, Hashable {
    /// Whether the model may reason at all (false: Anthropic `thinking: disabled`,
    /// DashScope `enable_thinking: false`; the local model closes its reasoning at once).
    public var enabled: Bool
    /// How much to think, for APIs that take an effort.
    public var effort: ReasoningEffort?
    /// The most reasoning tokens, for APIs that take a budget and for the local model, which
    /// ends the reasoning part (with the model's own closing sequence) when it is spent.
    public var budgetTokens: Int?
    /// Whether to ask the provider for a summary of its reasoning where it only shows one
    /// (OpenAI Responses `reasoning.summary`): nil is the provider's default.
    public var summary: Bool?

    /// Creates options.
    public init(enabled: Bool = true, effort: ReasoningEffort? = nil, budgetTokens: Int? = nil, summary: Bool? = nil) {
        self.enabled = enabled
        self.effort = effort
        self.budgetTokens = budgetTokens
        self.summary = summary
    }

    /// No reasoning.
    public static let off = ReasoningOptions(enabled: false)

    /// Reasoning with an effort.
    public static func effort(_ effort: ReasoningEffort) -> ReasoningOptions { ReasoningOptions(effort: effort) }

    /// Reasoning within a budget of tokens.
    public static func budget(_ tokens: Int) -> ReasoningOptions { ReasoningOptions(budgetTokens: tokens) }

    /// The budget in tokens these options mean: none when reasoning is off (0), the explicit
    /// budget, else the effort's ``ReasoningEffort/defaultBudgetTokens``, else nil (unbounded,
    /// the provider's default).
    public var resolvedBudget: Int? {
        guard enabled else { return 0 }
        if let budgetTokens { return budgetTokens }
        return effort?.defaultBudgetTokens
    }
}
