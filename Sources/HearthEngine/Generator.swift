import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

/// What to generate.
public struct GenerationParameters: Sendable {
    /// Stop after this many new tokens.
    public var maxTokens: Int = 256
    /// How to pick tokens.
    public var sampling = SamplingOptions()
    /// Stop when the text contains any of these (the stop string is not emitted).
    public var stop: [String] = []
    /// Report the log-probabilities of this many most likely tokens at each step.
    public var topLogprobs: Int = 0
    /// Drop the first token's leading space (replies that start after a chat template). Off
    /// while a constraint is set: the constraint sees exactly the bytes that are output.
    public var stripLeadingSpace = false
    /// Structured output: only tokens this compiled grammar allows are sampled, end-of-sequence
    /// only where the grammar is complete, and generation stops (`.stop`) once nothing but the
    /// end may follow. The token limit may still cut the output short (`.length`).
    /// Each sequence follows it with its own matcher. See `LanguageModel.compileConstraint`.
    public var constraint: CompiledConstraint?
    /// Bytes the constraint has already seen before the first generated token: a partial answer
    /// being continued (a failover mid-answer). The matcher starts after them; they must be a
    /// prefix the grammar allows (check with `ConstraintMatcher.advance(bytes:)` first).
    public var constraintPrefix: [UInt8] = []
    /// Speculative decoding (``SpeculativeMode``): prompt lookup by default. It changes how
    /// many tokens a step verifies, never which tokens are generated.
    public var speculative: SpeculativeMode = .lookup
    /// Whether each token's log-probability (``GeneratedToken/logprob``) is computed. It costs
    /// a pass of exponentials over the vocabulary per token (a tenth of a decode step of a
    /// 262k-token model), so what no one reads can be left out: false leaves `logprob` NaN.
    /// `topLogprobs` > 0 computes it either way.
    public var logprobs = true
    /// Under a constraint, finish within the token budget: a token after which the output could
    /// no longer be completed in the tokens left (`maxTokens`, the context) is replaced by the
    /// model's likeliest choice among those that keep a completion within reach, so strings
    /// close, arrays stop and optional parts are left out in time, and the answer ends complete
    /// (`.stop`) instead of cut (`.length`). It acts only on such a token: an answer that ends on
    /// its own within the budget is unchanged. False keeps the cut. The same flag turns on the
    /// repetition rule (``RepetitionRule``): a constrained output that loops is wound down the
    /// same way.
    public var finishInBudget = true
    /// A reasoning model's reasoning (``ReasoningControl``): its text is split from the answer
    /// (``GeneratedToken/reasoning``), ``constraint`` applies only after the block closes, the
    /// opening tag is not sampled again once decided, and a budget closes the block with the
    /// model's closing sequence. Nil: all text is answer.
    public var reasoning: ReasoningControl?

    public init() {}
}

/// Why generation ended.
public enum FinishReason: String, Sendable, Codable {
    /// An end-of-sequence token or a stop string.
    case stop
    /// The token limit or the context filled.
    case length
    /// The caller cancelled.
    case cancelled
}

/// One generated token.
public struct GeneratedToken: Sendable {
    public var id: Int32
    /// Text this token completed (may be empty while a multi-byte character is incomplete,
    /// or while text that may start a stop string is held back).
    public var text: String
    /// log p(token) under the model's full distribution (NaN when the request did not ask for
    /// it: ``GenerationParameters/logprobs``).
    public var logprob: Float
    /// The most likely alternatives, when requested.
    public var topLogprobs: [(id: Int32, logprob: Float)]
    /// Reasoning text this token completed (``GenerationParameters/reasoning``), never part of
    /// ``text``.
    public var reasoning = ""
    /// Whether the reasoning block closed with this token (the rest is answer).
    public var endsReasoning = false
    /// Whether this token belongs to the reasoning block (its tags, its text, the closing
    /// sequence): none of its bytes is answer.
    public var inReasoning = false
}

/// Counts and timings of a finished generation.
public struct GenerationSummary: Sendable {
    public var finishReason: FinishReason
    public var promptTokens: Int
    /// Prompt tokens that were served from the KV cache instead of being recomputed.
    public var cachedPromptTokens: Int
    public var completionTokens: Int
    public var prefillSeconds: Double
    public var decodeSeconds: Double
    /// Tokens drafted for speculative verification, and how many of them were accepted (each
    /// accepted one is a generated token that took no step of its own).
    public var draftedTokens = 0
    public var acceptedDraftTokens = 0
    /// Tokens that ``GenerationParameters/finishInBudget`` chose instead of the sampled one (0:
    /// the budget did not shape the answer).
    public var budgetShapedTokens = 0
    /// Whether the repetition rule (``RepetitionRule``) ended a constrained output that had
    /// fallen into a loop.
    public var repetitionEnded = false
    /// Of ``completionTokens``, those of the reasoning block: the opening tag, the reasoning and
    /// the closing sequence (0 without ``GenerationParameters/reasoning``).
    public var reasoningTokens = 0

    /// Prompt tokens processed per second (cached ones excluded).
    public var prefillTokensPerSecond: Double {
        prefillSeconds > 0 ? Double(promptTokens - cachedPromptTokens) / prefillSeconds : 0
    }
    /// Generated tokens per second after the first.
    public var decodeTokensPerSecond: Double {
        decodeSeconds > 0 && completionTokens > 1 ? Double(completionTokens - 1) / decodeSeconds : 0
    }
}

/// Events of a generation stream.
public enum GenerationEvent: Sendable {
    case token(GeneratedToken)
    case done(GenerationSummary)
}

/// An event of one of several continuations of a prompt
/// (``Generator/generate(prompt:choices:stops:)``): its index and the event.
public struct ChoiceEvent: Sendable {
    /// The continuation's index, 0 ..< the number of choices.
    public var choice: Int
    public var event: GenerationEvent
}

