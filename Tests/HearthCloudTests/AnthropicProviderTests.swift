import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// AnthropicProvider against a fake Messages API on a loopback socket.
@Suite struct AnthropicProviderTests {
    static let key = "sk-ant-api03-test-9f8e7d6c5b4a"
    let request = ChatRequest(
        messages: [.system("You are terse."), .system("Answer in English."), .user("Why is the sky blue?")],
        options: ChatOptions(temperature: 0.5, topK: 20, stop: ["END"]))

    func provider(_ server: TestHTTPServer, retry: RetryPolicy = quickRetry) -> AnthropicProvider {
        AnthropicProvider(
            .init(
                baseURL: server.baseURL, apiKey: CloudSecret(Self.key), model: "claude-test",
                headers: ["anthropic-beta": "test-beta"], timeouts: testTimeouts, retry: retry))
    }

    /// The event stream Anthropic documents, with `event:` lines, a ping and the usage fields.
    static func events(_ pieces: [String], stopReason: String = "end_turn") -> String {
        var text = """
            event: message_start
            data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_read_input_tokens":10,"output_tokens":1}}}

            event: content_block_start
            data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

            event: ping
            data: {"type": "ping"}


            """
        for piece in pieces {
            text += "event: content_block_delta\n"
            text += "data: \(jsonString(["type": "content_block_delta", "index": 0, "delta": ["type": "text_delta", "text": piece]]))\n\n"
        }
        text += """
            event: content_block_stop
            data: {"type":"content_block_stop","index":0}

            event: message_delta
            data: {"type":"message_delta","delta":{"stop_reason":"\(stopReason)","stop_sequence":null},"usage":{"output_tokens":15}}

            event: message_stop
            data: {"type":"message_stop"}


            """
        return text
    }

    @Test func streamsTheMessagesEvents() async throws {
        let wire = Self.events(["Rayleigh", " scattering", " — shorter wavelengths ", "scatter more ☀️."])
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream; charset=utf-8")])
            try await out.stream(split(wire, every: 37))
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()

        #expect(result.error == nil)
        #expect(result.text == "Rayleigh scattering — shorter wavelengths scatter more ☀️.")
        #expect(result.finish == .stop)
        #expect(result.usage?.promptTokens == 35)
        #expect(result.usage?.cachedPromptTokens == 10)
        #expect(result.usage?.completionTokens == 15)

        let sent = try #require(server.requests.first)
        #expect(sent.uri == "/v1/messages")
        #expect(sent.headers.first(name: "x-api-key") == Self.key)
        #expect(sent.headers.first(name: "anthropic-version") == "2023-06-01")
        #expect(sent.headers.first(name: "anthropic-beta") == "test-beta")
        #expect(sent.headers.first(name: "authorization") == nil)
        let body = try #require(sent.json)
        #expect(body["system"] as? String == "You are terse.\n\nAnswer in English.")
        #expect(body["messages"] as? [[String: String]] == [["role": "user", "content": "Why is the sky blue?"]])
        #expect(body["max_tokens"] as? Int == 4096)
        #expect(body["stream"] as? Bool == true)
        #expect(body["top_k"] as? Int == 20)
        #expect(body["stop_sequences"] as? [String] == ["END"])
    }

    @Test func maxTokensStopIsLength() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(Self.events(["cut"], stopReason: "max_tokens"))
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.finish == .length)
    }

    @Test func overloadedErrorEventMidStream() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            let start = Self.events(["Partial answer"]).components(separatedBy: "event: content_block_stop")[0]
            try await out.chunk(start)
            try await out.chunk(
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
            try await out.end()
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "Partial answer")
        #expect(result.providerError?.code == .server(status: 529))
        #expect(server.requests.count == 1, "no retry after text")
    }

    @Test func overloadedBeforeAnyTextIsRetried() async throws {
        let server = try await TestHTTPServer.start { _, index, out in
            if index == 0 {
                try await out.respond(
                    529, "Overloaded",
                    body: #"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            } else {
                try await out.head(200, headers: [("Content-Type", "text/event-stream")])
                try await out.chunk(Self.events(["fine"]))
                try await out.end()
            }
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.text == "fine")
        #expect(server.requests.count == 2)
    }

    @Test func authenticationErrorDoesNotLeakTheKey() async throws {
        let server = try await TestHTTPServer.start { request, _, out in
            let echoed = request.headers.first(name: "x-api-key") ?? ""
            try await out.respond(
                401, "Unauthorized",
                body: #"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key \#(echoed)"}}"#)
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        let error = try #require(result.providerError)
        #expect(error.code == .unauthorized)
        #expect(error.message.contains("ANTHROPIC_API_KEY"))
        for text in [error.description, "\(error)", String(describing: error.underlying)] {
            #expect(!text.contains(Self.key))
        }
    }

    @Test func promptTooLongGivesTheCounts() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.respond(
                400, "Bad Request",
                body: #"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#
            )
            return .close
        }
        let result = await collect(provider(server).stream(request))
        await server.stop()
        #expect(result.providerError?.code == .contextLengthExceeded(tokens: 208310, limit: 200000))
    }

    @Test func continuationIsAPrefilledAssistantTurn() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.chunk(Self.events([" ", " because of", " Rayleigh scattering."]))
            try await out.end()
            return .close
        }
        var continued = request
        continued.continuation = "The sky is blue \n"
        let result = await collect(provider(server).stream(continued))
        await server.stop()
        // The API rejects trailing whitespace in a prefill: it is cut, and the model's leading
        // whitespace is dropped because the consumer already has "… blue \n".
        let messages = try #require(server.requests.first?.json?["messages"] as? [[String: String]])
        #expect(messages.last == ["role": "assistant", "content": "The sky is blue"])
        #expect(result.text == "because of Rayleigh scattering.")
    }

    @Test func missingKeyIsUnauthorized() async {
        let anthropic = AnthropicProvider.fromCredentials(CloudCredentials())
        #expect(await anthropic.availability == .unavailable(.unauthorized))
        #expect(await collect(anthropic.stream(request)).providerError?.code == .unauthorized)
    }
}
