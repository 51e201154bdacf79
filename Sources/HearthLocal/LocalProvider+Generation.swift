import Foundation
import HearthConstraints
import HearthEngine
import HearthProviders
import HearthTokenizers
import Synchronization

// The one local generation loop (issue 60): every way to generate with a local model — the
// provider protocol's `stream(_:)`, the server's `generate(_:options:…)` with or without
// choices, `complete(_:choices:)` — is `serveChoices` below. A generated token enters it as the
// engine's `ChoiceEvent` (`Generator+Choices.swift`), becomes a `LocalEvent` in
// `LocalChoiceTranslator`, and leaves as what the caller reads (a `ChatEvent` for the provider
// protocol, or the `LocalChoiceEvent` the server turns into its `RouteEvent`). docs/ARCHITECTURE.md
// follows one token through.

extension LocalProvider {
    /// Streams the reply to `request` as the provider protocol's events: the provider, the
    /// reply's reasoning, text and tool calls as they are generated, then its usage and finish
    /// reason. Cancelling the consumer (or dropping the stream) stops the sequence within one
    /// step. Errors are `ProviderError`s.
    public func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> {
        stream { emit in
            emit(.servedBy(self.id))
            let events = ChatEvents(provider: self.id, emit: emit)
            try await self.serveChoices(request, rawText: nil, count: 1, topLogprobs: nil, admission: nil, emit: events.take)
        }
    }

    /// Streams a generation with per-token detail; `topLogprobs` nil when no log-probabilities
    /// are wanted (each token's `logprob` is then NaN and their normaliser is not computed,
    /// `GenerationParameters.logprobs`), else how many alternatives each token lists (0 for
    /// its own log-probability only). Cancelling the consumer (or dropping the
    /// stream) stops the sequence within one step. A prompt that does not fit the context
    /// throws `ProviderError` `.contextLengthExceeded` with both counts (never truncated).
    /// With `admission`, the request waits for it before its schema or grammar is compiled and
    /// `.promptTokens` is sent (see ``Admission``).
    public func generate(_ input: LocalInput, options: ChatOptions, topLogprobs: Int? = nil, admission: Admission? = nil)
        -> AsyncThrowingStream<LocalEvent, Error>
    {
        generate(input, options: options, checked: false, topLogprobs: topLogprobs, admission: admission)
    }

    /// ``generate(_:options:topLogprobs:admission:)`` of options the caller has checked
    /// (`ChatOptions.validate()`) when `checked`: the server checks each request once, as
    /// it parses it.
    package func generate(
        _ input: LocalInput, options: ChatOptions, checked: Bool, topLogprobs: Int? = nil, admission: Admission? = nil
    ) -> AsyncThrowingStream<LocalEvent, Error> {
        let (request, text) = Self.request(for: input, options: options, checked: checked)
        return stream { emit in
            try await self.serveChoices(
                request, rawText: text, count: 1, topLogprobs: topLogprobs, admission: admission, emit: { emit($0.event) })
        }
    }

    /// Streams `choices` continuations of one prompt (OpenAI's `n`), with per-token detail: the
    /// prompt is processed once and every choice continues from it, decoded together in the
    /// batch. Choice `i` samples with `options.seed + i` (each its own random seed when there is
    /// none), follows the same stop strings, format and tools, and ends with its own `.finished`
    /// (its usage counts the prompt; `cachedPromptTokens` shows the choices that reused it). The
    /// stream ends after the last choice; a failure ends it for all. `admission` is asked once
    /// per wave of at most `parallel` choices (once when `choices` is at most `parallel`).
    /// - Throws: `ProviderError` `.invalidRequest` when `choices` is outside 1...``maxChoices``,
    ///   as ``generate(_:options:topLogprobs:admission:)`` otherwise.
    public func generate(
        _ input: LocalInput, options: ChatOptions, choices: Int, topLogprobs: Int? = nil, admission: Admission? = nil
    ) -> AsyncThrowingStream<LocalChoiceEvent, Error> {
        generate(input, options: options, checked: false, choices: choices, topLogprobs: topLogprobs, admission: admission)
    }

