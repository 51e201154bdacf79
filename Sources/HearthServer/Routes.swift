import Foundation
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Turns Hummingbird's own errors (unknown route, wrong method) into the JSON error shape.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let status = Int(error.status.code)
            let message =
                status == 404 ? "No route for \(request.method.rawValue) \(request.uri.path.prefix(200))." : "HTTP error \(status)."
            return HearthServer.errorResponse(
                APIError(status: status, message: message, type: "invalid_request_error", code: status == 404 ? "not_found" : "http_error"))
        }
    }
}

extension HearthServer {
    func routes(_ router: Router<ServerRequestContext>) {
        if let gateway { return gatewayRoutes(router, gateway) }
        router.add(middleware: JSONErrorMiddleware())
        router.get("/health") { _, _ in self.health() }
        router.get("/live") { _, _ in Self.json(200, ["status": "alive"]) }
        router.get("/metrics") { request, _ in await self.simple(request) { self.metricsResponse() } }
        router.get("/v1/models") { request, _ in await self.simple(request) { self.models(nil) } }
        router.get("/v1/models/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return await self.simple(request) { self.models(id) }
        }
        router.post("/v1/chat/completions") { request, context in await self.generation(.chatCompletions, request, connection: context.channel) }
        router.post("/v1/completions") { request, context in await self.generation(.completions, request, connection: context.channel) }
        router.post("/v1/messages") { request, context in await self.generation(.messages, request, connection: context.channel) }
        router.post("/tokenize") { request, _ in await self.simple(request) { try await self.tokenize(request) } }
        router.post("/detokenize") { request, _ in await self.simple(request) { try await self.detokenize(request) } }
    }

    // MARK: Responses

    static func json(_ status: Int, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }

    static func errorResponse(_ error: APIError, endpoint: Endpoint? = nil, requestID: String? = nil) -> Response {
        var headers: HTTPFields = [:]
        if let retry = error.retryAfter { headers[.retryAfter] = String(retry) }
        if let requestID, let name = HTTPField.Name("x-request-id") { headers[name] = requestID }
        return json(error.status, endpoint == .messages ? error.anthropicBody : error.openAIBody, headers: headers)
    }

    func health() -> Response {
        let phase = lock.withLock { self.phase }
        switch phase {
        case .ready: return Self.json(200, ["status": "ok"])
        case .loading:
            return Self.json(503, ["error": ["code": 503, "message": "Loading model", "type": "unavailable_error"]])
        case .draining:
            return Self.json(503, ["error": ["code": 503, "message": "Shutting down", "type": "unavailable_error"]])
        case .failed(let message):
            return Self.json(503, ["error": ["code": 503, "message": .string(message), "type": "unavailable_error"]])
        }
    }

    func metricsResponse() -> Response {
        let load = provider.schedulerLoad ?? (0, 0)
        metrics.running.set(to: Double(load.running))
        metrics.waiting.set(to: Double(load.waiting))
        metrics.kvCacheUsage.set(to: provider.kvCacheUsage ?? 0)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
    }

    func models(_ id: String?) -> Response {
        let model: JSONValue = [
            "id": .string(options.alias), "object": "model", "created": .int(Int(Date().timeIntervalSince1970)), "owned_by": "hearth",
        ]
        guard let id else { return Self.json(200, ["object": "list", "data": [model]]) }
        guard id == options.alias else {
            return Self.errorResponse(
                APIError(
                    status: 404, message: "The model '\(id.prefix(200))' does not exist; this server serves '\(options.alias)'.",
                    type: "invalid_request_error", code: "model_not_found", param: "model"))
        }
        return Self.json(200, model)
    }

