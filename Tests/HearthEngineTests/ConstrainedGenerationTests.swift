import Foundation
import HearthConstraints
import HearthTestSupport
import Testing

@testable import HearthEngine

/// Structured output in the engine: a tiny model with random weights (its own preferences are
/// noise) still produces exactly what the grammar allows, stops once the grammar is complete,
/// and is cut with `.length` (never a made-up ending) when the token limit comes first.
@Suite struct ConstrainedGenerationTests {
    static func grammar() throws -> Grammar {
        var b = GrammarBuilder()
        let digit = GrammarExpression.bytes(ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9")))
        let letter = GrammarExpression.bytes(ByteSet(UInt8(ascii: "a")...UInt8(ascii: "z")))
        try b.define("root", .sequence([
            .literal("{\"name\": \""), .repeating(letter, min: 1, max: 12), .literal("\", \"age\": "),
            .repeating(digit, min: 1, max: 3), .literal(", \"tags\": ["),
            .optional(.sequence([.literal("\""), .oneOrMore(letter), .literal("\""),
                                 .repeating(.sequence([.literal(", \""), .oneOrMore(letter), .literal("\"")]), min: 0, max: 3)])),
            .literal("]}"),
        ]))
        return try b.build(root: "root")
    }

    @Test(arguments: ["gemma3-tiny", "phi3-mha"])
    func outputFollowsTheGrammar(_ fixture: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(fixture).path)
        let grammar = try Self.grammar()
        let compiled = try model.compileConstraint(grammar)
        #expect(try model.compileConstraint(grammar) === compiled)  // cached by grammar
        let generator = try Generator(model: model, context: 256, threads: 2, sequences: 2)
        let prompt = try model.tokenizer.encode("Describe a person as JSON.", addSpecialTokens: true)
        for seed in 1...4 {
            var parameters = GenerationParameters()
            parameters.maxTokens = 200
            parameters.sampling.temperature = 1.0
            parameters.sampling.topK = 0
            parameters.sampling.topP = 1
            parameters.sampling.minP = 0
            parameters.sampling.seed = UInt64(seed)
            parameters.constraint = compiled
            var text = ""
            let summary = try generator.run(prompt: prompt, parameters: parameters) { text += $0.text }
            #expect(summary.finishReason == .stop, "seed \(seed): \(text)")
            #expect(grammar.accepts(Array(text.utf8)), "seed \(seed): \(text)")
        }
        // Cut short: a prefix the grammar allows, not a whole output.
        var parameters = GenerationParameters()
        parameters.maxTokens = 5
        parameters.sampling.seed = 9
        parameters.constraint = compiled
        var text = ""
        let summary = try generator.run(prompt: prompt, parameters: parameters) { text += $0.text }
        #expect(summary.finishReason == .length)
        #expect(grammar.acceptsPrefix(Array(text.utf8)) && !grammar.accepts(Array(text.utf8)), "\(text)")
    }
}

/// Finishing within the budget (issue 59): with tokens for a complete answer but not for the
/// model's wandering, every answer still ends complete and valid (`.stop`); without the rule
/// the same seeds are cut.
@Suite struct FinishInBudgetTests {
    @Test(arguments: ["gemma3-tiny", "phi3-mha"])
    func answersEndCompleteWithinTheBudget(_ fixture: String) throws {
        let model = try TransformerModel(path: Fixtures.checkpoint(fixture).path)
        let grammar = try ConstrainedGenerationTests.grammar()
        let compiled = try model.compileConstraint(grammar)
        let generator = try Generator(model: model, context: 256, threads: 2, sequences: 1)
        let prompt = try model.tokenizer.encode("Describe a person as JSON.", addSpecialTokens: true)
        var matcher = ConstraintMatcher(compiled)
        let minimum = matcher.bytesToComplete()
        #expect(minimum == 35, "the grammar's shortest output is 35 bytes")
        var cutWithout = 0, shaped = 0
        for seed in 1...8 {
            for rule in [true, false] {
                var parameters = GenerationParameters()
                parameters.maxTokens = minimum + 4
                parameters.sampling.temperature = 1.0
                parameters.sampling.topK = 0
                parameters.sampling.topP = 1
                parameters.sampling.minP = 0
                parameters.sampling.seed = UInt64(seed)
                parameters.constraint = compiled
                parameters.finishInBudget = rule
                var text = ""
                let summary = try generator.run(prompt: prompt, parameters: parameters) { text += $0.text }
                if rule {
                    #expect(summary.finishReason == .stop, "seed \(seed): \(text)")
                    #expect(grammar.accepts(Array(text.utf8)), "seed \(seed): \(text)")
                    shaped += summary.budgetShapedTokens > 0 ? 1 : 0
                } else {
                    #expect(summary.budgetShapedTokens == 0)
                    cutWithout += summary.finishReason == .length ? 1 : 0
                }
            }
        }
        // The random model wanders: without the rule some answers are cut, and the rule acted.
        #expect(cutWithout > 0 && shaped > 0, "cut without the rule: \(cutWithout), shaped with it: \(shaped)")
    }
}