/// Runs generation on one model for one or many conversations at once (continuous batching).
///
/// Owns a `Decoder` whose KV cache has `sequences` slots. Requests queue until a slot is
/// free, then join the running batch between steps: every step decodes one token of each
/// running sequence and spends the rest of the batch on prompt chunks of new ones, so running
/// sequences keep streaming while a long prompt is processed. A new request takes the free
/// slot whose cached tokens share the longest prefix with its prompt (turn N of a conversation
/// costs only its new tokens), and a longer shared prefix held by another slot (the same
/// system prompt) is copied instead of recomputed. Each sequence samples with its own options
/// and seed; cancelling one frees its slot within a step and leaves the others untouched.
///
/// `@unchecked Sendable`: the decoder and the slot table are touched only while holding
/// `lock` (by the scheduler thread during a step, or by snapshot and scoring calls between
/// steps); the queue only under `queue`.
public final class Generator: @unchecked Sendable {
    public let model: LanguageModel
    let decoder: Decoder
    let lock = NSLock()  // internal: Generator+Snapshot.swift holds it too
    /// Per slot: the tokens whose keys and values it holds, and whether a request runs in it.
    var slots: [Slot]
    /// The slot of the most recent request (what a snapshot saves).
    var lastSequence = 0
    private var useClock: UInt64 = 0
    /// What a decode step costs per row, timed as steps run (speculative draft lengths follow it).
    private var stepCosts = StepCosts()
    /// The draft model of ``SpeculativeMode/draft``, when one was given.
    let draft: DraftModel?
    /// Prompts' keys and values kept beyond the slots (nil: no prompt cache).
    let promptCache: PromptCache?
    /// Tests: draft-model requests draft this many tokens whenever the limits allow, whatever
    /// the cost rule says (tiny test models' steps cost what the model's do, so it would not draft).
    var forcedDraftLength: Int?

    private let queue = NSLock()
    private var pending: [Job] = []
    private var active: [Job] = []  // guarded by `lock`
    private var schedulerRunning = false
    /// Requests holding a slot and positions filled, kept under `queue` so that metrics never
    /// wait for a step to end.
    private var runningCount = 0
    private var filledPositions = 0

    /// Prompt tokens a step spends on new requests while others are decoding (the rest of a
    /// prompt waits for the next step, so running sequences keep their pace).
    public var interleavedPrefillTokens = 32

    struct Slot {
        var tokens: [Int32] = []
        var busy = false
        var lastUsed: UInt64 = 0
    }

    /// Tokens per step when a caller does not choose (every command's `--batch` and
    /// `LocalProvider`'s default): llama.cpp's micro-batch, where prompt processing is fastest.
    /// A step checks for cancellation between layers, so a large batch does not delay Ctrl-C.
    public static let defaultBatch = 512

    /// Creates a generator with `sequences` KV slots of `context` tokens each (default: the
    /// model's context, capped), `threads` workers and batches of up to `batch` tokens. All
    /// slots are allocated now: `cacheBytes` is what the cache will ever take. Sliding-window
    /// layers hold a window-sized buffer per slot (``KVCache/Window``) unless `windowedCache` is
    /// false (full-length storage in every layer, as before the window cache: to compare against).
    ///
    /// `draftModel`, when given, drafts tokens for requests that ask for ``SpeculativeMode/draft``:
    /// a smaller model with the same tokenizer (checked: every token the same bytes, the same
    /// special and end tokens), with its own KV slots beside these (f16), run on the same workers.
    ///
    /// `promptCache` keeps finished requests' keys and values beyond the slots, in blocks found
    /// again by any prompt that shares a block-aligned prefix (``PromptCacheOptions``; default
    /// off here, on in `LocalProvider` and `hearth serve`). The cache belongs to this generator
    /// and its model; its disk tier, when given a directory, is keyed to the model file.
    /// - Throws: `EngineError` `.invalidOption` for sizes out of range or a draft model whose
    ///   tokenizer differs.
    public init(
        model: LanguageModel, context: Int? = nil, threads: Int? = nil, batch: Int = Generator.defaultBatch, kvType: DType = .f16,
        sequences: Int = 1, windowedCache: Bool = true, draftModel: LanguageModel? = nil,
        promptCache: PromptCacheOptions = .disabled
    ) throws {
        let context = context ?? model.defaultContext
        guard context > 0, context <= 1 << 20 else {
            throw EngineError(.invalidOption, "context must be between 1 and \(1 << 20) tokens, got \(context)")
        }
        guard batch > 0, batch <= 4096 else {
            throw EngineError(.invalidOption, "batch must be between 1 and 4096, got \(batch)")
        }
        guard sequences >= 1, sequences <= min(batch, 256) else {
            throw EngineError(
                .invalidOption, "parallel sequences must be between 1 and \(min(batch, 256)) (the batch), got \(sequences)")
        }
        self.model = model
        let pool = WorkerPool(threads: threads ?? WorkerPool.defaultThreadCount)
        decoder = try Decoder(
            weights: model.weights, options: model.options, context: context, maxBatch: batch, kvType: kvType,
            sequences: sequences, windowedCache: windowedCache, pool: pool)
        draft = try draftModel.map {
            try DraftModel(model: $0, target: model, context: context, batch: batch, sequences: sequences, pool: pool)
        }
        slots = Array(repeating: Slot(), count: sequences)
        self.promptCache = try Self.makePromptCache(promptCache, model: model, cache: decoder.cache)
    }

    /// The model that drafts for ``SpeculativeMode/draft`` requests, if any.
    public var draftModel: LanguageModel? { draft?.model }

    /// The context size in tokens (per sequence).
    public var context: Int { decoder.context }

    /// How many sequences run at once.
    public var sequences: Int { decoder.cache.sequences }

    /// Bytes held by the KV cache (all slots).
    public var cacheBytes: Int { decoder.cache.byteCount }

    /// How the KV cache stores keys and values (`.f16`, `.f32`, `.q8_0` or `.q4_0`).
    public var cacheType: DType { decoder.cache.type }

    /// Bytes one token's keys and values take in the cache (every layer).
    public var cacheBytesPerToken: Int { decoder.cache.bytesPerToken }

    /// Requests running and waiting for a slot.
    /// (Answers at once, also while a step runs.)
    public var load: (running: Int, waiting: Int) {
        queue.lock()
        defer { queue.unlock() }
        return (runningCount, pending.count)
    }

    /// Share of the KV cache's positions that hold tokens (0…1), as of the last step.
    public var cacheUsage: Double {
        queue.lock()
        defer { queue.unlock() }
        return Double(filledPositions) / Double(max(1, slots.count * decoder.context))
    }

