import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// Requests shaped as coding agents send them — Claude Code's Messages requests, a Responses
/// agent's, a chat agent's — are answered (every field the official APIs define is accepted:
/// hints checked for shape, reasoning as permission), fields asking for what the model cannot do
/// are refused naming the field and why, and the deprecated function calling and the Responses
/// API's logprobs are honoured. (Before issue 56 each request below was a 400
/// `unknown_parameter`: `metadata`, `thinking`, `prompt_cache_key`, `reasoning_effort`, …)
@Suite(.serialized) struct AgentFieldsTests {
    static var bash: [String: Any] { [
        "type": "object", "properties": ["command": ["type": "string", "maxLength": 20]], "required": ["command"],
        "additionalProperties": false,
    ] }

    /// The error of a refusal: status 400 and the field it names.
    static func refusal(_ harness: ServerHarness, _ path: String, _ body: [String: Any]) async throws -> (param: String?, code: String?, message: String) {
        let reply = try await harness.send(path, json: body)
        #expect(reply.status == 400, "\(path) \(body.keys.sorted()): \(reply.body)")
        let error = reply.json["error"] as? [String: Any]
        return (error?["param"] as? String, error?["code"] as? String, error?["message"] as? String ?? "")
    }

    // MARK: Claude Code

    /// Messages as Claude Code sends them: `cache_control` on system blocks, tool definitions,
    /// message blocks and tool results, `metadata.user_id`, `thinking`, earlier thinking blocks,
    /// `context_management`, `output_config.effort` and the other hints, whole and streamed.
    static func claudeCodeRequest() -> [String: Any] {
        let ephemeral: [String: Any] = ["type": "ephemeral"]
        return [
            "model": "tiny", "max_tokens": 12, "temperature": 1,
            "system": [
                ["type": "text", "text": "You are a coding agent.", "cache_control": ephemeral],
                ["type": "text", "text": "Answer briefly.", "cache_control": ["type": "ephemeral", "ttl": "1h"]],
            ],
            "tools": [["name": "Bash", "description": "Runs a command.", "input_schema": bash, "cache_control": ephemeral]],
            "messages": [
                ["role": "user", "content": [["type": "text", "text": "List the files.", "cache_control": ephemeral]]],
                [
                    "role": "assistant",
                    "content": [
                        ["type": "thinking", "thinking": "I should run ls.", "signature": "c2ln"],
                        ["type": "redacted_thinking", "data": "ZGF0YQ=="],
                        ["type": "text", "text": "Let me look."],
                        ["type": "tool_use", "id": "toolu_1", "name": "Bash", "input": ["command": "ls"], "cache_control": ephemeral],
                    ],
                ],
                [
                    "role": "user",
                    "content": [
                        [
                            "type": "tool_result", "tool_use_id": "toolu_1", "cache_control": ephemeral,
                            "content": [["type": "text", "text": "a.txt b.txt", "cache_control": ephemeral]],
                        ],
                        ["type": "text", "text": "Now summarise.", "cache_control": ephemeral],
                    ],
                ],
            ],
            "metadata": ["user_id": "user_0a1b_account__session_5f0c"],
            "thinking": ["type": "enabled", "budget_tokens": 1024],
            "cache_control": ephemeral, "context_management": ["edits": [["type": "clear_tool_uses_20250919"]]],
            "output_config": ["effort": "high"], "service_tier": "auto", "speed": "standard", "inference_geo": "us",
            "diagnostics": ["previous_message_id": "msg_0"], "billing_policy": ["type": "billing_policy", "bill_to": "self"],
            "fallbacks": "default", "mcp_servers": [Any](),
        ]
    }

