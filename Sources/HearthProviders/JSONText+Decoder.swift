extension JSONText {
    /// Decodes `text` (one JSON document) into `T` with the keys as written (no key or date
    /// strategies: `Date` decodes from its `Decodable` default, seconds since 2001, so
    /// structured replies should carry dates as strings).
    /// - Throws: ``SyntaxError`` when the text is not JSON, `DecodingError` when it does not fit `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        let value = try parse(text)
        return try T(from: ValueDecoder(value: value, codingPath: []))
    }
}

/// A `Decoder` over a parsed ``JSONText/Value``.
private struct ValueDecoder: Decoder {
    let value: JSONText.Value
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let pairs) = value else { throw mismatch([String: Int].self, value, codingPath) }
        var table: [String: JSONText.Value] = [:]
        for (key, item) in pairs { table[key] = item }
        return KeyedDecodingContainer(KeyedContainer<Key>(table: table, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else { throw mismatch([Int].self, value, codingPath) }
        return UnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleContainer(value: value, codingPath: codingPath)
    }
}

private func mismatch(_ type: Any.Type, _ value: JSONText.Value, _ path: [any CodingKey]) -> DecodingError {
    .typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(type), found a JSON \(value.typeName)"))
}

/// An index as a coding key (array positions in coding paths).
private struct IndexKey: CodingKey {
    var stringValue: String { "\(intValue ?? 0)" }
    var intValue: Int?
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// Decodes scalars from one value; shared by the three containers.
private enum Scalars {
    static func decode<T: Decodable>(_ type: T.Type, _ value: JSONText.Value, _ path: [any CodingKey]) throws -> T {
        let result: Any
        switch type {
        case is Bool.Type:
            guard case .bool(let flag) = value else { throw mismatch(type, value, path) }
            result = flag
        case is String.Type:
            guard case .string(let text) = value else { throw mismatch(type, value, path) }
            result = text
        case is Double.Type: result = try double(value, path)
        case is Float.Type: result = Float(try double(value, path))
        case is Int.Type: result = try integer(Int.self, value, path)
        case is Int8.Type: result = try integer(Int8.self, value, path)
        case is Int16.Type: result = try integer(Int16.self, value, path)
        case is Int32.Type: result = try integer(Int32.self, value, path)
        case is Int64.Type: result = try integer(Int64.self, value, path)
        case is UInt.Type: result = try integer(UInt.self, value, path)
        case is UInt8.Type: result = try integer(UInt8.self, value, path)
        case is UInt16.Type: result = try integer(UInt16.self, value, path)
        case is UInt32.Type: result = try integer(UInt32.self, value, path)
        case is UInt64.Type: result = try integer(UInt64.self, value, path)
        default:
            return try T(from: ValueDecoder(value: value, codingPath: path))
        }
        guard let typed = result as? T else { throw mismatch(type, value, path) }
        return typed
    }

    static func double(_ value: JSONText.Value, _ path: [any CodingKey]) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, value, path) }
        return number.double
    }

    /// An integer from a number written as one (`3`, `3.0`, `3e2` count when exact and in range).
    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: JSONText.Value, _ path: [any CodingKey]) throws -> I {
        guard case .number(let number) = value else { throw mismatch(type, value, path) }
        let text = number.text
        if let exact = I(text) { return exact }
        if let number = Double(text), number == number.rounded(), let exact = I(exactly: number) { return exact }
        throw DecodingError.dataCorrupted(
            .init(codingPath: path, debugDescription: "the number \(text) does not fit \(type)"))
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let table: [String: JSONText.Value]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { table.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { table[key.stringValue] != nil }

    func item(_ key: Key) throws -> JSONText.Value {
        guard let value = table[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "the reply has no key '\(key.stringValue)'"))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try item(key) == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try Scalars.decode(type, try item(key), codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try ValueDecoder(value: try item(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ValueDecoder(value: try item(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: table["super"] ?? .null, codingPath: codingPath)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: table[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONText.Value]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONText.Value], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    mutating func next() throws -> (JSONText.Value, [any CodingKey]) {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                JSONText.Value.self, .init(codingPath: codingPath, debugDescription: "the array has only \(items.count) items"))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], codingPath + [IndexKey(currentIndex)])
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, items[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, path) = try next()
        return try Scalars.decode(type, value, path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (value, path) = try next()
        return try ValueDecoder(value: value, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (value, path) = try next()
        return try ValueDecoder(value: value, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (value, path) = try next()
        return ValueDecoder(value: value, codingPath: path)
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let value: JSONText.Value
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }

    func decode<T: Decodable>(_ type: T.Type) throws -> T { try Scalars.decode(type, value, codingPath) }
}
