import Foundation
import HearthTestSupport
import Testing

/// `hearth generate --json-schema | --grammar | --regex` on a random-weight fixture model: the
/// output follows the format whatever the weights, and a format that cannot be enforced stops
/// with a message naming where.
@Suite struct StructuredCLITests {
    let cli = CLITests()
    let model = Fixtures.checkpoint("phi3-mha").path

    func file(_ text: String, _ ext: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-structured-\(UUID().uuidString).\(ext)")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func jsonSchemaGrammarAndRegexConstrainTheOutput() throws {
        let schema = try file(
            #"{"type":"object","properties":{"n":{"type":"integer","minimum":0,"maximum":99},"ok":{"type":"boolean"}},"required":["n","ok"],"additionalProperties":false}"#,
            "json")
        let grammar = try file(#"root ::= ("yes" | "no") "!""#, "gbnf")
        defer {
            try? FileManager.default.removeItem(at: schema)
            try? FileManager.default.removeItem(at: grammar)
        }
        for seed in ["1", "2"] {
            let common = ["generate", "--model", model, "--prompt", "x", "--temperature", "1", "--seed", seed, "--max-tokens", "60"]
            let json = try cli.hearth(common + ["--json-schema-file", schema.path])
            #expect(json.status == 0, "\(json.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            #expect(object?["ok"] is Bool && (object?["n"] as? Int).map { (0...99).contains($0) } == true, "\(json.stdout)")
            // The schema's text inline (llama.cpp's -j) is the same constraint: the same sample.
            let inline = try cli.hearth(common + ["-j", try String(contentsOf: schema, encoding: .utf8)])
            #expect(inline.status == 0 && inline.stdout == json.stdout, "\(inline.stderr)")

            let yesNo = try cli.hearth(common + ["--grammar-file", grammar.path])
            #expect(yesNo.status == 0, "\(yesNo.stderr)")
            #expect(["yes!\n", "no!\n"].contains(yesNo.stdout), "\(yesNo.stdout)")
            let inlineGrammar = try cli.hearth(common + ["--grammar", #"root ::= ("yes" | "no") "!""#])
            #expect(inlineGrammar.status == 0 && inlineGrammar.stdout == yesNo.stdout, "\(inlineGrammar.stderr)")

            let code = try cli.hearth(common + ["--regex", "[A-Z]{2}-[0-9]{3}"])
            #expect(code.status == 0, "\(code.stderr)")
            #expect(code.stdout.wholeMatch(of: /[A-Z]{2}-[0-9]{3}\n/) != nil, "\(code.stdout)")
        }
    }

    @Test func formatsThatCannotBeEnforcedStopWithWhere() throws {
        let schema = try file(#"{"type":"array","minItems":3,"maxItems":1}"#, "json")
        defer { try? FileManager.default.removeItem(at: schema) }
        let unsatisfiable = try cli.hearth(["generate", "--model", model, "--prompt", "x", "--json-schema-file", schema.path])
        #expect(unsatisfiable.status != 0)
        #expect(unsatisfiable.stderr.contains("--json-schema"), "\(unsatisfiable.stderr)")
        let lookaround = try cli.hearth(["generate", "--model", model, "--prompt", "x", "--regex", "a(?=b)"])
        #expect(lookaround.status != 0)
        #expect(lookaround.stderr.contains("offset"), "\(lookaround.stderr)")
        let two = try cli.hearth(["generate", "--model", model, "--prompt", "x", "--regex", "a", "--json-schema-file", schema.path])
        #expect(two.status != 0)
        let missing = try cli.hearth(["generate", "--model", model, "--prompt", "x", "--grammar-file", "/nonexistent.gbnf"])
        #expect(missing.status != 0 && missing.stderr.contains("/nonexistent.gbnf"))
        let help = try cli.hearth(["generate", "--help"])
        #expect(help.stdout.contains("--json-schema") && help.stdout.contains("--grammar") && help.stdout.contains("--regex"))
    }
}
