import Foundation
import HearthFormats
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The sampler against the distributions reference implementations sample from
/// (`Tests/Fixtures/sampler-reference.json`, made by scripts/make_sampler_fixture.py):
/// temperature, top-k, top-p, min-p and the repetition penalty from HF transformers' logits
/// processors in HF's order; frequency and presence penalties from OpenAI's additive
/// definition as vLLM composes them (after the repetition penalty, before temperature);
/// `logit_bias` from HF's SequenceBiasLogitsProcessor, first. Hearth documents the same order
/// (Sampler.swift), and the composition cases come out different in any other order, so a
/// change of order fails here.
///
/// Every case was chosen clear of near-ties by the script (the top-k, top-p and min-p
/// boundaries at least `margin` away), so no test asserts what happens at one.
@Suite struct SamplerReferenceTests {
    struct Case: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let logits: [Float]
        let temperature: Float
        let topK: Int
        let topP: Float
        let minP: Float
        let repetitionPenalty: Float
        let repetitionWindow: Int
        let presencePenalty: Float
        let frequencyPenalty: Float
        let logitBias: [String: Float]
        let recent: [Int32]
        let generated: [String: Int]
        /// The tokens the reference keeps, most likely first, and their probabilities.
        let kept: [Int32]
        let probabilities: [Double]
        /// The reference's argmax after the adjustments (penalties, bias) and its top-1 − top-2 gap.
        let greedy: Int32
        let greedyMargin: Float

        var testDescription: String { name }

        func options(seed: UInt64) -> SamplingOptions {
            var options = SamplingOptions()
            options.temperature = temperature
            options.topK = topK
            options.topP = topP
            options.minP = minP
            options.repetitionPenalty = repetitionPenalty
            options.repetitionWindow = repetitionWindow
            options.presencePenalty = presencePenalty
            options.frequencyPenalty = frequencyPenalty
            options.logitBias = Dictionary(uniqueKeysWithValues: logitBias.map { (Int32($0.key)!, $0.value) })
            options.seed = seed
            return options
        }

        var counts: [Int32: Int] { Dictionary(uniqueKeysWithValues: generated.map { (Int32($0.key)!, $0.value) }) }

