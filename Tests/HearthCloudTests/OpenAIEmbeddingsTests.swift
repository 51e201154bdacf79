import Foundation
import HearthFakeServers
import HearthProviders
import NIOHTTP1
import Testing

@testable import HearthCloud

/// `OpenAICompatibleProvider.embed` against a fake `/v1/embeddings` on a loopback socket.
@Suite struct OpenAIEmbeddingsTests {
    static let key = "sk-test-9b8c7d6e5f4a3b2c"

    func provider(_ server: TestHTTPServer, retry: RetryPolicy = quickRetry, embeddingModel: String? = "embed-test")
        -> OpenAICompatibleProvider
    {
        OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: server.baseURL, apiKey: CloudSecret(Self.key), requiresAPIKey: true,
                model: "gpt-test", headers: ["OpenAI-Organization": "org-hearth"], timeouts: testTimeouts, retry: retry,
                embeddingModel: embeddingModel))
    }

    /// An OpenAI embeddings reply body for `vectors` (listed in `order` of their indices).
    static func reply(_ vectors: [[Float]], order: [Int]? = nil, promptTokens: Int? = 7) -> String {
        let data = (order ?? Array(vectors.indices)).map { index in
            ["object": "embedding", "index": index, "embedding": vectors[index]] as [String: Any]
        }
        var body: [String: Any] = ["object": "list", "data": data, "model": "embed-test"]
        if let promptTokens { body["usage"] = ["prompt_tokens": promptTokens, "total_tokens": promptTokens] }
        return jsonString(body)
    }

    static func serve(_ status: Int = 200, contentType: String = "application/json", body: String) async throws -> TestHTTPServer {
        try await TestHTTPServer.start { _, _, out in
            try await out.respond(status, status == 200 ? "OK" : "Error", headers: [("Content-Type", contentType)], body: body)
            return .close
        }
    }

    @Test func postsTheTextsAndReadsTheVectorsInIndexOrder() async throws {
        let vectors: [[Float]] = [[0.25, -0.5, 1], [0, 1.5, -2], [3, 2, 1]]
        let server = try await Self.serve(body: Self.reply(vectors, order: [2, 0, 1], promptTokens: 11))
        let response = try await provider(server).embed(EmbeddingRequest(texts: ["a", "b c", "東京"], dimensions: 3))
        await server.stop()
        #expect(response.vectors == vectors)
        #expect(response.promptTokens == 11 && response.provider == "openai" && response.dimensions == 3)

        let sent = try #require(server.requests.first)
        #expect(sent.method == "POST" && sent.uri == "/v1/embeddings")
        #expect(sent.headers.first(name: "authorization") == "Bearer \(Self.key)")
        #expect(sent.headers.first(name: "openai-organization") == "org-hearth")
        #expect(sent.headers.first(name: "content-type") == "application/json")
        let body = try #require(sent.json)
        #expect(body["input"] as? [String] == ["a", "b c", "東京"])
        #expect(body["encoding_format"] as? String == "float")
        #expect(body["model"] as? String == "embed-test")
        #expect(body["dimensions"] as? Int == 3)
    }

    @Test func modelNamesAndTokenInputs() async throws {
        let server = try await Self.serve(body: Self.reply([[1, 0], [0, 1]]))
        _ = try await provider(server).embed(EmbeddingRequest(inputs: [.tokens([1, 2, 3]), .tokens([4])], model: "mine"))
        _ = try await provider(server, embeddingModel: nil).embed(EmbeddingRequest(texts: ["x", "y"]))
        await server.stop()
        let first = try #require(server.requests.first?.json)
        #expect(first["model"] as? String == "mine")
        #expect(first["input"] as? [[Int]] == [[1, 2, 3], [4]])
        #expect(first["dimensions"] == nil)
        #expect(server.requests.last?.json?["model"] as? String == "gpt-test", "falls back to the chat model")
    }

    @Test func base64VectorsAndMissingUsageAreAccepted() async throws {
        let values: [Float] = [0.5, -1.25, 3e-8]
        var bytes: [UInt8] = []
        for value in values { withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 } }
        let body = #"{"data":[{"index":0,"embedding":"\#(Data(bytes).base64EncodedString())"}]}"#
        let server = try await Self.serve(body: body)
        let response = try await provider(server).embed(EmbeddingRequest(texts: ["x"]))
        await server.stop()
        #expect(response.vectors == [values] && response.promptTokens == 0)
    }

    /// Replies that are not one finite vector per input, all of one length, are `.decoding`.
    @Test(arguments: [
        ("no data", #"{"object":"list"}"#, "application/json"),
        ("too few", #"{"data":[{"index":0,"embedding":[1,2]}]}"#, "application/json"),
        ("repeated index", #"{"data":[{"index":0,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}"#, "application/json"),
        ("index out of range", #"{"data":[{"index":0,"embedding":[1,2]},{"index":5,"embedding":[3,4]}]}"#, "application/json"),
        ("lengths differ", #"{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[3]}]}"#, "application/json"),
        ("empty vectors", #"{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[]}]}"#, "application/json"),
        ("not numbers", #"{"data":[{"index":0,"embedding":["a"]},{"index":1,"embedding":[1]}]}"#, "application/json"),
        ("bad base64", #"{"data":[{"index":0,"embedding":"%%%"},{"index":1,"embedding":[1]}]}"#, "application/json"),
        ("too large for Float", #"{"data":[{"index":0,"embedding":[1e300]},{"index":1,"embedding":[1]}]}"#, "application/json"),
        ("not JSON", "<html>portal</html>", "text/html"),
        ("truncated", #"{"data":[{"index":0,"embed"#, "application/json"),
    ])
    func malformedRepliesAreDecodingErrors(_ name: String, _ body: String, _ contentType: String) async throws {
        let server = try await Self.serve(contentType: contentType, body: body)
        let error = await #expect(throws: ProviderError.self) {
            try await provider(server).embed(EmbeddingRequest(texts: ["x", "y"]))
        }
        await server.stop()
        #expect(error?.code == .decoding, "\(name): \(String(describing: error))")
        #expect(server.requests.count == 1, "\(name): a malformed reply is not retried")
    }

    @Test func wrongDimensionsIsADecodingError() async throws {
        let server = try await Self.serve(body: Self.reply([[1, 2, 3]]))
        let error = await #expect(throws: ProviderError.self) {
            try await provider(server).embed(EmbeddingRequest(texts: ["x"], dimensions: 2))
        }
        await server.stop()
        #expect(error?.code == .decoding && error?.message.contains("2 asked for") == true)
    }

    @Test func httpErrorsMapAsForChat() async throws {
        let unauthorized = try await Self.serve(401, body: #"{"error":{"message":"Incorrect API key provided: \#(Self.key)","type":"invalid_request_error","code":"invalid_api_key"}}"#)
        let denied = await #expect(throws: ProviderError.self) { try await provider(unauthorized).embed(EmbeddingRequest(texts: ["x"])) }
        await unauthorized.stop()
        #expect(denied?.code == .unauthorized && denied?.message.contains(Self.key) == false)
        #expect(unauthorized.requests.count == 1)

        let tooLong = try await Self.serve(400, body: #"{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9100 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#)
        let overflow = await #expect(throws: ProviderError.self) { try await provider(tooLong).embed(EmbeddingRequest(texts: ["x"])) }
        await tooLong.stop()
        #expect(overflow?.code == .contextLengthExceeded(tokens: 9100, limit: 8192))

        let badDimensions = try await Self.serve(400, body: #"{"error":{"message":"This model does not support specifying dimensions.","type":"invalid_request_error","param":"dimensions"}}"#)
        let refused = await #expect(throws: ProviderError.self) {
            try await provider(badDimensions).embed(EmbeddingRequest(texts: ["x"], dimensions: 8))
        }
        await badDimensions.stop()
        #expect(refused?.code == .invalidRequest && refused?.message.contains("dimensions") == true)

        let inBody = try await Self.serve(body: #"{"error":{"message":"overloaded","type":"server_error"}}"#)
        let failed = await #expect(throws: ProviderError.self) { try await provider(inBody, retry: .none).embed(EmbeddingRequest(texts: ["x"])) }
        await inBody.stop()
        #expect(failed?.code == .server(status: 500))
    }

    @Test func serverErrorsAreRetried() async throws {
        let server = try await TestHTTPServer.start { _, index, out in
            if index < 2 {
                try await out.respond(index == 0 ? 500 : 503, "Error", body: #"{"error":{"message":"busy"}}"#)
            } else {
                try await out.respond(200, "OK", headers: [("Content-Type", "application/json")], body: Self.reply([[1, 2]]))
            }
            return .close
        }
        let response = try await provider(server).embed(EmbeddingRequest(texts: ["x"]))
        await server.stop()
        #expect(response.vectors == [[1, 2]] && server.requests.count == 3)
    }

    @Test func refusesBeforeSending() async throws {
        let server = try await Self.serve(body: Self.reply([[1]]))
        let mixed = await #expect(throws: ProviderError.self) {
            try await provider(server).embed(EmbeddingRequest(inputs: [.text("x"), .tokens([1])]))
        }
        #expect(mixed?.code == .invalidRequest)
        let empty = await #expect(throws: ProviderError.self) { try await provider(server).embed(EmbeddingRequest(texts: [])) }
        #expect(empty?.code == .invalidRequest)
        let keyless = OpenAICompatibleProvider(
            .init(id: "openai", baseURL: server.baseURL, requiresAPIKey: true, model: "m", timeouts: testTimeouts))
        let missing = await #expect(throws: ProviderError.self) { try await keyless.embed(EmbeddingRequest(texts: ["x"])) }
        #expect(missing?.code == .unauthorized)
        await server.stop()
        #expect(server.requests.isEmpty)
    }

    @Test func aSilentServerTimesOut() async throws {
        let server = try await TestHTTPServer.start { _, _, _ in .waitForClientClose }
        let silent = OpenAICompatibleProvider(
            .init(
                id: "openai", baseURL: server.baseURL, model: "m",
                timeouts: CloudTimeouts(connect: .seconds(2), idle: .milliseconds(300)), retry: .none))
        let error = await #expect(throws: ProviderError.self) { try await silent.embed(EmbeddingRequest(texts: ["x"])) }
        await server.stop()
        #expect(error?.code == .timeout)
    }

    /// Through a router: the cloud fails with a 503 (after its retries), a local embedder serves.
    @Test func routerFallsBackToTheNextEmbedder() async throws {
        let server = try await Self.serve(503, body: #"{"error":{"message":"down"}}"#)
        let local = FixedEmbedder()
        let router = FallbackRouter(providers: [provider(server), local])
        let response = try await router.embed(EmbeddingRequest(texts: ["x", "y"]))
        await server.stop()
        #expect(response.provider == "local" && response.vectors == [[1, 0], [1, 0]])
        #expect(server.requests.count == quickRetry.maxAttempts)
    }

    @Test func refusedConnectionFailsOver() async throws {
        let port = try await closedPort()
        let cloud = OpenAICompatibleProvider(
            .init(id: "openai", baseURL: "http://127.0.0.1:\(port)/v1", model: "m", timeouts: testTimeouts, retry: .none))
        let response = try await FallbackRouter(providers: [cloud, FixedEmbedder()]).embed(EmbeddingRequest(texts: ["x"]))
        #expect(response.provider == "local")
    }
}

/// A local stand-in that embeds every input as `[1, 0]`.
struct FixedEmbedder: LanguageModelProvider, EmbeddingProvider {
    let id = "local"
    var availability: ProviderAvailability { get async { .available } }
    func stream(_ request: ChatRequest) -> AsyncThrowingStream<ChatEvent, Error> { AsyncThrowingStream { $0.finish() } }
    func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse {
        EmbeddingResponse(vectors: request.inputs.map { _ in [1, 0] }, promptTokens: 1, provider: id)
    }
}
