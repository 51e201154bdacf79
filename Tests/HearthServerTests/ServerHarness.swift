import AsyncHTTPClient
import Foundation
import HearthLocal
import HearthServer
import HearthTestSupport
import Logging
import NIOCore
import NIOHTTP1

/// A real `HearthServer` on a loopback ephemeral port over a fixture model, and an HTTP client.
final class ServerHarness: @unchecked Sendable {
    let server: HearthServer
    let provider: LocalProvider
    let port: Int
    let runTask: Task<Void, Error>
    static let client = HTTPClient(eventLoopGroupProvider: .singleton)

    init(
        context: Int = 512, parallel: Int = 2, options: ServerOptions = ServerOptions(port: 0, alias: "tiny"),
        checkpoint: String = "phi3-mha", logger: Logger? = nil, gateway: ((LocalProvider) throws -> Gateway)? = nil,
        chatTemplate: String? = nil
    ) async throws {
        // The fixtures are random-weight models: the tests' long generations and expected lengths
        // were made with their chat template (the automatic style would pick the base-model dialogue).
        var configuration = LocalProvider.Configuration(
            modelPath: Fixtures.checkpoint(checkpoint).path, context: context, threads: 1, batch: 16, parallel: parallel,
            promptStyle: .chatTemplate)
        configuration.chatTemplate = chatTemplate  // --chat-template
        provider = LocalProvider(configuration: configuration)
        var options = options
        options.port = 0
        options.host = "127.0.0.1"
        var quiet = Logger(label: "test.serve")
        quiet.logLevel = .warning
        server = HearthServer(provider: provider, options: options, logger: logger ?? quiet, gateway: try gateway?(provider))
        let server = self.server
        let (ready, readyContinuation) = AsyncStream<Int>.makeStream()
        runTask = Task {
            try await server.run(gracefulShutdownSignals: []) { port in
                readyContinuation.yield(port)
                readyContinuation.finish()
            }
        }
        var iterator = ready.makeAsyncIterator()
        guard let port = await iterator.next() else { throw HarnessError("the server did not start") }
        self.port = port
    }

    struct HarnessError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    var base: String { "http://127.0.0.1:\(port)" }

    /// Stops the server and waits for `run` to return.
    func stop() async throws {
        await server.shutdown()
        try await runTask.value
    }

    struct Reply {
        var status: Int
        var headers: HTTPHeaders
        var body: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
    }

    func send(
        _ method: HTTPMethod = .POST, _ path: String, body: String? = nil, headers: [(String, String)] = [],
        timeout: Int64 = 60
    ) async throws -> Reply {
        try await Client(port: port).send(method, path, body: body, headers: headers, timeout: timeout)
    }

    func send(_ path: String, json: [String: Any], headers: [(String, String)] = []) async throws -> Reply {
        try await Client(port: port).send(path, json: json, headers: headers)
    }

    /// The value of a metric line (`name value`) in `/metrics`.
    func metric(_ name: String, headers: [(String, String)] = []) async throws -> Double? {
        try await Client(port: port).metric(name, headers: headers)
    }

    /// Requests to a server on a loopback port (one started by a test without the harness too).
    struct Client {
        let port: Int
        var base: String { "http://127.0.0.1:\(port)" }

        func send(
            _ method: HTTPMethod = .POST, _ path: String, body: String? = nil, headers: [(String, String)] = [],
            timeout: Int64 = 60
        ) async throws -> Reply {
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            request.headers.add(name: "content-type", value: "application/json")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(string: body)) }
            let response = try await ServerHarness.client.execute(request, timeout: .seconds(timeout))
            let buffer = try await response.body.collect(upTo: 64 << 20)
            return Reply(status: Int(response.status.code), headers: response.headers, body: String(buffer: buffer))
        }

        func send(_ path: String, json: [String: Any], headers: [(String, String)] = []) async throws -> Reply {
            let data = try JSONSerialization.data(withJSONObject: json)
            return try await send(.POST, path, body: String(decoding: data, as: UTF8.self), headers: headers)
        }

        /// The value of a metric line (`name value`) in `/metrics`.
        func metric(_ name: String, headers: [(String, String)] = []) async throws -> Double? {
            let reply = try await send(.GET, "/metrics", headers: headers)
            for line in reply.body.split(separator: "\n") where line.hasPrefix(name + " ") {
                return Double(line.dropFirst(name.count + 1))
            }
            return nil
        }

    }
}

/// SSE frames (`data: …` payloads) of a streamed body, checking the framing.
func sseData(_ body: String) -> (payloads: [String], wellFramed: Bool) {
    var wellFramed = body.hasSuffix("\n\n")
    var payloads: [String] = []
    for frame in body.components(separatedBy: "\n\n") where !frame.isEmpty {
        let lines = frame.split(separator: "\n", omittingEmptySubsequences: false)
        guard let data = lines.last, data.hasPrefix("data: ") else {
            wellFramed = false
            continue
        }
        if lines.count == 2 && !lines[0].hasPrefix("event: ") { wellFramed = false }
        payloads.append(String(data.dropFirst(6)))
    }
    return (payloads, wellFramed)
}

func parse(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}
