/// `Codable` for values inside other `Codable` types (a model configuration's nested object,
/// a key hashed through `JSONEncoder`). Encoders and decoders keep no member order, so text
/// that must keep it goes through ``JSON/parse(_:)`` and ``JSON/serialized`` instead.
extension JSON: Codable {
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [JSON] = []
            while !array.isAtEnd { items.append(try array.decode(JSON.self)) }
            self = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: MemberKey.self) {
            var members: [(key: String, value: JSON)] = []
            for key in object.allKeys { members.append((key.stringValue, try object.decode(JSON.self, forKey: key))) }
            self = .object(members)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Int64.self) {
            self = .number(Number(value))
        } else if let value = try? single.decode(UInt64.self) {
            self = .number(Number(value))
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    /// Whole numbers that fit in 64 bits as integers, others as `Double`s.
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let number):
            var single = encoder.singleValueContainer()
            if let value = Int64(number.text) {
                try single.encode(value)
            } else if let value = UInt64(number.text) {
                try single.encode(value)
            } else {
                try single.encode(number.double)
            }
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .array(let items):
            var array = encoder.unkeyedContainer()
            for item in items { try array.encode(item) }
        case .object(let members):
            var object = encoder.container(keyedBy: MemberKey.self)
            for (key, value) in members { try object.encode(value, forKey: MemberKey(key)) }
        }
    }
}

/// An object member's name as a coding key.
private struct MemberKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}
