import Testing
@testable import HearthConstraints

/// `multipleOf` with decimals and bounds (issue 59 item 2): the digit automaton accepts a number
/// exactly when it is a multiple within the bounds, checked against exact integer arithmetic
/// over every number from -20 to 20 in steps of 0.01 (and integers past 1000).
@Suite struct MultipleOfTests {
    /// A schema and its facts in units of 10⁻⁴: the multiple, the bounds (nil: none).
    struct Case {
        var schema: String
        var multiple: Int
        var minimum: (Int, exclusive: Bool)?
        var maximum: (Int, exclusive: Bool)?
        var integer = false
    }

    static let cases: [Case] = [
        Case(schema: #"{"type":"number","multipleOf":0.5,"minimum":-3,"maximum":7.25}"#, multiple: 5000,
             minimum: (-30000, false), maximum: (72500, false)),
        Case(schema: #"{"type":"number","multipleOf":0.01,"exclusiveMinimum":0,"maximum":1}"#, multiple: 100,
             minimum: (0, true), maximum: (10000, false)),
        Case(schema: #"{"type":"integer","multipleOf":7,"minimum":-50,"maximum":1000}"#, multiple: 70000,
             minimum: (-500000, false), maximum: (10000000, false), integer: true),
        Case(schema: #"{"type":"integer","multipleOf":7,"minimum":10}"#, multiple: 70000,
             minimum: (100000, false), maximum: nil, integer: true),
        Case(schema: #"{"type":"number","multipleOf":2.5,"exclusiveMinimum":-12.5,"exclusiveMaximum":40}"#, multiple: 25000,
             minimum: (-125000, true), maximum: (400000, true)),
        Case(schema: #"{"type":"number","multipleOf":0.25,"minimum":0.3,"maximum":2.1}"#, multiple: 2500,
             minimum: (3000, false), maximum: (21000, false)),
        Case(schema: #"{"type":"integer","multipleOf":0.5,"minimum":1,"maximum":5}"#, multiple: 5000,
             minimum: (10000, false), maximum: (50000, false), integer: true),
        Case(schema: #"{"type":"number","multipleOf":1.5}"#, multiple: 15000, minimum: nil, maximum: nil),
        Case(schema: #"{"type":"number","multipleOf":0.05,"minimum":-1.234,"exclusiveMaximum":2.5}"#, multiple: 500,
             minimum: (-12340, false), maximum: (25000, true)),
        Case(schema: #"{"type":"number","multipleOf":3,"exclusiveMaximum":-2.5}"#, multiple: 30000,
             minimum: nil, maximum: (-25000, true)),
    ]

    /// `n / 10^f` as JSON writes it shortest (no trailing fraction zeros).
    static func text(_ n: Int, _ f: Int) -> String {
        var scale = 1
        for _ in 0..<f { scale *= 10 }
        let magnitude = abs(n)
        var fraction = String(magnitude % scale)
        fraction = String(repeating: "0", count: max(0, f - fraction.count)) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        let body = "\(magnitude / scale)" + (fraction.isEmpty ? "" : "." + fraction)
        return (n < 0 ? "-" : "") + body
    }

    static func valid(_ c: Case, units x: Int, isInteger: Bool) -> Bool {
        if c.integer && !isInteger { return false }
        if x % c.multiple != 0 { return false }
        if let (lo, exclusive) = c.minimum, exclusive ? x <= lo : x < lo { return false }
        if let (hi, exclusive) = c.maximum, exclusive ? x >= hi : x > hi { return false }
        return true
    }

    @Test func acceptsExactlyTheMultiplesWithinTheBounds() throws {
        for c in Self.cases {
            let grammar = try JSONSchema.grammar(c.schema)
            var accepted = 0
            // Every hundredth from -20 to 20, written shortest.
            for n in -2000...2000 {
                let t = Self.text(n, 2)
                let ok = Self.valid(c, units: n * 100, isInteger: n % 100 == 0)
                #expect(grammar.accepts(Array(t.utf8)) == ok, "\(c.schema): \(t) should be \(ok ? "accepted" : "refused")")
                if ok { accepted += 1 }
            }
            // Integers further out.
            for n in stride(from: -3000, through: 3000, by: 1) where abs(n) > 20 {
                let ok = Self.valid(c, units: n * 10000, isInteger: true)
                #expect(grammar.accepts(Array(String(n).utf8)) == ok, "\(c.schema): \(n)")
            }
            #expect(accepted > 0, "\(c.schema) accepts no number in [-20, 20]")
        }
    }

    @Test func neverWritesMoreFractionDigitsOrAnExponent() throws {
        let grammar = try JSONSchema.grammar(#"{"type":"number","multipleOf":0.5,"minimum":0,"maximum":10}"#)
        for t in ["2.50", "2.5e0", "0.50", "-0", "05", "2.", ".5"] {
            #expect(!grammar.accepts(Array(t.utf8)), "\(t)")
        }
        for t in ["2.5", "0", "0.5", "10", "9.5"] { #expect(grammar.accepts(Array(t.utf8)), "\(t)") }
    }

    @Test func unsatisfiableAndTooLargeAreTypedErrors() throws {
        let refused: [(String, ConstraintError.Kind)] = [
            (#"{"type":"number","multipleOf":0.5,"minimum":1.1,"maximum":1.4}"#, .unsatisfiable),
            (#"{"type":"integer","multipleOf":7,"minimum":1,"maximum":6}"#, .unsatisfiable),
            (#"{"type":"number","multipleOf":0.0000000000000000001}"#, .unsupported),
            (#"{"type":"number","multipleOf":98765.4321}"#, .unsupported),
        ]
        for (schema, kind) in refused {
            do {
                _ = try JSONSchema.grammar(schema)
                Issue.record("no error for \(schema)")
            } catch let e as ConstraintError {
                #expect(e.kind == kind, "\(schema): \(e)")
                #expect(e.location == "/multipleOf", "\(schema): \(e)")
            }
        }
    }
}
