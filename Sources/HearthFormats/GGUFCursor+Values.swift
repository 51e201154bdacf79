extension GGUFCursor {
    /// Deepest array nesting accepted. Files in the wild use one level; the limit keeps a
    /// hostile file from recursing the parser off the stack.
    static let maxArrayDepth = 8

    /// Reads a value type tag.
    mutating func valueType(_ what: @autoclosure () -> String, key: String) throws -> GGUFValueType {
        let raw = try read(UInt32.self, what(), key: key)
        guard let type = GGUFValueType(rawValue: raw) else {
            throw FormatError(
                .invalidValue, "\(what()) is \(raw), not a GGUF value type (0…12)", path: path, key: key,
                remedy: "The file is corrupt or was written by a newer GGUF version")
        }
        return type
    }

    /// Reads one value of `type` for metadata key `key`.
    mutating func value(of type: GGUFValueType, key: String, depth: Int = 0) throws -> GGUFValue {
        let what = "the \(type) value of '\(key)'"
        switch type {
        case .uint8: return .uint8(try read(UInt8.self, what, key: key))
        case .int8: return .int8(try read(Int8.self, what, key: key))
        case .uint16: return .uint16(try read(UInt16.self, what, key: key))
        case .int16: return .int16(try read(Int16.self, what, key: key))
        case .uint32: return .uint32(try read(UInt32.self, what, key: key))
        case .int32: return .int32(try read(Int32.self, what, key: key))
        case .uint64: return .uint64(try read(UInt64.self, what, key: key))
        case .int64: return .int64(try read(Int64.self, what, key: key))
        case .float32: return .float32(Float(bitPattern: try read(UInt32.self, what, key: key)))
        case .float64: return .float64(Double(bitPattern: try read(UInt64.self, what, key: key)))
        case .bool: return .bool(try read(UInt8.self, what, key: key) != 0)
        case .string: return .string(try string(what, key: key))
        case .array: return .array(try array(key: key, depth: depth + 1))
        }
    }

    /// Reads an array: element type, u64 count, elements. The count is capped by the bytes
    /// left (count × the element type's minimum size must fit) before any allocation.
    mutating func array(key: String, depth: Int) throws -> GGUFArray {
        guard depth <= Self.maxArrayDepth else {
            throw FormatError(
                .invalidValue, "arrays are nested more than \(Self.maxArrayDepth) levels deep", path: path, key: key,
                remedy: "The file is corrupt or hostile")
        }
        let type = try valueType("the element type of array '\(key)'", key: key)
        let declared = try read(UInt64.self, "the element count of array '\(key)'", key: key)
        let minimum = type.minimumEncodedSize
        guard declared <= UInt64(remaining / minimum) else {
            throw FormatError(
                .invalidValue,
                "array of \(declared) \(type) elements cannot fit in the \(remaining) bytes left in the file (at byte \(offset))",
                path: path, key: key, remedy: "The file is truncated or corrupt")
        }
        let count = Int(declared)
        switch type {
        case .uint8: return .uint8(integers(UInt8.self, count: count))
        case .int8: return .int8(integers(Int8.self, count: count))
        case .uint16: return .uint16(integers(UInt16.self, count: count))
        case .int16: return .int16(integers(Int16.self, count: count))
        case .uint32: return .uint32(integers(UInt32.self, count: count))
        case .int32: return .int32(integers(Int32.self, count: count))
        case .uint64: return .uint64(integers(UInt64.self, count: count))
        case .int64: return .int64(integers(Int64.self, count: count))
        case .float32: return .float32(integers(UInt32.self, count: count).map(Float.init(bitPattern:)))
        case .float64: return .float64(integers(UInt64.self, count: count).map(Double.init(bitPattern:)))
        case .bool: return .bool(integers(UInt8.self, count: count).map { $0 != 0 })
        case .string:
            var strings: [String] = []
            strings.reserveCapacity(count)
            for i in 0..<count { strings.append(try string("element \(i) of array '\(key)'", key: key)) }
            return .string(strings)
        case .array:
            var arrays: [GGUFArray] = []
            arrays.reserveCapacity(count)
            for _ in 0..<count { arrays.append(try array(key: key, depth: depth + 1)) }
            return .array(arrays)
        }
    }
}
