import Foundation
import HearthKernels

/// A second, smaller model that drafts tokens for the generator's model to verify
/// (``SpeculativeMode/draft``, `--draft-model`). It has its own KV slots, one per slot of the
/// generator, and runs on the generator's worker threads between its steps.
///
/// Each drafting step it brings the draft slot up to the sequence (the tokens it already holds
/// are kept; what the verification rejected is cut off, what was generated since is fed), then
/// proposes its most likely next token, feeds it and proposes the next, up to the length the
/// generator chose. Sequences that draft in the same step draft together, one batched step of
/// the draft model per drafted position. A drafted token is kept only where the generator's
/// sampler, on its own model's logits, picks that very token — so output is the generator
/// model's, greedy or sampled (a draft of most likely tokens is the point-mass case of the
/// standard speculative-sampling rule: accept with the target's probability of the token,
/// otherwise draw from the target renormalised without it — which is what sampling from the
/// target and comparing does).
final class DraftModel {
    let model: TransformerModel
    let decoder: Decoder
    /// Per slot: the tokens whose keys and values the draft's cache holds.
    private var held: [[Int32]]
    /// Seconds of one drafting step of the draft model by its rows (timed as it drafts).
    private(set) var costs = StepCosts()
    /// Drafts are ids below this: both models' output rows and the shared vocabulary.
    private let proposable: Int

    /// A draft model for `target`'s generator: `sequences` slots of `context` positions, steps
    /// of up to `batch` tokens, on `pool` (the generator's workers: one set of threads).
    /// - Throws: `EngineError` `.invalidOption` when the tokenizers differ (``checkTokenizers``).
    init(model: TransformerModel, target: TransformerModel, context: Int, batch: Int, sequences: Int, pool: WorkerPool) throws {
        try Self.checkTokenizers(draft: model, target: target)
        self.model = model
        decoder = try Decoder(
            weights: model.weights, options: model.options, context: context, maxBatch: batch, sequences: sequences, pool: pool)
        held = Array(repeating: [], count: sequences)
        proposable = min(model.options.vocabSize, target.options.vocabSize, target.tokenizer.vocabularySize)
    }

    /// Whether `draft` can draft for `target`: the same vocabulary (every id the same bytes,
    /// the same special tokens), the same beginning of sequence, the same end tokens declared
    /// by the tokenizers (a model's generation config may add its own: the model's decide where
    /// the output ends). A draft model's tokens are only useful when an id means the same text
    /// to both models.
    /// - Throws: `EngineError` `.invalidOption` naming the first difference.
    static func checkTokenizers(draft: TransformerModel, target: TransformerModel) throws {
        let a = draft.tokenizer, b = target.tokenizer
        func differ(_ what: String) -> EngineError {
            EngineError(
                .invalidOption, "the draft model's tokenizer differs from the model's (\(what))",
                remedy: "Use a draft model of the same family, with the same tokenizer")
        }
        guard a.vocabularySize == b.vocabularySize else {
            throw differ("\(a.vocabularySize) tokens against \(b.vocabularySize)")
        }
        guard a.bosID == b.bosID, a.addsBOS == b.addsBOS else { throw differ("beginning-of-sequence token") }
        guard a.eosIDs == b.eosIDs else { throw differ("end-of-sequence tokens") }
        for id in 0..<Int32(a.vocabularySize) where a.bytes(of: id) != b.bytes(of: id) || a.isSpecial(id) != b.isSpecial(id) {
            throw differ("token \(id)")
        }
    }

    /// One sequence's request for drafts: the slot, its tokens so far (prompt and reply; the
    /// last is the step's input) and how many tokens to draft after them.
    struct Request {
        var slot: Int
        var history: [Int32]
        var count: Int
    }

