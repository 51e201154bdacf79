import Foundation
import HearthLocal
import HearthTestSupport
import Testing

@testable import HearthServer

/// Issue 55, items 3, 4, 6 and 7: work that is not a generation (`/tokenize`, `/detokenize`,
/// `count_tokens`, `/v1/embeddings`) is admitted like a generation — a fair-queue turn, for the
/// model the request names, within the client's allowlist, bounded — and `n` choices take `n`
/// of the fair queue's slots. The tests hold the fair queue's turns themselves, so whether a
/// request waits for one is certain, not a race with a long generation.
@Suite(.serialized) struct AdmissionBoundsTests {
    /// Polls `condition` every 10 ms until it holds or `seconds` pass; returns whether it held.
    static func eventually(within seconds: Double = 10, _ condition: () -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    static func body(_ json: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self)
    }

    static func errorOf(_ reply: ServerHarness.Reply) -> [String: Any] { reply.json["error"] as? [String: Any] ?? [:] }

    nonisolated(unsafe) static let user: [String: Any] = ["role": "user", "content": "Tell me a story."]

    // MARK: Item 3: the model the request names, within the allowlist

    /// `/tokenize` and `/detokenize` use the model the request names (they always used the
    /// first), and refuse a model the client may not use (403, as generation does).
    @Test func tokenizeServesTheNamedModelWithinTheAllowlist() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-admission-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let other = LocalProvider(
            configuration: .init(
                modelPath: Fixtures.checkpoint("llama-tiny").path, context: 256, threads: 1, batch: 16, parallel: 1,
                promptStyle: .chatTemplate))
        let config = """
            {"clients": [{"name": "all", "key_sha256": "\(sha256Hex("hk-all-5e1d3c7a9b"))"},
                         {"name": "only-a", "key_sha256": "\(sha256Hex("hk-only-a-2f8e6d4c0a"))", "models": ["a"]}],
             "models": {"a": {"provider": "local", "model": "a"}, "b": {"provider": "local", "model": "b"}},
             "usage_db": "usage.sqlite"}
            """
        let configuration = try GatewayConfiguration.parse(Data(config.utf8), directory: directory, environment: [:])
        let harness = try await ServerHarness(context: 512, parallel: 1) { local in
            try Gateway(configuration: configuration, local: local, localModels: ["a": local, "b": other], environment: [:])
        }
        try await withCleanup({ try? await harness.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let all = [("authorization", "Bearer hk-all-5e1d3c7a9b")]
            let onlyA = [("authorization", "Bearer hk-only-a-2f8e6d4c0a")]
            let a = try await harness.send("/tokenize", json: ["model": "a", "content": "Hello world"], headers: all)
            #expect(a.status == 200 && a.json["max_model_len"] as? Int == 512, "\(a.body)")
            // Model b's answer: its context (256), its vocabulary.
            let b = try await harness.send("/tokenize", json: ["model": "b", "content": "Hello world"], headers: all)
            #expect(b.status == 200 && b.json["max_model_len"] as? Int == 256, "\(b.body)")
            let ids = b.json["tokens"] as? [Int] ?? []
            let back = try await harness.send("/detokenize", json: ["model": "b", "tokens": ids], headers: all)
            #expect(back.status == 200 && (back.json["content"] as? String)?.contains("Hello world") == true, "\(back.body)")
            // A client restricted to `a` may not tokenize with `b`.
            for (path, body) in [("/tokenize", ["model": "b", "content": "Hi"] as [String: Any]), ("/detokenize", ["model": "b", "tokens": [5]])] {
                let refused = try await harness.send(path, json: body, headers: onlyA)
                #expect(refused.status == 403 && Self.errorOf(refused)["code"] as? String == "model_not_allowed", "\(path): \(refused.body)")
            }
            #expect(try await harness.send("/tokenize", json: ["model": "a", "content": "Hi"], headers: onlyA).status == 200)
            try await harness.stop()
        }
    }

