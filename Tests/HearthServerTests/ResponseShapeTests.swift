import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Fields the current API schemas require in a reply, found missing by llm-comply's schema
/// checks (issue 56): Anthropic's `Message` requires `stop_details` and `container` (null here),
/// also in a stream's `message_start`; a response `tool_use` block requires `caller` (`direct`:
/// the model called the tool); chat's message carries `annotations` (none here).
@Suite struct ResponseShapeTests {
    static var weather: [String: Any] {
        [
            "name": "get_weather", "description": "Current weather for a location.",
            "input_schema": ["type": "object", "properties": ["location": ["type": "string"]], "required": ["location"]],
        ]
    }

    @Test func anthropicMessageAndToolUseCarryTheRequiredFields() async throws {
        let harness = try await ServerHarness(context: 1024)
        try await withCleanup({ try? await harness.stop() }) {
            let plain: [String: Any] = ["model": "tiny", "max_tokens": 4, "messages": [["role": "user", "content": "Hi"]]]
            let reply = try await harness.send("/v1/messages", json: plain)
            #expect(reply.status == 200, "\(reply.body)")
            for key in ["stop_details", "container"] {
                #expect(reply.json.keys.contains(key) && reply.json[key] is NSNull, "\(key): \(reply.body)")
            }

            var streamed = plain
            streamed["stream"] = true
            let stream = try await harness.send("/v1/messages", json: streamed)
            let start = try #require(AnthropicCachedUsageTests.events(stream.body, type: "message_start").first?["message"] as? [String: Any])
            for key in ["stop_details", "container"] {
                #expect(start.keys.contains(key) && start[key] is NSNull, "message_start \(key): \(stream.body)")
            }

            var called: [String: Any] = [
                "model": "tiny", "max_tokens": 48, "temperature": 0, "tools": [Self.weather], "tool_choice": ["type": "any"],
                "messages": [["role": "user", "content": "What is the weather in Paris?"]],
            ]
            let call = try await harness.send("/v1/messages", json: called)
            #expect(call.status == 200, "\(call.body)")
            let blocks = (call.json["content"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "tool_use" }
            #expect(!blocks.isEmpty, "\(call.body)")
            for block in blocks {
                #expect((block["caller"] as? [String: Any])?["type"] as? String == "direct", "\(block)")
            }
            called["stream"] = true
            let callStream = try await harness.send("/v1/messages", json: called)
            let opened = AnthropicCachedUsageTests.events(callStream.body, type: "content_block_start")
                .compactMap { $0["content_block"] as? [String: Any] }.filter { $0["type"] as? String == "tool_use" }
            #expect(!opened.isEmpty, "\(callStream.body)")
            for block in opened {
                #expect((block["caller"] as? [String: Any])?["type"] as? String == "direct", "\(block)")
            }
        }
    }

    @Test func chatMessageCarriesAnnotations() async throws {
        let harness = try await ServerHarness(context: 1024)
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "max_tokens": 4, "messages": [["role": "user", "content": "Hi"]]])
            #expect(reply.status == 200, "\(reply.body)")
            let message = try #require(((reply.json["choices"] as? [[String: Any]])?.first)?["message"] as? [String: Any])
            #expect((message["annotations"] as? [Any])?.isEmpty == true, "\(reply.body)")
        }
    }
}
