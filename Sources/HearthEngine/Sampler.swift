import Foundation
import HearthFormats
import HearthKernels

/// Sampling settings. Temperature 0 is greedy decoding.
///
/// The engine does not refuse values: the one rule set for them is the provider layer's
/// `ChatOptions.validate()`, which every entry point applies once (the CLI's flags, the
/// REPL's `/set`, `LocalProvider`, the server as it parses a request). Out of range, a value
/// reads as the nearest setting that means something: a temperature ≤ 0 (or not finite) is
/// greedy; top-k ≤ 0, top-p ≥ 1 and min-p ≤ 0 are off, top-p ≤ 0 and min-p ≥ 1 keep only the
/// most likely token; a repetition penalty that is not a positive number is off, as are
/// presence and frequency penalties that are not finite.
public struct SamplingOptions: Sendable, Codable, Equatable {
    /// Softmax temperature; 0 picks the most likely token.
    public var temperature: Float = 0.8
    /// Keep only the k most likely tokens (0 disables).
    public var topK: Int = 40
    /// Keep the smallest set of tokens whose probability reaches p (1 disables).
    public var topP: Float = 0.95
    /// Drop tokens less likely than min-p × the top probability (0 disables).
    public var minP: Float = 0.05
    /// Divide positive (multiply negative) logits of recently seen tokens by this (1 disables).
    public var repetitionPenalty: Float = 1.0
    /// How many recent tokens the repetition penalty looks at.
    public var repetitionWindow: Int = 64
    /// Subtracted once from the logit of every token already generated (OpenAI's presence_penalty).
    public var presencePenalty: Float = 0
    /// Subtracted per occurrence from the logit of generated tokens (OpenAI's frequency_penalty).
    public var frequencyPenalty: Float = 0
    /// Seed for reproducible sampling; nil draws one at random.
    public var seed: UInt64?
    /// Added to a token's logit before sampling (OpenAI's `logit_bias`: −100…100); −100 bans
    /// the token outright, whatever its logit.
    public var logitBias: [Int32: Float] = [:]

    public init() {}
}

extension SamplingOptions {
    /// The one place sampling defaults are resolved (CLI, REPL, `LocalProvider`, server): each
    /// value given wins, else the model's `generation_config.json` (`do_sample: false` means
    /// greedy), else the defaults above (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05,
    /// no repetition penalty).
    package init(
        temperature: Double?, topK: Int?, topP: Double?, minP: Double?, repetitionPenalty: Double?,
        presencePenalty: Double? = nil, frequencyPenalty: Double? = nil, seed: Int?, modelDefaults: GenerationConfig?
    ) {
        self.init()
        let greedyByDefault = modelDefaults?.doSample == false
        self.temperature = Float(temperature ?? (greedyByDefault ? 0 : modelDefaults?.temperature ?? Double(self.temperature)))
        self.topK = topK ?? modelDefaults?.topK ?? self.topK
        self.topP = Float(topP ?? modelDefaults?.topP ?? Double(self.topP))
        self.minP = Float(minP ?? Double(self.minP))
        self.repetitionPenalty = Float(repetitionPenalty ?? modelDefaults?.repetitionPenalty ?? Double(self.repetitionPenalty))
        self.presencePenalty = Float(presencePenalty ?? 0)
        self.frequencyPenalty = Float(frequencyPenalty ?? 0)
        self.seed = seed.map { UInt64(truncatingIfNeeded: $0) }
    }
}

/// xoshiro256** seeded through SplitMix64: fast, reproducible across platforms.
package struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    package init(seed: UInt64) {
        var z = seed
        func splitMix() -> UInt64 {
            z &+= 0x9E37_79B9_7F4A_7C15
            var r = z
            r = (r ^ (r >> 30)) &* 0xBF58_476D_1CE4_E5B9
            r = (r ^ (r >> 27)) &* 0x94D0_49BB_1331_11EB
            return r ^ (r >> 31)
        }
        s = (splitMix(), splitMix(), splitMix(), splitMix())
    }

    package mutating func next() -> UInt64 {
        let result = ((s.1 &* 5) << 7 | (s.1 &* 5) >> 57) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = s.3 << 45 | s.3 >> 19
        return result
    }
}

