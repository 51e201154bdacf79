import Foundation
import HearthServer
import HearthTestSupport
import NIOHTTP1
import Testing

/// Ollama's native API on `hearth serve` (issue 65) over real loopback sockets on a
/// random-weight fixture: the shapes the official `ollama` client parses (whole and NDJSON
/// streamed, `done_reason`, counts, durations in ns), `format` and tools through the shared
/// pipeline, errors as `{"error": "…"}`, the model listings, pull/delete through a store, the
/// gateway's key applying to these routes, and the chat page. Before these routes existed every
/// request here was a 404.
@Suite(.serialized) struct OllamaAPITests {
    /// The NDJSON lines of a streamed body, each parsed (nil for a line that is not a JSON object).
    static func lines(_ body: String) -> [[String: Any]?] {
        body.split(separator: "\n", omittingEmptySubsequences: true).map { parse(String($0)).isEmpty ? nil : parse(String($0)) }
    }

    static func chat(_ extra: [String: Any] = [:], stream: Bool = false) -> [String: Any] {
        var body: [String: Any] = [
            "model": "tiny", "messages": [["role": "user", "content": "Tell me about fire."]], "stream": stream,
            "options": ["temperature": 0, "num_predict": 12, "seed": 3],
        ]
        body.merge(extra) { $1 }
        return body
    }

    static func checkFinal(_ object: [String: Any], evalCount: Int? = nil) {
        #expect(object["done"] as? Bool == true, "\(object)")
        #expect(["stop", "length"].contains(object["done_reason"] as? String ?? ""), "\(object)")
        #expect((object["prompt_eval_count"] as? Int ?? 0) > 0, "\(object)")
        if let evalCount { #expect(object["eval_count"] as? Int == evalCount, "\(object)") }
        let total = object["total_duration"] as? Int ?? 0, eval = object["eval_duration"] as? Int ?? -1
        #expect(total > 0 && eval >= 0 && eval <= total, "\(object)")
        #expect((object["created_at"] as? String)?.hasSuffix("Z") == true, "\(object)")
    }

    @Test func chatWholeAndStreamedAgree() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let whole = try await harness.send("/api/chat", json: Self.chat())
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.headers.first(name: "content-type")?.hasPrefix("application/json") == true)
            let message = whole.json["message"] as? [String: Any] ?? [:]
            #expect(message["role"] as? String == "assistant")
            let text = message["content"] as? String ?? ""
            #expect(whole.json["model"] as? String == "tiny")
            Self.checkFinal(whole.json, evalCount: whole.json["done_reason"] as? String == "length" ? 12 : nil)

            let streamed = try await harness.send("/api/chat", json: Self.chat(stream: true))
            #expect(streamed.status == 200)
            #expect(streamed.headers.first(name: "content-type") == "application/x-ndjson")
            let lines = Self.lines(streamed.body)
            #expect(lines.count >= 2 && lines.allSatisfy { $0 != nil }, "\(streamed.body)")
            let objects = lines.compactMap { $0 }
            #expect(objects.dropLast().allSatisfy { $0["done"] as? Bool == false })
            let joined = objects.map { ($0["message"] as? [String: Any])?["content"] as? String ?? "" }.joined()
            #expect(joined == text, "streamed \(joined.debugDescription) vs whole \(text.debugDescription)")
            if let last = objects.last { Self.checkFinal(last, evalCount: whole.json["eval_count"] as? Int) }

