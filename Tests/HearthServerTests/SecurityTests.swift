import Foundation
import GRDB
import HearthFakeServers
import HearthLocal
import HearthServer
import HearthTestSupport
import Logging
import Testing

/// The gateway in front of paying keys (docs/SERVER.md#security-model): each test fails
/// without the fix it names.
@Suite(.serialized) struct SecurityTests {
    nonisolated(unsafe) static let user: [String: Any] = ["role": "user", "content": "Tell me a long story."]

    /// A client that stops reading an SSE stream loses its connection after the write timeout,
    /// and its slot comes back (it held it forever).
    @Test func stalledReaderIsCutAfterTheWriteTimeout() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.writeTimeout = 1
        let harness = try await ServerHarness(context: 32768, parallel: 1, options: options)
        try await withCleanup({ try? await harness.stop() }) {
            let connection = try RawConnection(port: harness.port, receiveBuffer: 1024)
            try connection.post(
                "/v1/chat/completions",
                json: [
                    "model": "tiny", "messages": [Self.user], "max_tokens": 32000, "stream": true, "temperature": 1, "seed": 3, "min_p": 0,
                    "top_k": 0, "logprobs": true, "top_logprobs": 20,
                    // No end of sequence before the token limit: megabytes of frames, far more
                    // than the socket buffers hold.
                    "grammar": "root ::= [a-z ]{4000}",
                ])
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 1) == 1)
            // Never read: the socket buffers fill, the server's write waits, the timeout cuts it.
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, within: 30) == 0)
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, within: 5) == 0)
            // The connection itself was closed mid-answer: reading now gets what was buffered and
            // then the end, never the stream's end marker. (Without the timeout the server's write
            // waits for the reader: reading now drains it, and every frame up to `[DONE]` follows.)
            try await Task.sleep(for: .seconds(2))
            var received = ""
            var closed = false
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                guard let piece = connection.receive(within: 3, limit: 1 << 22) else {
                    closed = true
                    break
                }
                received += piece
                if received.contains("data: [DONE]") { break }
            }
            #expect(closed, "the server never closed the stalled connection")
            #expect(!received.contains("data: [DONE]"), "the whole answer was delivered after the stall (\(received.utf8.count) bytes)")
            #expect(received.hasPrefix("HTTP/1.1 200"))
            let next = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2])
            #expect(next.status == 200)
            connection.close()
            try await harness.stop()
        }
    }

    /// Clients that reset their connection right after sending a streamed request never leak a slot.
    @Test func resetRightAfterTheRequestReleasesTheSlot() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 1, options: ServerOptions(port: 0, maxQueue: 2, alias: "tiny"))
        try await withCleanup({ try? await harness.stop() }) {
            for round in 0..<20 {
                let connection = try RawConnection(port: harness.port)
                try connection.post(
                    "/v1/chat/completions",
                    json: ["model": "tiny", "messages": [Self.user], "max_tokens": 8, "stream": round % 2 == 0, "temperature": 0])
                if round % 4 == 1 { try await Task.sleep(for: .milliseconds(round)) }
                connection.reset()
            }
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, within: 15) == 0)
            let next = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2])
            #expect(next.status == 200)
            try await harness.stop()
        }
    }

    /// Headers without a key are refused at once, before the body they announce is read
    /// (it was read first, up to the body limit, and the request waited for it).
    @Test func nothingIsReadBeforeAuthentication() async throws {
        let harness = try await ServerHarness(options: ServerOptions(port: 0, apiKey: "k-7f3a9c1e5b2d4f60", alias: "tiny", idleTimeout: 20))
        try await withCleanup({ try? await harness.stop() }) {
            let connection = try RawConnection(port: harness.port)
            let started = ContinuousClock.now
            try connection.send(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
            let answer = connection.receive(within: 10) ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 401"), "\(answer.prefix(120))")
            #expect(ContinuousClock.now - started < .seconds(5))
            connection.close()
            try await harness.stop()
        }
    }

    /// Beyond `maxConnections` a connection is closed as soon as it is accepted.
    @Test func connectionsBeyondTheLimitAreClosed() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.maxConnections = 2
        let harness = try await ServerHarness(options: options)
        try await withCleanup({ try? await harness.stop() }) {
            let first = try RawConnection(port: harness.port)
            let second = try RawConnection(port: harness.port)
            try await Task.sleep(for: .milliseconds(200))
            let third = try RawConnection(port: harness.port)
            try? third.send("GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(third.receive(within: 3) == nil)  // closed without an answer
            try first.send("GET /live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            #expect(first.receive(within: 3)?.hasPrefix("HTTP/1.1 200") == true)
            first.close()
            second.close()
            third.close()
            try await Task.sleep(for: .milliseconds(200))
            #expect(try await harness.send(.GET, "/live").status == 200)
            try await harness.stop()
        }
    }

    /// A gateway with small per-client limits over the fixture and a fake upstream.
    /// `extra` is added to the configuration's top level (with its trailing comma); `blocked` is
    /// the content filter's file; `clock`, when given, is the gateway's clock.
    static func gateway(
        _ clients: String, cache: Bool = false, answer: [String]? = nil, filterOutput: Bool = false,
        options: ServerOptions = ServerOptions(port: 0, alias: "tiny"), parallel: Int = 2, context: Int = 1024,
        blocked: String = "pineapple\n", extra: String = "", clock: ManualClock? = nil
    ) async throws -> (ServerHarness, TestHTTPServer, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-security-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try blocked.write(to: directory.appendingPathComponent("blocked.txt"), atomically: true, encoding: .utf8)
        let upstream: TestHTTPServer
        if let answer { upstream = try await fakeOpenAI(answer: answer) } else { upstream = try await fakeOpenAI() }
        let config = """
            {"clients": \(clients),
             "models": {"local": {"provider": "local"}, "cloud": {"provider": "openai", "model": "gpt-4o-mini"}},
             \(cache ? #""cache": {"ttl_seconds": 60, "max_entries": 10},"# : "")
             "content_filter": {"file": "blocked.txt", "output": \(filterOutput), "window": 16},
             \(extra)
             "usage_db": "usage.sqlite"}
            """
        let environment = ["OPENAI_API_KEY": "sk-test-0000000000000000", "OPENAI_BASE_URL": upstream.baseURL]
        let configuration = try GatewayConfiguration.parse(Data(config.utf8), directory: directory, environment: environment)
        let harness = try await ServerHarness(context: context, parallel: parallel, options: options) { local in
            try Gateway(configuration: configuration, local: local, environment: environment, clock: clock?.clock ?? .system)
        }
        return (harness, upstream, directory)
    }

    static func key(_ name: String) -> String { "hk-\(name)-3a5c7e9b1d2f4e6a8c0b" }

    static func client(_ name: String, _ extra: String = "") -> String {
        #"{"name": "\#(name)", "key_sha256": "\#(sha256Hex(key(name)))"\#(extra)}"#
    }

    static func auth(_ name: String) -> [(String, String)] { [("authorization", "Bearer \(key(name))")] }

    /// Starts a long local generation as `client` and waits until it is admitted.
    static func startLong(_ harness: ServerHarness, client: String, maxTokens: Int) async throws -> Task<ServerHarness.Reply, Error> {
        let long: [String: Any] = [
            "model": "local", "messages": [Self.user], "max_tokens": maxTokens, "temperature": 1, "seed": 1, "min_p": 0, "top_k": 0,
            "ignore_eos": true,
        ]
        let body = String(decoding: try JSONSerialization.data(withJSONObject: long), as: UTF8.self)
        let task = Task { try await harness.send(.POST, "/v1/chat/completions", body: body, headers: Self.auth(client)) }
        #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 1, headers: Self.auth(client)) == 1)
        return task
    }

    /// Quotas are reserved at admission: two requests in flight cannot together pass the
    /// day's tokens (they were checked, not reserved, and both ran); without max_tokens the
    /// reply is capped at what is left.
    @Test func quotasAreReservedNotJustChecked() async throws {
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("small", #", "tokens_per_day": 300"#))]")
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let long: [String: Any] = [
                "model": "local", "messages": [Self.user], "max_tokens": 200, "temperature": 1, "seed": 1, "min_p": 0, "top_k": 0,
            ]
            let first = try await Self.startLong(harness, client: "small", maxTokens: 200)
            let second = try await harness.send("/v1/chat/completions", json: long, headers: Self.auth("small"))
            #expect(second.status == 429, "\(second.body)")
            #expect((second.json["error"] as? [String: Any])?["code"] as? String == "token_quota_exceeded")
            let done = try await first.value
            #expect(done.status == 200)
            let used = GatewayTests.usage(done)
            // Without max_tokens: capped at what the quota has left, so the day's total holds.
            var open = long
            open["max_tokens"] = nil
            let capped = try await harness.send("/v1/chat/completions", json: open, headers: Self.auth("small"))
            if capped.status == 200 {
                let more = GatewayTests.usage(capped)
                #expect(used.prompt + used.completion + more.prompt + more.completion <= 300 + 8, "\(used) \(more)")
            } else {
                #expect(capped.status == 429)
            }
            try await harness.stop()
        }
    }

    /// A client with `max_in_flight` 1 cannot hold a second slot; cloud routes have a pool of
    /// their own; every authenticated route counts against requests per minute.
    @Test func perClientLimitsCoverEveryRoute() async throws {
        let clients = "[\(Self.client("one", #", "max_in_flight": 1"#)), \(Self.client("rpm", #", "requests_per_minute": 3"#))]"
        let (harness, upstream, directory) = try await Self.gateway(clients)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let first = try await Self.startLong(harness, client: "one", maxTokens: 400)
            let second = try await harness.send("/v1/chat/completions", json: ["model": "local", "messages": [Self.user], "max_tokens": 4], headers: Self.auth("one"))
            #expect(second.status == 429 && (second.json["error"] as? [String: Any])?["code"] as? String == "too_many_in_flight", "\(second.body)")
            #expect(try await first.value.status == 200)
            for _ in 0..<3 { #expect(try await harness.send(.GET, "/v1/models", headers: Self.auth("rpm")).status == 200) }
            let limited = try await harness.send(.GET, "/metrics", headers: Self.auth("rpm"))
            #expect(limited.status == 429, "\(limited.body)")
            try await harness.stop()
        }
    }

    /// The response cache is per client: client B never gets client A's answer.
    @Test func theCacheIsKeyedByClient() async throws {
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("a")), \(Self.client("b"))]", cache: true)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let body = GatewayTests.chat("local", "What did A ask?", maxTokens: 3)
            let a1 = try await harness.send("/v1/chat/completions", json: body, headers: Self.auth("a"))
            let a2 = try await harness.send("/v1/chat/completions", json: body, headers: Self.auth("a"))
            let b1 = try await harness.send("/v1/chat/completions", json: body, headers: Self.auth("b"))
            #expect(a1.headers["x-hearth-cache"].first == "miss" && a2.headers["x-hearth-cache"].first == "hit")
            #expect(b1.headers["x-hearth-cache"].first == "miss")
            try await harness.stop()
        }
    }

    /// A blocked word split across streamed pieces never reaches the client, not even its first part.
    @Test func theOutputFilterHoldsBackAWindow() async throws {
        let pieces = ["The secret ", "word is ", "pine", "app", "le and ", "more."]
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("a"))]", answer: pieces, filterOutput: true)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let reply = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("cloud", "Hi", maxTokens: 20, stream: true), headers: Self.auth("a"))
            let streamed = GatewayTests.streamed(reply.body)
            #expect(streamed.text == "The secret word is ", "\(streamed.text)")
            #expect(streamed.finish == "content_filter")
            #expect(!reply.body.contains("pine"))
            try await harness.stop()
        }
    }

    /// A cloud answer the client cut short is charged its prompt's estimate (it was charged nothing).
    @Test func aCutCloudStreamIsChargedItsPrompt() async throws {
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("a", #", "admin": true"#))]")
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let prompt = String(repeating: "word ", count: 200) + "#drop"
            let reply = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("cloud", prompt, maxTokens: 20, stream: true), headers: Self.auth("a"))
            #expect(reply.status == 200)
            var usage: [String: Any] = [:]
            for _ in 0..<50 {
                let report = try await harness.send(.GET, "/v1/usage", headers: Self.auth("a"))
                usage = report.json["total"] as? [String: Any] ?? [:]
                if (usage["requests"] as? Int ?? 0) >= 1 { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect((usage["prompt_tokens"] as? Int ?? 0) >= 200, "\(usage)")
            try await harness.stop()
        }
    }

    /// Rotating a client's key revokes the tokens issued for the old key (they lived on).
    @Test func rotatingAKeyRevokesItsTokens() async throws {
        func server(key: String) async throws -> ServerHarness {
            let config = """
                {"clients": [{"name": "app", "key_sha256": "\(sha256Hex(key))"}], "models": {"local": {"provider": "local"}},
                 "token_secret_env": "TOKEN_SECRET"}
                """
            let environment = ["TOKEN_SECRET": "a-token-signing-secret-of-at-least-32-bytes"]
            let configuration = try GatewayConfiguration.parse(
                Data(config.utf8), directory: FileManager.default.temporaryDirectory, environment: environment)
            return try await ServerHarness { local in try Gateway(configuration: configuration, local: local, environment: environment) }
        }
        let old = Self.key("old"), new = Self.key("new")
        let first = try await server(key: old)
        let issued = try await first.send("/v1/auth/token", json: [:], headers: [("authorization", "Bearer \(old)")])
        let token = try #require(issued.json["token"] as? String)
        #expect(try await first.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(token)")]).status == 200)
        try await first.stop()
        let second = try await server(key: new)
        try await withCleanup({ try? await second.stop() }) {
            #expect(try await second.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(token)")]).status == 401)
            let fresh = try await second.send("/v1/auth/token", json: [:], headers: [("authorization", "Bearer \(new)")])
            let renewed = try #require(fresh.json["token"] as? String)
            #expect(try await second.send(.GET, "/v1/models", headers: [("authorization", "Bearer \(renewed)")]).status == 200)
            try await second.stop()
        }
    }

    /// Refused requests are held in memory and written in a batch, not a transaction each;
    /// reading usage writes them first, so nothing is missing from it.
    @Test func refusalsAreWrittenInBatches() async throws {
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("a", #", "admin": true"#))]")
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let database = try DatabaseQueue(path: directory.appendingPathComponent("usage.sqlite").path)
            func rows() async throws -> Int {
                let count: Int? = try await database.read { try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM requests") }
                return count ?? -1
            }
            for _ in 0..<10 {
                let refused = try await harness.send("/v1/chat/completions", json: ["model": "no-such-model", "messages": [Self.user]], headers: Self.auth("a"))
                #expect(refused.status == 404)
            }
            #expect(try await rows() == 0)  // held, not one transaction each
            let usage = try await harness.send(.GET, "/v1/usage", headers: Self.auth("a"))
            let total = usage.json["total"] as? [String: Any]
            #expect(total?["requests"] as? Int == 10 && total?["errors"] as? Int == 10, "\(usage.body)")
            #expect(try await rows() == 10)
            // Unknown model names are stored as "-", never as the client sent them.
            let models: [String] = try await database.read { try String.fetchAll($0, sql: "SELECT DISTINCT model FROM requests") }
            #expect(models == ["-"])
            try await harness.stop()
        }
    }

    /// Cloud routes have a pool of their own: when it is full a cloud request gets 503, and the
    /// local model's slots still serve (they shared one pool).
    @Test func cloudRoutesHaveTheirOwnPool() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.maxCloudInFlight = 1
        let slow = Array(repeating: "word ", count: 150)  // 10 ms apart: about 1.5 s
        let (harness, upstream, directory) = try await Self.gateway("[\(Self.client("a"))]", answer: slow, options: options)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let body = String(decoding: try JSONSerialization.data(withJSONObject: GatewayTests.chat("cloud", "Hi", maxTokens: 400)), as: UTF8.self)
            let first = Task { try await harness.send(.POST, "/v1/chat/completions", body: body, headers: Self.auth("a")) }
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 1, headers: Self.auth("a")) == 1)
            let second = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("cloud", "Hi again", maxTokens: 400), headers: Self.auth("a"))
            #expect(second.status == 503 && (second.json["error"] as? [String: Any])?["code"] as? String == "queue_full", "\(second.body)")
            let local = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("local", "Hi", maxTokens: 2), headers: Self.auth("a"))
            #expect(local.status == 200)
            #expect(try await first.value.status == 200)
            try await harness.stop()
        }
    }
}
