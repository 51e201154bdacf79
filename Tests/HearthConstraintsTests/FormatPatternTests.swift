import Foundation
import Testing

@testable import HearthConstraints

/// `format` together with `pattern` (issue 59 item 2; refused before): the strings both match —
/// the format's automaton (whole) times the pattern's (anywhere unless anchored), times a
/// character counter with a length bound.
@Suite struct FormatPatternTests {
    static func accepts(_ grammar: Grammar, _ text: String) -> Bool {
        grammar.accepts(Array(("\"" + text + "\"").utf8))
    }

    /// Every string of up to 8 characters over {1, 2, 5, .}: accepted exactly when the format
    /// alone accepts it and the pattern finds a match (checked here with the standard library).
    @Test func theIntersectionIsExact() throws {
        let format = try JSONSchema.grammar(#"{"type": "string", "format": "ipv4"}"#)
        let cases: [(String, (String) -> Bool)] = [
            (#""5$""#, { $0.hasSuffix("5") }),
            (#""^2""#, { $0.hasPrefix("2") }),
            (#""\\.1\\.""#, { $0.contains(".1.") }),
        ]
        for (pattern, matches) in cases {
            let both = try JSONSchema.grammar(#"{"type": "string", "format": "ipv4", "pattern": \#(pattern)}"#)
            let bounded = try JSONSchema.grammar(#"{"type": "string", "format": "ipv4", "pattern": \#(pattern), "maxLength": 7}"#)
            var strings = [""]
            var checked = 0, accepted = 0
            for _ in 0..<8 {
                strings = strings.flatMap { s in ["1", "2", "5", "."].map { s + $0 } }
                for s in strings {
                    let expected = Self.accepts(format, s) && matches(s)
                    #expect(Self.accepts(both, s) == expected, "\(pattern): \(s)")
                    #expect(Self.accepts(bounded, s) == (expected && s.count <= 7), "\(pattern), maxLength 7: \(s)")
                    checked += 1
                    accepted += expected ? 1 : 0
                }
            }
            #expect(checked > 80_000 && accepted > 20, "\(pattern): \(accepted) of \(checked)")
        }
    }

    @Test func noStringInBothIsUnsatisfiable() {
        #expect(throws: ConstraintError.self) {
            try JSONSchema.grammar(#"{"type": "string", "format": "uuid", "pattern": "^z"}"#)
        }
        do {
            _ = try JSONSchema.grammar(#"{"type": "string", "format": "uuid", "pattern": "^z"}"#)
        } catch let error as ConstraintError {
            #expect(error.kind == .unsatisfiable && error.location == "/pattern", "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }
}