    /// Streams a generation for `prompt`. Cancelling the consuming task or dropping the
    /// stream stops its work within one step (other sequences continue). `stop`, when set,
    /// ends the sequence the same way (checked between steps) but the stream still ends with
    /// `.done` (finish reason `cancelled`), so the consumer gets the summary.
    public func generate(
        prompt: [Int32], parameters: GenerationParameters, stop: CancellationFlag? = nil
    ) -> AsyncThrowingStream<GenerationEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream<GenerationEvent, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        submitGroup(
            prompt: prompt, choices: [parameters], stops: [stop], cancelled: cancelled,
            emit: { continuation.yield($1) }, end: { continuation.finish(throwing: $0) })
        return stream
    }

    /// The most continuations one ``generate(prompt:choices:stops:)`` call may ask for.
    public static let maxChoices = 8

    /// Streams `choices.count` continuations of one prompt (OpenAI's `n`), each sampled with its
    /// own parameters (give each its own seed). The prompt is processed once: when its last
    /// position's logits are ready, every other choice copies the prompt's keys and values into
    /// a free slot and samples its first token from the same logits, then all decode together
    /// in the batch. A choice that finds no free slot waits for one and reuses the prompt held
    /// in the cache (recomputing only its last token). Each choice ends with its own `.done`;
    /// the stream finishes after the last one. `stops[i]` ends choice `i` as ``generate(prompt:parameters:stop:)``'s
    /// `stop` does; cancelling the consumer stops them all. A failure ends the whole stream.
    public func generate(
        prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag?] = []
    ) -> AsyncThrowingStream<ChoiceEvent, Error> {
        let (stream, continuation) = AsyncThrowingStream<ChoiceEvent, Error>.makeStream()
        let cancelled = CancellationFlag()
        continuation.onTermination = { _ in cancelled.set() }
        submitGroup(
            prompt: prompt, choices: choices, stops: stops, cancelled: cancelled,
            emit: { continuation.yield(ChoiceEvent(choice: $0, event: $1)) }, end: { continuation.finish(throwing: $0) })
        return stream
    }

    /// Validates and submits one prompt's choices: the first leads (it processes the prompt),
    /// the others fork from it. `emit` gets every event with its choice; `end` is called once,
    /// with nil after the last choice's `.done` or with the first error.
    private func submitGroup(
        prompt: [Int32], choices: [GenerationParameters], stops: [CancellationFlag?], cancelled: CancellationFlag,
        emit: @escaping (Int, GenerationEvent) -> Void, end: @escaping (Error?) -> Void
    ) {
        do {
            guard (1...Self.maxChoices).contains(choices.count) else {
                throw EngineError(.invalidOption, "choices must be between 1 and \(Self.maxChoices), got \(choices.count)")
            }
            for parameters in choices { try validate(prompt: prompt, parameters: parameters) }
        } catch {
            end(error)
            return
        }
        let remaining = ChoiceCountdown(choices.count)
        let jobs = choices.enumerated().map { index, parameters in
            let stop = index < stops.count ? stops[index] : nil
            return Job(
                prompt: prompt, parameters: parameters, tokenizer: model.tokenizer,
                isCancelled: { cancelled.isSet || stop?.isSet == true }, onToken: { emit(index, .token($0)) },
                onEnd: { result in
                    switch result {
                    case .success(let summary):
                        emit(index, .done(summary))
                        if remaining.endOne() { end(nil) }
                    case .failure(let error):
                        end(error)
                    }
                })
        }
        for fork in jobs.dropFirst() { fork.isFork = true }
        jobs[0].forks = Array(jobs.dropFirst())
        submit(jobs[0])
    }

    /// Generates synchronously, calling `onToken` (on the scheduler's thread) for every token.
    public func run(
        prompt: [Int32], parameters: GenerationParameters, isCancelled: @escaping () -> Bool = { false },
        onToken: @escaping (GeneratedToken) -> Void
    ) throws -> GenerationSummary {
        try validate(prompt: prompt, parameters: parameters)
        let done = DispatchSemaphore(value: 0)
        var outcome: Result<GenerationSummary, Error> = .failure(EngineError(.cancelled, "cancelled"))
        submit(
            Job(
                prompt: prompt, parameters: parameters, tokenizer: model.tokenizer, isCancelled: isCancelled,
                onToken: onToken,
                onEnd: {
                    outcome = $0
                    done.signal()
                }))
        done.wait()
        return try outcome.get()
    }

    private func validate(prompt: [Int32], parameters: GenerationParameters) throws {
        guard !prompt.isEmpty else { throw EngineError(.invalidOption, "the prompt is empty") }
        guard parameters.maxTokens >= 0 else {
            throw EngineError(.invalidOption, "max tokens must be ≥ 0, got \(parameters.maxTokens)")
        }
        guard prompt.count < decoder.context else {
            throw EngineError(
                .contextLengthExceeded,
                "the prompt is \(prompt.count) tokens but the context holds \(decoder.context)",
                remedy: "Shorten the prompt or raise --ctx (up to the model's \(model.options.maxContext))")
        }
        if let bad = prompt.first(where: { $0 < 0 || Int($0) >= model.options.vocabSize }) {
            throw EngineError(.invalidToken, "token id \(bad) is outside the vocabulary (\(model.options.vocabSize))")
        }
        if parameters.speculative == .draft && draft == nil {
            throw EngineError(
                .invalidOption, "speculative decoding with a draft model was asked for, but no draft model is loaded",
                remedy: "Give --draft-model, or use --speculative lookup or off")
        }
    }

    /// Forgets every cached conversation (waits for running requests' current step), the
    /// prompt cache's blocks in memory included (its disk tier keeps its files).
    public func reset() {
        lock.lock()
        for s in slots.indices where !slots[s].busy {
            slots[s].tokens = []
            decoder.cache.truncate(to: 0, sequence: s)
        }
        draft?.reset()
        promptCache?.removeAll()
        lock.unlock()
    }

    /// How batched products over quantized weights are computed during prompt processing:
    /// 8-bit activations on the integer kernels (the default) or dequantized slabs through
    /// BLAS `sgemm` (f32 activations). Set it before a generation starts.
    public var quantizedBatchPath: QuantizedBatchPath {
        get { decoder.quantizedBatchPath }
        set { decoder.quantizedBatchPath = newValue }
    }

    /// Bits of the integer kernels' quantized activations; see ``Decoder/activationPrecision``.
    public var activationPrecision: ActivationPrecision {
        get { decoder.activationPrecision }
        set { decoder.activationPrecision = newValue }
    }

    /// Scores `tokens` in one pass and returns the logits at every position (for tests and
    /// perplexity). Uses an idle slot; throws when every slot is running a request.
    public func logits(for tokens: [Int32]) throws -> [Float] {
        lock.lock()
        defer { lock.unlock() }
        guard let s = idleSlot(for: tokens) else {
            throw EngineError(.invalidOption, "every sequence slot is busy; score when a request has finished")
        }
        slots[s].tokens = []
        let result = try decoder.forwardAll(tokens, from: 0, sequence: s)
        slots[s].tokens = tokens
        touch(s)
        return result
    }

    // MARK: - The scheduler

    /// One request: its prompt, what it has fed into its slot, and its sampling state.
    final class Job {
        let prompt: [Int32]
        let parameters: GenerationParameters
        let isCancelled: () -> Bool
        let onToken: (GeneratedToken) -> Void
        let onEnd: (Result<GenerationSummary, Error>) -> Void
        var slot = -1
        /// Tokens still to feed, starting at `position` of the slot.
        var input: ArraySlice<Int32> = []
        var position = 0
        /// The length the fed run will reach (LongRoPE picks its factors by it).
        var ropeLength = 0
        var run: SequenceRun
        var admitted = DispatchTime.now()
        var prefilled = false
        /// Other choices of the same prompt, started from this job's prompt once it is processed.
        var forks: [Job] = []
        /// A choice forked from another's prompt (copies a cached prefix of any length).
        var isFork = false
        /// Speculative decoding: the n-gram index of the sequence and the draft length control.
        var lookup = PromptLookup()
        /// Per class of match length (``PromptLookup/rateClass(_:)``), its drafts' acceptance
        /// and length control (class 0: a draft model's drafts).
        var drafting = [DraftControl](repeating: DraftControl(), count: PromptLookup.rateClasses)
        /// The rate class of the drafts fed in the current step.
        var draftMatch = 0

        init(
            prompt: [Int32], parameters: GenerationParameters, tokenizer: any Tokenizer, isCancelled: @escaping () -> Bool,
            onToken: @escaping (GeneratedToken) -> Void, onEnd: @escaping (Result<GenerationSummary, Error>) -> Void
        ) {
            self.prompt = prompt
            self.parameters = parameters
            self.isCancelled = isCancelled
            self.onToken = onToken
            self.onEnd = onEnd
            run = SequenceRun(prompt: prompt, parameters: parameters, tokenizer: tokenizer)
        }
    }

    private func submit(_ job: Job) {
        queue.lock()
        pending.append(job)
        let start = !schedulerRunning
        schedulerRunning = true
        queue.unlock()
        guard start else { return }
        let thread = Thread { [self] in self.schedule() }
        thread.stackSize = 8 << 20
        thread.start()
    }

    /// The scheduler thread: steps while requests run or wait, then exits.
    private func schedule() {
        while true {
            queue.lock()
            if pending.isEmpty && active.isEmpty {
                schedulerRunning = false
                queue.unlock()
                return
            }
            queue.unlock()
            lock.lock()
            step()
            let filled = decoder.cache.counts.reduce(0, +)
            lock.unlock()
            queue.lock()
            filledPositions = filled
            queue.unlock()
        }
    }

    /// One step: admit waiting requests into free slots, drop cancelled ones, run one batch,
    /// sample every sequence whose logits it produced.
    private func step() {
        admit()
        for job in active where job.isCancelled() {
            job.run.summary.finishReason = .cancelled
            finish(job, .success(job.run.finish()))
        }
        guard !active.isEmpty else { return }

        // Decode tokens first (one per running sequence), then prompt chunks in arrival order.
        // A decoding sequence may add drafted tokens after its input (speculative decoding);
        // each gets a row of logits to verify it.
        var items: [Decoder.BatchItem] = []
        var logitsFor: [Int] = []
        var fed: [Fed] = []
        var lengths: [Int: Int] = [:]
        let decoding = active.filter { $0.input.count == 1 }
        let prefilling = active.filter { $0.input.count > 1 }
        let proposals = drafts(for: decoding)
        let started = DispatchTime.now()
        for (job, drafts) in zip(decoding, proposals) {
            let input = job.input.first ?? 0
            fed.append(Fed(job: job, count: 1 + drafts.count, logitsRow: logitsFor.count, drafts: drafts))
            for (i, token) in ([input] + drafts).enumerated() {
                logitsFor.append(items.count)
                items.append(.init(sequence: job.slot, position: job.position + i, token: token))
            }
            lengths[job.slot] = job.ropeLength + drafts.count
        }
        let generatedRows = items.count  // decode inputs and drafts first: 16-bit rows under `.outliers`/`.balanced`/`.mixed`
        var budget = decoder.maxBatch - items.count
        if !decoding.isEmpty { budget = min(budget, max(1, interleavedPrefillTokens)) }
        for job in prefilling where budget > 0 {
            let n = min(job.input.count, budget)
            budget -= n
            let completes = n == job.input.count
            fed.append(Fed(job: job, count: n, logitsRow: completes ? logitsFor.count : nil))
            if completes { logitsFor.append(items.count + n - 1) }
            for (i, token) in job.input.prefix(n).enumerated() {
                items.append(.init(sequence: job.slot, position: job.position + i, token: token))
            }
            lengths[job.slot] = job.ropeLength
        }
        let logits: UnsafeBufferPointer<Float>
        do {
            // A step of a long prompt can take a while: when every request in it is cancelled,
            // it ends between layers (each slot keeps what it held before the step).
            logits = try decoder.forward(
                batch: items, logitsFor: logitsFor, generatedRows: generatedRows, lengths: lengths,
                shouldStop: { fed.allSatisfy { $0.job.isCancelled() } })
        } catch let error as EngineError where error.code == .cancelled {
            for entry in fed {
                entry.job.run.summary.finishReason = .cancelled
                finish(entry.job, .success(entry.job.run.finish()))
            }
            return
        } catch {
            for entry in fed {
                slots[entry.job.slot].tokens = []
                finish(entry.job, .failure(error))
            }
            return
        }
        defer {
            // A step of decode tokens only (with their drafts) times the cost of a row.
            if prefilling.isEmpty { stepCosts.record(rows: items.count, seconds: seconds(since: started)) }
        }
        let vocab = model.options.vocabSize
        for entry in fed {
            let job = entry.job
            guard let base = logits.baseAddress, let row = entry.logitsRow else {
                slots[job.slot].tokens += job.input.prefix(entry.count)
                job.position += entry.count
                job.input = job.input.dropFirst(entry.count)
                keepWindowRows(slot: job.slot, ropeLength: job.ropeLength)
                continue
            }
            let rowLogits = { (i: Int) in UnsafeBufferPointer(start: base + (row + i) * vocab, count: vocab) }
            if !entry.drafts.isEmpty {
                // A prompt cached but for its last token feeds that token as a decode row, which
                // may carry drafts: its first row is still the prompt's end, where choices fork.
                if !job.prefilled { finishPrefill(job, logits: rowLogits(0)) }
                verify(job, drafts: entry.drafts, logits: rowLogits)
                continue
            }
            slots[job.slot].tokens += job.input.prefix(entry.count)
            job.position += entry.count
            job.input = job.input.dropFirst(entry.count)
            if !job.prefilled { finishPrefill(job, logits: rowLogits(0)) }
            advance(job, rowLogits(0))
        }
    }

    /// What a step fed for one job: `count` items from its input (and drafts), whose logits
    /// (when any) start at row `logitsRow`: one row, or one per fed token when it drafted.
    private struct Fed {
        var job: Job
        var count: Int
        var logitsRow: Int?
        var drafts: [Int32] = []
    }

    /// The most rows a step of decoding sequences and their drafts may have (each sequence's
    /// draft length is chosen by what a row costs, ``StepCosts``, within this).
    static let speculativeRows = 32

    /// The tokens each decoding job drafts this step, within ``speculativeRows`` rows in all:
    /// prompt lookup's at once, then the draft model's for every job that drafts with it, in one
    /// batched run of the draft model.
    private func drafts(for decoding: [Job]) -> [[Int32]] {
        var budget = max(0, min(decoder.maxBatch - decoding.count, Self.speculativeRows - decoding.count))
        var rows = decoding.count
        var proposals = [[Int32]](repeating: [], count: decoding.count)
        var requests: [DraftModel.Request] = [], requesters: [Int] = []
        for (i, job) in decoding.enumerated() where budget > 0 {
            var k = 0
            if job.parameters.speculative == .draft, let draft {
                // Text being copied (a repeat of at least `copiedMatch` tokens) drafts by lookup,
                // which costs nothing; elsewhere the draft model drafts.
                if forcedDraftLength == nil {
                    proposals[i] = lookupDrafts(for: job, limit: budget, others: rows - 1, shortest: Self.copiedMatch)
                    k = proposals[i].count
                }
                if k == 0 { k = draftLength(for: job, limit: budget, others: rows - 1, draft: draft) }
                if k > 0 && proposals[i].isEmpty {
                    requests.append(.init(slot: job.slot, history: job.run.history, count: k))
                    requesters.append(i)
                }
            } else {
                proposals[i] = lookupDrafts(for: job, limit: budget, others: rows - 1)
                k = proposals[i].count
            }
            budget -= k
            rows += k
        }
        if let draft, !requests.isEmpty {
            let drafted = draft.drafts(requests, shouldStop: { decoding.allSatisfy { $0.isCancelled() } })
            for (r, i) in requesters.enumerated() { proposals[i] = drafted[r] }
        }
        return proposals
    }

    /// The most tokens `job` may draft this step (at most `limit`): none unless its request
    /// asked for speculation; never past the context, the token limit or (LongRoPE) the
    /// original context while the sequence is still inside it.
    private func draftLimit(for job: Job, limit: Int) -> Int {
        guard job.parameters.speculative != .off else { return 0 }
        // The input token is at job.position; drafts follow it.
        let filled = job.position + 1
        var most = min(limit, DraftControl.longestDraft, decoder.context - 1 - job.position)
        most = min(most, job.parameters.maxTokens - job.run.summary.completionTokens - 1)
        if case .longRoPE(_, _, let original, _) = model.options.rope.scaling, filled <= original {
            most = min(most, original - filled)
        }
        return max(0, most)
    }

    /// How many tokens the draft model drafts for `job` this step (beside `others` rows): the
    /// length that pays by its acceptance rate, ``stepCosts`` and the draft model's own
    /// measured step (before it was timed: a tenth of a step of the model).
    private func draftLength(for job: Job, limit: Int, others: Int, draft: DraftModel) -> Int {
        let most = draftLimit(for: job, limit: limit)
        guard most > 0 else { return 0 }
        let draftSeconds =
            draft.costs.line == nil || stepCosts.line == nil ? 0.1 * stepCosts.seconds(rows: 1) : draft.costs.seconds(rows: 1)
        job.draftMatch = 0
        if let forcedDraftLength { return min(most, forcedDraftLength) }
        return job.drafting[0].length(limit: most, others: others, costs: stepCosts, draftSeconds: draftSeconds)
    }

    /// The shortest repeat a sequence drafting with a draft model drafts by lookup instead (the
    /// rate class of the longest matches, ``PromptLookup/rateClass(_:)``: such repeats are mostly
    /// copied on, and lookup drafts cost no draft-model steps).
    static let copiedMatch = 8

    /// Tokens `job` drafts by prompt lookup this step (at most `limit`, beside `others` rows of
    /// the step): none unless the text repeats (at least `shortest` tokens) and a draft pays by its
    /// acceptance rate and ``stepCosts``, within ``draftLimit(for:limit:)``.
    private func lookupDrafts(for job: Job, limit: Int, others: Int, shortest: Int = PromptLookup.shortest) -> [Int32] {
        let most = draftLimit(for: job, limit: limit)
        guard most > 0 else { return [] }
        let (proposed, n) = job.lookup.match(job.run.history, limit: most)
        guard !proposed.isEmpty, n >= shortest else { return [] }
        let rates = PromptLookup.rateClass(n)
        let k = job.drafting[rates].length(limit: proposed.count, others: others, costs: stepCosts)
        job.draftMatch = rates
        return Array(proposed.prefix(k))
    }

    /// Verifies a speculative step of `job`: its input and `drafts` were fed at consecutive
    /// positions, `logits(i)` the model's logits after the i-th of them. The sampler picks each
    /// next token from them in turn, exactly as plain decoding would; a drafted token is kept
    /// while the pick equals it. The first pick that differs (or the pick after the last draft)
    /// becomes the next input, and the slot is cut back to the tokens kept.
    private func verify(_ job: Job, drafts: [Int32], logits: (Int) -> UnsafeBufferPointer<Float>) {
        slots[job.slot].tokens += job.input.prefix(1)
        job.position += 1
        job.input = []
        var accepted = 0
        for i in 0...drafts.count {
            let outcome = job.run.next(logits(i), eos: model.eosIDs, context: decoder.context, onToken: job.onToken)
            if case .feed(let token) = outcome, i < drafts.count, token == drafts[i] {
                // The pick is the drafted token, whose keys and values the step already stored.
                accepted += 1
                slots[job.slot].tokens.append(token)
                job.position += 1
                continue
            }
            job.drafting[job.draftMatch].record(drafted: drafts.count, accepted: accepted)
            job.run.summary.draftedTokens += drafts.count
            job.run.summary.acceptedDraftTokens += accepted
            decoder.cache.truncate(to: job.position, sequence: job.slot)
            switch outcome {
            case .finished:
                finish(job, .success(job.run.finish()))
            case .feed(let token):
                feed(job, token)
            }
            return
        }
    }

    /// `job`'s prompt has been processed (`logits` are its last position's): its prefill time is
    /// recorded and the other choices of its group fork from it.
    private func finishPrefill(_ job: Job, logits: UnsafeBufferPointer<Float>) {
        job.prefilled = true
        job.run.summary.prefillSeconds = seconds(since: job.admitted)
        if !job.forks.isEmpty { startForks(of: job, logits: logits) }
    }

    /// Samples `job`'s next token from `logits`: it finishes, or its next input is that token.
    private func advance(_ job: Job, _ logits: UnsafeBufferPointer<Float>) {
        let outcome = job.run.next(logits, eos: model.eosIDs, context: decoder.context, onToken: job.onToken)
        switch outcome {
        case .finished:
            finish(job, .success(job.run.finish()))
        case .feed(let token):
            feed(job, token)
        }
    }

    /// Makes `token` (just sampled and appended to the history) `job`'s next input.
    private func feed(_ job: Job, _ token: Int32) {
        let length = job.run.history.count
        if decoder.needsRecompute(cached: length - 1, end: length) {
            // LongRoPE crossed its original context: the whole sequence again, with the long factors.
            slots[job.slot].tokens = []
            job.input = job.run.history[...]
            job.position = 0
        } else {
            job.input = [token]
        }
        job.ropeLength = length
    }

    /// The leader of a group has processed the prompt (its slot holds the prompt's keys and
    /// values, then those of any tokens it drafted in the same step; `logits` are the prompt's
    /// last position's): each other choice takes a free slot, copies
    /// the prompt into it and samples its first token from the same logits. Choices that find no
    /// free slot wait at the head of the queue.
    private func startForks(of leader: Job, logits: UnsafeBufferPointer<Float>) {
        var waiting: [Job] = []
        for fork in leader.forks {
            if fork.isCancelled() {
                fork.run.summary.finishReason = .cancelled
                fork.onEnd(.success(fork.run.finish()))
                continue
            }
            guard let s = idleSlot(for: fork.prompt) else {
                waiting.append(fork)
                continue
            }
            // The leader's slot just processed the prompt, so it can resume at its end; should it
            // not (nothing copied), the choice waits and is admitted like any request.
            guard decoder.cache.copyPrefix(from: leader.slot, to: s, count: fork.prompt.count) == fork.prompt.count else {
                slots[s].tokens = []
                waiting.append(fork)
                continue
            }
            slots[s].tokens = fork.prompt
            slots[s].busy = true
            touch(s)
            fork.slot = s
            fork.position = fork.prompt.count
            fork.ropeLength = fork.prompt.count
            fork.run.summary.cachedPromptTokens = fork.prompt.count
            fork.admitted = leader.admitted
            fork.prefilled = true
            active.append(fork)
            queue.lock()
            runningCount += 1
            queue.unlock()
            advance(fork, logits)
        }
        leader.forks = []
        requeue(waiting)
    }

    /// Puts jobs back at the head of the queue, in order.
    private func requeue(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        queue.lock()
        pending.insert(contentsOf: jobs, at: 0)
        queue.unlock()
    }

    /// Moves waiting requests into free slots: the one holding the longest prefix of the
    /// prompt (least recently used on ties), topped up from another slot with a longer one or
    /// from the prompt cache with a longer block-aligned one (``fillPrefix(for:slot:)``). The
    /// copy is made outside the queue's lock, so a long prefix does not hold up submissions.
    private func admit() {
        while true {
            queue.lock()
            guard let job = pending.first else {
                queue.unlock()
                return
            }
            if job.isCancelled() {
                pending.removeFirst()
                job.run.summary.finishReason = .cancelled
                // Its waiting choices start on their own (or end here, when cancelled too).
                pending.insert(contentsOf: job.forks, at: 0)
                job.forks = []
                job.onEnd(.success(job.run.finish()))
                queue.unlock()
                continue
            }
            guard let s = idleSlot(for: job.prompt) else {
                queue.unlock()
                return
            }
            pending.removeFirst()
            queue.unlock()
            job.admitted = DispatchTime.now()  // a prefix's copy counts in the prefill time
            guard let reuse = fillPrefix(for: job, slot: s) else {
                // Cancelled while a cached prefix was being copied: the slot holds nothing.
                slots[s].tokens = []
                job.run.summary.finishReason = .cancelled
                requeue(job.forks)
                job.forks = []
                job.onEnd(.success(job.run.finish()))
                continue
            }
            slots[s].tokens = Array(job.prompt.prefix(reuse))
            slots[s].busy = true
            touch(s)
            lastSequence = s
            job.slot = s
            job.position = reuse
            job.input = job.prompt[reuse...]
            job.ropeLength = job.prompt.count
            job.run.summary.cachedPromptTokens = reuse
            active.append(job)
            queue.lock()
            runningCount += 1
            queue.unlock()
        }
    }

    /// Fills slot `s` with the longest prefix of `job`'s prompt that needs no computing (at
    /// least one token is left to compute, for the logits): what the slot holds, a longer one
    /// held by another slot (a shared system prompt, a forked conversation; at least 16 tokens
    /// unless `job` is a fork), or a longer block-aligned one from the prompt cache (a
    /// conversation that has left the slots). The same LongRoPE checks hold for each: no prefix
    /// whose keys were computed with other factors than the prompt needs.
    /// - Returns: the positions the slot holds, or nil when `job` was cancelled while a cached
    ///   prefix was being copied (the slot is then empty).
    private func fillPrefix(for job: Job, slot s: Int) -> Int? {
        let limit = job.prompt.count - 1  // at least one token is recomputed for logits
        var reuse = reusablePrefix(slot: s, job.prompt, limit: limit)
        var donor = s
        for d in slots.indices where d != s {
            let shared = reusablePrefix(slot: d, job.prompt, limit: limit)
            if shared > reuse && (shared >= 16 || job.isFork) {
                reuse = shared
                donor = d
            }
        }
        let longFactors = decoder.usesLongFactors(length: job.prompt.count)
        if decoder.needsRecompute(cached: reuse, end: job.prompt.count)
            || decoder.usesLongFactors(length: decoder.cache.counts[donor]) != longFactors
        {
            reuse = 0
        }
        if let promptCache,
            let hit = promptCache.lookup(
                job.prompt, limit: limit, beyond: reuse, longFactors: longFactors,
                accept: { [decoder] in !decoder.needsRecompute(cached: $0, end: job.prompt.count) })
        {
            // Full-layer rows the slot already holds for this prompt stay where they are.
            let held = min(commonPrefix(slots[s].tokens, job.prompt, limit: hit.count), decoder.cache.counts[s])
            let keeping = decoder.usesLongFactors(length: decoder.cache.counts[s]) == longFactors ? held : 0
            slots[s].tokens = []
            guard promptCache.restore(hit, into: decoder.cache, sequence: s, keeping: keeping, isCancelled: job.isCancelled)
            else { return nil }
            return hit.count
        }
        return decoder.cache.copyPrefix(from: donor, to: s, count: reuse)
    }

    /// A slot no request runs in: the one whose tokens share the longest prefix with
    /// `prompt`, the least recently used among equals.
    func idleSlot(for prompt: [Int32]) -> Int? {
        var best: (slot: Int, shared: Int, used: UInt64)?
        for s in slots.indices where !slots[s].busy {
            let candidate = (slot: s, shared: commonPrefix(slots[s].tokens, prompt, limit: prompt.count), used: slots[s].lastUsed)
            guard let current = best else {
                best = candidate
                continue
            }
            if candidate.shared > current.shared || (candidate.shared == current.shared && candidate.used < current.used) {
                best = candidate
            }
        }
        return best?.slot
    }

    func touch(_ s: Int) {
        useClock += 1
        slots[s].lastUsed = useClock
    }

    private func finish(_ job: Job, _ result: Result<GenerationSummary, Error>) {
        active.removeAll { $0 === job }
        // Choices still waiting for this job's prompt: failed with it, or started on their own.
        let forks = job.forks
        job.forks = []
        if case .failure = result {
            for fork in forks { fork.onEnd(result) }
        } else {
            requeue(forks)
        }
        queue.lock()
        runningCount -= 1
        queue.unlock()
        if job.slot >= 0 {
            slots[job.slot].busy = false
            if case .failure = result {
                decoder.cache.truncate(to: 0, sequence: job.slot)
            } else {
                storeInPromptCache(slot: job.slot)
            }
        }
        job.onEnd(result)
    }

    /// Stores what slot `s` holds (a request just ended there: its prompt and the tokens it
    /// generated) in the prompt cache, before the request's end is reported, so a request that
    /// follows it finds it. Only blocks the cache lacks are copied.
    private func storeInPromptCache(slot s: Int) {
        guard let promptCache else { return }
        let held = min(slots[s].tokens.count, decoder.cache.counts[s])
        promptCache.store(
            slots[s].tokens.prefix(held), cache: decoder.cache, sequence: s,
            longFactors: decoder.usesLongFactors(length: decoder.cache.counts[s]))
    }

    /// The prefix of `prompt` (at most `limit` tokens) slot `s` holds and can continue from: the
    /// tokens it shares with the prompt, or 0 when its sliding-window layers no longer hold the
    /// window before that point (``KVCache/canResume(at:sequence:)``: a shorter prefix is further
    /// back still, so the prompt is processed from the start).
    func reusablePrefix(slot s: Int, _ prompt: [Int32], limit: Int) -> Int {
        let shared = min(commonPrefix(slots[s].tokens, prompt, limit: limit), decoder.cache.counts[s])
        return decoder.cache.canResume(at: shared, sequence: s) ? shared : 0
    }

    private func commonPrefix(_ a: [Int32], _ b: [Int32], limit: Int) -> Int {
        var n = 0
        let end = min(a.count, b.count, limit)
        while n < end && a[n] == b[n] { n += 1 }
        return n
    }
}

