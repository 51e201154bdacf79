/// A GGUF file's key–value metadata, in file order, with typed accessors.
///
/// Every accessor returns nil when the key is absent and throws `FormatError(.invalidValue)`
/// naming the key when it is present with a type that does not convert, so callers write
/// `try meta.int("llama.context_length") ?? 2048` or
/// `try meta.require("llama.block_count", meta.int)`.
package struct GGUFMetadata: Sendable, Equatable {
    /// Keys in the order the file lists them.
    package let keys: [String]
    /// Values by key.
    package let values: [String: GGUFValue]
    /// The file, for error messages.
    package let path: String?

    /// Creates metadata from ordered entries; keys must be unique.
    package init(entries: [(key: String, value: GGUFValue)], path: String? = nil) {
        keys = entries.map(\.key)
        values = Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        self.path = path
    }

    /// Number of entries.
    package var count: Int { keys.count }

    /// The raw value of `key`, or nil.
    package subscript(key: String) -> GGUFValue? { values[key] }

    private func mismatch(_ key: String, _ value: GGUFValue, expected: String) -> FormatError {
        FormatError(
            .invalidValue, "metadata '\(key)' is a \(describeType(value)), expected \(expected)", path: path, key: key,
            remedy: "The file's metadata does not follow the GGUF conventions for this key")
    }

    private func describeType(_ value: GGUFValue) -> String {
        if case .array(let a) = value { return a.elementType == .array ? "nested array" : "\(a.elementType) array" }
        return value.type.description
    }

    /// The value of `key` as `convert` reads it: nil when the key is absent, a mismatch naming
    /// `expected` when `convert` refuses the value.
    private func value<T>(_ key: String, expected: String, _ convert: (GGUFValue) -> T?) throws -> T? {
        guard let value = values[key] else { return nil }
        guard let converted = convert(value) else { throw mismatch(key, value, expected: expected) }
        return converted
    }

    /// A string value.
    package func string(_ key: String) throws -> String? {
        try value(key, expected: "a string") { if case .string(let s) = $0 { s } else { nil } }
    }

    /// An integer value of any GGUF integer type that fits in `Int`.
    package func int(_ key: String) throws -> Int? {
        try value(key, expected: "an integer that fits in Int64") { $0.integer }
    }

    /// A float value: float32, float64 (rounded to Float) or an integer (converted).
    package func float(_ key: String) throws -> Float? {
        try value(key, expected: "a number") { value in
            switch value {
            case .float32(let f): f
            case .float64(let d): Float(d)
            default: value.integer.map { Float($0) }
            }
        }
    }

    /// A bool value.
    package func bool(_ key: String) throws -> Bool? {
        try value(key, expected: "a bool") { if case .bool(let b) = $0 { b } else { nil } }
    }

    /// An array value of any element type.
    package func array(_ key: String) throws -> GGUFArray? {
        try value(key, expected: "an array") { if case .array(let a) = $0 { a } else { nil } }
    }

    /// A string array (`tokenizer.ggml.tokens`, `tokenizer.ggml.merges`).
    package func strings(_ key: String) throws -> [String]? {
        try value(key, expected: "a string array") { if case .array(.string(let a)) = $0 { a } else { nil } }
    }

    /// A float array (`tokenizer.ggml.scores`): float32, or float64 rounded to Float.
    package func floats(_ key: String) throws -> [Float]? {
        try value(key, expected: "a float array") { value in
            switch value {
            case .array(.float32(let a)): a
            case .array(.float64(let a)): a.map { Float($0) }
            default: nil
            }
        }
    }

    /// An integer array whose values all fit in `Int32` (`tokenizer.ggml.token_type`).
    package func int32s(_ key: String) throws -> [Int32]? {
        if case .array(.int32(let a))? = values[key] { return a }
        guard let ints = try ints(key) else { return nil }
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
    package func ints(_ key: String) throws -> [Int]? {
        try value(key, expected: "an integer array") { if case .array(let a) = $0 { a.integers } else { nil } }
    }

    /// Unwraps an accessor's result, throwing `FormatError(.missingKey)` naming `key` when it
    /// is absent: `try meta.require("llama.block_count", meta.int)`.
    package func require<T>(_ key: String, _ accessor: (String) throws -> T?) throws -> T {
        guard let value = try accessor(key) else {
            throw FormatError(
                .missingKey, "metadata key '\(key)' is missing", path: path, key: key,
                remedy: "The file lacks metadata this model needs; convert it again with a current llama.cpp")
        }
        return value
    }

    package static func == (a: GGUFMetadata, b: GGUFMetadata) -> Bool { a.keys == b.keys && a.values == b.values }
}
