import Foundation

/// Compares a run's next-token distributions with a saved base run (``LogitsFile``), position
/// by position: the statistics of llama-perplexity's KL-divergence mode.
///
/// Per position, with P the base distribution (its top K and the rest) and Q the current one:
///
///     KL(P‖Q) = Σ_{i ∈ topK(P)} p_i (log p_i − log q_i) + p_rest (log p_rest − log q_rest)
///
/// where `q_rest = 1 − Σ_{i ∈ topK(P)} q_i` (both rests rounded to f32, as stored). With K equal
/// to the vocabulary there is no rest and this is the exact KL divergence; with smaller K it
/// is the divergence of the two distributions coarse-grained to K + 1 outcomes, which never
/// exceeds the exact one. Sums run in double precision.
package struct DistributionComparison: Sendable {
    /// A margin at or above which the base's top token counts as clear (the near-tie cut-off
    /// of Hearth's accuracy tests, in nats).
    package static let clearMargin: Float = 0.1

    /// Per-position KL divergences, in position order.
    package private(set) var divergences: [Double] = []
    private var sameTop = 0
    private var clear = 0
    private var sameTopClear = 0
    private var baseNLL = 0.0
    private var nll = 0.0
    private var absDeltaLogprob = 0.0
    private var maxAbsDeltaLogprob = 0.0

    /// An empty comparison.
    package init() {}

    /// Adds position `index` of `base`, whose current raw logits are `logits` (`vocabSize`
    /// values, log Σ exp = `normalizer`) and whose next token was `next`.
    package mutating func add(
        base: LogitsFile, position index: Int, logits: UnsafeBufferPointer<Float>, normalizer: Float, next: Int32
    ) {
        let (ids, baseLogprobs) = base.top(index)
        var kl = 0.0
        var currentMass = 0.0
        for (id, lp) in zip(ids, baseLogprobs) {
            let q = Double(logits[Int(id)] - normalizer)
            let p = Double(lp)
            kl += exp(p) * (p - q)
            currentMass += exp(q)
        }
        let baseRest = Double(base.restProbabilities[index])
        if baseRest > 0 {
            let currentRest = Double(Float(max(1 - currentMass, 1e-30)))
            kl += baseRest * (log(baseRest) - log(currentRest))
        }
        divergences.append(kl)

        var argmax = 0
        for i in 1..<logits.count where logits[i] > logits[argmax] { argmax = i }
        // The base's best and second-best entries (the file is sorted for K below the
        // vocabulary and in id order for the whole distribution, so search both ways alike).
        var best = baseLogprobs.startIndex
        var second: Int?
        for i in baseLogprobs.indices.dropFirst() {
            if baseLogprobs[i] > baseLogprobs[best] {
                second = best
                best = i
            } else if second.map({ baseLogprobs[i] > baseLogprobs[$0] }) ?? true {
                second = i
            }
        }
        let baseTop = Int(ids[best])
        if argmax == baseTop { sameTop += 1 }
        if let second, baseLogprobs[best] - baseLogprobs[second] >= Self.clearMargin {
            clear += 1
            if argmax == baseTop { sameTopClear += 1 }
        }

        let logprob = Double(logits[Int(next)] - normalizer)
        let baseLogprob = Double(base.nextLogprobs[index])
        nll -= logprob
        baseNLL -= baseLogprob
        absDeltaLogprob += abs(logprob - baseLogprob)
        maxAbsDeltaLogprob = max(maxAbsDeltaLogprob, abs(logprob - baseLogprob))
    }

    /// The statistics so far.
    package struct Summary: Codable, Sendable, Equatable {
        /// Positions compared.
        package var positions: Int
        /// Mean KL divergence (nats).
        package var meanKLD: Double
        /// Median, 99th percentile and maximum of the per-position KL divergence.
        package var medianKLD: Double
        package var p99KLD: Double
        package var maxKLD: Double
        /// Fraction of positions whose most likely token is the base's.
        package var sameTop: Double
        /// The same over positions where the base's top-1/top-2 margin is at least ``clearMargin``.
        package var sameTopClear: Double
        /// How many positions that is.
        package var clearPositions: Int
        /// Perplexity of the base and of this run over the same positions.
        package var basePerplexity: Double
        package var perplexity: Double
        /// `perplexity / basePerplexity − 1`.
        package var deltaPerplexity: Double
        /// Mean and maximum |log p(next) − base log p(next)|.
        package var meanAbsDeltaLogprob: Double
        package var maxAbsDeltaLogprob: Double

        enum CodingKeys: String, CodingKey {
            case positions
            case meanKLD = "mean_kld", medianKLD = "median_kld", p99KLD = "p99_kld", maxKLD = "max_kld"
            case sameTop = "same_top", sameTopClear = "same_top_clear", clearPositions = "clear_positions"
            case basePerplexity = "base_perplexity", perplexity, deltaPerplexity = "delta_perplexity"
            case meanAbsDeltaLogprob = "mean_abs_delta_logprob", maxAbsDeltaLogprob = "max_abs_delta_logprob"
        }
    }

    /// The statistics of the positions added so far (zeros when none were).
    package var summary: Summary {
        let n = divergences.count
        let sorted = divergences.sorted()
        func quantile(_ q: Double) -> Double {
            guard n > 0 else { return 0 }
            // Linear interpolation between closest ranks (numpy's default).
            let rank = q * Double(n - 1)
            let lo = Int(rank.rounded(.down)), hi = min(lo + 1, n - 1)
            return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - Double(lo))
        }
        let denominator = Double(max(n, 1))
        let ppl = exp(nll / denominator), basePPL = exp(baseNLL / denominator)
        return Summary(
            positions: n, meanKLD: divergences.reduce(0, +) / denominator, medianKLD: quantile(0.5),
            p99KLD: quantile(0.99), maxKLD: sorted.last ?? 0, sameTop: Double(sameTop) / denominator,
            sameTopClear: Double(sameTopClear) / Double(max(clear, 1)), clearPositions: clear,
            basePerplexity: basePPL, perplexity: ppl, deltaPerplexity: ppl / basePPL - 1,
            meanAbsDeltaLogprob: absDeltaLogprob / denominator, maxAbsDeltaLogprob: maxAbsDeltaLogprob)
    }
}