    /// `/tokenize`, `/detokenize` and `count_tokens` wait for a fair-queue turn like a
    /// generation (they tokenized megabytes beside the running requests, outside admission).
    @Test func tokenizeAndCountTokensWaitTheirTurn() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let queue = try #require(harness.server.localQueue)
            let held = try await queue.turn(for: "test")  // the only slot
            let requests: [(String, [String: Any])] = [
                ("/tokenize", ["model": "tiny", "content": "Hello world"]),
                ("/detokenize", ["model": "tiny", "tokens": [5, 6, 7]]),
                ("/v1/messages/count_tokens", ["model": "tiny", "messages": [Self.user]]),
            ]
            let bodies = try requests.map { try Self.body($0.1) }
            let paths = requests.map(\.0)
            let tasks = zip(paths, bodies).map { path, body in Task { try await harness.send(.POST, path, body: body) } }
            #expect(try await Self.eventually { queue.waitingCount == 3 }, "waiting: \(queue.waitingCount)")
            held.end()
            for (task, request) in zip(tasks, requests) {
                let reply = try await task.value
                #expect(reply.status == 200, "\(request.0): \(reply.body)")
            }
            #expect(queue.waitingCount == 0 && queue.runningCount == 0)
            try await harness.stop()
        }
    }

    // MARK: Item 4: embeddings

    /// An embeddings request waits for a fair-queue turn, leaves the queue when its client goes
    /// away, and is stopped at the request timeout (it had none of these: it ran beside
    /// everything else until it was done, whoever was still listening).
    @Test func embeddingsTakeTurnsAndStopWhenTheClientLeaves() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.requestTimeout = 2
        let harness = try await ServerHarness(context: 512, parallel: 1, options: options)
        try await withCleanup({ try? await harness.stop() }) {
            let queue = try #require(harness.server.localQueue)
            let held = try await queue.turn(for: "test")
            let request: [String: Any] = ["model": "tiny", "input": ["The fire is a small promise.", "Bread."]]
            let body = try Self.body(request)
            let waiting = Task { try await harness.send(.POST, "/v1/embeddings", body: body) }
            #expect(try await Self.eventually { queue.waitingCount == 1 }, "waiting: \(queue.waitingCount)")
            // A client that leaves while waiting leaves the queue at once.
            let leaving = try RawConnection(port: harness.port)
            try leaving.post("/v1/embeddings", json: request)
            #expect(try await Self.eventually { queue.waitingCount == 2 })
            leaving.close()
            #expect(try await Self.eventually { queue.waitingCount == 1 }, "the departed client's request still waits")
            // Still waiting at the deadline: 504.
            let timedOut = try await waiting.value
            #expect(timedOut.status == 504 && Self.errorOf(timedOut)["code"] as? String == "timeout", "\(timedOut.body)")
            #expect(try await Self.eventually { queue.waitingCount == 0 })
            held.end()
            let served = try await harness.send("/v1/embeddings", json: request)
            #expect(served.status == 200 && (served.json["data"] as? [Any])?.count == 2, "\(served.body)")
            #expect(try await Self.eventually { harness.server.inFlightCount == 0 })
            try await harness.stop()
        }
    }

    /// An embeddings request is bounded in tokens (all inputs together): over the bound is a
    /// 400 naming it, before any forward pass (a 4 MiB body was tens of minutes of work).
    @Test func embeddingsAreBoundedInTokens() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let limit = ServerOptions(port: 0).maxEmbeddingTokens
            // Each input fits the context; together they pass the bound by one token.
            let each = 500, count = limit / each + 1
            var inputs = (0..<(count - 1)).map { index in (0..<each).map { (index + $0) % 900 + 10 } }
            inputs.append((0..<(limit - each * (count - 1) + 1)).map { $0 % 900 + 10 })
            let refused = try await harness.send(.POST, "/v1/embeddings", body: try Self.body(["model": "tiny", "input": inputs]))
            #expect(refused.status == 400, "\(refused.body.prefix(300))")
            let error = Self.errorOf(refused)
            #expect(error["param"] as? String == "input" && (error["message"] as? String)?.contains("\(limit) tokens") == true, "\(error)")
            // At the bound it is served.
            inputs[inputs.count - 1].removeLast()
            let served = try await harness.send(.POST, "/v1/embeddings", body: try Self.body(["model": "tiny", "input": inputs]))
            #expect(served.status == 200, "\(served.body.prefix(300))")
            #expect((served.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int == limit)
            try await harness.stop()
        }
    }

    // MARK: Item 6: /tokenize bounded

    /// `/tokenize` is bounded in input bytes, tokens and response bytes, each a 400 naming the
    /// bound (3 MB of text with pieces was a 55 MB answer).
    @Test func tokenizeIsBounded() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let defaults = ServerOptions(port: 0)
            let huge = String(repeating: "The fire is a small promise. ", count: 3_000_000 / 29)
            let bytes = try await harness.send(.POST, "/tokenize", body: try Self.body(["model": "tiny", "content": huge, "with_pieces": true]))
            #expect(bytes.status == 400, "\(bytes.body.prefix(300))")
            #expect(
                Self.errorOf(bytes)["param"] as? String == "content"
                    && (Self.errorOf(bytes)["message"] as? String)?.contains("\(defaults.maxTokenizeBytes) bytes") == true,
                "\(bytes.body.prefix(300))")
            // Under the byte bound, over the token bound: one token per two bytes.
            let many = String(repeating: "a ", count: defaults.maxTokenizeBytes / 2 - 8)
            let tokens = try await harness.send(.POST, "/tokenize", body: try Self.body(["model": "tiny", "content": many]))
            #expect(tokens.status == 400, "\(tokens.body.prefix(300))")
            #expect(
                (Self.errorOf(tokens)["message"] as? String)?.contains("\(defaults.maxTokenizeTokens) tokens") == true,
                "\(tokens.body.prefix(300))")
            let ids = try await harness.send(.POST, "/detokenize", body: try Self.body(["model": "tiny", "tokens": Array(repeating: 5, count: defaults.maxTokenizeTokens + 1)]))
            #expect(ids.status == 400 && Self.errorOf(ids)["param"] as? String == "tokens", "\(ids.body.prefix(300))")
            try await harness.stop()
        }
        // A small response bound: the answer with pieces is refused, the plain one (smaller) served.
        var options = ServerOptions(port: 0, alias: "tiny")
        options.maxTokenizeResponseBytes = 2000
        let small = try await ServerHarness(context: 512, parallel: 1, options: options)
        try await withCleanup({ try? await small.stop() }) {
            let text = String(repeating: "The fire is a small promise. ", count: 20)
            let plain = try await small.send("/tokenize", json: ["model": "tiny", "content": text])
            #expect(plain.status == 200 && plain.body.utf8.count <= 2000, "\(plain.body.prefix(300))")
            let pieces = try await small.send("/tokenize", json: ["model": "tiny", "content": text, "with_pieces": true])
            #expect(pieces.status == 400 && (Self.errorOf(pieces)["message"] as? String)?.contains("2000 bytes") == true, "\(pieces.body.prefix(300))")
            try await small.stop()
        }
    }

    // MARK: Item 7: n takes n slots

    /// A request for `n` choices takes `n` of the fair queue's slots: with one of two slots
    /// held, `n: 2` waits (it took one turn and both slots, its second choice jumping the
    /// engine's queue).
    @Test func choicesTakeAsManySlots() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 2)
        try await withCleanup({ try? await harness.stop() }) {
            let queue = try #require(harness.server.localQueue)
            let held = try await queue.turn(for: "test")
            let body = try Self.body(["model": "tiny", "messages": [Self.user], "max_tokens": 4, "n": 2, "temperature": 1, "seed": 2])
            let task = Task { try await harness.send(.POST, "/v1/chat/completions", body: body) }
            #expect(try await Self.eventually(within: 5) { queue.waitingCount == 1 }, "n: 2 did not wait for its second slot")
            #expect(queue.runningCount == 1)
            held.end()
            let reply = try await task.value
            #expect(reply.status == 200 && (reply.json["choices"] as? [Any])?.count == 2, "\(reply.body)")
            #expect(try await Self.eventually { queue.runningCount == 0 && queue.waitingCount == 0 })
            try await harness.stop()
        }
    }

    /// More choices than slots go in waves, each after a turn of its own: another client's
    /// request waiting meanwhile goes between them (the whole request held every slot until its
    /// last choice, its other choices queued in the engine ahead of everyone).
    @Test func choicesBeyondTheSlotsGoInWaves() async throws {
        let (harness, upstream, directory) = try await SecurityTests.gateway(
            "[\(SecurityTests.client("a")), \(SecurityTests.client("b"))]", parallel: 2, context: 512)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let queue = try #require(harness.server.localQueue)
            let held = try await queue.turn(for: "test", slots: 2)
            let finished = Finished()
            let many = try Self.body([
                "model": "local", "messages": [Self.user], "max_tokens": 48, "n": 4, "temperature": 1, "seed": 2, "min_p": 0, "top_k": 0,
                "ignore_eos": true,
            ])
            let a = Task {
                let reply = try await harness.send(.POST, "/v1/chat/completions", body: many, headers: SecurityTests.auth("a"))
                finished.append("a")
                return reply
            }
            #expect(try await Self.eventually { queue.waitingCount == 1 })
            let one = try Self.body(["model": "local", "messages": [Self.user], "max_tokens": 2])
            let b = Task {
                let reply = try await harness.send(.POST, "/v1/chat/completions", body: one, headers: SecurityTests.auth("b"))
                finished.append("b")
                return reply
            }
            #expect(try await Self.eventually { queue.waitingCount == 2 })
            held.end()
            let answers = (try await a.value, try await b.value)
            #expect(answers.0.status == 200 && (answers.0.json["choices"] as? [Any])?.count == 4, "\(answers.0.body.prefix(300))")
            #expect(answers.1.status == 200, "\(answers.1.body.prefix(300))")
            #expect(finished.names == ["b", "a"], "b waited for all of a's choices: \(finished.names)")
            try await harness.stop()
        }
    }
}

/// The order in which answers came back.
private final class Finished: @unchecked Sendable {
    // `@unchecked Sendable`: `list` is only touched under `lock`.
    private let lock = NSLock()
    private var list: [String] = []

    func append(_ name: String) { lock.withLock { list.append(name) } }
    var names: [String] { lock.withLock { list } }
}
