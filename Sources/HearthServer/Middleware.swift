import Foundation
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// What later stages learn about a request that the first middleware reports (the context is
/// passed down by value, so they write here).
final class RequestNote: @unchecked Sendable {
    // `@unchecked Sendable`: written by one request's middleware and handler in turn, read after.
    var client: String?
    /// The request's W3C `traceparent` header, if any (its spans join the caller's trace).
    var traceParent: String?
}

/// The first stage of every request: gives it an id, turns whatever a later stage throws into
/// a JSON error in the format of the route's API (Anthropic's on `/v1/messages`), and writes
/// one log line for every request that no generation handler logs itself. A generation request
/// refused before its handler ran (key, limits) is counted and recorded like any other.
struct FrontMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: HearthServer
    /// The prefix Hearth's routes are mounted at ("" at the root); the later stages match routes
    /// by the path below it (``HearthRequestContext/routePath``).
    var mountPath = ""

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.requestID = HearthServer.newRequestID()
        context.started = .now
        let note = RequestNote()
        note.traceParent = HTTPField.Name("traceparent").flatMap { request.headers[$0] }
        context.note = note
        let path = HearthServer.routePath(request.uri.path, mountedAt: mountPath)
        context.routePath = path
        let endpoint = Endpoint(rawValue: path)
        var response: Response
        var failure: APIError?
        do {
            response = try await next(request, context)
        } catch {
            let apiError = HearthServer.apiError(error, path: request.uri.path, method: request.method)
            failure = apiError
            response =
                path.hasPrefix("/api/")
                ? HearthServer.ollamaErrorResponse(apiError) : HearthServer.errorResponse(apiError, endpoint: endpoint)
        }
        HearthServer.set(&response.headers, "x-request-id", context.requestID)
        if let endpoint, let failure {
            // Refused before the handler (authentication, limits): recorded like any answer.
            let outcome = RouteOutcome(failure: failure, after: RouteOutcome())
            var call = GenerationCall(
                endpoint: endpoint, requestID: context.requestID, started: context.started, client: note.client, model: "")
            call.traceParent = note.traceParent
            await server.record(outcome, call: call)
        } else if endpoint == nil {
            let level: Logger.Level = path == "/metrics" || path == "/health" ? .debug : .info
            server.logger.log(
                level: level, "request",
                metadata: [
                    "id": "\(context.requestID)", "method": "\(request.method.rawValue)", "path": "\(request.uri.path.prefix(200))",
                    "client": "\(note.client ?? "-")", "status": "\(response.status.code)",
                    "ms": "\(HearthServer.milliseconds(since: context.started))",
                ])
        }
        return response
    }
}

/// Authenticates every route but `/health` and `/live` from the request's headers alone (key or
/// token); only then reads the body — within the route's size limit and the idle timeout — and
/// checks the signature of clients that sign. An unknown caller never gets a byte of its body read.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: HearthServer
    /// The chat page (`/`, `/chat`) is static: it asks for the key in the browser and sends it with each call.
    static let open: Set<String> = ["/health", "/live", "/", "/chat"]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = context.routePath
        if Self.open.contains(path) { return try await next(request, context) }
        let headers = request.headers
        let header: (String) -> String? = { name in HTTPField.Name(name).flatMap { headers[$0] } }
        let authenticator = server.gateway.authenticator
        let identity = try authenticator.identify(header: header)
        var context = context
        context.caller = identity.caller
        context.note?.client = identity.caller.client.name
        if request.method == .post || request.method == .put || request.method == .delete {
            context.body = try await server.readBody(request, limit: server.bodyLimit(path: path))
        }
        try authenticator.verify(identity, method: request.method.rawValue, path: request.head.path ?? path, header: header, body: context.body)
        return try await next(request, context)
    }
}