        /// One draw of a fresh sampler seeded with `seed`.
        func draw(seed: UInt64, temperature: Float? = nil) -> Int32 {
            var options = options(seed: seed)
            if let temperature { options.temperature = temperature }
            var sampler = Sampler(options: options)
            return logits.withUnsafeBufferPointer { sampler.sample($0, recent: recent[...], generated: counts) }
        }
    }

    struct GenerationConfigCase: Decodable, Sendable {
        let config: GenerationConfig
        /// HF's generation mode for the file (`get_generation_mode()` is greedy search).
        let greedy: Bool
    }

    struct File: Decodable, Sendable {
        let margin: Float
        let cases: [Case]
        let generationConfigs: [GenerationConfigCase]
    }

    static func fixture() throws -> File {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("sampler-reference.json"))
        return try JSONDecoder().decode(File.self, from: data)
    }

    /// Hearth works in Float32 (`expf`, sums over at most 48 tokens) and the reference in
    /// float32 torch with a float64 softmax: their cumulative probabilities differ by ~1e-6.
    /// A draw is checked against the reference's cumulative mass with this slack, and a draw
    /// closer than this to a boundary is not asserted (it may fall either way).
    static let cumulativeTolerance = 1e-4

    /// The fixture is there and has every case (an empty argument list would pass vacuously).
    @Test func fixtureHasEveryCase() throws {
        let file = try Self.fixture()
        #expect(file.cases.count == 13)
        #expect(file.generationConfigs.count == 6)
        for c in file.cases {
            #expect(c.kept.count == c.probabilities.count && !c.kept.isEmpty, "\(c.name)")
            #expect(abs(c.probabilities.reduce(0, +) - 1) < 1e-9, "\(c.name)")
        }
    }

    /// Each draw falls in its token's slice of the reference's cumulative distribution.
    ///
    /// The sampler draws u = the first output of `SeededGenerator(seed:)` as a 53-bit fraction
    /// and walks its candidates, most likely first, until their mass passes u. So with the
    /// reference's kept tokens in the same order and F their cumulative mass, a draw of token
    /// j must have F[j−1] ≤ u ≤ F[j]. Over 5000 seeds this pins every boundary to about 1/5000,
    /// and every kept token likely enough to be hit is hit; a token the reference filters out is
    /// never drawn. (Were the draw itself changed, every case would fail here at once, and
    /// `sampledFrequenciesMatchTheReference` would still speak for the distribution.)
    @Test(arguments: try fixture().cases)
    func drawsFollowTheReferenceDistribution(_ c: Case) {
        var cumulative: [Double] = []
        var sum = 0.0
        for p in c.probabilities {
            sum += p
            cumulative.append(sum)
        }
        let seeds = 5000
        var hits = [Int](repeating: 0, count: c.kept.count)
        var asserted = 0
        var filteredOut: [String] = [], misplaced: [String] = []
        for seed in 0..<UInt64(seeds) {
            var generator = SeededGenerator(seed: seed)
            let u = Double(generator.next() >> 11) * 0x1.0p-53
            let token = c.draw(seed: seed)
            guard let j = c.kept.firstIndex(of: token) else {
                filteredOut.append("seed \(seed) drew \(token)")
                continue
            }
            hits[j] += 1
            let low = j == 0 ? 0 : cumulative[j - 1], high = cumulative[j]
            if cumulative.contains(where: { abs($0 - u) < Self.cumulativeTolerance }) { continue }  // at a boundary
            asserted += 1
            if !(low <= u && u <= high) { misplaced.append("seed \(seed) (u = \(u)) drew \(token), whose slice is [\(low), \(high)]") }
        }
        #expect(filteredOut.isEmpty, "\(c.name): \(filteredOut.count) draws of tokens the reference filters out (kept: \(c.kept)): \(filteredOut.prefix(5))")
        #expect(misplaced.isEmpty, "\(c.name): \(misplaced.count) of \(asserted) draws outside their token's slice: \(misplaced.prefix(5))")
        #expect(asserted > seeds * 9 / 10)
        for (j, p) in c.probabilities.enumerated() where p * Double(seeds) >= 10 {
            #expect(hits[j] > 0, "\(c.name): token \(c.kept[j]) (p = \(p)) was never drawn in \(seeds) seeds")
        }
    }

    /// A chi-square test of one seeded sampler's draws against the reference distribution: it
    /// does not rely on how a draw is made. 20 000 draws; the bound df + 6·√(2·df) is far in
    /// the tail for the right distribution (the seed is fixed, so the outcome is too) and far
    /// below what one wrongly kept or dropped token of a few percent adds (hundreds).
    @Test(arguments: try fixture().cases)
    func sampledFrequenciesMatchTheReference(_ c: Case) {
        let draws = 20_000
        var sampler = Sampler(options: c.options(seed: 0x5EED))
        var observed: [Int32: Int] = [:]
        c.logits.withUnsafeBufferPointer { logits in
            for _ in 0..<draws { observed[sampler.sample(logits, recent: c.recent[...], generated: c.counts), default: 0] += 1 }
        }
        let outside = observed.keys.filter { !c.kept.contains($0) }
        #expect(outside.isEmpty, "\(c.name): drew \(outside.sorted()), which the reference filters out")
        // Bins of at least 5 expected draws; the rarer tokens pooled into one bin.
        var chiSquare = 0.0, bins = 0
        var pooledExpected = 0.0, pooledObserved = 0
        for (id, p) in zip(c.kept, c.probabilities) {
            let expected = p * Double(draws)
            let count = Double(observed[id] ?? 0)
            if expected < 5 {
                pooledExpected += expected
                pooledObserved += observed[id] ?? 0
                continue
            }
            chiSquare += (count - expected) * (count - expected) / expected
            bins += 1
        }
        if pooledExpected > 0 {
            let difference = Double(pooledObserved) - pooledExpected
            chiSquare += difference * difference / max(pooledExpected, 1)
            bins += 1
        }
        let df = Double(max(bins - 1, 1))
        #expect(chiSquare < df + 6 * (2 * df).squareRoot(), "\(c.name): χ² = \(chiSquare) over \(bins) bins")
    }

    /// Temperature 0 is the argmax after the penalties and the bias (the reference's, where its
    /// top two are clear); in the penalty and bias cases that is not the raw argmax.
    @Test(arguments: try fixture().cases)
    func greedyPicksTheReferenceArgmax(_ c: Case) throws {
        let margin = try Self.fixture().margin
        try #require(c.greedyMargin >= margin, "\(c.name): the reference's top two are within \(margin)")
        #expect(c.draw(seed: 1, temperature: 0) == c.greedy)
        #expect(c.draw(seed: 2, temperature: 0) == c.greedy)
    }

    // MARK: Seeds

    /// The same seed gives the same draws; other seeds give other draws.
    @Test func seedsReproduceAndDiffer() throws {
        let c = try #require(try Self.fixture().cases.first { $0.name == "temperature 1.8" })
        func draws(_ seed: UInt64) -> [Int32] {
            var sampler = Sampler(options: c.options(seed: seed))
            return c.logits.withUnsafeBufferPointer { logits in
                (0..<100).map { _ in sampler.sample(logits, recent: [], generated: [:]) }
            }
        }
        #expect(draws(42) == draws(42))
        let sequences = (0..<8).map { draws(UInt64($0)) }
        #expect(Set(sequences.map { $0.map(String.init).joined(separator: ",") }).count == 8, "two seeds drew the same 100 tokens")
        // The generator itself: xoshiro256** from SplitMix64, the same stream for the same seed.
        var a = SeededGenerator(seed: 7), b = SeededGenerator(seed: 7), other = SeededGenerator(seed: 8)
        let first = (0..<4).map { _ in a.next() }
        #expect(first == (0..<4).map { _ in b.next() })
        #expect(first != (0..<4).map { _ in other.next() })
    }

    // MARK: Defaults

    /// generation_config.json decides greedy or sampling as HF does when it says `do_sample`;
    /// its temperature, top-k, top-p and repetition penalty are the defaults when it samples.
    /// Without `do_sample`, HF's default is greedy, but Hearth samples (its documented rule:
    /// only `do_sample: false` means greedy; a chat server samples by default, as llama.cpp's does).
    @Test func generationConfigDefaultsFollowHF() throws {
        for entry in try Self.fixture().generationConfigs {
            let config = entry.config
            let resolved = SamplingOptions(
                temperature: nil, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: config)
            let greedy = resolved.temperature == 0
            if config.doSample == nil {
                #expect(entry.greedy && !greedy, "HF is greedy without do_sample; Hearth samples")
                #expect(resolved.temperature == Float(config.temperature ?? 0.8))
                continue
            }
            #expect(greedy == entry.greedy, "\(config.doSample as Any): HF greedy \(entry.greedy), Hearth temperature \(resolved.temperature)")
            guard !greedy else { continue }
            #expect(resolved.temperature == Float(config.temperature ?? 0.8))
            #expect(resolved.topK == config.topK ?? 40)
            #expect(resolved.topP == Float(config.topP ?? 0.95))
            #expect(resolved.repetitionPenalty == Float(config.repetitionPenalty ?? 1))
        }
    }

    /// The one place defaults are resolved: each value the request gives wins (a temperature
    /// overrides `do_sample: false`), then the model's file, then Hearth's defaults (llama.cpp's:
    /// temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, no penalties).
    @Test func requestValuesWinOverModelDefaults() throws {
        var greedyFile = GenerationConfig()
        greedyFile.doSample = false
        greedyFile.temperature = 0.6
        greedyFile.topK = 20
        greedyFile.topP = 0.9
        greedyFile.repetitionPenalty = 1.1

        let none = SamplingOptions(temperature: nil, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: nil)
        #expect(none.temperature == 0.8 && none.topK == 40 && none.topP == 0.95 && none.minP == 0.05)
        #expect(none.repetitionPenalty == 1 && none.presencePenalty == 0 && none.frequencyPenalty == 0 && none.seed == nil)

        let fileOnly = SamplingOptions(
            temperature: nil, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: greedyFile)
        #expect(fileOnly.temperature == 0, "do_sample: false is greedy")
        #expect(fileOnly.topK == 20 && fileOnly.topP == 0.9 && fileOnly.repetitionPenalty == 1.1)

        // Only a temperature turns sampling back on; a top-p alone leaves it greedy.
        let topPOnly = SamplingOptions(
            temperature: nil, topK: nil, topP: 0.5, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: greedyFile)
        #expect(topPOnly.temperature == 0 && topPOnly.topP == 0.5)
        let request = SamplingOptions(
            temperature: 1.2, topK: 5, topP: 0.7, minP: 0.1, repetitionPenalty: 1.3, presencePenalty: 0.5, frequencyPenalty: -0.5,
            seed: 9, modelDefaults: greedyFile)
        #expect(request.temperature == 1.2 && request.topK == 5 && request.topP == 0.7 && request.minP == 0.1)
        #expect(request.repetitionPenalty == 1.3 && request.presencePenalty == 0.5 && request.frequencyPenalty == -0.5)
        #expect(request.seed == 9)
        // A request's temperature 0 is greedy whatever the file says.
        var samplingFile = greedyFile
        samplingFile.doSample = true
        #expect(
            SamplingOptions(temperature: 0, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: samplingFile)
                .temperature == 0)
        #expect(
            SamplingOptions(temperature: nil, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: nil, modelDefaults: samplingFile)
                .temperature == 0.6)
        // A negative seed is a seed too (its bits), not "no seed".
        let negative = SamplingOptions(temperature: nil, topK: nil, topP: nil, minP: nil, repetitionPenalty: nil, seed: -1, modelDefaults: nil)
        #expect(negative.seed == UInt64.max)
    }
}
