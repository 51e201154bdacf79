import Foundation
import HearthLocal
import HearthProviders

/// Renders one generation in the wire format of the API it came in through: SSE events
/// while streaming, or one JSON body at the end.
struct ResponseRenderer {
    let job: GenerationJob
    /// `chatcmpl-…`, `cmpl-…`, `msg_…` or `resp_…`.
    let id: String
    let created: Int
    var promptTokens = 0
    /// Of ``promptTokens``, those served from a cache (Anthropic's `message_start` reports them
    /// before the answer's usage arrives; 0 until a prompt cache reports them there).
    var cachedPromptTokens = 0
    /// Say which provider serves (the gateway's `hearth` field and `hearth_provider` event).
    let reportsProvider: Bool
    /// The provider was announced in the stream.
    var announced = false
    /// Characters of text streamed so far (legacy completions' `text_offset`).
    var textOffset = 0
    /// Text events streamed so far (the completion count of a stream cut by the filter).
    var pieces = 0
    /// Responses API: the next event's `sequence_number`.
    var sequence = 0
    /// Anthropic content blocks / Responses output items streamed so far, in order (their
    /// `index` / `output_index` is their place here); the last one may still be open.
    var items: [StreamItem] = []
    /// The last of ``items`` is open (its stop / done events not yet sent).
    var itemOpen = false
    /// The tool calls streamed so far.
    var calls = ToolCallCollector()
    /// With logprobs: which streamed tokens to list, and when (``LogprobAligner``); the
    /// characters of the tokens listed so far (legacy completions' `text_offset`).
    var aligner = LogprobAligner()
    var listedCharacters = 0
    /// Responses API with logprobs: tokens listed before their message's next delta, and each
    /// streamed message item's logprob entries (by its place in ``items``).
    var pendingLogprobs: [LocalProvider.LocalToken] = []
    var itemLogprobs: [Int: [JSONValue]] = [:]
    /// The choice this renderer streams (its `index`: chat and text completions).
    var choice = 0
    /// With several choices (`n` > 1): one renderer per choice, each keeping its own offsets
    /// and calls; and which choices have sent their end.
    var choiceRenderers: [ResponseRenderer] = []
    var endedChoices: Set<Int> = []

    init(job: GenerationJob, requestID: String, reportsProvider: Bool = false) {
        self.job = job
        self.reportsProvider = reportsProvider
        switch job.endpoint {
        case .chatCompletions: id = "chatcmpl-\(requestID)"
        case .completions: id = "cmpl-\(requestID)"
        case .messages: id = "msg_\(requestID)"
        case .responses: id = "resp_\(requestID)"
        }
        created = Int(Date().timeIntervalSince1970)
    }

    /// The Responses API's output message id.
    var itemID: String { "msg_" + id.dropFirst(5) }

    /// One SSE frame: `data: {json}\n\n`, with an `event:` line for Anthropic.
    static func frame(_ value: JSONValue, event: String? = nil) -> Data {
        var data = Data()
        if let event { data.append(contentsOf: Array("event: \(event)\n".utf8)) }
        data.append(contentsOf: Array("data: ".utf8))
        data.append(value.serialized())
        data.append(contentsOf: Array("\n\n".utf8))
        return data
    }

    static let done = Data("data: [DONE]\n\n".utf8)

    func finishName(_ reason: FinishReason, filtered: Bool = false) -> String {
        switch job.endpoint {
        case .messages: return filtered ? "refusal" : reason == .length ? "max_tokens" : reason == .toolCalls ? "tool_use" : "end_turn"
        default:
            if reason == .toolCalls && !filtered { return job.legacyFunctions ? "function_call" : "tool_calls" }
            return filtered ? "content_filter" : reason == .length ? "length" : "stop"
        }
    }

    // MARK: Usage
    //
    // Every field the current APIs return (Tests/Fixtures/api-fields.json, from the official
    // SDKs' usage models; `AcceptedFieldsTests` checks each is here). Cached prompt tokens come
    // from the provider's usage (`Usage.cachedPromptTokens`: the prefix served from a cache);
    // the rest of what a local text model cannot spend (audio, images, reasoning, predictions,
    // cache writes with a lifetime, hosted tools) is 0.