            // logprobs: one entry per generated token, with its alternatives.
            let scored = try await harness.send("/api/chat", json: Self.chat(["logprobs": true, "top_logprobs": 2]))
            let entries = scored.json["logprobs"] as? [[String: Any]] ?? []
            // A token whose text never goes out (the end token, a stop string's) is counted, not listed.
            #expect(entries.count >= 1 && entries.count <= scored.json["eval_count"] as? Int ?? 0, "\(scored.body)")
            #expect(entries.allSatisfy { $0["token"] is String && $0["logprob"] is Double && ($0["top_logprobs"] as? [Any])?.count == 2 })
            let raw = try await harness.send(
                "/api/generate",
                json: [
                    "model": "tiny", "prompt": "Once", "raw": true, "stream": false, "logprobs": true,
                    "options": ["num_predict": 4, "temperature": 0],
                ])
            let rawCount = (raw.json["logprobs"] as? [[String: Any]])?.count ?? 0
            #expect(rawCount >= 1 && rawCount <= raw.json["eval_count"] as? Int ?? 0, "\(raw.body)")
            try await harness.stop()
        }
    }

    /// Each sampling option reaches the sampler: with a fixed seed the reply repeats, and each
    /// option moved from its neutral value changes it (or, `num_predict` and `stop`, cuts it).
    @Test func optionsChangeTheReply() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            func reply(_ options: [String: Any]) async throws -> (text: String, count: Int) {
                var all: [String: Any] = ["temperature": 1.5, "seed": 11, "num_predict": 24]
                all.merge(options) { $1 }
                let r = try await harness.send("/api/chat", json: Self.chat(["options": all]))
                #expect(r.status == 200, "\(r.body)")
                return ((r.json["message"] as? [String: Any])?["content"] as? String ?? "", r.json["eval_count"] as? Int ?? -1)
            }
            let base = try await reply([:])
            #expect(try await reply([:]).text == base.text, "the same seed repeats the draw")
            #expect(try await reply(["seed": 12]).text != base.text)
            #expect(try await reply(["num_predict": 5]).count == 5)
            for (key, value) in [
                ("temperature", 0.0), ("top_k", 1), ("top_p", 0.05), ("min_p", 0.5), ("repeat_penalty", 1.8), ("presence_penalty", 1.9),
                ("frequency_penalty", 1.9),
            ] as [(String, Any)] {
                #expect(try await reply([key: value]).text != base.text, "options.\(key) changed nothing")
            }
            if base.text.count > 4 {
                let cut = String(base.text.dropFirst(2).prefix(2))
                let stopped = try await reply(["stop": [cut]])
                #expect(!stopped.text.contains(cut) && stopped.text.count < base.text.count, "\(stopped.text) vs \(base.text)")
            }
            try await harness.stop()
        }
    }

    @Test func generateWholeStreamedAndRaw() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let base: [String: Any] = [
                "model": "tiny", "prompt": "Once upon a time", "system": "Be brief.", "stream": false,
                "options": ["temperature": 0, "num_predict": 8],
            ]
            let whole = try await harness.send("/api/generate", json: base)
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.json["response"] is String)
            Self.checkFinal(whole.json)
            var stream = base
            stream["stream"] = true
            let streamed = try await harness.send("/api/generate", json: stream)
            let objects = Self.lines(streamed.body).compactMap { $0 }
            #expect(objects.map { $0["response"] as? String ?? "" }.joined() == whole.json["response"] as? String)
            var raw = base
            raw["raw"] = true
            raw["system"] = nil
            let rawReply = try await harness.send("/api/generate", json: raw)
            #expect(rawReply.status == 200, "\(rawReply.body)")
            Self.checkFinal(rawReply.json)
            // An empty prompt loads the model (Ollama's way to preload).
            let load = try await harness.send("/api/generate", json: ["model": "tiny"])
            #expect(load.json["done_reason"] as? String == "load", "\(load.body)")
            try await harness.stop()
        }
    }

    @Test func formatSchemaAndToolCalls() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let schema: [String: Any] = [
                "type": "object", "properties": ["name": ["type": "string", "maxLength": 6], "age": ["type": "integer", "minimum": 0, "maximum": 99]],
                "required": ["name", "age"], "additionalProperties": false,
            ]
            let reply = try await harness.send(
                "/api/chat", json: Self.chat(["format": schema, "options": ["temperature": 1, "seed": 5, "num_predict": 80]]))
            #expect(reply.status == 200, "\(reply.body)")
            let content = (reply.json["message"] as? [String: Any])?["content"] as? String ?? ""
            let object = parse(content)
            #expect(Set(object.keys) == ["name", "age"], "\(content)")
            #expect((object["age"] as? Int).map { (0...99).contains($0) } == true, "\(content)")

            let tools: [[String: Any]] = [[
                "type": "function",
                "function": [
                    "name": "get_weather", "description": "Weather in a city.",
                    "parameters": ["type": "object", "properties": ["city": ["type": "string", "maxLength": 10]], "required": ["city"]],
                ],
            ]]
            for stream in [false, true] {
                let body = Self.chat(["tools": tools, "options": ["tool_choice": "required", "temperature": 0, "num_predict": 400]], stream: stream)
                let called = try await harness.send("/api/chat", json: body)
                #expect(called.status == 200, "\(called.body)")
                let objects = stream ? Self.lines(called.body).compactMap { $0 } : [called.json]
                let calls = objects.compactMap { ($0["message"] as? [String: Any])?["tool_calls"] as? [[String: Any]] }.flatMap { $0 }
                #expect(calls.count >= 1, "\(called.body)")
                let function = calls.first?["function"] as? [String: Any] ?? [:]
                #expect(function["name"] as? String == "get_weather")
                #expect((function["arguments"] as? [String: Any])?["city"] is String, "\(called.body)")
            }
            // The call answered: the tool message is matched to the call by its name.
            let roundTrip = try await harness.send(
                "/api/chat",
                json: Self.chat([
                    "tools": tools,
                    "messages": [
                        ["role": "user", "content": "Weather in Paris?"],
                        ["role": "assistant", "content": "", "tool_calls": [["function": ["name": "get_weather", "arguments": ["city": "Paris"]]]]],
                        ["role": "tool", "tool_name": "get_weather", "content": "Sunny, 21 C"],
                    ],
                ]))
            #expect(roundTrip.status == 200, "\(roundTrip.body)")
            try await harness.stop()
        }
    }

    @Test func errorsAreOllamaShapedAndFieldsRefusedByName() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            func error(_ path: String, _ body: [String: Any]) async throws -> (Int, String) {
                let reply = try await harness.send(path, json: body)
                return (reply.status, reply.json["error"] as? String ?? "not a string error: \(reply.body)")
            }
            let unknown = try await error("/api/chat", Self.chat(["model": "nope"]))
            #expect(unknown.0 == 404 && unknown.1.contains("nope"), "\(unknown)")
            let images = try await error(
                "/api/chat", Self.chat(["messages": [["role": "user", "content": "look", "images": ["aGk="]]]]))
            #expect(images.0 == 400 && images.1.contains("images"), "\(images)")
            let typical = try await error("/api/chat", Self.chat(["options": ["typical_p": 0.5]]))
            #expect(typical.0 == 400 && typical.1.contains("typical_p"), "\(typical)")
            let format = try await error("/api/chat", Self.chat(["format": "yaml"]))
            #expect(format.0 == 400 && format.1.contains("format"), "\(format)")
            let missing = try await error("/api/generate", ["prompt": "x"])
            #expect(missing.0 == 400 && missing.1.contains("model"), "\(missing)")
            for (field, value) in [("suffix", "y"), ("template", "{{ .Prompt }}"), ("context", [1, 2]), ("images", ["aGk="])] as [(String, Any)] {
                let refused = try await error("/api/generate", ["model": "tiny", "prompt": "x", field: value])
                #expect(refused.0 == 400 && refused.1.hasPrefix(field), "\(refused)")
            }
            let unload = try await harness.send("/api/chat", json: ["model": "tiny", "messages": [Any](), "keep_alive": 0])
            #expect(unload.json["done_reason"] as? String == "unload", "\(unload.body)")
            let tooSmall = try await error("/api/chat", Self.chat(["options": ["num_ctx": 0]]))
            #expect(tooSmall.0 == 400 && tooSmall.1.contains("num_ctx"), "\(tooSmall)")
            let broken = try await harness.send(.POST, "/api/chat", body: "{not json")
            #expect(broken.status == 400 && broken.json["error"] is String, "\(broken.body)")
            // Fields Ollama does not define are ignored, as Ollama's server ignores them, and so
            // are hints (keep_alive, num_ctx, num_thread).
            var extra = Self.chat(["keep_alive": "5m", "not_an_ollama_field": 1])
            extra["options"] = ["num_predict": 4, "num_ctx": 2048, "num_thread": 8, "not_an_option": true]
            let ignored = try await harness.send("/api/chat", json: extra)
            #expect(ignored.status == 200, "\(ignored.body)")
            try await harness.stop()
        }
    }

    @Test func embedListShowPsVersion() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let embed = try await harness.send("/api/embed", json: ["model": "tiny", "input": ["Fire.", "Water and stone."]])
            #expect(embed.status == 200, "\(embed.body)")
            let vectors = embed.json["embeddings"] as? [[Double]] ?? []
            #expect(vectors.count == 2 && vectors[0].count == vectors[1].count && !vectors[0].isEmpty)
            #expect((embed.json["prompt_eval_count"] as? Int ?? 0) > 0)
            let legacy = try await harness.send("/api/embeddings", json: ["model": "tiny", "prompt": "Fire."])
            #expect((legacy.json["embedding"] as? [Double])?.count == vectors[0].count, "\(legacy.body)")

            let tags = try await harness.send(.GET, "/api/tags")
            let models = tags.json["models"] as? [[String: Any]] ?? []
            #expect(models.map { $0["name"] as? String } == ["tiny"], "\(tags.body)")
            #expect((models.first?["digest"] as? String)?.count == 64)
            #expect((models.first?["size"] as? Int ?? 0) > 0)
            #expect((models.first?["details"] as? [String: Any])?["format"] is String)

            let show = try await harness.send("/api/show", json: ["model": "tiny"])
            #expect(show.status == 200 && show.json["capabilities"] is [String] && show.json["model_info"] is [String: Any], "\(show.body)")
            let notShown = try await harness.send("/api/show", json: ["model": "nope"])
            #expect(notShown.status == 404 && notShown.json["error"] is String)

            // The model was loaded by the requests above: it is running.
            let ps = try await harness.send(.GET, "/api/ps")
            let running = ps.json["models"] as? [[String: Any]] ?? []
            #expect(running.first?["name"] as? String == "tiny" && (running.first?["context_length"] as? Int ?? 0) > 0, "\(ps.body)")
            let version = try await harness.send(.GET, "/api/version")
            #expect(version.json["version"] is String)
            // Without a store, pull and delete say so.
            #expect(try await harness.send("/api/pull", json: ["model": "a/b"]).status == 501)
            try await harness.stop()
        }
    }

    /// A store that records what it is asked and pulls two files in two steps each.
    final class FakeStore: ModelStore, @unchecked Sendable {
        // `@unchecked Sendable`: `names` is only touched under `lock`.
        let lock = NSLock()
        var names: [String] = []

        func pull(_ name: String, progress: @escaping @Sendable (ModelStoreProgress) -> Void) async throws {
            lock.withLock { names.append(name) }
            guard name.hasPrefix("org/") else { throw ModelStoreError(status: 404, message: "\(name) is not on the hub") }
            for file in ["model.gguf", "README.md"] {
                progress(ModelStoreProgress(file: file, completed: 0, total: 100))
                progress(ModelStoreProgress(file: file, completed: 100, total: 100))
            }
        }

        func delete(_ name: String) throws -> Bool { lock.withLock { names.contains(name) } }
    }

    @Test func pullStreamsProgressAndDeleteRemoves() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        let store = FakeStore()
        options.modelStore = store
        let harness = try await ServerHarness(options: options)
        try await withCleanup({ try? await harness.stop() }) {
            let streamed = try await harness.send("/api/pull", json: ["model": "org/repo:Q4_K_M"])
            let steps = Self.lines(streamed.body).compactMap { $0 }
            #expect(steps.first?["status"] as? String == "pulling manifest", "\(streamed.body)")
            #expect(steps.last?["status"] as? String == "success")
            let progress = steps.filter { $0["total"] != nil }
            #expect(progress.count == 4 && progress.allSatisfy { ($0["digest"] as? String)?.hasPrefix("sha256:") == true })
            let whole = try await harness.send("/api/pull", json: ["model": "org/repo", "stream": false])
            #expect(whole.status == 200 && whole.json["status"] as? String == "success", "\(whole.body)")
            let failed = try await harness.send("/api/pull", json: ["model": "x/y", "stream": false])
            #expect(failed.status == 404 && (failed.json["error"] as? String)?.contains("not on the hub") == true, "\(failed.body)")
            let failedStream = try await harness.send("/api/pull", json: ["model": "x/y"])
            #expect(Self.lines(failedStream.body).compactMap { $0 }.last?["error"] is String, "\(failedStream.body)")

            let deleted = try await harness.send(.DELETE, "/api/delete", body: #"{"model": "org/repo"}"#)
            #expect(deleted.status == 200, "\(deleted.body)")
            let absent = try await harness.send(.DELETE, "/api/delete", body: #"{"model": "org/none"}"#)
            #expect(absent.status == 404 && absent.json["error"] is String, "\(absent.body)")
            try await harness.stop()
        }
    }

    /// A client that stops reading an NDJSON stream loses its connection after the write
    /// timeout. (The shared pipeline writes into the translation without waiting, so its own
    /// watchdog never saw the stall: the answer was buffered and the connection held forever.)
    @Test func stalledReaderIsCutAfterTheWriteTimeout() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.writeTimeout = 1
        let harness = try await ServerHarness(context: 32768, parallel: 1, options: options)
        try await withCleanup({ try? await harness.stop() }) {
            let connection = try RawConnection(port: harness.port, receiveBuffer: 1024)
            let long: [String: Any] = [
                "type": "object",
                "properties": [
                    "s": ["type": "array", "items": ["type": "string", "pattern": "^[a-z ]{4000}$"], "minItems": 4, "maxItems": 4]
                ],
                "required": ["s"],
                "additionalProperties": false,
            ]
            try connection.post(
                "/api/chat",
                json: [
                    "model": "tiny", "messages": [["role": "user", "content": "Tell me a long story."]], "format": long,
                    "logprobs": true, "top_logprobs": 20, "options": ["num_predict": 32000, "temperature": 1, "seed": 3],
                ])
            // Never read: the socket buffers fill, the write waits, the timeout closes the connection.
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 1) == 1)
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, within: 60) == 0)
            try await Task.sleep(for: .seconds(3))
            var received = ""
            var closed = false
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                guard let piece = connection.receive(within: 3, limit: 1 << 22) else {
                    closed = true
                    break
                }
                received += piece
                if received.contains(#""done":true"#) { break }
            }
            #expect(closed, "the server never closed the stalled connection")
            #expect(!received.contains(#""done":true"#), "the whole answer was delivered after the stall (\(received.utf8.count) bytes)")
            #expect(received.hasPrefix("HTTP/1.1 200"), "\(received.prefix(600))")
            connection.close()
            try await harness.stop()
        }
    }

    /// `--ollama-port`: the same routes (and key) on a second listener.
    @Test func secondPortServesTheSameRoutes() async throws {
        var options = ServerOptions(port: 0, apiKey: "sesame", alias: "tiny")
        options.ollamaPort = 0
        let harness = try await ServerHarness(options: options)
        try await withCleanup({ try? await harness.stop() }) {
            var second = harness.server.ollamaPort
            for _ in 0..<100 where second == nil {
                try await Task.sleep(for: .milliseconds(20))
                second = harness.server.ollamaPort
            }
            let port = try #require(second)
            #expect(port != harness.port)
            let client = ServerHarness.Client(port: port)
            #expect(try await client.send(.GET, "/api/tags").status == 401)
            let tags = try await client.send(.GET, "/api/tags", headers: [("authorization", "Bearer sesame")])
            #expect(tags.status == 200 && (tags.json["models"] as? [Any])?.count == 1, "\(tags.body)")
            let reply = try await client.send("/api/chat", json: Self.chat(), headers: [("authorization", "Bearer sesame")])
            #expect(reply.status == 200 && reply.json["done"] as? Bool == true, "\(reply.body)")
            try await harness.stop()
        }
    }

    @Test func keyAppliesAndThePageIsServed() async throws {
        let harness = try await ServerHarness(options: ServerOptions(port: 0, apiKey: "sesame", alias: "tiny"))
        try await withCleanup({ try? await harness.stop() }) {
            let refused = try await harness.send(.GET, "/api/tags")
            #expect(refused.status == 401 && refused.json["error"] is String, "\(refused.body)")
            let refusedChat = try await harness.send("/api/chat", json: Self.chat())
            #expect(refusedChat.status == 401 && refusedChat.json["error"] is String, "\(refusedChat.body)")
            let allowed = try await harness.send(.GET, "/api/tags", headers: [("authorization", "Bearer sesame")])
            #expect(allowed.status == 200)
            let unknownRoute = try await harness.send(.GET, "/api/nothing", headers: [("authorization", "Bearer sesame")])
            #expect(unknownRoute.status == 404 && unknownRoute.json["error"] is String, "\(unknownRoute.body)")

            // The page needs no key (it asks for one and sends it with each call).
            for path in ["/", "/chat"] {
                let page = try await harness.send(.GET, path)
                #expect(page.status == 200)
                #expect(page.headers.first(name: "content-type") == "text/html; charset=utf-8")
                let policy = page.headers.first(name: "content-security-policy") ?? ""
                #expect(policy.contains("default-src 'none'") && policy.contains("connect-src 'self'"), "\(policy)")
                #expect(page.body.contains("<title>Hearth chat</title>"))
                // Self-contained: no URL to another host, no external script, style or font.
                #expect(!page.body.contains("src=\"http") && !page.body.contains("href=\"http") && !page.body.contains("@import"))
            }
            try await harness.stop()
        }
        var options = ServerOptions(port: 0, alias: "tiny")
        options.webUI = false
        let plain = try await ServerHarness(options: options)
        try await withCleanup({ try? await plain.stop() }) {
            #expect(try await plain.send(.GET, "/").status == 404)
            try await plain.stop()
        }
    }
}

