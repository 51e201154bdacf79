import Foundation
import NIOHTTP1
import Synchronization

/// A fake of Anthropic's `POST /v1/messages`, on a loopback socket, for tool use.
///
/// It checks the request as the API does — `x-api-key` (or `Authorization: Bearer`), `anthropic-version`, `model`,
/// `max_tokens`, `messages` whose content is a string or blocks (`text`; `tool_use` with an
/// `id`, `name` and object `input` in assistant turns; `tool_result` in user turns), every
/// `tool_use` answered by a `tool_result` in the very next user turn, `tools`
/// (`{name, description?, input_schema: {type: object, …}, strict?}`) and `tool_choice`
/// (`auto`, `any`, `tool` with a tool's name, `none`; `disable_parallel_tool_use` not with
/// `none`) — and answers after ``FakeToolPlan``: streamed as `message_start`, a
/// `content_block_start` of type `tool_use` per call (input `{}`), `input_json_delta`
/// pieces (the first one empty, as the API sends), `content_block_stop`, then `message_delta`
/// with `stop_reason: "tool_use"` and `message_stop`; or as one message. Text answers stream as
/// `text_delta`s. With `thinking: {type: enabled, budget_tokens}` (at least 1024, below
/// `max_tokens`) or a prompt with `#think`, a new turn starts with a `thinking` block
/// (`thinking_delta` pieces, then a `signature_delta`), and `#redacted` adds a
/// `redacted_thinking` block; thinking blocks sent back must carry the fake's signature of their
/// text (``FakeReasoning``), and with thinking enabled the assistant turn a tool_result answers
/// must start with its thinking block — as the API checks. Problems are answered with Anthropic's 400 error body and recorded in ``violations``.
public final class FakeAnthropicMessages: LoopbackFake {
    /// The key requests must carry.
    public let apiKey: String
    /// Its server and violations.
    public let plumbing = FakeHTTPPlumbing()

    /// A fake whose requests must carry `apiKey` (``LoopbackFake/start(apiKey:host:port:)`` starts one).
    public init(apiKey: String) {
        self.apiKey = apiKey
    }

    private func refuse(_ out: RawResponder, _ index: Int, _ problem: String) async throws -> AfterResponse {
        plumbing.violation(index, problem)
        let body = json(["type": "error", "error": ["type": "invalid_request_error", "message": problem]])
        try await out.respond(400, "Bad Request", headers: [("Content-Type", "application/json")], body: body)
        return .close
    }

    /// The problem with the conversation's blocks, or nil.
    static func check(_ messages: [[String: Any]], thinking: Bool = false) -> String? {
        if thinking, messages.count >= 2, let last = messages.last?["content"] as? [[String: Any]],
            last.contains(where: { $0["type"] as? String == "tool_result" })
        {
            let turn = messages[messages.count - 2]
            let first = (turn["content"] as? [[String: Any]])?.first?["type"] as? String
            if turn["role"] as? String == "assistant", first != "thinking", first != "redacted_thinking" {
                return "messages.\(messages.count - 2).content.0.type: Expected `thinking` or `redacted_thinking`, but found `\(first ?? "text")`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
            }
        }
        var pending: Set<String> = []  // tool_use ids the next user turn must answer
        var seen: Set<String> = []
        for (i, message) in messages.enumerated() {
            guard let role = message["role"] as? String, role == "user" || role == "assistant" else {
                return "messages[\(i)].role must be user or assistant"
            }
            let blocks: [[String: Any]]
            if let text = message["content"] as? String {
                blocks = [["type": "text", "text": text]]
            } else if let list = message["content"] as? [[String: Any]], !list.isEmpty {
                blocks = list
            } else {
                return "messages[\(i)].content is not a string or a non-empty array of blocks"
            }
            var answered: Set<String> = []
            var otherBlock = false
            for (j, block) in blocks.enumerated() {
                let at = "messages[\(i)].content[\(j)]"
                let type = block["type"] as? String
                if type == "tool_result" && otherBlock { return "\(at): tool_result blocks must come first in a user turn" }
                if type != "tool_result" { otherBlock = true }
                switch type {
                case "text":
                    guard block["text"] is String else { return "\(at).text is not a string" }
                case "tool_use":
                    guard role == "assistant", let id = block["id"] as? String, !id.isEmpty, block["name"] is String,
                        block["input"] is [String: Any]
                    else { return "\(at) is not an assistant's {type: tool_use, id, name, input: {…}}" }
                    seen.insert(id)
                case "thinking", "redacted_thinking":
                    guard role == "assistant" else { return "\(at): thinking blocks are only in assistant turns" }
                    if let problem = FakeReasoning.problem(block, at: at) { return problem }
                case "tool_result":
                    guard role == "user", let id = block["tool_use_id"] as? String, seen.contains(id) else {
                        return "\(at) is not a user's tool_result answering an earlier tool_use"
                    }
                    guard block["content"] == nil || block["content"] is String || block["content"] is [Any] else {
                        return "\(at).content is not a string or blocks"
                    }
                    answered.insert(id)
                default:
                    return "\(at).type is not text, thinking, redacted_thinking, tool_use or tool_result"
                }
            }
            if !pending.isEmpty {
                guard role == "user", pending.isSubset(of: answered) else {
                    return "messages[\(i)] must answer every tool_use of the turn before with a tool_result"
                }
            }
            if role == "assistant" {
                pending = Set(blocks.compactMap { $0["type"] as? String == "tool_use" ? $0["id"] as? String : nil })
            } else {
                pending = []
            }
        }
        return nil
    }