    /// `object` with Hearth's extension `budget_shaped_tokens` when the finish-in-budget rule
    /// chose tokens of the answer (docs/STRUCTURED.md; absent otherwise, ignored by the SDKs).
    static func withBudget(_ object: JSONValue, _ usage: Usage) -> JSONValue {
        guard let shaped = usage.budgetShapedTokens, shaped > 0, case .object(var members) = object else { return object }
        members.append(("budget_shaped_tokens", .int(shaped)))
        return .object(members)
    }

    /// Chat and text completions' usage.
    func openAIUsage(_ usage: Usage) -> JSONValue {
        Self.withBudget(openAIUsageFields(usage), usage)
    }

    private func openAIUsageFields(_ usage: Usage) -> JSONValue {
        let cached = usage.cachedPromptTokens ?? 0
        return [
            "prompt_tokens": .int(usage.promptTokens), "completion_tokens": .int(usage.completionTokens),
            "total_tokens": .int(usage.promptTokens + usage.completionTokens),
            "prompt_tokens_details": [
                "cached_tokens": .int(cached), "cache_write_tokens": 0, "audio_tokens": 0, "image_tokens": 0,
                "text_tokens": .int(usage.promptTokens),
            ],
            "completion_tokens_details": [
                "reasoning_tokens": .int(usage.reasoningTokens ?? 0), "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
                "text_tokens": .int(usage.completionTokens),
            ],
        ]
    }

    /// Anthropic's usage object (a whole message's, and `message_start`'s). `input` is the whole
    /// prompt; as in Anthropic's API, `input_tokens` counts only the part not read from the cache
    /// (the prompt is `input_tokens + cache_read_input_tokens + cache_creation_input_tokens`).
    func anthropicUsage(input: Int, output: Int, cached: Int) -> JSONValue {
        [
            "input_tokens": .int(max(0, input - cached)), "output_tokens": .int(output), "cache_read_input_tokens": .int(cached),
            "cache_creation_input_tokens": 0,
            "cache_creation": ["ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0],
            "output_tokens_details": ["thinking_tokens": 0],
            "server_tool_use": ["web_search_requests": 0, "web_fetch_requests": 0], "service_tier": "standard",
            "inference_geo": "not_available", "speed": "standard",
        ]
    }

    /// Anthropic's `message_delta` usage (the counts so far; a stream's last word on them);
    /// `input_tokens` without the cached part, as in ``anthropicUsage(input:output:cached:)``;
    /// `thinking` of the output tokens were reasoning (`output_tokens_details.thinking_tokens`).
    func anthropicDeltaUsage(input: Int, output: Int, cached: Int, thinking: Int = 0) -> JSONValue {
        [
            "input_tokens": .int(max(0, input - cached)), "output_tokens": .int(output), "cache_read_input_tokens": .int(cached),
            "cache_creation_input_tokens": 0, "output_tokens_details": ["thinking_tokens": .int(thinking)],
            "server_tool_use": ["web_search_requests": 0, "web_fetch_requests": 0],
        ]
    }

    /// The Responses API's usage object.
    func responsesUsage(_ usage: Usage) -> JSONValue {
        Self.withBudget(responsesUsageFields(usage), usage)
    }

    private func responsesUsageFields(_ usage: Usage) -> JSONValue {
        [
            "input_tokens": .int(usage.promptTokens),
            "input_tokens_details": [
                "cached_tokens": .int(usage.cachedPromptTokens ?? 0), "cache_write_tokens": 0,
                "cache_write_tokens_details": ["ttl_30m_tokens": 0, "ttl_12h_tokens": 0],
            ],
            "output_tokens": .int(usage.completionTokens), "output_tokens_details": ["reasoning_tokens": .int(usage.reasoningTokens ?? 0)],
            "total_tokens": .int(usage.promptTokens + usage.completionTokens),
        ]
    }

    static func bytes(_ text: String) -> JSONValue { .array(Array(text.utf8).map { .int(Int($0)) }) }

    /// Chat logprobs `content` entries for tokens.
    func chatLogprobs(_ tokens: [LocalProvider.LocalToken]) -> JSONValue { .array(logprobEntries(tokens)) }

    /// One `{token, logprob, bytes, top_logprobs}` entry per token (chat's `logprobs.content`,
    /// the Responses API's `output_text.logprobs`); `bytes` are the token's own.
    func logprobEntries(_ tokens: [LocalProvider.LocalToken]) -> [JSONValue] {
        tokens.map { t in
            [
                "token": .string(t.piece), "logprob": .number(t.logprob), "bytes": .array(t.bytes.map { .int(Int($0)) }),
                "top_logprobs": .array(
                    t.topLogprobs.map { ["token": .string($0.piece), "logprob": .number($0.logprob), "bytes": Self.bytes($0.piece)] }),
            ]
        }
    }

    /// Legacy completions logprobs object; `offset` is the text offset of the first token.
    func completionLogprobs(_ tokens: [LocalProvider.LocalToken], offset: Int) -> JSONValue {
        var position = offset
        var offsets: [JSONValue] = []
        for t in tokens {
            offsets.append(.int(position))
            position += t.piece.count
        }
        return [
            "tokens": .array(tokens.map { .string($0.piece) }),
            "token_logprobs": .array(tokens.map { .number($0.logprob) }),
            "top_logprobs": .array(tokens.map { t in .object(t.topLogprobs.map { ($0.piece, .number($0.logprob)) }) }),
            "text_offset": .array(offsets),
        ]
    }

    // MARK: Streaming

    /// Frames sent before the first token (Anthropic's content blocks and the Responses API's
    /// output items open with their first text or call: ``openText()``, ``toolFrames(_:)``).
    mutating func streamStart() -> [Data] {
        switch job.endpoint {
        case .responses:
            let response = responseObject(status: "in_progress", output: [], usage: nil)
            return [
                event("response.created", ["response": response]),
                event("response.in_progress", ["response": response]),
            ]
        case .chatCompletions:
            // Every choice opens with its role.
            return (0..<max(1, job.choices)).map { index in
                var renderer = self
                renderer.choice = index
                return renderer.chatChunk(delta: ["role": "assistant", "content": ""], logprobs: nil, finish: nil)
            }
        case .completions:
            return []
        case .messages:
            let message: JSONValue = [
                "id": .string(id), "type": "message", "role": "assistant", "model": .string(job.model), "content": [],
                "stop_reason": nil, "stop_sequence": nil, "stop_details": nil, "container": nil,
                "usage": anthropicUsage(input: promptTokens, output: 0, cached: cachedPromptTokens),
            ]
            return [
                Self.frame(["type": "message_start", "message": message], event: "message_start"),
                Self.frame(["type": "ping"], event: "ping"),
            ]
        }
    }

    func chatChunk(delta: JSONValue, logprobs: JSONValue?, finish: String?) -> Data {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", "chat.completion.chunk"), ("created", .int(created)), ("model", .string(job.model)),
            ("system_fingerprint", "hearth"),
            ("choices", [["index": .int(choice), "delta": delta, "logprobs": logprobs ?? .null, "finish_reason": .optional(finish)]]),
        ]
        if job.includeUsage { pairs.append(("usage", .null)) }
        return Self.frame(.object(pairs))
    }

