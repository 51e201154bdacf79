import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `hearth serve` run as a user runs it: the real binary on a free port, real HTTP, SIGTERM.
@Suite struct ServeCLITests {
    @Test func serveAnswersAndExitsCleanlyOnSIGTERM() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key")
        try "cli-test-key-42\n".write(to: keyFile, atomically: true, encoding: .utf8)
        let server = try ServeProcess.start([
            "--model", Fixtures.checkpoint("phi3-mha").path, "--port", "0", "--ctx", "256", "--parallel", "2",
            "--threads", "1", "--api-key-file", keyFile.path, "--alias", "tiny",
        ])
        defer { if server.process.isRunning { server.process.terminate() } }
        let base = server.base

        func call(_ path: String, body: String? = nil, key: String? = nil) async throws -> (Int, String) {
            try await httpCall(base, path, body: body, bearer: key)
        }
        #expect(try await call("/health").0 == 200)
        let chat = #"{"model":"tiny","messages":[{"role":"user","content":"secret prompt words"}],"max_tokens":4}"#
        #expect(try await call("/v1/chat/completions", body: chat).0 == 401)
        let (status, body) = try await call("/v1/chat/completions", body: chat, key: "cli-test-key-42")
        #expect(status == 200, "\(body)")
        #expect(body.contains("\"chat.completion\""))

        let log = server.stop()
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0)
        #expect(log.contains("status=200") && log.contains("status=401"), "one line per request")
        #expect(!log.contains("cli-test-key-42") && !log.contains("secret prompt words"), "keys and prompts never logged")
    }

    @Test func serveHelpDocumentsEveryFlag() throws {
        let binary = try #require(CLITests.binary)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--help"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let help = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        for flag in ["--model", "--host", "--port", "--api-key", "--api-key-file", "--parallel", "--ctx", "--threads", "--max-queue", "--alias"] {
            #expect(help.contains(flag), "\(flag) missing from help")
        }
        #expect(help.contains("127.0.0.1"))
    }
}