    /// ``generate(_:options:choices:topLogprobs:admission:)`` of options the caller has
    /// checked when `checked` (see ``generate(_:options:checked:topLogprobs:admission:)``).
    package func generate(
        _ input: LocalInput, options: ChatOptions, checked: Bool, choices: Int, topLogprobs: Int? = nil,
        admission: Admission? = nil
    ) -> AsyncThrowingStream<LocalChoiceEvent, Error> {
        let (request, text) = Self.request(for: input, options: options, checked: checked)
        return stream { emit in
            try await self.serveChoices(request, rawText: text, count: choices, topLogprobs: topLogprobs, admission: admission, emit: emit)
        }
    }

    /// The request an input stands for, and its raw text (`/v1/completions`), if any.
    private static func request(for input: LocalInput, options: ChatOptions, checked: Bool) -> (ChatRequest, String?) {
        var request: ChatRequest
        var text: String?
        switch input {
        case .chat(let messages): request = ChatRequest(messages: messages, options: options)
        case .text(let raw): (request, text) = (ChatRequest(messages: [], options: options, continuation: ""), raw)
        }
        request.optionsChecked = checked
        return (request, text)
    }

    /// A stream fed by `body` on a task of its own; the consumer's cancellation cancels it and
    /// errors reach the consumer as `ProviderError`.
    func stream<Event: Sendable>(
        _ body: @escaping @Sendable (_ emit: @escaping @Sendable (Event) -> Void) async throws -> Void
    ) -> AsyncThrowingStream<Event, Error> {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await body { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: self.providerError(error))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The one local generation loop every entry point is derived from (``stream(_:)``,
    /// ``generate(_:options:choices:topLogprobs:admission:)`` and its one-choice form, the
    /// raw-text completion, ``complete(_:choices:)``): the model held, the prompt
    /// tokenized, the caller's turn taken, the parameters compiled, then `count` choices run in
    /// waves and their tokens turned into events (``LocalChoiceTranslator``).
    func serveChoices(
        _ request: ChatRequest, rawText: String?, count: Int, topLogprobs: Int?, admission: Admission?,
        emit: @escaping @Sendable (LocalChoiceEvent) -> Void
    ) async throws {
        let started = DispatchTime.now()
        guard (1...Self.maxChoices).contains(count) else {
            throw ProviderError(
                .invalidRequest, provider: id, message: "choices must be between 1 and \(Self.maxChoices), got \(count)",
                underlying: InvalidGenerationOption(field: "n", message: "must be between 1 and \(Self.maxChoices)"))
        }
        let (generator, hold) = try await heldGenerator()
        defer { hold?.end() }  // the model stays loaded until the choices have ended
        try Task.checkCancellation()
        let (tokens, dropped) = try promptTokens(request, rawText: rawText, generator: generator)
        // Wait for the caller's go-ahead (its fair share of the slots), holding it until the
        // sequences have ended: a schema or grammar is compiled within the caller's turn. `n`
        // choices take `n` slots: at most `parallel` at once, the rest in later waves, each after
        // a turn of its own (``choiceWaves(_:prompt:choices:stops:wave:turn:admission:)``).
        let wave = max(1, min(count, configuration.parallel))
        let turn = HeldTurn(try await admission?(wave))
        defer { turn.end() }
        try Task.checkCancellation()
        // Parameters before the prompt is announced, so a schema that cannot be compiled is
        // refused before any output; compiled on the compile threads, off the cooperative pool.
        let promptCount = tokens.count
        var parameters = try await ConstraintCompiler.run {
            try self.parametersFor(request, promptTokens: promptCount, generator: generator)
        }
        try applyReasoning(request, prompt: tokens, rawText: rawText != nil, to: &parameters, generator: generator)
        try Task.checkCancellation()
        emit(LocalChoiceEvent(choice: 0, event: .promptTokens(tokens.count)))
        if dropped > 0 { emit(LocalChoiceEvent(choice: 0, event: .contextTruncated(droppedMessages: dropped))) }
        if rawText != nil { parameters.stripLeadingSpace = false }
        parameters.topLogprobs = max(0, topLogprobs ?? 0)
        parameters.logprobs = topLogprobs != nil
        let scanners = (0..<count).map { _ in toolScanner(request, generator: generator) }
        // `endsRepetitiveReplies` (`hearth chat`): a reply that repeats itself is ended; never a
        // constrained one or one that may call tools (the guard would cut it mid-object).
        let guarded =
            configuration.endsRepetitiveReplies && rawText == nil && request.options.constrainedFormat == nil
            && scanners.allSatisfy { $0 == nil }
        var translator = LocalChoiceTranslator(
            count: count, parameters: parameters, tokenizer: generator.model.tokenizer, scanners: scanners, guarded: guarded,
            started: started, emit: emit)
        // Per choice its seed.
        let choices = (0..<count).map { index in
            var choice = parameters
            choice.sampling.seed = parameters.sampling.seed.map { $0 &+ UInt64(index) }
            return choice
        }
        let waves = choiceWaves(
            generator, prompt: tokens, choices: choices, stops: translator.stops, wave: wave, turn: turn, admission: admission)
        for try await item in waves {
            switch item.event {
            case .token(let token): translator.token(token, choice: item.choice)
            case .done(let summary): translator.done(summary, choice: item.choice)
            }
        }
    }

    /// The prompt's tokens: `rawText` as it is (a completion), else `request` rendered through
    /// the chat template (with the number of its oldest turns dropped to fit, when the request
    /// allows truncation); within the context, never empty.
    private func promptTokens(_ request: ChatRequest, rawText: String?, generator: Generator) throws -> (tokens: [Int32], dropped: Int) {
        guard let text = rawText else { return try prompt(for: request, generator: generator) }
        let tokens = try encodeWithin(text, limit: generator.context - 1, generator: generator)
        guard !tokens.isEmpty else {
            throw ProviderError(.invalidRequest, provider: id, message: "the prompt is empty")
        }
        guard tokens.count < generator.context else {
            throw ProviderError(
                .contextLengthExceeded(tokens: tokens.count, limit: generator.context), provider: id,
                message: "the prompt is \(tokens.count) tokens but the context holds \(generator.context)")
        }
        return (tokens, 0)
    }

    /// A request's choices (OpenAI's `n`) in waves of at most `parallel` sequences, each wave after
    /// a turn of its own: `n` choices take `n` slots, and a request cannot hold more slots than the
    /// model has while its other choices wait in the engine's queue ahead of other clients.
    /// The admission a request holds now (given back once, at the latest when the request ends).
    final class HeldTurn: @unchecked Sendable {
        // `@unchecked Sendable`: `release` is only touched under `lock`.
        private let lock = NSLock()
        private var release: (@Sendable () -> Void)?

        init(_ release: (@Sendable () -> Void)?) { self.release = release }

        /// Gives the turn back (later calls do nothing until ``hold(_:)``).
        func end() {
            let pending: (@Sendable () -> Void)? = lock.withLock {
                defer { release = nil }
                return release
            }
            pending?()
        }

        /// Holds the next turn.
        func hold(_ next: (@Sendable () -> Void)?) {
            let previous: (@Sendable () -> Void)? = lock.withLock {
                defer { release = next }
                return release
            }
            previous?()
        }
    }

    /// Streams `choices` of one prompt in waves of `wave` (the first `wave` run under `turn`,
    /// already held; before each later wave the last turn is given back and `admission` asked
    /// again for as many slots as the wave has — so other clients' requests waiting for a turn go
    /// between the waves). A later wave reuses the prompt the model's cache holds (only its
    /// last token is recomputed). Cancelling the consumer stops the current wave.
    func choiceWaves(
        _ generator: Generator, prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag], wave: Int,
        turn: HeldTurn, admission: Admission?
    ) -> AsyncThrowingStream<ChoiceEvent, Error> {
        let wave = max(1, wave)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    var start = 0
                    while start < choices.count {
                        try Task.checkCancellation()  // a cancelled wave's stream just ends
                        let end = min(choices.count, start + wave)
                        if start > 0 {
                            turn.end()
                            turn.hold(try await admission?(end - start))
                            try Task.checkCancellation()
                        }
                        let waveStops: [CancellationFlag?] = Array(stops[start..<end])
                        for try await item in generator.generate(prompt: prompt, choices: Array(choices[start..<end]), stops: waveStops) {
                            continuation.yield(ChoiceEvent(choice: start + item.choice, event: item.event))
                        }
                        start = end
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// The second half of ``LocalProvider``'s one generation loop: each choice's generated tokens
/// turned into the events a caller reads — text split from tool calls by the choice's scanner,
/// each token's piece as it stands in the reply (so the log-probability tokens join to exactly
/// the text), a reply that repeats itself ended (`hearth chat`), the time to the first token, and
/// the choice's end with its usage and reason.
struct LocalChoiceTranslator {
    let tokenizer: any Tokenizer
    let started: DispatchTime
    let emit: @Sendable (LocalProvider.LocalChoiceEvent) -> Void
    /// Per choice: what its pieces still drop at their start — the reply's first space
    /// (SentencePiece's dummy prefix, on the first token with bytes) and, with a tool-call
    /// scanner, the reply's leading white space; the alternatives at those positions lose the same.
    var trims: [(space: Bool, whitespace: Bool)]
    /// Per choice: the tool-call scanner (nil without tools).
    var scanners: [ToolCallScanner?]
    /// Per choice: the repetition guard (nil unless the provider ends repetitive replies).
    var guards: [RepetitionGuard?]
    /// Per choice: set when the reply repeats a call exactly, or its guard ended it — the
    /// sequence stops like a cancellation and still ends with its summary, reported as the
    /// calls' end (or `stop`).
    let stops: [CancellationFlag]
    var firstToken: Double?

    init(
        count: Int, parameters: GenerationParameters, tokenizer: any Tokenizer, scanners: [ToolCallScanner?], guarded: Bool,
        started: DispatchTime, emit: @escaping @Sendable (LocalProvider.LocalChoiceEvent) -> Void
    ) {
        self.tokenizer = tokenizer
        self.started = started
        self.emit = emit
        self.scanners = scanners
        trims = scanners.map { (space: parameters.stripLeadingSpace && parameters.constraint == nil, whitespace: $0 != nil) }
        stops = (0..<count).map { _ in CancellationFlag() }
        guards = (0..<count).map { _ in guarded ? RepetitionGuard() : nil }
    }

    /// `id`'s bytes as they stand in the reply under `trim`.
    func pieceBytes(_ id: Int32, _ trim: (space: Bool, whitespace: Bool)) -> [UInt8] {
        var bytes = tokenizer.bytes(of: id) ?? []
        if trim.space, bytes.first == 0x20 { bytes.removeFirst() }
        if trim.whitespace { bytes = Array(bytes.drop { $0 == 0x20 || (0x09...0x0d).contains($0) }) }
        return bytes
    }

    func piece(_ id: Int32, _ trim: (space: Bool, whitespace: Bool)) -> String {
        String(decoding: pieceBytes(id, trim), as: UTF8.self)
    }

    /// Emits the scanner's calls as their own events and returns its text.
    func emitCalls(_ outputs: [ToolCallScanner.Output], choice: Int) -> String {
        var text = ""
        for output in outputs {
            switch output {
            case .text(let piece): text += piece
            case .call(let step): emit(LocalProvider.LocalChoiceEvent(choice: choice, event: .toolCall(step)))
            }
        }
        return text
    }

    /// One generated token of choice `index`: its event, then any call the scanner completed.
    mutating func token(_ token: GeneratedToken, choice index: Int) {
        if firstToken == nil {
            firstToken = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        }
        // The guard ended this reply: what the sequence writes until it stops is not shown.
        if guards[index] != nil, stops[index].isSet { return }
        // With tools, the scanner splits the text: calls go out as their own events (after this
        // token's event), text stays on the token.
        var callEvents: [ToolCallScanner.Output] = []
        var text = token.text
        if scanners[index] != nil {
            let outputs = scanners[index]?.feed(token.text) ?? []
            text = outputs.reduce(into: "") { if case .text(let piece) = $1 { $0 += piece } }
            callEvents = outputs.filter { if case .call = $0 { true } else { false } }
            if scanners[index]?.repeatedCall == true { stops[index].set() }
        }
        if var guarding = guards[index] {
            text = guarding.feed(text)
            if guarding.stopped { stops[index].set() }
            guards[index] = guarding
        }
        let trim = trims[index]
        // A control token (the end token) adds no text: its listing is empty; so does a token of
        // the reasoning block, which is not the reply's text.
        let tokenBytes = tokenizer.isSpecial(token.id) || token.inReasoning ? [] : pieceBytes(token.id, trim)
        let tokenPiece = String(decoding: tokenBytes, as: UTF8.self)
        if trim.space, !tokenizer.isSpecial(token.id), !(tokenizer.bytes(of: token.id) ?? []).isEmpty { trims[index].space = false }
        if trim.whitespace, tokenPiece.contains(where: { !$0.isWhitespace }) { trims[index].whitespace = false }
        // The answer after a reasoning block starts without white space (the separator).
        if token.endsReasoning, token.text.isEmpty { trims[index].whitespace = true }
        emit(
            LocalProvider.LocalChoiceEvent(
                choice: index,
                event: .token(
                    LocalProvider.LocalToken(
                        text: text, piece: tokenPiece, bytes: tokenBytes, logprob: Double(token.logprob),
                        topLogprobs: token.topLogprobs.map { (piece($0.id, trim), Double($0.logprob)) },
                        reasoning: token.reasoning, endsReasoning: token.endsReasoning))))
        _ = emitCalls(callEvents, choice: index)
    }

    /// Choice `index` ended: what the guard or the scanner held back, then its end with usage
    /// and reason.
    mutating func done(_ summary: GenerationSummary, choice index: Int) {
        let held = guards[index]?.finish() ?? ""
        let rest = held + emitCalls(scanners[index]?.finish() ?? [], choice: index)
        if !rest.isEmpty {
            emit(LocalProvider.LocalChoiceEvent(choice: index, event: .token(LocalProvider.LocalToken(text: rest, piece: "", logprob: 0, topLogprobs: []))))
        }
        let reason = LocalProvider.finishReason(
            summary.finishReason, stopped: stops[index].isSet, madeCalls: scanners[index]?.madeCalls == true)
        let usage = LocalProvider.usage(summary, timeToFirstToken: firstToken)
        emit(LocalProvider.LocalChoiceEvent(choice: index, event: .finished(usage, reason)))
    }
}

/// A local reply's reasoning pieces gathered into the part that ends its block: handed each
/// token, it gives the token's piece and, when the block closes with it, the block's whole
/// text; ``finish()`` ends a block the reply did not close (cut by its length). The provider
/// protocol's events (``ChatEvents``) and the server's route events are both made from it.
package struct LocalReasoningCollector: Sendable {
    private var text = ""
    private var open = false

    package init() {}

    /// `token`'s reasoning piece (nil when it has none) and the block's whole text when it
    /// closed with `token`.
    package mutating func take(_ token: LocalProvider.LocalToken) -> (piece: String?, ended: String?) {
        var piece: String?
        if !token.reasoning.isEmpty {
            text += token.reasoning
            open = true
            piece = token.reasoning
        }
        guard token.endsReasoning else { return (piece, nil) }
        open = false
        return (piece, text)
    }

    /// The whole text of a block still open when the reply ends.
    package mutating func finish() -> String? {
        guard open else { return nil }
        open = false
        return text
    }
}

/// The provider protocol's events (``ChatEvent``) of one local reply, from the loop's events:
/// reasoning deltas and the part that ends them, text, tool calls, then usage and the finish
/// reason. The loop calls ``take(_:)`` from one task, one event after another.
final class ChatEvents: Sendable {
    private let provider: String
    private let emit: @Sendable (ChatEvent) -> Void
    private let reasoning = Mutex(LocalReasoningCollector())

    init(provider: String, emit: @escaping @Sendable (ChatEvent) -> Void) {
        self.provider = provider
        self.emit = emit
    }

    @Sendable func take(_ item: LocalProvider.LocalChoiceEvent) {
        switch item.event {
        case .promptTokens:
            break
        case .contextTruncated(let dropped):
            emit(.contextTruncated(droppedMessages: dropped))
        case .token(let token):
            let (piece, ended) = reasoning.withLock { $0.take(token) }
            if let piece { emit(.reasoningDelta(piece)) }
            if let ended { emit(.reasoningEnded(ReasoningPart(text: ended, provider: provider))) }
            if !token.text.isEmpty { emit(.textDelta(token.text)) }
        case .toolCall(let step):
            emit(.toolCall(step))
        case .finished(let usage, let reason):
            if let ended = reasoning.withLock({ $0.finish() }) { emit(.reasoningEnded(ReasoningPart(text: ended, provider: provider))) }
            emit(.usage(usage))
            emit(.finished(reason))
        }
    }
}