/// The sampling side of one sequence: sampler, detokenizer, stop strings and counts. The
/// scheduler feeds it the logits after each step of its sequence.
struct SequenceRun {
    let parameters: GenerationParameters
    var sampler: Sampler
    var matcher: ConstraintMatcher?
    var mask: [UInt64] = []
    var detokenizer: StreamingDetokenizer
    /// Prompt and generated tokens.
    var history: [Int32]
    var generatedCounts: [Int32: Int] = [:]
    /// Set for the step whose token opened a reasoning block under a constraint (the matcher
    /// does not see it).
    var matcherWaits = false
    /// Generated text not yet emitted (held back for stop strings).
    var text = ""
    var summary: GenerationSummary
    var decodeStart = DispatchTime.now()
    /// The reasoning block's state (``GenerationParameters/reasoning``).
    var reasoning: ReasoningRun?
    /// Set when a constrained output fell into a loop (``RepetitionRule``): the completion
    /// token count by which the output must be complete.
    var windDownBy: Int?

    enum Outcome {
        /// Feed this token and call again with the logits it produces.
        case feed(Int32)
        case finished
    }

    init(prompt: [Int32], parameters: GenerationParameters, tokenizer: any Tokenizer) {
        self.parameters = parameters
        sampler = Sampler(options: parameters.sampling, normalizes: parameters.logprobs || parameters.topLogprobs > 0)
        matcher = parameters.constraint.map { constraint in
            var matcher = ConstraintMatcher(constraint)
            if !parameters.constraintPrefix.isEmpty { matcher.advance(bytes: parameters.constraintPrefix) }
            return matcher
        }
        detokenizer = StreamingDetokenizer(
            tokenizer: tokenizer, stripLeadingSpace: parameters.stripLeadingSpace && parameters.constraint == nil)
        history = prompt
        reasoning = parameters.reasoning.map { ReasoningRun($0, tokenizer: tokenizer) }
        summary = GenerationSummary(
            finishReason: .length, promptTokens: prompt.count, cachedPromptTokens: 0, completionTokens: 0,
            prefillSeconds: 0, decodeSeconds: 0)
    }

