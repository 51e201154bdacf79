import Foundation
import HearthTestSupport
import Testing
@testable import HearthConstraints

/// One request must never crash or hold the process: grammars of any shape compile without
/// recursing per rule, and what is over the compile budget is refused with `.tooComplex`
/// naming the bound and the part at fault (issue 55's reproductions).
@Suite struct CompileBudgetTests {
    /// `a0 ::= a1 "x" | "y"`, …, the last `a(n-1) ::= "z"`: a chain of `n` rules, each
    /// beginning with the next; `deepestFirst` writes them in the reverse order.
    static func chain(_ n: Int, deepestFirst: Bool, referenceFirst: Bool = true) -> String {
        var lines: [String] = []
        for i in 0..<n - 1 {
            lines.append(referenceFirst ? "a\(i) ::= a\(i + 1) \"x\" | \"y\"" : "a\(i) ::= \"x\" a\(i + 1) | \"y\"")
        }
        lines.append("a\(n - 1) ::= \"z\"")
        if deepestFirst { lines.reverse() }
        return "root ::= a0\n" + lines.joined(separator: "\n") + "\n"
    }

    /// A budget with room for any number of rules and references (the walks themselves must
    /// hold up), and time enough for a slow machine.
    static let roomy = CompileBudget(
        maxRules: 1_000_000, maxReferenceDepth: 1_000_000, maxSymbols: 4_000_000, maxPositions: 1_000_000,
        maxKeySteps: 40_000_000, maxMaskBytes: 1 << 30, maxParserStates: 1_000_000, timeLimit: .seconds(120))

    static let vocabulary: TokenVocabulary = {
        let (tokens, eos) = MaskTests.vocabulary(seed: 5)
        return TokenVocabulary(tokens: tokens, endOfSequence: [eos])
    }()

    /// 40,000 chained rules, in both orders and both shapes, compile to a grammar and to masks:
    /// the walks over rules are iterative (before, the first order overflowed the stack in the
    /// inlining pass, the second in the mask keys).
    @Test(arguments: [(false, true), (true, true), (false, false), (true, false)])
    func longChainsCompileWithoutRecursion(_ shape: (deepestFirst: Bool, referenceFirst: Bool)) throws {
        let text = Self.chain(40_000, deepestFirst: shape.deepestFirst, referenceFirst: shape.referenceFirst)
        let grammar = try GBNF.grammar(text, budget: Self.roomy)
        let compiled = try CompiledConstraint(grammar, vocabulary: Self.vocabulary, budget: Self.roomy)
        var deep = ConstraintMatcher(compiled)
        let deepAccepted = deep.advance(bytes: Array("zxx".utf8))  // the innermost rule first
        #expect(deepAccepted == shape.referenceFirst)
        var shallow = ConstraintMatcher(compiled)
        let short = shape.referenceFirst ? "y" : "xxy"
        let shallowAccepted = shallow.advance(bytes: Array(short.utf8))
        #expect(shallowAccepted)
    }

