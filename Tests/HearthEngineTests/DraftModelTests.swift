import Foundation
import HearthKernels
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Speculative decoding with a draft model (`--draft-model`): a second model with the same
/// tokenizer drafts, the generator's model verifies, so the tokens are plain decoding's. Tiny
/// checkpoints of one tokenizer: a model drafting for itself (every greedy draft accepted),
/// another model (most drafts rejected) and the model quantized at load (most accepted).
/// (Cancellation mid-step: SpeculativeDecodingTests, with both modes.)
/// Drafting is forced to a fixed length here (``Generator/forcedDraftLength``): on tiny
/// models a draft model's step costs as much as the model's, so the cost rule would not draft.
@Suite struct DraftModelTests {
    static func model(_ name: String, quantize: DType? = nil) throws -> TransformerModel {
        try TransformerModel(path: Fixtures.checkpoint(name).path, quantize: quantize)
    }

    static func generator(
        _ target: TransformerModel, draft: TransformerModel?, context: Int = 96, sequences: Int = 1, forced: Int? = 4
    ) throws -> Generator {
        let generator = try Generator(model: target, context: context, threads: 2, sequences: sequences, draftModel: draft)
        generator.forcedDraftLength = forced
        return generator
    }

    /// Greedy and seeded sampling with drafts from the model itself, from another model and
    /// from the model at 4 bits: the same tokens as plain decoding (exact on tiny checkpoints:
    /// a generated row multiplies as it would alone), drafts proposed, and accepted as often as
    /// the drafter agrees (all greedy drafts of the model itself).
    @Test(arguments: [("phi3-mha", "phi3-mha"), ("phi3-mha", "llama-tiny"), ("phi3-mha", "phi3-mha/q4_0"), ("gemma3-tiny", "gemma3-tiny")])
    func draftedOutputIsPlainOutput(_ pair: (String, String)) throws {
        let target = try Self.model(pair.0)
        let parts = pair.1.split(separator: "/")
        let draft = try Self.model(String(parts[0]), quantize: parts.count > 1 ? DType(rawValue: String(parts[1])) : nil)
        let prompt: [Int32] = [5, 6, 7, 8, 9, 10, 11, 12]
        for (temperature, seed) in [(0.0, nil), (0.9, 17), (1.5, 3)] as [(Double, Int?)] {
            let plain = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: nil, forced: nil), prompt, mode: .off, maxTokens: 40, temperature: temperature,
                seed: seed)
            let drafted = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: draft), prompt, mode: .draft, maxTokens: 40, temperature: temperature, seed: seed)
            #expect(drafted.tokens == plain.tokens, "\(pair) at temperature \(temperature)")
            #expect(drafted.summary.finishReason == plain.summary.finishReason)
            #expect(drafted.summary.draftedTokens > 0)
            #expect(drafted.summary.acceptedDraftTokens <= drafted.summary.draftedTokens)
            if pair.0 == pair.1 && temperature == 0 {
                #expect(drafted.summary.acceptedDraftTokens == drafted.summary.draftedTokens, "a model agrees with itself")
            }
        }
    }

    /// A context that ends mid-draft, and LongRoPE's switch to its long factors (original context
    /// 16; drafts never cross it and the draft model recomputes its sequence at the switch, as the
    /// model does): the same tokens as plain decoding, up to the same end.
    @Test(arguments: ["phi3-gqa-longrope", "gemma3-tiny"])
    func contextEndAndLongRoPEMatchPlainDecoding(_ name: String) throws {
        let target = try Self.model(name)
        let prompt: [Int32] = [5, 6, 7, 8, 5, 6, 7, 8, 5, 6]
        for context in [24, 40] {
            let plain = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: nil, context: context, forced: nil), prompt, mode: .off, maxTokens: 1000)
            let drafted = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: target, context: context), prompt, mode: .draft, maxTokens: 1000)
            #expect(drafted.tokens == plain.tokens, "\(name) at context \(context)")
            #expect(drafted.summary.finishReason == plain.summary.finishReason)
            #expect(drafted.tokens.count + prompt.count <= context)
            #expect(drafted.summary.draftedTokens > 0)
            // Drafting for itself, the draft model's keys must follow the model's (long factors too);
            // the draft that fills the context's last position ends the reply instead of being kept.
            #expect(drafted.summary.acceptedDraftTokens >= drafted.summary.draftedTokens - 1, "\(name) at context \(context)")
        }
    }

    /// Several sequences drafting in the same steps (each with its own draft slot, one batched
    /// step of the draft model per drafted position), and choices forked from one prompt (the
    /// draft model copies the prompt between its slots): each as it generates alone.
    @Test func sequencesDraftTogether() async throws {
        let target = try Self.model("phi3-mha")
        let draft = try Self.model("phi3-mha", quantize: .q4_0)
        let prompts: [[Int32]] = [[5, 6, 7, 8, 9], [20, 21, 22, 23, 24, 25, 26], [5, 6, 7, 30]]
        var alone: [[Int32]] = []
        for prompt in prompts {
            alone.append(
                try SpeculativeDecodingTests.generate(Self.generator(target, draft: nil, forced: nil), prompt, mode: .off, maxTokens: 30)
                    .tokens)
        }
        let generator = try Self.generator(target, draft: draft, sequences: 3)
        var parameters = GenerationParameters()
        parameters.maxTokens = 30
        parameters.sampling.temperature = 0
        parameters.speculative = .draft
        let shared = parameters
        let together = try await withThrowingTaskGroup(of: (Int, [Int32], Int).self) { group in
            for (i, prompt) in prompts.enumerated() {
                group.addTask {
                    var tokens: [Int32] = [], drafted = 0
                    for try await event in generator.generate(prompt: prompt, parameters: shared) {
                        switch event {
                        case .token(let token): tokens.append(token.id)
                        case .done(let summary): drafted = summary.draftedTokens
                        }
                    }
                    return (i, tokens, drafted)
                }
            }
            var results = [([Int32], Int)](repeating: ([], 0), count: prompts.count)
            for try await (i, tokens, drafted) in group { results[i] = (tokens, drafted) }
            return results
        }
        for i in prompts.indices {
            #expect(together[i].0 == alone[i], "prompt \(i)")
            #expect(together[i].1 > 0)
        }
        // Three choices of one prompt, greedy: each is the lone greedy continuation.
        var choices: [[Int32]] = [[], [], []]
        for try await event in generator.generate(prompt: prompts[1], choices: [parameters, parameters, parameters]) {
            if case .token(let token) = event.event { choices[event.choice].append(token.id) }
        }
        #expect(choices.allSatisfy { $0 == alone[1] })
    }

    /// Unforced draft mode (the cost rule decides; a repeat of 8+ tokens drafts by lookup, the
    /// rest by the draft model): a prompt that repeats itself, drafts from another model, greedy
    /// and seeded — the same tokens as plain decoding.
    @Test func lookupWhereTheTextRepeatsAndTheDraftModelElsewhere() throws {
        let target = try Self.model("phi3-mha")
        let draft = try Self.model("llama-tiny")
        let passage: [Int32] = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
        let prompt = passage + [30, 31] + passage + [30]
        for (temperature, seed) in [(0.0, nil), (0.9, 17)] as [(Double, Int?)] {
            let plain = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: nil, forced: nil), prompt, mode: .off, maxTokens: 48, temperature: temperature, seed: seed)
            let drafted = try SpeculativeDecodingTests.generate(
                Self.generator(target, draft: draft, forced: nil), prompt, mode: .draft, maxTokens: 48, temperature: temperature,
                seed: seed)
            #expect(drafted.tokens == plain.tokens, "temperature \(temperature)")
            #expect(drafted.summary.finishReason == plain.summary.finishReason)
        }
    }

    /// A draft model whose tokenizer differs is refused when the generator is made, naming
    /// the difference; asking for draft mode without a draft model is refused per request.
    @Test func mismatchedTokenizerAndMissingDraftModelAreRefused() throws {
        let target = try Self.model("phi3-mha")
        do {
            _ = try Generator(model: target, context: 64, threads: 2, draftModel: try Self.model("phi2-tiny"))
            Issue.record("a draft model with another tokenizer was accepted")
        } catch let error as EngineError {
            #expect(error.code == .invalidOption)
            #expect("\(error)".contains("tokenizer differs"), "\(error)")
        }
        #expect(throws: EngineError.self) {
            try SpeculativeDecodingTests.generate(Self.generator(target, draft: nil), [5, 6, 7], mode: .draft, maxTokens: 4)
        }
    }

    /// The draft length rule with a draft model's own step cost: drafts pay when the draft
    /// model's step is cheap and it is accepted, not when its step costs as much as the model's.
    @Test func draftLengthCountsTheDraftModelsSteps() {
        let costs = SpeculativeDecodingTests.costs((1, 0.020), (6, 0.022))
        var agreeing = DraftControl()
        for _ in 0..<20 { agreeing.record(drafted: 5, accepted: 5) }
        var cheap = agreeing, dear = agreeing
        #expect(cheap.length(limit: 16, others: 0, costs: costs, draftSeconds: 0.001) >= 4)
        #expect(dear.length(limit: 16, others: 0, costs: costs, draftSeconds: 0.025) == 0)
    }

    /// A sequence's first decision drafts one token even when the prior rate would not pay (a
    /// draft model's rate is unknown until it drafts), and so does the first after each pause;
    /// in between, a rate that does not pay drafts nothing.
    @Test func firstDecisionAndPausesProbe() {
        let costs = SpeculativeDecodingTests.costs((1, 0.020), (3, 0.030))
        var control = DraftControl()
        #expect(control.length(limit: 8, others: 0, costs: costs, draftSeconds: 0.015) == 1, "the first decision probes")
        control.record(drafted: 1, accepted: 0)
        var paused = 0
        while control.length(limit: 8, others: 0, costs: costs, draftSeconds: 0.015) == 0 { paused += 1 }
        #expect(paused >= 4, "a rejected probe pauses, then probes again")
    }
}
