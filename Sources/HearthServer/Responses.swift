import Foundation
import HearthLocal
import HearthProviders

/// Renders one generation in the wire format of the API it came in through: SSE events
/// while streaming, or one JSON body at the end.
struct ResponseRenderer {
    let job: GenerationJob
    /// `chatcmpl-…`, `cmpl-…` or `msg_…`.
    let id: String
    let created: Int
    var promptTokens = 0

    init(job: GenerationJob, requestID: String) {
        self.job = job
        switch job.endpoint {
        case .chatCompletions: id = "chatcmpl-\(requestID)"
        case .completions: id = "cmpl-\(requestID)"
        case .messages: id = "msg_\(requestID)"
        }
        created = Int(Date().timeIntervalSince1970)
    }

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

    func finishName(_ reason: FinishReason) -> String {
        switch job.endpoint {
        case .messages: return reason == .length ? "max_tokens" : "end_turn"
        default: return reason == .length ? "length" : "stop"
        }
    }

    func openAIUsage(_ usage: Usage) -> JSONValue {
        var pairs: [(String, JSONValue)] = [
            ("prompt_tokens", .int(usage.promptTokens)), ("completion_tokens", .int(usage.completionTokens)),
            ("total_tokens", .int(usage.promptTokens + usage.completionTokens)),
            ("prompt_tokens_details", ["cached_tokens": .int(usage.cachedPromptTokens ?? 0)]),
        ]
        if job.endpoint == .chatCompletions { pairs.append(("completion_tokens_details", ["reasoning_tokens": 0])) }
        return .object(pairs)
    }

    func anthropicUsage(input: Int, output: Int, cached: Int) -> JSONValue {
        [
            "input_tokens": .int(input), "output_tokens": .int(output), "cache_read_input_tokens": .int(cached),
            "cache_creation_input_tokens": 0,
        ]
    }

    static func bytes(_ text: String) -> JSONValue { .array(Array(text.utf8).map { .int(Int($0)) }) }

    /// Chat logprobs `content` entries for tokens.
    func chatLogprobs(_ tokens: [LocalProvider.LocalToken]) -> JSONValue {
        .array(
            tokens.map { t in
                [
                    "token": .string(t.piece), "logprob": .number(t.logprob), "bytes": Self.bytes(t.piece),
                    "top_logprobs": .array(
                        t.topLogprobs.map { ["token": .string($0.piece), "logprob": .number($0.logprob), "bytes": Self.bytes($0.piece)] }),
                ]
            })
    }

    /// Legacy completions logprobs object; `offset` is the text offset of the first token.
    func completionLogprobs(_ tokens: [LocalProvider.LocalToken], offset: Int) -> JSONValue {
        var position = offset
        var offsets: [JSONValue] = []
        for t in tokens {
            offsets.append(.int(position))
            position += t.text.count
        }
        return [
            "tokens": .array(tokens.map { .string($0.piece) }),
            "token_logprobs": .array(tokens.map { .number($0.logprob) }),
            "top_logprobs": .array(tokens.map { t in .object(t.topLogprobs.map { ($0.piece, .number($0.logprob)) }) }),
            "text_offset": .array(offsets),
        ]
    }

    // MARK: Streaming

    /// Frames sent before the first token.
    func streamStart() -> [Data] {
        switch job.endpoint {
        case .chatCompletions:
            return [chatChunk(delta: ["role": "assistant", "content": ""], logprobs: nil, finish: nil)]
        case .completions:
            return []
        case .messages:
            let message: JSONValue = [
                "id": .string(id), "type": "message", "role": "assistant", "model": .string(job.model), "content": [],
                "stop_reason": nil, "stop_sequence": nil, "usage": anthropicUsage(input: promptTokens, output: 0, cached: 0),
            ]
            return [
                Self.frame(["type": "message_start", "message": message], event: "message_start"),
                Self.frame(
                    ["type": "content_block_start", "index": 0, "content_block": ["type": "text", "text": ""]],
                    event: "content_block_start"),
                Self.frame(["type": "ping"], event: "ping"),
            ]
        }
    }

