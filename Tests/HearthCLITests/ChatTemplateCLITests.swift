import Foundation
import HearthTestSupport
import Testing

/// `--chat-template` on the commands that render chat prompts, `hearth inspect` naming the
/// renderer, and `hearth chat`'s `/show prompt` (issue 58, items 2 and 4).
@Suite struct ChatTemplateCLITests {
    func templateFile(_ source: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cli-template-\(UUID().uuidString).jinja")
        try source.write(to: url, atomically: true, encoding: .utf8)
        return url
    }

    @Test func everyPromptCommandTakesChatTemplateAndSaysWhatItIs() throws {
        for command in ["chat", "generate", "serve", "inspect"] {
            let help = try CLITests().hearth([command, "--help"])
            #expect(help.stdout.contains("--chat-template <file|name>"), "\(command) --help lacks --chat-template")
            let words = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(words.contains("a named template the model file carries"), "\(command) --help does not say what it takes")
        }
    }

    @Test func inspectNamesTheRenderer() throws {
        let phi4 = try CLITests().hearth(["inspect", "--model", Fixtures.checkpoint("phi4-mini-tiny").path])
        #expect(phi4.stdout.contains("chat template:   phi4-mini, rendered by jinja (tokenizer_config.json; phi4-mini markers)"), "\(phi4.stdout)")
        let phi2 = try CLITests().hearth(["inspect", "--model", Fixtures.checkpoint("phi2-tiny").path, "--json"])
        #expect(phi2.stdout.contains(#""chat_template_renderer":"instruct (hand-written)""#), "\(phi2.stdout)")
        let file = try templateFile("{% for m in messages %}{{ m.content }}{% endfor %}")
        defer { try? FileManager.default.removeItem(at: file) }
        let overridden = try CLITests().hearth(["inspect", "--model", Fixtures.checkpoint("phi3-mha").path, "--chat-template", file.path])
        #expect(overridden.stdout.contains("rendered by jinja (file \(file.lastPathComponent))"), "\(overridden.stdout)\(overridden.stderr)")
        let chatml = try CLITests().hearth(["inspect", "--model", Fixtures.checkpoint("phi3-mha").path, "--chat-template", "chatml"])
        #expect(chatml.stdout.contains("chat template:   chatml, rendered by chatml (hand-written)"), "\(chatml.stdout)")
        let wrong = try CLITests().hearth(["inspect", "--model", Fixtures.checkpoint("phi3-mha").path, "--chat-template", "nope"])
        #expect(wrong.status != 0)
        #expect(wrong.stderr.contains("neither a file nor a template name"), "\(wrong.stderr)")
    }

    /// `/show prompt` prints the prompt the last turn was rendered to, by the template given.
    @Test func chatShowPromptPrintsTheRenderedPrompt() throws {
        let chat = ChatTests()
        let home = chat.home()
        defer { try? FileManager.default.removeItem(at: home) }
        let file = try templateFile("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}")
        defer { try? FileManager.default.removeItem(at: file) }
        let (status, stdout, stderr) = try chat.piped(
            ["--model", ChatTests.fixture, "--chat-template", file.path, "--temperature", "0", "--max-tokens", "2", "--threads", "2"],
            input: "hello\n/show prompt\n", environment: chat.environment(home))
        #expect(status == 0, "\(stderr)")
        let output = stdout + stderr
        #expect(output.contains("[user]hello[assistant]"), "\(output)")
        #expect(output.contains("jinja (file \(file.lastPathComponent))"), "\(output)")
    }
}
