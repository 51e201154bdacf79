import Foundation
import HearthKernels

/// How the final hidden states of a sequence's tokens become one embedding vector.
public enum EmbeddingPooling: String, Sendable, CaseIterable, Codable {
    /// The mean over every token of the sequence (BOS included when the tokenizer adds it),
    /// as sentence-transformers' mean pooling over an unpadded input. The default.
    case mean
    /// The last token's state: what a causal model has read the whole sequence into
    /// (the pooling of decoder-based embedding models such as E5-Mistral and Qwen3-Embedding).
    case last
}

extension Generator {
    /// The length of an embedding vector: the model's hidden size.
    package var embeddingDimensions: Int { model.options.hiddenSize }

    /// Embedding vectors of `sequences` (token ids), one per sequence in order, each pooled
    /// over the final hidden states (after the final norm, before the output head) and
    /// L2-normalised: `(sequences.count, hiddenSize)`.
    ///
    /// The sequences run together in batched forward passes of up to `batch` tokens, with no
    /// sampling, on a scratch KV cache made for the call: the generator's own slots (and the
    /// conversations cached in them) are untouched, and nothing is kept afterwards. A sequence
    /// of at most `batch` tokens runs whole in one pass, a longer one alone in chunks of `batch`;
    /// rows never mix inside the pass, so a vector does not depend on what else is in the
    /// batch (up to the rounding of the matrix products).
    ///
    /// Safe while requests generate: every pass holds the generator's lock, the one the
    /// scheduler holds for each decode step, so passes and steps take turns (a long embedding
    /// call slows running chats by its passes, never stalls them for the whole call).
    /// `isCancelled` is checked before each layer of a pass.
    ///
    /// Throws ``EngineError``: `.invalidOption` for no sequences or an empty one,
    /// `.invalidToken` for an id outside the vocabulary, `.contextLengthExceeded` for a
    /// sequence longer than ``context``, `.cancelled`.
    public func embeddings(
        for sequences: [[Int32]], pooling: EmbeddingPooling = .mean, isCancelled: () -> Bool = { false }
    ) throws -> [[Float]] {
        let dim = model.options.hiddenSize, vocab = model.options.vocabSize
        guard !sequences.isEmpty else { throw EngineError(.invalidOption, "nothing to embed") }
        for (index, tokens) in sequences.enumerated() {
            guard !tokens.isEmpty else { throw EngineError(.invalidOption, "input \(index) to embed is empty") }
            guard tokens.count <= context else {
                throw EngineError(
                    .contextLengthExceeded,
                    "input \(index) is \(tokens.count) tokens but the context holds \(context)",
                    remedy: "Shorten the input or raise --ctx (up to the model's \(model.options.maxContext))")
            }
            if let bad = tokens.first(where: { $0 < 0 || Int($0) >= vocab }) {
                throw EngineError(.invalidToken, "token id \(bad) is outside the vocabulary (\(vocab))")
            }
        }
        var sums = [[Double]](repeating: [Double](repeating: 0, count: dim), count: sequences.count)
        let cacheType = decoder.cache.type, layers = decoder.cache.layerCount, width = decoder.cache.width
        var scratchCache: KVCache?
        for pass in EmbeddingPlan(lengths: sequences.map(\.count), maxBatch: decoder.maxBatch).passes {
            if isCancelled() { throw EngineError(.cancelled, "cancelled") }
            // The batch: each sequence's run in its own scratch slot.
            var items: [Decoder.BatchItem] = []
            var rows: [Int] = []
            var rowOwner: [Int] = []
            var lengths: [Int: Int] = [:]
            for (slot, run) in pass.runs.enumerated() {
                let tokens = sequences[run.sequence]
                lengths[slot] = tokens.count
                for position in run.start..<run.end {
                    let isLast = position == tokens.count - 1
                    if pooling == .mean || isLast {
                        rows.append(items.count)
                        rowOwner.append(run.sequence)
                    }
                    items.append(.init(sequence: slot, position: position, token: tokens[position]))
                }
            }
            // The scratch cache is this call's alone: made (or reused) outside the lock. A run
            // that continues a long sequence reads the positions its previous pass stored.
            let scratch = try pass.cache(
                layers: layers, width: width, headDim: decoder.cache.headDim, type: cacheType, reusing: &scratchCache)
            for (slot, run) in pass.runs.enumerated() { scratch.counts[slot] = run.start }
            var hidden = [Float](repeating: 0, count: rows.count * dim)
            try hidden.withUnsafeMutableBufferPointer { out in
                guard let base = out.baseAddress else { return }
                // The decoder's buffers are shared with the scheduler's decode steps.
                lock.lock()
                defer { lock.unlock() }
                try decoder.hiddenStates(
                    batch: items, rows: rows, lengths: lengths, cache: scratch, into: base, shouldStop: isCancelled)
            }
            // Pooling: sum of the rows of each sequence (in Double: sums over thousands of rows).
            for (i, owner) in rowOwner.enumerated() {
                hidden.withUnsafeBufferPointer { h in
                    for j in 0..<dim { sums[owner][j] += Double(h[i * dim + j]) }
                }
            }
        }
        return sums.enumerated().map { index, sum in
            let count = pooling == .mean ? Double(sequences[index].count) : 1
            return l2Normalized(sum.map { $0 / count })
        }
    }
}

