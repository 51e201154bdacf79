import Testing
@testable import HearthConstraints

@Suite struct GrammarTests {
    @Test func repetitionLowersAndRecognizes() throws {
        var b = GrammarBuilder()
        try b.define("root", .sequence([.literal("\""), .zeroOrMore(.bytes(ByteSet(UInt8(ascii: "a")...UInt8(ascii: "z")))), .literal("\"")]))
        let g = try b.build(root: "root")
        #expect(g.accepts(Array("\"abc\"".utf8)))
        #expect(g.accepts(Array("\"\"".utf8)))
        #expect(!g.accepts(Array("\"ab".utf8)))
        #expect(!g.accepts(Array("\"aB\"".utf8)))
    }

    @Test func boundedRepetition() throws {
        var b = GrammarBuilder()
        try b.define("root", .repeating(.literal("ab"), min: 1, max: 3))
        let g = try b.build(root: "root")
        #expect(!g.accepts([]))
        #expect(g.accepts(Array("ab".utf8)))
        #expect(g.accepts(Array("ababab".utf8)))
        #expect(!g.accepts(Array("abababab".utf8)))
    }

    @Test func leftRecursionAndEmptyLanguageAreRefused() throws {
        var b = GrammarBuilder()
        try b.define("root", .choice([.sequence([.reference("root"), .literal("x")]), .literal("y")]))
        #expect(throws: ConstraintError.self) { try b.build(root: "root") }
        var c = GrammarBuilder()
        try c.define("root", .choice([]))
        #expect { try c.build(root: "root") } throws: { ($0 as? ConstraintError)?.kind == .unsatisfiable }
        var d = GrammarBuilder()
        try d.define("root", .reference("missing"))
        #expect { try d.build(root: "root") } throws: { ($0 as? ConstraintError)?.kind == .invalidGrammar }
    }

    @Test func identicalLoopsShareOneRule() throws {
        var b = GrammarBuilder()
        let loop = GrammarExpression.sequence([.literal("\""), .zeroOrMore(.bytes(ByteSet(UInt8(ascii: "a")...UInt8(ascii: "z")))), .literal("\"")])
        try b.define("root", .sequence([loop, .literal(","), loop]))
        let g = try b.build(root: "root")
        let selfLoops = g.rules.indices.filter { r in g.rules[r].alternatives.contains { $0.last == .rule(r) } }
        #expect(selfLoops.count == 1)
        #expect(g.accepts(Array("\"ab\",\"\"".utf8)))
        #expect(!g.accepts(Array("\"ab\",\"".utf8)))
    }
}
