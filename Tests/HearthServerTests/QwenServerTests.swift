import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// The Qwen families through `hearth serve` (issue 61: "serve (tools, structured output,
/// reasoning where the model has it) works on each family's fixture"): the random-weight
/// fixtures `qwen2-tiny` and `qwen3-tiny` (Tests/Fixtures; their tokenizers and chat templates are
/// the real checkpoints', with Qwen's `<tool_call>` and `<think>` tokens). A random model decides
/// nothing worth asserting, so each request leaves it no choice: a forced tool call and a schema
/// are grammars (with room for them: the fixtures' 640-token vocabulary spends about a token a
/// byte), and reasoning is opened by a logit bias on `<think>`. What is asserted is
/// Hearth's part — the call parsed from Qwen's `<tool_call>` JSON into the API's shape, the
/// object valid, no byte of the `<think>` block in the answer.
@Suite(.serialized) struct QwenServerTests {
    /// Qwen3's `<think>` in the fixture's vocabulary (its tokenizer.json's added tokens).
    static let think = "664"

    static var weatherTool: [String: Any] {
        [
        "type": "function",
        "function": [
            "name": "get_weather", "description": "The weather in a city.",
            "parameters": [
                "type": "object", "properties": ["city": ["type": "string", "maxLength": 12]], "required": ["city"],
                "additionalProperties": false,
            ],
        ],
        ]
    }

