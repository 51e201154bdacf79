import Foundation
import Testing

@testable import HearthEngine

/// The one-pass top-k selection keeps exactly the k most likely tokens.
@Suite struct SamplerTests {
    @Test func topKSamplesOnlyTheKBest() {
        var state: UInt64 = 7
        let logits: [Float] = (0..<5000).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24) * 10
        }
        let best = Set(logits.indices.sorted { logits[$0] > logits[$1] }.prefix(5).map(Int32.init))
        var options = SamplingOptions()
        options.temperature = 5
        options.topK = 5
        options.topP = 1
        options.minP = 0
        options.seed = 1
        var sampler = Sampler(options: options)
        var seen = Set<Int32>()
        logits.withUnsafeBufferPointer { buffer in
            for _ in 0..<400 { seen.insert(sampler.sample(buffer, recent: []) ) }
        }
        #expect(seen.isSubset(of: best))
        #expect(seen.count == 5, "a hot temperature over 400 draws reaches all five")
    }

    /// The ranking skips runs of 16 ids whose largest logit cannot matter, and takes the ids with
    /// a bias, a penalty or a constraint one by one: it must leave exactly what the plain loop
    /// over every id leaves (the definition below: each allowed id in order, its adjusted value ÷
    /// temperature offered to a best-first list of k that keeps earlier ids ahead of equal later
    /// ones; greedy keeps the first largest). Vocabularies of odd sizes, many ties, −∞ and NaN,
    /// bans, biases, penalties and masks.
    @Test func rankingEqualsThePlainLoop() {
        var state: UInt64 = 11
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        for trial in 0..<300 {
            let n = [1, 7, 16, 17, 63, 64, 65, 200, 1000, 4111][trial % 10]
            let logits: [Float] = (0..<n).map { _ in
                let r = next()
                if r % 53 == 0 { return -.infinity }
                if r % 61 == 0, trial % 3 == 0 { return .nan }
                if r % 4 == 0 { return 2.5 }  // ties
                return Float(Int(r % 2000) - 1000) / 200
            }
            var options = SamplingOptions()
            options.temperature = trial % 2 == 0 ? 0 : 0.7
            options.topK = [0, 1, 5, 40][(trial / 2) % 4]
            if options.topK == 0, logits.contains(where: \.isNaN) { continue }  // a full sort orders NaN arbitrarily
            options.topP = 1
            options.minP = 0
            if trial % 5 == 1 { options.repetitionPenalty = 1.3 }
            if trial % 7 == 2 { options.presencePenalty = 0.5; options.frequencyPenalty = 0.25 }
            for _ in 0..<(trial % 4) {
                options.logitBias[Int32(next() % UInt64(n))] = [-100, 3, -2.5, 0][Int(next() % 4)]
            }
            let recent = (0..<(trial % 9)).map { _ in Int32(next() % UInt64(n)) }
            var generated: [Int32: Int] = [:]
            for id in recent { generated[id, default: 0] += 1 }
            let allowed: [UInt64]? = trial % 3 == 1 ? (0..<((n + 63) / 64)).map { _ in next() << 31 ^ next() } : nil

            // The definition: every id in order.
            let bias = options.logitBias
            let penalised = options.repetitionPenalty != 1 ? Set(recent) : []
            var expected: [(id: Int32, logit: Float)] = []
            var best = -1
            var bestValue = -Float.infinity
            let greedy = options.temperature == 0
            let k = greedy ? 1 : options.topK > 0 ? min(options.topK, n) : n
            for id in 0..<n {
                if let b = bias[Int32(id)], b <= -100 { continue }
                if let allowed, allowed[id >> 6] >> UInt64(id & 63) & 1 == 0 { continue }
                var v = logits[id] + (bias[Int32(id)] ?? 0)
                if penalised.contains(Int32(id)) { v = v > 0 ? v / options.repetitionPenalty : v * options.repetitionPenalty }
                if options.presencePenalty != 0, let c = generated[Int32(id)] {
                    v -= options.presencePenalty + options.frequencyPenalty * Float(c)
                }
                if greedy {
                    if v > bestValue || best < 0 { (best, bestValue) = (id, v) }
                    continue
                }
                v /= options.temperature
                if k == n { expected.append((Int32(id), v)); continue }
                if expected.count == k {
                    guard v > expected[k - 1].logit else { continue }
                    expected.removeLast()
                }
                expected.insert((Int32(id), v), at: expected.firstIndex { v > $0.logit } ?? expected.count)
            }
            if greedy, best >= 0 { expected = [(Int32(best), bestValue)] }
            if !greedy, k == n { expected.sort { $0.logit > $1.logit } }

            // With and without the normaliser's exponentials (a pass that reads only the maxima).
            for normalizes in [true, false] {
                var sampler = Sampler(options: options, normalizes: normalizes)
                logits.withUnsafeBufferPointer { buffer in
                    // Twice: the second call must clear what the first marked.
                    for _ in 0..<2 {
                        sampler.rank(buffer, recent: recent[...], generated: options.presencePenalty != 0 ? generated : [:], allowed: allowed)
                        let got = sampler.candidates
                        #expect(got.map(\.id) == expected.map(\.id), "trial \(trial): n \(n), top-k \(options.topK), T \(options.temperature), normalizes \(normalizes)")
                        #expect(zip(got, expected).allSatisfy { $0.logit == $1.logit || ($0.logit.isNaN && $1.logit.isNaN) }, "trial \(trial)")
                    }
                }
            }
        }
    }

    /// The top log-probabilities skip runs of 16 ids that cannot enter the list: they must be
    /// the k largest logits, most likely first and the lower id first among equals (ties, −∞ and
    /// NaN among them), minus the normaliser.
    @Test func topLogprobsEqualThePlainOrder() {
        var state: UInt64 = 5
        for trial in 0..<60 {
            let n = [1, 15, 16, 33, 500, 4099][trial % 6]
            let logits: [Float] = (0..<n).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let r = state >> 33
                if r % 41 == 0 { return -.infinity }
                if r % 43 == 0, trial % 2 == 0 { return .nan }
                return r % 3 == 0 ? 1.5 : Float(Int(r % 1000) - 500) / 100
            }
            let k = [1, 3, 20][trial % 3]
            let normalizer: Float = 0.25
            var expected: [(id: Int32, logprob: Float)] = []
            for (i, v) in logits.enumerated() where !v.isNaN {
                expected.append((Int32(i), v))
            }
            // Stable by id among equals: sort by value, then id.
            expected.sort { $0.logprob != $1.logprob ? $0.logprob > $1.logprob : $0.id < $1.id }
            let want = expected.prefix(k).map { ($0.id, $0.logprob - normalizer) }
            let got = logits.withUnsafeBufferPointer { LogProbabilities.top(k, in: $0, normalizer: normalizer) }
            #expect(got.map(\.id) == want.map(\.0), "trial \(trial): n \(n), k \(k)")
            #expect(got.map(\.logprob) == want.map(\.1), "trial \(trial)")
        }
    }

    /// The normaliser a sampler hands out after a pick (from its one pass of run statistics)
    /// is log Σ exp of the logits it saw, greedy or drawing, over vocabularies of odd sizes.
    @Test func normaliserOfTheLastLogits() {
        var state: UInt64 = 3
        for (trial, n) in [1, 16, 17, 1000, 262_144].enumerated() {
            let logits: [Float] = (0..<n).map { _ in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return Float(Int(state >> 33) % 4000 - 2000) / 100
            }
            let most = Double(logits.max() ?? 0)
            let exact = most + log(logits.reduce(0.0) { $0 + exp(Double($1) - most) })
            var options = SamplingOptions()
            options.temperature = trial % 2 == 0 ? 0 : 0.8
            options.seed = 1
            var sampler = Sampler(options: options)
            #expect(sampler.normalizerOfLastLogits() == -.infinity)
            let value = logits.withUnsafeBufferPointer { buffer in
                _ = sampler.sample(buffer, recent: [])
                return sampler.normalizerOfLastLogits()
            }
            #expect(abs(Double(value) - exact) <= 2e-6 * max(1, abs(exact)), "\(n) logits: \(value) vs \(exact)")
            // A sampler told not to normalise picks the same token and has no normaliser.
            var plain = Sampler(options: options, normalizes: false)
            let picks = logits.withUnsafeBufferPointer { buffer in
                var again = Sampler(options: options)
                return (again.sample(buffer, recent: []), plain.sample(buffer, recent: []))
            }
            #expect(picks.0 == picks.1)
            #expect(plain.normalizerOfLastLogits().isNaN)
        }
    }

    /// `logit_bias`: −100 bans a token whatever its logit (greedy and sampled); a positive bias
    /// makes a token the greedy choice.
    @Test func logitBiasBansAndFavours() {
        let logits: [Float] = [1, 9, 3, 8.5, 0]
        var options = SamplingOptions()
        options.temperature = 0
        func pick(_ bias: [Int32: Float], temperature: Float = 0, draws: Int = 1) -> Set<Int32> {
            var o = options
            o.temperature = temperature
            o.topK = 0
            o.topP = 1
            o.minP = 0
            o.seed = 3
            o.logitBias = bias
            var sampler = Sampler(options: o)
            return logits.withUnsafeBufferPointer { buffer in Set((0..<draws).map { _ in sampler.sample(buffer, recent: []) }) }
        }
        #expect(pick([:]) == [1])
        #expect(pick([1: -100]) == [3])
        #expect(pick([4: 9.5]) == [4])
        #expect(pick([1: -1]) == [3])
        let sampled = pick([1: -100, 3: -100], temperature: 3, draws: 300)
        #expect(!sampled.contains(1) && !sampled.contains(3) && sampled.count == 3)
    }
}
