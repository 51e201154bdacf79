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