    @Test func claudeCodeShapedMessagesAreAnsweredWithoutReasoning() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let request = Self.claudeCodeRequest()
            let whole = try await harness.send("/v1/messages", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            let blocks = whole.json["content"] as? [[String: Any]] ?? []
            #expect(!blocks.isEmpty && blocks.allSatisfy { ["text", "tool_use"].contains($0["type"] as? String ?? "") }, "\(whole.body)")
            let usage = whole.json["usage"] as? [String: Any] ?? [:]
            #expect((usage["output_tokens_details"] as? [String: Any])?["thinking_tokens"] as? Int == 0, "\(whole.body)")
            #expect(usage["inference_geo"] is String && usage["speed"] is String, "\(whole.body)")

            var streamed = request
            streamed["stream"] = true
            let events = try await harness.send("/v1/messages", json: streamed)
            let payloads = sseData(events.body).payloads.map(parse)
            #expect(events.status == 200 && payloads.last?["type"] as? String == "message_stop", "\(events.body)")
            for payload in payloads where payload["type"] as? String == "content_block_start" {
                let type = (payload["content_block"] as? [String: Any])?["type"] as? String
                #expect(type == "text" || type == "tool_use", "a reasoning block from a model that does not reason: \(payload)")
            }
            let delta = payloads.first { $0["type"] as? String == "message_delta" }
            let deltaUsage = delta?["usage"] as? [String: Any] ?? [:]
            #expect(deltaUsage["output_tokens"] as? Int ?? 0 > 0 && deltaUsage["input_tokens"] as? Int ?? 0 > 0, "\(events.body)")

            // Every kind of thinking the API defines is permission (llama.cpp's test sends a budget of 50).
            for thinking: [String: Any] in [
                ["type": "enabled", "budget_tokens": 50], ["type": "adaptive", "display": "omitted"], ["type": "disabled"],
                ["type": "between_tools"],
            ] {
                let reply = try await harness.send(
                    "/v1/messages", json: ["model": "tiny", "max_tokens": 4, "thinking": thinking, "messages": [["role": "user", "content": "2+2?"]]])
                #expect(reply.status == 200, "\(thinking): \(reply.body)")
                #expect((reply.json["content"] as? [[String: Any]])?.first?["type"] as? String == "text", "\(reply.body)")
            }
            // count_tokens takes the fields its API defines (compaction ignored, as the API does)
            // and counts the same prompt.
            let plain: [String: Any] = ["model": "tiny", "messages": [["role": "user", "content": "Count me."]]]
            var hinted = plain
            for (key, value) in [
                ("thinking", ["type": "enabled", "budget_tokens": 2048]), ("cache_control", ["type": "ephemeral"]),
                ("compaction", ["type": "compaction"]), ("context_management", ["edits": [Any]()]), ("output_config", ["effort": "low"]),
                ("speed", "fast"), ("billing_policy", ["type": "billing_policy", "bill_to": "self"]), ("mcp_servers", [Any]()),
            ] as [(String, Any)] {
                hinted[key] = value
            }
            let counted = try await harness.send("/v1/messages/count_tokens", json: plain)
            let counted2 = try await harness.send("/v1/messages/count_tokens", json: hinted)
            #expect(counted2.status == 200, "\(counted2.body)")
            #expect(counted.json["input_tokens"] as? Int == counted2.json["input_tokens"] as? Int, "\(counted.body) vs \(counted2.body)")
            try await harness.stop()
        }
    }

    /// Wrong shapes of the hints are 400s naming the field; fields asking for what this server
    /// cannot do are refused naming the field and why.
    @Test func anthropicFieldsAreCheckedAndTheImpossibleRefusedWithTheReason() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            func body(_ key: String, _ value: Any) -> [String: Any] {
                ["model": "tiny", "max_tokens": 2, "messages": [["role": "user", "content": "Hi"]], key: value]
            }
            let shapes: [(String, Any, String)] = [
                ("thinking", [String: Any](), "thinking.type"), ("thinking", ["type": "enabled"], "thinking.budget_tokens"),
                ("thinking", ["type": "enabled", "budget_tokens": 0], "thinking.budget_tokens"),
                ("thinking", ["type": "sometimes"], "thinking.type"), ("metadata", ["user_id": 5], "metadata.user_id"),
                ("metadata", ["email": "a@b"], "metadata.email"), ("output_config", ["effort": "huge"], "output_config.effort"),
                ("cache_control", "ephemeral", "cache_control"), ("speed", 2, "speed"),
            ]
            for (key, value, param) in shapes {
                #expect(try await Self.refusal(harness, "/v1/messages", body(key, value)).param == param, "\(key): \(value)")
            }
            let impossible: [(String, Any)] = [
                ("container", "container_1"), ("mcp_servers", [["type": "url", "url": "https://example.invalid/mcp", "name": "x"]]),
                ("thread", ["type": "create"]), ("compaction", ["type": "compaction"]), ("fallbacks", ["other-model"]),
            ]
            for (key, value) in impossible {
                let refused = try await Self.refusal(harness, "/v1/messages", body(key, value))
                #expect(refused.param == key && refused.code == "unsupported_parameter", "\(key): \(refused)")
                #expect(refused.message.contains(key) && refused.message.count > key.count + 40, "\(key): a reason: \(refused.message)")
            }
            // Fields no Anthropic API defines stay unknown.
            #expect(try await Self.refusal(harness, "/v1/messages", body("user", "u")).code == "unknown_parameter")
            try await harness.stop()
        }
    }

    // MARK: OpenAI agents

    @Test func responsesAgentShapedRequestsAreAnswered() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let request: [String: Any] = [
                "model": "tiny", "instructions": "You are a coding agent.", "max_output_tokens": 12, "temperature": 1,
                "input": [
                    ["type": "message", "role": "developer", "content": [["type": "input_text", "text": "Be brief."]]],
                    ["type": "message", "role": "user", "content": [["type": "input_text", "text": "List the files."]]],
                ],
                "tools": [["type": "function", "name": "shell", "description": "Runs a command.", "parameters": Self.bash, "strict": false]],
                "tool_choice": "auto", "parallel_tool_calls": false, "store": false,
                "reasoning": ["effort": "medium", "summary": "auto"], "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "session-1", "prompt_cache_retention": "24h", "safety_identifier": "h-1", "user": "u-1",
                "service_tier": "auto", "text": ["verbosity": "low"], "context_management": [["type": "compaction", "compact_threshold": 4000]],
                "max_tool_calls": 4, "background": false, "truncation": "disabled", "metadata": ["run": "7"],
                "prompt_cache_options": ["mode": "implicit", "ttl": "30m"], "access_programs": ["cyber": "standard"],
                "image": ["context_compression": "auto"], "background_options": ["completion_window": "soonest"],
            ]
            let whole = try await harness.send("/v1/responses", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            let output = whole.json["output"] as? [[String: Any]] ?? []
            #expect(!output.isEmpty && !output.contains { $0["type"] as? String == "reasoning" }, "\(whole.body)")
            #expect((whole.json["reasoning"] as? [String: Any])?["effort"] as? String == "medium", "\(whole.body)")
            #expect(whole.json["prompt_cache_key"] as? String == "session-1", "\(whole.body)")
            let usage = whole.json["usage"] as? [String: Any] ?? [:]
            #expect((usage["output_tokens_details"] as? [String: Any])?["reasoning_tokens"] as? Int == 0, "\(whole.body)")
            #expect((usage["input_tokens_details"] as? [String: Any])?["cached_tokens"] is Int, "\(whole.body)")

            var streamed = request
            streamed["stream"] = true
            streamed["stream_options"] = ["include_obfuscation": false]
            let events = try await harness.send("/v1/responses", json: streamed)
            let payloads = sseData(events.body).payloads.map(parse)
            let end = payloads.last?["type"] as? String
            #expect(events.status == 200 && (end == "response.completed" || end == "response.incomplete"), "\(events.body)")
            for payload in payloads where payload["type"] as? String == "response.output_item.added" {
                #expect((payload["item"] as? [String: Any])?["type"] as? String != "reasoning", "\(payload)")
            }
            #expect(!events.body.contains("reasoning_summary"), "\(events.body)")

            // Refused with the reason: what only a stateful or hosted service can do.
            for (key, value) in [
                ("background", true), ("conversation", "conv_1"), ("prompt", ["id": "pmpt_1"]), ("moderation", ["model": "omni-moderation-latest"]),
            ] as [(String, Any)] {
                let refused = try await Self.refusal(harness, "/v1/responses", ["model": "tiny", "input": "Hi", key: value])
                #expect(refused.param == key && refused.code == "unsupported_parameter", "\(key): \(refused)")
            }
            #expect(try await Self.refusal(harness, "/v1/responses", ["model": "tiny", "input": "Hi", "include": ["everything"]]).param == "include[0]")
            #expect(
                try await Self.refusal(harness, "/v1/responses", ["model": "tiny", "input": "Hi", "reasoning": ["effort": "extreme"]]).param
                    == "reasoning.effort")
            try await harness.stop()
        }
    }

    @Test func chatAgentShapedRequestsAreAnswered() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let request: [String: Any] = [
                "model": "tiny", "max_completion_tokens": 8, "temperature": 1,
                "messages": [
                    ["role": "developer", "content": "Be brief.", "name": "harness"],
                    ["role": "user", "content": "Say something rude.", "name": "ann"],
                    ["role": "assistant", "content": NSNull(), "refusal": "I will not.", "annotations": [Any]()],
                    ["role": "user", "content": [["type": "text", "text": "Then say hello."]]],
                ],
                "tools": [["type": "function", "function": ["name": "shell", "parameters": Self.bash]]], "parallel_tool_calls": true,
                "reasoning_effort": "low", "verbosity": "low", "prediction": ["type": "content", "content": "Hello"],
                "modalities": ["text"], "prompt_cache_key": "k-1", "prompt_cache_retention": "in_memory",
                "prompt_cache_options": ["mode": "implicit"], "user": "u-1", "safety_identifier": "h-1", "metadata": ["run": "7"],
                "store": false, "service_tier": "auto",
            ]
            let whole = try await harness.send("/v1/chat/completions", json: request)
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.json["service_tier"] as? String == "default", "\(whole.body)")
            let usage = whole.json["usage"] as? [String: Any] ?? [:]
            let details = usage["completion_tokens_details"] as? [String: Any] ?? [:]
            #expect(details["reasoning_tokens"] as? Int == 0 && details["accepted_prediction_tokens"] as? Int == 0, "\(whole.body)")
            #expect((usage["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] is Int, "\(whole.body)")

            var streamed = request
            streamed["stream"] = true
            streamed["stream_options"] = ["include_usage": true, "include_obfuscation": false]
            let reply = try await harness.send("/v1/chat/completions", json: streamed)
            let payloads = sseData(reply.body).payloads
            #expect(reply.status == 200 && payloads.last == "[DONE]", "\(reply.body)")
            #expect(payloads.dropLast().map(parse).contains { $0["usage"] is [String: Any] }, "\(reply.body)")

            // Text completions and embeddings take `user`.
            let text = try await harness.send("/v1/completions", json: ["model": "tiny", "prompt": "Hi", "max_tokens": 2, "user": "u-1"])
            #expect(text.status == 200, "\(text.body)")
            let embedded = try await harness.send("/v1/embeddings", json: ["model": "tiny", "input": "Hi", "user": "u-1"])
            #expect(embedded.status == 200, "\(embedded.body)")

            // What a text model cannot do is refused naming the field and why; bad values by name.
            let chat: [String: Any] = ["model": "tiny", "messages": [["role": "user", "content": "Hi"]]]
            for (key, value, param) in [
                ("audio", ["voice": "alloy", "format": "wav"], "audio"), ("modalities", ["text", "audio"], "modalities"),
                ("web_search_options", [String: Any](), "web_search_options"), ("moderation", ["model": "omni-moderation-latest"], "moderation"),
                ("reasoning_effort", "extreme", "reasoning_effort"), ("verbosity", "loud", "verbosity"), ("user", 5, "user"),
                ("prediction", ["type": "diff"], "prediction.type"), ("metadata", ["k": 1], "metadata.k"),
            ] as [(String, Any, String)] {
                var body = chat
                body[key] = value
                let refused = try await Self.refusal(harness, "/v1/chat/completions", body)
                #expect(refused.param == param, "\(key): \(refused)")
                if ["audio", "web_search_options", "moderation"].contains(key) { #expect(refused.code == "unsupported_parameter", "\(refused)") }
            }
            var spoken = chat
            spoken["messages"] = [["role": "user", "content": "Hi"], ["role": "assistant", "audio": ["id": "audio_1"]], ["role": "user", "content": "Again"]]
            #expect(try await Self.refusal(harness, "/v1/chat/completions", spoken).param == "messages[1].audio")
            try await harness.stop()
        }
    }

    // MARK: Deprecated function calling

    /// `functions` / `function_call` are served as a tool forced or offered, answered as
    /// `message.function_call` (`finish_reason: "function_call"`), whole and streamed; an
    /// assistant's `function_call` and a `role: "function"` result continue the conversation.
    @Test func deprecatedFunctionCallingIsServed() async throws {
        let harness = try await ServerHarness(context: 2048)
        try await withCleanup({ try? await harness.stop() }) {
            let base: [String: Any] = [
                "model": "tiny", "messages": [["role": "user", "content": "Weather in Paris?"]], "max_tokens": 400, "temperature": 1.0,
                "seed": 3, "functions": [["name": "get_weather", "description": "Weather.", "parameters": ToolServerTests.shortTool]],
                "function_call": ["name": "get_weather"],
            ]
            let whole = try await harness.send("/v1/chat/completions", json: base)
            #expect(whole.status == 200, "\(whole.body)")
            let choice = (whole.json["choices"] as? [[String: Any]])?.first
            #expect(choice?["finish_reason"] as? String == "function_call", "\(whole.body)")
            let message = choice?["message"] as? [String: Any] ?? [:]
            let call = message["function_call"] as? [String: Any]
            #expect(call?["name"] as? String == "get_weather" && message["tool_calls"] == nil, "\(whole.body)")
            ToolServerTests.checkArguments(call?["arguments"], whole.body)

            var streamed = base
            streamed["stream"] = true
            let reply = try await harness.send("/v1/chat/completions", json: streamed)
            var name = ""
            var arguments = ""
            var finish: String?
            for payload in sseData(reply.body).payloads where payload != "[DONE]" {
                guard let choice = (parse(payload)["choices"] as? [[String: Any]])?.first else { continue }
                finish = choice["finish_reason"] as? String ?? finish
                let function = (choice["delta"] as? [String: Any])?["function_call"] as? [String: Any] ?? [:]
                name += function["name"] as? String ?? ""
                arguments += function["arguments"] as? String ?? ""
                #expect((choice["delta"] as? [String: Any])?["tool_calls"] == nil, "\(payload)")
            }
            #expect(finish == "function_call" && name == "get_weather", "\(reply.body)")
            ToolServerTests.checkArguments(arguments, reply.body)

            var answered = base
            answered["function_call"] = "auto"
            answered["max_tokens"] = 4
            answered["messages"] = [
                ["role": "user", "content": "Weather in Paris?"],
                ["role": "assistant", "content": NSNull(), "function_call": ["name": "get_weather", "arguments": #"{"city":"Paris"}"#]],
                ["role": "function", "name": "get_weather", "content": "18 C"],
            ]
            let next = try await harness.send("/v1/chat/completions", json: answered)
            #expect(next.status == 200, "\(next.body)")
            var orphan = answered
            orphan["messages"] = [["role": "user", "content": "Hi"], ["role": "function", "name": "get_weather", "content": "18 C"]]
            #expect(try await Self.refusal(harness, "/v1/chat/completions", orphan).param == "messages[1].name")
            var both = base
            both["tools"] = [["type": "function", "function": ["name": "x"]]]
            #expect(try await Self.refusal(harness, "/v1/chat/completions", both).param == "functions")
            try await harness.stop()
        }
    }

    // MARK: Logprobs

    /// The logprob tokens of a reply join to exactly its text — chat whole and streamed, the
    /// Responses API whole and streamed — when the reply's first token carries the space the
    /// reply drops (forced with `logit_bias` onto a token that starts with one), and when a stop
    /// string ends the reply (its tokens are not listed; a token it cuts is listed with its part
    /// before the stop). Before the fix the tokens joined to " word word word" while the content
    /// was "word word word", and a stop string's tokens were listed.
    @Test func logprobTokensJoinToExactlyTheText() async throws {
        let harness = try await ServerHarness(context: 512)
        try await withCleanup({ try? await harness.stop() }) {
            let pieces = try await harness.send("/tokenize", json: ["content": "Hello there world", "with_pieces": true]).json["tokens"]
            let spaced = (pieces as? [[String: Any]] ?? []).first { ($0["piece"] as? String)?.hasPrefix(" ") == true && ($0["piece"] as? String ?? "").count > 2 }
            let id = try #require(spaced?["id"] as? Int, "no token with a leading space in \(String(describing: pieces))")
            let forced: [String: Any] = ["logit_bias": ["\(id)": 100], "temperature": 0]
            let messages: [[String: Any]] = [["role": "user", "content": "Say something."]]
            for bias in [forced, ["temperature": 0]] {
                var request: [String: Any] = ["model": "tiny", "messages": messages, "max_tokens": 3, "logprobs": true, "top_logprobs": 2]
                request.merge(bias) { $1 }
                let whole = try await harness.send("/v1/chat/completions", json: request)
                let choice = (whole.json["choices"] as? [[String: Any]])?.first ?? [:]
                let content = (choice["message"] as? [String: Any])?["content"] as? String ?? ""
                let tokens = ((choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] ?? [])
                let joined = tokens.compactMap { $0["token"] as? String }.joined()
                // A token holding part of a character shows as U+FFFD alone: such a greedy reply
                // cannot join (the forced one is whole words).
                guard bias["logit_bias"] != nil || !joined.contains("\u{FFFD}") else { continue }
                #expect(!content.isEmpty && joined == content, "'\(joined)' vs '\(content)': \(whole.body)")
                let bytes = tokens.flatMap { $0["bytes"] as? [Int] ?? [] }.map(UInt8.init)
                #expect(bytes == Array(content.utf8), "\(whole.body)")
                if bias["logit_bias"] != nil { #expect(!content.hasPrefix(" ") && tokens.count == 3, "\(whole.body)") }

                request["stream"] = true
                let streamed = try await harness.send("/v1/chat/completions", json: request)
                var text = ""
                var streamedTokens = ""
                for payload in sseData(streamed.body).payloads where payload != "[DONE]" {
                    guard let choice = (parse(payload)["choices"] as? [[String: Any]])?.first else { continue }
                    text += (choice["delta"] as? [String: Any])?["content"] as? String ?? ""
                    let entries = (choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] ?? []
                    streamedTokens += entries.compactMap { $0["token"] as? String }.joined()
                }
                #expect(text == content && streamedTokens == text, "'\(streamedTokens)' vs '\(text)'")

                // The Responses API's logprobs (include / top_logprobs), whole and streamed (it
                // takes no logit_bias: its reply is the greedy one).
                guard bias["logit_bias"] == nil else { continue }
                let responses: [String: Any] = [
                    "model": "tiny", "input": "Say something.", "max_output_tokens": 3, "include": ["message.output_text.logprobs"],
                    "top_logprobs": 2, "temperature": 0,
                ]
                let answer = try await harness.send("/v1/responses", json: responses)
                let part = ((answer.json["output"] as? [[String: Any]])?.first?["content"] as? [[String: Any]])?.first ?? [:]
                let entries = part["logprobs"] as? [[String: Any]] ?? []
                let answerText = part["text"] as? String ?? ""
                #expect(!answerText.isEmpty && entries.compactMap { $0["token"] as? String }.joined() == answerText, "\(answer.body)")
                #expect(entries.allSatisfy { ($0["top_logprobs"] as? [Any])?.count == 2 }, "\(answer.body)")
                var streamedResponses = responses
                streamedResponses["stream"] = true
                let events = try await harness.send("/v1/responses", json: streamedResponses).body
                var deltas = ""
                var deltaTokens = ""
                for payload in sseData(events).payloads.map(parse) where payload["type"] as? String == "response.output_text.delta" {
                    deltas += payload["delta"] as? String ?? ""
                    deltaTokens += (payload["logprobs"] as? [[String: Any]] ?? []).compactMap { $0["token"] as? String }.joined()
                }
                #expect(deltas == answerText && deltaTokens == answerText, "'\(deltaTokens)' vs '\(deltas)': \(events)")
            }
            // Stop strings: one at a token boundary ("the| the"), one inside a token ("t|he the").
            let word = String(((pieces as? [[String: Any]] ?? []).first { $0["id"] as? Int == id }?["piece"] as? String ?? "").dropFirst())
            for (stop, expected) in [(" " + word, word), (String(word.dropFirst()) + " " + String(word.prefix(1)), String(word.prefix(1)))] {
                var request: [String: Any] = [
                    "model": "tiny", "messages": messages, "max_tokens": 3, "logprobs": true, "stop": [stop],
                ]
                request.merge(forced) { $1 }
                let whole = try await harness.send("/v1/chat/completions", json: request)
                let choice = (whole.json["choices"] as? [[String: Any]])?.first ?? [:]
                let content = (choice["message"] as? [String: Any])?["content"] as? String
                let tokens: [[String: Any]] = (choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] ?? []
                let joined: String = tokens.compactMap { $0["token"] as? String }.joined()
                #expect(content == expected && joined == expected, "stop '\(stop)': \(whole.body)")
                let bytes: [UInt8] = tokens.flatMap { $0["bytes"] as? [Int] ?? [] }.map { UInt8($0) }
                #expect(bytes == Array(expected.utf8), "\(whole.body)")
                request["stream"] = true
                let streamed = try await harness.send("/v1/chat/completions", json: request)
                var text = ""
                var listed = ""
                for payload in sseData(streamed.body).payloads where payload != "[DONE]" {
                    guard let choice = (parse(payload)["choices"] as? [[String: Any]])?.first else { continue }
                    text += (choice["delta"] as? [String: Any])?["content"] as? String ?? ""
                    let entries: [[String: Any]] = (choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] ?? []
                    listed += entries.compactMap { $0["token"] as? String }.joined()
                }
                #expect(text == expected && listed == expected, "stop '\(stop)' streamed: '\(listed)' vs '\(text)'")
                // Legacy completions list the same way.
                let completionBody: [String: Any] = [
                    "model": "tiny", "prompt": "Say", "max_tokens": 3, "logprobs": 1, "stop": [stop], "logit_bias": ["\(id)": 100],
                ]
                let completion = try await harness.send("/v1/completions", json: completionBody)
                let completionChoice: [String: Any] = (completion.json["choices"] as? [[String: Any]])?.first ?? [:]
                let completionTokens: [String] = (completionChoice["logprobs"] as? [String: Any])?["tokens"] as? [String] ?? []
                let completionText = completionChoice["text"] as? String
                #expect(completionText != nil && completionTokens.joined() == completionText, "\(completion.body)")
            }
            try await harness.stop()
        }
    }
}
