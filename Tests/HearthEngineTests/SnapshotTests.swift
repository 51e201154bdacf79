import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// KV-cache snapshots: a restored cache continues exactly like the original, and anything
/// corrupt or foreign is refused with a typed error while the generator stays usable.
@Suite struct SnapshotTests {
    static let model = Result { try TransformerModel(path: Fixtures.checkpoint("phi3-mha").path) }

    func greedy(_ maxTokens: Int = 8) -> GenerationParameters {
        var p = GenerationParameters()
        p.maxTokens = maxTokens
        p.sampling.temperature = 0
        return p
    }

    func generate(_ generator: Generator, _ prompt: [Int32]) throws -> (ids: [Int32], summary: GenerationSummary) {
        var ids: [Int32] = []
        let summary = try generator.run(prompt: prompt, parameters: greedy()) { ids.append($0.id) }
        return (ids, summary)
    }

    func refusal(_ generator: Generator, _ data: Data) -> EngineError? {
        do {
            try generator.restore(data)
            return nil
        } catch let error as EngineError {
            return error
        } catch {
            Issue.record("expected EngineError, got \(error)")
            return nil
        }
    }

    @Test(arguments: [DType.f16, .f32])
    func restoredCacheContinuesIdentically(kvType: DType) throws {
        let model = try Self.model.get()
        let prompt: [Int32] = [1, 450, 496, 173, 701, 432, 204, 975, 278, 366, 203]
        let original = try Generator(model: model, context: 64, threads: 2, batch: 4, kvType: kvType)
        let first = try generate(original, prompt)
        let data = original.snapshot()
        let cachedAtSave = original.cachedTokenCount
        #expect(cachedAtSave > prompt.count)

        // A fresh generator (even with a larger context) restores it and reuses every cached token.
        let restored = try Generator(model: model, context: 128, threads: 2, batch: 4, kvType: kvType)
        try restored.restore(data)
        #expect(restored.cachedTokenCount == cachedAtSave)
        let followUp = prompt + first.ids + [450, 496]
        let fromSnapshot = try generate(restored, followUp)
        let fromOriginal = try generate(original, followUp)
        #expect(fromSnapshot.summary.cachedPromptTokens == cachedAtSave)
        #expect(fromSnapshot.summary.cachedPromptTokens == fromOriginal.summary.cachedPromptTokens)
        #expect(fromSnapshot.ids == fromOriginal.ids)
        // And it matches recomputing from nothing.
        let cold = try Generator(model: model, context: 64, threads: 2, batch: 4, kvType: kvType)
        let fromScratch = try generate(cold, followUp)
        #expect(fromScratch.summary.cachedPromptTokens == 0)
        #expect(fromScratch.ids == fromSnapshot.ids)
    }

    @Test func corruptOrMismatchedSnapshotsAreRefused() throws {
        let model = try Self.model.get()
        let generator = try Generator(model: model, context: 64, threads: 2, batch: 4)
        _ = try generate(generator, [1, 450, 496, 173, 701])
        let good = generator.snapshot()

        var flipped = good
        flipped[flipped.count / 2] ^= 0x40
        #expect(refusal(generator, flipped)?.code == .invalidSnapshot)
        #expect(refusal(generator, good.prefix(good.count - 1))?.code == .invalidSnapshot)
        #expect(refusal(generator, good.prefix(20))?.code == .invalidSnapshot)
        #expect(refusal(generator, Data())?.code == .invalidSnapshot)
        var badMagic = good
        badMagic[0] = 0
        #expect(refusal(generator, badMagic)?.code == .invalidSnapshot)
        var future = good
        future[8] = 99
        #expect(refusal(generator, future)?.message.contains("version") == true)

        // Another KV type, a context too small, another model.
        let f32 = try Generator(model: model, context: 64, threads: 2, batch: 4, kvType: .f32)
        #expect(refusal(f32, good)?.message.contains("KV type") == true)
        let tiny = try Generator(model: model, context: 4, threads: 2, batch: 4)
        #expect(refusal(tiny, good)?.message.contains("context") == true)
        let other = try TransformerModel(path: Fixtures.checkpoint("phi3-gqa-longrope").path)
        let foreign = try Generator(model: other, context: 64, threads: 2, batch: 4)
        #expect(refusal(foreign, good)?.message.contains("another model") == true)

        // Every refusal left the generator usable with its own cache.
        #expect(generator.cachedTokenCount > 0)
        let again = try generate(generator, [1, 450, 496, 173, 701])
        #expect(again.summary.cachedPromptTokens == 4)
        try generator.restore(good)
    }

    @Test func emptyCacheRoundTrips() throws {
        let model = try Self.model.get()
        let generator = try Generator(model: model, context: 16, threads: 2)
        let data = generator.snapshot()
        try generator.restore(data)
        #expect(generator.cachedTokenCount == 0)
    }
}
