import Foundation
import HearthConstraints
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
        /// The token's bytes as they stand in the reply (the reply's dropped leading space or
        /// white space left out; none for a control token such as the end token, which adds no
        /// text): a listing of the tokens joins to exactly the reply (``piece`` is their UTF-8
        /// decoding, U+FFFD where a token holds part of a character).
        public var bytes: [UInt8] = []
        /// log p(token) (NaN when no log-probabilities were asked for).
        public var logprob: Double
        /// The most likely alternatives (piece, log p), when asked for.
        public var topLogprobs: [(piece: String, logprob: Double)]
        /// Reasoning text this token completed (a reasoning model's block), never in ``text``.
        public var reasoning = ""
        /// Whether the reasoning block closed with this token: the reply's reasoning part is
        /// complete (the server ends its reasoning item or block here).
        public var endsReasoning = false
    }

    /// Events of ``LocalProvider/generate(_:options:topLogprobs:admission:)``.
    public enum LocalEvent: Sendable {
        /// The prompt was tokenized and admitted: its length in tokens.
        case promptTokens(Int)
        /// A generated token. While the model writes a tool call its `text` is empty: the call
        /// arrives as ``toolCall(_:)`` events instead, never as text.
        case token(LocalToken)
        /// A step of a tool call (when the options carry tools): its start, a piece of its
        /// arguments, its end.
        case toolCall(ToolCallEvent)
        /// The conversation's oldest turns were dropped to fit the context (only when the
        /// request allows truncation, `ChatRequest.allowTruncation`); after ``promptTokens(_:)``.
        case contextTruncated(droppedMessages: Int)
        /// Generation ended: counts and why.
        case finished(Usage, HearthProviders.FinishReason)
    }

    /// Requests running and waiting for a sequence slot (nil before the model has loaded).
    package var schedulerLoad: (running: Int, waiting: Int)? { generatorIfLoaded?.load }

    /// Share of the KV cache's positions in use, 0…1 (nil before the model has loaded).
    package var kvCacheUsage: Double? { generatorIfLoaded?.cacheUsage }

    /// The scheduler's forward steps and the sequences and tokens they held since the model
    /// loaded (`Generator.stepStatistics`: busy slots per step is the batch's occupancy); nil
    /// before it loads.
    package var stepStatistics: (steps: Int, sequences: Int, tokens: Int)? {
        generatorIfLoaded.map { let totals = $0.stepStatistics; return (totals.steps, totals.sequences, totals.tokens) }
    }

    /// The KV cache's storage: its type, bytes allocated (all slots) and bytes per token (nil
    /// before the model has loaded).
    package var kvCacheStorage: (type: String, bytes: Int, bytesPerToken: Int)? {
        generatorIfLoaded.map { ($0.cacheType.rawValue, $0.cacheBytes, $0.cacheBytesPerToken) }
    }

    /// Sequences decoded at once (the configured `parallel`).
    package var parallelSequences: Int { configuration.parallel }

    /// The vocabulary size once the model is loaded.
    package var loadedVocabularySize: Int? { generatorIfLoaded?.model.options.vocabSize }

    /// What ``tokenize(_:addSpecialTokens:limit:pieces:admission:)`` found.
    public struct Tokenization: Sendable {
        /// The ids, or nil when the text has more than the limit.
        public var ids: [Int32]?
        /// Each id's bytes as it stands in text (``tokenPieces(_:admission:)``), when asked for.
        public var pieces: [[UInt8]]?
        /// The model's context in tokens.
        public var context: Int
    }

    /// Tokenizes `text` with the model's tokenizer (loading it first if needed), with each
    /// id's bytes when `pieces` is set — unless it has more than `limit` ids: then `ids` is nil,
    /// found without tokenizing all of it where the tokenizer can stop early, or at once when
    /// the text is longer in bytes than `limit` of the vocabulary's longest tokens. With
    /// `admission`, the tokenizing waits for it (the model is held meanwhile, see
    /// ``Admission``); it runs on a thread of its own, off the cooperative pool.
    /// - Throws: `ProviderError` (`.modelUnavailable`, `.cancelled`, a tokenizer's error).
    public func tokenize(_ text: String, addSpecialTokens: Bool, limit: Int, pieces: Bool = false, admission: Admission? = nil)
        async throws -> Tokenization
    {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        let release = try await admission?(1)
        defer { release?() }
        try Task.checkCancellation()
        let context = generator.context
        if Self.trimmedByteCount(text) / longestTokenBytes(generator) > limit { return Tokenization(ids: nil, context: context) }
        let tokenizer = generator.model.tokenizer
        do {
            return try await Self.detached {
                guard let ids = try tokenizer.encode(text, addSpecialTokens: addSpecialTokens, limit: limit) else {
                    return Tokenization(ids: nil, context: context)
                }
                return Tokenization(ids: ids, pieces: pieces ? ids.map { Self.piece($0, tokenizer) } : nil, context: context)
            }
        } catch {
            throw providerError(error)
        }
    }

    /// Tokenizes `text` with the model's tokenizer (loading it first if needed), unbounded.
    /// - Throws: `ProviderError`.
    public func tokenize(_ text: String, addSpecialTokens: Bool) async throws -> [Int32] {
        try await tokenize(text, addSpecialTokens: addSpecialTokens, limit: Int.max).ids ?? []
    }

    /// Each token's bytes as it stands in text (`▁` as a space, `<0xNN>` as that byte; a control
    /// token as it is written, such as `<eos>`), for `/tokenize` with pieces.
    /// - Throws: `ProviderError` `.invalidRequest` when an id is outside the vocabulary.
    public func tokenPieces(_ ids: [Int32], admission: Admission? = nil) async throws -> [[UInt8]] {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        let release = try await admission?(1)
        defer { release?() }
        try checkVocabulary(ids, generator)
        let tokenizer = generator.model.tokenizer
        return ids.map { Self.piece($0, tokenizer) }
    }

    /// A token's bytes as it stands in text (a control token as it is written).
    static func piece(_ id: Int32, _ tokenizer: any Tokenizer) -> [UInt8] {
        tokenizer.bytes(of: id) ?? Array((tokenizer.token(id) ?? "").utf8)
    }

    /// Decodes token ids to text (special tokens skipped), after `admission` when given (the
    /// model held meanwhile).
    /// - Throws: `ProviderError` `.invalidRequest` when an id is outside the vocabulary.
    public func detokenize(_ ids: [Int32], admission: Admission? = nil) async throws -> String {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        let release = try await admission?(1)
        defer { release?() }
        try checkVocabulary(ids, generator)
        return generator.model.tokenizer.decode(ids)
    }

    /// Refuses ids outside the vocabulary.
    private func checkVocabulary(_ ids: [Int32], _ generator: Generator) throws {
        let vocabulary = generator.model.options.vocabSize
        if let bad = ids.first(where: { $0 < 0 || Int($0) >= vocabulary }) {
            throw ProviderError(
                .invalidRequest, provider: id, message: "token id \(bad) is outside the vocabulary (0..<\(vocabulary))")
        }
    }

    /// The length in tokens of the prompt `input` becomes (the chat template or dialogue applied,
    /// as ``generate(_:options:topLogprobs:admission:)`` renders it), for budgeting before generating.
    /// - Throws: `ProviderError` `.contextLengthExceeded` when it cannot fit the context
    ///   (refused before a prompt of megabytes is all tokenized).
    public func promptTokenCount(_ input: LocalInput) async throws -> Int {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        switch input {
        case .chat(let messages):
            return try prompt(for: ChatRequest(messages: messages), generator: generator).tokens.count
        case .text(let text):
            return try encodeWithin(text, limit: generator.context - 1, generator: generator).count
        }
    }

    /// The length in tokens of the prompt `request` becomes (its tools described as the model
    /// reads them, as ``stream(_:)`` renders it), for counting before generating; after
    /// `admission` when given (the model held meanwhile).
    /// - Throws: `ProviderError` (`.invalidRequest` for bad tools or tool results,
    ///   `.contextLengthExceeded` when it cannot fit the context).
    public func promptTokenCount(_ request: ChatRequest, admission: Admission? = nil) async throws -> Int {
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }
        do {
            try request.options.validateTools()
            try request.messages.validateToolResults()
        } catch {
            throw ProviderError(.invalidRequest, provider: id, message: error.message, underlying: error)
        }
        let release = try await admission?(1)
        defer { release?() }
        try Task.checkCancellation()
        return try await Self.detached { try self.prompt(for: request, generator: generator).tokens.count }
    }

    /// Decides when a tokenized request may join the model's queue: called with the sequence
    /// slots the work needs now (1; a wave of a request's choices, at most `parallel`) once the
    /// prompt is tokenized and checked, generation waits until it returns, and the closure it
    /// returns is called exactly once when those sequences have ended (their slots are free),
    /// failed or were cancelled. A request of more choices than `parallel` calls it again before
    /// each later wave. A server uses it to release requests to the model fairly between its
    /// clients; throwing (e.g. `CancellationError` while waiting) ends the generation with that
    /// error.
    public typealias Admission = @Sendable (_ slots: Int) async throws -> @Sendable () -> Void

    /// One event of one choice of ``generate(_:options:choices:topLogprobs:admission:)``.
    public struct LocalChoiceEvent: Sendable {
        /// The choice it belongs to, 0 ..< the number of choices (`.promptTokens` comes once, as choice 0).
        public var choice: Int
        public var event: LocalEvent
    }

    /// The most choices one request may ask for (OpenAI's `n`).
    public static var maxChoices: Int { Generator.maxChoices }

    /// `choices` replies to one conversation, the prompt processed once (see
    /// ``generate(_:options:choices:topLogprobs:admission:)``): each reply's text, tool calls,
    /// usage and finish reason, in choice order.
    /// - Throws: `ProviderError`.
    public func complete(_ request: ChatRequest, choices: Int) async throws -> [ChatResponse] {
        let events = stream { emit in
            try await self.serveChoices(request, rawText: nil, count: choices, topLogprobs: nil, admission: nil, emit: emit)
        }
        var replies = (0..<max(0, choices)).map { _ in
            (text: "", calls: ToolCallCollector(), usage: Usage?.none, reason: HearthProviders.FinishReason.stop, reasoning: "",
             reasoned: false)
        }
        for try await item in events where replies.indices.contains(item.choice) {
            switch item.event {
            case .promptTokens, .contextTruncated: break
            case .token(let token):
                replies[item.choice].text += token.text
                replies[item.choice].reasoning += token.reasoning
                if token.endsReasoning || !token.reasoning.isEmpty { replies[item.choice].reasoned = true }
            case .toolCall(let step): replies[item.choice].calls.add(step)
            case .finished(let usage, let reason):
                replies[item.choice].usage = usage
                replies[item.choice].reason = reason
            }
        }
        return replies.map {
            ChatResponse(
                text: $0.text, toolCalls: $0.calls.calls, usage: $0.usage, finishReason: $0.reason, provider: id,
                reasoning: $0.reasoned ? [reasoningPart($0.reasoning)] : [])
        }
    }

}