/// `think` on the reasoning fixture (Tests/Fixtures/phi4-mini-reasoning-tiny, as
/// ReasoningServerTests uses it): the reasoning comes back apart, as Ollama's `thinking`, whole
/// and streamed, never in the content; `think: false` turns it off.
@Suite(.serialized) struct OllamaThinkTests {
    @Test func thinkingIsApartWholeAndStreamed() async throws {
        let harness = try await ServerHarness(context: 128, checkpoint: ReasoningServerTests.fixture)
        try await withCleanup({ try? await harness.stop() }) {
            let body: [String: Any] = [
                "model": "tiny", "messages": [["role": "user", "content": "Hi"]], "think": true, "stream": false,
                "options": ["temperature": 0, "num_predict": 24],
            ]
            let whole = try await harness.send("/api/chat", json: body)
            #expect(whole.status == 200, "\(whole.body)")
            let message = whole.json["message"] as? [String: Any] ?? [:]
            let thinking = message["thinking"] as? String ?? ""
            #expect(!thinking.isEmpty, "\(whole.body)")
            #expect(!(message["content"] as? String ?? "").contains("<think>"))
            var streamed = body
            streamed["stream"] = true
            let reply = try await harness.send("/api/chat", json: streamed)
            let lines = OllamaAPITests.lines(reply.body).compactMap { $0 }
            let pieces = lines.map { ($0["message"] as? [String: Any])?["thinking"] as? String ?? "" }.joined()
            #expect(pieces == thinking, "\(reply.body)")
            var off = body
            off["think"] = false
            let plain = try await harness.send("/api/chat", json: off)
            #expect(plain.status == 200 && (plain.json["message"] as? [String: Any])?["thinking"] == nil, "\(plain.body)")
            let generated = try await harness.send(
                "/api/generate", json: ["model": "tiny", "prompt": "Hi", "think": true, "stream": false, "options": ["temperature": 0, "num_predict": 24]])
            #expect(!(generated.json["thinking"] as? String ?? "").isEmpty, "\(generated.body)")
            try await harness.stop()
        }
    }
}
