import Foundation
import NIOHTTP1

/// A fake of OpenAI's `POST /v1/responses` (the Responses API), on a loopback socket, for
/// reasoning items, tools and structured output.
///
/// It checks the request as the API does — `Authorization: Bearer <key>`, `model`, the top-level
/// fields it knows (an unknown one is `Unknown parameter`), `input` items (`message` with a role
/// and content; `reasoning` with `id` and `summary`, whose `encrypted_content` must be one this
/// fake made, and which with `store: false` cannot be sent without it; `function_call` with
/// `call_id`, `name`, `arguments`; `function_call_output` answering an earlier call), flat
/// `function` tools, `tool_choice`, `reasoning.effort`/`summary`, `include`, `text.format`,
/// `max_output_tokens` — and answers: a model whose name starts with `o`, contains `gpt-5` or
/// `reason`, or a prompt with `#think`, reasons first (unless `reasoning.effort` is `none`): a
/// `reasoning` item whose summary streams as `response.reasoning_summary_text.delta` when
/// `reasoning.summary` is set (else an empty summary, as OpenAI does), or whose content streams
/// as `response.reasoning_text.delta` with `#reasoning-text` (gpt-oss servers); with
/// `include: ["reasoning.encrypted_content"]` the finished item carries `encrypted_content`.
/// A reasoning model's `function_call` sent back without its reasoning item before it is refused
/// (OpenAI: "provided without its required 'reasoning' item"). Then tool calls after
/// ``FakeToolPlan`` (`function_call` items, arguments in `response.function_call_arguments.delta`
/// pieces), or text (`response.output_text.delta`; JSON from the schema's properties under a
/// `json_schema` format), and `response.completed` with usage (`cached_tokens` 8,
/// `reasoning_tokens`). `#length` ends `incomplete` (`max_output_tokens`) after a third of the
/// text, `#error` with `response.failed`, `#whole` answers one JSON object even when streaming
/// was asked for. Problems are answered with OpenAI's 400 error body and recorded in ``violations``.
public final class FakeOpenAIResponses: LoopbackFake {
    /// The key requests must carry.
    public let apiKey: String
    /// Its server and violations.
    public let plumbing = FakeHTTPPlumbing()

    /// A fake whose requests must carry `apiKey`.
    public init(apiKey: String) {
        self.apiKey = apiKey
    }

    /// The `encrypted_content` the fake gives the reasoning item `id` (a keyed hash: a client
    /// cannot make one, and one altered is refused).
    public static func encryptedContent(id: String) -> String {
        "gAAAAB" + FakeReasoning.signature(of: "responses:" + id)
    }

    static let knownFields: Set<String> = [
        "model", "input", "instructions", "stream", "store", "include", "reasoning", "tools", "tool_choice",
        "parallel_tool_calls", "text", "max_output_tokens", "temperature", "top_p", "metadata", "user",
        "previous_response_id", "truncation", "service_tier", "prompt_cache_key", "safety_identifier", "stream_options",
        "background", "max_tool_calls", "top_logprobs", "conversation", "prompt",
    ]

    private func refuse(_ out: RawResponder, _ index: Int, _ problem: String, code: String? = nil) async throws -> AfterResponse {
        plumbing.violation(index, problem)
        let body = json(["error": ["message": problem, "type": "invalid_request_error", "param": NSNull(), "code": code.map { $0 as Any } ?? NSNull()]])
        try await out.respond(400, "Bad Request", headers: [("Content-Type", "application/json")], body: body)
        return .close
    }

    /// What the input items say: the last user prompt, the last tool output, and whether the
    /// last item is a tool output; or the problem with them.
    private struct InputSummary {
        var prompt = ""
        var lastOutput: String?
        var problem: String?
        var code: String?
    }

