import HearthTestSupport
import Testing
@testable import HearthConstraints

/// Masks against brute force: every vocabulary token run byte by byte through an Earley
/// recognizer (independent of the mask engine) from the prefix generated so far, on random walks
/// through several grammars.
@Suite struct MaskTests {
    /// Every single byte (like byte-fallback tokens), plus random strings of JSON-ish pieces cut
    /// at random byte offsets (so multi-byte characters split across tokens), plus one special
    /// token (nil) and an end-of-sequence id.
    static func vocabulary(seed: UInt64) -> (tokens: [[UInt8]?], eos: Int32) {
        var rng = SeededRandom(state: seed)
        var tokens: [[UInt8]?] = (0...255).map { [UInt8($0)] }
        let pieces = ["{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "b", "c", "1", "2", "0", ".", "-", "e", "\\", "n",
                      "é", "€", "😀", "true", "null", "\": ", "\",", "},", "  "]
        var seen = Set(tokens.compactMap { $0 })
        while tokens.count < 2500 {
            var s: [UInt8] = []
            for _ in 0..<Int.random(in: 1...5, using: &rng) { s += Array(pieces.randomElement(using: &rng)!.utf8) }
            if Bool.random(using: &rng), s.count > 2 {
                let a = Int.random(in: 0..<s.count - 1, using: &rng)
                s = Array(s[a...])
            }
            if seen.insert(s).inserted { tokens.append(s) }
        }
        tokens.append(nil)  // a special token: never allowed
        tokens.append([])  // end of sequence
        return (tokens, Int32(tokens.count - 1))
    }

