import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `hearth chat --provider bailian` against the fake Bailian dialog service (`dashscope-fake`,
/// built next to `hearth`): a Chinese answer streams exactly, Ctrl-C interrupts an answer, and
/// the dialog goes on afterwards.
@Suite(.serialized) struct BailianChatTests {
    static let key = "sk-cli-bailian-key-24680"
    static let answer = "杭州是浙江省的省会，西湖🌊闻名天下。春天的苏堤，桃红柳绿；Café 与茶馆并存。"

    /// The fake service, started from its binary; stopped (SIGTERM) by ``stop()``.
    final class Fake {
        let process = Process()
        let url: String
        /// The fake DashScope text-generation base URL (`DASHSCOPE_HTTP_BASE_URL`).
        let http: String
        private let errors = Pipe()

        init(directory: URL) throws {
            let binary = try #require(CLITests.binary).deletingLastPathComponent().appendingPathComponent("dashscope-fake")
            let answers = directory.appendingPathComponent("answers.json")
            try JSONSerialization.data(withJSONObject: ["介绍一下杭州": BailianChatTests.answer]).write(to: answers)
            process.executableURL = binary
            process.arguments = [
                "--api-key", BailianChatTests.key, "--app-id", "cli-app", "--workspace-id", "cli-ws", "--answers",
                answers.path, "--lifetime", "120",
            ]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = errors
            try process.run()
            var line = Data()
            while let byte = try out.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([10]) {
                line.append(byte)
            }
            let urls = try #require(try JSONSerialization.jsonObject(with: line) as? [String: String])
            url = try #require(urls["websocket"])
            http = try #require(urls["http"])
        }

        /// Stops the fake; returns its exit status (3 when a frame broke the protocol) and its report.
        func stop() -> (status: Int32, report: String) {
            process.terminate()
            let report = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (process.terminationStatus, report)
        }
    }

    func home() -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-bailian-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// No real config file or key leaks in: HOME and XDG_CONFIG_HOME point at an empty directory.
    func environment(_ home: URL, url: String) -> [String: String] {
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("DASHSCOPE_") && !$0.key.hasPrefix("BAILIAN_") }
        env["HOME"] = home.path
        env["XDG_CONFIG_HOME"] = home.path
        env["HEARTH_HOME"] = home.path
        env["TERM"] = "xterm-256color"
        env["DASHSCOPE_API_KEY"] = Self.key
        env["BAILIAN_APP_ID"] = "cli-app"
        env["BAILIAN_WORKSPACE_ID"] = "cli-ws"
        env["DASHSCOPE_WEBSOCKET_BASE_URL"] = url
        return env
    }

    @Test func pipedChatStreamsTheChineseAnswerExactly() throws {
        let home = home()
        defer { try? FileManager.default.removeItem(at: home) }
        let fake = try Fake(directory: home)
        let process = Process()
        process.executableURL = try #require(CLITests.binary)
        process.arguments = ["chat", "--provider", "bailian"]
        process.environment = environment(home, url: fake.url)
        let input = Pipe(), out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        input.fileHandleForWriting.write(Data("介绍一下杭州\n第二个问题\n".utf8))
        try input.fileHandleForWriting.close()
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let (status, report) = fake.stop()
        #expect(process.terminationStatus == 0, "\(stderr)")
        let lines = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.first == Self.answer, "exactly the answer: \(stdout)")
        #expect(lines.count > 1 && lines[1].contains("第2轮"), "the second turn continues the dialog: \(stdout)")
        #expect(status == 0, "the fake saw no protocol violation: \(report)")
    }

    @Test func interactiveChatSurvivesAnInterruptionAndContinuesTheDialog() throws {
        let home = home()
        defer { try? FileManager.default.removeItem(at: home) }
        let fake = try Fake(directory: home)
        let chat = try ChatPTY(
            binary: try #require(CLITests.binary), arguments: ["chat", "--provider", "bailian", "b1"],
            environment: environment(home, url: fake.url))
        try chat.expect(">>> ")
        chat.send("介绍一下杭州\r")
        try chat.expect(Self.answer, timeout: 10)
        try chat.expect(">>> ")

        // A slow answer: Ctrl-C while it streams; the prompt comes back.
        chat.send("讲一个很长的故事 #slow\r")
        try chat.expect("第2轮", timeout: 10)
        chat.send("\u{03}")
        try chat.expect("interrupted", timeout: 3)
        try chat.expect(">>> ", timeout: 3)

        // The dialog goes on: the service counts this as its third round.
        chat.send("我们聊到哪了\r")
        try chat.expect("第3轮", timeout: 10)
        try chat.expect(">>> ")
        chat.send("\u{04}")
        #expect(chat.exitStatus(timeout: 5) == 0)
        let (status, report) = fake.stop()
        #expect(status == 0, "the fake saw no protocol violation: \(report)")
        #expect(report.contains("0 violations"))
        let saved = try String(contentsOf: home.appendingPathComponent("chats/b1.jsonl"), encoding: .utf8)
        #expect(saved.contains("我们聊到哪了") && saved.contains("第3轮"))
    }
}
