import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// CORS for the configured origins: preflight requests are answered here, and responses to an
/// allowed `Origin` carry `Access-Control-Allow-Origin` and the headers a browser app reads.
struct CORSOriginsMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: [String]

    func allows(_ origin: String) -> Bool { origins.contains("*") || origins.contains(origin) }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin] else { return try await next(request, context) }
        if request.method == .options {
            guard allows(origin) else {
                return HearthServer.errorResponse(
                    APIError(status: 403, message: "This origin may not call the server.", type: "permission_error", code: "origin_not_allowed"))
            }
            var headers = HTTPFields()
            headers[.accessControlAllowOrigin] = origin
            headers[.accessControlAllowMethods] = "GET, POST, OPTIONS"
            headers[.accessControlAllowHeaders] =
                "authorization, content-type, x-api-key, x-timestamp, x-signature, cache-control, anthropic-version"
            headers[.accessControlMaxAge] = "600"
            headers[.vary] = "Origin"
            return Response(status: .noContent, headers: headers)
        }
        var response = try await next(request, context)
        if allows(origin) {
            response.headers[.accessControlAllowOrigin] = origin
            response.headers[.accessControlExposeHeaders] =
                "x-request-id, x-hearth-served-by, x-hearth-cache, retry-after, x-ratelimit-limit-requests, "
                + "x-ratelimit-remaining-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens"
            response.headers[.vary] = "Origin"
        }
        return response
    }
}

extension HearthServer {
    /// The routes with the gateway in front (``Gateway``): every route but `/health` and `/live`
    /// needs a client key or token (and a signature for clients with an HMAC secret).
    func gatewayRoutes(_ router: Router<ServerRequestContext>, _ gateway: Gateway) {
        if !gateway.configuration.corsOrigins.isEmpty {
            router.add(middleware: CORSOriginsMiddleware(origins: gateway.configuration.corsOrigins))
        }
        router.add(middleware: JSONErrorMiddleware())
        router.get("/health") { _, _ in self.health() }
        router.get("/live") { _, _ in Self.json(200, ["status": "alive"]) }
        router.get("/metrics") { request, _ in await self.gatewaySimple(request, gateway) { _, _ in self.metricsResponse() } }
        router.get("/v1/models") { request, _ in
            await self.gatewaySimple(request, gateway) { caller, _ in
                Self.json(200, ["object": "list", "data": .array(gateway.allowed(caller.client).map { self.modelEntry($0, gateway) })])
            }
        }
        router.get("/v1/models/:id") { request, context in
            let id = context.parameters.get("id") ?? ""
            return await self.gatewaySimple(request, gateway) { caller, _ in
                _ = try gateway.route(id, for: caller.client)
                return Self.json(200, self.modelEntry(id, gateway))
            }
        }
        router.post("/v1/chat/completions") { request, context in
            await self.gatewayGeneration(.chatCompletions, request, gateway, connection: context.channel)
        }
        router.post("/v1/completions") { request, context in
            await self.gatewayGeneration(.completions, request, gateway, connection: context.channel)
        }
        router.post("/v1/messages") { request, context in
            await self.gatewayGeneration(.messages, request, gateway, connection: context.channel)
        }
        router.post("/v1/auth/token") { request, _ in
            await self.gatewaySimple(request, gateway) { caller, body in try self.issueToken(caller, body: body, gateway) }
        }
        router.get("/v1/usage") { request, _ in
            await self.gatewaySimple(request, gateway) { caller, _ in try await self.usage(caller, request, gateway) }
        }
        router.post("/tokenize") { request, _ in
            await self.gatewaySimple(request, gateway) { _, body in try await self.tokenize(Self.rebuilt(request, body)) }
        }
        router.post("/detokenize") { request, _ in
            await self.gatewaySimple(request, gateway) { _, body in try await self.detokenize(Self.rebuilt(request, body)) }
        }
    }

    /// The request with its (already read) body put back, for handlers that read it themselves.
    static func rebuilt(_ request: Request, _ body: Data) -> Request {
        Request(head: request.head, body: RequestBody(buffer: ByteBuffer(bytes: body)))
    }

    func modelEntry(_ name: String, _ gateway: Gateway) -> JSONValue {
        [
            "id": .string(name), "object": "model", "created": .int(Int(Date().timeIntervalSince1970)), "owned_by": "hearth",
            "providers": .array((gateway.routes[name]?.chain ?? []).map { .string($0) }),
        ]
    }

