import Foundation
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension HearthServer {
    /// The one router of the plain server and the gateway: the front stage (ids, JSON errors,
    /// logging), CORS when configured, authentication, the rate limiter, then one handler per route.
    /// `mountPath` is the prefix `router` adds to the paths ("" for `hearth serve`'s router; see
    /// ``addRoutes(to:atPath:)``).
    func routes(_ router: some RouterMethods<ServerRequestContext>, mountPath: String = "") {
        router.add(middleware: FrontMiddleware(server: self, mountPath: mountPath))
        if !gateway.configuration.corsOrigins.isEmpty {
            router.add(middleware: CORSOriginsMiddleware(origins: gateway.configuration.corsOrigins, mountPath: mountPath))
        }
        router.add(middleware: AuthenticationMiddleware(server: self))
        router.add(middleware: RateLimitMiddleware(server: self))
        router.get("/health") { _, _ in self.health() }
        router.get("/live") { _, _ in Self.json(200, ["status": "alive"]) }
        router.get("/metrics") { _, _ in self.metricsResponse() }
        router.get("/v1/models") { _, context in
            let client = (context.caller ?? GatewayAuthenticator.anonymous).client
            return Self.json(200, ["object": "list", "data": .array(self.gateway.allowed(client).map { self.modelEntry($0) })])
        }
        router.get("/v1/models/:id") { _, context in
            let id = context.parameters.get("id") ?? ""
            _ = try self.gateway.route(id, for: (context.caller ?? GatewayAuthenticator.anonymous).client)
            return Self.json(200, self.modelEntry(id))
        }
        for endpoint in Endpoint.allCases {
            router.post(RouterPath(endpoint.rawValue)) { request, context in await self.generate(endpoint, request, context) }
        }
        router.post("/v1/embeddings") { _, context in try await self.embeddings(context) }
        router.post("/v1/messages/count_tokens") { _, context in await self.countTokens(context) }
        router.post("/tokenize") { _, context in try await self.tokenize(context) }
        router.post("/detokenize") { _, context in try await self.detokenize(context) }
        chatTemplateRoutes(router)  // POST /apply-template, GET /props (issue 58)
        ollamaRoutes(router)
        // The chat page calls the API at the root, so it is served only there.
        if options.webUI && mountPath.isEmpty { webUIRoutes(router) }
        if configured {
            router.post("/v1/auth/token") { _, context in
                try self.issueToken(context.caller ?? GatewayAuthenticator.anonymous, body: context.body)
            }
            router.get("/v1/usage") { request, context in
                try await self.usage(context.caller ?? GatewayAuthenticator.anonymous, request)
            }
        }
    }

    // MARK: Plain routes

    func health() -> Response {
        let phase = lock.withLock { self.phase }
        switch phase {
        case .ready: return Self.json(200, ["status": "ok"])
        case .loading:
            return Self.json(503, ["error": ["code": 503, "message": "Loading model", "type": "unavailable_error"]])
        case .draining:
            return Self.json(503, ["error": ["code": 503, "message": "Shutting down", "type": "unavailable_error"]])
        case .failed:
            // The cause is in the server's log; a probe learns only that the model is not there.
            return Self.json(503, ["error": ["code": 503, "message": "The model could not be loaded.", "type": "unavailable_error"]])
        }
    }

    func metricsResponse() -> Response {
        let load = localModelLoad()  // all local models; per model under hearth_model_*
        metrics.running.set(to: Double(load.running))
        // Waiting: in the models' queues, held by the server's fair queue before them, or waiting
        // for their model to have a place among those loaded (`--max-loaded`).
        let forModel = local?.configuration.residency?.waitingCount ?? 0
        metrics.waiting.set(to: Double(load.waiting + (localQueue?.waitingCount ?? 0) + forModel))
        metrics.kvCacheUsage.set(to: load.kvCacheUsage)
        metrics.recordResidentMemory()
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.render())))
    }

    func modelEntry(_ name: String) -> JSONValue {
        var entry: JSONValue = [
            "id": .string(name), "object": "model", "created": .int(Int(Date().timeIntervalSince1970)), "owned_by": "hearth",
        ]
        if configured, case .object(var pairs) = entry {
            pairs.append(("providers", .array((gateway.routes[name]?.chain ?? []).map { .string($0) })))
            entry = .object(pairs)
        }
        // A local model says how it computes: kernel level and activation bits.
        let provider: LocalProvider?
        if let route = gateway.routes[name], case .local(let routed) = route.target {
            provider = routed
        } else {
            provider = configured ? nil : local
        }
        if let compute = provider?.computePath, case .object(var pairs) = entry {
            pairs.append((
                "meta",
                [
                    "kernels": .string(compute.kernels), "activation_bits": .string(compute.activationBits),
                    "activations": .string(compute.activations),
                ]))
            entry = .object(pairs)
        }
        return entry
    }

    /// The local model a `/tokenize` or `/detokenize` request names (`model`), within the
    /// client's allowlist (404 for a model this server does not serve or that is not local, 403
    /// for one the client may not use); without `model`, the server's first local model the
    /// client may use.
    func localRoute(_ fields: Fields, client: GatewayConfiguration.Client) throws -> (Gateway.ModelRoute, LocalProvider) {
        if let model = try fields.string("model") {
            let route = try gateway.route(model, for: client)
            guard case .local(let provider) = route.target else {
                throw APIError(
                    status: 404, message: "The model '\(model.prefix(200))' is not a local model of this server (see GET /v1/models).",
                    type: "invalid_request_error", code: "model_not_found", param: "model")
            }
            return (route, provider)
        }
        let locals = gateway.allowed(client).compactMap { name -> (Gateway.ModelRoute, LocalProvider)? in
            guard let route = gateway.routes[name], case .local(let provider) = route.target else { return nil }
            return (route, provider)
        }
        guard let first = locals.first(where: { $0.1 === local }) ?? locals.first else {
            throw APIError(
                status: 404, message: "This server has no local model to tokenize with.", type: "invalid_request_error",
                code: "model_not_found", param: "model")
        }
        return first
    }

    /// `POST /tokenize` (llama-server's): the ids of `content` (or `prompt`), with each id's
    /// piece when `with_pieces` is set, by the model the request names — admitted like a
    /// generation (a fair-queue turn, stopped when the client leaves or at the request
    /// timeout) and bounded: at most ``ServerOptions/maxTokenizeBytes`` of text,
    /// ``ServerOptions/maxTokenizeTokens`` tokens and ``ServerOptions/maxTokenizeResponseBytes``
    /// of answer, each a 400 naming the bound.
    func tokenize(_ context: ServerRequestContext) async throws -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        let f = try Fields(try RequestParser.json(context.body))
        try f.refuseUnknown(AcceptedFields.tokenize)
        let (route, local) = try localRoute(f, client: client)
        let field = f.value("content") != nil ? "content" : "prompt"
        guard let text = try f.string("content") ?? f.string("prompt") else {
            throw APIError.invalid("content", "'content' (the text to tokenize) is required.", code: "missing_field")
        }
        let maxBytes = options.maxTokenizeBytes, maxTokens = options.maxTokenizeTokens
        guard text.utf8.count <= maxBytes else {
            throw APIError.invalid(
                field, "'\(field)' is \(text.utf8.count) bytes; /tokenize takes at most \(maxBytes) bytes of text per request.",
                code: "too_large")
        }
        let special = try f.bool("add_special") ?? false, withPieces = try f.bool("with_pieces") == true
        let found = try await runAdmitted(route, client: client, channel: context.channel) { admission in
            try await local.tokenize(text, addSpecialTokens: special, limit: maxTokens, pieces: withPieces, admission: admission)
        }
        guard let tokens = found.ids else {
            throw APIError.invalid(
                field, "'\(field)' is more than \(maxTokens) tokens, the most one /tokenize answer may have (--max-tokenize-tokens).",
                code: "too_large")
        }
        // llama-server's shape with pieces: each id with its piece, a string when the piece is
        // valid UTF-8 on its own, else its bytes. Sized as it is built, so an answer over the
        // bound is refused before it is all made.
        var size = 64
        var listed: [JSONValue] = []
        listed.reserveCapacity(tokens.count)
        for (index, id) in tokens.enumerated() {
            let entry: JSONValue
            if let pieces = found.pieces, pieces.indices.contains(index) {
                let bytes = pieces[index]
                let piece: JSONValue = String(validating: bytes, as: UTF8.self).map { .string($0) } ?? .array(bytes.map { .int(Int($0)) })
                entry = .object([("id", .int(Int(id))), ("piece", piece)])
                size += entry.serialized().count + 1
            } else {
                entry = .int(Int(id))
                size += String(id).utf8.count + 1
            }
            if size > options.maxTokenizeResponseBytes { throw Self.answerTooLarge(options.maxTokenizeResponseBytes, "/tokenize") }
            listed.append(entry)
        }
        return Self.json(200, ["tokens": .array(listed), "count": .int(tokens.count), "max_model_len": .int(found.context)])
    }

    /// `POST /detokenize` (llama-server's): the text of `tokens` by the model the request
    /// names, admitted like `/tokenize` and bounded by the same token and answer bounds.
    func detokenize(_ context: ServerRequestContext) async throws -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        let f = try Fields(try RequestParser.json(context.body))
        try f.refuseUnknown(AcceptedFields.detokenize)
        let (route, local) = try localRoute(f, client: client)
        guard let items = try f.array("tokens") else {
            throw APIError.invalid("tokens", "'tokens' (an array of token ids) is required.", code: "missing_field")
        }
        let maxTokens = options.maxTokenizeTokens
        guard items.count <= maxTokens else {
            throw APIError.invalid(
                "tokens", "'tokens' has \(items.count) ids; /detokenize takes at most \(maxTokens) per request (--max-tokenize-tokens).",
                code: "too_large")
        }
        let ids: [Int32] = try items.enumerated().map { index, item in
            guard let value = item.doubleValue, value == value.rounded(), abs(value) < 1e9 else {
                throw APIError.invalid("tokens[\(index)]", "'tokens[\(index)]' must be an integer token id.", code: "invalid_type")
            }
            return Int32(value)
        }
        let text = try await runAdmitted(route, client: client, channel: context.channel) { admission in
            try await local.detokenize(ids, admission: admission)
        }
        let body: JSONValue = ["content": .string(text)]
        let data = body.serialized()
        guard data.count <= options.maxTokenizeResponseBytes else { throw Self.answerTooLarge(options.maxTokenizeResponseBytes, "/detokenize") }
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The refusal of an answer over ``ServerOptions/maxTokenizeResponseBytes``.
    static func answerTooLarge(_ limit: Int, _ path: String) -> APIError {
        APIError(
            status: 400, message: "The \(path) answer would be more than \(limit) bytes, the most one answer may have; send less text.",
            type: "invalid_request_error", code: "response_too_large")
    }

    // MARK: Gateway routes

    /// `POST /v1/auth/token`: a client key (never a token) for a short-lived token.
    func issueToken(_ caller: Caller, body: Data) throws -> Response {
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
    func usage(_ caller: Caller, _ request: Request) async throws -> Response {
        guard let ledger = gateway.ledger else { throw APIError(status: 404, message: "This server keeps no usage.", type: "invalid_request_error", code: "not_found") }
        try await ledger.flush()
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
        let rows = try await ledger.totals(client: client, from: try day("from"), to: try day("to"))
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