    private func readInput(_ value: Any?, store: Bool, reasoningModel: Bool) -> InputSummary {
        var summary = InputSummary()
        if let text = value as? String {
            summary.prompt = text
            return summary
        }
        guard let items = value as? [[String: Any]], !items.isEmpty else {
            summary.problem = "input must be a string or a non-empty array of items"
            return summary
        }
        var calls: Set<String> = []
        var reasoningSinceUser = false
        for (i, item) in items.enumerated() {
            let type = item["type"] as? String ?? (item["role"] != nil ? "message" : "")
            switch type {
            case "message":
                guard let role = item["role"] as? String, ["system", "developer", "user", "assistant"].contains(role) else {
                    summary.problem = "input[\(i)].role must be one of system, developer, user, assistant"
                    return summary
                }
                guard item["content"] is String || item["content"] is [Any] else {
                    summary.problem = "input[\(i)].content must be a string or an array"
                    return summary
                }
                if role == "user" {
                    summary.prompt = item["content"] as? String ?? ""
                    summary.lastOutput = nil
                    reasoningSinceUser = false
                }
            case "reasoning":
                guard let id = item["id"] as? String, !id.isEmpty else {
                    summary.problem = "input[\(i)].id: Field required"
                    return summary
                }
                guard let parts = item["summary"] as? [[String: Any]],
                    parts.allSatisfy({ $0["type"] as? String == "summary_text" && $0["text"] is String })
                else {
                    summary.problem = "input[\(i)].summary must be an array of {type: summary_text, text}"
                    return summary
                }
                if let encrypted = item["encrypted_content"] {
                    guard encrypted as? String == Self.encryptedContent(id: id) else {
                        summary.problem = "The encrypted content for item \(id) could not be verified."
                        summary.code = "invalid_encrypted_content"
                        return summary
                    }
                } else if !store {
                    summary.problem = "Item with id '\(id)' not found. Items are not persisted when `store` is set to false."
                    return summary
                }
                reasoningSinceUser = true
            case "function_call":
                guard let id = item["call_id"] as? String, !id.isEmpty, item["name"] is String, item["arguments"] is String else {
                    summary.problem = "input[\(i)] is not {type: function_call, call_id, name, arguments}"
                    return summary
                }
                if reasoningModel, id.hasPrefix("call_fake"), !reasoningSinceUser {
                    summary.problem = "Item '\(id)' of type 'function_call' was provided without its required 'reasoning' item."
                    return summary
                }
                calls.insert(id)
            case "function_call_output":
                guard let id = item["call_id"] as? String, calls.contains(id) else {
                    summary.problem = "input[\(i)] is a function_call_output whose call_id answers no earlier function_call"
                    return summary
                }
                guard let output = item["output"] as? String else {
                    summary.problem = "input[\(i)].output must be a string"
                    return summary
                }
                summary.lastOutput = output
            default:
                summary.problem = "input[\(i)].type '\(type)' is not message, reasoning, function_call or function_call_output"
                return summary
            }
        }
        return summary
    }

    /// Flat function tools: `[{type: function, name, parameters?, strict?, description?}]`.
    private func readTools(_ value: Any?) -> (tools: [FakeToolPlan.Tool], problem: String?) {
        guard let value else { return ([], nil) }
        guard let list = value as? [[String: Any]] else { return ([], "tools is not an array of objects") }
        var tools: [FakeToolPlan.Tool] = []
        for (i, entry) in list.enumerated() {
            guard entry["type"] as? String == "function", let name = entry["name"] as? String, !name.isEmpty else {
                return (tools, "tools[\(i)] is not {type: function, name, …}")
            }
            if entry["function"] != nil { return (tools, "tools[\(i)].function: Unknown parameter (tools are flat in the Responses API)") }
            if let strict = entry["strict"], !(strict is Bool) { return (tools, "tools[\(i)].strict is not a boolean") }
            guard let schema = (entry["parameters"] ?? [String: Any]()) as? [String: any Sendable] else {
                return (tools, "tools[\(i)].parameters is not an object")
            }
            tools.append(FakeToolPlan.Tool(name: name, schema: schema))
        }
        return (tools, nil)
    }