/// `v / ‖v‖₂` in Float (a zero vector stays zero).
func l2Normalized(_ v: [Double]) -> [Float] {
    let norm = v.reduce(0) { $0 + $1 * $1 }.squareRoot()
    guard norm > 0, norm.isFinite else { return v.map { Float($0) } }
    return v.map { Float($0 / norm) }
}

/// How a call's sequences are cut into batched passes. Sequences of at most `maxBatch` tokens
/// run whole, shortest first, as many per pass as fit in `maxBatch` tokens and in a scratch
/// cache of at most `2·maxBatch` positions (slots × longest run, so a pass of many short
/// sequences and one long one does not allocate a square); longer sequences run alone, in
/// chunks of `maxBatch` at positions 0, maxBatch, 2·maxBatch… — so each sequence is cut the
/// same way whatever else the call holds.
struct EmbeddingPlan {
    /// Tokens `start..<end` of sequence `sequence`.
    struct Run: Equatable {
        var sequence: Int
        var start: Int
        var end: Int
    }

    /// One forward pass: its runs, one scratch slot each, and the positions each slot needs.
    struct Pass: Equatable {
        var runs: [Run]
        var capacity: Int

        /// A scratch cache for this pass: `existing` when it is large enough and of the
        /// same shape, else a new one (kept in `existing` for the next pass).
        func cache(layers: Int, width: Int, headDim: Int, type: DType, reusing existing: inout KVCache?) throws -> KVCache {
            if let cache = existing, cache.sequences >= runs.count, cache.capacity >= capacity {
                return cache
            }
            let cache = try KVCache(
                layers: layers, capacity: capacity, width: width, sequences: runs.count, type: type, headDim: headDim)
            existing = cache
            return cache
        }
    }

    var passes: [Pass] = []

    init(lengths: [Int], maxBatch: Int) {
        let maxBatch = max(1, maxBatch)
        let order = lengths.indices.sorted { (lengths[$0], $0) < (lengths[$1], $1) }
        var current: [Run] = []
        var tokens = 0
        func close() {
            guard !current.isEmpty else { return }
            passes.append(Pass(runs: current, capacity: current.map(\.end).max() ?? 0))
            current = []
            tokens = 0
        }
        for sequence in order where lengths[sequence] <= maxBatch {
            let length = lengths[sequence]
            // Sorted by length: this one is the longest of the pass so far.
            if tokens + length > maxBatch || (current.count + 1) * length > 2 * maxBatch { close() }
            current.append(Run(sequence: sequence, start: 0, end: length))
            tokens += length
        }
        close()
        for sequence in order where lengths[sequence] > maxBatch {
            let length = lengths[sequence]
            for start in stride(from: 0, to: length, by: maxBatch) {
                passes.append(Pass(runs: [Run(sequence: sequence, start: start, end: min(length, start + maxBatch))], capacity: length))
            }
        }
    }
}