    func completionChunk(text: String, logprobs: JSONValue?, finish: String?) -> Data {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", "text_completion"), ("created", .int(created)), ("model", .string(job.model)),
            ("system_fingerprint", "hearth"),
            ("choices", [["text": .string(text), "index": .int(choice), "logprobs": logprobs ?? .null, "finish_reason": .optional(finish)]]),
        ]
        if job.includeUsage { pairs.append(("usage", .null)) }
        return Self.frame(.object(pairs))
    }

    /// Frames for one token of a chat or text completion with logprobs: its text, and the
    /// tokens whose text has now gone out (``LogprobAligner``); none when there is neither.
    mutating func streamToken(_ token: LocalProvider.LocalToken) -> [Data] {
        // A token of a tool call (empty text while a call is open) goes out as the call's events.
        let listed = token.text.isEmpty && calls.hasOpenCall ? [] : aligner.add(token, text: token.text)
        guard !token.text.isEmpty || !listed.isEmpty else { return [] }
        return [logprobChunk(text: token.text, listed)]
    }

    /// A chat or text completion chunk with `text` and the logprobs of `listed`.
    mutating func logprobChunk(text: String, _ listed: [LocalProvider.LocalToken]) -> Data {
        if job.endpoint == .chatCompletions {
            return chatChunk(delta: ["content": .string(text)], logprobs: ["content": chatLogprobs(listed)], finish: nil)
        }
        defer { listedCharacters += listed.reduce(0) { $0 + $1.piece.count } }
        return completionChunk(text: text, logprobs: completionLogprobs(listed, offset: listedCharacters), finish: nil)
    }

    /// The chunk listing the token the reply's text ends within (cut by a stop string), if any.
    mutating func logprobEnd() -> [Data] {
        guard job.logprobs != nil, job.endpoint == .chatCompletions || job.endpoint == .completions else { return [] }
        let last = aligner.finish()
        return last.isEmpty ? [] : [logprobChunk(text: "", last)]
    }

    /// Frames carrying reply text without per-token detail (but the Responses API's logprobs:
    /// `token`, when they were asked for, goes out with the next text).
    mutating func textFrames(_ text: String, token: LocalProvider.LocalToken? = nil) -> [Data] {
        if job.endpoint == .responses, job.logprobs != nil {
            pendingLogprobs += aligner.add(text.isEmpty && calls.hasOpenCall ? nil : token, text: text)
        }
        guard !text.isEmpty else { return [] }
        switch job.endpoint {
        case .chatCompletions: return [chatChunk(delta: ["content": .string(text)], logprobs: nil, finish: nil)]
        case .completions: return [completionChunk(text: text, logprobs: nil, finish: nil)]
        case .messages:
            var frames = openText()
            frames.append(
                Self.frame(
                    ["type": "content_block_delta", "index": .int(items.count - 1), "delta": ["type": "text_delta", "text": .string(text)]],
                    event: "content_block_delta"))
            appendText(text)
            return frames
        case .responses:
            var frames = openText()
            let logprobs = logprobEntries(pendingLogprobs)
            pendingLogprobs = []
            itemLogprobs[items.count - 1, default: []] += logprobs
            frames.append(
                event(
                    "response.output_text.delta",
                    [
                        "item_id": .string(messageID(items.count - 1)), "output_index": .int(items.count - 1), "content_index": 0,
                        "delta": .string(text), "logprobs": .array(logprobs),
                    ]))
            appendText(text)
            return frames
        }
    }

    /// The frames for one event of a route's answer; `text` is the answer so far (this event's included).
    mutating func frames(for event: RouteEvent, text: String, cached: Bool = false) -> [Data] {
        switch event {
        case .servedBy(let id):
            guard reportsProvider, !announced else { return [] }
            announced = true
            return providerFrame(servedBy: id, switched: nil, cached: cached)
        case .switched(let from, let to, let reason):
            guard reportsProvider else { return [] }
            return providerFrame(servedBy: to, switched: (from, reason), cached: false)
        case .promptTokens:
            return []
        case .text(let piece, let token):
            pieces += 1
            defer { textOffset += piece.count }
            if let token, job.logprobs != nil, job.endpoint == .chatCompletions || job.endpoint == .completions {
                return streamToken(token)
            }
            return textFrames(piece, token: job.logprobs != nil ? token : nil)
        case .toolCall(let step):
            return toolFrames(step)
        case .reasoning(let piece):
            return reasoningFrames(piece)
        case .reasoningEnded(let part):
            return reasoningEndFrames(part)
        case .finished(let usage, let reason):
            return streamEnd(usage: usage, reason: reason, text: text)
        case .filtered:
            return streamEnd(usage: Usage(promptTokens: promptTokens, completionTokens: pieces), reason: .stop, text: text, filtered: true)
        case .choice(let index, let inner):
            return choiceFrames(index, inner)
        }
    }

    /// The frames of one choice's event (`n` > 1), rendered by that choice's own renderer; its
    /// `finished` sends only its finish chunk (the answer's end sends usage and `[DONE]`).
    mutating func choiceFrames(_ index: Int, _ event: RouteEvent) -> [Data] {
        guard index >= 0, index < max(1, job.choices) else { return [] }
        if choiceRenderers.isEmpty {
            choiceRenderers = (0..<max(1, job.choices)).map { index in
                var renderer = self
                renderer.choice = index
                return renderer
            }
        }
        if case .finished(_, let reason) = event {
            endedChoices.insert(index)
            return choiceRenderers[index].logprobEnd() + [choiceRenderers[index].finishChunk(finishName(reason))]
        }
        choiceRenderers[index].pieces = 0
        let frames = choiceRenderers[index].frames(for: event, text: "")
        pieces += choiceRenderers[index].pieces
        return frames
    }

    /// The chunk that ends this renderer's choice with `finish`.
    func finishChunk(_ finish: String) -> Data {
        job.endpoint == .chatCompletions
            ? chatChunk(delta: [:], logprobs: nil, finish: finish) : completionChunk(text: "", logprobs: nil, finish: finish)
    }

    /// A stream event saying which provider serves (and, after a failover, which one failed and
    /// why): an empty chunk with a `hearth` field (OpenAI formats), a `hearth_provider` event
    /// (Anthropic), nothing in the Responses API (whose clients reject unknown events).
    func providerFrame(servedBy: String, switched: (from: String, reason: String)?, cached: Bool) -> [Data] {
        var info: [(String, JSONValue)] = [("served_by", .string(servedBy))]
        if let switched {
            info.append(("switched_from", .string(switched.from)))
            info.append(("reason", .string(switched.reason)))
        }
        if cached { info.append(("cache", "hit")) }
        switch job.endpoint {
        case .messages:
            return [Self.frame(.object([("type", "hearth_provider")] + info), event: "hearth_provider")]
        case .responses:
            return []
        case .chatCompletions, .completions:
            let choice: JSONValue =
                job.endpoint == .chatCompletions
                ? ["index": 0, "delta": [:], "logprobs": nil, "finish_reason": nil]
                : ["text": "", "index": 0, "logprobs": nil, "finish_reason": nil]
            return [
                Self.frame(
                    .object([
                        ("id", .string(id)),
                        ("object", job.endpoint == .chatCompletions ? "chat.completion.chunk" : "text_completion"),
                        ("created", .int(created)), ("model", .string(job.model)), ("system_fingerprint", "hearth"),
                        ("choices", [choice]), ("hearth", .object(info)),
                    ]))
            ]
        }
    }

    /// Frames after the last token (`filtered`: the output filter cut the answer).
    mutating func streamEnd(usage: Usage, reason: FinishReason, text: String, filtered: Bool = false) -> [Data] {
        let finish = finishName(reason, filtered: filtered)
        switch job.endpoint {
        case .responses:
            // An answer with no text and no call still has its (empty) message.
            var frames = items.isEmpty ? openText() : []
            frames += closeItem()
            var response = responseObject(status: "completed", output: streamedOutput(), usage: usage)
            if reason == .length || filtered { response = incomplete(response, reason: filtered ? "content_filter" : "max_output_tokens") }
            frames.append(event(reason == .length || filtered ? "response.incomplete" : "response.completed", ["response": response]))
            return frames
        case .chatCompletions, .completions:
            var frames: [Data]
            if job.choices > 1 {
                // Each choice sent its own end; those the filter cut end here.
                frames = (0..<job.choices).filter { !endedChoices.contains($0) }.map { index in
                    var renderer = self
                    renderer.choice = index
                    return renderer.finishChunk(finish)
                }
            } else {
                frames = logprobEnd() + [finishChunk(finish)]
            }
            if job.includeUsage {
                frames.append(
                    Self.frame(
                        [
                            "id": .string(id), "object": job.endpoint == .chatCompletions ? "chat.completion.chunk" : "text_completion",
                            "created": .int(created), "model": .string(job.model), "system_fingerprint": "hearth", "choices": [],
                            "usage": openAIUsage(usage),
                        ]))
            }
            frames.append(Self.done)
            return frames
        case .messages:
            var frames = items.isEmpty ? openText() : []
            frames += closeItem()
            return frames + [
                Self.frame(
                    [
                        "type": "message_delta", "delta": ["stop_reason": .string(finish), "stop_sequence": nil],
                        "usage": anthropicDeltaUsage(
                            input: usage.promptTokens, output: usage.completionTokens, cached: usage.cachedPromptTokens ?? 0,
                            thinking: usage.reasoningTokens ?? 0),
                    ], event: "message_delta"),
                Self.frame(["type": "message_stop"], event: "message_stop"),
            ]
        }
    }

    /// A frame reporting an error after the stream started (`text`: what was streamed).
    mutating func streamError(_ error: APIError, text: String) -> Data {
        switch job.endpoint {
        case .messages: return Self.frame(error.anthropicBody, event: "error")
        case .responses:
            var response = responseObject(status: "failed", output: text.isEmpty ? [] : [outputItem(text: text)], usage: nil)
            response = replacing(response, "error", ["code": .optional(error.code), "message": .string(error.message)])
            return event("response.failed", ["response": response])
        default: return Self.frame(error.openAIBody)
        }
    }

    // MARK: Responses API objects

    /// One Responses API event: `event: TYPE` and a body with `type` and `sequence_number`.
    mutating func event(_ type: String, _ body: JSONValue) -> Data {
        guard case .object(let pairs) = body else { return Data() }
        defer { sequence += 1 }
        return Self.frame(.object([("type", .string(type))] + pairs + [("sequence_number", .int(sequence))]), event: type)
    }

    func outputText(_ text: String, logprobs: [JSONValue] = []) -> JSONValue {
        ["type": "output_text", "text": .string(text), "annotations": [], "logprobs": .array(logprobs)]
    }

    /// The assistant message item (`text` nil: just begun).
    func outputItem(text: String?, id: String? = nil, logprobs: [JSONValue] = []) -> JSONValue {
        [
            "id": .string(id ?? itemID), "type": "message", "status": text == nil ? "in_progress" : "completed", "role": "assistant",
            "content": text.map { [outputText($0, logprobs: logprobs)] } ?? [],
        ]
    }

    /// The Responses API's `text.format` as the request asked for it (echoed in the response object).
    var textFormat: JSONValue {
        switch job.options.responseFormat {
        case .jsonObject?: return ["type": "json_object"]
        case .jsonSchema(let format)?:
            let schema = Self.schemaValue(format.schema)
            return [
                "type": "json_schema", "name": .string(format.name), "schema": schema, "strict": .bool(format.strict),
                "description": .optional(format.description),
            ]
        default: return ["type": "text"]
        }
    }

    /// The response object; `usage` nil until the answer is done.
    func responseObject(status: String, output: [JSONValue], usage: Usage?) -> JSONValue {
        let o = job.options
        return [
            "id": .string(id), "object": "response", "created_at": .int(created), "status": .string(status), "error": nil,
            "incomplete_details": nil, "instructions": .optional(job.instructions),
            "max_output_tokens": o.maxTokens.map { .int($0) } ?? .null, "model": .string(job.model), "output": .array(output),
            "parallel_tool_calls": .bool(o.parallelToolCalls ?? true), "previous_response_id": nil,
            "reasoning": ["effort": .optional(job.hints.reasoning.effort), "summary": .optional(job.hints.reasoning.summary)],
            "store": false, "background": false, "service_tier": "default", "temperature": o.temperature.map { .number($0) } ?? 1,
            "text": ["format": textFormat], "tool_choice": responsesToolChoice, "tools": responsesTools,
            "top_p": o.topP.map { .number($0) } ?? 1, "top_logprobs": job.logprobs.map { .int($0) } ?? .null, "truncation": "disabled",
            "prompt_cache_key": .optional(job.hints.cacheKey), "user": .optional(job.hints.user),
            "usage": usage.map { responsesUsage($0) } ?? .null, "metadata": .object(job.metadata.map { ($0.0, .string($0.1)) }),
        ]
    }

    func incomplete(_ response: JSONValue, reason: String) -> JSONValue {
        replacing(replacing(response, "status", "incomplete"), "incomplete_details", ["reason": .string(reason)])
    }

    func replacing(_ value: JSONValue, _ key: String, _ new: JSONValue) -> JSONValue {
        guard case .object(var pairs) = value else { return value }
        for index in pairs.indices where pairs[index].0 == key { pairs[index].1 = new }
        return .object(pairs)
    }

    // MARK: Whole responses

    /// The whole answer (`hearth: {served_by, switched, cache}` added when the server reports providers).
    func body(_ outcome: RouteOutcome) -> JSONValue {
        let plain =
            job.choices > 1
            ? choicesBody(outcome)
            : plainBody(
                text: outcome.text, calls: outcome.toolCalls, tokens: outcome.tokens, usage: outcome.usage, reason: outcome.reason,
                filtered: outcome.filtered)
        let body = withReasoning(
            plain, parts: outcome.answer.reasoning, choiceParts: outcome.choices.map(\.reasoning), usage: outcome.usage)
        guard reportsProvider, case .object(var pairs) = body else { return body }
        var info: [(String, JSONValue)] = [("served_by", .string(outcome.servedBy))]
        if !outcome.switches.isEmpty {
            info.append(
                ("switched", .array(outcome.switches.map { ["from": .string($0.from), "to": .string($0.to), "reason": .string($0.reason)] })))
        }
        if outcome.cacheHit { info.append(("cache", "hit")) }
        pairs.append(("hearth", .object(info)))
        return .object(pairs)
    }

    /// The whole answer in the API's shape: text (nothing but the calls when a reply with calls
    /// has no text: chat's `content` is then null) and tool calls (``chatToolCalls(_:)``,
    /// ``toolUseBlock(_:)``, ``functionCallItem(_:index:status:)``).
    func plainBody(
        text: String, calls collector: ToolCallCollector = ToolCallCollector(), tokens: [LocalProvider.LocalToken], usage: Usage,
        reason: FinishReason, filtered: Bool
    ) -> JSONValue {
        let finish = finishName(reason, filtered: filtered)
        let calls = collector.calls
        let hasText = !text.isEmpty || calls.isEmpty
        switch job.endpoint {
        case .chatCompletions, .completions:
            let choice = choiceObject(index: 0, text: text, calls: collector, tokens: tokens, finish: finish)
            return openAIBody(choices: [choice], usage: usage)
        case .messages:
            return [
                "id": .string(id), "type": "message", "role": "assistant", "model": .string(job.model),
                "content": .array((hasText ? [["type": "text", "text": .string(text), "citations": nil]] : []) + calls.map(toolUseBlock)),
                "stop_reason": .string(finish),
                "stop_sequence": nil, "stop_details": nil, "container": nil,
                "usage": anthropicUsage(
                    input: usage.promptTokens, output: usage.completionTokens, cached: usage.cachedPromptTokens ?? 0),
            ]
        case .responses:
            let logprobs = job.logprobs != nil ? logprobEntries(LogprobAligner.align(tokens, to: text)) : []
            let output = (hasText ? [outputItem(text: text, logprobs: logprobs)] : []) + calls.enumerated().map { functionCallItem($1, index: $0, status: Self.status(of: $0, in: collector)) }
            let response = responseObject(status: "completed", output: output, usage: usage)
            return reason == .length || filtered ? incomplete(response, reason: filtered ? "content_filter" : "max_output_tokens") : response
        }
    }

    /// One choice of a chat or text completion: the message (text, or null content beside
    /// calls) or the text, its log-probabilities when asked for, and its finish reason.
    func choiceObject(index: Int, text: String, calls collector: ToolCallCollector, tokens: [LocalProvider.LocalToken], finish: String)
        -> JSONValue
    {
        guard job.endpoint == .chatCompletions else {
            return [
                "text": .string(text), "index": .int(index),
                "logprobs": job.logprobs != nil ? completionLogprobs(LogprobAligner.align(tokens, to: text), offset: 0) : .null,
                "finish_reason": .string(finish),
            ]
        }
        let calls = collector.calls
        let logprobs: JSONValue =
            job.logprobs != nil ? ["content": chatLogprobs(LogprobAligner.align(tokens, to: text)), "refusal": nil] : .null
        var message: [(String, JSONValue)] = [
            ("role", "assistant"), ("content", !text.isEmpty || calls.isEmpty ? .string(text) : .null), ("refusal", nil), ("annotations", []),
        ]
        if let call = calls.first, job.legacyFunctions {
            message.append(("function_call", ["name": .string(call.name), "arguments": .string(call.arguments)]))
        } else if !calls.isEmpty {
            message.append(("tool_calls", chatToolCalls(calls)))
        }
        return ["index": .int(index), "message": .object(message), "logprobs": logprobs, "finish_reason": .string(finish)]
    }

    /// A chat or text completion object around its choices.
    func openAIBody(choices: [JSONValue], usage: Usage) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", job.endpoint == .chatCompletions ? "chat.completion" : "text_completion"),
            ("created", .int(created)), ("model", .string(job.model)), ("system_fingerprint", "hearth"), ("choices", .array(choices)),
            ("usage", openAIUsage(usage)),
        ]
        // Asked for a tier, a chat completion says which served it (there is one).
        if job.hints.serviceTier != nil, job.endpoint == .chatCompletions { pairs.append(("service_tier", "default")) }
        return .object(pairs)
    }

    /// The whole answer of a request for several choices: each choice in order (a choice the
    /// output filter cut, or did not let finish, ends with `content_filter`), the usage once.
    func choicesBody(_ outcome: RouteOutcome) -> JSONValue {
        let choices = (0..<job.choices).map { index in
            let choice = index < outcome.choices.count ? outcome.choices[index] : ChoiceOutcome()
            let finish = finishName(choice.reason, filtered: outcome.filtered && !choice.finished)
            return choiceObject(index: index, text: choice.text, calls: choice.toolCalls, tokens: choice.tokens, finish: finish)
        }
        return openAIBody(choices: choices, usage: outcome.usage)
    }
}
