import HearthTestSupport
import Testing
@testable import HearthConstraints

/// Number bounds against exact decimal comparison, on many bounds and many numbers.
@Suite struct NumberRangeTests {
    static func randomDecimal(_ g: inout SeededRandom, fraction: Bool) -> String {
        let negative = Bool.random(using: &g)
        let integer = [0, 1, 5, 9, 10, 19, 99, 100, 250, 1000, 12345].randomElement(using: &g) ?? 0
        var text = (negative ? "-" : "") + String(integer + (Bool.random(using: &g) ? Int.random(in: 0...3, using: &g) : 0))
        if fraction && Bool.random(using: &g) {
            text += "." + (0..<Int.random(in: 1...3, using: &g)).map { _ in String(["0", "5", "9", "1"].randomElement(using: &g) ?? "0") }.joined()
        }
        return text
    }

    @Test(arguments: [false, true])
    func rangesMatchExactComparison(integer: Bool) throws {
        var g = SeededRandom(state: integer ? 7 : 11)
        var accepted = 0, rejected = 0
        for _ in 0..<60 {
            let lo = Bool.random(using: &g) ? Self.randomDecimal(&g, fraction: !integer || Bool.random(using: &g)) : nil
            let hi = Bool.random(using: &g) ? Self.randomDecimal(&g, fraction: !integer || Bool.random(using: &g)) : nil
            let loExclusive = Bool.random(using: &g), hiExclusive = Bool.random(using: &g)
            var schema = #"{"type":"\#(integer ? "integer" : "number")""#
            if let lo { schema += #","\#(loExclusive ? "exclusiveMinimum" : "minimum")":\#(lo)"# }
            if let hi { schema += #","\#(hiExclusive ? "exclusiveMaximum" : "maximum")":\#(hi)"# }
            schema += "}"
            let loValue = lo.flatMap(DecimalNumber.init), hiValue = hi.flatMap(DecimalNumber.init)
            let grammar: Grammar
            do {
                grammar = try JSONSchema.grammar(schema)
            } catch let e as ConstraintError {
                // Only an empty range may be refused, and only as unsatisfiable.
                #expect(e.kind == .unsatisfiable, "\(schema): \(e)")
                continue
            }
            for _ in 0..<40 {
                let candidate = Self.randomDecimal(&g, fraction: true)
                guard let x = DecimalNumber(candidate) else { continue }
                let aboveLo = loValue.map { loExclusive ? $0 < x : !(x < $0) } ?? true
                let belowHi = hiValue.map { hiExclusive ? x < $0 : !($0 < x) } ?? true
                // An integer is written without a point (9.0 is an integer to JSON Schema, but
                // the grammar writes the canonical 9: a documented subset).
                let expected = aboveLo && belowHi && (!integer || !candidate.contains("."))
                // "-0" and "-0.0" are zero: written by the grammar only when zero is bounded from above by 0.
                if x.isZero && candidate.hasPrefix("-") { continue }
                #expect(grammar.accepts(Array(candidate.utf8)) == expected, "\(schema) on \(candidate)")
                if expected { accepted += 1 } else { rejected += 1 }
            }
        }
        #expect(accepted > 300 && rejected > 300)
    }
}
