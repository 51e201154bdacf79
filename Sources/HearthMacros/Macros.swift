@_exported import HearthProviders

/// Makes a `Codable` struct or enum a ``HearthProviders/StructuredOutput``: derives its JSON
/// Schema from the declaration — the shape its synthesized `Codable` writes and reads, so a
/// value a model generates under it always decodes — and, for a struct, a `Partial` type with
/// every property optional for streaming.
///
/// ```swift
/// @Structured(description: "A city and what it is known for")
/// struct City: Codable {
///     @SchemaGuide("The city's name, in English") var name: String
///     var country: String
///     @SchemaGuide(range: 0...40_000_000) var population: Int
///     @SchemaGuide(count: 1...3) var landmarks: [String]
///     var climate: Climate?                       // optional: the model may leave it out
/// }
/// @Structured enum Climate: String, Codable { case tropical, temperate, arid, polar }
/// ```
///
/// - Structs: stored properties in declaration order (a nested `CodingKeys` renames or leaves
///   out keys as it does for `Codable`); non-optional ones are `required`; no other keys
///   (`additionalProperties: false`).
/// - Scalars: `String`, `Bool`, `Int` (and the fixed-width integers, bounded to
///   their range), `Double`, `Float`, `UUID`; arrays (`[T]`, `Set<T>`), `[String: T]`
///   dictionaries, optionals, and other `@Structured` (or hand-conforming) types, nested.
/// - Enums with `String` or `Int` raw values: one of the raw values. Other enums: `anyOf` one
///   object per case, `{"case": {"label": value, "_0": value…}}` as Swift's synthesized
///   `Codable` encodes them (`{"case": {}}` for a case without values).
/// - Not supported (a compile-time error that says why): classes, actors, generic types, types
///   without stored properties, a type containing itself, `Date`, `Data`, `URL`, custom
///   `CodingKeys` on an enum.
@attached(extension, conformances: StructuredOutput, names: named(jsonSchema), named(Partial))
public macro Structured(description: String? = nil) = #externalMacro(module: "HearthMacrosPlugin", type: "StructuredMacro")

/// Guides how a model fills in a stored property of a `@Structured` struct: a description
/// (in the schema, so the model sees it when the schema is in the prompt), and constraints the
/// local model enforces token by token. Takes the arguments of ``HearthProviders/PropertyGuide``.
///
/// ```swift
/// @SchemaGuide("Two-letter country code", pattern: "^[A-Z]{2}$") var country: String
/// @SchemaGuide(range: 0...150) var age: Int
/// @SchemaGuide(count: 1...5) var tags: [String]
/// @SchemaGuide(allowed: ["small", "medium", "large"]) var size: String
/// ```
///
/// `range`, `minimum` and `maximum` apply to numbers; `pattern`, `minLength`, `maxLength` and
/// `allowed` to strings; `count`, `minItems` and `maxItems` to arrays (a mismatch is a
/// compile-time error). `count: 2...2` asks for exactly two items.
@attached(peer)
public macro SchemaGuide(
    _ description: String? = nil, range: ClosedRange<Double>? = nil, minimum: Double? = nil, maximum: Double? = nil,
    pattern: String? = nil, minLength: Int? = nil, maxLength: Int? = nil, count: ClosedRange<Int>? = nil,
    minItems: Int? = nil, maxItems: Int? = nil, allowed: [String]? = nil
) = #externalMacro(module: "HearthMacrosPlugin", type: "SchemaGuideMacro")
