import Foundation
import NIOHTTP1
import Synchronization

/// A fake of DashScope's native text-generation API
/// (`POST /api/v1/services/aigc/text-generation/generation`), on a loopback socket.
///
/// It checks the request as the service does (path, `Authorization: Bearer <key>`, a JSON body
/// with `model`, `input.messages` and `parameters`) and answers with `X-DashScope-SSE: enable` as
/// an event stream in DashScope's shape — `id:`, `event:result`, `:HTTP_STATUS/200`,
/// `data:{"output":{"choices":[{"message":{…},"finish_reason":"null"}]},"usage":{…},"request_id":…}`,
/// no `[DONE]` — with the content as deltas (`incremental_output: true`) or as the whole text so
/// far, the bytes of the stream sent in network chunks cut at arbitrary offsets (inside lines
/// and UTF-8 characters). Without the SSE header it answers with one JSON document. Errors are
/// `{code, message, request_id}` bodies (HTTP 400/401/429/500) or, mid-stream, `event:error`.
/// Prompts choose a ``FakeScenario`` by keyword (`#error`, `#500`, `#429`, `#429-once`,
/// `#overflow`, `#silent`, `#drop`, `#length`, `#slow`). With `parameters.tools` (checked, with
/// `tool_choice`, `parallel_tool_calls`, assistant `tool_calls` and `tool` messages) it answers
/// after ``FakeToolPlan``: calls streamed as `message.tool_calls` pieces, or text after a tool result.
/// With `parameters.enable_thinking: true` (or a prompt with `#think`) a text answer starts with
/// `message.reasoning_content` (pieces, or the whole reasoning so far without
/// `incremental_output`; `content` empty meanwhile) and usage has
/// `output_tokens_details.reasoning_tokens`; `enable_thinking` must be a boolean and
/// `thinking_budget` a positive integer.
public final class FakeDashScopeGeneration: Sendable {
    /// How the fake behaves.
    public struct Configuration: Sendable {
        /// The key requests must carry.
        public var apiKey: String
        /// What it answers (the round is always 1: the API is stateless).
        public var answers: FakeAnswers
        /// Pause between network chunks.
        public var pause: Duration
        /// Seed of the splits.
        public var seed: UInt64

        /// Creates a configuration.
        public init(apiKey: String, answers: FakeAnswers = FakeAnswers(), pause: Duration = .milliseconds(2), seed: UInt64 = 29) {
            self.apiKey = apiKey
            self.answers = answers
            self.pause = pause
            self.seed = seed
        }
    }

    /// Its configuration.
    public let configuration: Configuration
    private let server = Mutex<TestHTTPServer?>(nil)
    private let seen = Mutex<[String: Int]>([:])
    private let problems = Mutex<[String]>([])

    private init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// Starts the fake on `host`:`port` (0: any free port).
    public static func start(_ configuration: Configuration, host: String = "127.0.0.1", port: Int = 0)
        async throws -> FakeDashScopeGeneration
    {
        let fake = FakeDashScopeGeneration(configuration)
        let server = try await TestHTTPServer.start(host: host, port: port) { request, index, out in
            try await fake.serve(request, index: index, out)
        }
        fake.server.withLock { $0 = server }
        return fake
    }

    /// The port it listens on.
    public var port: Int { server.withLock { $0?.port } ?? 0 }
    /// `http://127.0.0.1:<port>/api/v1`, the value for `DASHSCOPE_HTTP_BASE_URL`.
    public var baseURL: String { "http://127.0.0.1:\(port)/api/v1" }
    /// The requests received, in order.
    public var requests: [RecordedRequest] { server.withLock { $0?.requests } ?? [] }
    /// Requests that broke the protocol, described.
    public var violations: [String] { problems.withLock { $0 } }
    /// When the connection of request `index` ended.
    public func endTime(of index: Int) -> ContinuousClock.Instant? { server.withLock { $0?.endTime(of: index) } }

