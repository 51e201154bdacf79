import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `hearth serve`'s `HEARTH_*` environment fallbacks (issue 63), and `hearth --version`.
@Suite struct ServeEnvironmentTests {
    @Test func variablesStandInForOptionsAndTheCommandLineWins() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["HEARTH_MODEL"] = Fixtures.checkpoint("phi3-mha").path
        environment["HEARTH_PORT"] = "0"
        environment["HEARTH_CTX"] = "256"
        environment["HEARTH_THREADS"] = "1"
        environment["HEARTH_ALIAS"] = "from-env"  // the command line's --alias wins
        environment["HEARTH_NO_WEB_UI"] = "1"
        environment["HEARTH_MAX_TOKENS"] = "3"
        let server = try ServeProcess.start(["--alias", "from-cli"], environment: environment)
        defer { server.stop() }
        let base = server.base

        func call(_ path: String, body: String? = nil) async throws -> (Int, String) {
            try await httpCall(base, path, body: body)
        }
        let models = try await call("/v1/models")
        #expect(models.0 == 200 && models.1.contains("\"from-cli\"") && !models.1.contains("from-env"), "\(models.1)")
        #expect(try await call("/").0 == 404, "HEARTH_NO_WEB_UI=1 turned the chat page off")
        let chat = #"{"model":"from-cli","messages":[{"role":"user","content":"Hi"}],"temperature":0}"#
        let (status, body) = try await call("/v1/chat/completions", body: chat)
        #expect(status == 200 && body.contains("\"completion_tokens\":3"), "HEARTH_MAX_TOKENS=3: \(body)")
    }

    /// `--log-format json`: every stderr line is a JSON object; the request line carries its
    /// id, status and model; no key and no prompt text appear; `--log-level debug` reaches the
    /// engine's loggers too (one bootstrap).
    @Test func jsonLogLinesParseAndHoldNoSecrets() async throws {
        let server = try ServeProcess.start([
            "-m", Fixtures.checkpoint("phi3-mha").path, "--port", "0", "-c", "256", "-t", "1", "--alias", "tiny",
            "--log-format", "json", "--log-level", "debug", "--api-key", "json-log-key-77",
        ])
        var request = URLRequest(url: try #require(URL(string: server.base + "/v1/chat/completions")))
        request.httpMethod = "POST"
        request.httpBody = Data(#"{"model":"tiny","messages":[{"role":"user","content":"secret prompt words"}],"max_tokens":3}"#.utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer json-log-key-77", forHTTPHeaderField: "Authorization")
        let (_, response) = try await URLSession.shared.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let log = server.stop()
        let lines = log.split(separator: "\n")
        #expect(!lines.isEmpty)
        var objects: [[String: Any]] = []
        for line in lines {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not a JSON object: \(line)")
            if let object { objects.append(object) }
        }
        let requestLine = objects.first { $0["message"] as? String == "request" }
        #expect(requestLine?["id"] is String && requestLine?["status"] as? String == "200" && requestLine?["model"] as? String == "tiny", "\(log)")
        #expect(objects.allSatisfy { $0["time"] is String && $0["level"] is String && $0["logger"] is String })
        #expect(!log.contains("json-log-key-77") && !log.contains("secret prompt words"))
    }

    @Test func aFlagVariableThatIsNotYesOrNoIsRefused() throws {
        let binary = try #require(CLITests.binary)
        let run = try runProcess(binary, ["serve", "--port", "0"], environment: ["HEARTH_NO_WEB_UI": "maybe"])
        let stderr = String(decoding: run.stderr, as: UTF8.self)
        #expect(run.status != 0 && stderr.contains("HEARTH_NO_WEB_UI"), "\(stderr)")
    }

    /// `hearth --version`: the version CHANGELOG.md's newest entry names, the build's git
    /// description, the kernel level.
    @Test func versionNamesTheReleaseTheBuildAndTheKernels() throws {
        let run = try CLITests().hearth(["--version"])
        #expect(run.status == 0, "\(run.stderr)")
        let changelog = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = try #require(changelog.firstMatch(of: /\n## \[?(\d+\.\d+\.\d+)\]?/)?.1)
        let line = run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.wholeMatch(of: /hearth (\d+\.\d+\.\d+) \([^()]+\), kernels [a-z0-9-]+/)?.1 == newest, "\(line)")
    }
}