    @Test(arguments: ["qwen2-tiny", "qwen3-tiny"])
    func aForcedToolCallParsesWholeAndStreamed(fixture: String) async throws {
        let harness = try await ServerHarness(context: 1024, checkpoint: fixture)
        try await withCleanup({ try? await harness.stop() }) {
            var request: [String: Any] = [
                "model": "tiny", "max_tokens": 200, "temperature": 0, "tools": [Self.weatherTool], "tool_choice": "required",
                "messages": [["role": "user", "content": "What is the weather in Paris?"]],
            ]
            if fixture == "qwen3-tiny" { request["reasoning_effort"] = "none" }
            let whole = try await harness.send("/v1/chat/completions", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            let choice = try #require((whole.json["choices"] as? [[String: Any]])?.first, "\(whole.body)")
            #expect(choice["finish_reason"] as? String == "tool_calls", "\(whole.body)")
            let message = try #require(choice["message"] as? [String: Any])
            let call = try #require((message["tool_calls"] as? [[String: Any]])?.first, "\(whole.body)")
            let function = try #require(call["function"] as? [String: Any])
            #expect(function["name"] as? String == "get_weather")
            let arguments = try #require(function["arguments"] as? String)
            let parsed = try #require(try JSONSerialization.jsonObject(with: Data(arguments.utf8)) as? [String: Any], "\(arguments)")
            #expect(parsed.keys.sorted() == ["city"] && parsed["city"] is String, "\(arguments)")
            #expect(!(message["content"] as? String ?? "").contains("<tool_call>"), "\(whole.body)")

            request["stream"] = true
            let streamed = try await harness.send("/v1/chat/completions", json: request)
            var name = "", streamedArguments = "", text = ""  // the first call's (the model may add more)
            for chunk in ReasoningServerTests.payloads(streamed.body) {
                guard let delta = ((chunk["choices"] as? [[String: Any]])?.first)?["delta"] as? [String: Any] else { continue }
                text += delta["content"] as? String ?? ""
                for piece in delta["tool_calls"] as? [[String: Any]] ?? [] where piece["index"] as? Int == 0 {
                    let f = piece["function"] as? [String: Any] ?? [:]
                    name += f["name"] as? String ?? ""
                    streamedArguments += f["arguments"] as? String ?? ""
                }
            }
            // Each reply on its own: a random model's greedy tokens sit at near-ties, which the
            // second request's cached prefix (another summation order) can tip either way.
            #expect(name == "get_weather", "\(streamed.body)")
            let streamedObject = try JSONSerialization.jsonObject(with: Data(streamedArguments.utf8)) as? [String: Any]
            #expect(streamedObject?.keys.sorted() == ["city"] && streamedObject?["city"] is String, "\(streamedArguments)")
            #expect(!text.contains("<tool_call>"), "\(streamed.body)")
        }
    }

    @Test(arguments: ["qwen2-tiny", "qwen3-tiny"])
    func aSchemaGivesAValidObject(fixture: String) async throws {
        let harness = try await ServerHarness(context: 256, checkpoint: fixture)
        try await withCleanup({ try? await harness.stop() }) {
            let schema: [String: Any] = [
                "type": "object",
                "properties": [
                    "name": ["type": "string", "maxLength": 10], "count": ["type": "integer", "minimum": 0, "maximum": 99],
                    "tags": ["type": "array", "items": ["type": "string", "enum": ["a", "b"]], "maxItems": 3],
                ],
                "required": ["name", "count", "tags"], "additionalProperties": false,
            ]
            var request: [String: Any] = [
                "model": "tiny", "max_tokens": 64, "temperature": 1, "seed": 7,
                "response_format": ["type": "json_schema", "json_schema": ["name": "thing", "strict": true, "schema": schema]],
                "messages": [["role": "user", "content": "Describe a thing."]],
            ]
            if fixture == "qwen3-tiny" { request["reasoning_effort"] = "none" }
            let whole = try await harness.send("/v1/chat/completions", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            let choice = try #require((whole.json["choices"] as? [[String: Any]])?.first, "\(whole.body)")
            #expect(choice["finish_reason"] as? String == "stop", "\(whole.body)")
            let content = try #require((choice["message"] as? [String: Any])?["content"] as? String)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(content.utf8)) as? [String: Any], "\(content)")
            #expect(object.keys.sorted() == ["count", "name", "tags"], "\(content)")
            let name = try #require(object["name"] as? String, "\(content)")
            let count = try #require(object["count"] as? Int, "\(content)")
            let tags = try #require(object["tags"] as? [String], "\(content)")
            #expect(name.count <= 10 && (0...99).contains(count) && tags.count <= 3 && tags.allSatisfy { $0 == "a" || $0 == "b" }, "\(content)")
        }
    }

    /// Qwen3 writes its reasoning as `<think>…</think>`: a block opened by the bias lands in
    /// `reasoning_content`, whole and streamed alike, and never in `content`.
    @Test func qwen3ReasoningStaysOutOfTheAnswer() async throws {
        let harness = try await ServerHarness(context: 256, checkpoint: "qwen3-tiny")
        try await withCleanup({ try? await harness.stop() }) {
            var request: [String: Any] = [
                "model": "tiny", "max_tokens": 16, "temperature": 0, "logit_bias": [Self.think: 100],
                "messages": [["role": "user", "content": "Hi"]],
            ]
            let whole = try await harness.send("/v1/chat/completions", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            let message = try #require(((whole.json["choices"] as? [[String: Any]])?.first)?["message"] as? [String: Any])
            let reasoning = try #require(message["reasoning_content"] as? String, "\(whole.body)")
            let content = message["content"] as? String ?? ""
            #expect(!reasoning.isEmpty, "\(whole.body)")
            ReasoningServerTests.expectNoTags(content, "content")
            ReasoningServerTests.expectNoTags(reasoning, "reasoning_content")
            let usage = try #require(whole.json["usage"] as? [String: Any])
            let details = try #require(usage["completion_tokens_details"] as? [String: Any])
            #expect((details["reasoning_tokens"] as? Int ?? 0) > 0, "\(usage)")

            request["stream"] = true
            let streamed = try await harness.send("/v1/chat/completions", json: request)
            var streamedReasoning = "", streamedContent = ""
            for chunk in ReasoningServerTests.payloads(streamed.body) {
                guard let delta = ((chunk["choices"] as? [[String: Any]])?.first)?["delta"] as? [String: Any] else { continue }
                streamedReasoning += delta["reasoning_content"] as? String ?? ""
                streamedContent += delta["content"] as? String ?? ""
            }
            #expect(streamedReasoning == reasoning && streamedContent == content, "\(streamed.body)")
        }
    }
}
