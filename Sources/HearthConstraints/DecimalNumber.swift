/// An exact decimal: sign, integer digits (no leading zeros; "0" for zero) and fraction digits
/// (no trailing zeros). Made from a JSON number literal, exponents applied.
struct DecimalNumber: Hashable, Sendable {
    var negative: Bool
    var integer: String
    var fraction: String

    /// Literals whose digits (after the exponent is applied) exceed this are not handled.
    static let maxDigits = 60

    init(negative: Bool, integer: String, fraction: String) {
        var intDigits = Substring(integer)
        while intDigits.count > 1, intDigits.first == "0" { intDigits = intDigits.dropFirst() }
        var frac = Substring(fraction)
        while frac.last == "0" { frac = frac.dropLast() }
        self.integer = intDigits.isEmpty ? "0" : String(intDigits)
        self.fraction = String(frac)
        self.negative = negative && !(self.integer == "0" && self.fraction.isEmpty)
    }

    init?(_ text: String) {
        var s = Substring(text)
        let negative = s.first == "-"
        if negative { s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let x = Int(s[s.index(after: e)...]), abs(x) <= Self.maxDigits else { return nil }
            exponent = x
            s = s[..<e]
        }
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }) else { return nil }
        var digits = String(parts[0]) + (parts.count == 2 ? String(parts[1]) : "")
        var point = parts[0].count + exponent  // digits before the point
        if point < 0 { digits = String(repeating: "0", count: -point) + digits; point = 0 }
        if point > digits.count { digits += String(repeating: "0", count: point - digits.count) }
        guard digits.count <= Self.maxDigits + 40 else { return nil }
        self.init(negative: negative, integer: String(digits.prefix(point)), fraction: String(digits.dropFirst(point)))
    }

    var isInteger: Bool { fraction.isEmpty }
    var isZero: Bool { integer == "0" && fraction.isEmpty }

    /// The integer part as an Int, when it fits in 18 digits.
    var integerValue: Int? { integer.count <= 18 ? Int(integer) : nil }

    var negated: DecimalNumber { DecimalNumber(negative: !negative, integer: integer, fraction: fraction) }

    /// Numeric order.
    static func < (a: DecimalNumber, b: DecimalNumber) -> Bool {
        if a.negative != b.negative { return a.negative }
        let magnitudeLess = a.integer.count != b.integer.count
            ? a.integer.count < b.integer.count
            : (a.integer != b.integer ? a.integer < b.integer : a.fraction < b.fraction && a.fraction != b.fraction)
        let magnitudeEqual = a.integer == b.integer && a.fraction == b.fraction
        if magnitudeEqual { return false }
        return a.negative ? !magnitudeLess : magnitudeLess
    }

    var text: String { (negative ? "-" : "") + integer + (fraction.isEmpty ? "" : "." + fraction) }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
