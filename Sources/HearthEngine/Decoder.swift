import Foundation
import HearthKernels

/// The one forward pass every model family runs (read it like llama2.c's `forward`).
///
/// Owns the KV cache and all activation buffers, sized once at creation for `context`
/// positions and batches of up to `maxBatch` tokens, and never reallocated per token (the
/// portable kernel level's loops use small per-call temporaries; the SIMD levels none).
/// Not Sendable: one owner drives it from one thread at a time.
package final class Decoder {
    package let options: DecoderOptions
    package let weights: ModelWeights
    package let cache: KVCache
    package let pool: WorkerPool
    /// With a quantized (q8_0 / q4_0) cache: the rotation queries, keys and values take before
    /// the cache stores them, undone on each head's attention output (``HeadRotation``); nil
    /// for f16 and f32 caches.
    package let kvRotation: HeadRotation?
    /// Tokens processed per batch during prefill.
    package let maxBatch: Int

    private let scratch: MatMulScratch
    private let x: UnsafeMutablePointer<Float>  // (B, dim) residual stream
    private let xb: UnsafeMutablePointer<Float>  // (B, dim) normalised input of a block
    private let qkv: UnsafeMutablePointer<Float>  // (B, qkvWidth) q | k | v per token
    private let att: UnsafeMutablePointer<Float>  // (B, heads·headDim) attention output
    private let proj: UnsafeMutablePointer<Float>  // (B, dim) block output before the residual add
    /// (ffnRows, ffnInWidth) gate | up (or up) per token; then, compacted in place, (ffnRows, ffn)
    /// the activated hidden rows the down projection reads (no second buffer of rows × ffn floats).
    private let ffnIn: UnsafeMutablePointer<Float>
    /// Rows of a batch whose MLP runs at once: the gate | up buffer is the largest a batch needs
    /// (Gemma 3 270M: 16 KiB per row, Phi-3.5-mini 64 KiB), and the matmuls already work in
    /// token blocks of 32, so 128 rows at a time cost no speed and a 512-token batch a quarter of
    /// the memory (Gemma 3 270M pp4096 peak RSS −6 MiB, Phi-3.5-mini −24 MiB).
    let ffnRows: Int
    private let attentionScratch: UnsafeMutablePointer<Float>  // (threads, fusedAttentionScratchFloats) per worker
    private let splitOutputs: UnsafeMutablePointer<Float>  // (threads, threads, callRows, headDim) partial outputs
    private let splitLogSumExps: UnsafeMutablePointer<Float>  // (threads, threads, callRows) their log-sum-exps
    /// (B, layers × perLayerInputSize) each token's per-layer inputs (Gemma 4; 1 float otherwise).
    private let perLayerInputs: UnsafeMutablePointer<Float>
    /// (max(B, 1), max(layers × perLayerInputSize, …)) per-layer embedding rows, then the gated inputs.
    private let perLayerScratch: UnsafeMutablePointer<Float>
    /// (maxHeadDim) ones: the weight of Gemma 4's unweighted value norm.
    private let ones: [Float]
    private let cosTable: UnsafeMutablePointer<Float>  // (2, B, rotaryDims/2): full-attention then sliding layers
    private let sinTable: UnsafeMutablePointer<Float>  // (2, B, rotaryDims/2)
    /// (logitsRows, vocab): the rows a step asked for; grows (rarely) when a step asks for more
    /// rows than it holds (speculative verification asks for several per sequence).
    private var lastLogits: UnsafeMutablePointer<Float>
    /// The output head's 16-token groups for the step in progress (``forward(batch:logitsFor:generatedRows:lengths:headMask:shouldStop:)``); nil: all.
    private var headGroups: [Int32]?
    /// How many 16-token groups the last ``forward(batch:logitsFor:generatedRows:lengths:headMask:shouldStop:)``'s
    /// head computed when it did not compute them all (nil: it computed every group).
    package private(set) var lastHeadGroups: Int?
    private var logitsRows: Int
    private var buffers: [UnsafeMutablePointer<Float>] = []

    /// Query tokens per fused-attention call: a tile of about 96 query rows (tokens × the
    /// query heads of a KV group), so the queries, the output and one key/value tile stay in L2.
    let queryTileTokens: Int
    /// Query rows of one fused-attention call (`queryTileTokens` × group size).
    let tileRows: Int
    /// A run of at most this many tokens (a decode or verification step) of a model with more
    /// than one KV head is one fused-attention call over whole cache rows, every head at once
    /// (``FusedAttentionShape/kvHeads``): the cache streams row after row rather than each head
    /// gathering its slice of every row. 0: one KV head, never.
    let wholeRowTokens: Int
    /// Query rows of the largest call: `tileRows`, or a whole-row call's tokens × query heads.
    let callRows: Int
    /// Floats of one worker's fused-attention scratch.
    let attentionScratchFloats: Int
    /// A run whose (token, KV head) items are fewer than the workers has its keys split across
    /// the workers (partial softmaxes merged) once it sees at least this many keys.
    static let splitAttentionKeys = 256

    /// Creates a decoder with a cache of `context` positions stored as `kvType` (f16, f32, q8_0
    /// or q4_0; the quantized types need a head dimension that is a multiple of 32, else this
    /// throws `EngineError` `.invalidOption`).
    /// `sequences` slots of `context` positions each are allocated up front (see ``KVCache``).
    /// Sliding-window layers hold only a window-sized buffer per slot (``KVCache/Window``, sized
    /// for `maxBatch`) unless `windowedCache` is false (every layer then holds `context` positions).
    package init(
        weights: ModelWeights, options: DecoderOptions, context: Int, maxBatch: Int = Generator.defaultBatch, kvType: DType = .f16,
        sequences: Int = 1, windowedCache: Bool = true, pool: WorkerPool
    ) throws {
        self.options = options
        self.weights = weights
        self.pool = pool
        self.maxBatch = max(1, maxBatch)
        let o = options
        let window = windowedCache ? KVCache.Window(options: o, context: context, maxBatch: self.maxBatch) : nil
        if kvType.isQuantized && o.maxHeadDim != o.headDim {
            throw EngineError(
                .invalidOption,
                "a \(kvType.rawValue) KV cache is not supported for a model whose layers have different head sizes (\(o.headDim) and \(o.maxHeadDim)); use --kv-type f16")
        }
        // Layers sharing another's keys hold no cache: only the leading layers that own theirs.
        cache = try KVCache(
            layers: o.cacheLayerCount, capacity: context, width: o.kvHeadCount * o.maxHeadDim, sequences: sequences,
            type: kvType, headDim: o.maxHeadDim, window: window)
        kvRotation = kvType.isQuantized ? HeadRotation(headDim: o.headDim) : nil
        let maxFFN = (0..<o.layerCount).map(o.ffnSize(forLayer:)).max() ?? o.ffnSize
        let widest = max(o.hiddenSize, maxFFN, o.headCount * o.maxHeadDim, o.perLayerInputSize ?? 0)
        scratch = MatMulScratch(threads: pool.threadCount, maxCols: widest, maxBatch: self.maxBatch, slabRows: 64)
        BLAS.useSingleThread()

        var buffers: [UnsafeMutablePointer<Float>] = []
        func buffer(_ count: Int) -> UnsafeMutablePointer<Float> {
            let p = UnsafeMutablePointer<Float>.allocate(capacity: max(count, 1))
            p.initialize(repeating: 0, count: max(count, 1))
            buffers.append(p)
            return p
        }
        let b = self.maxBatch
        x = buffer(b * o.hiddenSize)
        xb = buffer(b * o.hiddenSize)
        let maxQKV = (0..<o.layerCount).map(o.qkvWidth(forLayer:)).max() ?? o.qkvWidth
        qkv = buffer(b * max(maxQKV, o.qkvWidth))
        att = buffer(b * o.headCount * o.maxHeadDim)
        proj = buffer(b * o.hiddenSize)
        ffnRows = min(b, 128)
        ffnIn = buffer(ffnRows * ((0..<o.layerCount).map(o.ffnInWidth(forLayer:)).max() ?? o.ffnInWidth))
        let perLayerAll = o.layerCount * (o.perLayerInputSize ?? 0)
        perLayerInputs = buffer(b * perLayerAll)
        perLayerScratch = buffer(b * perLayerAll)
        ones = [Float](repeating: 1, count: o.maxHeadDim)
        queryTileTokens = max(1, 96 / o.groupSize)
        tileRows = queryTileTokens * o.groupSize
        wholeRowTokens = o.kvHeadCount > 1 ? max(1, fusedAttentionNarrowRows / o.groupSize) : 0
        callRows = max(tileRows, wholeRowTokens * o.headCount)
        attentionScratchFloats = max(
            fusedAttentionScratchFloats(rows: tileRows, headDim: o.maxHeadDim),
            fusedAttentionScratchFloats(rows: wholeRowTokens * o.headCount, headDim: o.maxHeadDim, kvHeads: o.kvHeadCount))
        let threads = pool.threadCount
        attentionScratch = buffer(threads * attentionScratchFloats)
        splitOutputs = buffer(threads * threads * callRows * o.maxHeadDim)
        splitLogSumExps = buffer(threads * threads * callRows)
        let maxHalf = max(o.rope.rotaryDims, o.slidingRoPE?.rotaryDims ?? 0) / 2
        cosTable = buffer(2 * b * maxHalf)
        sinTable = buffer(2 * b * maxHalf)
        logitsRows = sequences
        lastLogits = .allocate(capacity: sequences * o.vocabSize)
        lastLogits.initialize(repeating: 0, count: sequences * o.vocabSize)
        self.buffers = buffers
    }

    deinit {
        for p in buffers { p.deallocate() }
        lastLogits.deallocate()
    }

    /// Makes room for `rows` rows of logits (the old ones are not kept: called before a step).
    private func reserveLogitsRows(_ rows: Int) {
        guard rows > logitsRows else { return }
        lastLogits.deallocate()
        lastLogits = .allocate(capacity: rows * options.vocabSize)
        lastLogits.initialize(repeating: 0, count: rows * options.vocabSize)
        logitsRows = rows
    }

    /// Positions the cache can hold.
    package var context: Int { cache.capacity }

    /// How batched products over quantized weights are computed (integer by default).
    package var quantizedBatchPath: QuantizedBatchPath {
        get { scratch.quantizedBatchPath }
        set { scratch.quantizedBatchPath = newValue }
    }

    /// Bits of the quantized activations the integer kernels multiply (``ActivationPrecision``;
    /// ``ActivationPrecision/default``, `outliers`, unless set).
    package var activationPrecision: ActivationPrecision = .default

    /// How the current batch's layer products split by precision: its first `generated` rows
    /// (tokens being generated, with their drafts) at `generatedBits`, the rest (prompt rows) at
    /// `promptBits` (`attentionInputPromptBits` for the q/k/v projections). Set at the start of
    /// each batch.
    private var rowBits = (generated: 0, generatedBits: 16, promptBits: 16, attentionInputPromptBits: 16)

    /// How attention reads a q8_0/q4_0 cache's keys (``QuantizedKeyDots``: by default integer
    /// dots for decode steps, Float tiles for prompts; `hearth bench --kv-key-dots` measures the
    /// others).
    package var quantizedKeyDots: QuantizedKeyDots = .automatic

    /// Whether extending a cache of `cached` positions to `end` positions needs every
    /// position recomputed: LongRoPE switches to its long factors once the sequence passes
    /// the original context, and transformers then re-runs the whole sequence with them.
    package func needsRecompute(cached: Int, end: Int) -> Bool {
        guard case .longRoPE(_, _, let original, _) = options.rope.scaling else { return false }
        return cached > 0 && cached <= original && end > original
    }

    /// One token of a mixed batch: `token` at `position` of sequence slot `sequence`.
    package struct BatchItem: Sendable, Equatable {
        package var sequence: Int
        package var position: Int
        package var token: Int32

        package init(sequence: Int, position: Int, token: Int32) {
            self.sequence = sequence
            self.position = position
            self.token = token
        }
    }

    /// A run of consecutive positions of one sequence inside a batch.
    struct Segment {
        var sequence: Int
        /// Index of the first item in the batch.
        var first: Int
        var count: Int
        /// Position of the first item.
        var position: Int
        /// The length of the whole request this run belongs to (LongRoPE picks its factors by it).
        var ropeEnd: Int
        var end: Int { position + count }
    }

    /// Whether a sequence of `length` positions runs on LongRoPE's long factors (keys cached
    /// on one set of factors cannot be reused on the other).
    package func usesLongFactors(length: Int) -> Bool {
        guard case .longRoPE(_, _, let original, _) = options.rope.scaling else { return false }
        return length > original
    }

    /// Runs `tokens` at positions `start…` of slot `sequence` and returns the logits of the
    /// last token (`vocab` floats, valid until the next call). Earlier cache entries of the
    /// slot from `start` on are replaced.
    package func forward(_ tokens: [Int32], from start: Int, sequence: Int = 0) throws -> UnsafeBufferPointer<Float> {
        try run(tokens, from: start, sequence: sequence, allLogits: nil, shouldStop: { false })
        return UnsafeBufferPointer(start: lastLogits, count: options.vocabSize)
    }

    /// Like `forward`, but checks `shouldStop` between batches and throws `.cancelled` when it returns true.
    package func forward(
        _ tokens: [Int32], from start: Int, sequence: Int = 0, shouldStop: () -> Bool
    ) throws -> UnsafeBufferPointer<Float> {
        try run(tokens, from: start, sequence: sequence, allLogits: nil, shouldStop: shouldStop)
        return UnsafeBufferPointer(start: lastLogits, count: options.vocabSize)
    }

    /// Runs `tokens` at positions `start…` and returns the logits at every position,
    /// `(tokens.count, vocab)` row-major (for scoring and tests).
    package func forwardAll(_ tokens: [Int32], from start: Int, sequence: Int = 0) throws -> [Float] {
        var all = [Float](repeating: 0, count: tokens.count * options.vocabSize)
        try all.withUnsafeMutableBufferPointer {
            try run(tokens, from: start, sequence: sequence, allLogits: $0, shouldStop: { false })
        }
        return all
    }

    /// One step over a mixed batch: prompt chunks of some sequences and single decode tokens
    /// of others, each attending only to its own slot. A sequence's items must be adjacent
    /// and at consecutive positions starting at or before what its slot holds (its later
    /// entries are replaced); at most `maxBatch` items. Returns the logits of the items at
    /// `logitsFor` (distinct indices into `items`; several of one sequence when a speculative
    /// step verifies drafted tokens), row after row in that order, valid until the next call. `lengths` gives, per sequence, the length its whole
    /// prompt will reach when a prompt is processed in several steps (LongRoPE chooses its
    /// factors by it, as for a prompt processed at once); by default the run's own end.
    /// `shouldStop` is asked before each layer: when it answers true the step ends there,
    /// throwing `.cancelled`, and every slot of the batch keeps exactly what it held before.
    ///
    /// The first `generatedRows` items are tokens being generated (a decode step's input and its
    /// drafts), the rest prompt tokens: under ``ActivationPrecision/mixed`` the layers multiply
    /// them at 16 and 8 bits respectively, so a generated token's row is computed as a single
    /// token's would be whatever shares its batch.
    ///
    /// `headMask` (a bit per token id, 64 to a word): only the tokens it allows are needed in
    /// every logits row; the head then computes just the 16-token groups holding one of them
    /// (each logit it computes is the full head's, bit for bit) and the others' logits are −∞.
    package func forward(
        batch items: [BatchItem], logitsFor: [Int], generatedRows: Int = 0, lengths: [Int: Int] = [:],
        headMask: [UInt64]? = nil, shouldStop: () -> Bool = { false }
    ) throws -> UnsafeBufferPointer<Float> {
        guard logitsFor.allSatisfy({ items.indices.contains($0) }), Set(logitsFor).count == logitsFor.count else {
            throw EngineError(.invalidOption, "logits are asked for items outside the batch, or twice for one item")
        }
        guard (0...items.count).contains(generatedRows) else {
            throw EngineError(.invalidOption, "generatedRows (\(generatedRows)) is outside the batch's \(items.count) items")
        }
        let segments = try segments(of: items, lengths: lengths, cache: cache)
        reserveLogitsRows(logitsFor.count)
        headGroups = headMask.map { allowedGroups($0, vocabulary: options.vocabSize) }
        let groupCount = (options.vocabSize + matmulGroupRows - 1) / matmulGroupRows
        lastHeadGroups = headGroups.flatMap { $0.count < groupCount ? $0.count : nil }
        defer { headGroups = nil }
        try forwardBatch(
            items.map(\.token), segments: segments, outputRows: logitsFor, output: .logits(nil), cache: cache,
            generatedRows: generatedRows, shouldStop: shouldStop)
        return UnsafeBufferPointer(start: lastLogits, count: logitsFor.count * options.vocabSize)
    }

    /// One step over a batch like ``forward(batch:logitsFor:lengths:)``, but on the slots of
    /// `cache` (a scratch cache: the decoder's own slots are left as they are) and handing back
    /// the final hidden states — after the final norm, before the output head, which is skipped
    /// — of the items at `rows`, `(rows.count, hiddenSize)` row after row into `hidden`.
    /// `cache` must have this decoder's layers, width and type and at most `context` positions
    /// per slot. What embeddings pool. `shouldStop` is asked before each layer, as by
    /// ``forward(batch:logitsFor:lengths:shouldStop:)``.
    func hiddenStates(
        batch items: [BatchItem], rows: [Int], lengths: [Int: Int] = [:], cache: KVCache,
        into hidden: UnsafeMutablePointer<Float>, shouldStop: () -> Bool = { false }
    ) throws {
        guard cache.layerCount == self.cache.layerCount, cache.width == self.cache.width,
            cache.headDim == self.cache.headDim, cache.type == self.cache.type, cache.capacity <= self.cache.capacity
        else {
            throw EngineError(
                .invalidOption,
                "a scratch cache must have the decoder's layers, width and type and at most \(context) positions")
        }
        guard rows.allSatisfy({ items.indices.contains($0) }) else {
            throw EngineError(.invalidOption, "hidden states asked for rows outside the batch")
        }
        let segments = try segments(of: items, lengths: lengths, cache: cache)
        try forwardBatch(
            items.map(\.token), segments: segments, outputRows: rows, output: .hiddenStates(hidden), cache: cache,
            generatedRows: 0, shouldStop: shouldStop)
    }

    /// The runs of consecutive positions of one sequence each that make up `items`, checked
    /// against `cache` (slots, positions held, capacity) and the vocabulary.
    private func segments(of items: [BatchItem], lengths: [Int: Int], cache: KVCache) throws -> [Segment] {
        let o = options
        guard !items.isEmpty else { throw EngineError(.invalidOption, "no tokens to process") }
        guard items.count <= maxBatch else {
            throw EngineError(.invalidOption, "a batch holds at most \(maxBatch) tokens, got \(items.count)")
        }
        var segments: [Segment] = []
        for (i, item) in items.enumerated() {
            guard item.sequence >= 0, item.sequence < cache.sequences else {
                throw EngineError(.invalidOption, "sequence \(item.sequence) is not one of the \(cache.sequences) slots")
            }
            guard item.token >= 0, Int(item.token) < o.vocabSize else {
                throw EngineError(.invalidToken, "token id \(item.token) is outside the vocabulary (\(o.vocabSize))")
            }
            if var last = segments.last, last.sequence == item.sequence, last.end == item.position {
                last.count += 1
                segments[segments.count - 1] = last
                continue
            }
            guard !segments.contains(where: { $0.sequence == item.sequence }) else {
                throw EngineError(.invalidOption, "the items of sequence \(item.sequence) are not adjacent and consecutive")
            }
            guard item.position >= 0, item.position <= cache.counts[item.sequence] else {
                throw EngineError(
                    .invalidOption,
                    "position \(item.position) is past the \(cache.counts[item.sequence]) tokens sequence \(item.sequence) holds")
            }
            guard cache.canResume(at: item.position, sequence: item.sequence) else {
                throw Self.notResumable(item.position, cache: cache, sequence: item.sequence)
            }
            segments.append(Segment(sequence: item.sequence, first: i, count: 1, position: item.position, ropeEnd: 0))
        }
        if let long = segments.first(where: { $0.end > cache.capacity }) {
            throw EngineError(
                .contextLengthExceeded, "\(long.end) tokens do not fit the \(cache.capacity)-token context",
                remedy: "Shorten the prompt or raise --ctx")
        }
        for i in segments.indices { segments[i].ropeEnd = max(segments[i].end, lengths[segments[i].sequence] ?? 0) }
        return segments
    }

    /// The error for a step that would continue slot `sequence` at `position` although its
    /// sliding-window layers no longer hold the positions it would attend to.
    static func notResumable(_ position: Int, cache: KVCache, sequence: Int) -> EngineError {
        EngineError(
            .invalidOption,
            "sequence \(sequence) cannot continue at position \(position): its sliding-window layers hold positions from \(cache.windowStarts[sequence]) on, so it can resume at 0 or from \(cache.earliestResume(sequence: sequence)) on",
            remedy: "Process the sequence again from position 0")
    }

    private func run(
        _ tokens: [Int32], from start: Int, sequence: Int, allLogits: UnsafeMutableBufferPointer<Float>?,
        shouldStop: () -> Bool
    ) throws {
        let o = options
        guard !tokens.isEmpty else { throw EngineError(.invalidOption, "no tokens to process") }
        guard sequence >= 0, sequence < cache.sequences else {
            throw EngineError(.invalidOption, "sequence \(sequence) is not one of the \(cache.sequences) slots")
        }
        guard start >= 0, start <= cache.counts[sequence] else {
            throw EngineError(.invalidOption, "start position \(start) is past the cached \(cache.counts[sequence]) tokens")
        }
        guard cache.canResume(at: start, sequence: sequence) else {
            throw Self.notResumable(start, cache: cache, sequence: sequence)
        }
        guard start + tokens.count <= cache.capacity else {
            throw EngineError(
                .contextLengthExceeded,
                "\(start + tokens.count) tokens do not fit the \(cache.capacity)-token context",
                remedy: "Shorten the prompt or raise --ctx")
        }
        if let bad = tokens.first(where: { $0 < 0 || Int($0) >= o.vocabSize }) {
            throw EngineError(.invalidToken, "token id \(bad) is outside the vocabulary (\(o.vocabSize))")
        }
        cache.truncate(to: start, sequence: sequence)
        var done = 0
        while done < tokens.count {
            if shouldStop() { throw EngineError(.cancelled, "cancelled") }
            let n = min(maxBatch, tokens.count - done)
            let isLast = done + n == tokens.count
            let chunk = Array(tokens[done..<(done + n)])
            let outputRows: [Int] = allLogits != nil ? Array(0..<n) : (isLast ? [n - 1] : [])
            let logitsOut = allLogits.map { $0.baseAddress! + done * o.vocabSize }
            let segment = Segment(
                sequence: sequence, first: 0, count: n, position: start + done, ropeEnd: start + tokens.count)
            // One token at a time is a decode step (16-bit under `.outliers`, `.mixed` and `.balanced`), more a prompt.
            try forwardBatch(
                chunk, segments: [segment], outputRows: outputRows, output: .logits(logitsOut), cache: cache,
                generatedRows: n == 1 ? 1 : 0, shouldStop: shouldStop)
            done += n
        }
    }

    /// What a batch hands back for its output rows.
    enum BatchOutput {
        /// Logits, `(rows, vocab)`, into the pointer (or `lastLogits` when nil).
        case logits(UnsafeMutablePointer<Float>?)
        /// Final hidden states (after the final norm, before the output head), `(rows, dim)`:
        /// what embeddings pool. The output head is skipped.
        case hiddenStates(UnsafeMutablePointer<Float>)
    }

    // Long: the layer loop of the forward pass. Its stages (norm, projections, RoPE, attention, MLP)
    // share per-step scratch buffers, the batch's segments and row maps; split, each part would take
    // most of them as parameters, and this is the hot path whose allocations and order were measured.
    /// One batch of `n ≤ maxBatch` tokens made of `segments` (runs of consecutive positions of
    /// one sequence each) over the slots of `cache` (the decoder's own, or a scratch cache of
    /// at most `context` positions per slot); the rows `outputRows` go to `output`. When
    /// `shouldStop` (asked before each layer) answers true, the slots are cut back to where the
    /// batch began and it throws `.cancelled`.
    private func forwardBatch(
        _ tokens: [Int32], segments: [Segment], outputRows: [Int], output: BatchOutput, cache: KVCache,
        generatedRows: Int, shouldStop: () -> Bool
    ) throws {
        let o = options
        let n = tokens.count
        let dim = o.hiddenSize
        let maxHalf = max(o.rope.rotaryDims, o.slidingRoPE?.rotaryDims ?? 0) / 2
        rowBits = (
            generatedRows, activationPrecision.generationBits, activationPrecision.promptBits(),
            activationPrecision.promptBits(product: .attentionInput))
        scratch.activations.outlierChannels = activationPrecision.outlierChannels

        // Token embeddings → x (scaled, for Gemma).
        for (t, token) in tokens.enumerated() {
            weights.tokenEmbedding.dequantizeRow(Int(token), into: x + t * dim)
            if let s = o.embeddingScale { for i in 0..<dim { x[t * dim + i] *= s } }
        }
        if let ple = weights.perLayerInputs, let width = o.perLayerInputSize {
            computePerLayerInputs(tokens, ple, width: width)
        }
        // Each token's sequence slot and position; the slots' old entries from here on are dropped.
        var slotOf = [Int](repeating: 0, count: n), positionOf = [Int](repeating: 0, count: n)
        for segment in segments {
            cache.truncate(to: segment.position, sequence: segment.sequence)
            // Window layers: room for the run (older positions leave the buffer when it is full).
            try cache.makeRoom(sequence: segment.sequence, from: segment.position, count: segment.count)
            for i in 0..<segment.count {
                slotOf[segment.first + i] = segment.sequence
                positionOf[segment.first + i] = segment.position + i
            }
        }
        // Rotary cos/sin for every token (frequencies per sequence: LongRoPE depends on its
        // length): table 0 full attention, table 1 sliding layers.
        var ropes: (full: RoPEFrequencies, sliding: RoPEFrequencies)?
        for segment in segments {
            let r = (
                RoPEFrequencies(o.rope, endPosition: segment.ropeEnd),
                RoPEFrequencies(o.slidingRoPE ?? o.rope, endPosition: segment.ropeEnd)
            )
            if ropes == nil { ropes = r }
            for t in segment.first..<(segment.first + segment.count) {
                r.0.fill(position: positionOf[t], cos: cosTable + t * maxHalf, sin: sinTable + t * maxHalf)
                r.1.fill(position: positionOf[t], cos: cosTable + (n + t) * maxHalf, sin: sinTable + (n + t) * maxHalf)
            }
        }
        guard let ropes else { return }
        // The attention work of the batch, once for full-attention and once for sliding layers.
        let fullItems = attentionItems(segments, window: nil)
        let slidingItems = o.slidingWindow.map { attentionItems(segments, window: $0) } ?? fullItems

        for l in 0..<o.layerCount {
            if shouldStop() {
                // Layers before this one stored this batch's keys and values: drop them all.
                for segment in segments { cache.truncate(to: segment.position, sequence: segment.sequence) }
                throw EngineError(.cancelled, "cancelled")
            }
            let layer = weights.layers[l]
            let sliding = o.isSliding(l)
            let rope = sliding ? ropes.sliding : ropes.full
            let table = sliding ? n : 0
            // This layer's shape: head size, q | k | v width (q alone when it reads another
            // layer's keys and values: `source`), MLP width.
            let hd = o.headDim(forLayer: l), qDim = o.headCount * hd, kvDim = o.kvHeadCount * hd
            let width = o.qkvWidth(forLayer: l), owns = o.ownsKV(l), source = o.kvSource(l)
            let ffn = o.ffnSize(forLayer: l), ffnInWidth = o.ffnInWidth(forLayer: l)
            let scale = o.attentionScale ?? 1 / Float(hd).squareRoot()

            // Attention norm: xb = norm(x).
            for t in 0..<n { normalize(x + t * dim, layer.attnNorm, layer.attnNormBias, dim, into: xb + t * dim) }

            // q, k, v projections: qkv = xb · Wqkvᵀ (+ bias).
            project(layer.qkv, input: xb, n: n, output: qkv, width: width, bias: layer.qkvBias, product: .attentionInput)

            // q/k norms (and Gemma 4's unweighted v norm), RoPE on q and k, then k and v into the
            // cache at their positions — unless the layer reads another layer's.
            let kvHeads = owns ? o.kvHeadCount : 0
            for t in 0..<n {
                let row = qkv + t * width
                if let qNorm = layer.qNorm {
                    for h in 0..<o.headCount { normalize(row + h * hd, qNorm, nil, hd, into: row + h * hd) }
                }
                if let kNorm = layer.kNorm {
                    for h in 0..<kvHeads { normalize(row + qDim + h * hd, kNorm, nil, hd, into: row + qDim + h * hd) }
                }
                if o.valueNorm {
                    for h in 0..<kvHeads {
                        let v = row + qDim + kvDim + h * hd
                        ones.withUnsafeBufferPointer { w in
                            if let wp = w.baseAddress { HearthKernels.rmsNorm(v, weight: wp, eps: o.norm.epsilon, dim: hd, out: v) }
                        }
                    }
                }
                let c = cosTable + (table + t) * maxHalf, s = sinTable + (table + t) * maxHalf
                for h in 0..<(o.headCount + kvHeads) { rope.apply(row + h * hd, cos: c, sin: s) }
                if let rotation = kvRotation {
                    // Queries, keys and values are contiguous head vectors: q | k | v.
                    for h in 0..<(o.headCount + 2 * kvHeads) { rotation.forward(row + h * hd) }
                }
                if owns {
                    cache.store(
                        layer: l, position: positionOf[t], sequence: slotOf[t], keys: row + qDim, values: row + qDim + kvDim,
                        headElements: hd)
                }
            }
            for segment in segments { cache.counts[segment.sequence] = segment.end }

            // Causal multi-head attention over each sequence's cache: att = softmax(q·Kᵀ·scale) · V.
            let window = sliding ? o.slidingWindow : nil
            attention(
                layer: source, items: sliding ? slidingItems : fullItems, segments: segments, scale: scale, window: window,
                cache: cache, headDim: hd, qStride: width)
            if let rotation = kvRotation {
                // The values were rotated: each head's output is H·o; turn it back.
                for i in 0..<(n * o.headCount) { rotation.inverse(att + i * hd) }
            }

            // Output projection: proj = att · Woᵀ (+ bias), normed again with sandwich norms.
            multiply(layer.attnOutput, x: att, batch: n, y: proj, ldy: dim)
            addBias(proj, layer.attnOutputBias, rows: n, width: dim)
            if let post = layer.postAttnNorm {
                for t in 0..<n { normalize(proj + t * dim, post, nil, dim, into: proj + t * dim) }
            }

            if o.parallelResidual {
                // Phi-2: the MLP reads the same normed input; both outputs join the residual.
                addInPlace(x, proj, n * dim)
            } else {
                // Residual, then the MLP's own norm: xb = norm(x).
                addInPlace(x, proj, n * dim)
                for t in 0..<n { normalize(x + t * dim, layer.ffnNorm ?? [], layer.ffnNormBias, dim, into: xb + t * dim) }
            }

            // MLP: down(act(gate) · up) or down(act(up)), (+ biases), sandwich norm, residual,
            // ``ffnRows`` rows at a time (the gate | up rows of a whole batch are its largest buffer).
            let activation = o.mlp.activation
            let wholeStep = rowBits
            var first = 0
            while first < n {
                let m = min(ffnRows, n - first)
                // The chunk's generated rows (a step's first rows) keep their own precision.
                rowBits.generated = min(max(wholeStep.generated - first, 0), m)
                project(layer.ffnIn, input: xb + first * dim, n: m, output: ffnIn, width: ffnInWidth, bias: layer.ffnInBias)
                // Each row's activated hidden overwrites its gate (or up) part, then moves down to
                // row t of a dense (m, ffn) matrix: t·ffn + ffn ≤ t·ffnInWidth for t ≥ 1 when the
                // MLP is gated (ffnInWidth = 2·ffn), so no move overlaps a row not yet read.
                for t in 0..<m {
                    let row = ffnIn + t * ffnInWidth
                    applyActivation(row, ffn, gelu: activation != .silu, tanhApproximation: activation == .geluTanh)
                    if case .gated = o.mlp {
                        let up = row + ffn
                        for i in 0..<ffn { row[i] *= up[i] }
                    }
                    if ffnInWidth != ffn && t > 0 { (ffnIn + t * ffn).update(from: row, count: ffn) }
                }
                multiply(layer.down, x: ffnIn, batch: m, y: proj + first * dim, ldy: dim)
                first += m
            }
            rowBits = wholeStep
            addBias(proj, layer.downBias, rows: n, width: dim)
            if let post = layer.postFFNNorm {
                for t in 0..<n { normalize(proj + t * dim, post, nil, dim, into: proj + t * dim) }
            }
            addInPlace(x, proj, n * dim)

            // Gemma 4's per-layer input: x += norm(P · (act(G · x) ⊙ input_l)), then the layer scalar.
            if let gate = layer.perLayerGate, let back = layer.perLayerProjection, let width = o.perLayerInputSize {
                let all = o.layerCount * width
                multiply(gate, x: x, batch: n, y: perLayerScratch, ldy: width)
                for t in 0..<n {
                    let g = perLayerScratch + t * width
                    applyActivation(g, width, gelu: activation != .silu, tanhApproximation: activation == .geluTanh)
                    let input = perLayerInputs + t * all + l * width
                    for i in 0..<width { g[i] *= input[i] }
                }
                multiply(back, x: perLayerScratch, batch: n, y: proj, ldy: dim)
                if let post = layer.postPerLayerNorm {
                    for t in 0..<n { normalize(proj + t * dim, post, nil, dim, into: proj + t * dim) }
                }
                addInPlace(x, proj, n * dim)
            }
            if let scalar = layer.layerScalar {
                for i in 0..<(n * dim) { x[i] *= scalar }
            }
        }

        // Final norm, then the output projection, for the rows whose output is wanted.
        guard !outputRows.isEmpty else { return }
        let logits: UnsafeMutablePointer<Float>?
        switch output {
        case .hiddenStates(let hidden):
            for (i, t) in outputRows.enumerated() {
                normalize(x + t * dim, weights.outputNorm, weights.outputNormBias, dim, into: hidden + i * dim)
            }
            return
        case .logits(let pointer): logits = pointer
        }
        for (i, t) in outputRows.enumerated() {
            normalize(x + t * dim, weights.outputNorm, weights.outputNormBias, dim, into: xb + i * dim)
        }
        let out = logits ?? lastLogits
        scratch.activations.bits = activationPrecision.headBits
        let groupCount = (o.vocabSize + matmulGroupRows - 1) / matmulGroupRows
        if let groups = headGroups, groups.count < groupCount {
            matmul(weights.output, x: xb, batch: outputRows.count, y: out, groups: groups, pool: pool, scratch: scratch)
        } else {
            matmul(weights.output, x: xb, batch: outputRows.count, y: out, pool: pool, scratch: scratch)
        }
        addBias(out, weights.outputBias, rows: outputRows.count, width: o.vocabSize)
        if let cap = o.finalLogitSoftcap {
            for i in 0..<(outputRows.count * o.vocabSize) { out[i] = tanhf(out[i] / cap) * cap }
        }
        if let groups = headGroups, groups.count < groupCount {
            Self.excludeOutside(groups, rows: outputRows.count, vocabulary: o.vocabSize, out)
        }
    }

    /// Sets every logit outside the 16-token `groups` (ascending) to −∞ in each of `rows` rows.
    static func excludeOutside(_ groups: [Int32], rows: Int, vocabulary: Int, _ out: UnsafeMutablePointer<Float>) {
        for r in 0..<rows {
            let row = out + r * vocabulary
            var next = 0  // the index into `groups` of the first group at or after `start`
            var start = 0
            while start < vocabulary {
                while next < groups.count, Int(groups[next]) * matmulGroupRows < start { next += 1 }
                let end = next < groups.count ? Int(groups[next]) * matmulGroupRows : vocabulary
                if start < end { (row + start).update(repeating: -.infinity, count: end - start) }
                start = end + matmulGroupRows
                if next < groups.count { next += 1 }
            }
        }
    }

    /// Gemma 4's per-layer inputs of the batch's tokens into ``perLayerInputs`` (see
    /// ``PerLayerInputWeights``), from the scaled token embeddings in `x`.
    private func computePerLayerInputs(_ tokens: [Int32], _ ple: PerLayerInputWeights, width: Int) {
        let o = options, n = tokens.count, dim = o.hiddenSize, all = o.layerCount * width
        multiply(ple.modelProjection, x: x, batch: n, y: perLayerInputs, ldy: all)
        let projectionScale = Float(1 / Double(dim).squareRoot())
        for (t, token) in tokens.enumerated() {
            let row = perLayerInputs + t * all
            for i in 0..<all { row[i] *= projectionScale }
            for l in 0..<o.layerCount {
                rmsNormInPlace(row + l * width, ple.projectionNorm, width: width)
            }
            let own = perLayerScratch + t * all
            ple.embedding.dequantizeRow(Int(token), into: own)
            PerLayerInputWeights.combine(row, own: own, count: all, width: width)
        }
    }

    /// RMS norm of `width` elements in place with `weight` (the model's epsilon).
    private func rmsNormInPlace(_ v: UnsafeMutablePointer<Float>, _ weight: [Float], width: Int) {
        weight.withUnsafeBufferPointer { w in
            if let wp = w.baseAddress { HearthKernels.rmsNorm(v, weight: wp, eps: options.norm.epsilon, dim: width, out: v) }
        }
    }

    /// One call of fused attention: a query tile of `tokens` consecutive tokens of a run against
    /// one KV head (or every head: `kvHeads` > 1, ``wholeRowTokens``), over the keys
    /// `keyStart..<keyEnd` (all it sees, or one worker's share).
    struct AttentionItem {
        var segment: Int
        var kvHead: Int
        /// KV heads from `kvHead` on that the call covers: 1, or all of them (whole cache rows).
        var kvHeads = 1
        /// First token of the tile, counted from the run's first.
        var token: Int
        var tokens: Int
        var keyStart: Int
        var keyEnd: Int
        /// The share of the keys (0..<parts) when a tile's keys are split across workers; −1: not split.
        var part: Int
        /// Index of the split tile (its slot in the split buffers).
        var split: Int
    }

    /// The fused-attention calls of a batch for layers with `window` (nil: full attention):
    /// every run cut into query tiles of ``queryTileTokens`` tokens per KV head, the longest key
    /// spans first (the causal tiles near the end cost most, so the workers finish together); a
    /// run of at most ``wholeRowTokens`` tokens is one item over every KV head. When there are
    /// fewer items than workers (decode), an item seeing at least ``splitAttentionKeys`` keys is
    /// cut into one key range per worker.
    private func attentionItems(_ segments: [Segment], window: Int?) -> [AttentionItem] {
        var items: [AttentionItem] = []
        for (s, segment) in segments.enumerated() {
            // Heads per item: one, or all of them for a short run.
            let heads = segment.count <= wholeRowTokens ? options.kvHeadCount : 1
            var t = 0
            while t < segment.count {
                let tokens = min(queryTileTokens, segment.count - t)
                let first = window.map { max(0, segment.position + t - $0 + 1) } ?? 0
                let end = segment.position + t + tokens
                for kvh in stride(from: 0, to: options.kvHeadCount, by: heads) {
                    items.append(
                        AttentionItem(
                            segment: s, kvHead: kvh, kvHeads: heads, token: t, tokens: tokens, keyStart: first, keyEnd: end,
                            part: -1, split: -1))
                }
                t += tokens
            }
        }
        let threads = pool.threadCount
        if items.count < threads {
            var split: [AttentionItem] = []
            for (i, item) in items.enumerated() {
                let span = item.keyEnd - item.keyStart
                guard span >= Self.splitAttentionKeys else {
                    split.append(item)
                    continue
                }
                for p in 0..<threads {
                    var part = item
                    part.keyStart = item.keyStart + span * p / threads
                    part.keyEnd = item.keyStart + span * (p + 1) / threads
                    part.part = p
                    part.split = i
                    split.append(part)
                }
            }
            return split
        }
        return items.sorted { $0.keyEnd - $0.keyStart > $1.keyEnd - $1.keyStart }
    }

    /// Causal multi-head attention of every run of the batch over its own sequence's cache:
    /// fused attention (online softmax over key/value tiles, all query heads of a KV group
    /// against each loaded tile) per item, spread over the workers; split items' partial
    /// results are merged afterwards.
    private func attention(
        layer l: Int, items: [AttentionItem], segments: [Segment], scale: Float, window: Int?, cache: KVCache,
        headDim hd: Int, qStride: Int
    ) {
        let o = options
        let qDim = o.headCount * hd, g = o.groupSize
        let threads = pool.threadCount
        let splitStride = threads * callRows
        pool.parallelChunks(items.count) { range, worker in
            let scratch = attentionScratch + worker * attentionScratchFloats
            for item in items[range] {
                let segment = segments[item.segment]
                let row = segment.first + item.token
                var shape = FusedAttentionShape(
                    tokens: item.tokens, groupHeads: item.kvHeads * g, headDim: hd,
                    firstPosition: segment.position + item.token, keyStart: item.keyStart, keyEnd: item.keyEnd,
                    window: window ?? 0, scale: scale, qStride: qStride, outStride: qDim, kvHeads: item.kvHeads)
                let q = qkv + row * qStride + item.kvHead * g * hd
                // Positions counted from the first the layer holds (a window layer's buffer start):
                // the same keys, tiles and masks as from 0, shifted.
                let origin = cache.origin(layer: l, sequence: segment.sequence)
                shape.firstPosition -= origin
                shape.keyStart -= origin
                shape.keyEnd -= origin
                let keys = cache.key(l, origin, sequence: segment.sequence) + cache.headOffset(item.kvHead)
                let values = cache.value(l, origin, sequence: segment.sequence) + cache.headOffset(item.kvHead)
                if item.part < 0 {
                    fusedAttention(
                        q, keys: keys, values: values, stride: cache.rowBytes, type: cache.type, shape: shape,
                        into: att + row * qDim + item.kvHead * g * hd, scratch: scratch, keyDots: quantizedKeyDots)
                } else {
                    // Part p's rows go contiguously (rows × headDim) into the split tile's slot.
                    var partShape = shape
                    partShape.outStride = shape.groupHeads * hd
                    let rows = shape.rows
                    fusedAttention(
                        q, keys: keys, values: values, stride: cache.rowBytes, type: cache.type, shape: partShape,
                        into: splitOutputs + (item.split * splitStride + item.part * rows) * hd,
                        logSumExp: splitLogSumExps + item.split * splitStride + item.part * rows, scratch: scratch,
                        keyDots: quantizedKeyDots)
                }
            }
        }
        // Join the split tiles' parts (their items are adjacent, parts 0..<threads).
        for item in items where item.part == 0 {
            let segment = segments[item.segment]
            let row = segment.first + item.token
            let heads = item.kvHeads * g
            mergeAttention(
                splitOutputs + item.split * splitStride * hd, logSumExps: splitLogSumExps + item.split * splitStride,
                parts: threads, rows: item.tokens * heads, headDim: hd, groupHeads: heads,
                into: att + row * qDim + item.kvHead * g * hd, outStride: qDim)
        }
    }

    /// Applies the model's norm to one row of `count` elements (`out` may alias `input`).
    @inline(__always)
    private func normalize(
        _ input: UnsafeMutablePointer<Float>, _ weight: [Float], _ bias: [Float]?, _ count: Int,
        into out: UnsafeMutablePointer<Float>
    ) {
        weight.withUnsafeBufferPointer { w in
            guard let wp = w.baseAddress else { return }
            switch options.norm {
            case .rms(let eps): rmsNorm(input, weight: wp, eps: eps, dim: count, out: out)
            case .layer(let eps):
                if let bias {
                    bias.withUnsafeBufferPointer { layerNorm(input, weight: wp, bias: $0.baseAddress, eps: eps, dim: count, out: out) }
                } else {
                    layerNorm(input, weight: wp, bias: nil, eps: eps, dim: count, out: out)
                }
            }
        }
    }

    /// Adds a bias vector to every row.
    @inline(__always)
    private func addBias(_ y: UnsafeMutablePointer<Float>, _ bias: [Float]?, rows: Int, width: Int) {
        guard let bias else { return }
        bias.withUnsafeBufferPointer { b in
            guard let bp = b.baseAddress else { return }
            for r in 0..<rows { addInPlace(y + r * width, bp, width) }
        }
    }

    /// Runs fused or separate projections, writing their outputs side by side in rows of `width`.
    private func project(
        _ projections: LayerWeights.Projections, input: UnsafePointer<Float>, n: Int,
        output: UnsafeMutablePointer<Float>, width: Int, bias: [Float]?, product: ActivationPrecision.Product = .other
    ) {
        switch projections {
        case .fused(let w):
            multiply(w, x: input, batch: n, y: output, ldy: width, product: product)
        case .separate(let parts):
            var offset = 0
            for w in parts {
                multiply(w, x: input, batch: n, y: output + offset, ldy: width, product: product)
                offset += w.rows
            }
        }
        addBias(output, bias, rows: n, width: width)
    }

    /// A layer's product y = x · Wᵀ over the batch's `n` rows, at the activation bits of each
    /// row's kind (``rowBits``): one call when they agree, else the generated rows and the
    /// prompt rows in two.
    private func multiply(
        _ w: WeightMatrix, x: UnsafePointer<Float>, batch n: Int, y: UnsafeMutablePointer<Float>, ldy: Int,
        product: ActivationPrecision.Product = .other
    ) {
        let (generated, generatedBits, otherPromptBits, attentionInputPromptBits) = rowBits
        let promptBits = product == .attentionInput ? attentionInputPromptBits : otherPromptBits
        if generated == 0 || generated == n || generatedBits == promptBits {
            scratch.activations.bits = generated == n ? generatedBits : promptBits
            matmul(w, x: x, batch: n, y: y, ldy: ldy, pool: pool, scratch: scratch)
            return
        }
        scratch.activations.bits = generatedBits
        matmul(w, x: x, batch: generated, y: y, ldy: ldy, pool: pool, scratch: scratch)
        scratch.activations.bits = promptBits
        matmul(w, x: x + generated * w.cols, batch: n - generated, y: y + generated * ldy, ldy: ldy, pool: pool, scratch: scratch)
    }
}