/// Picks the next token from logits: repetition penalty, then temperature, top-k, top-p and
/// min-p (the order transformers applies them), then a draw from the seeded generator.
/// Buffers are reused across calls.
package struct Sampler {
    package let options: SamplingOptions
    private var rng: SeededGenerator
    /// What the last ``rank(_:recent:generated:allowed:)`` left (reused across calls).
    private(set) var candidates: [(id: Int32, logit: Float)] = []
    /// A bit per token id (and one spare word) for the ids ``sample`` takes one by one; the ids
    /// set by the last call are cleared by the next.
    private var special: [UInt64] = []
    private var marked: [Int] = []
    /// The last ranked logits' ``runStatistics(_:_:maxima:sums:level:)``: the largest logit of
    /// each run of 16 ids (`runs` of them), then each run's Σ e^(logit − its largest).
    private var statistics: [Float] = []
    private var runs = 0
    /// `options.logitBias` as a dense array over the ids it names (empty without a bias).
    private let bias: [Float]
    /// The ids with a nonzero bias (``bias`` can reach far into a vocabulary for one id).
    private let biasedIDs: [Int]

    /// Whether ``sample`` also sums the exponentials its pass reads, for
    /// ``normalizerOfLastLogits()`` (a greedy pick needs only the largest values).
    package let normalizes: Bool

    /// A sampler with `options`; `normalizes` false skips the exponentials of the log-probability
    /// normaliser (``normalizerOfLastLogits()`` is then NaN).
    package init(options: SamplingOptions, normalizes: Bool = true) {
        self.options = options
        self.normalizes = normalizes
        rng = SeededGenerator(seed: options.seed ?? UInt64.random(in: 0...UInt64.max))
        var dense: [Float] = []
        if let largest = options.logitBias.keys.max(), largest >= 0 {
            dense = [Float](repeating: 0, count: Int(largest) + 1)
            for (id, value) in options.logitBias where id >= 0 { dense[Int(id)] = value }
        }
        bias = dense
        biasedIDs = dense.indices.filter { dense[$0] != 0 }
    }

    /// Chooses a token. `recent` are the latest tokens (for the repetition penalty);
    /// `generated` counts the tokens generated so far (for presence/frequency penalties);
    /// `allowed`, when given, is a bit per token id (`allowed[id >> 6] >> (id & 63) & 1`) and only
    /// those tokens can be chosen (a structured-output constraint; it must allow at least one).
    package mutating func sample(
        _ logits: UnsafeBufferPointer<Float>, recent: ArraySlice<Int32>, generated: [Int32: Int] = [:],
        allowed: [UInt64]? = nil
    ) -> Int32 {
        rank(logits, recent: recent, generated: generated, allowed: allowed)
        guard !candidates.isEmpty else { return 0 }  // nothing allowed: the caller checks this first
        if greedy { return candidates[0].id }
        // Softmax over the survivors.
        let maxLogit = candidates[0].logit
        var probabilities = candidates.map { expf($0.logit - maxLogit) }
        let total = probabilities.reduce(0, +)
        for i in probabilities.indices { probabilities[i] /= total }
        var keep = probabilities.count
        if options.topP < 1 {
            var cumulative: Float = 0
            for (i, p) in probabilities.enumerated() {
                cumulative += p
                if cumulative >= options.topP {
                    keep = i + 1
                    break
                }
            }
        }
        if options.minP > 0 {
            let threshold = probabilities[0] * options.minP
            keep = min(keep, max(1, probabilities.prefix(keep).firstIndex { $0 < threshold } ?? keep))
        }
        let kept = probabilities.prefix(keep)
        let sum = kept.reduce(0, +)
        var r = Float(Double(rng.next() >> 11) * 0x1.0p-53) * sum
        for (i, p) in kept.enumerated() {
            r -= p
            if r <= 0 { return candidates[i].id }
        }
        return candidates[keep - 1].id
    }

    /// log Σ exp of the logits ``sample`` (``rank(_:recent:generated:allowed:)``) last saw — their
    /// log-probability normaliser, from the run statistics that pass already made (−∞ before
    /// any call or for an empty vector; NaN unless the sampler ``normalizes``).
    package func normalizerOfLastLogits() -> Float {
        let runCount = runs
        guard runCount > 0 else { return -.infinity }
        guard normalizes else { return .nan }
        return statistics.withUnsafeBufferPointer {
            let maxima = $0.baseAddress.unsafelyUnwrapped
            return logSumExp(runMaxima: maxima, sums: maxima + runCount, runs: runCount)
        }
    }

    /// Whether ``sample`` picks the largest value rather than drawing.
    var greedy: Bool { !(options.temperature > 0) || !options.temperature.isFinite }

    // Long: the sampler's hot loop over the vocabulary (bias, penalties, the grammar's mask,
    // temperature, top-k selection) in one pass per token; split into passes it would read the logits
    // several times.
    /// Fills ``candidates`` with what ``sample`` chooses among, best first, each id with its
    /// value after the bias and penalties, divided by the temperature: the top-k allowed ids
    /// (all of them when top-k is 0; ties keep the lower id first), or when greedy the one
    /// largest (the lowest id among equals; the first allowed id when no value is larger than
    /// −∞). Empty when nothing is allowed.
    mutating func rank(
        _ logits: UnsafeBufferPointer<Float>, recent: ArraySlice<Int32>, generated: [Int32: Int], allowed: [UInt64]?
    ) {
        let bias = self.bias
        @inline(__always) func isAllowed(_ id: Int) -> Bool {
            if id < bias.count, bias[id] <= -100 { return false }  // banned by logit_bias
            guard let allowed else { return true }
            let word = id >> 6
            return word < allowed.count && allowed[word] >> UInt64(id & 63) & 1 == 1
        }
        // Values without a meaning read as off (see ``SamplingOptions``).
        let penalty = options.repetitionPenalty
        let penalised = penalty != 1 && penalty > 0 && penalty.isFinite ? Set(recent.suffix(max(0, options.repetitionWindow))) : []
        let presence = options.presencePenalty.isFinite ? options.presencePenalty : 0
        let frequency = options.frequencyPenalty.isFinite ? options.frequencyPenalty : 0
        let counted = presence != 0 || frequency != 0
        @inline(__always) func adjusted(_ id: Int) -> Float {
            var v = logits[id]
            if id < bias.count { v += bias[id] }
            if penalised.contains(Int32(id)) { v = v > 0 ? v / penalty : v * penalty }
            if counted, let n = generated[Int32(id)] { v -= presence + frequency * Float(n) }
            return v
        }
        // The ids whose value is not the raw logit (a bias, a penalty) or that may be banned: the
        // scan below takes them one by one, every other run of 16 ids as one vector when its
        // largest logit can matter.
        markSpecial(count: logits.count, biased: biasedIDs, penalised: penalised, generated: counted ? generated : [:])
        let special = self.special
        let greedy = self.greedy
        let temperature = greedy ? 1 : options.temperature
        let k = greedy ? 1 : options.topK > 0 ? min(options.topK, logits.count) : logits.count
        var best = -1
        var bestValue = -Float.infinity
        candidates.removeAll(keepingCapacity: true)

        /// Offers id `i` with value `value` (already divided by the temperature), in id order.
        @inline(__always) func offer(_ i: Int, _ value: Float) {
            if greedy {
                if value > bestValue || best < 0 {
                    bestValue = value
                    best = i
                }
                return
            }
            if k == logits.count {
                candidates.append((Int32(i), value))
                return
            }
            // Keep only the k best in one pass (a full sort of a 262k vocabulary every token is
            // what this avoids): candidates stays sorted, best first.
            if candidates.count == k {
                guard let worst = candidates.last, value > worst.logit else { return }
                candidates.removeLast()
            }
            let index = candidates.firstIndex { value > $0.logit } ?? candidates.count
            candidates.insert((Int32(i), value), at: index)
        }
        /// Whether a run whose largest scaled value is `most` can change the result.
        @inline(__always) func matters(_ most: Float) -> Bool {
            if greedy { return best < 0 || most > bestValue }
            if candidates.count < k { return true }
            return most > (candidates.last?.logit ?? -.infinity)
        }
        runs = 0
        guard let base = logits.baseAddress, !logits.isEmpty else { return }
        let runCount = (logits.count + 15) / 16
        if statistics.count < 2 * runCount { statistics = [Float](repeating: 0, count: 2 * runCount) }
        statistics.withUnsafeMutableBufferPointer {
            let maxima = $0.baseAddress.unsafelyUnwrapped
            runStatistics(base, logits.count, maxima: maxima, sums: normalizes ? maxima + runCount : nil)
        }
        runs = runCount
        let maxima = self.statistics
        var chunk = 0
        while chunk < logits.count {
            let end = min(chunk + 16, logits.count)
            let word = chunk >> 6, shift = UInt64(chunk & 63)
            let lanes: UInt64 = 0xFFFF
            let open = allowed.map { word < $0.count ? $0[word] >> shift & lanes : 0 } ?? lanes
            let marked = special[word] >> shift & lanes
            if end - chunk == 16, open == lanes, marked == 0 {
                // Sixteen plain, allowed ids: their values are the logits themselves.
                if matters(maxima[chunk / 16] / temperature) {
                    for i in chunk..<end { offer(i, logits[i] / temperature) }
                }
            } else if open != 0 {
                for i in chunk..<end where isAllowed(i) { offer(i, adjusted(i) / temperature) }
            }
            chunk = end
        }
        if greedy {
            if best >= 0 { candidates.append((Int32(best), bestValue)) }
            return
        }
        if k == logits.count { candidates.sort { $0.logit > $1.logit } }
    }
}