    func chatChunk(delta: JSONValue, logprobs: JSONValue?, finish: String?) -> Data {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", "chat.completion.chunk"), ("created", .int(created)), ("model", .string(job.model)),
            ("system_fingerprint", "hearth"),
            ("choices", [["index": 0, "delta": delta, "logprobs": logprobs ?? .null, "finish_reason": .optional(finish)]]),
        ]
        if job.includeUsage { pairs.append(("usage", .null)) }
        return Self.frame(.object(pairs))
    }

    func completionChunk(text: String, logprobs: JSONValue?, finish: String?) -> Data {
        var pairs: [(String, JSONValue)] = [
            ("id", .string(id)), ("object", "text_completion"), ("created", .int(created)), ("model", .string(job.model)),
            ("system_fingerprint", "hearth"),
            ("choices", [["text": .string(text), "index": 0, "logprobs": logprobs ?? .null, "finish_reason": .optional(finish)]]),
        ]
        if job.includeUsage { pairs.append(("usage", .null)) }
        return Self.frame(.object(pairs))
    }

    /// Frames for one token (none when it completed no text and no logprobs were asked for).
    func streamToken(_ token: LocalProvider.LocalToken, textOffset: Int) -> [Data] {
        let wantsLogprobs = job.logprobs != nil
        guard !token.text.isEmpty || wantsLogprobs else { return [] }
        switch job.endpoint {
        case .chatCompletions:
            return [
                chatChunk(
                    delta: ["content": .string(token.text)], logprobs: wantsLogprobs ? ["content": chatLogprobs([token])] : nil,
                    finish: nil)
            ]
        case .completions:
            return [
                completionChunk(
                    text: token.text, logprobs: wantsLogprobs ? completionLogprobs([token], offset: textOffset) : nil, finish: nil)
            ]
        case .messages:
            return [
                Self.frame(
                    ["type": "content_block_delta", "index": 0, "delta": ["type": "text_delta", "text": .string(token.text)]],
                    event: "content_block_delta")
            ]
        }
    }

    /// Frames after the last token.
    func streamEnd(usage: Usage, reason: FinishReason) -> [Data] {
        let finish = finishName(reason)
        switch job.endpoint {
        case .chatCompletions, .completions:
            var frames = [
                job.endpoint == .chatCompletions
                    ? chatChunk(delta: [:], logprobs: nil, finish: finish) : completionChunk(text: "", logprobs: nil, finish: finish)
            ]
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
            return [
                Self.frame(["type": "content_block_stop", "index": 0], event: "content_block_stop"),
                Self.frame(
                    [
                        "type": "message_delta", "delta": ["stop_reason": .string(finish), "stop_sequence": nil],
                        "usage": ["output_tokens": .int(usage.completionTokens)],
                    ], event: "message_delta"),
                Self.frame(["type": "message_stop"], event: "message_stop"),
            ]
        }
    }

    /// A frame reporting an error after the stream started.
    func streamError(_ error: APIError) -> Data {
        switch job.endpoint {
        case .messages: return Self.frame(error.anthropicBody, event: "error")
        default: return Self.frame(error.openAIBody)
        }
    }

    // MARK: Whole responses

    func body(text: String, tokens: [LocalProvider.LocalToken], usage: Usage, reason: FinishReason) -> JSONValue {
        let finish = finishName(reason)
        switch job.endpoint {
        case .chatCompletions:
            let logprobs: JSONValue = job.logprobs != nil ? ["content": chatLogprobs(tokens), "refusal": nil] : .null
            return [
                "id": .string(id), "object": "chat.completion", "created": .int(created), "model": .string(job.model),
                "system_fingerprint": "hearth",
                "choices": [
                    [
                        "index": 0, "message": ["role": "assistant", "content": .string(text), "refusal": nil],
                        "logprobs": logprobs, "finish_reason": .string(finish),
                    ]
                ],
                "usage": openAIUsage(usage),
            ]
        case .completions:
            return [
                "id": .string(id), "object": "text_completion", "created": .int(created), "model": .string(job.model),
                "system_fingerprint": "hearth",
                "choices": [
                    [
                        "text": .string(text), "index": 0,
                        "logprobs": job.logprobs != nil ? completionLogprobs(tokens, offset: 0) : .null,
                        "finish_reason": .string(finish),
                    ]
                ],
                "usage": openAIUsage(usage),
            ]
        case .messages:
            return [
                "id": .string(id), "type": "message", "role": "assistant", "model": .string(job.model),
                "content": [["type": "text", "text": .string(text)]], "stop_reason": .string(finish), "stop_sequence": nil,
                "usage": anthropicUsage(
                    input: usage.promptTokens, output: usage.completionTokens, cached: usage.cachedPromptTokens ?? 0),
            ]
        }
    }
}
