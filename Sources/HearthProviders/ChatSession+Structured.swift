import Foundation

extension ChatSession {
    /// One step of a streamed structured answer
    /// (``ChatSession/streamResponse(to:generating:includeSchemaInPrompt:options:)``): the value
    /// as generated so far, and the whole value at the end.
    public struct StructuredUpdate<Value: StructuredOutput>: Sendable {
        /// What has been generated so far: the JSON written up to now, closed where it stops (an
        /// unfinished string shown as far as it goes; a number, key or literal being written
        /// left out) and decoded into `Value.Partial` — with `@Structured`, every property not
        /// written yet is nil.
        public var partial: Value.Partial
        /// The JSON text generated so far, as the model wrote it.
        public var json: String
        /// The complete value: set on the last update only.
        public var value: Value?
        /// The turn's response (usage, the transcript's new messages): set on the last update only.
        public var response: Response?
    }

    /// Answers `prompt` with a value of `type`, generated under its JSON Schema
    /// (``StructuredOutput/jsonSchema``, which `@Structured` derives) through the provider's
    /// structured-output path: the local model enforces the schema token by token and finishes
    /// it within the token budget, so the reply always decodes; cloud providers get it as their
    /// API's structured-output field. The turn (the prompt and the JSON reply) enters the
    /// transcript like any other. The session's tools are not offered in this turn (the local
    /// model cannot take a response format together with tools).
    ///
    /// ```swift
    /// let city = try await session.respond(to: "The largest city in Japan.", generating: City.self)
    /// ```
    /// - Parameters:
    ///   - prompt: the user's message for this turn.
    ///   - type: the type to generate.
    ///   - includeSchemaInPrompt: add the schema to the prompt, so the model knows what the
    ///     keys are for (the constraint decides what may be written, not what the model knows
    ///     you want). Turn it off when the prompt already says it, to save prompt tokens.
    ///   - options: this turn's options (nil: the transcript's); their `responseFormat` is
    ///     replaced by the schema.
    /// - Throws: what ``respond(to:options:)`` throws, and ``StructuredOutputError`` when the
    ///   reply cannot become a `Value` (`.incomplete` when a provider cut it at `maxTokens`).
    public func respond<Value: StructuredOutput>(
        to prompt: String, generating type: Value.Type = Value.self, includeSchemaInPrompt: Bool = true,
        options: ChatOptions? = nil
    ) async throws -> Value {
        let (text, turnOptions) = structuredTurn(prompt, type, includeSchemaInPrompt, options)
        let response = try await run(text, options: turnOptions, offerTools: false) { _ in }
        return try decodeStructured(type, response.reply)
    }

