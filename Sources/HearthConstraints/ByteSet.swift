/// A set of byte values (256 bits): what one grammar step may consume.
package struct ByteSet: Hashable, Sendable, CustomStringConvertible {
    var w0: UInt64 = 0, w1: UInt64 = 0, w2: UInt64 = 0, w3: UInt64 = 0

    /// The empty set.
    package init() {}

    /// The set of one byte.
    package init(_ byte: UInt8) { insert(byte) }

    /// The set of every byte in `range`.
    package init(_ range: ClosedRange<UInt8>) {
        for b in range { insert(b) }
    }

    /// The set of the given bytes.
    package init<S: Sequence>(bytes: S) where S.Element == UInt8 {
        for b in bytes { insert(b) }
    }

    /// Every byte.
    package static let all = ByteSet(0...255)

    /// Whether `byte` is in the set.
    @inline(__always)
    package func contains(_ byte: UInt8) -> Bool {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: return w0 & bit != 0
        case 1: return w1 & bit != 0
        case 2: return w2 & bit != 0
        default: return w3 & bit != 0
        }
    }

    /// Adds `byte`.
    package mutating func insert(_ byte: UInt8) {
        let bit = UInt64(1) << UInt64(byte & 63)
        switch byte >> 6 {
        case 0: w0 |= bit
        case 1: w1 |= bit
        case 2: w2 |= bit
        default: w3 |= bit
        }
    }

    /// Bytes in either set.
    package func union(_ other: ByteSet) -> ByteSet {
        var r = self
        r.w0 |= other.w0; r.w1 |= other.w1; r.w2 |= other.w2; r.w3 |= other.w3
        return r
    }

    /// Bytes in both sets.
    package func intersection(_ other: ByteSet) -> ByteSet {
        var r = self
        r.w0 &= other.w0; r.w1 &= other.w1; r.w2 &= other.w2; r.w3 &= other.w3
        return r
    }

    /// Every byte not in the set.
    package var inverted: ByteSet {
        var r = ByteSet()
        r.w0 = ~w0; r.w1 = ~w1; r.w2 = ~w2; r.w3 = ~w3
        return r
    }

    /// Whether the set has no byte.
    package var isEmpty: Bool { (w0 | w1 | w2 | w3) == 0 }

    /// How many bytes the set holds.
    package var count: Int { w0.nonzeroBitCount + w1.nonzeroBitCount + w2.nonzeroBitCount + w3.nonzeroBitCount }

    /// The bytes in ascending order.
    package var members: [UInt8] { (0...255).compactMap { contains(UInt8($0)) ? UInt8($0) : nil } }

    package var description: String {
        var parts: [String] = []
        var b = 0
        while b < 256 {
            guard contains(UInt8(b)) else { b += 1; continue }
            var e = b
            while e + 1 < 256 && contains(UInt8(e + 1)) { e += 1 }
            parts.append(e == b ? hex(b) : hex(b) + "-" + hex(e))
            b = e + 1
        }
        return "[" + parts.joined(separator: " ") + "]"
    }
}

private func hex(_ value: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return digits.count < 2 ? "0" + digits : digits
}
