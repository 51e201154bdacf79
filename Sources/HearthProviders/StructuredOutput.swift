/// A `Codable` type with a JSON Schema, so a model can be asked for a value of it:
/// `session.respond(to:generating:)`, ``ChatSession/streamResponse(to:generating:includeSchemaInPrompt:options:)``,
/// and a ``FunctionTool`` whose `Arguments` conform gets its `parameters` from the schema.
///
/// The `@Structured` macro of the `HearthMacros` library derives the conformance from the
/// declaration (the schema matches what the type's synthesized `Codable` reads, so a value
/// generated under it always decodes):
///
/// ```swift
/// import HearthMacros
///
/// @Structured struct City: Codable {
///     @SchemaGuide("The city's name") var name: String
///     var country: String
///     @SchemaGuide(range: 0...40_000_000) var population: Int
///     var landmarks: [String]?
/// }
/// let city = try await session.respond(to: "The largest city in Japan.", generating: City.self)
/// ```
///
/// A type can also conform by hand: give ``jsonSchema`` (a JSON Schema object that its
/// `Decodable` accepts every value of) and, optionally, a ``Partial`` type for streaming.
public protocol StructuredOutput: Codable, Sendable {
    /// What ``ChatSession/streamResponse(to:generating:includeSchemaInPrompt:options:)`` decodes
    /// from the JSON generated so far: `@Structured` makes it a struct with every property
    /// optional (nested structured values as their own `Partial`), filled in as the model writes
    /// them. By default the type itself, which decodes only once the value is complete.
    associatedtype Partial: Decodable & Sendable = Self

    /// The type's JSON Schema (an object schema for a struct; the shape its `Codable` gives an
    /// enum). Properties come in the order a model writes them.
    static var jsonSchema: JSONText.Value { get }
}

extension StructuredOutput {
    /// ``jsonSchema`` as compact JSON text (what requests and tool definitions carry).
    public static var jsonSchemaText: String { jsonSchema.serialized }
}

/// The schemas `@Structured` builds, one function per shape (public for the code the macro
/// writes into the app's module; an app rarely calls them).
public enum StructuredSchema {
    /// `{"type": "string"}`.
    public static var string: JSONText.Value { ["type": "string"] }
    /// `{"type": "boolean"}`.
    public static var boolean: JSONText.Value { ["type": "boolean"] }
    /// `{"type": "number"}` (`Double`, `Float`).
    public static var number: JSONText.Value { ["type": "number"] }
    /// `{"type": "integer"}` (`Int`, `Int64`).
    public static var integer: JSONText.Value { ["type": "integer"] }

    /// An integer within `minimum...maximum` (the fixed-width types narrower than 64 bits, and
    /// unsigned ones from 0).
    public static func integer(minimum: Int64?, maximum: Int64? = nil) -> JSONText.Value {
        var members: [JSONText.Value.Member] = [("type", "integer")]
        if let minimum { members.append(("minimum", .number(JSON.Number(minimum)))) }
        if let maximum { members.append(("maximum", .number(JSON.Number(maximum)))) }
        return .object(members)
    }

    /// A string of a given `format` (`uri` for `URL`, `uuid` for `UUID`).
    public static func string(format: String) -> JSONText.Value { ["type": "string", "format": .string(format)] }

    /// An array of `items`.
    public static func array(_ items: JSONText.Value) -> JSONText.Value { ["type": "array", "items": items] }

    /// An object with string keys and `values` (a `[String: Value]` dictionary).
    public static func dictionary(_ values: JSONText.Value) -> JSONText.Value {
        ["type": "object", "additionalProperties": values]
    }

    /// An object with `properties` in their order, `required` ones always written, and no
    /// other members (`additionalProperties: false`).
    public static func object(
        _ properties: [(String, JSONText.Value)], required: [String], description: String? = nil
    ) -> JSONText.Value {
        var members: [JSONText.Value.Member] = [("type", "object")]
        if let description { members.append(("description", .string(description))) }
        members.append(("properties", .object(properties.map { (key: $0.0, value: $0.1) })))
        if !required.isEmpty { members.append(("required", .array(required.map { .string($0) }))) }
        members.append(("additionalProperties", false))
        return .object(members)
    }

    /// One of `values` as strings (an enum with `String` raw values).
    public static func stringEnum(_ values: [String], description: String? = nil) -> JSONText.Value {
        described(["type": "string", "enum": .array(values.map { .string($0) })], description)
    }

    /// One of `values` as integers (an enum with `Int` raw values).
    public static func integerEnum(_ values: [Int], description: String? = nil) -> JSONText.Value {
        described(["type": "integer", "enum": .array(values.map { .number(JSON.Number($0)) })], description)
    }

    /// Any one of `branches` (an enum with associated values: one object per case).
    public static func anyOf(_ branches: [JSONText.Value], description: String? = nil) -> JSONText.Value {
        described(["anyOf": .array(branches)], description)
    }

