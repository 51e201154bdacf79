import Foundation
import HearthMacros
import Testing

/// The schemas `@Structured` derives for the corpus (Corpus.swift) equal hand-written ones,
/// compared as parsed JSON: every keyword and value, and the order of `properties` (the
/// order a model writes the keys in).
@Suite struct SchemaDerivationTests {
    /// `actual` equals `expected` as JSON: objects equal as sets of members, except that
    /// `properties` must also list its members in the same order.
    static func same(_ actual: JSONText.Value, _ expected: JSONText.Value, parentKey: String? = nil) -> Bool {
        switch (actual, expected) {
        case (.object(let a), .object(let b)):
            guard a.count == b.count, Set(a.map(\.key)) == Set(b.map(\.key)) else { return false }
            if parentKey == "properties", a.map(\.key) != b.map(\.key) { return false }
            return b.allSatisfy { member in
                guard let value = actual[member.key] else { return false }
                return same(value, member.value, parentKey: member.key)
            }
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { same($0, $1) }
        default:
            return actual == expected
        }
    }

    static func expect(_ actual: JSONText.Value, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let parsed = try JSONText.parse(expected)
        #expect(same(actual, parsed), "derived:\n\(actual.serialized)\nexpected:\n\(parsed.serialized)", sourceLocation: sourceLocation)
    }

    @Test func structWithGuidesOptionalAndArrayCount() throws {
        try Self.expect(
            City.jsonSchema,
            """
            {"type": "object", "description": "A city and its landmarks",
             "properties": {
               "name": {"type": "string", "description": "The city's name"},
               "country": {"type": "string"},
               "population": {"type": "integer", "minimum": 0, "maximum": 40000000},
               "landmarks": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
               "nickname": {"type": "string"}},
             "required": ["name", "country", "population", "landmarks"],
             "additionalProperties": false}
            """)
    }

    @Test func nestedStructsAndPatterns() throws {
        try Self.expect(
            Person.jsonSchema,
            """
            {"type": "object",
             "properties": {
               "name": {"type": "string", "maxLength": 24},
               "age": {"type": "integer", "description": "Age in years", "minimum": 0, "maximum": 120},
               "address": {"type": "object",
                           "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                           "required": ["street", "zip"], "additionalProperties": false},
               "height": {"type": "number"},
               "isMember": {"type": "boolean"}},
             "required": ["name", "age", "address", "isMember"],
             "additionalProperties": false}
            """)
    }

    /// Swift's synthesized Codable writes `{"case": {"label": …, "_0": …}}` (SE-0295).
    @Test func enumWithAssociatedValues() throws {
        try Self.expect(
            Shape.jsonSchema,
            """
            {"anyOf": [
              {"type": "object", "properties": {"circle": {"type": "object", "properties": {"radius": {"type": "number"}},
                 "required": ["radius"], "additionalProperties": false}}, "required": ["circle"], "additionalProperties": false},
              {"type": "object", "properties": {"rectangle": {"type": "object",
                 "properties": {"width": {"type": "number"}, "height": {"type": "number"}},
                 "required": ["width", "height"], "additionalProperties": false}}, "required": ["rectangle"], "additionalProperties": false},
              {"type": "object", "properties": {"point": {"type": "object",
                 "properties": {"_0": {"type": "integer"}, "_1": {"type": "integer"}},
                 "required": ["_0", "_1"], "additionalProperties": false}}, "required": ["point"], "additionalProperties": false},
              {"type": "object", "properties": {"empty": {"type": "object", "properties": {}, "additionalProperties": false}},
               "required": ["empty"], "additionalProperties": false}]}
            """)
    }

    @Test func arrayOfEnumsWithCount() throws {
        let drawing = try #require(Drawing.jsonSchema["properties"])
        try Self.expect(try #require(drawing["title"]), #"{"type": "string", "maxLength": 16}"#)
        let shapes = try #require(drawing["shapes"])
        #expect(shapes["type"] == "array" && shapes["minItems"] == 1 && shapes["maxItems"] == 2)
        #expect(shapes["items"] == Shape.jsonSchema)
        #expect(Drawing.jsonSchema["required"] == ["title", "shapes"])
    }

    @Test func enumsWithRawValues() throws {
        try Self.expect(Priority.jsonSchema, #"{"type": "string", "enum": ["low", "MED", "high"]}"#)
        try Self.expect(Level.jsonSchema, #"{"type": "integer", "enum": [1, 2, 5]}"#)
    }

    /// CodingKeys rename and leave out keys; statics and computed properties are not encoded.
    @Test func codingKeysAndAllowedValues() throws {
        try Self.expect(
            Ticket.jsonSchema,
            """
            {"type": "object",
             "properties": {
               "ticket_kind": {"type": "string", "enum": ["bug", "feature"]},
               "priority": {"type": "string", "enum": ["low", "MED", "high"]},
               "level": {"type": "integer", "enum": [1, 2, 5]},
               "done": {"type": "boolean"},
               "estimate": {"type": "integer", "minimum": 0, "maximum": 255},
               "labels": {"type": "array", "items": {"type": "string", "enum": ["low", "MED", "high"]}, "maxItems": 2}},
             "required": ["ticket_kind", "priority", "done", "estimate"],
             "additionalProperties": false}
            """)
    }

    @Test func dictionariesSetsAndNarrowIntegers() throws {
        try Self.expect(
            Inventory.jsonSchema,
            """
            {"type": "object",
             "properties": {
               "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
               "codes": {"type": "array", "items": {"type": "string"}},
               "grades": {"type": "array", "items": {"type": "integer", "minimum": -128, "maximum": 127}},
               "initial": {"type": "string", "minLength": 1, "maxLength": 1},
               "id": {"type": "string", "format": "uuid"}},
             "required": ["counts", "grades", "initial"],
             "additionalProperties": false}
            """)
    }

    /// The schema describes what JSONEncoder writes: Foundation's encoding of sample values has
    /// exactly the shapes above (so what a model writes under the schema decodes).
    @Test func foundationEncodesTheShapesTheSchemasDescribe() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func text<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        #expect(try text(Shape.circle(radius: 1.5)) == #"{"circle":{"radius":1.5}}"#)
        #expect(try text(Shape.point(1, 2)) == #"{"point":{"_0":1,"_1":2}}"#)
        #expect(try text(Shape.empty) == #"{"empty":{}}"#)
        #expect(try text(Priority.medium) == #""MED""#)
        #expect(try text(Level.two) == "2")
        let ticket = Ticket(kind: "bug", priority: .high, level: nil, done: false, estimate: 3, labels: nil, note: "x")
        #expect(try text(ticket) == #"{"done":false,"estimate":3,"priority":"high","ticket_kind":"bug"}"#)
        // …and Hearth's decoder (the one structured replies go through) reads them back.
        for shape in [Shape.circle(radius: 1.5), .rectangle(width: 2, height: 3), .point(1, 2), .empty] {
            #expect(try JSONText.decode(Shape.self, from: try text(shape)) == shape)
        }
        #expect(try JSONText.decode(Ticket.self, from: try text(ticket)).priority == .high)
    }

    /// A tool whose arguments are a structured type gets its parameters from the schema.
    @Test func functionToolParametersComeFromTheArguments() throws {
        struct Lookup: FunctionTool {
            let name = "lookup_city"
            let description = "Looks a city up."
            func call(arguments: City) async throws -> String { arguments.name }
        }
        #expect(try JSONText.parse(Lookup().parameters) == City.jsonSchema)
        #expect(try JSONText.parse(Lookup().definition.parameters) == City.jsonSchema)
    }
}
