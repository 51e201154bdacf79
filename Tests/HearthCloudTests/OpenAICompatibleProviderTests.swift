import Foundation
import HearthFakeServers
import HearthProviders
import NIOHTTP1
import Testing

@testable import HearthCloud

/// OpenAICompatibleProvider against a fake chat-completions server on a loopback socket.
@Suite struct OpenAICompatibleProviderTests {
    static let key = "sk-test-4f9a1c2b7e6d5a3f"
    let request = ChatRequest(
        messages: [.system("Be brief."), .user("Say hello in three languages.")],
        options: ChatOptions(temperature: 0.2, topP: 0.9, topK: 40, maxTokens: 64, stop: ["\n\n"], seed: 7))

    func provider(
        _ server: TestHTTPServer, retry: RetryPolicy = quickRetry, timeouts: CloudTimeouts = testTimeouts,
        style: ContinuationStyle = .trailingAssistantMessage
    ) -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: server.baseURL, apiKey: CloudSecret(Self.key), requiresAPIKey: true,
                model: "gpt-test", headers: ["OpenAI-Organization": "org-hearth"], continuationStyle: style,
                timeouts: timeouts, retry: retry))
    }

    @Test func streamsTextSplitAnywhereAcrossNetworkChunks() async throws {
        let pieces = ["Hello", ", Bonjour", ", 你好", " 👋", "!"]
        let wire = openAIStream(pieces).replacingOccurrences(of: "\n", with: "\r\n")
        // Breaks inside `data:`, inside "\r\n", inside the 3-byte 你 and the 4-byte 👋.
        let ni = Array(wire.utf8).firstIndex(of: 0xE4) ?? 0
        let wave = Array(wire.utf8).firstIndex(of: 0xF0) ?? 0
        let crlf = Array(wire.utf8).firstIndex(of: 0x0D) ?? 0
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.stream(split(wire, at: [3, crlf + 1, ni + 1, ni + 2, wave + 1, wave + 3, wire.utf8.count - 5]))
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()

        #expect(result.error == nil)
        #expect(result.text == "Hello, Bonjour, 你好 👋!")
        #expect(result.deltas == pieces)
        #expect(result.servedBy == ["openai"])
        #expect(result.finish == .stop)
        let usage = try #require(result.usage)
        #expect(usage.promptTokens == 12 && usage.completionTokens == 5 && usage.cachedPromptTokens == 4)
        #expect((usage.timeToFirstToken ?? -1) > 0)
        #expect((usage.tokensPerSecond ?? -1) > 0)

        let sent = try #require(server.requests.first)
        #expect(sent.method == "POST" && sent.uri == "/v1/chat/completions")
        #expect(sent.headers.first(name: "authorization") == "Bearer \(Self.key)")
        #expect(sent.headers.first(name: "openai-organization") == "org-hearth")
        #expect(sent.headers.first(name: "accept") == "text/event-stream")
        let body = try #require(sent.json)
        #expect(body["model"] as? String == "gpt-test")
        #expect(body["stream"] as? Bool == true)
        #expect((body["stream_options"] as? [String: Any])?["include_usage"] as? Bool == true)
        #expect(body["temperature"] as? Double == 0.2)
        #expect(body["top_p"] as? Double == 0.9)
        #expect(body["max_tokens"] as? Int == 64)
        #expect(body["seed"] as? Int == 7)
        #expect(body["stop"] as? [String] == ["\n\n"])
        #expect(body["top_k"] == nil, "extended sampling is off by default")
        let messages = try #require(body["messages"] as? [[String: String]])
        #expect(messages == [["role": "system", "content": "Be brief."], ["role": "user", "content": "Say hello in three languages."]])
    }

    @Test func everySingleByteSplitDecodesTheSame() async throws {
        let wire = openAIStream(["Grüße ", "aus ", "東京"])
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
            try await out.stream(split(wire, every: 7), pause: .milliseconds(2))
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "Grüße aus 東京")
    }

    @Test func unauthorizedIsNotRetriedAndNeverShowsTheKey() async throws {
        let server = try await TestHTTPServer.start { request, _, out in
            let echoed = request.headers.first(name: "authorization") ?? ""
            let body =
                #"{"error":{"message":"Incorrect API key provided: \#(echoed). You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#
            try await out.respond(401, "Unauthorized", headers: [("Content-Type", "application/json")], body: body)
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.provider == "openai")
        #expect(server.requests.count == 1)
        let everything = [error.description, error.message, "\(error)", String(describing: error.underlying)]
        for text in everything {
            #expect(!text.contains(Self.key), "the key leaked: \(text)")
        }
        #expect(error.message.contains("[redacted]"))
        #expect(error.message.contains("providers.json") || error.message.contains("API key"))
    }

    @Test func rateLimitWaitsForRetryAfterThenSucceeds() async throws {
        let server = try await TestHTTPServer.start { _, index, out in
            if index == 0 {
                try await out.respond(
                    429, "Too Many Requests", headers: [("Retry-After", "1"), ("Content-Type", "application/json")],
                    body: #"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#)
            } else {
                try await out.head(200, headers: [("Content-Type", "text/event-stream")])
                try await out.chunk(openAIStream(["ok"]))
                try await out.end()
            }
            return .close
        }
        let clock = ContinuousClock()
        let start = clock.now
        let result = await collect(provider(server).stream(request))
        let elapsed = clock.now - start
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "ok")
        #expect(server.requests.count == 2)
        #expect(elapsed >= .seconds(1), "Retry-After: 1 was honoured")
        #expect(elapsed < .seconds(30), "far below a second Retry-After wait")
    }

    @Test func rateLimitWithLongRetryAfterIsThrownAtOnce() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(429, "Too Many Requests", headers: [("Retry-After", "120")], body: "{}")
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .rateLimited(retryAfter: 120))
        #expect(server.requests.count == 1)
    }

    @Test func exhaustedQuotaIsNotRetried() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(
                429, "Too Many Requests",
                body: #"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#
            )
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .rateLimited(retryAfter: nil))
        #expect(result.providerError?.message.contains("quota") == true)
        #expect(server.requests.count == 1)
    }

    @Test func serverErrorsAreRetriedBeforeTheFirstByte() async throws {
        let server = try await TestHTTPServer.start { _, index, out in
            if index < 2 {
                try await out.respond(index == 0 ? 500 : 503, "Error", body: #"{"error":{"message":"The server had an error"}}"#)
            } else {
                try await out.head(200, headers: [("Content-Type", "text/event-stream")])
                try await out.chunk(openAIStream(["third time lucky"]))
                try await out.end()
            }
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "third time lucky")
        #expect(server.requests.count == 3)
    }

    @Test func serverErrorAfterTheLastAttemptIsThrown() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(502, "Bad Gateway", headers: [("Content-Type", "text/html")], body: "<html>bad gateway</html>")
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .server(status: 502))
        #expect(server.requests.count == quickRetry.maxAttempts)
    }

    @Test func contextOverflowBodyGivesTheCounts() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(
                400, "Bad Request",
                body: #"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#
            )
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .contextLengthExceeded(tokens: 9000, limit: 8192))
        #expect(result.providerError?.message.contains("allowTruncation") == true)
        #expect(server.requests.count == 1)
    }

    @Test func connectionDroppedMidAnswerIsANetworkErrorAndNotRetried() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            let wire = openAIStream(["The sky ", "is ", "blue"])
            let cut = try #require(wire.range(of: "blue"))
            // Everything up to the middle of the third event, then the connection just ends
            // (no last chunk).
            try await out.stream(split(String(wire[..<cut.lowerBound]), every: 50))
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "The sky is ")
        #expect(result.providerError?.code == .network)
        #expect(result.finish == nil)
        #expect(server.requests.count == 1, "no retry once text was shown")
    }

    @Test func connectionDroppedBeforeTheFirstByteIsRetried() async throws {
        let server = try await TestHTTPServer.start { _, index, out in
            if index == 0 { return .close }  // accept, read the request, hang up
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(openAIStream(["recovered"]))
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "recovered")
        #expect(server.requests.count == 2)
    }

    @Test func silentServerHitsTheIdleTimeout() async throws {
        let server = try await TestHTTPServer.start { _, _, _ in .waitForClientClose }
        let clock = ContinuousClock()
        let start = clock.now
        let timeouts = CloudTimeouts(connect: .seconds(2), idle: .milliseconds(400))
        let result = await collect(provider(server, timeouts: timeouts).stream(request))
        let elapsed = clock.now - start
        await server.stop()
        #expect(result.providerError?.code == .timeout)
        #expect(result.providerError?.message.contains("sent nothing") == true)
        #expect(elapsed >= .milliseconds(400) && elapsed < .seconds(14), "the idle timeout fired; the collect limit is 15 s")
        #expect(server.requests.count == 1, "a silent server is not retried")
    }

    @Test func serverThatGoesSilentMidAnswerHitsTheIdleTimeout() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(#"data: {"choices":[{"index":0,"delta":{"content":"Thinking"}}]}"# + "\n\n")
            return .waitForClientClose
        }
        let timeouts = CloudTimeouts(connect: .seconds(2), idle: .milliseconds(400))
        let result = await collect(provider(server, timeouts: timeouts).stream(request))
        await server.stop()
        #expect(result.text == "Thinking")
        #expect(result.providerError?.code == .timeout)
    }

    @Test func cancellingTheConsumerClosesTheConnection() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            for number in 0..<100 {  // 10 s at most if nobody cancels
                try await out.chunk(#"data: {"choices":[{"index":0,"delta":{"content":"\#(number) "}}]}"# + "\n\n")
                try await Task.sleep(for: .milliseconds(100))
            }
            try await out.end()
            return .close
        }
        let provider = provider(server)
        let consumer = Task {
            var deltas = 0
            for try await event in provider.stream(request) {
                if case .textDelta = event { deltas += 1 }
                if deltas == 2 { break }
            }
            return deltas
        }
        #expect(try await consumer.value == 2)
        let stoppedAt = ContinuousClock.now
        var waited = 0
        while server.endTime(of: 0) == nil && waited < 300 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        let ended = try #require(server.endTime(of: 0), "the server never saw the connection close")
        #expect(ended - stoppedAt < .seconds(5))
        await server.stop()
    }

    @Test func errorObjectInsideTheStreamIsMapped() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(#"data: {"choices":[{"index":0,"delta":{"content":"Partial"}}]}"# + "\n\n")
            try await out.chunk(#"data: {"error":{"message":"The model is overloaded","type":"server_error"}}"# + "\n\n")
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "Partial")
        #expect(result.providerError?.code == .server(status: 500))
        #expect(result.providerError?.message.contains("overloaded") == true)
    }

    @Test func plainJSONReplyFromAServerThatIgnoresStreaming() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(
                200, "OK", headers: [("Content-Type", "application/json")],
                body: #"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Whole answer."},"finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#
            )
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "Whole answer.")
        #expect(result.finish == .length)
        #expect(result.usage?.completionTokens == 2)
    }

    @Test func captivePortalPageIsADecodingError() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(200, "OK", headers: [("Content-Type", "text/html")], body: "<html>Log in to Wi-Fi</html>")
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .decoding)
    }

    @Test func streamWithoutDoneButWithFinishReasonCompletes() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(
                #"data: {"choices":[{"index":0,"delta":{"content":"Short"},"finish_reason":"stop"}]}"# + "\n\n")
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "Short")
        #expect(result.finish == .stop)
    }

    @Test func missingKeyFailsWithoutTouchingTheNetwork() async throws {
        let provider = OpenAICompatibleProvider.openAI(credentials: CloudCredentials())
        #expect(await provider.availability == .unavailable(.unauthorized))
        let result = await collect(provider.stream(request))
        #expect(result.providerError?.code == .unauthorized)
        #expect(result.providerError?.message.contains("OPENAI_API_KEY") == true)
    }

    @Test func completeCollectsTheWholeReply() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(openAIStream(["One", " two"], finish: "length"))
            try await out.end()
            return .close
        }
        let response = try await provider(server).complete(request)
        await server.stop()
        #expect(response.text == "One two")
        #expect(response.finishReason == .length)
        #expect(response.provider == "openai")
        #expect(response.usage?.promptTokens == 12)
    }
}
