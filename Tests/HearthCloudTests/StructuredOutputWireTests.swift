import Foundation
import HearthFakeServers
import HearthProviders
import Testing

@testable import HearthCloud

/// Response formats on the wire: each cloud provider sends the format its API has (checked in
/// the body the fake server received), and refuses the rest with `.unsupported` before any
/// request is sent; the router carries the format to the local model when it fails over.
@Suite struct StructuredOutputWireTests {
    /// Keys deliberately out of alphabetical order: the body must keep them as written.
    static let schema = #"{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"integer","minimum":0}},"required":["zeta","alpha"],"additionalProperties":false}"#
    static let answer = #"{"zeta":"z","alpha":1}"#

    func request(_ format: ResponseFormat) -> ChatRequest {
        ChatRequest(messages: [.user("Give me JSON.")], options: ChatOptions(maxTokens: 64, responseFormat: format))
    }

    func answering() async throws -> TestHTTPServer {
        try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.stream([Array(openAIStream([Self.answer]).utf8)])
            try await out.end()
            return .close
        }
    }

    func openAI(_ server: TestHTTPServer, id: String = "openai", support: StructuredOutputSupport = .openAI) -> OpenAICompatibleProvider {
        OpenAICompatibleProvider(
            .init(
                id: id, baseURL: server.baseURL, apiKey: CloudSecret("sk-test"), requiresAPIKey: true, model: "gpt-test",
                timeouts: testTimeouts, retry: quickRetry, structuredOutput: support))
    }

    @Test func openAISendsAJSONSchemaWithItsKeyOrderKept() async throws {
        let server = try await answering()
        let format = ResponseFormat.jsonSchema(name: "pair", schema: Self.schema, strict: true, description: "two fields")
        let result = await collect(openAI(server).stream(request(format)))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == Self.answer)
        let sent = try #require(server.requests.first)
        let body = try #require(sent.json)
        let responseFormat = try #require(body["response_format"] as? [String: Any])
        #expect(responseFormat["type"] as? String == "json_schema")
        let inner = try #require(responseFormat["json_schema"] as? [String: Any])
        #expect(inner["name"] as? String == "pair")
        #expect(inner["strict"] as? Bool == true)
        #expect(inner["description"] as? String == "two fields")
        let schema = try #require(inner["schema"] as? [String: Any])
        #expect((schema["required"] as? [String]) == ["zeta", "alpha"])
        // The schema's own text, in its order (a dictionary would have sorted alpha first).
        #expect(sent.body.contains(#""schema":\#(Self.schema)"#))
    }

    /// `logit_bias` goes to OpenAI-compatible APIs as sent; the Anthropic API, which has no such
    /// field, refuses it before sending.
    @Test func logitBiasIsSentOrRefused() async throws {
        let server = try await answering()
        var biased = request(.text)
        biased.options.logitBias = [42: -100, 7: 2.5]
        let result = await collect(openAI(server).stream(biased))
        #expect(result.error == nil)
        let body = try #require(server.requests.first?.json)
        let bias = try #require(body["logit_bias"] as? [String: Double])
        #expect(bias == ["42": -100, "7": 2.5])
        let refused = await collect(anthropic(server).stream(biased))
        await server.stop()
        #expect(server.requests.count == 1)
        if case .unsupported(let feature)? = (refused.error as? ProviderError)?.code {
            #expect(feature == "logit_bias")
        } else {
            Issue.record("anthropic did not refuse logit_bias: \(String(describing: refused.error))")
        }
    }

    @Test func openAISendsJSONMode() async throws {
        let server = try await answering()
        let result = await collect(openAI(server).stream(request(.jsonObject)))
        await server.stop()
        #expect(result.error == nil)
        let body = try #require(server.requests.first?.json)
        #expect((body["response_format"] as? [String: Any])?["type"] as? String == "json_object")
    }

    @Test func plainTextSendsNoFormat() async throws {
        let server = try await answering()
        _ = await collect(openAI(server).stream(request(.text)))
        await server.stop()
        let body = try #require(server.requests.first?.json)
        #expect(body["response_format"] == nil && body["grammar"] == nil)
    }

    @Test(arguments: [ResponseFormat.regex("[0-9]{3}"), .grammar(#"root ::= "yes" | "no""#)])
    func openAIRefusesPatternsAndGrammarsBeforeSending(_ format: ResponseFormat) async throws {
        let server = try await answering()
        let result = await collect(openAI(server).stream(request(format)))
        await server.stop()
        #expect(result.providerError?.code == .unsupported(feature: "response_format \(format.kind)"))
        #expect(result.providerError?.message.contains(format.kind) == true)
        #expect(server.requests.isEmpty)
    }

    @Test func jsonModeOnlyEndpointsRefuseASchema() async throws {
        let server = try await answering()
        let deepSeekLike = openAI(server, id: "deepseek", support: .jsonObject)
        let refused = await collect(deepSeekLike.stream(request(.jsonSchema(name: "pair", schema: Self.schema))))
        let allowed = await collect(deepSeekLike.stream(request(.jsonObject)))
        await server.stop()
        #expect(refused.providerError?.code == .unsupported(feature: "response_format json_schema"))
        #expect(refused.providerError?.message.contains("json_object") == true)
        #expect(allowed.error == nil)
        #expect(server.requests.count == 1)
    }

    @Test func llamaCppTakesAGrammar() async throws {
        let server = try await answering()
        let grammar = #"root ::= "yes" | "no""#
        let result = await collect(
            openAI(server, id: "llama.cpp", support: [.jsonObject, .jsonSchema, .gbnfGrammar]).stream(request(.grammar(grammar))))
        await server.stop()
        #expect(result.error == nil)
        #expect(server.requests.first?.json?["grammar"] as? String == grammar)
        #expect(OpenAICompatibleProvider.llamaCpp().configuration.structuredOutput.contains(.gbnfGrammar))
    }

    @Test func malformedSchemaIsAnInvalidRequestBeforeSending() async throws {
        let server = try await answering()
        let result = await collect(openAI(server).stream(request(.jsonSchema(name: "pair", schema: #"{"type": "object""#))))
        await server.stop()
        #expect(result.providerError?.code == .invalidRequest)
        #expect(result.providerError?.message.contains("not valid JSON") == true)
        #expect(server.requests.isEmpty)
    }

    // MARK: Anthropic

    func anthropic(_ server: TestHTTPServer) -> AnthropicProvider {
        AnthropicProvider(
            .init(baseURL: server.baseURL, apiKey: CloudSecret("sk-ant-test"), model: "claude-test", timeouts: testTimeouts, retry: quickRetry))
    }

    @Test func anthropicSendsOutputConfigFormat() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.stream([Array(AnthropicProviderTests.events([Self.answer]).utf8)])
            try await out.end()
            return .close
        }
        let result = await collect(anthropic(server).stream(request(.jsonSchema(name: "pair", schema: Self.schema))))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == Self.answer)
        let sent = try #require(server.requests.first)
        let body = try #require(sent.json)
        let format = try #require((body["output_config"] as? [String: Any])?["format"] as? [String: Any])
        #expect(format["type"] as? String == "json_schema")
        #expect(format["schema"] is [String: Any])
        #expect(sent.body.contains(#""schema":\#(Self.schema)"#))
        #expect(body["output_format"] == nil)  // the GA field, not the beta's
    }

    @Test(arguments: [ResponseFormat.jsonObject, .regex("a+"), .grammar(#"root ::= "a""#)])
    func anthropicRefusesWhatItHasNot(_ format: ResponseFormat) async throws {
        let server = try await answering()
        let result = await collect(anthropic(server).stream(request(format)))
        await server.stop()
        #expect(result.providerError?.code == .unsupported(feature: "response_format \(format.kind)"))
        #expect(server.requests.isEmpty)
    }

    // MARK: DashScope, Spark

    @Test func dashScopeSendsResponseFormatInParameters() throws {
        let configuration = DashScopeProvider.Configuration(baseURL: "http://127.0.0.1:1", apiKey: CloudSecret("k"), model: .max)
        func parameters(_ format: ResponseFormat) throws -> [String: Any] {
            let data = try DashScopeWire.requestBody(request(format), configuration: configuration)
            let body = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            return try #require(body["parameters"] as? [String: Any])
        }
        #expect((try parameters(.jsonObject)["response_format"] as? [String: Any])?["type"] as? String == "json_object")
        let schema = try #require(try parameters(.jsonSchema(name: "pair", schema: Self.schema))["response_format"] as? [String: Any])
        #expect(schema["type"] as? String == "json_schema")
        let inner = try #require(schema["json_schema"] as? [String: Any])
        #expect(inner["name"] as? String == "pair" && inner["strict"] as? Bool == true && inner["schema"] is [String: Any])
        #expect(throws: ProviderError.self) { try parameters(.regex("a")) }
    }

    @Test func dashScopeStreamsAJSONModeAnswer() async throws {
        let fake = try await FakeDashScopeGeneration.start(.init(apiKey: "sk-ds", answers: FakeAnswers(["JSON": Self.answer])))
        let provider = DashScopeProvider(
            .init(baseURL: fake.baseURL, apiKey: CloudSecret("sk-ds"), model: .max, timeouts: testTimeouts, retry: quickRetry))
        let result = await collect(
            provider.stream(ChatRequest(messages: [.user("JSON")], options: ChatOptions(responseFormat: .jsonObject))))
        await fake.stop()
        #expect(result.error == nil)
        #expect(result.text == Self.answer)
        let parameters = try #require(fake.requests.first?.json?["parameters"] as? [String: Any])
        #expect((parameters["response_format"] as? [String: Any])?["type"] as? String == "json_object")
    }

    @Test func sparkRefusesEveryFormat() throws {
        let configuration = SparkProvider.Configuration(appID: "app", apiKey: CloudSecret("k"), apiSecret: CloudSecret("s"))
        for format in [ResponseFormat.jsonObject, .jsonSchema(name: "pair", schema: Self.schema), .regex("a"), .grammar("root ::= \"a\"")] {
            #expect(throws: ProviderError.self) { try SparkWire.requestBody(request(format), configuration: configuration, appID: "app") }
        }
        #expect(throws: Never.self) { try SparkWire.requestBody(request(.text), configuration: configuration, appID: "app") }
    }

    // MARK: The router keeps the format

    @Test func routerFailsOverAnUnsupportedFormatToTheLocalModelWithTheFormat() async throws {
        let server = try await answering()
        let local = RecordingProvider { _ in "123" }
        let router = FallbackRouter(providers: [openAI(server), local])
        let result = await collect(router.stream(request(.regex("[0-9]{3}"))))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == "123")
        #expect(result.switches.first?.reason.code == .unsupported(feature: "response_format regex"))
        #expect(local.lastRequest?.options.responseFormat == .regex("[0-9]{3}"))
        #expect(server.requests.isEmpty)
    }

    @Test func routerKeepsTheSchemaWhenTheCloudFailsMidAnswer() async throws {
        let server = try await TestHTTPServer.start { _, _, out in
            try await out.head(200, headers: [("Content-Type", "text/event-stream")])
            try await out.stream([Array((#"data: {"choices":[{"index":0,"delta":{"content":"{\"zeta\":"}}]}"# + "\n\n").utf8)])
            return .close  // the connection drops mid-answer
        }
        let local = RecordingProvider { _ in #""z","alpha":1}"# }
        let format = ResponseFormat.jsonSchema(name: "pair", schema: Self.schema)
        let router = FallbackRouter(providers: [openAI(server), local])
        let result = await collect(router.stream(request(format)))
        await server.stop()
        #expect(result.error == nil)
        #expect(result.text == Self.answer)
        let asked = try #require(local.lastRequest)
        #expect(asked.options.responseFormat == format)
        #expect(asked.continuation == #"{"zeta":"#)
    }
}