    /// Answers one request (see the type's description).
    public func serve(_ request: RecordedRequest, index: Int, _ out: RawResponder) async throws -> AfterResponse {
        guard request.method == "POST", request.uri == "/v1/responses" else {
            return try await refuse(out, index, "\(request.method) \(request.uri) is not a route")
        }
        guard request.headers.first(name: "authorization") == "Bearer \(apiKey)" else {
            let body = json(["error": ["message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"]])
            try await out.respond(401, "Unauthorized", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        guard let body = request.json, let model = body["model"] as? String else {
            return try await refuse(out, index, "the body is not {model, input, …}")
        }
        if let unknown = body.keys.sorted().first(where: { !Self.knownFields.contains($0) }) {
            return try await refuse(out, index, "Unknown parameter: '\(unknown)'.", code: "unknown_parameter")
        }
        let store = body["store"] as? Bool ?? true
        if let value = body["store"], !(value is Bool) { return try await refuse(out, index, "store must be a boolean") }
        let include = body["include"] as? [String] ?? []
        if let value = body["include"] {
            let known = ["reasoning.encrypted_content", "message.output_text.logprobs", "file_search_call.results"]
            guard let list = value as? [String], list.allSatisfy(known.contains) else {
                return try await refuse(out, index, "include must be an array of \(known)")
            }
        }
        var effort: String?
        var summaryMode: String?
        if let value = body["reasoning"] {
            guard let reasoning = value as? [String: Any] else { return try await refuse(out, index, "reasoning must be an object") }
            if let raw = reasoning["effort"] {
                guard let text = raw as? String, ["none", "minimal", "low", "medium", "high", "xhigh"].contains(text) else {
                    return try await refuse(out, index, "reasoning.effort must be one of none, minimal, low, medium, high, xhigh")
                }
                effort = text
            }
            if let raw = reasoning["summary"] {
                guard let text = raw as? String, ["auto", "concise", "detailed"].contains(text) else {
                    return try await refuse(out, index, "reasoning.summary must be one of auto, concise, detailed")
                }
                summaryMode = text
            }
        }
        if let value = body["max_output_tokens"] {
            guard let number = value as? Int, number >= 16 else {
                return try await refuse(out, index, "max_output_tokens must be an integer of at least 16")
            }
        }
        var schema: [String: any Sendable]?
        if let text = body["text"] {
            guard let format = (text as? [String: Any])?["format"] as? [String: Any], let type = format["type"] as? String else {
                return try await refuse(out, index, "text must be {format: {type, …}}")
            }
            switch type {
            case "text", "json_object": break
            case "json_schema":
                guard format["name"] is String, let object = format["schema"] as? [String: any Sendable] else {
                    return try await refuse(out, index, "text.format json_schema needs name and schema")
                }
                schema = object
            default: return try await refuse(out, index, "text.format.type '\(type)' is not text, json_object or json_schema")
            }
        }
        let (tools, toolsProblem) = readTools(body["tools"])
        if let toolsProblem { return try await refuse(out, index, toolsProblem) }
        var choice: String?
        var named: String?
        if let value = body["tool_choice"] {
            if let text = value as? String, ["auto", "none", "required"].contains(text) {
                choice = text
            } else if let object = value as? [String: Any], object["type"] as? String == "function", let name = object["name"] as? String,
                tools.contains(where: { $0.name == name })
            {
                choice = "named"
                named = name
            } else {
                return try await refuse(out, index, "tool_choice is not auto, none, required or {type: function, name} naming a tool")
            }
        }
        let reasoningModel = model.hasPrefix("o") || model.contains("gpt-5") || model.contains("reason")
        let input = readInput(body["input"], store: store, reasoningModel: reasoningModel && effort != "none")
        if let problem = input.problem { return try await refuse(out, index, problem, code: input.code) }

        let prompt = input.prompt
        let thinks = (reasoningModel || FakeReasoning.asked(in: prompt)) && effort != "none"
        let thought = thinks ? FakeReasoning.thought(for: prompt) : ""
        let plan = FakeToolPlan.plan(
            tools: tools, choice: choice, named: named, parallel: body["parallel_tool_calls"] as? Bool ?? true,
            lastIsUser: input.lastOutput == nil, idPrefix: "call_")
        var text = ""
        if plan.calls.isEmpty {
            if let output = input.lastOutput {
                text = FakeToolPlan.answer(toResult: output)
            } else if let schema {
                text = FakeToolPlan.arguments(for: schema)
            } else {
                text = FakeAnswers().answer(to: prompt, round: 1)
            }
        }
        let cut = prompt.contains("#length")
        if cut { text = String(text.prefix(max(1, text.count / 3))) }
        let reply = Reply(
            index: index, model: model, thought: thought, summaryMode: prompt.contains("#reasoning-text") ? nil : summaryMode,
            asContent: prompt.contains("#reasoning-text"), encrypted: include.contains("reasoning.encrypted_content"),
            text: text, calls: plan.calls, cut: cut)
        if prompt.contains("#error") {
            try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
            var failed = reply.response(status: "failed", output: [])
            failed["error"] = ["code": "server_error", "message": "The model failed to generate a response."]
            try await out.stream(
                [reply.event("response.created", ["response": reply.response(status: "in_progress", output: [])], 0),
                 reply.event("response.failed", ["response": failed], 1)].map { Array($0.utf8) }, pause: .milliseconds(1))
            try await out.end()
            return .close
        }
        guard body["stream"] as? Bool == true, !prompt.contains("#whole") else {
            let whole = reply.response(status: cut ? "incomplete" : "completed", output: reply.items)
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: json(whole))
            return .close
        }
        try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
        try await out.stream(reply.events().map { Array($0.utf8) }, pause: .milliseconds(1))
        try await out.end()
        return .close
    }

    /// One answer, as whole items and as events.
    private struct Reply {
        var index: Int
        var model: String
        var thought: String
        var summaryMode: String?
        var asContent: Bool
        var encrypted: Bool
        var text: String
        var calls: [FakeToolPlan.Call]
        var cut: Bool

        var id: String { "resp_fake\(index)" }
        var reasoningID: String { "rs_fake\(index)_0" }

        var usage: [String: Any] {
            [
                "input_tokens": 31, "input_tokens_details": ["cached_tokens": 8],
                "output_tokens": 17 + thought.count, "output_tokens_details": ["reasoning_tokens": thought.count],
                "total_tokens": 48 + thought.count,
            ]
        }

        func reasoningItem(done: Bool) -> [String: Any] {
            var item: [String: Any] = ["id": reasoningID, "type": "reasoning", "summary": [Any]()]
            if done {
                if summaryMode != nil { item["summary"] = [["type": "summary_text", "text": thought]] }
                if asContent { item["content"] = [["type": "reasoning_text", "text": thought]] }
                if encrypted { item["encrypted_content"] = FakeOpenAIResponses.encryptedContent(id: reasoningID) }
            }
            return item
        }

        func messageItem(done: Bool) -> [String: Any] {
            let content: [Any] = done ? [["type": "output_text", "text": text, "annotations": [Any]()] as [String: Any]] : []
            let status = done ? "completed" : "in_progress"
            return ["id": "msg_fake\(index)", "type": "message", "role": "assistant", "status": status, "content": content]
        }

        func callItem(_ call: FakeToolPlan.Call, number: Int, done: Bool) -> [String: Any] {
            let arguments = done ? call.arguments : ""
            let status = done ? "completed" : "in_progress"
            return [
                "id": "fc_fake\(index)_\(number)", "type": "function_call", "call_id": call.id, "name": call.name,
                "arguments": arguments, "status": status,
            ]
        }

        var items: [[String: Any]] {
            var items: [[String: Any]] = []
            if !thought.isEmpty { items.append(reasoningItem(done: true)) }
            if calls.isEmpty {
                items.append(messageItem(done: true))
            } else {
                items += calls.enumerated().map { callItem($1, number: $0, done: true) }
            }
            return items
        }

        func response(status: String, output: [[String: Any]]) -> [String: Any] {
            let usage: Any = status == "in_progress" ? NSNull() : self.usage
            let incomplete: Any = status == "incomplete" ? ["reason": "max_output_tokens"] : NSNull()
            return [
                "id": id, "object": "response", "created_at": 1_700_000_000, "status": status, "model": model, "output": output,
                "usage": usage, "error": NSNull(), "incomplete_details": incomplete,
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": [Any](),
            ]
        }

        func event(_ type: String, _ fields: [String: Any], _ sequence: Int) -> String {
            var object = fields
            object["type"] = type
            object["sequence_number"] = sequence
            return "event: \(type)\ndata: \(json(object))\n\n"
        }

        func with(_ base: [String: Any], _ extra: [String: Any]) -> [String: Any] {
            base.merging(extra) { $1 }
        }

        func events() -> [String] {
            var frames: [(String, [String: Any])] = [("response.created", ["response": response(status: "in_progress", output: [])])]
            var position = 0
            if !thought.isEmpty {
                let base: [String: Any] = ["item_id": reasoningID, "output_index": position]
                frames.append(("response.output_item.added", ["output_index": position, "item": reasoningItem(done: false)]))
                let pieces = FakeToolPlan.pieces(thought, seed: UInt64(index) &+ 101)
                if asContent {
                    for piece in pieces { frames.append(("response.reasoning_text.delta", with(base, ["content_index": 0, "delta": piece]))) }
                    frames.append(("response.reasoning_text.done", with(base, ["content_index": 0, "text": thought])))
                } else if summaryMode != nil {
                    frames.append(("response.reasoning_summary_part.added", with(base, ["summary_index": 0, "part": ["type": "summary_text", "text": ""]])))
                    for piece in pieces {
                        frames.append(("response.reasoning_summary_text.delta", with(base, ["summary_index": 0, "delta": piece])))
                    }
                    frames.append(("response.reasoning_summary_text.done", with(base, ["summary_index": 0, "text": thought])))
                    frames.append(("response.reasoning_summary_part.done", with(base, ["summary_index": 0, "part": ["type": "summary_text", "text": thought]])))
                }
                frames.append(("response.output_item.done", ["output_index": position, "item": reasoningItem(done: true)]))
                position += 1
            }
            if calls.isEmpty {
                let base: [String: Any] = ["item_id": "msg_fake\(index)", "output_index": position, "content_index": 0]
                frames.append(("response.output_item.added", ["output_index": position, "item": messageItem(done: false)]))
                frames.append(("response.content_part.added", with(base, ["part": ["type": "output_text", "text": "", "annotations": [Any]()]])))
                for piece in FakeToolPlan.pieces(text, seed: UInt64(index)) {
                    frames.append(("response.output_text.delta", with(base, ["delta": piece, "logprobs": [Any]()])))
                }
                frames.append(("response.output_text.done", with(base, ["text": text, "logprobs": [Any]()])))
                frames.append(("response.content_part.done", with(base, ["part": ["type": "output_text", "text": text, "annotations": [Any]()]])))
                frames.append(("response.output_item.done", ["output_index": position, "item": messageItem(done: true)]))
            } else {
                for (number, call) in calls.enumerated() {
                    let base: [String: Any] = ["item_id": "fc_fake\(index)_\(number)", "output_index": position]
                    frames.append(("response.output_item.added", ["output_index": position, "item": callItem(call, number: number, done: false)]))
                    for piece in FakeToolPlan.pieces(call.arguments, seed: UInt64(index * 7 + number)) {
                        frames.append(("response.function_call_arguments.delta", with(base, ["delta": piece])))
                    }
                    frames.append(("response.function_call_arguments.done", with(base, ["arguments": call.arguments])))
                    frames.append(("response.output_item.done", ["output_index": position, "item": callItem(call, number: number, done: true)]))
                    position += 1
                }
            }
            let final = cut ? "response.incomplete" : "response.completed"
            frames.append((final, ["response": response(status: cut ? "incomplete" : "completed", output: items)]))
            return frames.enumerated().map { event($1.0, $1.1, $0) }
        }
    }
}
