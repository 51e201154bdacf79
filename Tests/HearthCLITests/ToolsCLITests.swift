import Foundation
import HearthTestSupport
import Testing

/// `hearth generate --tools` on a random-weight fixture model: a named or required choice
/// prints calls as JSON lines whose arguments follow the tool's schema, whatever the weights;
/// bad tool files and flag combinations stop with a message naming the flag.
@Suite struct ToolsCLITests {
    let cli = CLITests()
    let model = Fixtures.checkpoint("phi3-mha").path

    static let tools = #"""
        [{"type": "function", "function": {"name": "get_time", "description": "The time in a zone.",
          "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}, "hour24": {"type": "boolean"}},
                         "required": ["zone", "hour24"], "additionalProperties": false}}},
         {"name": "ping"}]
        """#

    func file(_ text: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-tools-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }

    @Test func namedAndRequiredChoicesPrintValidCalls() throws {
        let tools = try file(Self.tools)
        defer { try? FileManager.default.removeItem(at: tools) }
        for (choice, seed) in [("get_time", "1"), ("get_time", "2"), ("required", "3")] {
            let run = try cli.hearth([
                "generate", "--model", model, "--prompt", "time?", "--temperature", "1", "--seed", seed, "--max-tokens", "120",
                "--ctx", "1024", "--tools", tools.path, "--tool-choice", choice, "--no-parallel-tool-calls",
            ])
            #expect(run.status == 0, "\(run.stderr)")
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.count == 1, "\(run.stdout)")
            let object = try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any]
            let call = try #require(object?["tool_call"] as? [String: Any], "\(run.stdout)")
            let name = call["name"] as? String
            #expect(choice == "required" ? ["get_time", "ping"].contains(name) : name == choice)
            #expect((call["id"] as? String)?.hasPrefix("call_") == true)
            let arguments = try JSONSerialization.jsonObject(with: Data(((call["arguments"] as? String) ?? "").utf8)) as? [String: Any]
            if name == "get_time" {
                #expect(["UTC", "CET"].contains(arguments?["zone"] as? String) && arguments?["hour24"] is Bool, "\(call)")
            } else {
                #expect(arguments?.isEmpty == true)
            }
        }
    }

    @Test func badToolFilesAndFlagsStopNamingTheFlag() throws {
        let duplicate = try file(#"[{"name": "a"}, {"name": "a"}]"#)
        let notJSON = try file("[{")
        defer {
            try? FileManager.default.removeItem(at: duplicate)
            try? FileManager.default.removeItem(at: notJSON)
        }
        let base = ["generate", "--model", model, "--prompt", "x"]
        let twice = try cli.hearth(base + ["--tools", duplicate.path])
        #expect(twice.status != 0 && twice.stderr.contains("tools[1].name"), "\(twice.stderr)")
        let broken = try cli.hearth(base + ["--tools", notJSON.path])
        #expect(broken.status != 0 && broken.stderr.contains("--tools"), "\(broken.stderr)")
        let unknown = try cli.hearth(base + ["--tools", duplicate.path.replacingOccurrences(of: ".json", with: "-missing.json")])
        #expect(unknown.status != 0 && unknown.stderr.contains("--tools"))
        let lonely = try cli.hearth(base + ["--tool-choice", "required"])
        #expect(lonely.status != 0 && lonely.stderr.contains("--tools"))
        let help = try cli.hearth(["generate", "--help"])
        #expect(help.stdout.contains("--tools") && help.stdout.contains("--tool-choice"))
    }
}
