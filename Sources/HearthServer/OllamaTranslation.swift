import Foundation

/// An Ollama `/api/chat` or `/api/generate` request rewritten as the OpenAI request the shared
/// pipeline runs: chat completions (or, for `raw` generate, text completions), always streamed
/// with usage so the reply can be timed and counted.
struct OllamaTranslation {
    let model: String
    /// Ollama streams unless `stream` is false.
    let stream: Bool
    let endpoint: Endpoint
    /// The OpenAI request body.
    let openAI: JSONValue
    /// No messages / an empty prompt: Ollama's "load the model" request (``unload`` with keep_alive 0).
    let loadOnly: Bool
    let unload: Bool

    init(kind: OllamaAPI.Kind, body: JSONValue) throws {
        guard case .object(let pairs) = body else { throw OllamaError.invalid("invalid request body: expected a JSON object") }
        let f = OllamaObject(pairs, prefix: "")
        guard let model = try f.string("model"), !model.isEmpty else { throw OllamaError.invalid("model is required") }
        self.model = model
        stream = try f.bool("stream") ?? true
        let keepAlive = f.value("keep_alive")
        if let keepAlive, keepAlive != .null {
            switch keepAlive {
            case .string, .number: break
            default: throw OllamaError.invalid("keep_alive must be a duration string (\"5m\") or a number of seconds")
            }
        }
        unload = keepAlive == .number(0) || keepAlive == .string("0") || keepAlive == .string("0s")

        var out: [(String, JSONValue)] = [("model", .string(model))]
        var raw = false
        switch kind {
        case .chat:
            let messages = try f.array("messages") ?? []
            loadOnly = messages.isEmpty
            out.append(("messages", .array(try Self.messages(messages))))
            if let tools = try f.array("tools"), !tools.isEmpty { out.append(("tools", .array(tools))) }
        case .generate:
            let prompt = try f.string("prompt") ?? ""
            raw = try f.bool("raw") ?? false
            if let images = try f.array("images"), !images.isEmpty {
                throw OllamaError.invalid("images: this server does not read images yet (Hearth's models are text-only)")
            }
            if let suffix = try f.string("suffix"), !suffix.isEmpty {
                throw OllamaError.invalid("suffix: fill-in-the-middle is not supported by this server")
            }
            if let template = try f.string("template"), !template.isEmpty {
                throw OllamaError.invalid("template: this server renders prompts with the model's own chat template; send raw: true with a prompt you formatted")
            }
            if let context = try f.array("context"), !context.isEmpty {
                throw OllamaError.invalid("context: this server does not take back token context; send the conversation to /api/chat instead")
            }
            let system = try f.string("system")
            loadOnly = prompt.isEmpty && (system ?? "").isEmpty
            if raw {
                if system != nil { throw OllamaError.invalid("system: a raw prompt takes no system message (it is sent as is)") }
                out.append(("prompt", .string(prompt)))
            } else {
                var messages: [JSONValue] = []
                if let system, !system.isEmpty { messages.append(["role": "system", "content": .string(system)]) }
                messages.append(["role": "user", "content": .string(prompt)])
                out.append(("messages", .array(messages)))
            }
        }
        endpoint = raw ? .completions : .chatCompletions
        out.append(("stream", true))
        out.append(("stream_options", ["include_usage": true]))
        if let format = try Self.format(f.value("format")) {
            if raw { throw OllamaError.invalid("format: a raw prompt cannot carry a format on this server; drop raw") }
            out.append(("response_format", format))
        }
        if let think = f.value("think"), think != .null {
            switch think {
            case .bool(false): out.append(("reasoning_effort", "none"))
            case .bool(true): break  // reasoning is allowed by default; it is reported as `thinking`
            case .string(let level) where ["low", "medium", "high"].contains(level): out.append(("reasoning_effort", .string(level)))
            default: throw OllamaError.invalid("think must be true, false, \"low\", \"medium\" or \"high\"")
            }
            if raw, think != .bool(false) { throw OllamaError.invalid("think: a raw prompt cannot ask for reasoning") }
        }
        if try f.bool("logprobs") == true {
            out.append(("logprobs", true))
            if let top = try f.int("top_logprobs") { out.append((raw ? "logprobs" : "top_logprobs", .int(top))) }
            if raw, let index = out.firstIndex(where: { $0.0 == "logprobs" && $0.1 == .bool(true) }) { out[index].1 = .int(0) }
        }
        if let options = f.value("options"), options != .null {
            guard case .object(let pairs) = options else { throw OllamaError.invalid("options must be an object") }
            out += try Self.options(OllamaObject(pairs, prefix: "options."))
        }
        openAI = .object(out)
    }

