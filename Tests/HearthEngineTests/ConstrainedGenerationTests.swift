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
        let model = try LanguageModel(path: Fixtures.checkpoint(fixture).path)
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
