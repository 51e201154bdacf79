import AsyncHTTPClient
import Foundation
import HearthLocal
import HearthProviders
import HearthServer
import HearthTestSupport
import NIOCore
import Testing

/// `hearth serve` in-process on real loopback sockets, over a fixture model and the real engine.
@Suite(.serialized) struct ServerTests {
    nonisolated(unsafe) static let user: [String: Any] = ["role": "user", "content": "How do I bake bread?"]

    @Test func chatCompletionMatchesTheProviderAndReportsUsage() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let health = try await harness.send(.GET, "/health")
            #expect(health.status == 200 && health.json["status"] as? String == "ok")

            let reply = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "temperature": 0, "max_tokens": 12])
            #expect(reply.status == 200)
            let json = reply.json
            #expect(json["object"] as? String == "chat.completion")
            let choice = (json["choices"] as? [[String: Any]])?.first
            let text = (choice?["message"] as? [String: Any])?["content"] as? String
            #expect(choice?["finish_reason"] as? String == "length")
            let usage = json["usage"] as? [String: Any]
            #expect(usage?["completion_tokens"] as? Int == 12)
            #expect((usage?["prompt_tokens"] as? Int ?? 0) > 0)
            #expect((usage?["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] is Int)

            // The same greedy request straight through the provider protocol gives the same text.
            let direct = LocalProvider(
                configuration: .init(modelPath: Fixtures.checkpoint("phi3-mha").path, context: 512, threads: 1, batch: 16))
            let expected = try await direct.complete(
                ChatRequest(messages: [.user("How do I bake bread?")], options: ChatOptions(temperature: 0, maxTokens: 12)))
            #expect(text == expected.text)
            #expect(text?.isEmpty == false)

            // Asking again reuses the cached prompt.
            let again = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "temperature": 0, "max_tokens": 12])
            let cached = ((again.json["usage"] as? [String: Any])?["prompt_tokens_details"] as? [String: Any])?["cached_tokens"] as? Int
            #expect((cached ?? 0) > 0)
            try await harness.stop()
        }
    }

    @Test func streamingChatIsFramedAsSSEWithUsageAndDone() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let body: [String: Any] = [
                "model": "tiny", "messages": [Self.user], "temperature": 0, "max_tokens": 10, "stream": true,
                "stream_options": ["include_usage": true], "logprobs": true, "top_logprobs": 2,
            ]
            let reply = try await harness.send("/v1/chat/completions", json: body)
            #expect(reply.status == 200)
            #expect(reply.headers["content-type"].first == "text/event-stream")
            let (payloads, wellFramed) = sseData(reply.body)
            #expect(wellFramed)
            #expect(payloads.last == "[DONE]")
            let chunks = payloads.dropLast().map(parse)
            #expect(chunks.allSatisfy { $0["object"] as? String == "chat.completion.chunk" })
            var text = ""
            var logprobEntries = 0
            for chunk in chunks {
                guard let choice = (chunk["choices"] as? [[String: Any]])?.first else { continue }
                text += (choice["delta"] as? [String: Any])?["content"] as? String ?? ""
                if let content = (choice["logprobs"] as? [String: Any])?["content"] as? [[String: Any]] {
                    logprobEntries += content.count
                    #expect(content.allSatisfy { ($0["top_logprobs"] as? [Any])?.count == 2 && $0["logprob"] is Double })
                }
            }
            #expect(logprobEntries == 10)
            let finish = chunks.compactMap { ($0["choices"] as? [[String: Any]])?.first?["finish_reason"] as? String }
            #expect(finish == ["length"])
            let usageChunk = chunks.last
            #expect((usageChunk?["choices"] as? [Any])?.isEmpty == true)
            #expect((usageChunk?["usage"] as? [String: Any])?["completion_tokens"] as? Int == 10)

            let whole = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "temperature": 0, "max_tokens": 10])
            let wholeText = ((whole.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String
            #expect(text == wholeText)
            try await harness.stop()
        }
    }

    @Test func anthropicMessagesAndCompletionsAndTokenize() async throws {
        let harness = try await ServerHarness()
        try await withCleanup({ try? await harness.stop() }) {
            let messages: [String: Any] = [
                "model": "tiny", "max_tokens": 8, "system": "You are terse.", "messages": [Self.user], "temperature": 0,
            ]
            let whole = try await harness.send("/v1/messages", json: messages)
            #expect(whole.status == 200)
            #expect(whole.json["type"] as? String == "message")
            #expect(whole.json["stop_reason"] as? String == "max_tokens")
            #expect((whole.json["usage"] as? [String: Any])?["output_tokens"] as? Int == 8)
            var streamed = messages
            streamed["stream"] = true
            let stream = try await harness.send("/v1/messages", json: streamed)
            let events = stream.body.components(separatedBy: "\n\n").compactMap { frame in
                frame.split(separator: "\n").first.flatMap { $0.hasPrefix("event: ") ? String($0.dropFirst(7)) : nil }
            }
            #expect(events.first == "message_start")
            #expect(events.last == "message_stop")
            #expect(events.contains("content_block_delta") && events.contains("message_delta"))

            let completion = try await harness.send(
                "/v1/completions", json: ["model": "tiny", "prompt": "Once upon a time", "max_tokens": 5, "temperature": 0, "logprobs": 1])
            #expect(completion.status == 200)
            #expect(completion.json["object"] as? String == "text_completion")
            let logprobs = (completion.json["choices"] as? [[String: Any]])?.first?["logprobs"] as? [String: Any]
            #expect((logprobs?["tokens"] as? [Any])?.count == 5)

            let tokens = try await harness.send("/tokenize", json: ["content": "Hello world"])
            let ids = tokens.json["tokens"] as? [Int] ?? []
            #expect(!ids.isEmpty)
            let text = try await harness.send("/detokenize", json: ["tokens": ids])
            // SentencePiece encodes a leading "▁" word boundary; decoding gives it back as one space.
            let decoded = text.json["content"] as? String ?? ""
            #expect(decoded == "Hello world" || decoded == " Hello world", "\(decoded)")
            let bad = try await harness.send("/detokenize", json: ["tokens": [99_999_999]])
            #expect(bad.status == 400)
            // With pieces (llama-server's shape): each id with its text, or its bytes where they are
            // not UTF-8 alone; the pieces put together are the text (after SentencePiece's space).
            let sample = "Hello wörld 世界"
            let plain = try await harness.send("/tokenize", json: ["content": sample]).json["tokens"] as? [Int] ?? []
            let pieced = try await harness.send("/tokenize", json: ["content": sample, "with_pieces": true])
            let entries = pieced.json["tokens"] as? [[String: Any]] ?? []
            #expect(entries.compactMap { $0["id"] as? Int } == plain && !plain.isEmpty)
            var joined: [UInt8] = []
            for entry in entries {
                if let piece = entry["piece"] as? String {
                    joined += Array(piece.utf8)
                } else if let bytes = entry["piece"] as? [Int] {
                    #expect(String(validating: bytes.map { UInt8($0) }, as: UTF8.self) == nil, "a byte piece that is valid UTF-8")
                    joined += bytes.map { UInt8($0) }
                } else {
                    Issue.record("a piece that is neither a string nor bytes: \(entry)")
                }
            }
            #expect(joined == Array(sample.utf8) || joined == Array((" " + sample).utf8), "\(entries)")
            let models = try await harness.send(.GET, "/v1/models")
            let entry = (models.json["data"] as? [[String: Any]])?.first
            #expect(entry?["id"] as? String == "tiny")
            // The local model says how it computes: the default activation bits and the kernel level.
            let meta = entry?["meta"] as? [String: Any]
            #expect(meta?["activation_bits"] as? String == "outliers", "\(models.body)")
            #expect((meta?["activations"] as? String)?.hasPrefix("outliers: ") == true, "\(models.body)")
            #expect((meta?["kernels"] as? String)?.isEmpty == false, "\(models.body)")
            try await harness.stop()
        }
    }

    @Test func badRequestsAreJSONErrorsNamingTheField() async throws {
        var options = ServerOptions(port: 0, alias: "tiny")
        options.maxBodyBytes = 4096
        let harness = try await ServerHarness(context: 64, options: options)
        try await withCleanup({ try? await harness.stop() }) {
            func check(_ body: String, status: Int, param: String?, code: String? = nil, path: String = "/v1/chat/completions") async throws {
                let reply = try await harness.send(.POST, path, body: body)
                #expect(reply.status == status, "\(body.prefix(80)) → \(reply.status) \(reply.body)")
                let error = reply.json["error"] as? [String: Any]
                #expect(error?["message"] is String, "\(reply.body)")
                if let param { #expect(error?["param"] as? String == param, "\(reply.body)") }
                if let code { #expect(error?["code"] as? String == code, "\(reply.body)") }
            }
            let messages = #""messages":[{"role":"user","content":"hi"}]"#
            try await check("{not json", status: 400, param: "body", code: "invalid_json")
            try await check("[1,2]", status: 400, param: "body")
            try await check(#"{"model":"tiny"}"#, status: 400, param: "messages")
            try await check(#"{"model":"tiny",\#(messages),"temperature":"hot"}"#, status: 400, param: "temperature", code: "invalid_type")
            try await check(#"{"model":"tiny",\#(messages),"temperature":-1}"#, status: 400, param: "temperature")
            try await check(#"{"model":"tiny",\#(messages),"max_tokens":-5}"#, status: 400, param: "max_tokens")
            try await check(#"{"model":"tiny",\#(messages),"max_tokens":1e300}"#, status: 400, param: "max_tokens")
            try await check(#"{"model":"tiny",\#(messages),"n":9}"#, status: 400, param: "n")
            try await check(#"{"model":"tiny",\#(messages),"n":9223372036854775807}"#, status: 400, param: "n")
            try await check(#"{"model":"tiny",\#(messages),"max_tokens":9223372036854775808}"#, status: 400, param: "max_tokens")
            try await check(#"{"model":"tiny","max_tokens":1e19,\#(messages)}"#, status: 400, param: "max_tokens", path: "/v1/messages")
            try await check(#"{"model":"tiny",\#(messages),"seed":-1e300}"#, status: 400, param: "seed")
            try await check(#"{"model":"tiny",\#(messages),"stream":"yes"}"#, status: 400, param: "stream", code: "invalid_type")
            try await check(#"{"model":"tiny",\#(messages),"stop":["a",3]}"#, status: 400, param: "stop[1]")
            try await check(#"{"model":"tiny","messages":[{"role":"wizard","content":"hi"}]}"#, status: 400, param: "messages[0].role")
            try await check(#"{"model":"tiny","messages":[{"role":"user","content":7}]}"#, status: 400, param: "messages[0].content")
            try await check(#"{"model":"gpt-9",\#(messages)}"#, status: 404, param: "model", code: "model_not_found")
            try await check(#"{"model":"tiny","max_tokens":4,"messages":[]}"#, status: 400, param: "messages", path: "/v1/messages")
            try await check(#"{"model":"tiny",\#(messages)}"#, status: 400, param: "max_tokens", path: "/v1/messages")
            // Invalid UTF-8.
            var request = HTTPClientRequest(url: harness.base + "/v1/chat/completions")
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: Array(#"{"model":"tiny","messages":[{"role":"user","content":""#.utf8) + [0xFF, 0xFE] + Array(#""}]}"#.utf8)))
            let invalid = try await ServerHarness.client.execute(request, timeout: .seconds(30))
            #expect(invalid.status.code == 400)
            // A prompt longer than the context: 400 with both counts, never truncated.
            let long = String(repeating: "bread and butter ", count: 40)
            let overflow = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": long]]])
            #expect(overflow.status == 400)
            let error = overflow.json["error"] as? [String: Any]
            #expect(error?["code"] as? String == "context_length_exceeded")
            #expect((error?["message"] as? String)?.contains("64 tokens") == true)
            // Too large a body: 413.
            let huge = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [["role": "user", "content": String(repeating: "x", count: 10_000)]]])
            #expect(huge.status == 413)
            // Unknown route.
            let missing = try await harness.send(.GET, "/v2/nothing")
            #expect(missing.status == 404)
            #expect((missing.json["error"] as? [String: Any])?["code"] as? String == "not_found", "\(missing.body)")
            // The server still answers correctly.
            let ok = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 3])
            #expect(ok.status == 200)
            try await harness.stop()
        }
    }

    @Test func apiKeyIsRequiredEverywhereButHealthAndLive() async throws {
        let harness = try await ServerHarness(options: ServerOptions(port: 0, apiKey: "s3cret-key", alias: "tiny"))
        try await withCleanup({ try? await harness.stop() }) {
            #expect(try await harness.send(.GET, "/health").status == 200)
            #expect(try await harness.send(.GET, "/live").status == 200)
            for path in ["/v1/models", "/metrics"] {
                #expect(try await harness.send(.GET, path).status == 401)
                #expect(try await harness.send(.GET, path, headers: [("authorization", "Bearer wrong")]).status == 401)
                #expect(try await harness.send(.GET, path, headers: [("authorization", "Bearer s3cret-key")]).status == 200)
            }
            let body: [String: Any] = ["model": "tiny", "messages": [Self.user], "max_tokens": 2]
            let denied = try await harness.send("/v1/chat/completions", json: body)
            #expect(denied.status == 401)
            #expect(!denied.body.contains("s3cret"))
            #expect(try await harness.send("/v1/chat/completions", json: body, headers: [("authorization", "Bearer s3cret-key")]).status == 200)
            #expect(try await harness.send("/v1/messages", json: ["model": "tiny", "max_tokens": 2, "messages": [Self.user]], headers: [("x-api-key", "s3cret-key")]).status == 200)
            try await harness.stop()
        }
    }

    /// Beyond --max-queue: 503 with Retry-After; the admitted request still completes.
    @Test func fullQueueIsRefusedWithRetryAfter() async throws {
        let harness = try await ServerHarness(context: 32768, parallel: 1, options: ServerOptions(port: 0, maxQueue: 0, alias: "tiny"))
        try await withCleanup({ try? await harness.stop() }) {
            var request = HTTPClientRequest(url: harness.base + "/v1/chat/completions")
            request.method = .POST
            let body = try JSONSerialization.data(withJSONObject: [
                "model": "tiny", "messages": [Self.user], "max_tokens": 32000, "stream": true, "temperature": 1, "seed": 1,
                "ignore_eos": true,  // holds the slot whatever is sampled
            ] as [String: Any])
            request.body = .bytes(ByteBuffer(bytes: body))
            let first = try await ServerHarness.client.execute(request, timeout: .seconds(60))
            #expect(first.status == .ok)
            let second = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2])
            #expect(second.status == 503)
            #expect(second.headers["retry-after"].first != nil)
            #expect((second.json["error"] as? [String: Any])?["code"] as? String == "queue_full")
            // Leave the first stream after a few bytes (disconnect frees the slot), then the queue admits again.
            for try await _ in first.body { break }
            var status = 0
            for _ in 0..<200 {
                status = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2]).status
                if status == 200 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(status == 200)
            try await harness.stop()
        }
    }

    /// A client that drops mid-stream stops its sequence: the running count returns to 0 long
    /// before the requested tokens could have been generated, and the next request is correct.
    @Test func clientDisconnectCancelsTheGeneration() async throws {
        let harness = try await ServerHarness(context: 32768, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            let expected = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 6, "temperature": 0])
            var request = HTTPClientRequest(url: harness.base + "/v1/chat/completions")
            request.method = .POST
            let body = try JSONSerialization.data(withJSONObject: [
                "model": "tiny", "messages": [["role": "user", "content": "Tell me a long story."]], "max_tokens": 32000, "stream": true,
                "temperature": 1, "seed": 3, "min_p": 0, "top_k": 0, "ignore_eos": true,
            ] as [String: Any])
            request.body = .bytes(ByteBuffer(bytes: body))
            let task = Task {
                let response = try await ServerHarness.client.execute(request, timeout: .seconds(60))
                var received = 0
                for try await chunk in response.body {
                    received += chunk.readableBytes
                    if received > 600 { return }  // leave mid-stream: the connection is closed
                }
            }
            try await task.value
            let deadline = ContinuousClock.now + .seconds(10)
            var running = 1.0
            while ContinuousClock.now < deadline {
                running = try await harness.metric("hearth_requests_admitted") ?? -1
                if running == 0 { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(running == 0)
            // The scheduler frees the sequence at its next decode step, just after the request ends.
            #expect(try await Self.waitFor(harness, "hearth_requests_running", is: 0) == 0)
            // 499: the generation was cut short (a natural end would have been counted as 200).
            #expect(try await harness.metric(#"hearth_requests_total{endpoint="/v1/chat/completions",status="499"}"#) == 1)
            // The sequence stopped early: its slot holds far fewer than prompt + 32000 tokens.
            let usage = try #require(try await harness.metric("hearth_kv_cache_usage_ratio"))
            #expect(usage < 0.9, "cache usage \(usage): the generation ran on after the client left")
            let next = try await harness.send(
                "/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 6, "temperature": 0])
            #expect(next.status == 200)
            #expect(next.body.contains(
                ((expected.json["choices"] as? [[String: Any]])?.first?["message"] as? [String: Any])?["content"] as? String ?? "<none>"))
            try await harness.stop()
        }
    }

    /// Graceful shutdown: /health turns 503 and new work is refused while an in-flight stream finishes.
    @Test func shutdownDrainsInFlightRequests() async throws {
        let harness = try await ServerHarness(context: 32768, parallel: 1)
        try await withCleanup({ try? await harness.stop() }) {
            var request = HTTPClientRequest(url: harness.base + "/v1/completions")
            request.method = .POST
            let body = try JSONSerialization.data(withJSONObject: [
                // ignore_eos: a sampled end token would finish the stream ("stop") before the
                // shutdown it is meant to outlast (it did, with seed 5, once the default
                // activations changed the tiny model's prompt arithmetic).
                "model": "tiny", "prompt": "Once upon a time", "max_tokens": 500, "stream": true, "temperature": 1, "seed": 5, "min_p": 0, "top_k": 0,
                "ignore_eos": true,
            ] as [String: Any])
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await ServerHarness.client.execute(request, timeout: .seconds(60))
            let stop = Task { try await harness.stop() }
            var sawDraining = false
            // Polls for at most 10 s (a health call that does not answer within 1 s is retried),
            // so the stream's body is read before the server's write timeout could cut it.
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline {
                let health = try? await harness.send(.GET, "/health", timeout: 1)
                if health?.status == 503 {
                    sawDraining = true
                    break
                }
                try await Task.sleep(for: .milliseconds(5))
            }
            let collected = try await response.body.collect(upTo: 64 << 20)
            let text = String(buffer: collected)
            #expect(text.hasSuffix("data: [DONE]\n\n"))
            try await stop.value
            #expect(sawDraining)
            #expect(text.contains("\"finish_reason\":\"length\""), "the in-flight stream was not allowed to finish")
            #expect(harness.server.inFlightCount == 0)
        }
    }

    /// Past the grace period, in-flight streams are cancelled (an error event ends them) and `run` returns.
    @Test func shutdownCancelsWhatOutlastsTheGracePeriod() async throws {
        let harness = try await ServerHarness(
            context: 4096, parallel: 1, options: ServerOptions(port: 0, alias: "tiny", drainGrace: 0.3))
        try await withCleanup({ try? await harness.stop() }) {
            var request = HTTPClientRequest(url: harness.base + "/v1/completions")
            request.method = .POST
            let body = try JSONSerialization.data(withJSONObject: [
                "model": "tiny", "prompt": "Once upon a time", "max_tokens": 32000, "stream": true, "temperature": 1, "seed": 5, "min_p": 0,
                "top_k": 0, "ignore_eos": true,
            ] as [String: Any])
            request.body = .bytes(ByteBuffer(bytes: body))
            let response = try await ServerHarness.client.execute(request, timeout: .seconds(60))
            let started = ContinuousClock.now
            try await harness.stop()
            #expect(ContinuousClock.now - started < .seconds(5))
            let text = String(buffer: try await response.body.collect(upTo: 64 << 20))
            #expect(text.contains("\"error\""), "\(text.suffix(300))")
            #expect(!text.contains("\"finish_reason\":\"length\""))
        }
    }
}
