import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1

extension OpenAICompatibleProvider: EmbeddingProvider {
    /// Embedding vectors from the server's `POST {baseURL}/embeddings` (OpenAI's API, which
    /// vLLM, llama.cpp's server, Ollama and DashScope's compatible mode also serve).
    ///
    /// Sends `input` (the texts, or — when every input is token ids — arrays of ids),
    /// `encoding_format: "float"`, the model (the request's, else
    /// ``Configuration/embeddingModel``, else ``Configuration/model``) and `dimensions` when
    /// set (servers that cannot shorten vectors refuse it with a 400). Reads `data[].embedding`
    /// (in `index` order; base64 vectors are accepted too) and `usage.prompt_tokens` (0 when
    /// absent). Retries, timeouts and HTTP errors are handled as for chat.
    ///
    /// Throws ``ProviderError``: `.invalidRequest` for no or empty inputs or a mix of texts and
    /// token ids; `.decoding` when the reply is not one finite, non-empty vector per input,
    /// all of one length (of `dimensions` when asked); the codes of the HTTP status otherwise.
    public func embed(_ request: EmbeddingRequest) async throws -> EmbeddingResponse {
        let configuration = configuration
        let call = HTTPProviderCall(configuration, credentialHint: configuration.credentialHint)
        try request.validate(provider: id)
        if configuration.requiresAPIKey && configuration.apiKey == nil {
            throw ProviderError(
                .unauthorized, provider: id, message: "No API key is configured. \(configuration.credentialHint)")
        }
        let body = try OpenAIEmbeddingsWire.requestBody(request, configuration: configuration)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "accept", value: "application/json")
        headers.add(name: "user-agent", value: "Hearth")
        for (name, value) in call.headers { headers.replaceOrAdd(name: name, value: value) }
        if let key = configuration.apiKey { headers.replaceOrAdd(name: "authorization", value: "Bearer \(key.value)") }
        let post = HTTPStreamingPost(client: client, failures: call.failures)
        let url = joinURL(configuration.baseURL, "embeddings")
        let (count, dimensions) = (request.inputs.count, request.dimensions)
        return try await call.runner.call { [headers] watchdog in
            let response = try await post.send(url: url, headers: headers, body: body, watchdog: watchdog)
            let contentType = response.contentType
            let bytes = try await OpenAIWire.collect(
                response.body, limit: OpenAIEmbeddingsWire.maxReplyBytes, watchdog: watchdog, provider: post.failures.provider)
            return try OpenAIEmbeddingsWire.response(
                Data(bytes.readableBytesView), contentType: contentType, inputs: count, dimensions: dimensions,
                failures: post.failures)
        }
    }
}

/// The OpenAI embeddings wire format: the request JSON and the reply.
enum OpenAIEmbeddingsWire {
    /// Largest reply read (2 048 vectors of 3 072 floats as JSON text fit).
    static let maxReplyBytes = 256 << 20

    /// The body of `POST /embeddings`.
    struct Body: Encodable {
        enum Input: Encodable {
            case texts([String])
            case tokens([[Int32]])

            func encode(to encoder: any Encoder) throws {
                var container = encoder.singleValueContainer()
                switch self {
                case .texts(let texts): try container.encode(texts)
                case .tokens(let tokens): try container.encode(tokens)
                }
            }
        }
        var model: String
        var input: Input
        var encodingFormat = "float"
        var dimensions: Int?

        private enum CodingKeys: String, CodingKey {
            case model, input, dimensions
            case encodingFormat = "encoding_format"
        }
    }

