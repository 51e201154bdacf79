import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// `POST /v1/messages/count_tokens` counts the prompt `/v1/messages` generates from (system,
/// messages and tools as the model reads them), and refuses in Anthropic's error shape.
@Suite struct CountTokensTests {
    @Test func countsThePromptMessagesWouldGenerateFrom() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let request: [String: Any] = [
                "model": "tiny", "system": "Be brief.", "messages": [["role": "user", "content": "What is the capital of France?"]],
            ]
            let counted = try await harness.send("/v1/messages/count_tokens", json: request)
            #expect(counted.status == 200, "\(counted.body)")
            let count = try #require(counted.json["input_tokens"] as? Int)
            var generate = request
            generate["max_tokens"] = 1
            let reply = try await harness.send("/v1/messages", json: generate)
            #expect(reply.status == 200, "\(reply.body)")
            #expect((reply.json["usage"] as? [String: Any])?["input_tokens"] as? Int == count)

            var withTools = request
            withTools["tools"] = [
                ["name": "get_weather", "description": "The weather in a city.",
                 "input_schema": ["type": "object", "properties": ["city": ["type": "string"]], "required": ["city"]]],
            ]
            let toolCount = try await harness.send("/v1/messages/count_tokens", json: withTools)
            #expect((toolCount.json["input_tokens"] as? Int ?? 0) > count + 20, "\(toolCount.body)")

            let missing = try await harness.send("/v1/messages/count_tokens", json: ["model": "tiny"])
            #expect(missing.status == 400)
            #expect(missing.json["type"] as? String == "error", "\(missing.body)")
            let unknown = try await harness.send("/v1/messages/count_tokens", json: ["model": "nope", "messages": request["messages"] ?? []])
            #expect(unknown.status == 404 || unknown.status == 400)
            try await harness.stop()
        }
    }
}