    /// The standard budget refuses the 40,000- and 100,000-rule chains by their number of rules,
    /// at once, naming the bound and where the text passes it.
    @Test(arguments: [40_000, 100_000])
    func tooManyRulesAreRefused(_ count: Int) throws {
        for deepestFirst in [false, true] {
            let error = #expect(throws: ConstraintError.self) {
                try GBNF.grammar(Self.chain(count, deepestFirst: deepestFirst))
            }
            #expect(error?.kind == .tooComplex)
            #expect(error?.message.contains("more than \(CompileBudget.standard.maxRules) rules") == true)
            #expect(error?.location.hasPrefix("line ") == true)
        }
    }

    /// A chain within the rule bound but longer than the reference depth is refused, naming the
    /// rule that starts it; one within both bounds compiles.
    @Test func referenceChainsAreBounded() throws {
        let limit = CompileBudget.standard.maxReferenceDepth
        let error = #expect(throws: ConstraintError.self) { try GBNF.grammar(Self.chain(limit + 10, deepestFirst: true)) }
        #expect(error?.kind == .tooComplex)
        #expect(error?.message.contains("rule 'root' starts a chain of \(limit + 11) rule references") == true)
        _ = try GBNF.grammar(Self.chain(limit - 1, deepestFirst: true))
        // A recursive group counts as its size: `b0 → b1 → … → b(n-1) → b0`.
        var lines = ["root ::= b0"]
        for i in 0..<limit + 5 { lines.append("b\(i) ::= \"x\" b\((i + 1) % (limit + 5)) | \"y\"") }
        let cyclic = #expect(throws: ConstraintError.self) { try GBNF.grammar(lines.joined(separator: "\n")) }
        #expect(cyclic?.message.contains("chain of \(limit + 6) rule references") == true)
    }

    /// Nine fields of `^([a-z]{4096}){48}$` (808 bytes; before, over 3 GB and an abort) are
    /// refused at once, naming a field.
    @Test func hugePatternsAreRefusedByName() throws {
        var properties: [String] = []
        for i in 0..<9 { properties.append("\"p\(i)\":{\"type\":\"string\",\"pattern\":\"^([a-z]{4096}){48}$\"}") }
        let schema = "{\"type\":\"object\",\"properties\":{\(properties.joined(separator: ","))},\"required\":[\"p0\"]}"
        let error = #expect(throws: ConstraintError.self) { try JSONSchema.grammar(schema) }
        #expect(error?.kind == .tooComplex)
        #expect(error?.message.contains("symbols") == true)
        #expect(error?.location.hasPrefix("/properties/p") == true, "\(String(describing: error?.location))")
        // Parts each within the pattern bound, together over the symbol budget: the part over
        // it is named, and its largest piece is where the error points.
        let items = (0..<7).map { _ in #"{"type":"string","pattern":"^([a-z]{4000}){40}$"}"# }.joined(separator: ",")
        let tuple = #expect(throws: ConstraintError.self) {
            try JSONSchema.grammar(#"{"type":"object","properties":{"a":{"type":"array","prefixItems":["# + items + "]}}}")
        }
        #expect(tuple?.message.contains("the schema at '/properties/a' lowers to about") == true, "\(tuple?.message ?? "")")
        #expect(tuple?.location.hasPrefix("/properties/a/prefixItems/") == true, "\(tuple?.location ?? "")")
    }

    /// Each bound of the mask compile is enforced, naming it.
    @Test func maskCompileBoundsAreEnforced() throws {
        let (tokens, eos) = MaskTests.vocabulary(seed: 6)
        let vocabulary = TokenVocabulary(tokens: tokens, endOfSequence: [eos])  // nothing cached yet
        let grammar = try GBNF.grammar(#"root ::= "{" [a-z]{2000} "}""#)
        var budget = Self.roomy
        budget.maxPositions = 1000
        let positions = #expect(throws: ConstraintError.self) {
            try CompiledConstraint(grammar, vocabulary: vocabulary, budget: budget)
        }
        #expect(positions?.message.contains("byte positions; the compile budget allows 1000") == true)
        budget = Self.roomy
        budget.maxKeySteps = 100
        let keys = #expect(throws: ConstraintError.self) { try CompiledConstraint(grammar, vocabulary: vocabulary, budget: budget) }
        #expect(keys?.message.contains("more than 100 steps") == true)
        budget = Self.roomy
        budget.maxParserStates = 3
        let states = #expect(throws: ConstraintError.self) { try CompiledConstraint(grammar, vocabulary: vocabulary, budget: budget) }
        #expect(states?.message.contains("more than 3 parser states") == true)
        budget = Self.roomy
        budget.maxMaskBytes = 64
        let fresh = try GBNF.grammar(#"root ::= "<" [0-9]{3} ">""#)  // masks not cached by the other tests
        let bytes = #expect(throws: ConstraintError.self) { try CompiledConstraint(fresh, vocabulary: vocabulary, budget: budget) }
        #expect(bytes?.message.contains("token masks take more than") == true)
        // The same grammar within the standard budget compiles.
        _ = try CompiledConstraint(grammar, vocabulary: vocabulary)
    }

    /// A compile past its time limit stops with `.tooComplex` instead of running on.
    @Test func timeLimitStopsACompile() throws {
        var budget = Self.roomy
        budget.timeLimit = .zero
        let error = #expect(throws: ConstraintError.self) {
            try GBNF.grammar(Self.chain(3000, deepestFirst: false), budget: budget)
        }
        #expect(error?.message.contains("took longer than its limit") == true)
    }

    /// The shared mask cache holds at most its byte bound, and still caches.
    @Test func maskCacheIsBoundedInBytes() throws {
        let (tokens, eos) = MaskTests.vocabulary(seed: 9)
        let limit = 48 << 10
        let vocabulary = TokenVocabulary(tokens: tokens, endOfSequence: [eos], maskCacheBytes: limit)
        var most = 0
        for n in 0..<40 {
            let grammar = try GBNF.grammar("root ::= \"k\(n)\" [a-z]{\(n % 7 + 3)} [0-9]{\(n % 5 + 1)} \"\(n)\"")
            _ = try CompiledConstraint(grammar, vocabulary: vocabulary)
            #expect(vocabulary.cachedMaskBytes <= limit)
            most = max(most, vocabulary.cachedMaskBytes)
        }
        #expect(most > limit / 2)  // it filled up (and was emptied) rather than caching nothing
        let again = try CompiledConstraint(try GBNF.grammar("root ::= \"k39\" [a-z]{7} [0-9]{5} \"39\""), vocabulary: vocabulary)
        #expect(again.cachedPositions > 0)
    }
}
