import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// A step of a long prompt ends between layers when everything in it is cancelled, and leaves
/// the KV slots exactly as they were before the step: this is what lets every command share
/// one large default batch (``Generator/defaultBatch``) without delaying Ctrl-C.
@Suite struct StepCancellationTests {
    static func model(_ name: String = "phi3-gqa-longrope") throws -> TransformerModel {
        try TransformerModel(path: Fixtures.checkpoint(name).path)
    }

    static func prompt(_ length: Int, vocab: Int, seed: Int = 3) -> [Int32] {
        (0..<length).map { Int32((seed * 7919 + $0 * 104_729 + 13) % (vocab - 10) + 5) }
    }

    /// The decoder: a batch stopped before its second layer throws `.cancelled`, every slot
    /// keeps the positions it held, and running the same batch again gives the logits a fresh
    /// decoder gives (so nothing the stopped step wrote is read back).
    @Test(arguments: ["phi3-gqa-longrope", "gemma3-tiny"])
    func stoppedBatchLeavesTheSlotsAsTheyWere(_ name: String) throws {
        let model = try Self.model(name)
        let vocab = model.options.vocabSize
        #expect(model.options.layerCount >= 2)
        let pool = WorkerPool(threads: 2)
        let first = Self.prompt(6, vocab: vocab, seed: 1), second = Self.prompt(9, vocab: vocab, seed: 2)
        func decoder() throws -> Decoder {
            try Decoder(weights: model.weights, options: model.options, context: 64, maxBatch: 32, sequences: 2, pool: pool)
        }
        func items(_ tokens: [Int32], sequence: Int, from start: Int) -> [Decoder.BatchItem] {
            tokens.enumerated().map { .init(sequence: sequence, position: start + $0.offset, token: $0.element) }
        }
        let next = Self.prompt(5, vocab: vocab, seed: 4)
        // Slot 0 holds `first`; the step adds `next` to slot 0 and `second` to slot 1.
        let batch = items(next, sequence: 0, from: first.count) + items(second, sequence: 1, from: 0)
        let rows = [next.count - 1, batch.count - 1]

        let fresh = try decoder()
        _ = try fresh.forward(first, from: 0, sequence: 0)
        let expected = Array(try fresh.forward(batch: batch, logitsFor: rows))

        let d = try decoder()
        _ = try d.forward(first, from: 0, sequence: 0)
        var asked = 0
        #expect(throws: EngineError(.cancelled, "cancelled")) {
            _ = try d.forward(batch: batch, logitsFor: rows) {
                asked += 1
                return asked == 2  // stop before the second layer
            }
        }
        #expect(asked == 2)
        #expect(d.cache.counts == [first.count, 0])
        let again = Array(try d.forward(batch: batch, logitsFor: rows))
        #expect(again == expected)
    }

    /// The generator: a request cancelled while its prompt's one step runs (the scheduler asks
    /// before every layer) ends `cancelled` with no token, its slot keeps nothing of the
    /// stopped step, and the next request on the same prompt generates what a fresh
    /// generator does.
    @Test func cancelledInsideAStepEndsTheRequestAndKeepsTheSlotUsable() throws {
        let model = try Self.model()
        let prompt = Self.prompt(40, vocab: model.options.vocabSize)
        var parameters = GenerationParameters()
        parameters.sampling.temperature = 0
        parameters.maxTokens = 6

        let generator = try Generator(model: model, context: 128, threads: 2, batch: 64)
        let calls = Counter()
        // Asked once as the step starts, then before each layer: cancel during the step.
        let summary = try generator.run(prompt: prompt, parameters: parameters, isCancelled: { calls.next() >= 3 }) { _ in
            Issue.record("a cancelled step produced a token")
        }
        #expect(summary.finishReason == .cancelled)
        #expect(summary.completionTokens == 0)
        #expect(calls.value >= 3 && calls.value < 3 + model.options.layerCount, "\(calls.value) checks")

        var tokens: [Int32] = []
        let after = try generator.run(prompt: prompt, parameters: parameters) { tokens.append($0.id) }
        #expect(after.cachedPromptTokens == 0)
        var reference: [Int32] = []
        _ = try Generator(model: model, context: 128, threads: 2, batch: 64)
            .run(prompt: prompt, parameters: parameters) { reference.append($0.id) }
        #expect(tokens == reference && tokens.count == 6)
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        var value: Int { lock.withLock { count } }
        func next() -> Int { lock.withLock { count += 1; return count } }
    }
}