    /// Samples the next token from `logits`, emits it and says whether to go on.
    mutating func next(
        _ logits: UnsafeBufferPointer<Float>, eos: Set<Int32>, context: Int, onToken: (GeneratedToken) -> Void
    ) -> Outcome {
        guard summary.completionTokens < parameters.maxTokens else { return endOfBudget() }
        var allowed: [UInt64]? = nil
        // A reasoning block is free text: the constraint waits for the answer (`grammar`).
        let phase = reasoning?.splitter.phase ?? .answer
        let forced = reasoning?.nextForced()
        let grammar = matcher != nil && forced == nil && phase != .reasoning
        if grammar {
            matcher?.fillMask(&mask)  // in place: a copy would duplicate the matcher's mask cache each step
            reasoning?.adjust(&mask, phase: phase)
            if !mask.contains(where: { $0 != 0 }) {
                // Complete, with no end-of-sequence token to say so (or no token can go on).
                summary.finishReason = .stop
                return .finished
            }
            allowed = mask
        } else if forced == nil, phase != .undecided {
            allowed = reasoning?.allowed(in: phase, vocabulary: logits.count)
        }
        var id = sampler.sample(logits, recent: history[...], generated: generatedCounts, allowed: allowed)
        if let forced {
            id = forced
        } else if phase == .reasoning, eos.contains(id), let close = reasoning?.beginClosing() {
            id = close  // the end of the reply inside the block: close it, an answer follows
        }
        if grammar, phase == .undecided {
            if id == reasoning?.control.format.openID {
                matcherWaits = true
            } else {
                text += reasoning?.splitter.decideAnswer() ?? ""
            }
        }
        if grammar, !matcherWaits, parameters.finishInBudget, !eos.contains(id) {
            id = withinBudget(id, logits, context: context)
        }
        if grammar, !matcherWaits { matcher?.advance(id) }
        matcherWaits = false
        generatedCounts[id, default: 0] += 1
        var token = GeneratedToken(id: id, text: "", logprob: .nan, topLogprobs: [])
        if sampler.normalizes {
            let normalizer = sampler.normalizerOfLastLogits()  // from the sampler's pass over the same logits
            token.logprob = LogProbabilities.of(id, in: logits, normalizer: normalizer)
            token.topLogprobs = LogProbabilities.top(parameters.topLogprobs, in: logits, normalizer: normalizer)
        }
        summary.completionTokens += 1
        if summary.completionTokens == 1 { decodeStart = DispatchTime.now() }

        if eos.contains(id) {
            var rest = detokenizer.flush()
            if reasoning != nil {
                let (thought, said) = reasoning?.split(rest, id: id, phase: phase, forced: forced != nil, end: true, summary: &summary) ?? ("", rest)
                (token.reasoning, rest) = (thought, said)
            }
            token.text = text + rest
            onToken(token)
            summary.finishReason = .stop
            return .finished
        }
        var piece = detokenizer.push(id)
        if reasoning != nil {
            let grammarWaits = matcher != nil
            let (thought, said) =
                reasoning?.split(piece, id: id, phase: phase, forced: forced != nil, end: false, summary: &summary, constrained: grammarWaits)
                ?? ("", piece)
            (token.reasoning, piece) = (thought, said)
            token.endsReasoning = reasoning?.endedNow == true
            token.inReasoning = reasoning?.lastInBlock == true
        }
        text += piece
        let current = text
        if let range = parameters.stop.lazy.compactMap({ current.range(of: $0) }).first {
            token.text = String(text[..<range.lowerBound])
            onToken(token)
            summary.finishReason = .stop
            return .finished
        }
        // Emit all but a tail that could still begin a stop string.
        let hold = heldBackCount(text, stops: parameters.stop)
        token.text = String(text.dropLast(hold))
        text = String(text.suffix(hold))
        onToken(token)

        history.append(id)
        if grammar, parameters.finishInBudget, windDownBy == nil,
            RepetitionRule.isLooping(history.suffix(summary.completionTokens)), var m = matcher
        {
            windDownBy = summary.completionTokens + m.bytesToComplete() + RepetitionRule.margin
            matcher = m
            summary.repetitionEnded = true
        }
        if windDownBy != nil, matcher?.isAccepting == true {
            summary.finishReason = .stop  // wound down: complete, so it ends here
            return .finished
        }
        if summary.completionTokens == parameters.maxTokens { return endOfBudget() }
        if history.count >= context { return endOfBudget() }
        return .feed(id)
    }