    /// Stops listening and waits for the connections to end.
    public func stop() async {
        await server.withLock { $0 }?.stop()
    }

    private func error(_ out: RawResponder, _ status: Int, _ reason: String, code: String, message: String, headers: [(String, String)] = [])
        async throws -> AfterResponse
    {
        let body = json(["code": code, "message": message, "request_id": requestID()])
        try await out.respond(status, reason, headers: [("Content-Type", "application/json")] + headers, body: body)
        return .close
    }

    private func serve(_ request: RecordedRequest, index: Int, _ out: RawResponder) async throws -> AfterResponse {
        guard request.method == "POST", request.uri == "/api/v1/services/aigc/text-generation/generation" else {
            return try await error(out, 404, "Not Found", code: "NotFound", message: "\(request.method) \(request.uri) is not a route")
        }
        guard request.headers.first(name: "authorization") == "Bearer \(configuration.apiKey)" else {
            return try await error(out, 401, "Unauthorized", code: "InvalidApiKey", message: "Invalid API-key provided.")
        }
        guard let body = request.json, let model = body["model"] as? String, !model.isEmpty,
            let messages = (body["input"] as? [String: Any])?["messages"] as? [[String: Any]], !messages.isEmpty,
            messages.allSatisfy({ ["system", "user", "assistant", "tool"].contains($0["role"] as? String ?? "") && $0["content"] is String })
        else {
            problems.withLock { $0.append("request \(index): body is not {model, input.messages[{role, content}]}") }
            return try await error(out, 400, "Bad Request", code: "InvalidParameter", message: "Input should be a valid messages list")
        }
        let parameters = body["parameters"] as? [String: Any] ?? [:]
        let (tools, toolsProblem) = OpenAIToolShapes.tools(parameters["tools"])
        let choice = OpenAIToolShapes.choice(parameters["tool_choice"], tools: tools, allowsRequired: true)
        let parallelProblem =
            parameters["parallel_tool_calls"].map { !($0 is Bool) || tools.isEmpty } == true
            ? "parallel_tool_calls must be a boolean, and only with tools" : nil
        if let problem = OpenAIToolShapes.messages(messages) ?? toolsProblem ?? choice.problem ?? parallelProblem {
            problems.withLock { $0.append("request \(index): \(problem)") }
            return try await error(out, 400, "Bad Request", code: "InvalidParameter", message: problem)
        }
        let resultFormat = parameters["result_format"] as? String ?? "text"
        guard ["text", "message"].contains(resultFormat) else {
            problems.withLock { $0.append("request \(index): result_format \(resultFormat)") }
            return try await error(out, 400, "Bad Request", code: "InvalidParameter", message: "result_format must be text or message")
        }
        let incremental = parameters["incremental_output"] as? Bool ?? false
        let thinkingProblem: String? =
            parameters["enable_thinking"].map { !($0 is Bool) } == true
            ? "enable_thinking must be a boolean"
            : parameters["thinking_budget"].map { ($0 as? Int).map { $0 < 1 } ?? true } == true
                ? "thinking_budget must be a positive integer" : nil
        if let thinkingProblem {
            problems.withLock { $0.append("request \(index): \(thinkingProblem)") }
            return try await error(out, 400, "Bad Request", code: "InvalidParameter", message: thinkingProblem)
        }
        let prompt = messages.last { $0["role"] as? String == "user" }?["content"] as? String ?? ""
        let scenario = FakeScenario.of(prompt)
        let promptTokens = messages.reduce(0) { $0 + ($1["content"] as? String ?? "").count }
        switch scenario {
        case .rateLimited:
            return try await rateLimit(out)
        case .rateLimitedOnce where seen.withLock({ $0[prompt, default: 0] += 1; return $0[prompt] == 1 }):
            return try await rateLimit(out)
        case .overflow:
            return try await error(
                out, 400, "Bad Request", code: "InvalidParameter", message: "Range of input length should be [1, 30720]")
        case .serverError:
            return try await error(
                out, 500, "Internal Server Error", code: "InternalError",
                message: "An internal error has occured, please try again later or contact service support.")
        default:
            break
        }
        let lastMessage = messages.last ?? [:]
        let plan = FakeToolPlan.plan(
            tools: tools, choice: choice.choice, named: choice.named, parallel: parameters["parallel_tool_calls"] as? Bool ?? true,
            lastIsUser: lastMessage["role"] as? String == "user", idPrefix: "call_")
        if !plan.calls.isEmpty, request.headers.first(name: "x-dashscope-sse")?.lowercased() == "enable" {
            return try await streamCalls(plan, incremental: incremental, promptTokens: promptTokens, out)
        }
        var answer =
            lastMessage["role"] as? String == "tool"
            ? FakeToolPlan.answer(toResult: lastMessage["content"] as? String ?? "")
            : configuration.answers.answer(to: prompt, round: 1)
        if let last = messages.last, last["role"] as? String == "assistant", last["partial"] as? Bool == true,
            let partial = last["content"] as? String, answer.hasPrefix(partial)
        {
            answer = String(answer.dropFirst(partial.count))  // partial mode: only what follows
        }
        let id = requestID()
        let thinks =
            lastMessage["role"] as? String != "tool"
            && (parameters["enable_thinking"] as? Bool == true || FakeReasoning.asked(in: prompt))
        let thought = thinks ? FakeReasoning.thought(for: prompt) : ""
        var thoughtRandom = SplitMix64(seed: configuration.seed &+ 77 &+ UInt64(index))
        let thoughtCuts = thinks ? characterCuts(thought, using: &thoughtRandom) : []
        func document(_ content: String, finish: String, tokens: Int, reasoning: String? = nil) -> [String: Any] {
            var message: [String: Any] = ["role": "assistant", "content": content]
            if thinks { message["reasoning_content"] = reasoning ?? (incremental ? "" : thought) }
            if !plan.calls.isEmpty {  // a whole (non-streamed) reply with calls
                message["tool_calls"] = plan.calls.enumerated().map { number, call in
                    ["index": number, "id": call.id, "type": "function", "function": ["name": call.name, "arguments": call.arguments]]
                }
            }
            let output: [String: Any] =
                resultFormat == "message"
                ? ["choices": [["message": message, "finish_reason": finish]]]
                : ["text": content, "finish_reason": finish]
            var usage: [String: Any] = [
                "input_tokens": promptTokens, "output_tokens": tokens + thoughtCuts.count,
                "total_tokens": promptTokens + tokens + thoughtCuts.count,
            ]
            if thinks { usage["output_tokens_details"] = ["reasoning_tokens": thoughtCuts.count] }
            return ["output": output, "usage": usage, "request_id": id]
        }
        var random = SplitMix64(seed: configuration.seed &+ UInt64(index))
        let cuts = characterCuts(answer, using: &random)
        let finish = scenario == .length ? "length" : "stop"
        guard request.headers.first(name: "x-dashscope-sse")?.lowercased() == "enable" else {
            let body = json(
                document(
                    plan.calls.isEmpty ? answer : "", finish: plan.calls.isEmpty ? finish : "tool_calls", tokens: cuts.count,
                    reasoning: thought))
            try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        try await out.head(200, headers: [("Content-Type", "text/event-stream;charset=UTF-8"), ("X-DashScope-Request-Id", id)])
        if scenario == .silent { return .waitForClientClose }
        let failing: Set<FakeScenario> = [.errorMidAnswer, .drop]
        let shown = failing.contains(scenario) ? Array(cuts.prefix(max(1, cuts.count / 3))) : cuts
        var stream = ""
        var thoughtStart = thought.startIndex
        for (number, cut) in thoughtCuts.enumerated() {
            let piece = incremental ? String(thought[thoughtStart..<cut]) : String(thought[..<cut])
            let data = json(document("", finish: "null", tokens: 0, reasoning: piece))
            stream += "id:\(number + 1)\nevent:result\n:HTTP_STATUS/200\ndata:\(data)\n\n"
            thoughtStart = cut
        }
        var start = answer.startIndex
        for (number, cut) in shown.enumerated() {
            let content = incremental ? String(answer[start..<cut]) : String(answer[..<cut])
            let last = cut == answer.endIndex && !failing.contains(scenario)
            let data = json(document(content, finish: last ? finish : "null", tokens: number + 1))
            stream += "id:\(thoughtCuts.count + number + 1)\nevent:result\n:HTTP_STATUS/200\ndata:\(data)\n\n"
            start = cut
        }
        if scenario == .errorMidAnswer {
            let data = json([
                "code": "DataInspectionFailed", "message": "Output data may contain inappropriate content.", "request_id": id,
            ])
            stream += "id:\(thoughtCuts.count + shown.count + 1)\nevent:error\n:HTTP_STATUS/400\ndata:\(data)\n\n"
        }
        let pause = scenario == .slow ? configuration.pause * 40 : configuration.pause
        try await out.stream(split(stream, every: 5 + Int(random.next() % 60)), pause: pause)
        if scenario == .drop { return .close }  // no terminating chunk: the body is cut short
        try await out.end()
        return .close
    }

    /// Streams `plan`'s calls in `message.tool_calls`: per call a first piece with its `index`,
    /// `id`, `type` and `function.name` (arguments `""`), then pieces with the `index`, an empty
    /// `id` and a piece of `function.arguments` — as the service sends them and the SDK joins
    /// them — with `finish_reason` `"null"` until the last document's `"tool_calls"`. Without
    /// `incremental_output`, each document carries every call so far with its arguments so far.
    private func streamCalls(_ plan: FakeToolPlan, incremental: Bool, promptTokens: Int, _ out: RawResponder)
        async throws -> AfterResponse
    {
        let id = requestID()
        var pieces: [(number: Int, first: Bool, text: String)] = []
        for (number, call) in plan.calls.enumerated() {
            pieces.append((number, true, ""))
            for piece in FakeToolPlan.pieces(call.arguments, seed: configuration.seed &+ UInt64(number)) {
                pieces.append((number, false, piece))
            }
        }
        var sent = [String](repeating: "", count: plan.calls.count)
        var stream = ""
        for (count, piece) in pieces.enumerated() {
            sent[piece.number] += piece.text
            let calls: [[String: Any]]
            if incremental {
                let call = plan.calls[piece.number]
                calls = [
                    piece.first
                        ? ["index": piece.number, "id": call.id, "type": "function", "function": ["name": call.name, "arguments": ""]]
                        : ["index": piece.number, "id": "", "type": "function", "function": ["arguments": piece.text]]
                ]
            } else {
                calls = (0...piece.number).map { number in
                    let call = plan.calls[number]
                    return ["index": number, "id": call.id, "type": "function", "function": ["name": call.name, "arguments": sent[number]]]
                }
            }
            let last = count == pieces.count - 1
            let data = json([
                "output": [
                    "choices": [["message": ["role": "assistant", "content": "", "tool_calls": calls], "finish_reason": last ? "tool_calls" : "null"]]
                ],
                "usage": ["input_tokens": promptTokens, "output_tokens": count + 1, "total_tokens": promptTokens + count + 1],
                "request_id": id,
            ])
            stream += "id:\(count + 1)\nevent:result\n:HTTP_STATUS/200\ndata:\(data)\n\n"
        }
        try await out.head(200, headers: [("Content-Type", "text/event-stream;charset=UTF-8"), ("X-DashScope-Request-Id", id)])
        try await out.stream(split(stream, every: 41), pause: configuration.pause)
        try await out.end()
        return .close
    }

    private func rateLimit(_ out: RawResponder) async throws -> AfterResponse {
        try await error(
            out, 429, "Too Many Requests", code: "Throttling.RateQuota",
            message: "Requests rate limit exceeded, please try again later.", headers: [("Retry-After", "1")])
    }
}
