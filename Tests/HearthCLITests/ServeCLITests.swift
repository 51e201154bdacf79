import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `hearth serve` run as a user runs it: the real binary on a free port, real HTTP, SIGTERM.
@Suite struct ServeCLITests {
    @Test func serveAnswersAndExitsCleanlyOnSIGTERM() async throws {
        let binary = try #require(CLITests.binary)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("key")
        try "cli-test-key-42\n".write(to: keyFile, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "serve", "--model", Fixtures.checkpoint("phi3-mha").path, "--port", "0", "--ctx", "256", "--parallel", "2",
            "--threads", "1", "--api-key-file", keyFile.path, "--alias", "tiny",
        ]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // The URL line appears once the model is loaded and the socket listens.
        var printed = ""
        let deadline = Date().addingTimeInterval(60)
        while !printed.contains("\n"), Date() < deadline, process.isRunning {
            printed += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        }
        let url = try #require(printed.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }, "\(printed)")
        let base = String(url.dropLast(3))  // drop "/v1"

        func call(_ path: String, body: String? = nil, key: String? = nil) async throws -> (Int, String) {
            var request = URLRequest(url: try #require(URL(string: base + path)))
            if let body {
                request.httpMethod = "POST"
                request.httpBody = Data(body.utf8)
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            }
            if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
        }
        #expect(try await call("/health").0 == 200)
        let chat = #"{"model":"tiny","messages":[{"role":"user","content":"secret prompt words"}],"max_tokens":4}"#
        #expect(try await call("/v1/chat/completions", body: chat).0 == 401)
        let (status, body) = try await call("/v1/chat/completions", body: chat, key: "cli-test-key-42")
        #expect(status == 200, "\(body)")
        #expect(body.contains("\"chat.completion\""))

        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
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
