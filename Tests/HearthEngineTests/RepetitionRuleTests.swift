import Foundation
import HearthConstraints
import HearthTestSupport
import Testing

@testable import HearthEngine

/// The repetition rule (issue 59): a constrained output that loops is wound down and ends
/// complete; without the rule the same loop runs to the token limit.
@Suite struct RepetitionRuleTests {
    @Test func loopsAreOneNGramRepeatedOverThirtyTwoTokensAndFourRepeats() {
        #expect(RepetitionRule.isLooping(ArraySlice(Array(repeating: 7, count: 32))))
        #expect(!RepetitionRule.isLooping(ArraySlice(Array(repeating: 7, count: 31))))
        #expect(RepetitionRule.isLooping(ArraySlice([1, 2, 3] + Array(repeating: [5, 6], count: 16).flatMap { $0 })))
        #expect(!RepetitionRule.isLooping(ArraySlice(Array(repeating: [5, 6], count: 15).flatMap { $0 })))
        let gram = Array(Int32(100)..<116)
        #expect(RepetitionRule.isLooping(ArraySlice(Array(repeating: gram, count: 4).flatMap { $0 })))
        #expect(!RepetitionRule.isLooping(ArraySlice(Array(repeating: gram, count: 3).flatMap { $0 })))  // 48 tokens, 3 repeats
        #expect(!RepetitionRule.isLooping(ArraySlice((0..<200).map { Int32($0 % 97) })))
        // A loop broken by its last token is no loop (yet).
        #expect(!RepetitionRule.isLooping(ArraySlice(Array(repeating: 7, count: 40) + [8])))
    }

    @Test func aLoopInsideAStringIsWoundDownAndEndsComplete() throws {
        let model = try TransformerModel(path: Fixtures.checkpoint("gemma3-tiny").path)
        var b = GrammarBuilder()
        let letter = GrammarExpression.bytes(ByteSet(UInt8(ascii: "a")...UInt8(ascii: "z")))
        try b.define("root", .sequence([.literal("{\"name\": \""), .repeating(letter, min: 1, max: 600), .literal("\"}")]))
        let grammar = try b.build(root: "root")
        let compiled = try model.compileConstraint(grammar)
        // A letters-only token the model is pushed to repeat (a loop, as a model falls into one).
        // (the last piece of a word: no word-start marker, so the letters-only grammar allows it).
        let ids = try model.tokenizer.encode("zqxabab", addSpecialTokens: false)
        let looped = try #require(ids.last)
        let generator = try Generator(model: model, context: 512, threads: 2, sequences: 1)
        let prompt = try model.tokenizer.encode("Name:", addSpecialTokens: true)
        for seed in 1...3 {
            var outcomes: [Bool: (GenerationSummary, String)] = [:]
            for rule in [true, false] {
                var parameters = GenerationParameters()
                parameters.maxTokens = 200
                parameters.sampling.temperature = 1.0
                parameters.sampling.topK = 0
                parameters.sampling.topP = 1
                parameters.sampling.minP = 0
                parameters.sampling.seed = UInt64(seed)
                parameters.sampling.logitBias = [looped: 40]
                parameters.constraint = compiled
                parameters.finishInBudget = rule
                var text = ""
                let summary = try generator.run(prompt: prompt, parameters: parameters) { text += $0.text }
                outcomes[rule] = (summary, text)
            }
            let (with, withText) = try #require(outcomes[true])
            let (without, withoutText) = try #require(outcomes[false])
            // Without the rule the loop runs on (to the limit, or far past where the rule acts).
            #expect(!without.repetitionEnded && without.completionTokens > 100, "seed \(seed): \(without.completionTokens) tokens: \(withoutText.prefix(120))")
            // With it: wound down within the run, the margin and the closing bytes, complete and valid.
            #expect(with.repetitionEnded, "seed \(seed)")
            #expect(with.finishReason == .stop, "seed \(seed): \(withText)")
            #expect(grammar.accepts(Array(withText.utf8)), "seed \(seed): \(withText)")
            #expect(with.completionTokens <= without.completionTokens)
            #expect(with.completionTokens <= 20 + RepetitionRule.shortestRun + RepetitionRule.margin + 2, "seed \(seed): \(with.completionTokens) tokens")
        }
    }
}
