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
}