    static func grammars() throws -> [(String, Grammar)] {
        var result: [(String, Grammar)] = []
        func byte(_ c: Character) -> GrammarExpression { .bytes(ByteSet(c.asciiValue ?? 0)) }
        // JSON-like, recursive, bounded whitespace.
        var j = GrammarBuilder()
        let ws = GrammarExpression.repeating(.choice([byte(" "), byte("\n")]), min: 0, max: 3)
        try j.define("value", .choice([.reference("object"), .reference("array"), .reference("string"), .reference("number"),
                                        .literal("true"), .literal("null")]))
        try j.define("member", .sequence([.reference("string"), ws, .literal(":"), ws, .reference("value")]))
        try j.define("object", .sequence([.literal("{"), ws, .optional(.sequence([.reference("member"), ws,
            .zeroOrMore(.sequence([.literal(","), ws, .reference("member"), ws]))])), .literal("}")]))
        try j.define("array", .sequence([.literal("["), ws, .optional(.sequence([.reference("value"), ws,
            .zeroOrMore(.sequence([.literal(","), ws, .reference("value"), ws]))])), .literal("]")]))
        let plain = ByteSet(0x20...0xFF).intersection(ByteSet(UInt8(ascii: "\"")).inverted).intersection(ByteSet(UInt8(ascii: "\\")).inverted)
        try j.define("string", .sequence([.literal("\""), .zeroOrMore(.choice([.bytes(plain),
            .sequence([.literal("\\"), .bytes(ByteSet(bytes: Array("\"\\n".utf8)))])])), .literal("\"")]))
        try j.define("number", .sequence([.optional(.literal("-")), .oneOrMore(.bytes(ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9")))),
            .optional(.sequence([.literal("."), .oneOrMore(.bytes(ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9"))))]))]))
        try j.define("root", .sequence([.reference("object")]))
        result.append(("json", try j.build(root: "root")))

        // A fixed object shape with an enum and a UTF-8 class.
        var o = GrammarBuilder()
        let accented = GrammarExpression.choice([.literal("é"), .literal("€"), .literal("a"), .literal("😀")])
        try o.define("root", .sequence([.literal("{\"name\": \""), .repeating(accented, min: 1, max: 4), .literal("\", \"kind\": "),
            .choice([.literal("\"cat\""), .literal("\"car\""), .literal("null")]), .literal("}")]))
        result.append(("shape", try o.build(root: "root")))

        // Nullable pieces and loops at the end of the root (the output may stop anywhere in them).
        var n = GrammarBuilder()
        try n.define("root", .sequence([.optional(.literal("a")), .optional(.literal("b")), .zeroOrMore(.reference("item"))]))
        try n.define("item", .choice([.literal("c"), .sequence([.literal("1"), .zeroOrMore(byte(" ")), .literal("2")])]))
        result.append(("nullable", try n.build(root: "root")))

        // Nested recursion with a tail: balanced brackets then a comma list.
        var r = GrammarBuilder()
        try r.define("root", .sequence([.reference("nest"), .zeroOrMore(.sequence([.literal(","), .reference("nest")]))]))
        try r.define("nest", .choice([.literal("a"), .sequence([.literal("["), .reference("nest"), .literal("]")])]))
        result.append(("nest", try r.build(root: "root")))
        return result
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func masksEqualBruteForce(seed: UInt64) throws {
        let (tokens, eos) = MaskTests.vocabulary(seed: seed)
        let vocabulary = TokenVocabulary(tokens: tokens, endOfSequence: [eos])
        for (name, grammar) in try MaskTests.grammars() {
            let compiled = try CompiledConstraint(grammar, vocabulary: vocabulary)
            var rng = SeededRandom(state: seed &* 7919)
            for walk in 0..<4 {
                var matcher = ConstraintMatcher(compiled)
                var chart = EarleyChart(grammar)
                var mask: [UInt64] = []
                for step in 0..<24 {
                    matcher.fillMask(&mask)
                    var allowed: [Int32] = []
                    for id in 0..<tokens.count {
                        let got = mask[id >> 6] >> UInt64(id & 63) & 1 == 1
                        let expected: Bool
                        if Int32(id) == eos {
                            expected = chart.isComplete
                        } else if let bytes = tokens[id], !bytes.isEmpty {
                            var c = chart
                            expected = bytes.allSatisfy { c.push($0) }
                        } else {
                            expected = false
                        }
                        #expect(got == expected, "\(name) walk \(walk) step \(step): token \(id) \(tokens[id].map { String(decoding: $0, as: UTF8.self) } ?? "special")")
                        if got != expected { return }
                        if got { allowed.append(Int32(id)) }
                        #expect(matcher.allows(Int32(id)) == expected)
                    }
                    guard let pick = allowed.randomElement(using: &rng), pick != eos else { break }
                    let took = matcher.advance(pick)
                    #expect(took)
                    for b in tokens[Int(pick)] ?? [] { _ = chart.push(b) }
                }
            }
        }
    }

    @Test func finishesOnlyWhenComplete() throws {
        var b = GrammarBuilder()
        try b.define("root", .literal("ok"))
        let vocabulary = TokenVocabulary(tokens: [Array("o".utf8), Array("k".utf8), Array("ok".utf8), []], endOfSequence: [3])
        var m = ConstraintMatcher(try CompiledConstraint(try b.build(root: "root"), vocabulary: vocabulary))
        #expect(!m.isAccepting)
        let steps = [m.advance(3), m.advance(1), m.advance(0), m.advance(1)]
        #expect(steps == [false, false, true, true])
        #expect(m.isAccepting && m.isComplete)
        let ended = m.advance(3)
        #expect(ended)
    }
}

/// The same brute-force comparison on grammars from every front end: corpus schemas, GBNF
/// grammars and regular expressions.
@Suite struct FrontEndMaskTests {
    static let schemaNames = [
        "invoice.json", "tree.json", "user_profile.json", "format_datetime.json", "integer_range.json", "pattern_phone.json",
        "oneof_shapes.json", "unicode_strings.json", "array_prefix_rest.json", "number_decimal_bound.json",
        "string_lengths.json", "map_of_numbers.json",
    ]

    static func grammars() throws -> [(String, Grammar)] {
        var result: [(String, Grammar)] = []
        for name in schemaNames {
            let text = try String(contentsOf: SchemaCorpusTests.directory.appendingPathComponent(name), encoding: .utf8)
            result.append((name, try JSONSchema.grammar(text)))
        }
        result.append(("json_object", try JSONSchema.anyJSONObject))
        result.append(("gbnf list", try GBNF.grammar(#"""
            root ::= "- " item ("\n- " item)*
            item ::= [a-z1-2]+ | "\"" [^"\n]* "\""
            """#)))
        result.append(("regex", try RegularExpression.grammar(#"(\d{1,3}(,\d{3})*|é+)(\.\d+)?€?"#)))
        return result
    }

    @Test func masksEqualBruteForce() throws {
        let (tokens, eos) = MaskTests.vocabulary(seed: 11)
        let vocabulary = TokenVocabulary(tokens: tokens, endOfSequence: [eos])
        var rng = SeededRandom(state: 42)
        for (name, grammar) in try Self.grammars() {
            let compiled = try CompiledConstraint(grammar, vocabulary: vocabulary)
            for walk in 0..<2 {
                var matcher = ConstraintMatcher(compiled)
                var chart = EarleyChart(grammar)
                var mask: [UInt64] = []
                stepping: for step in 0..<16 {
                    matcher.fillMask(&mask)
                    var allowed: [Int32] = []
                    for id in 0..<tokens.count {
                        let got = mask[id >> 6] >> UInt64(id & 63) & 1 == 1
                        var expected = false
                        if Int32(id) == eos {
                            expected = chart.isComplete
                        } else if let bytes = tokens[id], !bytes.isEmpty {
                            var c = chart
                            expected = bytes.allSatisfy { c.push($0) }
                        }
                        #expect(got == expected, "\(name) walk \(walk) step \(step): token \(id)")
                        if got != expected { break stepping }
                        if got { allowed.append(Int32(id)) }
                    }
                    guard let pick = allowed.randomElement(using: &rng), pick != eos else { break }
                    matcher.advance(pick)
                    for b in tokens[Int(pick)] ?? [] { _ = chart.push(b) }
                }
            }
        }
    }
}
