import Foundation
import HearthTestSupport
import Testing
@testable import HearthConstraints

/// The committed schema corpus against the `jsonschema` package's verdicts
/// (scripts/make_schema_fixtures.py writes Tests/Fixtures/schema-instances.json).
@Suite struct SchemaCorpusTests {
    struct Entry: Decodable { let schema: String; let instances: [Instance] }
    struct Instance: Decodable { let json: String; let valid: Bool }

    static let directory = Fixtures.directory.appendingPathComponent("schemas")

    static func entries() throws -> [Entry] {
        let data = try Data(contentsOf: Fixtures.directory.appendingPathComponent("schema-instances.json"))
        return try JSONDecoder().decode([Entry].self, from: data)
    }

    @Test func everyInstanceIsAcceptedExactlyWhenJSONSchemaSaysValid() throws {
        let entries = try Self.entries()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.directory.path).filter { $0.hasSuffix(".json") }
        #expect(entries.count == files.count)
        #expect(entries.count >= 55)
        var checked = 0, valid = 0
        for entry in entries {
            let text = try String(contentsOf: Self.directory.appendingPathComponent(entry.schema), encoding: .utf8)
            let grammar: Grammar
            do {
                grammar = try JSONSchema.grammar(text)
            } catch {
                Issue.record("\(entry.schema): \(error)")
                continue
            }
            #expect(entry.instances.contains { $0.valid }, "\(entry.schema) has no valid instance")
            for instance in entry.instances {
                #expect(grammar.accepts(Array(instance.json.utf8)) == instance.valid, "\(entry.schema): \(instance.json)")
                checked += 1
                if instance.valid { valid += 1 }
            }
        }
        #expect(checked >= 900)
        #expect(valid >= 150)
    }

    /// Every string in every schema lowers to the same shared loop (the builder's hash-consing
    /// plus the named `json_string` rule): one loop whose way out is the closing quote (its
    /// characters inlined into it), not one per property.
    @Test func stringsShareRules() throws {
        let g = try JSONSchema.grammar(#"{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"},"c":{"type":"array","items":{"type":"string"}}},"required":["a","b","c"]}"#)
        let quote = Grammar.Symbol.bytes(ByteSet(UInt8(ascii: "\"")))
        let loops = g.rules.indices.filter { r in
            g.rules[r].alternatives.contains { $0.last == .rule(r) } && g.rules[r].alternatives.contains { $0 == [quote] }
        }
        #expect(loops.count == 1)
    }
}