    /// Ollama's chat messages as OpenAI's: an assistant's `tool_calls` get ids (Ollama's have
    /// none) that the `tool` messages after it answer, by `tool_name` or in order;
    /// `thinking` goes back as `reasoning_content`; `images` are refused by name.
    static func messages(_ items: [JSONValue]) throws -> [JSONValue] {
        var out: [JSONValue] = []
        var open: [(id: String, name: String)] = []
        var callCount = 0
        for (index, item) in items.enumerated() {
            guard case .object(let pairs) = item else { throw OllamaError.invalid("messages[\(index)] must be an object") }
            let m = OllamaObject(pairs, prefix: "messages[\(index)].")
            guard let role = try m.string("role") else { throw OllamaError.invalid("messages[\(index)].role is required") }
            guard ["system", "user", "assistant", "tool"].contains(role) else {
                throw OllamaError.invalid("messages[\(index)].role must be system, user, assistant or tool, got '\(role.prefix(40))'")
            }
            if let images = try m.array("images"), !images.isEmpty {
                throw OllamaError.invalid("messages[\(index)].images: this server does not read images yet (Hearth's models are text-only)")
            }
            let content = try m.string("content") ?? ""
            var message: [(String, JSONValue)] = [("role", .string(role)), ("content", .string(content))]
            switch role {
            case "assistant":
                if let thinking = try m.string("thinking"), !thinking.isEmpty { message.append(("reasoning_content", .string(thinking))) }
                if let calls = try m.array("tool_calls"), !calls.isEmpty {
                    var listed: [JSONValue] = []
                    for (c, call) in calls.enumerated() {
                        guard case .object(let callPairs) = call, case .object(let fnPairs)? = OllamaObject(callPairs, prefix: "").value("function")
                        else { throw OllamaError.invalid("messages[\(index)].tool_calls[\(c)].function is required") }
                        let fn = OllamaObject(fnPairs, prefix: "messages[\(index)].tool_calls[\(c)].function.")
                        guard let name = try fn.string("name") else {
                            throw OllamaError.invalid("messages[\(index)].tool_calls[\(c)].function.name is required")
                        }
                        let arguments: String
                        switch fn.value("arguments") {
                        case .string(let text)?: arguments = text
                        case nil, .null?: arguments = "{}"
                        case let value?: arguments = value.serialized
                        }
                        let id = "call_\(callCount)"
                        callCount += 1
                        open.append((id, name))
                        listed.append(["id": .string(id), "type": "function", "function": ["name": .string(name), "arguments": .string(arguments)]])
                    }
                    message.append(("tool_calls", .array(listed)))
                }
            case "tool":
                let name = try m.string("tool_name") ?? m.string("name")
                let id: String
                if let given = try m.string("tool_call_id"), !given.isEmpty {
                    id = given
                    open.removeAll { $0.id == given }
                } else if let name, let at = open.firstIndex(where: { $0.name == name }) {
                    id = open.remove(at: at).id
                } else if !open.isEmpty {
                    id = open.removeFirst().id
                } else {
                    throw OllamaError.invalid("messages[\(index)]: a tool message must follow an assistant message with tool_calls")
                }
                message.append(("tool_call_id", .string(id)))
            default: break
            }
            out.append(.object(message))
        }
        return out
    }

    /// `format`: `"json"` is any JSON object, a JSON Schema object constrains the reply to it.
    static func format(_ value: JSONValue?) throws -> JSONValue? {
        switch value {
        case nil, .null?, .string("")?: return nil
        case .string("json")?: return ["type": "json_object"]
        case .object?:
            guard let value else { return nil }
            return ["type": "json_schema", "json_schema": ["name": "ollama_format", "schema": value, "strict": true]]
        default: throw OllamaError.invalid("format must be \"json\" or a JSON Schema object")
        }
    }

