import Testing
@testable import HearthConstraints

/// `pattern` and `format` together with `minLength`/`maxLength` (issue 59 item 2): the grammar
/// accepts a string exactly when the pattern matches it and its length in characters is within
/// the bounds — checked here on every string over a small alphabet up to a length past the
/// bounds, against the pattern's own grammar and a count of characters (the committed corpus,
/// `bounded_strings.json`, is checked against `jsonschema` by `SchemaCorpusTests`).
@Suite struct BoundedPatternTests {
    /// Every string over `alphabet` of up to `length` characters.
    static func strings(_ alphabet: [String], upTo length: Int) -> [String] {
        var all = [""], layer = [""]
        for _ in 0..<length {
            layer = layer.flatMap { s in alphabet.map { s + $0 } }
            all += layer
        }
        return all
    }

    static func grammar(_ schema: String) throws -> Grammar { try JSONSchema.grammar(schema) }

    @Test(arguments: [
        ("ab", 3, 5), ("^a+b?$", 2, 4), ("^(ab|c)*$", 1, 3), ("a", 0, 1), ("^[ab]{2,}$", 3, 4), ("^é+$", 2, 3),
    ])
    func patternWithLengthsAcceptsExactlyTheBoundedMatches(_ pattern: String, _ lo: Int, _ hi: Int) throws {
        let escaped = pattern.replacingOccurrences(of: "\\", with: "\\\\")
        let bounded = try Self.grammar(#"{"type":"string","pattern":"\#(escaped)","minLength":\#(lo),"maxLength":\#(hi)}"#)
        let plain = try Self.grammar(#"{"type":"string","pattern":"\#(escaped)"}"#)
        var accepted = 0
        for s in Self.strings(["a", "b", "c", "é"], upTo: hi + 2) {
            let text = Array("\"\(s)\"".utf8)
            let expected = plain.accepts(text) && (lo...hi).contains(s.unicodeScalars.count)
            #expect(bounded.accepts(text) == expected, "\(pattern) [\(lo), \(hi)]: \(s)")
            if expected { accepted += 1 }
            // Every accepted prefix can be completed: no dead end for the token masks.
            if bounded.acceptsPrefix(Array("\"\(s)".utf8)) {
                let completable = Self.strings(["a", "b", "c", "é"], upTo: hi - min(hi, s.unicodeScalars.count))
                    .contains { bounded.accepts(Array("\"\(s)\($0)\"".utf8)) }
                #expect(completable, "\(pattern) [\(lo), \(hi)]: the prefix \(s) cannot be completed")
            }
        }
        #expect(accepted > 0)
    }

    @Test func onlyAMinimumBoundsAnUnboundedPattern() throws {
        let g = try Self.grammar(#"{"type":"string","pattern":"^a+$","minLength":3}"#)
        for n in 0...8 {
            #expect(g.accepts(Array("\"\(String(repeating: "a", count: n))\"".utf8)) == (n >= 3), "\(n)")
        }
    }

    @Test func formatsWithLengths() throws {
        let email = try Self.grammar(#"{"type":"string","format":"email","minLength":8,"maxLength":12}"#)
        for (text, ok) in [("ann@ex.org", true), ("a@b.co", false), ("anna@example.org", false), ("ab@cd.ef", true), ("abc@defghi.jk", false)] {
            #expect(email.accepts(Array("\"\(text)\"".utf8)) == ok, "\(text)")
        }
        let stamp = try Self.grammar(#"{"type":"string","format":"date-time","maxLength":20}"#)
        #expect(stamp.accepts(Array(#""2025-03-07T14:05:09Z""#.utf8)))
        #expect(!stamp.accepts(Array(#""2025-03-07T14:05:09.5Z""#.utf8)))
        #expect(!stamp.accepts(Array(#""2025-03-07T14:05:09+01:00""#.utf8)))
        // Bounds the format always meets change nothing; bounds it never meets are unsatisfiable.
        _ = try Self.grammar(#"{"type":"string","format":"uuid","minLength":36,"maxLength":36}"#)
        #expect(throws: ConstraintError.self) { try Self.grammar(#"{"type":"string","format":"uuid","maxLength":35}"#) }
        #expect(throws: ConstraintError.self) { try Self.grammar(#"{"type":"string","format":"date","minLength":11}"#) }
        #expect(throws: ConstraintError.self) { try Self.grammar(#"{"type":"string","pattern":"^a{5}$","maxLength":4}"#) }
        // A format with a pattern: the strings both match (FormatPatternTests).
        let both = try Self.grammar(#"{"type":"string","format":"email","pattern":"x","maxLength":12}"#)
        #expect(both.accepts(Array(#""ax@b.co""#.utf8)))
        #expect(!both.accepts(Array(#""a@b.co""#.utf8)))
        #expect(!both.accepts(Array(#""axxxxxx@b.com""#.utf8)))
    }

    @Test func hugeBoundsAreTooComplexNotSlow() throws {
        do {
            _ = try Self.grammar(#"{"type":"string","pattern":"^(a|b|c|d|e|f|g|h)+(x|y)*(p|q)+[0-9]{1,40}$","maxLength":4000}"#)
        } catch let error as ConstraintError {
            #expect(error.kind == .tooComplex, "\(error)")
        }
    }
}
