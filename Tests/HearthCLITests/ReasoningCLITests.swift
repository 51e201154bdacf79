import Foundation
import HearthFakeServers
import HearthTestSupport
import Testing

/// Reasoning in the CLI: `hearth generate --json` tags a reasoning model's reasoning tokens and
/// counts them; `hearth chat` shows reasoning apart from the answer (stderr with a `thinking: `
/// prefix when piped, so stdout is the answer only) and `/think` turns it on, off or to a budget.
@Suite(.serialized) struct ReasoningCLITests {
    static let fixture = "phi4-mini-reasoning-tiny"

    func objects(_ stdout: String) throws -> [[String: Any]] {
        try stdout.split(separator: "\n").map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    /// A raw prompt that opens the block: the first tokens are reasoning, closed by the budget
    /// (the model's closing sequence follows), tagged `"reasoning": true` before any answer
    /// token, and counted in the summary's `reasoning_tokens`.
    @Test func generateJSONTagsReasoningTokens() throws {
        let budget = 3
        let result = try CLITests().hearth([
            "generate", "--model", Fixtures.checkpoint(Self.fixture).path, "--raw", "--prompt", "<|user|>Hi<|end|><|assistant|><think>\n",
            "--json", "--temperature", "0", "--max-tokens", "12", "--reasoning-budget", "\(budget)", "--threads", "2",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try objects(result.stdout)
        let tokens = lines.filter { $0["done"] == nil }
        let tagged = tokens.map { $0["reasoning"] as? Bool == true }
        let reasoningCount = tagged.prefix { $0 }.count
        #expect(reasoningCount >= 1, "the prompt opened the block: \(result.stdout)")
        #expect(!tagged.dropFirst(reasoningCount).contains(true), "reasoning tokens come first, then only answer")
        // The budget, then the closing sequence (</think> and the separator, at most a few tokens).
        #expect(reasoningCount <= budget + 3)
        #expect(tokens.allSatisfy { $0["reasoning"] == nil || $0["reasoning"] as? Bool == true }, "the tag is absent on answer tokens")
        let done = try #require(lines.last)
        #expect((done["reasoning_tokens"] as? NSNumber)?.intValue == reasoningCount)
        for token in tokens.dropFirst(reasoningCount) { #expect(!(token["text"] as? String ?? "").contains("think>")) }
    }

    @Test func generateJSONOnAModelThatDoesNotReasonTagsNothing() throws {
        let result = try CLITests().hearth([
            "generate", "--model", Fixtures.checkpoint("phi3-mha").path, "--prompt", "Hi", "--json", "--temperature", "0",
            "--max-tokens", "3", "--reasoning-budget", "2",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = try objects(result.stdout)
        #expect(lines.allSatisfy { $0["reasoning"] == nil })
        #expect((lines.last?["reasoning_tokens"] as? NSNumber)?.intValue == 0)
    }

    @Test func generateRefusesAZeroBudget() throws {
        let result = try CLITests().hearth(["generate", "--model", "x", "--prompt", "Hi", "--reasoning-budget", "0"])
        #expect(result.status != 0 && result.stderr.contains("--reasoning-budget must be at least 1"))
    }

    /// `hearth chat --provider dashscope` against the fake DashScope generation service:
    /// `/think 2048` sends `enable_thinking` with the budget and the reply's reasoning goes to
    /// stderr after `thinking: `, never into stdout; `/think off` turns it off for the next turn.
    @Test func chatShowsReasoningApartAndThinkSetsIt() throws {
        let home = BailianChatTests().home()
        defer { try? FileManager.default.removeItem(at: home) }
        let fake = try BailianChatTests.Fake(directory: home)
        let process = Process()
        process.executableURL = try #require(CLITests.binary)
        process.arguments = ["chat", "--provider", "dashscope"]
        var environment = BailianChatTests().environment(home, url: fake.url)
        environment["DASHSCOPE_HTTP_BASE_URL"] = fake.http
        process.environment = environment
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        input.fileHandleForWriting.write(Data("/think 2048\n介绍一下杭州\n/think off\n用一句话总结\n/think\n".utf8))
        try input.fileHandleForWriting.close()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let (status, report) = fake.stop()
        #expect(process.terminationStatus == 0, "\(stderr)")
        let thought = FakeReasoning.thought(for: "介绍一下杭州")
        #expect(stderr.contains("think: on, budget 2048 tokens"), "\(stderr)")
        #expect(stderr.contains("thinking: \(thought)\n"), "the reasoning, whole, on stderr: \(stderr)")
        #expect(stderr.components(separatedBy: "thinking: ").count == 2, "no reasoning once /think off: \(stderr)")
        #expect(!stdout.contains("先想一想"), "no reasoning in the answer: \(stdout)")
        let lines = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == BailianChatTests.answer, "exactly the answer: \(stdout)")
        #expect(stderr.components(separatedBy: "think: off").count == 3, "/think off, then /think shows it: \(stderr)")
        #expect(status == 0, "the fake saw no protocol violation: \(report)")
    }

    /// On a terminal the reasoning is written dim (ANSI SGR 2) before the answer, with a blank
    /// line between them, and the answer is saved with its reasoning part.
    @Test func interactiveChatShowsReasoningDimBeforeTheAnswer() throws {
        let home = BailianChatTests().home()
        defer { try? FileManager.default.removeItem(at: home) }
        let fake = try BailianChatTests.Fake(directory: home)
        var environment = BailianChatTests().environment(home, url: fake.url)
        environment["DASHSCOPE_HTTP_BASE_URL"] = fake.http
        environment.removeValue(forKey: "NO_COLOR")  // styled output is what this test is about
        let chat = try ChatPTY(
            binary: try #require(CLITests.binary), arguments: ["chat", "--provider", "dashscope", "r1"], environment: environment)
        try chat.expect(">>> ")
        chat.send("/think on\r")
        try chat.expect("think: on")
        try chat.expect(">>> ")
        chat.send("介绍一下杭州\r")
        let shown = try chat.expect(BailianChatTests.answer, timeout: 15)
        // The reasoning starts "The user asks…" (the spinner, also dim, starts with a braille frame).
        let dim = try #require(shown.range(of: "\u{1B}[2mT"), "reasoning is dim: \(shown)")
        let answer = try #require(shown.range(of: BailianChatTests.answer))
        #expect(dim.lowerBound < answer.lowerBound)
        let reasoning = shown[dim.lowerBound..<answer.lowerBound]
        let plain = reasoning.replacingOccurrences(of: "\u{1B}[2m", with: "").replacingOccurrences(of: "\u{1B}[0m", with: "")
        #expect(plain.contains("先想一想") && reasoning.contains("\u{1B}[0m"), "each piece dim, then reset: \(reasoning)")
        #expect(reasoning.hasSuffix("\n\n") || reasoning.hasSuffix("\r\n\r\n"), "a blank line before the answer: \(reasoning)")
        try chat.expect(">>> ")
        chat.send("\u{04}")
        #expect(chat.exitStatus(timeout: 5) == 0)
        let (status, report) = fake.stop()
        #expect(status == 0, "the fake saw no protocol violation: \(report)")
        let saved = try String(contentsOf: home.appendingPathComponent("chats/r1.jsonl"), encoding: .utf8)
        #expect(saved.contains("\"reasoning\"") && saved.contains("先想一想") && saved.contains("\"provider\":\"dashscope\""), "\(saved)")
    }
}
