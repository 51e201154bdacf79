import Foundation
import HearthEngine
import HearthProviders
import HearthTestSupport
import Testing

@testable import HearthLocal

/// The provider reads the model's generation_config.json through the one place defaults are
/// resolved (`SamplingOptions(temperature:…modelDefaults:)`, whose rules SamplerReferenceTests
/// checks against HF): `do_sample: false` makes a request without a temperature greedy,
/// whatever temperature the file also names; a request's temperature wins.
///
/// Every run is on a fresh provider, so no run reuses another's cached prompt (a cached
/// prefix computes the same logits in another order, and a near-tie could then go either way).
@Suite struct GenerationDefaultsTests {
    /// A copy of the phi3-mha fixture with `config` as its generation_config.json.
    static func checkpoint(_ config: String) throws -> URL {
        let directory = try Fixtures.copyOfCheckpoint("phi3-mha")
        try Data(config.utf8).write(to: directory.appendingPathComponent("generation_config.json"))
        return directory
    }

    static func reply(_ directory: URL, temperature: Double?, seed: Int) async throws -> String {
        let model = try TransformerModel(path: directory.path)
        let provider = try LocalProvider(model: model, context: 128, threads: 1, batch: 8, parallel: 1)
        let request = ChatRequest(
            messages: [.user("Tell me a story.")], options: ChatOptions(temperature: temperature, maxTokens: 12, seed: seed))
        return try await provider.complete(request).text
    }

    @Test func doSampleFalseIsGreedyUnlessTheRequestSetsATemperature() async throws {
        let greedyFile = try Self.checkpoint(#"{"do_sample": false, "temperature": 1.5, "bos_token_id": 1, "eos_token_id": [1000, 1007]}"#)
        let samplingFile = try Self.checkpoint(#"{"do_sample": true, "temperature": 1.5, "bos_token_id": 1, "eos_token_id": [1000, 1007]}"#)
        defer {
            try? FileManager.default.removeItem(at: greedyFile)
            try? FileManager.default.removeItem(at: samplingFile)
        }
        let greedy = try await Self.reply(greedyFile, temperature: 0, seed: 1)
        #expect(!greedy.isEmpty)
        for seed in 1...3 {
            #expect(try await Self.reply(greedyFile, temperature: nil, seed: seed) == greedy, "seed \(seed) sampled")
        }
        // The same file's temperature is not used, but a request's is: its seeds give other replies.
        let requested = Set([try await Self.reply(greedyFile, temperature: 1.5, seed: 1), try await Self.reply(greedyFile, temperature: 1.5, seed: 2)])
        #expect(requested.count == 2)
        // do_sample: true samples at the file's temperature; a request's temperature 0 is greedy.
        let sampled = Set([try await Self.reply(samplingFile, temperature: nil, seed: 1), try await Self.reply(samplingFile, temperature: nil, seed: 2)])
        #expect(sampled.count == 2)
        #expect(try await Self.reply(samplingFile, temperature: 0, seed: 3) == greedy)
    }
}