    /// The tokens ran out: `.stop` when a constraint's output is complete (it may end here),
    /// else `.length`.
    private mutating func endOfBudget() -> Outcome {
        summary.finishReason = matcher?.isAccepting == true ? .stop : .length
        return .finished
    }

    /// `id`, or — when the constrained output could not be completed after it in the tokens
    /// left (counting a byte a token, which every vocabulary with byte tokens can always do) —
    /// the sampler's choice among the tokens that keep a completion within reach (see
    /// ``GenerationParameters/finishInBudget``). Costs one lookup per token until it acts.
    private mutating func withinBudget(_ id: Int32, _ logits: UnsafeBufferPointer<Float>, context: Int) -> Int32 {
        guard var m = matcher else { return id }
        // Tokens after this one: the end of sequence needs none (a complete output ends `.stop`).
        var left = min(parameters.maxTokens - summary.completionTokens, context - history.count) - 1
        if let windDownBy { left = min(left, windDownBy - summary.completionTokens - 1) }
        defer { matcher = m }
        guard let after = m.bytesToComplete(after: id), after > left else { return id }
        var feasible: [UInt64] = []
        m.fillFeasibleMask(&feasible, within: left)
        guard feasible.contains(where: { $0 != 0 }) else { return id }  // out of reach either way: cut
        summary.budgetShapedTokens += 1
        return sampler.sample(logits, recent: history[...], generated: generatedCounts, allowed: feasible)
    }

