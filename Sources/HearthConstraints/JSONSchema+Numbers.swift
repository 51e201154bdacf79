/// Numbers under bounds, as digit grammars: exact for integers and for decimals (bounds are
/// exact decimals; a number is written without an exponent when it is bounded).
enum NumberGrammar {
    /// The most integer digits of an unbounded number, and the most fraction digits.
    static let maxIntegerDigits = 16
    static let maxFractionDigits = 16

    struct Bound {
        var value: DecimalNumber
        var exclusive: Bool
    }

    static let digit = GrammarExpression.bytes(ByteSet(UInt8(ascii: "0")...UInt8(ascii: "9")))

    /// Numbers `n` with `lower ≤ n ≤ upper` (either may be exclusive or absent) with at most
    /// `fractionDigits` digits after the point (0: integers). Nil when no number qualifies.
    static func range(lower: Bound?, upper: Bound?, fractionDigits: Int) -> GrammarExpression? {
        let zero = DecimalNumber(negative: false, integer: "0", fraction: "")
        var options: [GrammarExpression] = []
        // Non-negative part: magnitudes in [max(lower, 0), upper].
        if upper.map({ !($0.value.negative) && !($0.value.isZero && $0.exclusive) }) ?? true {
            let lo = lower.flatMap { $0.value.negative ? nil : $0 } ?? Bound(value: zero, exclusive: false)
            if let e = magnitude(lower: lo, upper: upper, fractionDigits: fractionDigits) { options.append(e) }
        }
        // Negative part: "-" and magnitudes in (max(-upper, 0), -lower].
        if lower.map({ $0.value.negative }) ?? true {
            let lo = upper.flatMap { $0.value.negative ? Bound(value: $0.value.negated, exclusive: $0.exclusive) : nil }
                ?? Bound(value: zero, exclusive: true)
            let hi = lower.map { Bound(value: $0.value.negated, exclusive: $0.exclusive) }
            if let e = magnitude(lower: lo, upper: hi, fractionDigits: fractionDigits) {
                options.append(.sequence([.literal("-"), e]))
            }
        }
        if options.isEmpty { return nil }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// Non-negative numbers in [lower, upper] (upper absent: up to `maxIntegerDigits` digits).
    static func magnitude(lower: Bound, upper: Bound?, fractionDigits: Int) -> GrammarExpression? {
        guard let a = lower.value.integerValue else { return nil }
        let af = lower.value.fraction.map { Int($0.asciiValue ?? 48) - 48 }
        var options: [GrammarExpression] = []
        func withFraction(_ integer: GrammarExpression, _ lo: FractionBound?, _ hi: FractionBound?) {
            guard let f = fraction(lower: lo, upper: hi, digits: fractionDigits) else { return }
            options.append(.sequence([integer, f]))
        }
        let loFraction = normalized(FractionBound(digits: af, exclusive: lower.exclusive))
        if let upper {
            guard let b = upper.value.integerValue else { return nil }
            let bf = upper.value.fraction.map { Int($0.asciiValue ?? 48) - 48 }
            let hiFraction = FractionBound(digits: bf, exclusive: upper.exclusive)
            if a > b { return nil }
            if a == b {
                withFraction(.literal(String(a)), loFraction, hiFraction)
            } else {
                withFraction(.literal(String(a)), loFraction, nil)
                if b - a >= 2, let middle = natural(a + 1, b - 1) { withFraction(middle, nil, nil) }
                withFraction(.literal(String(b)), nil, hiFraction)
            }
        } else {
            withFraction(.literal(String(a)), loFraction, nil)
            if let rest = natural(a + 1, nil) { withFraction(rest, nil, nil) }
        }
        if options.isEmpty { return nil }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// Bounds on the digits after the point (compared as 0.d₁d₂…, missing digits are zeros).
    struct FractionBound {
        var digits: [Int]
        var exclusive: Bool
    }

    /// An inclusive lower bound of zero is no bound.
    static func normalized(_ b: FractionBound?) -> FractionBound? {
        guard let b else { return nil }
        return !b.exclusive && b.digits.allSatisfy { $0 == 0 } ? nil : b
    }

    /// The fraction part (nothing, or "." and 1…`digits` digits) whose value lies within the bounds.
    static func fraction(lower: FractionBound?, upper: FractionBound?, digits: Int) -> GrammarExpression? {
        let (emptyOK, nonEmpty) = fractionDigits(lower: normalized(lower), upper: upper, remaining: digits)
        let dotted = nonEmpty.map { GrammarExpression.sequence([.literal("."), $0]) }
        switch (emptyOK, dotted) {
        case (true, nil): return .empty
        case (true, let d?): return .optional(d)
        case (false, let d?): return d
        case (false, nil): return nil
        }
    }

    /// Digit strings D (value 0.D) within the bounds: whether D may be empty, and the non-empty ones.
    static func fractionDigits(lower: FractionBound?, upper: FractionBound?, remaining: Int) -> (Bool, GrammarExpression?) {
        let emptyOK = lower == nil && (upper.map { !($0.exclusive && $0.digits.allSatisfy { $0 == 0 }) } ?? true)
        guard remaining > 0 else { return (emptyOK, nil) }
        if lower == nil && upper == nil {
            return (true, .repeating(digit, min: 1, max: remaining))
        }
        let loD = lower.map { $0.digits.first ?? 0 } ?? -1
        let hiD = upper.map { $0.digits.first ?? 0 } ?? 10
        var options: [GrammarExpression] = []
        var middle = ByteSet()
        for d in 0...9 where d >= loD && d <= hiD {
            let lo = d == loD ? lower.map { normalized(FractionBound(digits: Array($0.digits.dropFirst()), exclusive: $0.exclusive)) } ?? nil : nil
            let hi = d == hiD ? upper.map { FractionBound(digits: Array($0.digits.dropFirst()), exclusive: $0.exclusive) } : nil
            if lo == nil && hi == nil {
                middle.insert(UInt8(48 + d))
                continue
            }
            let (restEmpty, rest) = fractionDigits(lower: lo, upper: hi, remaining: remaining - 1)
            let byte = GrammarExpression.bytes(ByteSet(UInt8(48 + d)))
            switch (restEmpty, rest) {
            case (true, nil): options.append(byte)
            case (true, let r?): options.append(.sequence([byte, .optional(r)]))
            case (false, let r?): options.append(.sequence([byte, r]))
            case (false, nil): break
            }
        }
        if !middle.isEmpty {
            options.insert(remaining > 1 ? .sequence([.bytes(middle), .repeating(digit, min: 0, max: remaining - 1)]) : .bytes(middle), at: 0)
        }
        if options.isEmpty { return (emptyOK, nil) }
        return (emptyOK, options.count == 1 ? options[0] : .choice(options))
    }

    /// Natural numbers a ≤ n ≤ b in canonical form (no leading zeros); b absent: up to
    /// `maxIntegerDigits` digits (or a's length, if longer).
    static func natural(_ a: Int, _ b: Int?) -> GrammarExpression? {
        let aDigits = String(a).count
        let maxLength = b.map { String($0).count } ?? max(maxIntegerDigits, aDigits)
        if let b, b < a { return nil }
        var options: [GrammarExpression] = []
        for length in aDigits...maxLength {
            let lo = length == aDigits ? String(a) : "1" + String(repeating: "0", count: length - 1)
            let hi: String
            if let b, length == maxLength { hi = String(b) } else { hi = String(repeating: "9", count: length) }
            options.append(sameLength(Array(lo.utf8), Array(hi.utf8)))
        }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// Digit strings of one length between lo and hi inclusive (lo ≤ hi, same length).
    static func sameLength(_ lo: [UInt8], _ hi: [UInt8]) -> GrammarExpression {
        guard let l = lo.first, let h = hi.first else { return .empty }
        let n = lo.count - 1
        let restLo = Array(lo.dropFirst()), restHi = Array(hi.dropFirst())
        if l == h { return .sequence([.bytes(ByteSet(l)), sameLength(restLo, restHi)]) }
        let zeros = restLo.allSatisfy { $0 == 48 }, nines = restHi.allSatisfy { $0 == 57 }
        var options: [GrammarExpression] = []
        let first = zeros ? l : l + 1, last = nines ? h : h - 1
        if !zeros { options.append(.sequence([.bytes(ByteSet(l)), sameLength(restLo, Array(repeating: 57, count: n))])) }
        if first <= last { options.append(.sequence([.bytes(ByteSet(first...last)), .repeating(digit, min: n, max: n)])) }
        if !nines { options.append(.sequence([.bytes(ByteSet(h)), sameLength(Array(repeating: 48, count: n), restHi)])) }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// Multiples of `m` (m ≥ 2) in canonical form, as rules `mul<m>_<residue>` defined in the
    /// builder (a divisibility automaton: reading digit d in state r goes to (10r + d) mod m).
    /// Returns the expression for the magnitudes (0 included when `zero`).
    static func multiples(of m: Int, zero: Bool, builder: inout GrammarBuilder) throws -> GrammarExpression {
        func name(_ r: Int) -> String { "mul\(m)_\(r)" }
        if !builder.contains(name(0)) {
            for r in 0..<m {
                var byTarget: [Int: ByteSet] = [:]
                for d in 0...9 { byTarget[(10 * r + d) % m, default: ByteSet()].insert(UInt8(48 + d)) }
                var options: [GrammarExpression] = byTarget.sorted { $0.key < $1.key }.map { .sequence([.bytes($0.value), .reference(name($0.key))]) }
                if r == 0 { options.append(.empty) }
                try builder.define(name(r), .choice(options))
            }
        }
        var byTarget: [Int: ByteSet] = [:]
        for d in 1...9 { byTarget[d % m, default: ByteSet()].insert(UInt8(48 + d)) }
        var options: [GrammarExpression] = byTarget.sorted { $0.key < $1.key }.map { .sequence([.bytes($0.value), .reference(name($0.key))]) }
        if zero { options.insert(.literal("0"), at: 0) }
        return .choice(options)
    }
}
