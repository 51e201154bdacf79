import Foundation
import HearthEngine
import HearthProviders
import HearthTokenizers

/// What a server needs beyond the provider protocol: raw-text completions, per-token
/// log-probabilities, tokenization and the scheduler's load, all without importing the engine.
extension LocalProvider {
    /// What to generate from: a conversation rendered with the model's chat template, or raw text.
    public enum LocalInput: Sendable {
        /// Messages rendered with the chat template (as ``stream(_:)`` does).
        case chat([ChatMessage])
        /// Text tokenized as is (BOS added when the tokenizer adds one), for `/v1/completions`.
        case text(String)
    }

    /// One generated token as a server reports it.
    public struct LocalToken: Sendable {
        /// The text this token completed (may be empty while a character or stop string is pending).
        public var text: String
        /// The token's own text (its bytes decoded alone), for log-probability listings.
        public var piece: String
        /// log p(token).
        public var logprob: Double
        /// The most likely alternatives (piece, log p), when asked for.
        public var topLogprobs: [(piece: String, logprob: Double)]
    }

    /// Events of ``generate(_:options:topLogprobs:)``.
    public enum LocalEvent: Sendable {
        /// The prompt was tokenized and admitted: its length in tokens.
        case promptTokens(Int)
        /// A generated token. While the model writes a tool call its `text` is empty: the call
        /// arrives as ``toolCall(_:)`` events instead, never as text.
        case token(LocalToken)
        /// A step of a tool call (when the options carry tools): its start, a piece of its
        /// arguments, its end.
        case toolCall(ToolCallEvent)
        /// Generation ended: counts and why.
        case finished(Usage, HearthProviders.FinishReason)
    }

    /// Requests running and waiting for a sequence slot (nil before the model has loaded).
    public var schedulerLoad: (running: Int, waiting: Int)? { generatorIfLoaded?.load }

    /// Share of the KV cache's positions in use, 0…1 (nil before the model has loaded).
    public var kvCacheUsage: Double? { generatorIfLoaded?.cacheUsage }

    /// Sequences decoded at once (the configured `parallel`).
    public var parallelSequences: Int { configuration.parallel }

    /// The vocabulary size once the model is loaded.
    public var loadedVocabularySize: Int? { generatorIfLoaded?.model.options.vocabSize }

    /// Tokenizes `text` with the loaded model's tokenizer (loading it first if needed).
    /// - Throws: `ProviderError`.
    public func tokenize(_ text: String, addSpecialTokens: Bool) async throws -> [Int32] {
        let generator = try await loadedGenerator()
        do { return try generator.model.tokenizer.encode(text, addSpecialTokens: addSpecialTokens) } catch {
            throw providerError(error)
        }
    }

    /// Each token's bytes as it stands in text (`▁` as a space, `<0xNN>` as that byte; a control
    /// token as it is written, such as `<eos>`), for `/tokenize` with pieces.
    /// - Throws: `ProviderError` `.invalidRequest` when an id is outside the vocabulary.
    public func tokenPieces(_ ids: [Int32]) async throws -> [[UInt8]] {
        let generator = try await loadedGenerator()
        let vocabulary = generator.model.options.vocabSize
        if let bad = ids.first(where: { $0 < 0 || Int($0) >= vocabulary }) {
            throw ProviderError(
                .invalidRequest, provider: id, message: "token id \(bad) is outside the vocabulary (0..<\(vocabulary))")
        }
        let tokenizer = generator.model.tokenizer
        return ids.map { tokenizer.bytes(of: $0) ?? Array((tokenizer.token($0) ?? "").utf8) }
    }

    /// Decodes token ids to text (special tokens skipped).
    /// - Throws: `ProviderError` `.invalidRequest` when an id is outside the vocabulary.
    public func detokenize(_ ids: [Int32]) async throws -> String {
        let generator = try await loadedGenerator()
        let vocabulary = generator.model.options.vocabSize
        if let bad = ids.first(where: { $0 < 0 || Int($0) >= vocabulary }) {
            throw ProviderError(
                .invalidRequest, provider: id, message: "token id \(bad) is outside the vocabulary (0..<\(vocabulary))")
        }
        return generator.model.tokenizer.decode(ids)
    }

    /// The length in tokens of the prompt `input` becomes (the chat template or dialogue applied,
    /// as ``generate(_:options:topLogprobs:)`` renders it), for budgeting before generating.
    /// - Throws: `ProviderError` `.contextLengthExceeded` when it cannot fit the context
    ///   (refused before a prompt of megabytes is all tokenized).
    public func promptTokenCount(_ input: LocalInput) async throws -> Int {
        let generator = try await loadedGenerator()
        switch input {
        case .chat(let messages):
            return try prompt(for: ChatRequest(messages: messages), generator: generator).tokens.count
        case .text(let text):
            return try encodeWithin(text, limit: generator.context - 1, generator: generator).count
        }
    }

    /// The length in tokens of the prompt `request` becomes (its tools described as the model
    /// reads them, as ``stream(_:)`` renders it), for counting before generating.
    /// - Throws: `ProviderError` (`.invalidRequest` for bad tools or tool results,
    ///   `.contextLengthExceeded` when it cannot fit the context).
    public func promptTokenCount(_ request: ChatRequest) async throws -> Int {
        let generator = try await loadedGenerator()
        do {
            try request.options.validateTools()
            try request.messages.validateToolResults()
        } catch {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        }
        return try prompt(for: request, generator: generator).tokens.count
    }

