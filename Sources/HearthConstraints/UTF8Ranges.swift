/// Sets of Unicode scalars as byte-level expressions: a character class becomes a choice of
/// UTF-8 byte-sequence alternatives, each a fixed-length sequence of byte ranges (the classic
/// "utf8-ranges" split, as in RE2 and Rust's regex-syntax: split a scalar range at the encoding
/// lengths, then wherever the continuation bytes would not cover whole 64-value blocks).
package struct ScalarSet: Hashable, Sendable {
    /// Disjoint, sorted, non-adjacent ranges of scalar values, surrogates (D800–DFFF) excluded.
    package private(set) var ranges: [ClosedRange<UInt32>]

    /// The highest Unicode scalar value.
    package static let maxScalar: UInt32 = 0x10FFFF

    /// The set of the scalars in `ranges` (merged; surrogates and values above U+10FFFF dropped).
    package init(_ ranges: [ClosedRange<UInt32>] = []) {
        var clean: [ClosedRange<UInt32>] = []
        for r in ranges where r.lowerBound <= Self.maxScalar {
            let upper = min(r.upperBound, Self.maxScalar)
            // Cut out the surrogate block.
            if r.lowerBound < 0xD800 { clean.append(r.lowerBound...min(upper, 0xD7FF)) }
            if upper > 0xDFFF { clean.append(max(r.lowerBound, 0xE000)...upper) }
        }
        clean.sort { $0.lowerBound < $1.lowerBound }
        var merged: [ClosedRange<UInt32>] = []
        for r in clean {
            if let last = merged.last, r.lowerBound <= last.upperBound &+ 1 {
                merged[merged.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                merged.append(r)
            }
        }
        self.ranges = merged
    }

    /// The set of these scalars.
    package init(scalars: some Sequence<Unicode.Scalar>) {
        self.init(scalars.map { $0.value...$0.value })
    }

    /// Every scalar.
    package static let all = ScalarSet([0...maxScalar])

    /// Whether the set holds no scalar.
    package var isEmpty: Bool { ranges.isEmpty }

    /// Whether `value` is in the set.
    package func contains(_ value: UInt32) -> Bool { ranges.contains { $0.contains(value) } }

    /// Every scalar not in the set.
    package var inverted: ScalarSet {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in ranges {
            if r.lowerBound > next { result.append(next...(r.lowerBound - 1)) }
            next = r.upperBound + 1
        }
        if next <= Self.maxScalar { result.append(next...Self.maxScalar) }
        return ScalarSet(result)
    }

    /// Scalars in either set.
    package func union(_ other: ScalarSet) -> ScalarSet { ScalarSet(ranges + other.ranges) }

    /// Scalars in this set and not in `other`.
    package func subtracting(_ other: ScalarSet) -> ScalarSet { intersection(other.inverted) }

    /// Scalars in both sets.
    package func intersection(_ other: ScalarSet) -> ScalarSet {
        var result: [ClosedRange<UInt32>] = []
        var i = 0, j = 0
        while i < ranges.count && j < other.ranges.count {
            let lo = max(ranges[i].lowerBound, other.ranges[j].lowerBound)
            let hi = min(ranges[i].upperBound, other.ranges[j].upperBound)
            if lo <= hi { result.append(lo...hi) }
            if ranges[i].upperBound < other.ranges[j].upperBound { i += 1 } else { j += 1 }
        }
        return ScalarSet(result)
    }

    /// The UTF-8 encodings of the set's scalars, as a choice of byte-range sequences
    /// (one-byte scalars merged into a single alternative). Empty set: a choice of nothing.
    package var expression: GrammarExpression {
        var ascii = ByteSet()
        var alternatives: [GrammarExpression] = []
        for r in ranges {
            for seq in UTF8Split.sequences(r) {
                if seq.count == 1 {
                    ascii = ascii.union(ByteSet(seq[0]))
                } else {
                    alternatives.append(.sequence(seq.map { .bytes(ByteSet($0)) }))
                }
            }
        }
        if !ascii.isEmpty { alternatives.insert(.bytes(ascii), at: 0) }
        return alternatives.count == 1 ? alternatives[0] : .choice(alternatives)
    }
}

extension GrammarExpression {
    /// Any one Unicode scalar, UTF-8 encoded (valid UTF-8 only: no surrogates, no overlongs).
    package static let anyCharacter = ScalarSet.all.expression

    /// Any one scalar of `set`, UTF-8 encoded.
    package static func characters(_ set: ScalarSet) -> GrammarExpression { set.expression }
}

/// The split of a scalar range into UTF-8 byte-range sequences.
enum UTF8Split {
    /// The first scalar of each encoding length beyond one byte.
    private static let lengthStarts: [UInt32] = [0x80, 0x800, 0x10000]

    static func sequences(_ range: ClosedRange<UInt32>) -> [[ClosedRange<UInt8>]] {
        var result: [[ClosedRange<UInt8>]] = []
        var stack: [ClosedRange<UInt32>] = [range]
        while let r = stack.popLast() {
            let lo = r.lowerBound
            let hi = r.upperBound
            // Split where the encoding length changes.
            if let cut = lengthStarts.first(where: { lo < $0 && hi >= $0 }) {
                stack.append(cut...hi)
                stack.append(lo...(cut - 1))
                continue
            }
            if hi <= 0x7F {
                result.append([UInt8(lo)...UInt8(hi)])
                continue
            }
            // Split so that every continuation byte below the first varying one covers its
            // whole 0x80–0xBF range.
            var split = false
            for i in 1..<4 {
                let mask: UInt32 = (1 << (6 * UInt32(i))) - 1
                if lo & ~mask != hi & ~mask {
                    if lo & mask != 0 {
                        stack.append(((lo | mask) + 1)...hi)
                        stack.append(lo...(lo | mask))
                        split = true
                        break
                    }
                    if hi & mask != mask {
                        stack.append((hi & ~mask)...hi)
                        stack.append(lo...((hi & ~mask) - 1))
                        split = true
                        break
                    }
                }
            }
            if split { continue }
            let a = encode(lo), b = encode(hi)
            result.append(zip(a, b).map { $0...$1 })
        }
        // The stack pops the low half first, so `result` is already in ascending order.
        return result
    }

    static func encode(_ v: UInt32) -> [UInt8] {
        switch v {
        case 0..<0x80: return [UInt8(v)]
        case 0x80..<0x800: return [UInt8(0xC0 | (v >> 6)), UInt8(0x80 | (v & 0x3F))]
        case 0x800..<0x10000:
            return [UInt8(0xE0 | (v >> 12)), UInt8(0x80 | ((v >> 6) & 0x3F)), UInt8(0x80 | (v & 0x3F))]
        default:
            return [
                UInt8(0xF0 | (v >> 18)), UInt8(0x80 | ((v >> 12) & 0x3F)),
                UInt8(0x80 | ((v >> 6) & 0x3F)), UInt8(0x80 | (v & 0x3F)),
            ]
        }
    }
}