    /// The JSON body for `request`; all texts or all token ids (the API takes one kind per request).
    static func requestBody(
        _ request: EmbeddingRequest, configuration: OpenAICompatibleProvider.Configuration
    ) throws -> Data {
        var texts: [String] = []
        var tokens: [[Int32]] = []
        for input in request.inputs {
            switch input {
            case .text(let text): texts.append(text)
            case .tokens(let ids): tokens.append(ids)
            }
        }
        guard texts.isEmpty || tokens.isEmpty else {
            throw ProviderError(
                .invalidRequest, provider: configuration.id,
                message: "`input` mixes texts and token ids; the embeddings API takes one kind per request. Split the request.")
        }
        let body = Body(
            model: request.model ?? configuration.embeddingModel ?? configuration.model,
            input: tokens.isEmpty ? .texts(texts) : .tokens(tokens), dimensions: request.dimensions)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(body)
    }

    /// The reply: `{"data":[{"index":0,"embedding":[…]}…],"usage":{"prompt_tokens":N}}`.
    struct Reply: Decodable {
        struct Item: Decodable {
            var index: Int?
            var embedding: Vector
        }
        /// A vector as JSON numbers, or as base64 of little-endian float32s.
        struct Vector: Decodable {
            var values: [Float]

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let text = try? container.decode(String.self) {
                    guard let data = Data(base64Encoded: text), data.count % 4 == 0 else {
                        throw DecodingError.dataCorruptedError(
                            in: container, debugDescription: "an embedding string that is not base64 of float32s")
                    }
                    values = stride(from: 0, to: data.count, by: 4).map { offset in
                        let bits = data[data.startIndex + offset..<data.startIndex + offset + 4].enumerated()
                            .reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
                        return Float(bitPattern: bits)
                    }
                } else {
                    values = try container.decode([Float].self)
                }
            }
        }
        struct UsagePayload: Decodable {
            var promptTokens: Int?
        }
        var data: [Item]?
        var usage: UsagePayload?
        var error: OpenAIWire.Chunk.ErrorPayload?
    }

    /// Decodes and checks a 2xx reply for `inputs` inputs (and `dimensions`, when asked).
    static func response(
        _ data: Data, contentType: String, inputs: Int, dimensions: Int?, failures: HTTPFailureMapper
    ) throws -> EmbeddingResponse {
        let provider = failures.provider
        func malformed(_ what: String) -> ProviderError {
            ProviderError(.decoding, provider: provider, message: "The embeddings reply \(what).")
        }
        guard contentType.isEmpty || contentType.contains("json") else {
            throw ProviderError(
                .decoding, provider: provider,
                message: "The server answered with \(contentType), not JSON. A proxy or captive portal may be in the way; "
                    + "check the base URL and the network.")
        }
        let reply = try failures.decode(Reply.self, from: data, decoder: JSONDecoder.snakeCase, what: "The embeddings reply")
        if let error = reply.error {
            throw failures.streamError(type: error.type, code: error.code, message: error.message)
        }
        guard let items = reply.data else { throw malformed("has no `data`") }
        guard items.count == inputs else { throw malformed("has \(items.count) vectors for \(inputs) inputs") }
        var vectors = [[Float]?](repeating: nil, count: inputs)
        for (position, item) in items.enumerated() {
            let index = item.index ?? position
            guard vectors.indices.contains(index), vectors[index] == nil else {
                throw malformed("repeats or skips an index (\(index))")
            }
            vectors[index] = item.embedding.values
        }
        let ordered = vectors.compactMap { $0 }
        guard let length = ordered.first?.count, length > 0 else { throw malformed("has an empty vector") }
        guard ordered.allSatisfy({ $0.count == length }) else { throw malformed("has vectors of different lengths") }
        if let dimensions, dimensions != length {
            throw malformed("has vectors of \(length) dimensions, not the \(dimensions) asked for")
        }
        guard ordered.allSatisfy({ $0.allSatisfy(\.isFinite) }) else { throw malformed("has a value that is not finite") }
        let promptTokens = reply.usage?.promptTokens ?? 0
        guard promptTokens >= 0 else { throw malformed("has a negative `usage.prompt_tokens`") }
        return EmbeddingResponse(vectors: ordered, promptTokens: promptTokens, provider: provider)
    }
}
