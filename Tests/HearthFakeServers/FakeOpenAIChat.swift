import Foundation
import NIOHTTP1
import Synchronization

/// A fake of OpenAI's `POST /v1/chat/completions`, on a loopback socket, for tool calling.
///
/// It checks the request as the API does — `Authorization: Bearer <key>`, `model`, `messages`
/// (roles, an assistant's `tool_calls`, a tool message's `tool_call_id` answering an earlier
/// call), `tools`, `tool_choice`, `parallel_tool_calls` — and answers after ``FakeToolPlan``:
/// streamed (`stream: true`) as `chat.completion.chunk`s whose `delta.tool_calls` carry each
/// call's `index`, then its `id`, `type` and `function.name` with empty arguments, then the
/// arguments in pieces; `finish_reason: "tool_calls"`, a usage chunk when
/// `stream_options.include_usage`, and `[DONE]` — or as one `chat.completion`. Text answers
/// stream as `delta.content`. The prompt `#drop-mid-call` cuts the connection in the middle
/// of the first call's arguments. A model whose name contains `reasoner`, or a prompt with
/// `#think`, reasons first, as DeepSeek does: `delta.reasoning_content` pieces (with `content`
/// null) before the answer, `message.reasoning_content` in a whole reply, and
/// `usage.completion_tokens_details.reasoning_tokens`; `#think-alias` uses the `reasoning` field
/// (vLLM, Ollama) instead. `reasoning_effort` must be none, minimal, low, medium or high. Problems are answered with OpenAI's 400 error body and
/// recorded in ``violations``.
public final class FakeOpenAIChat: LoopbackFake {
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
        let body = json(["error": ["message": problem, "type": "invalid_request_error", "param": NSNull(), "code": NSNull()]])
        try await out.respond(400, "Bad Request", headers: [("Content-Type", "application/json")], body: body)
        return .close
    }

    /// Answers one request (see the type's description).
    public func serve(_ request: RecordedRequest, index: Int, _ out: RawResponder) async throws -> AfterResponse {
        guard request.method == "POST", request.uri == "/v1/chat/completions" else {
            return try await refuse(out, index, "\(request.method) \(request.uri) is not a route")
        }
        guard request.headers.first(name: "authorization") == "Bearer \(apiKey)" else {
            let body = json(["error": ["message": "Incorrect API key provided.", "type": "invalid_request_error", "code": "invalid_api_key"]])
            try await out.respond(401, "Unauthorized", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        guard let body = request.json, body["model"] is String, let messages = body["messages"] as? [[String: Any]],
            !messages.isEmpty
        else { return try await refuse(out, index, "the body is not {model, messages: [...]}") }
        let roles = ["system", "developer", "user", "assistant", "tool"]
        for (i, message) in messages.enumerated() {
            guard let role = message["role"] as? String, roles.contains(role) else {
                return try await refuse(out, index, "messages[\(i)].role is not one of \(roles)")
            }
            let content = message["content"]
            let nullAllowed = role == "assistant" && message["tool_calls"] != nil
            guard content is String || content is [Any] || (nullAllowed && (content == nil || content is NSNull)) else {
                return try await refuse(out, index, "messages[\(i)].content is missing or not a string")
            }
        }
        if let problem = OpenAIToolShapes.messages(messages) { return try await refuse(out, index, problem) }
        let (tools, toolsProblem) = OpenAIToolShapes.tools(body["tools"])
        if let toolsProblem { return try await refuse(out, index, toolsProblem) }
        let choice = OpenAIToolShapes.choice(body["tool_choice"], tools: tools, allowsRequired: true)
        if let problem = choice.problem { return try await refuse(out, index, problem) }
        if let parallel = body["parallel_tool_calls"] {
            guard parallel is Bool, !tools.isEmpty else {
                return try await refuse(out, index, "parallel_tool_calls must be a boolean, and only with tools")
            }
        }
        if let effort = body["reasoning_effort"] {
            guard let value = effort as? String, ["none", "minimal", "low", "medium", "high"].contains(value) else {
                return try await refuse(out, index, "reasoning_effort must be one of none, minimal, low, medium, high")
            }
        }
        let stream = body["stream"] as? Bool ?? false
        if body["stream_options"] != nil && !stream {
            return try await refuse(out, index, "stream_options is only allowed when stream is true")
        }
        let last = messages.last ?? [:]
        let plan = FakeToolPlan.plan(
            tools: tools, choice: choice.choice, named: choice.named, parallel: body["parallel_tool_calls"] as? Bool ?? true,
            lastIsUser: last["role"] as? String == "user", idPrefix: "call_")
        let prompt = last["content"] as? String ?? ""
        let text =
            plan.calls.isEmpty
            ? (last["role"] as? String == "tool" ? FakeToolPlan.answer(toResult: prompt) : FakeAnswers().answer(to: prompt, round: 1))
            : ""
        let finish = plan.calls.isEmpty ? "stop" : "tool_calls"
        let model = body["model"] as? String ?? ""
        let thinks = model.contains("reasoner") || FakeReasoning.asked(in: prompt)
        let thought = thinks ? FakeReasoning.thought(for: prompt) : ""
        let reasoningField = prompt.contains("#think-alias") ? "reasoning" : "reasoning_content"
        var usage: [String: Any] = ["prompt_tokens": 31, "completion_tokens": 17, "total_tokens": 48]
        if thinks {
            usage["completion_tokens"] = 17 + thought.count
            usage["total_tokens"] = 48 + thought.count
            usage["completion_tokens_details"] = ["reasoning_tokens": thought.count]
        }
        let base: [String: Any] = ["id": "chatcmpl-fake\(index)", "created": 1_700_000_000, "model": model]

        guard stream else {
            var message: [String: Any] = ["role": "assistant", "content": plan.calls.isEmpty ? text : NSNull(), "refusal": NSNull()]
            if thinks { message[reasoningField] = thought }
            if !plan.calls.isEmpty {
                message["tool_calls"] = plan.calls.map {
                    ["id": $0.id, "type": "function", "function": ["name": $0.name, "arguments": $0.arguments]]
                }
            }
            var whole = base
            whole["object"] = "chat.completion"
            whole["choices"] = [["index": 0, "message": message, "finish_reason": finish, "logprobs": NSNull()]]
            whole["usage"] = usage
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: json(whole))
            return .close
        }
        func chunk(_ delta: [String: Any], finish: String? = nil) -> String {
            var chunk = base
            chunk["object"] = "chat.completion.chunk"
            chunk["choices"] = [["index": 0, "delta": delta, "finish_reason": finish.map { $0 as Any } ?? NSNull(), "logprobs": NSNull()]]
            return "data: \(json(chunk))\n\n"
        }
        var events = [chunk(["role": "assistant", "content": plan.calls.isEmpty && !thinks ? "" : NSNull()])]
        for piece in FakeToolPlan.pieces(thought, seed: UInt64(index) &+ 101) {
            events.append(chunk([reasoningField: piece, "content": NSNull()]))
        }
        for piece in FakeToolPlan.pieces(text, seed: UInt64(index)) { events.append(chunk(["content": piece])) }
        let dropping = prompt.contains("#drop-mid-call")
        var dropped = false
        for (number, call) in plan.calls.enumerated() {
            events.append(
                chunk(["tool_calls": [["index": number, "id": call.id, "type": "function", "function": ["name": call.name, "arguments": ""]]]]))
            let pieces = FakeToolPlan.pieces(call.arguments, seed: UInt64(index * 7 + number))
            for (count, piece) in pieces.enumerated() {
                if dropping && number == 0 && count == pieces.count / 2 {
                    dropped = true
                    break
                }
                events.append(chunk(["tool_calls": [["index": number, "function": ["arguments": piece]]]]))
            }
            if dropped { break }
        }
        if !dropped {
            events.append(chunk([:], finish: finish))
            if (body["stream_options"] as? [String: Any])?["include_usage"] as? Bool == true {
                var last = base
                last["object"] = "chat.completion.chunk"
                last["choices"] = [Any]()
                last["usage"] = usage
                events.append("data: \(json(last))\n\n")
            }
            events.append("data: [DONE]\n\n")
        }
        try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
        try await out.stream(events.map { Array($0.utf8) }, pause: .milliseconds(1))
        if dropped { return .close }  // no terminating chunk: the body is cut short
        try await out.end()
        return .close
    }
}
