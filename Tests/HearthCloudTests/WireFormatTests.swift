import Foundation
import HearthProviders
import Testing

@testable import HearthCloud

/// The pieces under the providers: the event-stream parser, error mapping, retry delays,
/// request bodies, credentials and redaction.
@Suite struct WireFormatTests {
    func parseAll(_ pieces: [[UInt8]]) throws -> [ServerSentEvent] {
        var parser = ServerSentEventParser()
        var events: [ServerSentEvent] = []
        for piece in pieces { events += try parser.feed(piece) }
        return events + parser.finish()
    }

    @Test func parserHandlesEveryLineEndingFieldAndComment() throws {
        let text = "\u{FEFF}: comment\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata:no space\rdata: second line\r\rid: 7\nretry: 10\ndata: [DONE]\n\n"
        let events = try parseAll([Array(text.utf8)])
        #expect(
            events == [
                ServerSentEvent(name: "message_start", data: "{\"a\":1}"),
                ServerSentEvent(name: nil, data: "no space\nsecond line"),
                ServerSentEvent(name: nil, data: "[DONE]"),
            ])
    }

    @Test func parserGivesTheSameEventsForEverySplitPoint() throws {
        let text = "data: {\"t\":\"héllo 世界 🎉\"}\r\n\r\nevent: x\r\ndata: 2\r\n\r\n"
        let whole = try parseAll([Array(text.utf8)])
        let bytes = Array(text.utf8)
        for cut in 1..<bytes.count {
            #expect(try parseAll([Array(bytes[..<cut]), Array(bytes[cut...])]) == whole, "split at \(cut)")
        }
        #expect(try parseAll(bytes.map { [$0] }) == whole)
    }

    @Test func parserDispatchesACompleteLastEventWithoutBlankLine() throws {
        #expect(try parseAll([Array("data: [DONE]\n".utf8)]) == [ServerSentEvent(name: nil, data: "[DONE]")])
    }

    @Test func parserRefusesEndlessLines() {
        var parser = ServerSentEventParser(maxLineBytes: 16)
        #expect(throws: ServerSentEventParser.LineTooLong.self) {
            _ = try parser.feed(Array(repeating: UInt8(ascii: "a"), count: 17))
        }
    }

    @Test(arguments: [
        (401, "{}", ProviderError.Code.unauthorized),
        (403, "{}", .unauthorized),
        (404, #"{"error":{"message":"The model `gpt-9` does not exist","code":"model_not_found"}}"#, .modelUnavailable),
        (404, "Not Found", .invalidRequest),
        (408, "", .timeout),
        (422, #"{"detail":"bad field"}"#, .invalidRequest),
        (500, "", .server(status: 500)),
        (529, "", .server(status: 529)),
        (
            400,
            #"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":4096}}"#,
            .contextLengthExceeded(tokens: 9000, limit: 4096)
        ),
        (
            400,
            #"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","code":400}"#,
            .contextLengthExceeded(tokens: 5000, limit: 4096)
        ),
        (400, #"{"error":"model 'llama9' not found, try pulling it first"}"#, .invalidRequest),
    ])
    func statusesAndBodiesMapToCodes(_ status: Int, _ body: String, _ expected: ProviderError.Code) {
        let mapper = HTTPFailureMapper(provider: "p", redactor: Redactor([]), credentialHint: "hint")
        #expect(mapper.error(status: status, retryAfter: nil, body: body).code == expected)
    }

    @Test func retryAfterAcceptsSecondsAndDates() throws {
        let now = try #require(HTTPDate.parse("Wed, 21 Oct 2015 07:28:00 GMT"))
        #expect(parseRetryAfter("2", now: now) == 2)
        #expect(parseRetryAfter("1.5", now: now) == 1.5)
        #expect(parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now: now) == 30)
        #expect(parseRetryAfter("Wed, 21 Oct 2015 07:00:00 GMT", now: now) == 0)
        #expect(parseRetryAfter("soon", now: now) == nil)
        #expect(parseRetryAfter(nil, now: now) == nil)
    }

    @Test func retryDelaysBackOffWithJitterAndHonourRetryAfter() {
        let policy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(100), maxDelay: .milliseconds(250))
        let network = ProviderError(.network, provider: "p", message: "")
        #expect(policy.delay(afterAttempt: 0, for: network, unit: 0) == .milliseconds(50))
        #expect(policy.delay(afterAttempt: 0, for: network, unit: 0.999_999)! > .milliseconds(99))
        #expect(policy.delay(afterAttempt: 1, for: network, unit: 0) == .milliseconds(100))
        #expect(policy.delay(afterAttempt: 2, for: network, unit: 0) == .milliseconds(125), "capped at 250 ms, halved")
        #expect(policy.delay(afterAttempt: 3, for: network, unit: 0) == nil, "out of attempts")
        let limited = ProviderError(.rateLimited(retryAfter: 3), provider: "p", message: "")
        #expect(policy.delay(afterAttempt: 0, for: limited, unit: 0) == .seconds(3))
        let tooLong = ProviderError(.rateLimited(retryAfter: 60), provider: "p", message: "")
        #expect(policy.delay(afterAttempt: 0, for: tooLong, unit: 0) == nil)
        for code in [ProviderError.Code.timeout, .unauthorized, .invalidRequest, .server(status: 400), .cancelled] {
            #expect(policy.delay(afterAttempt: 0, for: ProviderError(code, provider: "p", message: ""), unit: 0) == nil)
        }
        #expect(RetryPolicy.none.delay(afterAttempt: 0, for: network, unit: 0) == nil)
    }

    @Test func continuationStylesShapeTheOpenAIRequest() throws {
        var request = ChatRequest(messages: [.user("Count to five.")])
        request.continuation = "1, 2,"
        func body(_ style: ContinuationStyle) throws -> [String: Any] {
            let configuration = OpenAICompatibleProvider.Configuration(
                baseURL: "http://x/v1", model: "m", sendsExtendedSampling: true, continuationStyle: style)
            let data = try OpenAIWire.requestBody(request, configuration: configuration)
            return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }
        func messages(_ body: [String: Any]) -> [[String: Any]] { body["messages"] as? [[String: Any]] ?? [] }

        let plain = try body(.trailingAssistantMessage)
        #expect(messages(plain).count == 2)
        #expect(messages(plain).last?["role"] as? String == "assistant")
        #expect(messages(plain).last?["content"] as? String == "1, 2,")
        #expect(messages(try body(.deepSeekPrefix)).last?["prefix"] as? Bool == true)
        #expect(messages(try body(.qwenPartial)).last?["partial"] as? Bool == true)
        let vllm = try body(.vllmContinueFinalMessage)
        #expect(vllm["continue_final_message"] as? Bool == true && vllm["add_generation_prompt"] as? Bool == false)
        let instructed = messages(try body(.instruction("Go on.")))
        #expect(instructed.map { $0["role"] as? String } == ["user", "assistant", "user"])
        #expect(instructed.last?["content"] as? String == "Go on.")
    }

    @Test func extendedSamplingIsSentOnlyWhenEnabled() throws {
        let request = ChatRequest(
            messages: [.user("x")],
            options: ChatOptions(topK: 5, minP: 0.05, maxTokens: 9, repetitionPenalty: 1.1, presencePenalty: 0.3))
        func body(_ extended: Bool, _ field: String = "max_tokens") throws -> [String: Any] {
            let configuration = OpenAICompatibleProvider.Configuration(
                baseURL: "http://x/v1", model: "m", maxTokensField: field, sendsExtendedSampling: extended)
            return try #require(
                try JSONSerialization.jsonObject(with: OpenAIWire.requestBody(request, configuration: configuration))
                    as? [String: Any])
        }
        let on = try body(true)
        #expect(on["top_k"] as? Int == 5 && on["min_p"] as? Double == 0.05 && on["repetition_penalty"] as? Double == 1.1)
        let off = try body(false, "max_completion_tokens")
        #expect(off["top_k"] == nil && off["min_p"] == nil && off["repetition_penalty"] == nil)
        #expect(off["presence_penalty"] as? Double == 0.3)
        #expect(off["max_completion_tokens"] as? Int == 9 && off["max_tokens"] == nil)
    }

    @Test func credentialsComeFromTheFileAndTheEnvironmentWins() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hearth-creds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("providers.json")
        try Data(
            #"{"openai":{"apiKey":"sk-file","model":"gpt-file"},"spark":{"appID":"app-file","apiKey":"k","apiSecret":"s","domain":"4.0Ultra","url":"wss://spark-api.xf-yun.com/v4.0/chat"},"ollama":{"baseURL":"http://127.0.0.1:11434/v1","headers":{"X-Team":"a"}}}"#
                .utf8
        ).write(to: file)
        let credentials = try CloudCredentials.load(environment: ["OPENAI_API_KEY": "sk-env", "SPARK_APP_ID": "app-env"], file: file)
        #expect(credentials["openai"].apiKey == CloudSecret("sk-env"))
        #expect(credentials["openai"].model == "gpt-file")
        #expect(credentials["spark"].appID == "app-env")
        #expect(credentials["ollama"].headers == ["X-Team": "a"])
        #expect(credentials["missing"].apiKey == nil)
        let spark = SparkProvider.fromCredentials(credentials)
        #expect(spark.configuration.domain == "4.0Ultra")
        #expect(spark.configuration.url.hasSuffix("/v4.0/chat"))
        #expect(OpenAICompatibleProvider.openAI(credentials: credentials).configuration.model == "gpt-file")

        try Data(#"{"openai":{"apiKey":31337}}"#.utf8).write(to: file)
        let error = try #require(throws: ProviderError.self) { try CloudCredentials.load(environment: [:], file: file) }
        #expect(error.message.contains("openai.apiKey"))
        #expect(error.message.contains(file.path))
        #expect(!error.message.replacingOccurrences(of: file.path, with: "").contains("31337"), "no value shown")

        let none = try CloudCredentials.load(environment: [:], file: directory.appendingPathComponent("absent.json"))
        #expect(none.entries.isEmpty)
        #expect(
            CloudCredentials.defaultFile(environment: ["HOME": "/home/u"]).path == "/home/u/.config/hearth/providers.json")
        #expect(CloudCredentials.defaultFile(environment: ["XDG_CONFIG_HOME": "/x"]).path == "/x/hearth/providers.json")
    }

    @Test func secretsNeverPrint() {
        let secret = CloudSecret("sk-very-secret-value")
        var dumped = ""
        dump(secret, to: &dumped)
        for text in ["\(secret)", String(describing: secret), String(reflecting: secret), dumped] {
            #expect(!text.contains("very-secret"))
        }
        let redactor = Redactor(["sk-very-secret-value", nil, "abc"])
        #expect(redactor("key sk-very-secret-value and abc") == "key [redacted] and abc")
    }
}
