import Foundation
import HearthTestSupport
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Several models in one `hearth serve` with one `--cache-dir` (issue 56): each model's prompt
/// cache holds only its own blocks, in memory and on disk — a prompt one model computed is
/// never taken from the cache by another, before or after a restart — while each model finds
/// its own (from memory, then from disk after the restart). The real binary, real HTTP, SIGTERM.
@Suite(.serialized) struct ServePromptCacheModelsTests {
    struct Server {
        let process: Process
        let base: String

        init(models: [String], cacheDirectory: URL) throws {
            let binary = try #require(CLITests.binary)
            process = Process()
            process.executableURL = binary
            process.arguments =
                ["serve"] + models.flatMap { ["--model", $0] } + [
                    "--port", "0", "--ctx", "512", "--parallel", "1", "--threads", "1", "--cache-ram", "64",
                    "--cache-dir", cacheDirectory.path,
                ]
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var printed = ""
            let deadline = Date().addingTimeInterval(60)
            while !printed.contains("\n"), Date() < deadline, process.isRunning {
                printed += String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
            }
            let url = try #require(printed.split(separator: " ").first { $0.hasPrefix("http://127.0.0.1:") }, "\(printed)")
            base = String(url.dropLast(3))
        }

        /// The prompt tokens and the cached ones of a one-token answer from `model`.
        func usage(_ model: String, _ prompt: String) async throws -> (prompt: Int, cached: Int) {
            let body: [String: Any] = ["model": model, "messages": [["role": "user", "content": prompt]], "max_tokens": 1]
            var request = URLRequest(url: try #require(URL(string: base + "/v1/chat/completions")))
            request.httpMethod = "POST"
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let (data, _) = try await URLSession.shared.data(for: request)
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(String(decoding: data, as: UTF8.self))")
            let usage = try #require(json["usage"] as? [String: Any], "\(json)")
            let details = usage["prompt_tokens_details"] as? [String: Any] ?? [:]
            return (usage["prompt_tokens"] as? Int ?? 0, details["cached_tokens"] as? Int ?? -1)
        }

        /// SIGTERM, and the exit (the disk tier's pending writes are finished by then).
        func stop() {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
    }

    static func prompt(_ topic: String) -> String {
        "\(topic.capitalized) notes. " + (0..<12).map { "Sentence \($0) about the \(topic), which both models read in full." }
            .joined(separator: " ")
    }

    @Test func eachModelReadsOnlyItsOwnBlocks() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-cache-models-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let paths = [Fixtures.checkpoint("phi3-mha").path, Fixtures.checkpoint("phi3-partial-tied").path]
        let (a, b) = ("phi3-mha", "phi3-partial-tied")  // the names the server gives them (their folders')
        let first = Self.prompt("garden"), second = Self.prompt("harbour")

        var server = try Server(models: paths, cacheDirectory: directory)
        do {
            defer { server.stop() }
            let cold = try await server.usage(a, first)
            #expect(cold.prompt > 256 && cold.cached == 0, "\(cold)")
            // The same prompt on the other model: nothing of model A's is taken.
            #expect(try await server.usage(b, first).cached == 0)
            // Model A finds its own blocks again (from memory).
            #expect(try await server.usage(a, first).cached >= 192)
            // A prompt only model A has seen, for after the restart (its slot shares only the
            // template's first tokens with it: less than one 64-token block).
            #expect(try await server.usage(a, second).cached < 64)
        }
        server = try Server(models: paths, cacheDirectory: directory)
        defer { server.stop() }
        // After the restart: model B does not take model A's blocks from disk; A does.
        #expect(try await server.usage(b, second).cached < 64)
        #expect(try await server.usage(a, second).cached >= 192)
    }
}