    /// The object Swift's synthesized `Codable` writes for an enum case: `{"case": {payload}}`,
    /// the payload an object of the case's values (labels as keys, `_0`, `_1`… for unlabeled
    /// ones; `{}` for a case without values).
    public static func enumCase(_ name: String, _ payload: [(String, JSONText.Value)], required: [String]) -> JSONText.Value {
        object([(name, object(payload, required: required))], required: [name])
    }

    /// `schema` with a `description` member (unchanged when `description` is nil).
    public static func described(_ schema: JSONText.Value, _ description: String?) -> JSONText.Value {
        guard let description else { return schema }
        return PropertyGuide(description).apply(to: schema)
    }
}

/// What `@SchemaGuide` adds to a property's schema: a description the model may be shown,
/// numeric bounds, a string pattern and lengths, array counts, or the allowed strings.
/// `@SchemaGuide(...)` takes the same arguments as this initializer; the generated schema
/// calls it with them.
public struct PropertyGuide: Sendable {
    /// The members to set on the schema, in order.
    public let members: [JSONText.Value.Member]

    /// A guide.
    /// - Parameters:
    ///   - description: what the property holds (`description`).
    ///   - range: the allowed numbers (`minimum`, `maximum`).
    ///   - minimum: the least allowed number.
    ///   - maximum: the greatest allowed number.
    ///   - pattern: a regular expression strings must match (`pattern`; anchor it with `^…$`
    ///     for the whole string).
    ///   - minLength: the fewest characters of a string.
    ///   - maxLength: the most characters of a string.
    ///   - count: the allowed numbers of items of an array (`minItems`, `maxItems`).
    ///   - minItems: the fewest items of an array.
    ///   - maxItems: the most items of an array.
    ///   - allowed: the only strings allowed (`enum`).
    public init(
        _ description: String? = nil, range: ClosedRange<Double>? = nil, minimum: Double? = nil, maximum: Double? = nil,
        pattern: String? = nil, minLength: Int? = nil, maxLength: Int? = nil, count: ClosedRange<Int>? = nil,
        minItems: Int? = nil, maxItems: Int? = nil, allowed: [String]? = nil
    ) {
        var members: [JSONText.Value.Member] = []
        if let description { members.append(("description", .string(description))) }
        if let low = range?.lowerBound ?? minimum { members.append(("minimum", Self.number(low))) }
        if let high = range?.upperBound ?? maximum { members.append(("maximum", Self.number(high))) }
        if let pattern { members.append(("pattern", .string(pattern))) }
        if let minLength { members.append(("minLength", .number(JSON.Number(minLength)))) }
        if let maxLength { members.append(("maxLength", .number(JSON.Number(maxLength)))) }
        if let low = count?.lowerBound ?? minItems { members.append(("minItems", .number(JSON.Number(low)))) }
        if let high = count?.upperBound ?? maxItems { members.append(("maxItems", .number(JSON.Number(high)))) }
        if let allowed { members.append(("enum", .array(allowed.map { .string($0) }))) }
        self.members = members
    }

    /// A whole number as an integer (`0`, not `0.0`), so a bound reads as written.
    private static func number(_ value: Double) -> JSONText.Value {
        if value == value.rounded(), abs(value) < 1e15 { return .number(JSON.Number(Int64(value))) }
        return .number(value)
    }

    /// `schema` with the guide's members set (replacing members of the same name, in place).
    public func apply(to schema: JSONText.Value) -> JSONText.Value {
        guard case .object(var existing) = schema else { return schema }
        for member in members {
            if let index = existing.firstIndex(where: { $0.key == member.key }) {
                existing[index].value = member.value
            } else {
                existing.append(member)
            }
        }
        return .object(existing)
    }
}

/// A coding key made of any string: the keys of the `Partial` types `@Structured` writes.
public struct PartialKey: CodingKey, Sendable {
    public let stringValue: String
    public var intValue: Int? { nil }
    /// The key `name`.
    public init(_ name: String) { stringValue = name }
    public init?(stringValue: String) { self.stringValue = stringValue }
    public init?(intValue: Int) { return nil }
}

/// How `Partial` types decode what has been generated so far: every property that is not
/// there yet, or not complete enough to decode, is nil — never an error.
public enum PartialDecoding {
    /// The value of `key`, or nil when it is absent or does not decode yet.
    public static func value<T: Decodable>(_ container: KeyedDecodingContainer<PartialKey>, _ key: String) -> T? {
        try? container.decodeIfPresent(T.self, forKey: PartialKey(key))
    }

    /// The items of the array at `key` that decode, in order, up to the first that does not
    /// (the one being written); nil when the key is absent or not an array.
    public static func array<T: Decodable>(_ container: KeyedDecodingContainer<PartialKey>, _ key: String) -> [T]? {
        guard var items = try? container.nestedUnkeyedContainer(forKey: PartialKey(key)) else { return nil }
        var result: [T] = []
        while !items.isAtEnd, let item = try? items.decode(T.self) { result.append(item) }
        return result
    }
}
