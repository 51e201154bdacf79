extension Array where Element == ReasoningPart {
    /// The parts a provider with id `providerID` may be sent (``ReasoningPart/belongs(to:)``):
    /// another provider's sealed parts (signatures, encrypted content, redacted data) are left out.
    package func belonging(to providerID: String) -> [ReasoningPart] {
        filter { $0.belongs(to: providerID) }
    }

    /// The parts' text joined, in order (redacted parts have none).
    public var text: String { map(\.text).joined() }
}

extension ReasoningOptions {
    /// Whether these options turn reasoning off: `enabled` false, or a budget of 0 tokens.
    public var isOff: Bool { !enabled || resolvedBudget == 0 }
}

extension ChatRequest {
    /// The request as provider `providerID` may see it: every message's reasoning keeps only the
    /// parts that ``ReasoningPart/belongs(to:)`` that provider. ``FallbackRouter`` sends each
    /// provider this, so a failed provider's sealed reasoning never reaches the next one.
    public func keepingReasoning(for providerID: String) -> ChatRequest {
        guard messages.contains(where: { !$0.reasoning.isEmpty }) else { return self }
        var copy = self
        for index in copy.messages.indices where !copy.messages[index].reasoning.isEmpty {
            copy.messages[index].reasoning = copy.messages[index].reasoning.belonging(to: providerID)
        }
        return copy
    }
}

extension ChatResponse {
    /// The reply as the assistant message to append to the conversation: its text, its calls
    /// and its reasoning parts, so the provider that made them gets them back on the next turn
    /// (a tool round trip with Anthropic thinking needs the signed parts).
    public var assistantMessage: ChatMessage {
        ChatMessage(role: .assistant, content: text, toolCalls: toolCalls, reasoning: reasoning)
    }
}
