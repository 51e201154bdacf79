import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Anthropic's usage counts a prompt in parts: `input_tokens` is what was not read from the
/// cache, so the whole prompt is `input_tokens + cache_read_input_tokens +
/// cache_creation_input_tokens` (the Messages API's definition, which `HearthCloud`'s Anthropic
/// provider reads back the same way). Before this, Hearth reported the whole prompt as
/// `input_tokens` beside a non-zero `cache_read_input_tokens`, counting the cached part twice.
@Suite struct AnthropicCachedUsageTests {
    static func usage(_ json: [String: Any]) -> (input: Int, read: Int, creation: Int)? {
        guard let usage = json["usage"] as? [String: Any], let input = usage["input_tokens"] as? Int,
            let read = usage["cache_read_input_tokens"] as? Int, let creation = usage["cache_creation_input_tokens"] as? Int
        else { return nil }
        return (input, read, creation)
    }

    /// The `data:` objects of a server-sent event stream whose `type` is `type`.
    static func events(_ body: String, type: String) -> [[String: Any]] {
        body.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard line.hasPrefix("data:") else { return nil }
            let payload = line.dropFirst(5).trimmingCharacters(in: .whitespaces)
            guard let object = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any],
                object["type"] as? String == type
            else { return nil }
            return object
        }
    }

    @Test func inputTokensLeaveOutTheCachedPart() async throws {
        let harness = try await ServerHarness(context: 1024, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let request: [String: Any] = [
                "model": "tiny", "max_tokens": 1, "temperature": 0,
                "system": "You are a careful assistant who answers questions about the weather, briefly and plainly.",
                "messages": [["role": "user", "content": "What is the weather like in Paris in the spring, and in the autumn?"]],
            ]
            let first = try await harness.send("/v1/messages", json: request)
            #expect(first.status == 200, "\(first.body)")
            let cold = try #require(Self.usage(first.json), "\(first.body)")
            #expect(cold.read == 0 && cold.creation == 0)
            let prompt = cold.input

            // The same prompt again: its prefix is in the slot.
            let second = try await harness.send("/v1/messages", json: request)
            let warm = try #require(Self.usage(second.json), "\(second.body)")
            #expect(warm.read > 0, "the repeated prompt is read from the slot: \(second.body)")
            #expect(warm.input + warm.read + warm.creation == prompt, "\(second.body)")
            #expect(warm.input < prompt)

            // Streamed: message_start and message_delta use the same parts (message_start may
            // go out before the cached count is known; its parts still add up to the prompt).
            var streamed = request
            streamed["stream"] = true
            let stream = try await harness.send("/v1/messages", json: streamed)
            #expect(stream.status == 200, "\(stream.body)")
            let start = try #require(Self.events(stream.body, type: "message_start").first?["message"] as? [String: Any])
            let delta = try #require(Self.events(stream.body, type: "message_delta").last)
            for (name, object) in [("message_start", start), ("message_delta", delta)] {
                let parts = try #require(Self.usage(object), "\(name): \(stream.body)")
                #expect(parts.input + parts.read + parts.creation == prompt, "\(name): \(stream.body)")
            }
            #expect(Self.usage(delta)?.read ?? 0 > 0, "\(stream.body)")
        }
    }
}
