/// `multipleOf` as a digit automaton: the numbers `x` within the bounds that are exact
/// multiples of `m = p / 10^k` (`p` an integer, `k` the digits of `m` after the point).
///
/// `x` is a multiple of `m` exactly when `V = x · 10^k` is an integer divisible by `p`. A number
/// is written with at most `k` digits after the point, read as the digits of `V` (the missing
/// fraction digits are zeros). The grammar walks those digits left to right in states
/// (position, still equal to the lower bound's digits, still equal to the upper bound's,
/// `V`'s prefix mod `p`): one digit moves the remainder to `(10r + d) mod p`, and the number may
/// end where the remainder of the whole, `r · 10^(digits left)`, is zero and the bounds hold
/// for the zeros left. States that no longer touch a bound depend only on the digits left and
/// the remainder, and are shared rules (`mul<p>e<k>i<n>_<r>`, `mul<p>e<k>f<j>_<r>`), so the
/// grammar has at most `(integer digits + k + 1) · p` of them, whatever the bounds; the states
/// that follow a bound's digits are a chain per bound.
struct MultipleAutomaton {
    /// The most shared states one `multipleOf` may define (the estimate above): beyond it the
    /// keyword is refused as too complex.
    static let maxStates = 20_000

    let p: Int
    let k: Int

    /// `m` as (p, k), nil when it has more digits than a number is written with.
    init?(_ m: DecimalNumber) {
        let digits = (m.integer == "0" ? "" : m.integer) + m.fraction
        guard m.fraction.count <= NumberGrammar.maxFractionDigits, let p = Int(digits), p > 0 else { return nil }
        self.p = p
        self.k = m.fraction.count
    }

    init(p: Int, k: Int) {
        self.p = p
        self.k = k
    }

    /// The same multiples among integers: `x · 10^k ≡ 0 (mod p)` for an integer `x` is
    /// `x ≡ 0 (mod p / gcd(p, 10^k))`, and gcd(p, 10^k) is at most k factors of 2 and k of 5.
    var amongIntegers: MultipleAutomaton {
        var rest = p, twos = 0, fives = 0
        while rest % 2 == 0 && twos < k { rest /= 2; twos += 1 }
        while rest % 5 == 0 && fives < k { rest /= 5; fives += 1 }
        return MultipleAutomaton(p: rest, k: 0)
    }