    /// Answers one request (see the type's description).
    public func serve(_ request: RecordedRequest, index: Int, _ out: RawResponder) async throws -> AfterResponse {
        guard request.method == "POST", request.uri == "/v1/messages" else {
            return try await refuse(out, index, "\(request.method) \(request.uri) is not a route")
        }
        // The API takes the key as `x-api-key` or, as newer SDKs send it, `Authorization: Bearer`.
        guard request.headers.first(name: "x-api-key") == apiKey || request.headers.first(name: "authorization") == "Bearer \(apiKey)"
        else {
            let body = json(["type": "error", "error": ["type": "authentication_error", "message": "invalid x-api-key"]])
            try await out.respond(401, "Unauthorized", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        guard request.headers.first(name: "anthropic-version") != nil else {
            return try await refuse(out, index, "anthropic-version header is required")
        }
        guard let body = request.json, body["model"] is String, body["max_tokens"] is Int,
            let messages = body["messages"] as? [[String: Any]], !messages.isEmpty
        else { return try await refuse(out, index, "the body is not {model, max_tokens, messages: [...]}") }
        var thinkingEnabled = false
        if let value = body["thinking"] {
            guard let object = value as? [String: Any], let type = object["type"] as? String, ["enabled", "disabled"].contains(type)
            else { return try await refuse(out, index, "thinking: Input should be {type: enabled, budget_tokens} or {type: disabled}") }
            if type == "enabled" {
                guard let budget = object["budget_tokens"] as? Int, budget >= 1024 else {
                    return try await refuse(out, index, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
                }
                guard let max = body["max_tokens"] as? Int, max > budget else {
                    return try await refuse(out, index, "`max_tokens` must be greater than `thinking.budget_tokens`")
                }
                thinkingEnabled = true
            }
        }
        if let problem = Self.check(messages, thinking: thinkingEnabled) { return try await refuse(out, index, problem) }
        var tools: [FakeToolPlan.Tool] = []
        if let value = body["tools"] {
            guard let list = value as? [[String: Any]] else { return try await refuse(out, index, "tools is not an array") }
            for (i, tool) in list.enumerated() {
                guard let name = tool["name"] as? String, !name.isEmpty, let schema = tool["input_schema"] as? [String: any Sendable],
                    schema["type"] as? String == "object"
                else { return try await refuse(out, index, "tools[\(i)] is not {name, input_schema: {type: object, …}}") }
                if let description = tool["description"], !(description is String) {
                    return try await refuse(out, index, "tools[\(i)].description is not a string")
                }
                tools.append(FakeToolPlan.Tool(name: name, schema: schema))
            }
        }
        var choice: String?
        var named: String?
        var parallel = true
        if let value = body["tool_choice"] {
            guard !tools.isEmpty, let object = value as? [String: Any], let type = object["type"] as? String,
                ["auto", "any", "tool", "none"].contains(type)
            else { return try await refuse(out, index, "tool_choice is not {type: auto|any|tool|none} with tools") }
            if type == "tool" {
                guard let name = object["name"] as? String, tools.contains(where: { $0.name == name }) else {
                    return try await refuse(out, index, "tool_choice {type: tool} must name one of the tools")
                }
                named = name
            }
            if let disable = object["disable_parallel_tool_use"] {
                guard disable is Bool, type != "none" else {
                    return try await refuse(out, index, "disable_parallel_tool_use must be a boolean, and not with none")
                }
                parallel = !(disable as? Bool ?? false)
            }
            choice = type
        }
        let last = messages.last ?? [:]
        let lastBlocks = last["content"] as? [[String: Any]] ?? []
        let afterResult = lastBlocks.contains { $0["type"] as? String == "tool_result" }
        let plan = FakeToolPlan.plan(
            tools: tools, choice: choice, named: named, parallel: parallel,
            lastIsUser: last["role"] as? String == "user" && !afterResult, idPrefix: "toolu_")
        let result = lastBlocks.first { $0["type"] as? String == "tool_result" }?["content"] as? String ?? ""
        let prompt = last["content"] as? String ?? ""
        let text =
            plan.calls.isEmpty ? (afterResult ? FakeToolPlan.answer(toResult: result) : FakeAnswers().answer(to: prompt, round: 1)) : ""
        let thinks = !afterResult && (thinkingEnabled || FakeReasoning.asked(in: prompt))
        let thought = thinks ? FakeReasoning.thought(for: prompt) : ""
        let redacted = thinks && prompt.contains("#redacted")
        let stopReason = plan.calls.isEmpty ? "end_turn" : "tool_use"
        let id = "msg_fake\(index)"
        let model = body["model"] as? String ?? ""

        guard body["stream"] as? Bool == true else {
            var content: [[String: Any]] = []
            if thinks { content.append(["type": "thinking", "thinking": thought, "signature": FakeReasoning.signature(of: thought)]) }
            if redacted { content.append(["type": "redacted_thinking", "data": FakeReasoning.redactedData]) }
            if !text.isEmpty { content.append(["type": "text", "text": text]) }
            for call in plan.calls {
                let input = (try? JSONSerialization.jsonObject(with: Data(call.arguments.utf8))) ?? [String: Any]()
                content.append(["type": "tool_use", "id": call.id, "name": call.name, "input": input])
            }
            let message: [String: Any] = [
                "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
                "stop_reason": stopReason, "stop_sequence": NSNull(), "usage": ["input_tokens": 31, "output_tokens": 17],
            ]
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: json(message))
            return .close
        }
        func event(_ name: String, _ data: [String: Any]) -> String { "event: \(name)\ndata: \(json(data))\n\n" }
        var events = [
            event(
                "message_start",
                [
                    "type": "message_start",
                    "message": [
                        "id": id, "type": "message", "role": "assistant", "model": model, "content": [Any](),
                        "stop_reason": NSNull(), "stop_sequence": NSNull(), "usage": ["input_tokens": 31, "output_tokens": 1],
                    ],
                ])
        ]
        var block = 0
        if thinks {
            events.append(
                event(
                    "content_block_start",
                    ["type": "content_block_start", "index": block, "content_block": ["type": "thinking", "thinking": "", "signature": ""]]))
            for piece in FakeToolPlan.pieces(thought, seed: UInt64(index) &+ 101) {
                events.append(
                    event(
                        "content_block_delta",
                        ["type": "content_block_delta", "index": block, "delta": ["type": "thinking_delta", "thinking": piece]]))
            }
            events.append(
                event(
                    "content_block_delta",
                    [
                        "type": "content_block_delta", "index": block,
                        "delta": ["type": "signature_delta", "signature": FakeReasoning.signature(of: thought)],
                    ]))
            events.append(event("content_block_stop", ["type": "content_block_stop", "index": block]))
            block += 1
        }
        if redacted {
            events.append(
                event(
                    "content_block_start",
                    [
                        "type": "content_block_start", "index": block,
                        "content_block": ["type": "redacted_thinking", "data": FakeReasoning.redactedData],
                    ]))
            events.append(event("content_block_stop", ["type": "content_block_stop", "index": block]))
            block += 1
        }
        if !text.isEmpty {
            events.append(event("content_block_start", ["type": "content_block_start", "index": block, "content_block": ["type": "text", "text": ""]]))
            for piece in FakeToolPlan.pieces(text, seed: UInt64(index)) {
                events.append(
                    event("content_block_delta", ["type": "content_block_delta", "index": block, "delta": ["type": "text_delta", "text": piece]]))
            }
            events.append(event("content_block_stop", ["type": "content_block_stop", "index": block]))
            block += 1
        }
        for (number, call) in plan.calls.enumerated() {
            events.append(
                event(
                    "content_block_start",
                    [
                        "type": "content_block_start", "index": block,
                        "content_block": ["type": "tool_use", "id": call.id, "name": call.name, "input": [String: Any]()],
                    ]))
            let pieces = call.arguments == "{}" ? [""] : [""] + FakeToolPlan.pieces(call.arguments, seed: UInt64(index * 7 + number))
            for piece in pieces {
                events.append(
                    event(
                        "content_block_delta",
                        ["type": "content_block_delta", "index": block, "delta": ["type": "input_json_delta", "partial_json": piece]]))
            }
            events.append(event("content_block_stop", ["type": "content_block_stop", "index": block]))
            block += 1
        }
        events.append(
            event(
                "message_delta",
                [
                    "type": "message_delta", "delta": ["stop_reason": stopReason, "stop_sequence": NSNull()],
                    "usage": ["output_tokens": 17],
                ]))
        events.append(event("message_stop", ["type": "message_stop"]))
        try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
        try await out.stream(events.map { Array($0.utf8) }, pause: .milliseconds(1))
        try await out.end()
        return .close
    }
}
