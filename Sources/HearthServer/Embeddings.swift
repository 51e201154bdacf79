import Foundation
import HearthLocal
import HearthProviders
import Hummingbird

extension HearthServer {
    /// `POST /v1/embeddings` (OpenAI Embeddings): `input` as a string, a list of strings, a list
    /// of token ids or a list of such lists; `encoding_format` `float` or `base64` (little-endian
    /// float32, what the official client asks for by default); `dimensions` refused unless it is
    /// the model's own. Served by the route's provider — the local model in one batched pass with
    /// no sampling and no KV slot kept, or a router that falls back between the providers that
    /// embed — through the same admission, quota and usage as generation: a fair-queue turn for
    /// the local model, the request timeout, a stop between forward passes when the client
    /// leaves, and at most ``ServerOptions/maxEmbeddingTokens`` tokens (a 400 naming the bound).
    func embeddings(_ context: ServerRequestContext) async throws -> Response {
        let caller = context.caller ?? GatewayAuthenticator.anonymous
        let client = caller.client
        let f = try Fields(try RequestParser.json(context.body))
        try f.refuseUnknown(AcceptedFields.embeddings)
        _ = try RequestParser.openAIHints(f)  // `user`: a hint, checked for shape
        let name = try RequestParser.requiredModel(f)
        let route = try gateway.route(name, for: client)
        let inputs = try Self.embeddingInputs(f)
        let base64: Bool
        switch try f.string("encoding_format") {
        case nil, "float"?: base64 = false
        case "base64"?: base64 = true
        case let other?: throw APIError.invalid("encoding_format", "'encoding_format' must be float or base64, got '\(other.prefix(40))'.")
        }
        let dimensions = try f.int("dimensions", in: 1...65536)
        let provider: any EmbeddingProvider
        switch route.target {
        case .local(let local): provider = local
        case .router(let router): provider = router
        }
        let estimate = inputs.reduce(0) { total, input in
            switch input {
            case .text(let text): return total + (text.utf8.count + 3) / 4
            case .tokens(let ids): return total + ids.count
            }
        }
        let (reservation, _) = try gateway.limiter.reserve(client, prompt: estimate, reply: 0)
        let request = EmbeddingRequest(inputs: inputs, dimensions: dimensions, model: name)
        let maxTokens = options.maxEmbeddingTokens
        let response: EmbeddingResponse
        do {
            // Admitted like a generation: the local model's work after a fair-queue turn, bounded
            // in tokens, stopped between forward passes when the client leaves or at the timeout.
            response = try await runAdmitted(route, client: client, channel: context.channel) { admission in
                if let local = provider as? LocalProvider {
                    return try await local.embed(request, maxTokens: maxTokens, admission: admission)
                }
                return try await provider.embed(request)
            }
        } catch {
            gateway.limiter.settle(reservation, used: 0)
            throw Self.gatewayAPIError(error)
        }
        gateway.limiter.settle(reservation, used: response.promptTokens)
        metrics.countRequest(endpoint: "/v1/embeddings", status: 200)
        if let ledger = gateway.ledger {
            let now = gateway.clock.now()
            let entry = UsageLedger.Entry(
                requestID: context.requestID, day: RateLimiter.day(now), client: client.name, model: name, servedBy: response.provider,
                status: 200, promptTokens: response.promptTokens, cachedTokens: 0, completionTokens: 0, cacheHit: false)
            do { try await ledger.record(entry, at: now) } catch {
                logger.error("usage not recorded", metadata: ["id": "\(context.requestID)", "error": "\(UsageLedger.describe(error))"])
            }
        }
        let data: [JSONValue] = response.vectors.enumerated().map { index, vector in
            ["object": "embedding", "index": .int(index), "embedding": base64 ? .string(Self.base64(vector)) : .array(vector.map { .number(Double($0)) })]
        }
        var headers = context.quotaHeaders
        Self.set(&headers, "x-hearth-served-by", response.provider)
        return Self.json(
            200,
            [
                "object": "list", "data": .array(data), "model": .string(name),
                "usage": ["prompt_tokens": .int(response.promptTokens), "total_tokens": .int(response.promptTokens)],
            ], headers: headers)
    }

    /// `input`: a string, a list of strings, a list of token ids, or a list of lists of token ids.
    static func embeddingInputs(_ f: Fields) throws -> [EmbeddingInput] {
        func ids(_ items: [JSONValue], _ name: String) throws -> [Int32] {
            try items.enumerated().map { index, item in
                guard let value = item.doubleValue, value == value.rounded(), value >= 0, value < 1e9 else {
                    throw APIError.invalid("\(name)[\(index)]", "'\(name)[\(index)]' must be a token id (a non-negative integer).", code: "invalid_type")
                }
                return Int32(value)
            }
        }
        let inputs: [EmbeddingInput]
        switch f.value("input") {
        case nil: throw APIError.invalid("input", "'input' is required: a string or a list of strings or token ids.", code: "missing_field")
        case .string(let text)?: inputs = [.text(text)]
        case .array(let items)?:
            if items.allSatisfy({ if case .number = $0 { return true } else { return false } }), !items.isEmpty {
                inputs = [.tokens(try ids(items, "input"))]
            } else {
                inputs = try items.enumerated().map { index, item in
                    switch item {
                    case .string(let text): return .text(text)
                    case .array(let tokens): return .tokens(try ids(tokens, "input[\(index)]"))
                    default:
                        throw APIError.invalid("input[\(index)]", "'input[\(index)]' must be a string or a list of token ids.", code: "invalid_type")
                    }
                }
            }
        case let other?: throw f.wrongType("input", "a string or an array", other)
        }
        guard !inputs.isEmpty else { throw APIError.invalid("input", "'input' must contain at least one item.") }
        guard inputs.count <= 2048 else { throw APIError.invalid("input", "'input' takes at most 2048 items.") }
        for (index, input) in inputs.enumerated() {
            let empty: Bool
            switch input {
            case .text(let text): empty = text.isEmpty
            case .tokens(let ids): empty = ids.isEmpty
            }
            if empty { throw APIError.invalid(inputs.count == 1 ? "input" : "input[\(index)]", "Every input must be non-empty.") }
        }
        return inputs
    }

    /// A vector as base64 of its little-endian float32 bytes.
    static func base64(_ vector: [Float]) -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(vector.count * 4)
        for value in vector {
            let bits = value.bitPattern.littleEndian
            withUnsafeBytes(of: bits) { bytes.append(contentsOf: $0) }
        }
        return Data(bytes).base64EncodedString()
    }
}