    /// `options` as OpenAI sampling fields (``OllamaFields``).
    static func options(_ o: OllamaObject) throws -> [(String, JSONValue)] {
        var out: [(String, JSONValue)] = []
        for (key, value) in o.pairs where value != .null {
            switch key {
            case "temperature", "top_p", "min_p", "presence_penalty", "frequency_penalty":
                out.append((key, .number(try o.number(key) ?? 0)))
            case "repeat_penalty": out.append(("repetition_penalty", .number(try o.number(key) ?? 1)))
            case "top_k":
                let k = try o.int(key) ?? 0
                if k > 0 { out.append(("top_k", .int(k))) }  // Ollama: 0 turns top-k off
            case "seed":
                let seed = try o.int(key) ?? 0
                if seed >= 0 { out.append(("seed", .int(seed))) }  // Ollama: -1 is a random seed
            case "num_predict":
                // Ollama: -1 generates until the model stops, -2 until the context fills.
                let count = try o.int(key) ?? -1
                if count > 0 { out.append(("max_tokens", .int(count))) }
            case "stop":
                switch value {
                case .string(let stop): out.append(("stop", [.string(stop)]))
                case .array(let items):
                    guard items.allSatisfy({ if case .string = $0 { true } else { false } }) else {
                        throw OllamaError.invalid("options.stop must be a list of strings")
                    }
                    if !items.isEmpty { out.append(("stop", .array(items))) }
                default: throw OllamaError.invalid("options.stop must be a list of strings")
                }
            case "tool_choice":
                // Hearth's extension (Ollama has no tool choice, and ignores option keys it does
                // not know): `auto`, `none`, `required`, or a tool's name.
                guard case .string(let choice) = value, !choice.isEmpty else {
                    throw OllamaError.invalid("options.tool_choice must be auto, none, required or a tool's name")
                }
                out.append((
                    "tool_choice",
                    ["auto", "none", "required"].contains(choice) ? .string(choice) : ["type": "function", "function": ["name": .string(choice)]]
                ))
            default:
                if let neutral = OllamaFields.refusedOptions[key] {
                    if let number = try o.number(key), number != neutral {
                        throw OllamaError.invalid("options.\(key): this server has no \(key) sampler; leave it at \(neutral)")
                    }
                } else if OllamaFields.hintOptions.contains(key) {
                    if key == "num_ctx", let n = try o.int(key), n < 1 { throw OllamaError.invalid("options.num_ctx must be positive") }
                }
                // Any other key is ignored, as Ollama ignores options it does not know.
            }
        }
        return out
    }

    /// The `message` of an OpenAI error body (nil when the bytes are not one).
    static func errorMessage(_ data: Data) -> String? {
        guard let value = try? RequestParser.json(data), let error = value["error"] else { return nil }
        switch error {
        case .string(let text): return ollamaWording(text)
        case .object:
            if case .string(let text)? = error["message"] { return ollamaWording(text) }
            return nil
        default: return nil
        }
    }

    /// An OpenAI-worded message with the fields named as an Ollama request names them.
    static func ollamaWording(_ text: String) -> String {
        var text = text
        for (from, to) in [
            ("'response_format'", "'format'"), ("response_format", "format"), ("'max_tokens'", "'options.num_predict'"),
            ("'repetition_penalty'", "'options.repeat_penalty'"), ("reasoning_effort", "think"),
            ("GET /v1/models lists", "GET /api/tags lists"),
        ] {
            text = text.replacingOccurrences(of: from, with: to)
        }
        return text
    }
}

/// An Ollama request object's fields, type-checked with Ollama-shaped errors.
struct OllamaObject {
    let pairs: [(String, JSONValue)]
    let prefix: String

    init(_ pairs: [(String, JSONValue)], prefix: String) {
        self.pairs = pairs
        self.prefix = prefix
    }

    func value(_ key: String) -> JSONValue? { pairs.last { $0.0 == key }?.1 }

    private func wrong(_ key: String, _ expected: String) -> OllamaError {
        OllamaError.invalid("\(prefix)\(key) must be \(expected)")
    }

