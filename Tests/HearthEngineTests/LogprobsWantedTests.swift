import Foundation
import HearthTestSupport
import Testing

@testable import HearthEngine

/// `GenerationParameters.logprobs`: a request that wants no log-probabilities skips their
/// normaliser (a pass of exponentials over the vocabulary per token) and gets the same tokens,
/// each with a NaN `logprob`; one that wants them gets what it got before.
@Suite struct LogprobsWantedTests {
    @Test func sameTokensWithoutTheNormaliser() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path)
        let generator = try Generator(model: model, context: 96, threads: 2, batch: 16)
        let vocab = Int32(model.options.vocabSize)
        let prompt: [Int32] = (0..<11).map { Int32($0 * 37 + 5) % vocab }
        func run(logprobs: Bool, topLogprobs: Int, temperature: Float) throws -> [GeneratedToken] {
            var parameters = GenerationParameters()
            parameters.maxTokens = 24
            parameters.sampling.temperature = temperature
            parameters.sampling.seed = 9
            parameters.logprobs = logprobs
            parameters.topLogprobs = topLogprobs
            // Runs compared value for value: the same steps (draft lengths follow timing).
            parameters.speculative = .off
            var tokens: [GeneratedToken] = []
            generator.reset()
            _ = try generator.run(prompt: prompt, parameters: parameters) { tokens.append($0) }
            return tokens
        }
        for temperature: Float in [0, 0.9] {
            let wanted = try run(logprobs: true, topLogprobs: 0, temperature: temperature)
            let unwanted = try run(logprobs: false, topLogprobs: 0, temperature: temperature)
            let listed = try run(logprobs: false, topLogprobs: 2, temperature: temperature)
            #expect(!wanted.isEmpty)
            #expect(unwanted.map(\.id) == wanted.map(\.id), "temperature \(temperature)")
            #expect(listed.map(\.id) == wanted.map(\.id), "temperature \(temperature)")
            #expect(wanted.allSatisfy { $0.logprob.isFinite && $0.logprob <= 0 })
            #expect(unwanted.allSatisfy { $0.logprob.isNaN && $0.topLogprobs.isEmpty })
            // Alternatives asked for: the normaliser runs, so the token's own value is there too.
            #expect(zip(listed, wanted).allSatisfy { $0.logprob == $1.logprob && $0.topLogprobs.count == 2 })
        }
    }
}
