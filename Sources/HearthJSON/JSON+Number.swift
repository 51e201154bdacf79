extension JSON {
    /// A JSON number kept as its text (`-1.5e3`, `12345678901234567890`), so no digit is lost
    /// between reading and writing; ``double`` and ``int`` give its value.
    ///
    /// Two numbers are equal when their values are (`1`, `1.0` and `10e-1` are one number), by
    /// exact decimal comparison, so integers beyond 2^53 that round to one `Double` stay apart.
    public struct Number: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral {
        /// The number as JSON text.
        public let text: String

        /// Text known to be a JSON number (the parser's).
        init(unchecked text: String) { self.text = text }

        /// The number `text` spells, or nil when it is not a JSON number (RFC 8259 grammar:
        /// no `+`, no leading zeros, no bare `.`).
        public init?(text: String) {
            guard Self.isNumber(Array(text.utf8)) else { return nil }
            self.text = text
        }

        /// A number literal in source (`.number("12345678901234567890")`); text that is not a
        /// JSON number is taken as `0`.
        public init(stringLiteral value: String) { self = Number(text: value) ?? Number(unchecked: "0") }

        /// A finite `Double`: whole values below 9e15 as integers (`3`, not `3.0`), others in
        /// Swift's shortest round-tripping form (`0.1`, `1e+16`). Nil for NaN and infinities.
        public init?(_ value: Double) {
            guard value.isFinite else { return nil }
            if value == value.rounded(), abs(value) < 9e15 {
                text = String(Int64(value))
            } else {
                text = "\(value)"
            }
        }

        /// An integer, every digit kept.
        public init<I: BinaryInteger>(_ value: I) { text = String(value) }

        /// The value as a `Double`: the nearest one, infinite beyond its range.
        public var double: Double { Double(text) ?? 0 }

        /// The value as an `Int` when it is a whole number in `Int`'s range (`4`, `4.0`, `4e0`); nil otherwise.
        public var int: Int? {
            let d = decimal
            if d.digits.isEmpty { return 0 }
            guard d.exponent >= 0, d.digits.count + d.exponent <= 19 else { return nil }
            var magnitude: UInt64 = 0
            for digit in d.digits { magnitude = magnitude * 10 + UInt64(digit - 0x30) }
            for _ in 0..<d.exponent { magnitude *= 10 }
            if d.negative { return magnitude <= UInt64(Int.max) + 1 ? Int(truncatingIfNeeded: 0 &- magnitude) : nil }
            return magnitude <= UInt64(Int.max) ? Int(magnitude) : nil
        }

        public var description: String { text }

        public static func == (lhs: Number, rhs: Number) -> Bool {
            lhs.text == rhs.text || lhs.decimal == rhs.decimal
        }

        public func hash(into hasher: inout Hasher) { hasher.combine(decimal) }

        /// The value as sign, significant digits (no leading or trailing zeros; empty for zero)
        /// and a power of ten: value = ±digits × 10^exponent. Exponents beyond ±10^15 saturate.
        var decimal: Decimal {
            var negative = false
            var digits: [UInt8] = []
            var exponent = 0
            var fractionDigits = 0
            var inFraction = false
            var index = text.utf8.startIndex
            let utf8 = text.utf8
            while index != utf8.endIndex {
                let byte = utf8[index]
                switch byte {
                case UInt8(ascii: "-"): negative = true
                case UInt8(ascii: "."): inFraction = true
                case UInt8(ascii: "0")...UInt8(ascii: "9"):
                    if !(digits.isEmpty && byte == UInt8(ascii: "0")) { digits.append(byte) }
                    if inFraction { fractionDigits += 1 }
                case UInt8(ascii: "e"), UInt8(ascii: "E"):
                    var rest = utf8[utf8.index(after: index)...]
                    var sign = 1
                    if let first = rest.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
                        sign = first == UInt8(ascii: "-") ? -1 : 1
                        rest = rest.dropFirst()
                    }
                    var value = 0
                    for digit in rest where value < 1_000_000_000_000_000 { value = value * 10 + Int(digit - 0x30) }
                    exponent = sign * value
                    index = utf8.endIndex
                    continue
                default: break
                }
                index = utf8.index(after: index)
            }
            // Leading zeros of a fraction (0.05) were skipped but still count as fraction digits.
            exponent -= fractionDigits
            while let last = digits.last, last == UInt8(ascii: "0") {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty { return Decimal(negative: false, digits: [], exponent: 0) }
            return Decimal(negative: negative, digits: digits, exponent: exponent)
        }

        struct Decimal: Hashable {
            var negative: Bool
            var digits: [UInt8]
            var exponent: Int
        }

        /// Whether `bytes` are exactly one JSON number.
        static func isNumber(_ bytes: [UInt8]) -> Bool {
            var i = 0
            func digits() -> Int {
                let start = i
                while i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 { i += 1 }
                return i - start
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, bytes[i] >= 0x30, bytes[i] <= 0x39 else { return false }
            if bytes[i] == UInt8(ascii: "0") { i += 1 } else { _ = digits() }
            if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard digits() > 0 else { return false }
            }
            if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
                i += 1
                if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
                guard digits() > 0 else { return false }
            }
            return i == bytes.count
        }
    }
}
