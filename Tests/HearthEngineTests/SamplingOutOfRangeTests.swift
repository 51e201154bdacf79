import HearthTestSupport
import Testing

@testable import HearthEngine

/// The engine's sampler is defined for every value (`SamplingOptions`' documentation): the
/// rule set that refuses values is the provider layer's `ChatOptions.validate()`, applied
/// once per request; values that reach the engine anyway read as the nearest meaningful setting.
@Suite struct SamplingOutOfRangeTests {
    /// Logits with a clear best token (id 2) and a clear second (id 0).
    static let logits: [Float] = [2.0, -1.0, 3.5, 0.5, -3.0, 1.0]

    static func draw(_ configure: (inout SamplingOptions) -> Void, recent: [Int32] = [], generated: [Int32: Int] = [:], seed: UInt64 = 7)
        -> [Int32]
    {
        var options = SamplingOptions()
        options.seed = seed
        configure(&options)
        var sampler = Sampler(options: options)
        return (0..<64).map { _ in
            logits.withUnsafeBufferPointer { sampler.sample($0, recent: recent[...], generated: generated) }
        }
    }

    @Test func temperaturesThatAreNotPositiveAndFiniteAreGreedy() {
        for t in [0, -1, -Float.infinity, .nan, .infinity] as [Float] {
            #expect(Set(Self.draw { $0.temperature = t }) == [2], "temperature \(t)")
        }
        // A positive temperature does sample (the second token appears in 64 draws at T = 2).
        #expect(Set(Self.draw { $0.temperature = 2; $0.topK = 0; $0.minP = 0 }).count > 1)
    }

    @Test func topPAndMinPOutsideTheirRangesKeepOneTokenOrAll() {
        #expect(Set(Self.draw { $0.temperature = 2; $0.topP = 0; $0.minP = 0 }) == [2])
        #expect(Set(Self.draw { $0.temperature = 2; $0.topP = -1; $0.minP = 0 }) == [2])
        #expect(Set(Self.draw { $0.temperature = 2; $0.minP = 1 }) == [2])
        #expect(Set(Self.draw { $0.temperature = 2; $0.minP = 5 }) == [2])
        // Above 1, top-p is off: the same draws as 1.
        #expect(Self.draw { $0.temperature = 2; $0.topP = 3 } == Self.draw { $0.temperature = 2; $0.topP = 1 })
        // Negative top-k and min-p are off.
        #expect(Self.draw { $0.temperature = 2; $0.topK = -5; $0.minP = -1 } == Self.draw { $0.temperature = 2; $0.topK = 0; $0.minP = 0 })
    }

    @Test func penaltiesWithoutAMeaningAreOff() {
        let plain = Self.draw({ $0.temperature = 0 }, recent: [2], generated: [2: 3])
        #expect(Set(plain) == [2])
        // A real penalty moves the greedy choice off the repeated token (3.5 / 2 < 2.0)...
        #expect(Set(Self.draw({ $0.temperature = 0; $0.repetitionPenalty = 2 }, recent: [2])) == [0])
        #expect(Set(Self.draw({ $0.temperature = 0; $0.frequencyPenalty = 1 }, recent: [], generated: [2: 3])) == [0])
        // ...values that are not penalties leave it, and a negative window does not trap.
        for bad in [0, -2, .nan, .infinity] as [Float] {
            #expect(Self.draw({ $0.temperature = 0; $0.repetitionPenalty = bad }, recent: [2]) == plain, "penalty \(bad)")
            #expect(Self.draw({ $0.temperature = 0; $0.presencePenalty = .nan; $0.frequencyPenalty = bad.isFinite ? 0 : bad }, generated: [2: 3]) == plain)
        }
        #expect(Self.draw({ $0.temperature = 0; $0.repetitionPenalty = 2; $0.repetitionWindow = -4 }, recent: [2]) == plain)
    }
}