    /// ``respond(to:generating:includeSchemaInPrompt:options:)`` as a stream of the value as it
    /// fills in, as FoundationModels streams snapshots: each ``StructuredUpdate`` holds
    /// `Value.Partial` decoded from the JSON so far; the last one also holds the complete value
    /// and the response. Dropping the stream cancels the turn (the transcript is then unchanged).
    ///
    /// ```swift
    /// for try await update in session.streamResponse(to: "A city in Peru.", generating: City.self) {
    ///     print(update.partial.name ?? "…", update.partial.population ?? 0)
    /// }
    /// ```
    public func streamResponse<Value: StructuredOutput>(
        to prompt: String, generating type: Value.Type = Value.self, includeSchemaInPrompt: Bool = true,
        options: ChatOptions? = nil
    ) -> AsyncThrowingStream<StructuredUpdate<Value>, Error> {
        let (text, turnOptions) = structuredTurn(prompt, type, includeSchemaInPrompt, options)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var json = ""
                    var shown = ""
                    let response = try await self.run(text, options: turnOptions, offerTools: false) { update in
                        switch update {
                        case .textDelta(let delta):
                            json += delta
                            guard let closed = JSONPrefix.closed(json), closed != shown,
                                let partial = try? JSONText.decode(Value.Partial.self, from: closed)
                            else { return }
                            shown = closed
                            continuation.yield(StructuredUpdate(partial: partial, json: json, value: nil, response: nil))
                        case .toolCalled:
                            json = ""  // the next reply writes the value afresh
                            shown = ""
                        default: break
                        }
                    }
                    let value = try self.decodeStructured(type, response.reply)
                    let partial: Value.Partial
                    do { partial = try JSONText.decode(Value.Partial.self, from: response.text) } catch {
                        throw StructuredOutputError(
                            .typeMismatch, message: "the reply does not fit \(Value.Partial.self): \(error)", text: response.text,
                            provider: response.reply.provider)
                    }
                    continuation.yield(StructuredUpdate(partial: partial, json: response.text, value: value, response: response))
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The prompt and options of a structured turn: the schema as the response format (and in
    /// the prompt when asked).
    private func structuredTurn<Value: StructuredOutput>(
        _ prompt: String, _ type: Value.Type, _ includeSchema: Bool, _ options: ChatOptions?
    ) -> (String, ChatOptions) {
        let schema = Value.jsonSchemaText
        var options = options ?? transcript.options
        func name<P: LanguageModelProvider>(_ provider: P) -> String { P.schemaName(for: type) }
        options.responseFormat = .jsonSchema(JSONSchemaFormat(name: name(provider), schema: schema, strict: true))
        let text = includeSchema ? "\(prompt)\n\nAnswer with JSON that follows this JSON Schema:\n\(schema)" : prompt
        return (text, options)
    }

    private func decodeStructured<Value: Decodable>(_ type: Value.Type, _ reply: ChatResponse) throws -> Value {
        func decode<P: LanguageModelProvider>(_ provider: P) throws -> Value { try P.decodeReply(type, reply) }
        return try decode(provider)
    }
}

/// A prefix of a JSON document, closed so it parses: what a partially generated value holds so far.
enum JSONPrefix {
    /// `text` (the start of one JSON document) cut back to the last point where every value
    /// written is complete — except an unfinished string value, kept as far as it goes — and
    /// closed (`"`, `]`, `}`). Keys being written, numbers and literals that may continue, and
    /// a dangling `,` or `:` are left out. Nil when nothing is open yet (no `{` or `[`).
    static func closed(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        struct Frame { var isObject: Bool; var expectingKey: Bool }
        var stack: [Frame] = []
        var safe: (end: Int, stack: [Frame])?
        var inString = false, escaped = false, stringIsKey = false
        for (i, byte) in bytes.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    if !stringIsKey { safe = (i + 1, stack) }
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                stringIsKey = stack.last.map { $0.isObject && $0.expectingKey } ?? false
            case UInt8(ascii: "{"):
                stack.append(Frame(isObject: true, expectingKey: true))
                safe = (i + 1, stack)
            case UInt8(ascii: "["):
                stack.append(Frame(isObject: false, expectingKey: false))
                safe = (i + 1, stack)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !stack.isEmpty { stack.removeLast() }
                safe = (i + 1, stack)
            case UInt8(ascii: ":"):
                if !stack.isEmpty { stack[stack.count - 1].expectingKey = false }
            case UInt8(ascii: ","):
                safe = (i, stack)  // the value before the comma is complete
                if let last = stack.last, last.isObject { stack[stack.count - 1].expectingKey = true }
            default: break
            }
        }
        func closers(_ frames: [Frame]) -> String { frames.reversed().map { $0.isObject ? "}" : "]" }.joined() }
        if inString && !stringIsKey {
            // Keep the unfinished string, without a half-written escape (`\`, `\u00`).
            var end = bytes.count
            if escaped { end -= 1 }
            var k = end - 1
            while k >= 0, k > end - 6, isHex(bytes[k]) { k -= 1 }
            if k >= 1, bytes[k] == UInt8(ascii: "u"), bytes[k - 1] == UInt8(ascii: "\\"), end - k - 1 < 4, !precededByBackslash(bytes, k - 1) {
                end = k - 1
            }
            return String(decoding: bytes[..<end], as: UTF8.self) + "\"" + closers(stack)
        }
        guard let safe else { return nil }
        return String(decoding: bytes[..<safe.end], as: UTF8.self) + closers(safe.stack)
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// Whether the backslash at `index` is itself escaped (an odd number of backslashes before it).
    private static func precededByBackslash(_ bytes: [UInt8], _ index: Int) -> Bool {
        var count = 0
        var k = index - 1
        while k >= 0, bytes[k] == UInt8(ascii: "\\") { count += 1; k -= 1 }
        return count % 2 == 1
    }
}