    /// The summary, with the decode time filled in.
    func finish() -> GenerationSummary {
        var result = summary
        if result.completionTokens > 0 {
            result.decodeSeconds = Double(DispatchTime.now().uptimeNanoseconds - decodeStart.uptimeNanoseconds) / 1e9
        }
        return result
    }

    private func heldBackCount(_ text: String, stops: [String]) -> Int {
        var hold = 0
        for stop in stops {
            for length in stride(from: min(stop.count - 1, text.count), to: 0, by: -1)
            where text.hasSuffix(stop.prefix(length)) {
                hold = max(hold, length)
                break
            }
        }
        return hold
    }
}

private func seconds(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// A thread-safe one-way flag (a request's cancellation).
/// Counts the choices of one group down to zero (their ends come from the scheduler thread).
final class ChoiceCountdown: @unchecked Sendable {
    // `@unchecked Sendable`: `remaining` is only touched under `lock`.
    private let lock = NSLock()
    private var remaining: Int

    init(_ count: Int) { remaining = count }

    /// One choice ended; true when it was the last.
    func endOne() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        remaining -= 1
        return remaining == 0
    }
}

public final class CancellationFlag: @unchecked Sendable {
    // `@unchecked Sendable`: the value is only read and written under `lock`.
    private let lock = NSLock()
    private var value = false

    /// A flag that is not set.
    public init() {}

    /// Sets the flag (for good).
    public func set() {
        lock.lock()
        value = true
        lock.unlock()
    }

    /// Whether the flag is set.
    public var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
