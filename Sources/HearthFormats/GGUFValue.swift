/// The type tag of a GGUF metadata value (`enum gguf_type` in ggml's gguf.h).
package enum GGUFValueType: UInt32, Sendable, CaseIterable, CustomStringConvertible {
    case uint8 = 0
    case int8 = 1
    case uint16 = 2
    case int16 = 3
    case uint32 = 4
    case int32 = 5
    case float32 = 6
    case bool = 7
    case string = 8
    case array = 9
    case uint64 = 10
    case int64 = 11
    case float64 = 12

    /// The fewest bytes one value of this type occupies in a file (a string is at least its
    /// 8-byte length, an array its 4-byte element type and 8-byte count). Used to cap
    /// element counts by the bytes left before anything is allocated.
    package var minimumEncodedSize: Int {
        switch self {
        case .uint8, .int8, .bool: return 1
        case .uint16, .int16: return 2
        case .uint32, .int32, .float32: return 4
        case .uint64, .int64, .float64, .string: return 8
        case .array: return 12
        }
    }

    /// The lowercase name (`uint32`, `string`, …).
    package var description: String {
        switch self {
        case .uint8: return "uint8"
        case .int8: return "int8"
        case .uint16: return "uint16"
        case .int16: return "int16"
        case .uint32: return "uint32"
        case .int32: return "int32"
        case .float32: return "float32"
        case .bool: return "bool"
        case .string: return "string"
        case .array: return "array"
        case .uint64: return "uint64"
        case .int64: return "int64"
        case .float64: return "float64"
        }
    }
}

/// One GGUF metadata value.
package enum GGUFValue: Sendable, Equatable, CustomStringConvertible {
    case uint8(UInt8)
    case int8(Int8)
    case uint16(UInt16)
    case int16(Int16)
    case uint32(UInt32)
    case int32(Int32)
    case uint64(UInt64)
    case int64(Int64)
    case float32(Float)
    case float64(Double)
    case bool(Bool)
    case string(String)
    case array(GGUFArray)

    /// The value's type tag.
    package var type: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .uint64: return .uint64
        case .int64: return .int64
        case .float32: return .float32
        case .float64: return .float64
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        }
    }

    /// The value as an `Int` if it is an integer of any width that fits, else nil.
    package var integer: Int? {
        switch self {
        case .uint8(let v): return Int(v)
        case .int8(let v): return Int(v)
        case .uint16(let v): return Int(v)
        case .int16(let v): return Int(v)
        case .uint32(let v): return Int(v)
        case .int32(let v): return Int(v)
        case .uint64(let v): return Int(exactly: v)
        case .int64(let v): return Int(exactly: v)
        default: return nil
        }
    }

    /// A short human-readable rendering; arrays longer than 8 elements are summarised.
    package var description: String {
        switch self {
        case .uint8(let v): return "\(v)"
        case .int8(let v): return "\(v)"
        case .uint16(let v): return "\(v)"
        case .int16(let v): return "\(v)"
        case .uint32(let v): return "\(v)"
        case .int32(let v): return "\(v)"
        case .uint64(let v): return "\(v)"
        case .int64(let v): return "\(v)"
        case .float32(let v): return "\(v)"
        case .float64(let v): return "\(v)"
        case .bool(let v): return "\(v)"
        case .string(let v): return "\"\(v)\""
        case .array(let a): return a.description
        }
    }
}

/// A GGUF metadata array: every element has the same type. Stored as a typed Swift array,
/// so a 262,144-entry token list is one `[String]`.
package indirect enum GGUFArray: Sendable, Equatable, CustomStringConvertible {
    case uint8([UInt8])
    case int8([Int8])
    case uint16([UInt16])
    case int16([Int16])
    case uint32([UInt32])
    case int32([Int32])
    case uint64([UInt64])
    case int64([Int64])
    case float32([Float])
    case float64([Double])
    case bool([Bool])
    case string([String])
    /// Nested arrays; each inner array has its own element type.
    case array([GGUFArray])

    /// The type of every element.
    package var elementType: GGUFValueType {
        switch self {
        case .uint8: return .uint8
        case .int8: return .int8
        case .uint16: return .uint16
        case .int16: return .int16
        case .uint32: return .uint32
        case .int32: return .int32
        case .uint64: return .uint64
        case .int64: return .int64
        case .float32: return .float32
        case .float64: return .float64
        case .bool: return .bool
        case .string: return .string
        case .array: return .array
        }
    }

    /// Number of elements.
    package var count: Int {
        switch self {
        case .uint8(let a): return a.count
        case .int8(let a): return a.count
        case .uint16(let a): return a.count
        case .int16(let a): return a.count
        case .uint32(let a): return a.count
        case .int32(let a): return a.count
        case .uint64(let a): return a.count
        case .int64(let a): return a.count
        case .float32(let a): return a.count
        case .float64(let a): return a.count
        case .bool(let a): return a.count
        case .string(let a): return a.count
        case .array(let a): return a.count
        }
    }

    /// The elements as values (boxes each element; prefer the typed case for big arrays).
    package var elements: [GGUFValue] { prefix(count) }

    /// The elements as `Int`s if the array holds integers that all fit, else nil.
    package var integers: [Int]? {
        switch self {
        case .uint8(let a): return a.map { Int($0) }
        case .int8(let a): return a.map { Int($0) }
        case .uint16(let a): return a.map { Int($0) }
        case .int16(let a): return a.map { Int($0) }
        case .uint32(let a): return a.map { Int($0) }
        case .int32(let a): return a.map { Int($0) }
        case .uint64(let a): return Self.exactInts(a)
        case .int64(let a): return Self.exactInts(a)
        default: return nil
        }
    }

    /// The first `n` elements as values.
    package func prefix(_ n: Int) -> [GGUFValue] {
        switch self {
        case .uint8(let a): return a.prefix(n).map { .uint8($0) }
        case .int8(let a): return a.prefix(n).map { .int8($0) }
        case .uint16(let a): return a.prefix(n).map { .uint16($0) }
        case .int16(let a): return a.prefix(n).map { .int16($0) }
        case .uint32(let a): return a.prefix(n).map { .uint32($0) }
        case .int32(let a): return a.prefix(n).map { .int32($0) }
        case .uint64(let a): return a.prefix(n).map { .uint64($0) }
        case .int64(let a): return a.prefix(n).map { .int64($0) }
        case .float32(let a): return a.prefix(n).map { .float32($0) }
        case .float64(let a): return a.prefix(n).map { .float64($0) }
        case .bool(let a): return a.prefix(n).map { .bool($0) }
        case .string(let a): return a.prefix(n).map { .string($0) }
        case .array(let a): return a.prefix(n).map { .array($0) }
        }
    }

    private static func exactInts<T: BinaryInteger>(_ a: [T]) -> [Int]? {
        var result: [Int] = []
        result.reserveCapacity(a.count)
        for v in a {
            guard let i = Int(exactly: v) else { return nil }
            result.append(i)
        }
        return result
    }

    /// `[type × count]` plus the first elements.
    package var description: String {
        let shown = prefix(8).map(\.description).joined(separator: ", ")
        return count > 8 ? "[\(elementType) × \(count): \(shown), …]" : "[\(shown)]"
    }
}
