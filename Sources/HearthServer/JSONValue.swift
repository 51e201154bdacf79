import Foundation
import HearthProviders

/// A JSON value: requests are decoded into it so every field can be checked by name and type
/// (JSONDecoder is strict: `1` is not a Bool, `"1"` not a number), and responses are built
/// from it so their shape (including explicit `null`s) matches the API they copy.
public enum JSONValue: Sendable, Equatable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)): return a.map(\.0) == b.map(\.0) && a.map(\.1) == b.map(\.1)
        default: return false
        }
    }

    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var items: [JSONValue] = []
            while !array.isAtEnd { items.append(try array.decode(JSONValue.self)) }
            self = .array(items)
            return
        }
        if let object = try? decoder.container(keyedBy: AnyKey.self) {
            var pairs: [(String, JSONValue)] = []
            for key in object.allKeys { pairs.append((key.stringValue, try object.decode(JSONValue.self, forKey: key))) }
            self = .object(pairs)
            return
        }
        let single = try decoder.singleValueContainer()
        if single.decodeNil() {
            self = .null
        } else if let value = try? single.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? single.decode(Double.self) {
            self = .number(value)
        } else {
            self = .string(try single.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .number(let value):
            var single = encoder.singleValueContainer()
            if value == value.rounded(), abs(value) < 9e15 { try single.encode(Int64(value)) } else { try single.encode(value) }
        case .string(let value):
            var single = encoder.singleValueContainer()
            try single.encode(value)
        case .array(let items):
            var array = encoder.unkeyedContainer()
            for item in items { try array.encode(item) }
        case .object(let pairs):
            var object = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in pairs { try object.encode(value, forKey: AnyKey(key)) }
        }
    }

    /// The value of `key` in an object (nil for a missing key or a non-object).
    public subscript(key: String) -> JSONValue? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.last { $0.0 == key }?.1
    }

    /// The value encoded as compact JSON, keys in the order they were built (by the provider
    /// layer's ordered JSON writer, `JSONText.Value.serialized`: `JSONEncoder`'s keyed
    /// containers keep no order): integral numbers below 9e15 as integers, non-finite ones as
    /// the strings `Infinity`, `-Infinity` and `NaN`.
    public func serialized() -> Data { Data(ordered.serialized.utf8) }

    /// The value as the provider layer's ordered JSON.
    var ordered: JSONText.Value {
        switch self {
        case .null: return .null
        case .bool(let flag): return .bool(flag)
        case .number(let value):
            if !value.isFinite { return .string(value.isNaN ? "NaN" : value > 0 ? "Infinity" : "-Infinity") }
            return .number(value == value.rounded() && abs(value) < 9e15 ? String(Int64(value)) : "\(value)")
        case .string(let text): return .string(text)
        case .array(let items): return .array(items.map(\.ordered))
        case .object(let pairs): return .object(pairs.map { ($0.0, $0.1.ordered) })
        }
    }

    /// The JSON type's name, for error messages.
    var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { return nil }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) { self = .object(elements) }
}

extension JSONValue {
    /// An integer as a JSON number.
    static func int(_ value: Int) -> JSONValue { .number(Double(value)) }
    /// An optional string, `null` when nil.
    static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
}

extension JSONValue {
    /// An ordered JSON value as the server's JSON value (key order kept; numbers as doubles).
    init(_ value: JSONText.Value) {
        switch value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .number(let text): self = .number(Double(text) ?? 0)
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let pairs): self = .object(pairs.map { ($0.0, JSONValue($0.1)) })
        }
    }
}