    /// Drafts `count` tokens after each request's history (fewer when the context ends), all
    /// requests together. `shouldStop` is asked before each layer of each step (the generator's
    /// cancellation); a step stopped or failed leaves its sequences' drafts as far as they got.
    func drafts(_ requests: [Request], shouldStop: () -> Bool) -> [[Int32]] {
        var results = [[Int32]](repeating: [], count: requests.count)
        var inputs: [ArraySlice<Int32>] = []
        var positions: [Int] = []
        let ends = requests.map { $0.history.count + $0.count - 1 }
        for (r, end) in zip(requests, ends) {
            let start = resume(slot: r.slot, history: r.history, end: end)
            inputs.append(r.history[start...])
            positions.append(start)
        }
        while true {
            // Single tokens (drafting) first, then catch-up chunks, within the step's budget.
            let order = requests.indices
                .filter { !inputs[$0].isEmpty && results[$0].count < requests[$0].count }
                .sorted { (inputs[$0].count > 1 ? 1 : 0, $0) < (inputs[$1].count > 1 ? 1 : 0, $1) }
            guard !order.isEmpty else { break }
            var items: [Decoder.BatchItem] = [], logitsFor: [Int] = [], completing: [Int] = []
            var fed: [(index: Int, count: Int)] = []
            var lengths: [Int: Int] = [:]
            var budget = decoder.maxBatch
            let singles = order.filter { inputs[$0].count == 1 }.count
            for i in order where budget > 0 {
                let n = min(inputs[i].count, budget)
                budget -= n
                for (k, token) in inputs[i].prefix(n).enumerated() {
                    items.append(.init(sequence: requests[i].slot, position: positions[i] + k, token: token))
                }
                if n == inputs[i].count {
                    logitsFor.append(items.count - 1)
                    completing.append(i)
                }
                fed.append((i, n))
                lengths[requests[i].slot] = ends[i]
            }
            let started = DispatchTime.now()
            let logits: UnsafeBufferPointer<Float>
            do {
                logits = try decoder.forward(
                    batch: items, logitsFor: logitsFor, generatedRows: min(singles, items.count), lengths: lengths,
                    shouldStop: shouldStop)
            } catch {
                // Cancelled or failed: what the slots held before the step is intact; stop drafting.
                for (i, _) in fed { held[requests[i].slot] = Array(held[requests[i].slot].prefix(decoder.cache.counts[requests[i].slot])) }
                break
            }
            if singles == items.count {
                costs.record(rows: items.count, seconds: Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9)
            }
            for (i, n) in fed {
                held[requests[i].slot] += inputs[i].prefix(n)
                positions[i] += n
                inputs[i] = inputs[i].dropFirst(n)
            }
            guard let base = logits.baseAddress else { break }
            for (row, i) in completing.enumerated() {
                let token = Self.argmax(base + row * decoder.options.vocabSize, count: proposable)
                results[i].append(token)
                // The last draft is not fed: the generator's verification step feeds it.
                if results[i].count < requests[i].count, positions[i] < decoder.context - 1 { inputs[i] = [token] }
            }
        }
        return results
    }

    /// Makes slot `slot` hold a prefix of `history` it can continue from (its own, or a longer
    /// one copied from another slot) and returns its length: at most `history.count − 1`, so
    /// the last token is fed and gives the logits of the first draft; 0 when LongRoPE's factors
    /// for a sequence reaching `end` differ from those the held keys were computed with.
    private func resume(slot: Int, history: [Int32], end: Int) -> Int {
        let limit = history.count - 1
        var shared = commonPrefix(held[slot], history, limit: limit)
        var donor = slot
        for d in held.indices where d != slot {
            let s = commonPrefix(held[d], history, limit: limit)
            if s > shared + 16, decoder.cache.canResume(at: s, sequence: d) {
                shared = s
                donor = d
            }
        }
        let cache = decoder.cache
        if decoder.needsRecompute(cached: shared, end: end)
            || decoder.usesLongFactors(length: cache.counts[donor]) != decoder.usesLongFactors(length: end)
        {
            (shared, donor) = (0, slot)
        }
        shared = cache.copyPrefix(from: donor, to: slot, count: shared)
        // Its own prefix is cut in place (no copy of the history every step).
        if donor == slot { held[slot].removeSubrange(shared...) } else { held[slot] = Array(history.prefix(shared)) }
        return shared
    }

    private func commonPrefix(_ a: [Int32], _ b: [Int32], limit: Int) -> Int {
        var n = 0
        let end = min(a.count, b.count, limit)
        while n < end && a[n] == b[n] { n += 1 }
        return n
    }

    /// The id of the largest of `count` logits (the lowest id on ties).
    private static func argmax(_ logits: UnsafePointer<Float>, count: Int) -> Int32 {
        var best = 0
        var value = -Float.infinity
        for i in 0..<count where logits[i] > value {
            value = logits[i]
            best = i
        }
        return Int32(best)
    }

    /// Forgets what every slot holds (the generator's ``Generator/reset()``).
    func reset() {
        for s in held.indices {
            held[s] = []
            decoder.cache.truncate(to: 0, sequence: s)
        }
    }
}