    /// Decides when a tokenized request may join the model's queue: called once the prompt is
    /// tokenized and checked, generation waits until it returns, and the closure it returns is
    /// called exactly once when the sequence has ended (its slot is free), failed or was
    /// cancelled. A server uses it to release requests to the model fairly between its clients;
    /// throwing (e.g. `CancellationError` while waiting) ends the generation with that error.
    public typealias Admission = @Sendable () async throws -> @Sendable () -> Void

    /// Streams a generation with per-token detail. Cancelling the consumer (or dropping the
    /// stream) stops the sequence within one step. A prompt that does not fit the context
    /// throws `ProviderError` `.contextLengthExceeded` with both counts (never truncated).
    /// With `admission`, the request waits for it after `.promptTokens` (see ``Admission``).
    public func generate(_ input: LocalInput, options: GenerationOptions, topLogprobs: Int = 0, admission: Admission? = nil)
        -> AsyncThrowingStream<LocalEvent, Error>
    {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await self.serveDetailed(
                        input, options: options, topLogprobs: topLogprobs, admission: admission, into: continuation)
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: self.providerError(error))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func serveDetailed(
        _ input: LocalInput, options: GenerationOptions, topLogprobs: Int, admission: Admission?,
        into continuation: AsyncThrowingStream<LocalEvent, Error>.Continuation
    ) async throws {
        let started = DispatchTime.now()
        let generator = try await loadedGenerator()
        try Task.checkCancellation()
        let tokens: [Int32]
        let request: ChatRequest
        switch input {
        case .chat(let messages):
            request = ChatRequest(messages: messages, options: options)
            tokens = try prompt(for: request, generator: generator).tokens
        case .text(let text):
            request = ChatRequest(messages: [], options: options, continuation: "")
            tokens = try encodeWithin(text, limit: generator.context - 1, generator: generator)
            guard !tokens.isEmpty else {
                throw ProviderError(.invalidRequest, provider: id, message: "the prompt is empty")
            }
            guard tokens.count < generator.context else {
                throw ProviderError(
                    .contextLengthExceeded(tokens: tokens.count, limit: generator.context), provider: id,
                    message: "the prompt is \(tokens.count) tokens but the context holds \(generator.context)")
            }
        }
        // Parameters first: a schema that cannot be compiled is refused before the prompt is announced.
        var parameters = try parametersFor(request, promptTokens: tokens.count, generator: generator)
        continuation.yield(.promptTokens(tokens.count))
        if case .text = input { parameters.stripLeadingSpace = false }
        parameters.topLogprobs = max(0, topLogprobs)
        let tokenizer = generator.model.tokenizer
        func piece(_ id: Int32) -> String { String(decoding: tokenizer.bytes(of: id) ?? [], as: UTF8.self) }
        // Wait for the caller's go-ahead (its fair share of the slots), holding it until the
        // sequence has ended.
        let release = try await admission?()
        defer { release?() }
        try Task.checkCancellation()
        var firstToken: Double?
        var scanner = toolScanner(request, generator: generator)
        func emitCalls(_ outputs: [ToolCallScanner.Output]) -> String {
            var text = ""
            for output in outputs {
                switch output {
                case .text(let piece): text += piece
                case .call(let step): continuation.yield(.toolCall(step))
                }
            }
            return text
        }
        // Set when the reply repeats a call exactly: the sequence stops like a cancellation and
        // still ends with its summary, reported as the calls' end.
        let stopped = CancellationFlag()
        for try await event in generator.generate(prompt: tokens, parameters: parameters, stop: stopped) {
            switch event {
            case .token(let token):
                if firstToken == nil {
                    firstToken = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
                }
                // With tools, the scanner splits the text: calls go out as their own events
                // (after this token's event), text stays on the token.
                var callEvents: [ToolCallScanner.Output] = []
                var text = token.text
                if scanner != nil {
                    let outputs = scanner?.feed(token.text) ?? []
                    text = outputs.reduce(into: "") { if case .text(let piece) = $1 { $0 += piece } }
                    callEvents = outputs.filter { if case .call = $0 { true } else { false } }
                    if scanner?.repeatedCall == true { stopped.set() }
                }
                continuation.yield(
                    .token(
                        LocalToken(
                            text: text, piece: piece(token.id), logprob: Double(token.logprob),
                            topLogprobs: token.topLogprobs.map { (piece($0.id), Double($0.logprob)) })))
                _ = emitCalls(callEvents)
            case .done(let summary):
                let rest = emitCalls(scanner?.finish() ?? [])
                if !rest.isEmpty {
                    continuation.yield(.token(LocalToken(text: rest, piece: "", logprob: 0, topLogprobs: [])))
                }
                let reason = Self.finishReason(summary.finishReason, stopped: stopped.isSet, madeCalls: scanner?.madeCalls == true)
                continuation.yield(
                    .finished(
                        Usage(
                            promptTokens: summary.promptTokens, completionTokens: summary.completionTokens,
                            cachedPromptTokens: summary.cachedPromptTokens, timeToFirstToken: firstToken,
                            tokensPerSecond: summary.decodeTokensPerSecond > 0 ? summary.decodeTokensPerSecond : nil),
                        reason))
            }
        }
    }
}
