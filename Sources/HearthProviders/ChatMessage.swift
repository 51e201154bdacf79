/// One turn of a conversation: who said it and what they said.
///
/// The same value goes to every provider; each provider maps it to its wire format
/// (OpenAI `messages`, Anthropic `system` + `messages`, Spark `payload.message.text`,
/// or the local model's chat template).
public struct ChatMessage: Sendable, Codable, Equatable {
    /// Who wrote a message.
    public enum Role: String, Sendable, Codable {
        /// Instructions that frame the whole conversation.
        case system
        /// The person using the app.
        case user
        /// The model.
        case assistant
        /// The result of a tool call (``toolCallID`` names the call).
        case tool
    }

    /// Who wrote this message.
    public var role: Role
    /// The message text (for ``Role/tool``: the tool's result; for an assistant message with
    /// ``toolCalls``: any text before the calls, often empty).
    public var content: String
    /// The calls an assistant message made (empty for every other message).
    public var toolCalls: [ToolCall]
    /// The call a ``Role/tool`` message answers (nil for every other message).
    public var toolCallID: String?
    /// An assistant message's reasoning parts (``ChatResponse/reasoning``), sent back so the
    /// provider that made them can continue (Anthropic signatures, OpenAI encrypted content);
    /// empty for other roles. Each provider sends only the parts that
    /// ``ReasoningPart/belongs(to:)`` it.
    public var reasoning: [ReasoningPart]

    /// Creates a message.
    public init(
        role: Role, content: String, toolCalls: [ToolCall] = [], toolCallID: String? = nil,
        reasoning: [ReasoningPart] = []
    ) {
        self.reasoning = reasoning
        self.role = role
        self.content = content
        self.toolCalls = toolCalls
        self.toolCallID = toolCallID
    }

    private enum CodingKeys: String, CodingKey {
        case role, content, toolCalls, toolCallID, reasoning
    }

    /// Decodes a message; `toolCalls` and `toolCallID` may be absent (files written before tools).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        role = try container.decode(Role.self, forKey: .role)
        content = try container.decode(String.self, forKey: .content)
        toolCalls = try container.decodeIfPresent([ToolCall].self, forKey: .toolCalls) ?? []
        toolCallID = try container.decodeIfPresent(String.self, forKey: .toolCallID)
        reasoning = try container.decodeIfPresent([ReasoningPart].self, forKey: .reasoning) ?? []
    }

    /// Encodes a message; `toolCalls` and `toolCallID` only when set.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role, forKey: .role)
        try container.encode(content, forKey: .content)
        if !toolCalls.isEmpty { try container.encode(toolCalls, forKey: .toolCalls) }
        try container.encodeIfPresent(toolCallID, forKey: .toolCallID)
        if !reasoning.isEmpty { try container.encode(reasoning, forKey: .reasoning) }
    }

    /// A system message (instructions for the whole conversation).
    public static func system(_ content: String) -> ChatMessage { ChatMessage(role: .system, content: content) }
    /// A user message.
    public static func user(_ content: String) -> ChatMessage { ChatMessage(role: .user, content: content) }
    /// An assistant message (an earlier reply of the model).
    public static func assistant(_ content: String) -> ChatMessage { ChatMessage(role: .assistant, content: content) }
    /// An assistant message that made tool calls (with any text it wrote before them).
    public static func assistant(_ content: String = "", toolCalls: [ToolCall]) -> ChatMessage {
        ChatMessage(role: .assistant, content: content, toolCalls: toolCalls)
    }
    /// The result of the tool call `id`.
    public static func tool(_ content: String, callID id: String) -> ChatMessage {
        ChatMessage(role: .tool, content: content, toolCallID: id)
    }
}