    /// Numbers with `lower ≤ x ≤ upper` (either may be exclusive or absent) that are multiples of
    /// `m`. Nil when none is.
    func range(
        lower: NumberGrammar.Bound?, upper: NumberGrammar.Bound?, builder: inout GrammarBuilder
    ) throws -> GrammarExpression? {
        let zero = DecimalNumber(negative: false, integer: "0", fraction: "")
        var options: [GrammarExpression] = []
        if upper.map({ !($0.value.negative) && !($0.value.isZero && $0.exclusive) }) ?? true {
            let lo = lower.flatMap { $0.value.negative ? nil : $0 } ?? NumberGrammar.Bound(value: zero, exclusive: false)
            if let e = try magnitude(lower: lo, upper: upper, builder: &builder) { options.append(e) }
        }
        if lower.map({ $0.value.negative }) ?? true {
            let lo = upper.flatMap { $0.value.negative ? NumberGrammar.Bound(value: $0.value.negated, exclusive: $0.exclusive) : nil }
                ?? NumberGrammar.Bound(value: zero, exclusive: true)
            let hi = lower.map { NumberGrammar.Bound(value: $0.value.negated, exclusive: $0.exclusive) }
            if let e = try magnitude(lower: lo, upper: hi, builder: &builder) { options.append(.sequence([.literal("-"), e])) }
        }
        if options.isEmpty { return nil }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// The integer digits an upper bound allows (`maxIntegerDigits` without one).
    func integerDigits(upper: NumberGrammar.Bound?) -> Int {
        guard let upper else { return NumberGrammar.maxIntegerDigits }
        return max(1, upper.value.negative ? 1 : upper.value.integer.count)
    }

    /// Whether the automaton for these bounds stays within ``maxStates``.
    func fits(upper: NumberGrammar.Bound?, lower: NumberGrammar.Bound?) -> Bool {
        let digits = max(integerDigits(upper: upper), lower.map { $0.value.integer.count } ?? 1)
        return (digits + k + 1) * p <= Self.maxStates
    }

    // MARK: Magnitudes

    /// Non-negative multiples in [lower, upper] (upper absent: up to `maxIntegerDigits` integer digits).
    func magnitude(
        lower: NumberGrammar.Bound, upper: NumberGrammar.Bound?, builder: inout GrammarBuilder
    ) throws -> GrammarExpression? {
        guard let lo = scaled(lower, roundingUp: true) else { return nil }
        var hi: [Int]? = nil
        if let upper {
            guard let h = scaled(upper, roundingUp: false) else { return nil }
            if compare(h, lo) < 0 { return nil }
            hi = h
        }
        let maxLength = hi.map { max(1, $0.count - k) } ?? max(NumberGrammar.maxIntegerDigits, lo.count - k)
        var options: [GrammarExpression] = []
        let empty = EmptyStates()
        for length in 1...maxLength {
            let total = length + k
            guard let loDigits = padded(lo, to: total) else { continue }  // every number this long is below
            let hiDigits = hi.flatMap { padded($0, to: total) }  // nil: every number this long is below
            let walk = Walk(length: length, total: total, lo: loDigits, hi: hiDigits, automaton: self, empty: empty)
            if let e = try walk.state(position: 0, tightLow: true, tightHigh: hiDigits != nil, remainder: 0, builder: &builder) {
                options.append(e)
            }
        }
        if options.isEmpty { return nil }
        return options.count == 1 ? options[0] : .choice(options)
    }

    /// A magnitude bound as `V`'s digits (no leading zeros), inclusive: a lower bound rounded up to
    /// `k` fraction digits (stepped up when exclusive and exact), an upper one rounded down
    /// (stepped down). Nil for an upper bound below zero.
    func scaled(_ bound: NumberGrammar.Bound, roundingUp: Bool) -> [Int]? {
        let fraction = bound.value.fraction.compactMap { $0.wholeNumberValue }
        let integer = bound.value.integer.compactMap { $0.wholeNumberValue }
        let kept = Array(fraction.prefix(k)) + Array(repeating: 0, count: max(0, k - fraction.count))
        var digits = integer + kept
        let exact = fraction.count <= k
        if roundingUp {
            if !exact || bound.exclusive { digits = increment(digits) }
        } else if exact && bound.exclusive {
            guard let d = decrement(digits) else { return nil }
            digits = d
        }
        return stripped(digits)
    }

    func stripped(_ digits: [Int]) -> [Int] {
        let s = Array(digits.drop { $0 == 0 })
        return s.isEmpty ? [0] : s
    }

    func increment(_ digits: [Int]) -> [Int] {
        var d = digits
        var i = d.count - 1
        while i >= 0 {
            if d[i] < 9 { d[i] += 1; return d }
            d[i] = 0
            i -= 1
        }
        return [1] + d
    }

    func decrement(_ digits: [Int]) -> [Int]? {
        var d = digits
        var i = d.count - 1
        while i >= 0 {
            if d[i] > 0 { d[i] -= 1; return stripped(d) }
            d[i] = 9
            i -= 1
        }
        return nil  // was zero
    }

    /// `digits` with leading zeros to `count`, nil when it has more significant digits.
    func padded(_ digits: [Int], to count: Int) -> [Int]? {
        let s = stripped(digits)
        if s == [0] { return Array(repeating: 0, count: count) }
        guard s.count <= count else { return nil }
        return Array(repeating: 0, count: count - s.count) + s
    }

    func compare(_ a: [Int], _ b: [Int]) -> Int {
        let x = stripped(a), y = stripped(b)
        if x.count != y.count { return x.count < y.count ? -1 : 1 }
        for (u, v) in zip(x, y) where u != v { return u < v ? -1 : 1 }
        return 0
    }

    /// The shared states found empty (no number ends from them), so they are never defined.
    final class EmptyStates {
        var names: Set<String> = []
    }

    /// The walk over the digits of numbers whose integer part has `length` digits.
    struct Walk {
        let length: Int
        let total: Int
        let lo: [Int]
        let hi: [Int]?
        let automaton: MultipleAutomaton
        let empty: EmptyStates

        var p: Int { automaton.p }
        var k: Int { automaton.k }

        /// `r · 10^zeros mod p`.
        func shifted(_ r: Int, zeros: Int) -> Int {
            var x = r
            for _ in 0..<zeros { x = (x * 10) % p }
            return x
        }

        /// Whether the number may end after `position` digits (the rest are zeros).
        func mayEnd(position: Int, tightLow: Bool, remainder: Int) -> Bool {
            guard shifted(remainder, zeros: total - position) == 0 else { return false }
            return !tightLow || lo[position...].allSatisfy { $0 == 0 }
        }

        /// The language from a state; nil when empty. States off both bounds are shared rules.
        func state(
            position: Int, tightLow: Bool, tightHigh: Bool, remainder: Int, builder: inout GrammarBuilder
        ) throws -> GrammarExpression? {
            if !tightLow && !tightHigh && position > 0 {
                return try free(position: position, remainder: remainder, builder: &builder)
            }
            var options: [GrammarExpression] = []
            if position >= length, mayEnd(position: position, tightLow: tightLow, remainder: remainder) {
                options.append(.empty)
            }
            if position < total {
                let first = position == 0 && length > 1 ? 1 : 0
                let low = tightLow ? max(first, lo[position]) : first
                let high = tightHigh ? (hi?[position] ?? 9) : 9
                var steps: [GrammarExpression] = []
                if low <= high {
                    for d in low...high {
                        let next = try state(
                            position: position + 1, tightLow: tightLow && d == lo[position],
                            tightHigh: tightHigh && d == hi?[position], remainder: (remainder * 10 + d) % p, builder: &builder)
                        if let next { steps.append(.sequence([.bytes(ByteSet(UInt8(48 + d))), next])) }
                    }
                }
                if !steps.isEmpty {
                    let step = steps.count == 1 ? steps[0] : GrammarExpression.choice(steps)
                    options.append(position == length ? .sequence([.literal("."), step]) : step)
                }
            }
            if options.isEmpty { return nil }
            return options.count == 1 ? options[0] : .choice(options)
        }

        /// A state off both bounds: a rule named by the digits left and the remainder.
        func free(position: Int, remainder: Int, builder: inout GrammarBuilder) throws -> GrammarExpression? {
            let name = position <= length
                ? "mul\(p)e\(k)i\(length - position)_\(remainder)"
                : "mul\(p)e\(k)f\(position - length)_\(remainder)"
            if builder.contains(name) { return .reference(name) }
            if empty.names.contains(name) { return nil }
            var options: [GrammarExpression] = []
            if position >= length, mayEnd(position: position, tightLow: false, remainder: remainder) { options.append(.empty) }
            if position < total {
                var byTarget: [Int: ByteSet] = [:]
                for d in 0...9 { byTarget[(remainder * 10 + d) % p, default: ByteSet()].insert(UInt8(48 + d)) }
                var steps: [GrammarExpression] = []
                for (target, digits) in byTarget.sorted(by: { $0.key < $1.key }) {
                    if let next = try free(position: position + 1, remainder: target, builder: &builder) {
                        steps.append(.sequence([.bytes(digits), next]))
                    }
                }
                if !steps.isEmpty {
                    let step = steps.count == 1 ? steps[0] : GrammarExpression.choice(steps)
                    options.append(position == length ? .sequence([.literal("."), step]) : step)
                }
            }
            if options.isEmpty {
                empty.names.insert(name)
                return nil
            }
            try builder.define(name, options.count == 1 ? options[0] : .choice(options))
            return .reference(name)
        }
    }
}
