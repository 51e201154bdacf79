/// A GGUF file's key–value metadata, in file order, with typed accessors.
///
/// Every accessor returns nil when the key is absent and throws `FormatError(.invalidValue)`
/// naming the key when it is present with a type that does not convert, so callers write
/// `try meta.int("llama.context_length") ?? 2048` or
/// `try meta.require("llama.block_count", meta.int)`.
public struct GGUFMetadata: Sendable, Equatable {
    /// Keys in the order the file lists them.
    public let keys: [String]
    /// Values by key.
    public let values: [String: GGUFValue]
    /// The file, for error messages.
    public let path: String?

    /// Creates metadata from ordered entries; keys must be unique.
    public init(entries: [(key: String, value: GGUFValue)], path: String? = nil) {
        keys = entries.map(\.key)
        values = Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        self.path = path
    }

    /// Number of entries.
    public var count: Int { keys.count }

    /// The raw value of `key`, or nil.
    public subscript(key: String) -> GGUFValue? { values[key] }

    private func mismatch(_ key: String, _ value: GGUFValue, expected: String) -> FormatError {
        FormatError(
            .invalidValue, "metadata '\(key)' is a \(describeType(value)), expected \(expected)", path: path, key: key,
            remedy: "The file's metadata does not follow the GGUF conventions for this key")
    }

    private func describeType(_ value: GGUFValue) -> String {
        if case .array(let a) = value { return a.elementType == .array ? "nested array" : "\(a.elementType) array" }
        return value.type.description
    }

    /// A string value.
    public func string(_ key: String) throws -> String? {
        guard let value = values[key] else { return nil }
        guard case .string(let s) = value else { throw mismatch(key, value, expected: "a string") }
        return s
    }

    /// An integer value of any GGUF integer type that fits in `Int`.
    public func int(_ key: String) throws -> Int? {
        guard let value = values[key] else { return nil }
        guard let i = value.integer else { throw mismatch(key, value, expected: "an integer that fits in Int64") }
        return i
    }

    /// A float value: float32, float64 (rounded to Float) or an integer (converted).
    public func float(_ key: String) throws -> Float? {
        guard let value = values[key] else { return nil }
        switch value {
        case .float32(let f): return f
        case .float64(let d): return Float(d)
        default:
            guard let i = value.integer else { throw mismatch(key, value, expected: "a number") }
            return Float(i)
        }
    }

    /// A bool value.
    public func bool(_ key: String) throws -> Bool? {
        guard let value = values[key] else { return nil }
        guard case .bool(let b) = value else { throw mismatch(key, value, expected: "a bool") }
        return b
    }

    /// An array value of any element type.
    public func array(_ key: String) throws -> GGUFArray? {
        guard let value = values[key] else { return nil }
        guard case .array(let a) = value else { throw mismatch(key, value, expected: "an array") }
        return a
    }

    /// A string array (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`).
    public func strings(_ key: String) throws -> [String]? {
        guard let value = values[key] else { return nil }
        guard case .array(.string(let a)) = value else { throw mismatch(key, value, expected: "a string array") }
        return a
    }

    /// A float array (`tokenizer.ggml.scores`): float32, or float64 rounded to Float.
    public func floats(_ key: String) throws -> [Float]? {
        guard let value = values[key] else { return nil }
        switch value {
        case .array(.float32(let a)): return a
        case .array(.float64(let a)): return a.map { Float($0) }
        default: throw mismatch(key, value, expected: "a float array")
        }
    }

    /// An integer array whose values all fit in `Int32` (`tokenizer.ggml.token_type`).
    public func int32s(_ key: String) throws -> [Int32]? {
        guard let value = values[key] else { return nil }
        if case .array(.int32(let a)) = value { return a }
        guard case .array(let a) = value, let ints = a.integers else {
            throw mismatch(key, value, expected: "an integer array")
        }
        var result: [Int32] = []
        result.reserveCapacity(ints.count)
        for i in ints {
            guard let v = Int32(exactly: i) else {
                throw FormatError(.invalidValue, "metadata '\(key)' holds \(i), which does not fit in Int32", path: path, key: key)
            }
            result.append(v)
        }
        return result
    }

    /// An integer array of any integer element type whose values fit in `Int` (for example
    /// per-layer head counts).
    public func ints(_ key: String) throws -> [Int]? {
        guard let value = values[key] else { return nil }
        guard case .array(let a) = value, let ints = a.integers else {
            throw mismatch(key, value, expected: "an integer array")
        }
        return ints
    }

    /// Unwraps an accessor's result, throwing `FormatError(.missingKey)` naming `key` when it
    /// is absent: `try meta.require("llama.block_count", meta.int)`.
    public func require<T>(_ key: String, _ accessor: (String) throws -> T?) throws -> T {
        guard let value = try accessor(key) else {
            throw FormatError(
                .missingKey, "metadata key '\(key)' is missing", path: path, key: key,
                remedy: "The file lacks metadata this model needs; convert it again with a current llama.cpp")
        }
        return value
    }

    public static func == (a: GGUFMetadata, b: GGUFMetadata) -> Bool { a.keys == b.keys && a.values == b.values }
}