/// Counts every authenticated request against its client's requests per minute and tokens per
/// day (429 with `Retry-After` beyond them) and reports the client's quota in `x-ratelimit-*`.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext
    let server: HearthServer

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let caller = context.caller else { return try await next(request, context) }
        let quota: RateLimiter.Quota
        do { quota = try server.gateway.limiter.admit(caller.client) } catch let refusal as RateLimiter.Refusal {
            var error = refusal.error
            error.headers = refusal.quota.headers
            throw error
        }
        var context = context
        context.quotaHeaders = quota.headers
        var response = try await next(request, context)
        for field in quota.headers where response.headers[field.name] == nil { response.headers.append(field) }
        return response
    }
}

/// CORS for the configured origins: preflight requests are answered here, and responses to an
/// allowed `Origin` carry `Access-Control-Allow-Origin` and the headers a browser app reads.
struct CORSOriginsMiddleware<Context: RequestContext>: RouterMiddleware {
    let origins: [String]
    /// The prefix Hearth's routes are mounted at ("" at the root).
    var mountPath = ""

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
        var response: Response
        do { response = try await next(request, context) } catch let error as APIError {
            response = HearthServer.errorResponse(error, endpoint: Endpoint(rawValue: HearthServer.routePath(request.uri.path, mountedAt: mountPath)))
        }
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
    /// Routes whose bodies may be large (prompts, texts to embed or tokenize) take
    /// ``ServerOptions/maxBodyBytes``; every other route at most 64 KiB.
    func bodyLimit(path: String) -> Int {
        let large: Set<String> = Set(Endpoint.allCases.map(\.rawValue)).union(["/v1/embeddings", "/v1/messages/count_tokens", "/tokenize", "/detokenize", "/apply-template"])
            .union(["/api/chat", "/api/generate", "/api/embed", "/api/embeddings"])
        return large.contains(path) ? options.maxBodyBytes : min(options.maxBodyBytes, 64 << 10)
    }

    /// Reads the whole body, refusing more than `limit` (413), senders slower than the idle
    /// timeout (408) and malformed bodies such as a broken chunked encoding (400).
    func readBody(_ request: Request, limit: Int) async throws -> Data {
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
        } catch {
            throw APIError(
                status: 400, message: "The request body is malformed (its framing could not be read).", type: "invalid_request_error",
                code: "invalid_body", param: "body")
        }
    }

    /// The JSON error for anything a stage threw: ``APIError`` as is, Hummingbird's own errors
    /// (unknown route, wrong method) by their status, a provider's as mapped, the rest a 500
    /// that says nothing of the cause.
    static func apiError(_ error: Error, path: String, method: HTTPRequest.Method) -> APIError {
        if let error = error as? HTTPError {
            let status = Int(error.status.code)
            let message = status == 404 ? "No route for \(method.rawValue) \(path.prefix(200))." : "HTTP error \(status)."
            return APIError(status: status, message: message, type: "invalid_request_error", code: status == 404 ? "not_found" : "http_error")
        }
        if let error = error as? any HTTPResponseError {
            let status = Int(error.status.code)
            return APIError(status: status, message: "HTTP error \(status).", type: "invalid_request_error", code: "http_error")
        }
        return apiError(error)
    }

    static func apiError(_ error: Error) -> APIError {
        if let error = error as? APIError { return error }
        if error is ClientGone { return APIError(status: 499, message: "The client closed the connection.", type: "cancelled", code: "client_closed") }
        if let error = error as? ProviderError { return .from(error) }
        if error is CancellationError { return .from(ProviderError(.cancelled, provider: "local", message: "cancelled")) }
        return APIError(status: 500, message: "Internal error.", type: "server_error", code: "internal_error")
    }

    static func json(_ status: Int, _ value: JSONValue, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }

    static func errorResponse(_ error: APIError, endpoint: Endpoint? = nil, requestID: String? = nil, extra: HTTPFields = [:]) -> Response {
        var headers = error.headers
        if let retry = error.retryAfter { headers[.retryAfter] = String(retry) }
        if let requestID { set(&headers, "x-request-id", requestID) }
        for field in extra where headers[field.name] == nil { headers.append(field) }
        return json(error.status, endpoint == .messages ? error.anthropicBody : error.openAIBody, headers: headers)
    }

    static func set(_ fields: inout HTTPFields, _ name: String, _ value: String) {
        if let field = HTTPField.Name(name) { fields[field] = value }
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