    /// A non-generation route: authorization, errors as JSON, one log line.
    func simple(_ request: Request, _ body: () async throws -> Response) async -> Response {
        let started = ContinuousClock.now
        let (_, requestID) = newRequestID()
        var response: Response
        if !authorized(request) {
            response = Self.errorResponse(.unauthorized(), requestID: requestID)
        } else {
            do { response = try await body() } catch let error as APIError {
                response = Self.errorResponse(error, requestID: requestID)
            } catch let error as ProviderError {
                response = Self.errorResponse(.from(error), requestID: requestID)
            } catch {
                response = Self.errorResponse(
                    APIError(status: 500, message: "Internal error.", type: "server_error", code: "internal_error"), requestID: requestID)
            }
        }
        if let name = HTTPField.Name("x-request-id") { response.headers[name] = requestID }
        let level: Logger.Level = request.uri.path == "/metrics" ? .debug : .info
        logger.log(
            level: level, "request",
            metadata: [
                "id": "\(requestID)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path)",
                "status": "\(response.status.code)", "ms": "\(Self.milliseconds(since: started))",
            ])
        return response
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Reads the whole body, refusing more than the limit (413) and senders slower than the idle timeout (408).
    func readBody(_ request: Request) async throws -> Data {
        let limit = options.maxBodyBytes
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw APIError(
                status: 413, message: "The request body is \(length) bytes; the limit is \(limit).", type: "invalid_request_error",
                code: "request_too_large")
        }
        let body = request.body
        let timeout = options.idleTimeout
        do {
            let buffer = try await withThrowingTaskGroup(of: ByteBuffer.self) { group in
                group.addTask { try await body.collect(upTo: limit) }
                group.addTask {
                    try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
                    throw APIError(
                        status: 408, message: "The request body did not arrive within \(Int(timeout)) seconds.",
                        type: "invalid_request_error", code: "request_timeout")
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { return ByteBuffer() }
                return first
            }
            return Data(buffer.readableBytesView)
        } catch let error as APIError {
            throw error
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError(
                status: 413, message: "The request body is larger than the limit of \(limit) bytes.", type: "invalid_request_error",
                code: "request_too_large")
        }
    }

    func requireReady() throws {
        switch lock.withLock({ phase }) {
        case .ready: return
        case .loading: throw APIError.unavailable("Loading model", retryAfter: 5)
        case .draining: throw APIError.unavailable("The server is shutting down.", retryAfter: 5)
        case .failed(let message): throw APIError(status: 503, message: message, type: "unavailable_error", code: "model_unavailable")
        }
    }

    func tokenize(_ request: Request) async throws -> Response {
        try requireReady()
        let f = try Fields(try RequestParser.json(try await readBody(request)))
        _ = try RequestParser(alias: options.alias, maxTokensLimit: Int.max).model(f)
        guard let text = try f.string("content") ?? f.string("prompt") else {
            throw APIError.invalid("content", "'content' (the text to tokenize) is required.", code: "missing_field")
        }
        let tokens = try await provider.tokenize(text, addSpecialTokens: try f.bool("add_special") ?? false)
        return Self.json(
            200, ["tokens": .array(tokens.map { .int(Int($0)) }), "count": .int(tokens.count), "max_model_len": .int(provider.loadedContext ?? 0)])
    }

    func detokenize(_ request: Request) async throws -> Response {
        try requireReady()
        let f = try Fields(try RequestParser.json(try await readBody(request)))
        _ = try RequestParser(alias: options.alias, maxTokensLimit: Int.max).model(f)
        guard let items = try f.array("tokens") else {
            throw APIError.invalid("tokens", "'tokens' (an array of token ids) is required.", code: "missing_field")
        }
        let ids: [Int32] = try items.enumerated().map { index, item in
            guard case .number(let value) = item, value == value.rounded(), abs(value) < 1e9 else {
                throw APIError.invalid("tokens[\(index)]", "'tokens[\(index)]' must be an integer token id.", code: "invalid_type")
            }
            return Int32(value)
        }
        return Self.json(200, ["content": .string(try await provider.detokenize(ids))])
    }
}
