import Foundation
import Testing

/// A final assistant message continued (issue 58 item 3, `continue_final_message`): on
/// `/v1/messages` a last assistant message is a prefill, as in the Messages API; on
/// `/v1/chat/completions` vLLM's `continue_final_message: true` asks for it. The prompt the
/// model reads is the template's rendering with that message left open — exactly the tokens of
/// `/apply-template`'s `continue_final_message` prompt — and the reply is what follows it.
@Suite(.serialized) struct PrefillServerTests {
    static var conversation: [[String: Any]] {
        [["role": "user", "content": "Name a colour."], ["role": "assistant", "content": "My favourite colour is"]]
    }

    /// The token count of `text` as the chat path encodes a rendered prompt (no added specials).
    static func tokens(_ server: ServerHarness, _ text: String) async throws -> Int {
        let reply = try await server.send("/tokenize", json: ["content": text, "add_special": false])
        return try #require(reply.json["count"] as? Int ?? (reply.json["tokens"] as? [Any])?.count, "\(reply.body)")
    }

    @Test func theFinalAssistantMessageIsContinued() async throws {
        let server = try await ServerHarness(context: 512)
        defer { Task { try? await server.stop() } }
        let open = try await server.send("/apply-template", json: ["messages": Self.conversation, "continue_final_message": true])
        let openPrompt = try #require(open.json["prompt"] as? String, "\(open.body)")
        let closed = try await server.send("/apply-template", json: ["messages": Self.conversation])
        let closedPrompt = try #require(closed.json["prompt"] as? String, "\(closed.body)")
        #expect(openPrompt != closedPrompt)
        let openTokens = try await Self.tokens(server, openPrompt), closedTokens = try await Self.tokens(server, closedPrompt)

        // Chat completions: vLLM's flag leaves the message open; without it the turn is closed.
        let continued = try await server.send(
            "/v1/chat/completions",
            json: ["model": "tiny", "messages": Self.conversation, "continue_final_message": true, "max_tokens": 4, "temperature": 0])
        #expect(continued.status == 200, "\(continued.body)")
        #expect((continued.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int == openTokens, "\(continued.body)")
        let plain = try await server.send(
            "/v1/chat/completions", json: ["model": "tiny", "messages": Self.conversation, "max_tokens": 4, "temperature": 0])
        #expect((plain.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int == closedTokens, "\(plain.body)")

        // Messages: a last assistant message is a prefill.
        let prefill = try await server.send(
            "/v1/messages", json: ["model": "tiny", "messages": Self.conversation, "max_tokens": 4, "temperature": 0])
        #expect(prefill.status == 200, "\(prefill.body)")
        let usage = prefill.json["usage"] as? [String: Any] ?? [:]
        #expect((usage["input_tokens"] as? Int ?? 0) + (usage["cache_read_input_tokens"] as? Int ?? 0) == openTokens, "\(prefill.body)")
        let counted = try await server.send(
            "/v1/messages/count_tokens", json: ["model": "tiny", "messages": Self.conversation])
        #expect(counted.json["input_tokens"] as? Int == openTokens, "\(counted.body)")

        // The flag needs an assistant message with text last.
        let wrong = try await server.send(
            "/v1/chat/completions",
            json: ["model": "tiny", "messages": [["role": "user", "content": "Hi"]], "continue_final_message": true, "max_tokens": 4])
        #expect(wrong.status == 400 && (wrong.json["error"] as? [String: Any])?["param"] as? String == "continue_final_message", "\(wrong.body)")
    }
}
