import Foundation
import HearthTestSupport
import Testing

/// The prompt and short flags as llama.cpp users type them (issue 63): `hearth generate "Hi"`,
/// `-p`, `-f FILE`, stdin, `-m/-n/-c/-s`; every form gives the same greedy reply as `--prompt`.
@Suite struct GenerateHabitsTests {
    let cli = CLITests()
    let model = Fixtures.checkpoint("phi3-mha").path

    /// The token lines of `--json` output (the summary line carries timings, which differ).
    func tokens(_ result: CLITests.Result) -> [Substring] {
        result.stdout.split(separator: "\n").filter { !$0.contains("\"done\"") }
    }

    @Test func everyPromptFormGivesTheSameReply() throws {
        let long = ["generate", "--model", model, "--prompt", "Hi there", "--temperature", "0", "--max-tokens", "6", "--json"]
        let reference = try cli.hearth(long)
        #expect(reference.status == 0, "\(reference.stderr)")
        #expect(reference.stdout.contains("\"completion_tokens\":6") && tokens(reference).count == 6, "\(reference.stdout)")
        let short = ["generate", "-m", model, "--temperature", "0", "-n", "6", "--json"]
        let positional = try cli.hearth(short + ["Hi there"])
        #expect(positional.status == 0 && tokens(positional) == tokens(reference), "\(positional.stderr)")
        let p = try cli.hearth(short + ["-p", "Hi there"])
        #expect(p.status == 0 && tokens(p) == tokens(reference), "\(p.stderr)")
        // `echo "Hi there" | hearth generate`: the newline echo adds is not part of the prompt.
        let piped = try cli.hearth(short, stdin: Data("Hi there\n".utf8))
        #expect(piped.status == 0 && tokens(piped) == tokens(reference), "\(piped.stderr)")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-prompt-\(UUID().uuidString).txt")
        try Data("Hi there".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let fromFile = try cli.hearth(short + ["-f", file.path])
        #expect(fromFile.status == 0 && tokens(fromFile) == tokens(reference), "\(fromFile.stderr)")
        let dash = try cli.hearth(short + ["-f", "-"], stdin: Data("Hi there".utf8))
        #expect(dash.status == 0 && tokens(dash) == tokens(reference), "\(dash.stderr)")
    }

    @Test func shortSeedAndContextAreTheLongOnes() throws {
        let sampled = ["generate", "-m", model, "Hi", "--temperature", "1.5", "-n", "6"]
        let long = try cli.hearth(sampled + ["--seed", "5"])
        let short = try cli.hearth(sampled + ["-s", "5"])
        #expect(long.status == 0 && short.stdout == long.stdout, "\(short.stderr)")
        let tiny = try cli.hearth(["generate", "-m", model, "Hi", "-c", "8"])
        #expect(tiny.status != 0 && tiny.stderr.contains("--ctx must be at least 16"), "\(tiny.stderr)")
    }

    @Test func aMissingOrDoubledPromptIsAClearError() throws {
        let empty = try cli.hearth(["generate", "-m", model, "-n", "4"], stdin: Data())
        #expect(empty.status != 0 && empty.stderr.contains("the prompt on stdin is empty"), "\(empty.stderr)")
        let twice = try cli.hearth(["generate", "-m", model, "Hi", "-p", "Ho"])
        #expect(twice.status != 0 && twice.stderr.contains("Give the prompt once"), "\(twice.stderr)")
        let missing = try cli.hearth(["generate", "-m", model, "-f", "/nonexistent/prompt.txt"])
        #expect(missing.status != 0 && missing.stderr.contains("/nonexistent/prompt.txt"), "\(missing.stderr)")
    }
}