    /// A non-generation route behind the gateway: authentication, errors as JSON, one log line.
    func gatewaySimple(
        _ request: Request, _ gateway: Gateway, _ body: (Caller, Data) async throws -> Response
    ) async -> Response {
        let started = ContinuousClock.now
        let (_, requestID) = newRequestID()
        var response: Response
        var client = "-"
        do {
            let (caller, data) = try await gatewayAuthenticate(request, gateway)
            client = caller.client.name
            response = try await body(caller, data)
        } catch {
            response = Self.errorResponse(Self.apiError(error), requestID: requestID)
        }
        Self.set(&response.headers, "x-request-id", requestID)
        let level: Logger.Level = request.uri.path == "/metrics" ? .debug : .info
        logger.log(
            level: level, "request",
            metadata: [
                "id": "\(requestID)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path)", "client": "\(client)",
                "status": "\(response.status.code)", "ms": "\(Self.milliseconds(since: started))",
            ])
        return response
    }

    /// `POST /v1/auth/token`: a client key (never a token) for a short-lived token.
    func issueToken(_ caller: Caller, body: Data, _ gateway: Gateway) throws -> Response {
        guard !caller.viaToken else {
            throw APIError(
                status: 403, message: "A token cannot be exchanged for another token; use the client's key.",
                type: "permission_error", code: "token_not_allowed")
        }
        var seconds: Int?
        if !body.isEmpty {
            let fields = try Fields(try RequestParser.json(body))
            seconds = try fields.int("expires_in", in: 1...gateway.configuration.tokenTTLSeconds)
        }
        let issued = gateway.authenticator.issueToken(for: caller.client, seconds: seconds)
        return Self.json(
            200,
            [
                "token": .string(issued.token), "token_type": "bearer", "expires_in": .int(issued.expiresIn),
                "expires_at": .int(issued.expiresAt), "client": .string(caller.client.name),
            ])
    }

    /// `GET /v1/usage[?client=NAME][&from=YYYY-MM-DD][&to=YYYY-MM-DD]`: the caller's usage per model
    /// (an admin's: every client's, or one client's with `client`).
    func usage(_ caller: Caller, _ request: Request, _ gateway: Gateway) async throws -> Response {
        let query = request.uri.queryParameters
        var client: String? = caller.client.name
        if let asked = query.get("client") {
            guard caller.client.admin || asked == caller.client.name else {
                throw APIError(
                    status: 403, message: "Only an admin key may read another client's usage.", type: "permission_error",
                    code: "admin_only", param: "client")
            }
            client = asked
        } else if caller.client.admin {
            client = nil
        }
        func day(_ name: String) throws -> String? {
            guard let value = query.get(name) else { return nil }
            guard value.count == 10, value.split(separator: "-").count == 3, value.allSatisfy({ $0.isNumber || $0 == "-" }) else {
                throw APIError.invalid(name, "'\(name)' must be a UTC day, YYYY-MM-DD.")
            }
            return value
        }
        let rows = try await gateway.ledger.totals(client: client, from: try day("from"), to: try day("to"))
        var total = (requests: 0, errors: 0, hits: 0, prompt: 0, cached: 0, completion: 0)
        let data: [JSONValue] = rows.map { row in
            total.requests += row.requests
            total.errors += row.errors
            total.hits += row.cacheHits
            total.prompt += row.promptTokens
            total.cached += row.cachedTokens
            total.completion += row.completionTokens
            return [
                "client": .string(row.client), "model": .string(row.model), "requests": .int(row.requests), "errors": .int(row.errors),
                "cache_hits": .int(row.cacheHits), "prompt_tokens": .int(row.promptTokens), "cached_tokens": .int(row.cachedTokens),
                "completion_tokens": .int(row.completionTokens), "total_tokens": .int(row.promptTokens + row.completionTokens),
            ]
        }
        return Self.json(
            200,
            [
                "object": "list", "client": .optional(client), "data": .array(data),
                "total": [
                    "requests": .int(total.requests), "errors": .int(total.errors), "cache_hits": .int(total.hits),
                    "prompt_tokens": .int(total.prompt), "cached_tokens": .int(total.cached),
                    "completion_tokens": .int(total.completion), "total_tokens": .int(total.prompt + total.completion),
                ],
            ])
    }
}
