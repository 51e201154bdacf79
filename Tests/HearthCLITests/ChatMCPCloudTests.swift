import Foundation
import Testing

/// `hearth chat --mcp` with a cloud provider: the OpenAI fake of `dashscope-fake` (built next to
/// `hearth`; it calls the tool a request names, then answers quoting the tool result it got on
/// the wire) and the stdio server in sh of ``ChatMCPCLITests``. Then the saved chat, tool call and
/// result included, is resumed against the same fake (which refuses a malformed history).
@Suite(.serialized) struct ChatMCPCloudTests {
    static let key = "sk-cli-mcp-cloud-13579"

    /// The fake's OpenAI base URL; stopped (SIGTERM) by ``stop()``.
    final class Fake {
        let process = Process()
        let openAI: String
        private let errors = Pipe()

        init() throws {
            process.executableURL = try #require(CLITests.binary).deletingLastPathComponent().appendingPathComponent("dashscope-fake")
            process.arguments = ["--api-key", ChatMCPCloudTests.key, "--lifetime", "120"]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = errors
            try process.run()
            var line = Data()
            while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([10]) { line.append(byte) }
            let urls = try #require(try JSONSerialization.jsonObject(with: line) as? [String: String])
            openAI = try #require(urls["openai"])
        }

        /// Stops the fake: its exit status (3 when a request broke the protocol) and its report.
        func stop() -> (status: Int32, report: String) {
            process.terminate()
            let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, report)
        }
    }

    func environment(_ home: URL, _ fake: Fake) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OPENAI_") }
        env["HEARTH_HOME"] = home.path
        env["HOME"] = home.path
        env["XDG_CONFIG_HOME"] = home.path
        env["OPENAI_API_KEY"] = Self.key
        env["OPENAI_BASE_URL"] = fake.openAI
        env["NO_COLOR"] = "1"
        return env
    }

    @Test func aCloudModelCallsAnMCPToolAndReadsItsResultThenTheChatResumes() throws {
        let (dir, config, calls) = try ChatMCPCLITests.scratch()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fake = try Fake()
        var stopped = false
        defer { if !stopped { _ = fake.stop() } }
        let chats = dir.appendingPathComponent("chats")
        let first = try ChatTests().piped(
            [
                "--provider", "openai", "--sessions-dir", chats.path, "--mcp", config.path, "--yes", "--tool-choice", "pick",
                "--max-tool-rounds", "1", "cloud-mcp",
            ], input: "pick one\n", environment: environment(dir, fake))
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("tool call: pick (sh)"), "\(first.stderr)")
        #expect(first.stderr.contains("result: SHELL-RESULT"), "\(first.stderr)")
        #expect((try? String(contentsOf: calls, encoding: .utf8)) == "called\n")
        // The fake answers a tool result by quoting it: the result went back on the wire.
        #expect(first.stdout.contains("根据工具结果（SHELL-RESULT）"), "\(first.stdout)")
        let saved = try String(contentsOf: chats.appendingPathComponent("cloud-mcp.jsonl"), encoding: .utf8)
        #expect(saved.contains("\"toolCallID\"") && saved.contains("SHELL-RESULT"), "\(saved)")

        // Resumed: the history with its tool call and result goes to the fake, which checks its
        // shape (a tool message must answer an earlier assistant call), and the chat goes on.
        let resumed = try ChatTests().piped(
            ["--provider", "openai", "--sessions-dir", chats.path, "--resume", "cloud-mcp"], input: "and now?\n",
            environment: environment(dir, fake))
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(!resumed.stdout.isEmpty)
        let after = try String(contentsOf: chats.appendingPathComponent("cloud-mcp.jsonl"), encoding: .utf8)
        #expect(after.contains("\"toolCallID\"") && after.contains("and now?"), "\(after)")
        stopped = true
        let (status, report) = fake.stop()
        #expect(status == 0, "the fake saw a malformed request: \(report)")
        #expect(report.contains("2 openai") || report.contains("3 openai"), "\(report)")
    }
}