    func string(_ key: String) throws -> String? {
        switch value(key) {
        case nil, .null?: return nil
        case .string(let text)?: return text
        default: throw wrong(key, "a string")
        }
    }

    func bool(_ key: String) throws -> Bool? {
        switch value(key) {
        case nil, .null?: return nil
        case .bool(let flag)?: return flag
        default: throw wrong(key, "true or false")
        }
    }

    func number(_ key: String) throws -> Double? {
        switch value(key) {
        case nil, .null?: return nil
        case .number(let number)? where number.double.isFinite: return number.double
        default: throw wrong(key, "a number")
        }
    }

    func int(_ key: String) throws -> Int? {
        guard let number = try number(key) else { return nil }
        guard number == number.rounded(), abs(number) < 1e15 else { throw wrong(key, "an integer") }
        return Int(number)
    }

    func array(_ key: String) throws -> [JSONValue]? {
        switch value(key) {
        case nil, .null?: return nil
        case .array(let items)?: return items
        default: throw wrong(key, "a list")
        }
    }
}

/// The answer of an Ollama generation, built from the OpenAI stream's chunks: the NDJSON lines
/// to stream as they come, and the last (or only) object with `done_reason`, counts and
/// durations in nanoseconds.
struct OllamaReply {
    let kind: OllamaAPI.Kind
    let model: String
    let started: ContinuousClock.Instant
    var firstToken: ContinuousClock.Instant?
    var content = ""
    var thinking = ""
    var logprobs: [JSONValue] = []
    /// Tool calls by their stream index: name and argument text so far.
    var calls: [Int: (name: String, arguments: String)] = [:]
    var callsSent = false
    var promptTokens = 0
    var evalCount = 0
    var doneReason: String?
    var error: OllamaError?
    /// The final line was produced.
    var ended = false

    init(kind: OllamaAPI.Kind, model: String, started: ContinuousClock.Instant) {
        self.kind = kind
        self.model = model
        self.started = started
    }

