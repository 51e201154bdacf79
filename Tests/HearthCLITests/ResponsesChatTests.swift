import Foundation
import HearthFakeServers
import Testing

/// `hearth chat --provider openai-responses` against the fake Responses API
/// (``FakeOpenAIResponses``, in process): the chat asks for reasoning summaries, and the cloud's
/// reasoning goes to stderr after `thinking: `, never to stdout; the next turn sends the reply's
/// reasoning item back with its encrypted content, which the fake verifies.
@Suite struct ResponsesChatTests {
    static let key = "sk-responses-cli-test-1f3b"

    /// Runs the chat with `input` on a thread of its own (the pipes block) and returns its
    /// status, stdout and stderr.
    func run(_ binary: URL, environment: [String: String], input: String) async throws -> (Int32, String, String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                do {
                    let process = Process()
                    process.executableURL = binary
                    process.arguments = ["chat", "--provider", "openai-responses"]
                    process.environment = environment
                    let stdin = Pipe(), out = Pipe(), err = Pipe()
                    process.standardInput = stdin
                    process.standardOutput = out
                    process.standardError = err
                    try process.run()
                    stdin.fileHandleForWriting.write(Data(input.utf8))
                    try stdin.fileHandleForWriting.close()
                    let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                    process.waitUntilExit()
                    continuation.resume(returning: (process.terminationStatus, stdout, stderr))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    @Test func chatShowsTheCloudsReasoningAndSendsItsItemBack() async throws {
        let binary = try #require(CLITests.binary)
        let fake = try await FakeOpenAIResponses.start(apiKey: Self.key)
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-responses-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("OPENAI_") }
        environment["HOME"] = home.path
        environment["XDG_CONFIG_HOME"] = home.path
        environment["HEARTH_HOME"] = home.path
        environment["OPENAI_API_KEY"] = Self.key
        environment["OPENAI_BASE_URL"] = fake.baseURL
        let prompt = "Why is the sky blue?"
        let (status, stdout, stderr) = try await run(binary, environment: environment, input: "\(prompt)\nAnd at night?\n")
        await fake.stop()
        #expect(status == 0, "\(stderr)")
        let thought = FakeReasoning.thought(for: prompt)
        #expect(stderr.contains("thinking: \(thought)"), "the cloud's reasoning on stderr: \(stderr)")
        #expect(!stdout.contains("先想一想") && stdout.contains(FakeAnswers().answer(to: prompt, round: 1)), "\(stdout)")
        #expect(fake.violations.isEmpty, "\(fake.violations)")
        #expect(fake.requests.count == 2)
        #expect((fake.requests.first?.json?["reasoning"] as? [String: Any])?["summary"] as? String == "auto")
        let input = fake.requests.last?.json?["input"] as? [[String: Any]] ?? []
        #expect(input.map { $0["type"] as? String } == ["message", "reasoning", "message", "message"], "\(input)")
        #expect(input.count == 4 && input[1]["encrypted_content"] as? String == FakeOpenAIResponses.encryptedContent(id: "rs_fake0_0"))
    }
}
