import Foundation
import HearthFakeServers
import HearthLocal
import HearthProviders
import HearthServer
import HearthTestSupport
import Logging
import Testing

/// The one request pipeline: the Responses API, fields every request needs, bad input, the
/// metrics under `--config`, and a gateway of cloud routes only.
@Suite(.serialized) struct PipelineTests {
    nonisolated(unsafe) static let user: [String: Any] = ["role": "user", "content": "Hello"]

    @Test func requestsWithoutAModelAreRefusedNamingTheField() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let chat = try await harness.send("/v1/chat/completions", json: ["messages": [Self.user], "max_tokens": 2])
            #expect(chat.status == 400)
            let error = chat.json["error"] as? [String: Any]
            #expect(error?["param"] as? String == "model" && error?["code"] as? String == "missing_field", "\(chat.body)")
            let messages = try await harness.send("/v1/messages", json: ["messages": [Self.user], "max_tokens": 2])
            #expect(messages.status == 400)
            #expect(messages.json["type"] as? String == "error", "\(messages.body)")
            #expect((messages.json["error"] as? [String: Any])?["param"] as? String == "model")
            let responses = try await harness.send("/v1/responses", json: ["input": "Hello"])
            #expect(responses.status == 400 && (responses.json["error"] as? [String: Any])?["param"] as? String == "model")
            try await harness.stop()
        }
    }

    /// `/v1/messages` answers carry the usage fields Anthropic's current schema requires, and
    /// text blocks in its shape.
    @Test func anthropicAnswersCarryEveryRequiredUsageField() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send("/v1/messages", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 3, "temperature": 0])
            #expect(reply.status == 200)
            let usage = reply.json["usage"] as? [String: Any] ?? [:]
            for key in ["input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "server_tool_use", "service_tier"] {
                #expect(usage[key] != nil, "usage lacks \(key): \(reply.body)")
            }
            let block = (reply.json["content"] as? [[String: Any]])?.first
            #expect(block?["type"] as? String == "text" && block?["text"] is String)
            try await harness.stop()
        }
    }

    /// The Responses API: the same text as chat completions for the same conversation, whole and
    /// streamed with the event order the official client reads; a stored-response id is refused.
    @Test func responsesAPIWholeAndStreamed() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let chat = try await harness.send(
                "/v1/chat/completions",
                json: ["model": "tiny", "messages": [["role": "system", "content": "Be brief."], Self.user], "max_tokens": 6, "temperature": 0])
            let expected = ((chat.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
            let body: [String: Any] = [
                "model": "tiny", "instructions": "Be brief.", "input": [["role": "user", "content": [["type": "input_text", "text": "Hello"]]]],
                "max_output_tokens": 6, "temperature": 0,
            ]
            let whole = try await harness.send("/v1/responses", json: body)
            #expect(whole.status == 200, "\(whole.body)")
            #expect(whole.json["object"] as? String == "response")
            #expect(whole.json["status"] as? String == "incomplete")  // stopped by max_output_tokens
            #expect((whole.json["incomplete_details"] as? [String: Any])?["reason"] as? String == "max_output_tokens")
            let output = (whole.json["output"] as? [[String: Any]])?.first
            let text = ((output?["content"] as? [[String: Any]])?.first)?["text"] as? String
            #expect(text != nil && text == expected, "\(whole.body) vs \(chat.body)")
            let usage = whole.json["usage"] as? [String: Any]
            #expect(usage?["output_tokens"] as? Int == 6)
            #expect((usage?["input_tokens"] as? Int ?? 0) > 0)

            var streamedBody = body
            streamedBody["stream"] = true
            let stream = try await harness.send("/v1/responses", json: streamedBody)
            #expect(stream.status == 200)
            var names: [String] = []
            var sequence: [Int] = []
            var deltas = ""
            var doneText: String?
            for frame in stream.body.components(separatedBy: "\n\n") where !frame.isEmpty {
                let lines = frame.split(separator: "\n")
                guard let eventLine = lines.first(where: { $0.hasPrefix("event: ") }), let dataLine = lines.first(where: { $0.hasPrefix("data: ") })
                else { continue }
                let name = String(eventLine.dropFirst(7))
                let payload = parse(String(dataLine.dropFirst(6)))
                #expect(payload["type"] as? String == name)
                names.append(name)
                sequence.append(payload["sequence_number"] as? Int ?? -1)
                if name == "response.output_text.delta" { deltas += payload["delta"] as? String ?? "" }
                if name == "response.output_text.done" { doneText = payload["text"] as? String }
            }
            let order = names.filter { $0 != "response.output_text.delta" }
            #expect(
                order == [
                    "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
                    "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete",
                ], "\(names)")
            #expect(sequence == Array(0..<sequence.count), "\(sequence)")
            #expect(deltas == expected && doneText == expected)

            let stored = try await harness.send("/v1/responses", json: ["model": "tiny", "input": "Hi", "previous_response_id": "resp_1"])
            #expect(stored.status == 400 && (stored.json["error"] as? [String: Any])?["param"] as? String == "previous_response_id")
            try await harness.stop()
        }
    }

    /// A prompt longer than the context on `/v1/responses`: a 400 whole, `response.failed` with
    /// `context_length_exceeded` streamed.
    @Test func responsesAPIReportsAnOverlongPrompt() async throws {
        let harness = try await ServerHarness(context: 64)
        try await withCleanup({ try? await harness.stop() }) {
            let long = String(repeating: "bread and butter ", count: 40)
            let whole = try await harness.send("/v1/responses", json: ["model": "tiny", "input": long])
            #expect(whole.status == 400 && (whole.json["error"] as? [String: Any])?["code"] as? String == "context_length_exceeded")
            let stream = try await harness.send("/v1/responses", json: ["model": "tiny", "input": long, "stream": true])
            #expect(stream.body.contains("event: response.failed"), "\(stream.body)")
            #expect(stream.body.contains("context_length_exceeded"))
            try await harness.stop()
        }
    }

    /// A chunked body whose chunk size is not hexadecimal: 400, and the server goes on.
    @Test func malformedChunkedBodyIsABadRequest() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let connection = try RawConnection(port: harness.port)
            try connection.send(
                "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{\"model\":\"tiny\"}\r\n0\r\n\r\n")
            let answer = connection.receive(within: 5) ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer.prefix(200))")
            connection.close()
            let ok = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2])
            #expect(ok.status == 200)
            try await harness.stop()
        }
    }

    /// A prompt of megabytes is refused after tokenizing about a context's worth of it, not all
    /// of it: refusing 3.9 MB takes no longer than refusing 130 KB (it took 30× as long when the
    /// whole text was tokenized first). The absolute time is measured on the release build by
    /// scripts/check_serve_clients.py.
    @Test func overlongPromptIsRefusedBeforeItIsAllTokenized() async throws {
        let provider = LocalProvider(
            configuration: .init(modelPath: Fixtures.checkpoint("phi3-mha").path, context: 64, threads: 1, batch: 16))
        try await provider.prewarm(nil)
        func refusal(_ text: String) async -> Duration {
            var fastest = Duration.seconds(60)
            for _ in 0..<3 {
                let started = ContinuousClock.now
                var refused = false
                do {
                    for try await _ in provider.generate(LocalProvider.LocalInput.chat([ChatMessage.user(text)]), options: ChatOptions(maxTokens: 2)) {}
                } catch {
                    if case .contextLengthExceeded? = (error as? ProviderError)?.code { refused = true }
                }
                #expect(refused)
                fastest = min(fastest, ContinuousClock.now - started)
            }
            return fastest
        }
        let words = String(repeating: "bread and butter with jam ", count: 150_000)  // 3.9 MB
        let small = await refusal(String(repeating: "bread and butter with jam ", count: 5_000))  // 130 KB
        let large = await refusal(words)
        #expect(large < small * 3 + .milliseconds(20), "3.9 MB refused after \(large), 130 KB after \(small)")
        // A prompt below context × the longest token's bytes is encoded with a limit: refused once
        // the count passes the context (the error says tokenizing stopped).
        let counted = LocalProvider(
            configuration: .init(modelPath: Fixtures.checkpoint("phi3-mha").path, context: 2048, threads: 1, batch: 16))
        try await counted.prewarm(nil)
        let middle = String(repeating: "bread and butter with jam ", count: 2_800)  // 73 KB
        var refusedByCount = false
        do {
            for try await _ in counted.generate(LocalProvider.LocalInput.chat([ChatMessage.user(middle)]), options: ChatOptions(maxTokens: 2)) {}
        } catch {
            if case .contextLengthExceeded? = (error as? ProviderError)?.code, (error as? ProviderError)?.message.contains("tokenizing stopped") == true {
                refusedByCount = true
            }
        }
        #expect(refusedByCount)
        // The same over HTTP: a 400 naming the context.
        let harness = try await ServerHarness(context: 64)
        try await withCleanup({ try? await harness.stop() }) {
            let reply = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": words]]])
            #expect(reply.status == 400 && (reply.json["error"] as? [String: Any])?["code"] as? String == "context_length_exceeded")
            try await harness.stop()
        }
    }

    /// Under `--config` the time-to-first-token and per-token histograms fill (they did not).
    @Test func latencyHistogramsFillUnderConfig() async throws {
        let s = try await GatewayTests.setup()
        try await withCleanup({ try? await s.stop() }) {
            let reply = try await s.send("/v1/chat/completions", GatewayTests.chat("local", "Hi", maxTokens: 4, stream: true), key: GatewayTests.opsKey)
            #expect(reply.status == 200)
            let headers = [("authorization", "Bearer \(GatewayTests.opsKey)")]
            #expect((try await s.harness.metric("hearth_time_to_first_token_seconds_count", headers: headers) ?? 0) >= 1)
            #expect((try await s.harness.metric("hearth_time_per_output_token_seconds_count", headers: headers) ?? 0) >= 3)
            try await s.stop()
        }
    }

    /// A configuration whose routes are all cloud providers starts without a model file.
    @Test func cloudOnlyGatewayStartsWithoutAModel() async throws {
        let upstream = try await fakeOpenAI()
        try await withCleanup({ await upstream.stop() }) {
            let key = "hk-cloud-only-3c5e7a9b1d2f4e6a"
            let config = """
                {"clients": [{"name": "app", "key_sha256": "\(sha256Hex(key))"}],
                 "models": {"cloud": {"provider": "openai", "model": "gpt-4o-mini"}}}
                """
            let environment = ["OPENAI_API_KEY": "sk-test-0000000000000000", "OPENAI_BASE_URL": upstream.baseURL]
            let configuration = try GatewayConfiguration.parse(Data(config.utf8), directory: FileManager.default.temporaryDirectory, environment: environment)
            let gateway = try Gateway(configuration: configuration, local: nil, environment: environment)
            var quiet = Logger(label: "test.cloud-only")
            quiet.logLevel = .warning
            let server = HearthServer(local: nil, options: ServerOptions(port: 0), logger: quiet, gateway: gateway)
            let (ready, readyContinuation) = AsyncStream<Int>.makeStream()
            let run = Task { try await server.run(gracefulShutdownSignals: []) { readyContinuation.yield($0) } }
            var iterator = ready.makeAsyncIterator()
            let port = try #require(await iterator.next())
            let harness = ServerHarness.Client(port: port)
            #expect(try await harness.send(.GET, "/health").status == 200)
            let auth = [("authorization", "Bearer \(key)")]
            let reply = try await harness.send(
                "/v1/chat/completions", json: ["model": "cloud", "messages": [Self.user], "max_tokens": 8], headers: auth)
            #expect(reply.status == 200, "\(reply.body)")
            #expect(reply.body.contains("pineapple"))
            // What only the local model serves is refused by name on a cloud route, never sent on and ignored.
            for (field, value) in [("ignore_eos", true as Any), ("n", 2 as Any), ("logprobs", true as Any)] {
                let refused = try await harness.send(
                    "/v1/chat/completions", json: ["model": "cloud", "messages": [Self.user], "max_tokens": 8, field: value],
                    headers: auth)
                #expect(refused.status == 400 && refused.body.contains("\"param\":\"\(field)\""), "\(field): \(refused.body)")
            }
            #expect(try await harness.send("/tokenize", json: ["content": "Hi"], headers: auth).status == 404)
            // A configuration that names the local model cannot start without one.
            let local = try GatewayConfiguration.parse(
                Data(#"{"clients": [{"name": "app", "key_sha256": "\#(sha256Hex(key))"}], "models": {"local": {"provider": "local"}}}"#.utf8),
                directory: FileManager.default.temporaryDirectory, environment: [:])
            #expect(throws: GatewayConfigurationError.self) { try Gateway(configuration: local, local: nil) }
            await server.shutdown()
            try await run.value
        }
    }

    /// `/v1/embeddings`: float and base64 encodings agree, vectors are unit length and do not
    /// depend on the rest of the batch; a foreign `dimensions` is refused by name.
    @Test func embeddingsInBothEncodings() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let texts = ["The cat sat on the mat.", "Bread needs flour, water, salt and time."]
            let batch = try await harness.send("/v1/embeddings", json: ["model": "tiny", "input": texts])
            #expect(batch.status == 200, "\(batch.body)")
            let data = batch.json["data"] as? [[String: Any]] ?? []
            let vectors = data.compactMap { ($0["embedding"] as? [Any])?.compactMap { ($0 as? NSNumber)?.doubleValue } }
            #expect(vectors.count == 2 && vectors[0].count == vectors[1].count && !vectors[0].isEmpty)
            for vector in vectors { #expect(abs(vector.reduce(0) { $0 + $1 * $1 } - 1) < 1e-4) }
            #expect(((batch.json["usage"] as? [String: Any])?["prompt_tokens"] as? Int ?? 0) > 0)
            let alone = try await harness.send("/v1/embeddings", json: ["model": "tiny", "input": texts[1], "encoding_format": "base64"])
            let encoded = ((alone.json["data"] as? [[String: Any]])?.first?["embedding"] as? String) ?? ""
            let bytes = Data(base64Encoded: encoded) ?? Data()
            let decoded: [Double] = stride(from: 0, to: bytes.count, by: 4).map { offset in
                Double(Float(bitPattern: bytes[offset..<offset + 4].enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }))
            }
            #expect(decoded.count == vectors[1].count)
            let cosine = zip(decoded, vectors[1]).reduce(0) { $0 + $1.0 * $1.1 }
            #expect(cosine >= 0.99999, "\(cosine)")
            let wrong = try await harness.send("/v1/embeddings", json: ["model": "tiny", "input": "x", "dimensions": 7])
            #expect(wrong.status == 400, "\(wrong.body)")
            let missing = try await harness.send("/v1/embeddings", json: ["input": "x"])
            #expect(missing.status == 400 && (missing.json["error"] as? [String: Any])?["param"] as? String == "model")
            try await harness.stop()
        }
    }
}