extension Sampler {
    /// Sets ``special``'s bits for the ids with a bias, a repetition penalty or a presence /
    /// frequency count (clearing the last call's), sized for `count` ids.
    fileprivate mutating func markSpecial(count: Int, biased: [Int], penalised: Set<Int32>, generated: [Int32: Int]) {
        let words = count / 64 + 2
        if special.count < words { special = [UInt64](repeating: 0, count: words) }
        for id in marked { special[id >> 6] = 0 }
        marked.removeAll(keepingCapacity: true)
        @inline(__always) func mark(_ id: Int) {
            guard id >= 0, id < count else { return }
            special[id >> 6] |= 1 << UInt64(id & 63)
            marked.append(id)
        }
        for id in biased { mark(id) }
        for id in penalised { mark(Int(id)) }
        for id in generated.keys { mark(Int(id)) }
    }
}

/// Log-probabilities of the full distribution (before any sampling filter).
package struct LogProbabilities {
    /// log p(id) for one id.
    package static func of(_ id: Int32, in logits: UnsafeBufferPointer<Float>, normalizer: Float) -> Float {
        logits[Int(id)] - normalizer
    }

    /// The `k` most likely ids with their log-probabilities, most likely first (the lower id
    /// first among equals; NaN is left out). Runs of 16 ids whose largest logit (``runStatistics(_:_:maxima:sums:level:)``)
    /// cannot enter the list are skipped.
    package static func top(_ k: Int, in logits: UnsafeBufferPointer<Float>, normalizer: Float) -> [(id: Int32, logprob: Float)] {
        guard k > 0, let base = logits.baseAddress, !logits.isEmpty else { return [] }
        var best: [(id: Int32, logprob: Float)] = []
        let runs = (logits.count + 15) / 16
        withUnsafeTemporaryAllocation(of: Float.self, capacity: runs) { maxima in
            runStatistics(base, logits.count, maxima: maxima.baseAddress.unsafelyUnwrapped)
            for run in 0..<runs {
                // A run matters while the list is short or when it holds a value above the worst kept.
                guard best.count < k || maxima[run] > best[best.count - 1].logprob else { continue }
                for i in (16 * run)..<min(logits.count, 16 * run + 16) {
                    let v = logits[i]
                    guard !v.isNaN else { continue }  // no place in an order
                    if best.count < k || v > best[best.count - 1].logprob {
                        let index = best.firstIndex { v > $0.logprob } ?? best.count
                        best.insert((Int32(i), v), at: index)
                        if best.count > k { best.removeLast() }
                    }
                }
            }
        }
        return best.map { ($0.id, $0.logprob - normalizer) }
    }

    /// log Σ exp(logits).
    package static func normalizer(_ logits: UnsafeBufferPointer<Float>) -> Float {
        logSumExp(logits.baseAddress!, logits.count)
    }
}
