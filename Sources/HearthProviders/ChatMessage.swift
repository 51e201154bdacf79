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
    }

    /// Who wrote this message.
    public var role: Role
    /// The message text.
    public var content: String

    /// Creates a message.
    public init(role: Role, content: String) {
        self.role = role
        self.content = content
    }

    /// A system message (instructions for the whole conversation).
    public static func system(_ content: String) -> ChatMessage { ChatMessage(role: .system, content: content) }
    /// A user message.
    public static func user(_ content: String) -> ChatMessage { ChatMessage(role: .user, content: content) }
    /// An assistant message (an earlier reply of the model).
    public static func assistant(_ content: String) -> ChatMessage { ChatMessage(role: .assistant, content: content) }
}
