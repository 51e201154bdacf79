import Foundation
import HearthTestSupport
import Testing
@testable import HearthConstraints

@Suite struct UTF8RangesTests {
    /// Every scalar of a few ranges is accepted and its neighbours outside the set are not.
    @Test func scalarSetsMatchTheirScalarsExactly() throws {
        let sets: [ScalarSet] = [
            ScalarSet([0x41...0x5A]), ScalarSet([0x7F...0x81]), ScalarSet([0x7FF...0x800]),
            ScalarSet([0xD700...0xE001]), ScalarSet([0xFFFF...0x10000]), ScalarSet([0x10FFFE...0x10FFFF]),
            ScalarSet([0x3B1...0x3C9, 0x1F600...0x1F64F]).inverted, .all,
        ]
        for set in sets {
            var b = GrammarBuilder()
            try b.define("root", set.expression)
            let g = try b.build(root: "root")
            var probes: [UInt32] = [0, 0x41, 0x5A, 0x5B, 0x7F, 0x80, 0x81, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xE001, 0xFFFF,
                                    0x10000, 0x10FFFF, 0x3B1, 0x3C9, 0x1F600, 0x1F64F, 0x1F650]
            for r in set.ranges { probes += [r.lowerBound, r.upperBound] }
            for v in probes {
                guard let scalar = Unicode.Scalar(v) else { continue }
                #expect(g.accepts(Array(String(Character(scalar)).utf8)) == set.contains(v), "U+\(String(v, radix: 16)) in \(set.ranges)")
            }
            // Surrogate encodings and overlong forms are never accepted.
            #expect(!g.accepts([0xED, 0xA0, 0x80]))
            #expect(!g.accepts([0xC0, 0x80]))
            #expect(!g.accepts([0xF4, 0x90, 0x80, 0x80]))
        }
    }

    @Test func anyCharacterIsOneScalar() throws {
        var b = GrammarBuilder()
        try b.define("root", .anyCharacter)
        let g = try b.build(root: "root")
        for text in ["a", "é", "€", "😀", "\u{10FFFF}", "\0"] { #expect(g.accepts(Array(text.utf8))) }
        for bytes: [UInt8] in [[], [0x80], [0xFF], [0x61, 0x62], [0xE2, 0x82]] { #expect(!g.accepts(bytes)) }
    }
}

@Suite struct RegexTests {
    struct Pattern: Decodable { let pattern: String; let cases: [Case] }
    struct Case: Decodable { let text: String; let match: Bool }

    /// Every pattern of `regex-cases.json` against the strings Python's `re.fullmatch` labelled
    /// (scripts/make_regex_fixtures.py).
    @Test func matchesPythonReference() throws {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("regex-cases.json"))
        let patterns = try JSONDecoder().decode([Pattern].self, from: data)
        #expect(patterns.count >= 35)
        var checked = 0
        for p in patterns {
            let g = try RegularExpression.grammar(p.pattern)
            for c in p.cases {
                #expect(g.accepts(Array(c.text.utf8)) == c.match, "\(p.pattern) on \(c.text.debugDescription)")
                checked += 1
            }
        }
        #expect(checked >= 400)
    }

    @Test func searchSemanticsForJSONSchemaPatterns() throws {
        func grammar(_ p: String) throws -> Grammar {
            var b = GrammarBuilder()
            try b.define(JSONRules.char, .anyCharacter)
            try b.define("root", try RegularExpression.expression(p, encoding: .jsonString, search: true))
            return try b.build(root: "root")
        }
        let contains = try grammar("abc")
        #expect(contains.accepts(Array("xxabcyy".utf8)))
        #expect(!contains.accepts(Array("xxabyy".utf8)))
        let prefix = try grammar("^ab")
        #expect(prefix.accepts(Array("abzz".utf8)))
        #expect(!prefix.accepts(Array("zab".utf8)))
        let suffix = try grammar("ab$|^x")
        #expect(suffix.accepts(Array("zzab".utf8)))
        #expect(suffix.accepts(Array("xzz".utf8)))
        #expect(!suffix.accepts(Array("abz".utf8)))
        // Inside a JSON string a quote is written escaped.
        let quote = try grammar("^a\"b$")
        #expect(quote.accepts(Array("a\\\"b".utf8)))
        #expect(!quote.accepts(Array("a\"b".utf8)))
    }

    @Test func errorsHaveKindAndOffset() throws {
        let cases: [(String, ConstraintError.Kind, String)] = [
            ("(a)\\1", .unsupported, "offset 3"),
            ("a(?=b)", .unsupported, "offset 1"),
            ("a(?<!b)", .unsupported, "offset 1"),
            ("(?<year>\\d{4})", .unsupported, "offset 0"),
            ("a\\bc", .unsupported, "offset 1"),
            ("a^b", .unsupported, "offset 1"),
            ("a$b", .unsupported, "offset 1"),
            ("\\p{L}", .unsupported, "offset 0"),
            ("(ab", .syntax, "offset 0"),
            ("ab)", .syntax, "offset 2"),
            ("[ab", .syntax, "offset 0"),
            ("*a", .syntax, "offset 0"),
            ("a**", .syntax, "offset 0"),
            ("[z-a]", .syntax, "offset 2"),
            ("a{3,2}", .syntax, "offset 1"),
            ("\\x4", .syntax, "offset 0"),
            ("a{5000}", .tooComplex, "offset 1"),
            ("(a{1000}){1000}", .tooComplex, "offset 0"),
            ("((a{100}){100}){100}", .tooComplex, "offset 0"),
            ("[^\\s\\S]", .unsatisfiable, "root"),
        ]
        for (pattern, kind, location) in cases {
            #expect(throws: ConstraintError.self, "\(pattern)") { try RegularExpression.grammar(pattern) }
            do {
                _ = try RegularExpression.grammar(pattern)
            } catch let e as ConstraintError {
                #expect(e.kind == kind, "\(pattern): \(e)")
                #expect(e.location == location, "\(pattern): \(e)")
            }
        }
    }

    @Test func pathologicalPatternsCompileQuickly() throws {
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            for p in ["(a*)*b", "((a|b)*)*c", "(a?){100}", "(x+x+)+y", "[\\s\\S]{0,1000}"] { _ = try RegularExpression.grammar(p) }
        }
        #expect(elapsed < .seconds(5))
    }
}