    /// Ollama's `created_at`: RFC 3339 in UTC with fractional seconds.
    static func timestamp(_ date: Date = Date()) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }

    /// One chunk of the OpenAI stream (``JSONValue/null`` for `[DONE]`); returns the lines to stream.
    mutating func take(_ event: JSONValue) -> [JSONValue] {
        guard !ended else { return [] }
        if event == .null {
            ended = true
            return [final(whole: false)]
        }
        if let failure = event["error"] {
            var message = "the generation failed"
            var status = 500
            if case .string(let text)? = failure["message"] { message = OllamaTranslation.ollamaWording(text) }
            if let code = failure["code"]?.doubleValue, (400..<600).contains(code) { status = Int(code) }
            if case .string(let type)? = failure["type"], type.contains("timeout") { status = 504 }
            error = OllamaError(status, message)
            ended = true
            return [["error": .string(message)]]
        }
        if case .object? = event["usage"], let usage = event["usage"] {
            if let p = usage["prompt_tokens"]?.doubleValue { promptTokens = Int(p) }
            if let c = usage["completion_tokens"]?.doubleValue { evalCount = Int(c) }
        }
        guard case .array(let choices)? = event["choices"], let choice = choices.first else { return [] }
        var lines: [JSONValue] = []
        var piece = "", thought = ""
        var pieceLogprobs: [JSONValue] = []
        if let delta = choice["delta"] {
            if case .string(let text)? = delta["content"] { piece = text }
            if case .string(let text)? = delta["reasoning_content"] { thought = text }
            if case .array(let list)? = delta["tool_calls"] {
                for call in list {
                    guard let i = call["index"]?.doubleValue else { continue }
                    var entry = calls[Int(i)] ?? ("", "")
                    if case .string(let name)? = call["function"]?["name"] { entry.name += name }
                    if case .string(let args)? = call["function"]?["arguments"] { entry.arguments += args }
                    calls[Int(i)] = entry
                }
            }
        } else if case .string(let text)? = choice["text"] {
            piece = text
        }
        if case .array(let items)? = choice["logprobs"]?["content"] {
            pieceLogprobs = items.map(Self.logprob)
        } else if case .array(let tokens)? = choice["logprobs"]?["tokens"], case .array(let values)? = choice["logprobs"]?["token_logprobs"] {
            pieceLogprobs = zip(tokens, values).map { ["token": $0, "logprob": $1] }
        }
        if firstToken == nil, !piece.isEmpty || !thought.isEmpty || !calls.isEmpty { firstToken = .now }
        content += piece
        thinking += thought
        logprobs += pieceLogprobs
        if !piece.isEmpty || !thought.isEmpty {
            lines.append(line(content: piece, thinking: thought, logprobs: pieceLogprobs))
        }
        if case .string(let reason)? = choice["finish_reason"] {
            doneReason = reason == "length" ? "length" : "stop"
            // Ollama sends a reply's tool calls whole, in a chunk of their own.
            if !calls.isEmpty, kind == .chat {
                callsSent = true
                lines.append(line(content: "", thinking: "", logprobs: [], toolCalls: toolCalls()))
            }
        }
        return lines
    }

    static func logprob(_ item: JSONValue) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("token", item["token"] ?? ""), ("logprob", item["logprob"] ?? 0)]
        if case .array(let top)? = item["top_logprobs"] {
            pairs.append(("top_logprobs", .array(top.map { ["token": $0["token"] ?? "", "logprob": $0["logprob"] ?? 0] })))
        }
        return .object(pairs)
    }

    func toolCalls() -> JSONValue {
        .array(
            calls.keys.sorted().compactMap { index in
                guard let call = calls[index] else { return nil }
                var arguments: JSONValue = .object([])
                if let parsed = try? RequestParser.json(Data(call.arguments.utf8)), case .object = parsed { arguments = parsed }
                let function: JSONValue = ["index": .int(index), "name": .string(call.name), "arguments": arguments]
                return ["function": function]
            })
    }

    func line(content: String, thinking: String, logprobs: [JSONValue], toolCalls: JSONValue? = nil) -> JSONValue {
        var pairs: [(String, JSONValue)] = [("model", .string(model)), ("created_at", .string(Self.timestamp()))]
        switch kind {
        case .chat:
            var message: [(String, JSONValue)] = [("role", "assistant"), ("content", .string(content))]
            if !thinking.isEmpty { message.append(("thinking", .string(thinking))) }
            if let toolCalls { message.append(("tool_calls", toolCalls)) }
            pairs.append(("message", .object(message)))
        case .generate:
            pairs.append(("response", .string(content)))
            if !thinking.isEmpty { pairs.append(("thinking", .string(thinking))) }
        }
        if !logprobs.isEmpty { pairs.append(("logprobs", .array(logprobs))) }
        pairs.append(("done", false))
        return .object(pairs)
    }

    /// The last line of a stream (`whole` false: no text, the pieces went before) or the whole answer.
    func final(whole: Bool) -> JSONValue {
        let now = ContinuousClock.now
        let first = firstToken ?? now
        func ns(_ d: Duration) -> JSONValue {
            .int(Int(d.components.seconds) * 1_000_000_000 + Int(d.components.attoseconds / 1_000_000_000))
        }
        var pairs: [(String, JSONValue)] = [("model", .string(model)), ("created_at", .string(Self.timestamp()))]
        let text = whole ? content : "", thought = whole ? thinking : ""
        switch kind {
        case .chat:
            var message: [(String, JSONValue)] = [("role", "assistant"), ("content", .string(text))]
            if !thought.isEmpty { message.append(("thinking", .string(thought))) }
            if whole, !calls.isEmpty { message.append(("tool_calls", toolCalls())) }
            pairs.append(("message", .object(message)))
        case .generate:
            pairs.append(("response", .string(text)))
            if !thought.isEmpty { pairs.append(("thinking", .string(thought))) }
        }
        if whole, !logprobs.isEmpty { pairs.append(("logprobs", .array(logprobs))) }
        pairs.append(("done", true))
        pairs.append(("done_reason", .string(doneReason ?? "stop")))
        pairs += [
            ("total_duration", ns(now - started)), ("load_duration", 0), ("prompt_eval_count", .int(promptTokens)),
            ("prompt_eval_duration", ns(first - started)), ("eval_count", .int(evalCount)), ("eval_duration", ns(now - first)),
        ]
        return .object(pairs)
    }
}
