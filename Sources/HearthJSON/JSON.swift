/// A JSON value (RFC 8259): the one JSON type of Hearth's providers, server, constraint front
/// ends, tool inputs and model configuration readers.
///
/// Objects keep their members in document (or construction) order, so a schema's property
/// order and a response's key order survive; a repeated key is kept as written and the last one
/// wins on lookup (as Python's `json` and most readers do). Numbers keep their text
/// (``Number``), so integers beyond 2^53 keep every digit; ``Number/double`` gives the value.
///
/// Read text with ``parse(_:)`` or ``parse(utf8:)``; write it with ``serialized``.
public enum JSON: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number as written (or as ``Number/init(_:)-(Double)`` formats a `Double`).
    case number(Number)
    case string(String)
    case array([JSON])
    /// Members in document order (a key may repeat; lookup takes the last).
    case object([Member])

    /// An object's member: its key and value.
    public typealias Member = (key: String, value: JSON)

    /// A finite `Double` as a JSON number; JSON has no NaN or infinities, so those become the
    /// strings `"NaN"`, `"Infinity"` and `"-Infinity"` (what Hearth's server has always written).
    public static func number(_ value: Double) -> JSON {
        guard let number = Number(value) else { return .string(value.isNaN ? "NaN" : value > 0 ? "Infinity" : "-Infinity") }
        return .number(number)
    }

    /// `null`, `boolean`, `number`, `string`, `array` or `object`.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// The value of `key` in an object (the last one when repeated); nil for a missing key or a
    /// value that is not an object.
    public subscript(key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members.last(where: { $0.key == key })?.value
    }

    /// The members of an object, in order; nil for other values.
    public var objectMembers: [Member]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The items of an array; nil for other values.
    public var arrayValues: [JSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// The text of a string; nil for other values.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// A boolean's value; nil for other values (`1` is not `true`).
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// A number's value as a `Double` (rounded to the nearest; infinite beyond its range); nil
    /// for other values (`"1"` is not a number).
    public var doubleValue: Double? {
        if case .number(let number) = self { return number.double }
        return nil
    }

    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let flag): hasher.combine(1); hasher.combine(flag)
        case .number(let number): hasher.combine(2); hasher.combine(number)
        case .string(let text): hasher.combine(3); hasher.combine(text)
        case .array(let items): hasher.combine(4); hasher.combine(items)
        case .object(let members):
            hasher.combine(5)
            hasher.combine(members.count)
            for member in members {
                hasher.combine(member.key)
                hasher.combine(member.value)
            }
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Number(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    /// An object with the members in the order written (keys may repeat).
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(elements.map { (key: $0.0, value: $0.1) }) }
}
