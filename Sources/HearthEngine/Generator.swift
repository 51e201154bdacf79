import Foundation
import HearthConstraints
import HearthKernels
import HearthTokenizers

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
    public let model: TransformerModel
    let decoder: Decoder
    let lock = NSLock()  // internal: Generator+Snapshot.swift holds it too
    /// Per slot: the tokens whose keys and values it holds, and whether a request runs in it.
    var slots: [Slot]
    /// The slot of the most recent request (what a snapshot saves).
    var lastSequence = 0
    var useClock: UInt64 = 0
    /// What a decode step costs per row, timed as steps run (speculative draft lengths follow it).
    var stepCosts = StepCosts()
    /// The draft model of ``SpeculativeMode/draft``, when one was given.
    let draft: DraftModel?
    /// Prompts' keys and values kept beyond the slots (nil: no prompt cache).
    let promptCache: PromptCache?
    /// Tests: draft-model requests draft this many tokens whenever the limits allow, whatever
    /// the cost rule says (tiny test models' steps cost what the model's do, so it would not draft).
    var forcedDraftLength: Int?

    let queue = NSLock()
    var pending: [Job] = []
    var active: [Job] = []  // guarded by `lock`
    var schedulerRunning = false
    /// Requests holding a slot and positions filled, kept under `queue` so that metrics never
    /// wait for a step to end.
    var runningCount = 0
    var filledPositions = 0
    /// Forward steps run and the sequences and tokens they held, since the generator started
    /// (kept under `queue`): ``stepStatistics``.
    var stepTotals = StepStatistics()

    /// Prompt tokens a step spends on new requests while others are decoding (the rest of a
    /// prompt waits for the next step, so running sequences keep their pace).
    package var interleavedPrefillTokens = 32

    /// Under a grammar, the output head computes only the 16-token groups holding a token the
    /// grammar allows at that step (the others' logits are −∞): at a JSON structure's or a
    /// number's position that is a small part of the vocabulary, and the head is most of a
    /// small model's weight bytes per token. The tokens chosen are the same either way (each
    /// computed logit equals the full head's bit for bit). Off for steps that read every
    /// logit (log-probabilities, reasoning blocks, speculative drafts).
    package var sparseHead = true

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
        model: TransformerModel, context: Int? = nil, threads: Int? = nil, batch: Int = Generator.defaultBatch, kvType: DType = .f16,
        sequences: Int = 1, windowedCache: Bool = true, draftModel: TransformerModel? = nil,
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
    package var draftModel: TransformerModel? { draft?.model }

    /// The context size in tokens (per sequence).
    public var context: Int { decoder.context }

    /// How many sequences run at once.
    package var sequences: Int { decoder.cache.sequences }

    /// Bytes held by the KV cache (all slots).
    package var cacheBytes: Int { decoder.cache.byteCount }

    /// How the KV cache stores keys and values (`.f16`, `.f32`, `.q8_0` or `.q4_0`).
    package var cacheType: DType { decoder.cache.type }

    /// Bytes one token's keys and values take in the cache (every layer).
    package var cacheBytesPerToken: Int { decoder.cache.bytesPerToken }

    /// Requests running and waiting for a slot.
    /// (Answers at once, also while a step runs.)
    package var load: (running: Int, waiting: Int) {
        queue.lock()
        defer { queue.unlock() }
        return (runningCount, pending.count)
    }

    /// Forward steps of the scheduler and what they held: the batch's occupancy is
    /// `sequences / steps` busy slots per step (llama-server's `n_busy_slots_per_decode`), and
    /// `tokens / steps` tokens per step. (Answers at once, also while a step runs.)
    package var stepStatistics: StepStatistics {
        queue.lock()
        defer { queue.unlock() }
        return stepTotals
    }

    /// Share of the KV cache's positions that hold tokens (0…1), as of the last step.
    package var cacheUsage: Double {
        queue.lock()
        defer { queue.unlock() }
        return Double(filledPositions) / Double(max(1, slots.count * decoder.context))
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

    func validate(prompt: [Int32], parameters: GenerationParameters) throws {
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
    package var quantizedBatchPath: QuantizedBatchPath {
        get { decoder.quantizedBatchPath }
        set { decoder.quantizedBatchPath = newValue }
    }

    /// Bits of the integer kernels' quantized activations; see ``Decoder/activationPrecision``.
    package var activationPrecision: ActivationPrecision {
        get { decoder.activationPrecision }
        set { decoder.activationPrecision = newValue }
    }

    /// Scores `tokens` in one pass and returns the logits at every position (for tests and
    /// perplexity). Uses an idle slot; throws when every slot is running a request.
    package func logits(for tokens: [Int32]) throws -> [Float] {
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
}
