import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Examples/ServerInApp run as a user runs it: the built example over the default model on a free
/// loopback port, its own route and Hearth's mounted chat completions over real HTTP, then SIGTERM.
@Suite struct ServerInAppExampleTests {
    /// The example's binary, built beside `hearth` by `swift build` (`--build-tests` included).
    static var binary: URL? {
        CLITests.binary?.deletingLastPathComponent().appendingPathComponent("hearth-server-in-app-example")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: RealModel.model)), .timeLimit(.minutes(2)))
    func servesItsOwnRouteAndHearthsAndStopsOnSIGTERM() async throws {
        let binary = try #require(Self.binary)
        #expect(FileManager.default.isExecutableFile(atPath: binary.path), "build the example: swift build --build-tests")
        let process = Process()
        process.executableURL = binary
        process.arguments = [RealModel.model]
        process.environment = ProcessInfo.processInfo.environment.merging(["PORT": "0"]) { _, new in new }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        var printed = ""
        let deadline = Date().addingTimeInterval(60)
        while !printed.contains("\n"), Date() < deadline, process.isRunning {
            printed += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        }
        let hello = try #require(printed.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") && $0.hasSuffix("/hello") })
        let base = String(hello.dropLast("/hello".count))

        func call(_ path: String, body: String? = nil) async throws -> (status: Int, body: String) {
            try await httpCall(base, path, body: body)
        }
        // The model loads once the app runs: /ai/health is 503 until then.
        let loaded = Date().addingTimeInterval(60)
        while try await call("/ai/health").status != 200, Date() < loaded { try await Task.sleep(for: .milliseconds(100)) }

        let own = try await call("/hello")
        #expect(own.status == 200 && own.body == "Hello from the app\n")
        let chat = #"{"model":"gemma","messages":[{"role":"user","content":"Say hello."}],"max_tokens":4}"#
        let answer = try await call("/ai/v1/chat/completions", body: chat)
        #expect(answer.status == 200, "\(answer.body)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        let choices = try #require(json["choices"] as? [[String: Any]])
        let message = try #require(choices.first?["message"] as? [String: Any])
        #expect(json["model"] as? String == "gemma" && message["content"] is String)
        #expect((json["usage"] as? [String: Any])?["completion_tokens"] as? Int ?? 0 > 0)

        kill(process.processIdentifier, SIGTERM)
        let stopped = Date().addingTimeInterval(30)
        while process.isRunning, Date() < stopped { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!process.isRunning, "still running 30 s after SIGTERM")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let rest = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let log = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(log.suffix(2000))")
        #expect(rest.contains("Stopped."), "the group returned after the drain")
        #expect(log.contains("drained"), "Hearth drained on SIGTERM: \(log.suffix(2000))")
    }
}
