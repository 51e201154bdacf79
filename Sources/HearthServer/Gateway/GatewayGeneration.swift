import Foundation
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// How a gateway generation ended, for the usage ledger, the cache and the log line.
struct RouteOutcome: Sendable {
    var status = 200
    var code: String?
    var text = ""
    var tokens: [LocalProvider.LocalToken] = []
    var usage = Usage(promptTokens: 0, completionTokens: 0)
    var reason = FinishReason.stop
    var servedBy = ""
    var switches: [(from: String, to: String, reason: String)] = []
    /// The output filter cut the answer.
    var filtered = false
    var cacheHit = false
    /// The error that ended it (status is then not 200).
    var error: APIError?

    init() {}

    init(failure: APIError, after partial: RouteOutcome) {
        self = partial
        status = failure.status
        code = failure.code
        error = failure
    }
}

/// Who asked for what, carried through a gateway generation.
struct GatewayRequest: Sendable {
    let endpoint: Endpoint
    let requestID: String
    let started: ContinuousClock.Instant
    let client: String?
    let model: String
}

extension HearthServer {
    /// `POST /v1/chat/completions`, `/v1/completions` and `/v1/messages` through the gateway:
    /// authenticate, limit, validate, filter, answer from the cache or the model route, record usage.
    /// `connection` is the request's channel, watched so that a client that goes away stops its answer.
    func gatewayGeneration(_ endpoint: Endpoint, _ request: Request, _ gateway: Gateway, connection: any Channel) async -> Response {
        let started = ContinuousClock.now
        let (number, requestID) = newRequestID()
        var headers = HTTPFields()
        var caller: Caller?
        var model = ""
        let job: GenerationJob
        let route: Gateway.ModelRoute
        var cacheKey: String?
        do {
            let (who, body) = try await gatewayAuthenticate(request, gateway)
            caller = who
            do { headers.append(contentsOf: try gateway.limiter.admit(who.client).headers) } catch let refusal as RateLimiter.Refusal {
                headers.append(contentsOf: refusal.quota.headers)
                throw refusal.error
            }
            let json = try RequestParser.json(body)
            let fields = try Fields(json)
            guard let name = try fields.string("model"), !name.isEmpty else {
                throw APIError.invalid("model", "'model' is required; GET /v1/models lists the models you may use.", code: "missing_field")
            }
            model = name
            route = try gateway.route(name, for: who.client)
            let isLocal: Bool
            if case .local = route.target { isLocal = true } else { isLocal = false }
            let parser = RequestParser(alias: name, maxTokensLimit: isLocal ? max(1, lock.withLock { self.context }) : 1 << 20)
            switch endpoint {
            case .chatCompletions: job = try parser.chat(json)
            case .completions: job = try parser.completion(json)
            case .messages: job = try parser.messages(json)
            }
            if !isLocal {
                if case .text = job.input {
                    throw APIError.invalid("model", "'\(name)' is a cloud route; /v1/completions is served by local routes only.")
                }
                if job.logprobs != nil {
                    throw APIError.invalid("logprobs", "'\(name)' is a cloud route; log-probabilities are served by local routes only.")
                }
            }
            if let filter = gateway.configuration.contentFilter, filter.blocks(Self.inputText(job)) {
                throw APIError(
                    status: 400, message: "The request was refused by the content filter.", type: "invalid_request_error",
                    code: "content_filtered", param: endpoint == .completions ? "prompt" : "messages")
            }
            if let cache = gateway.cache, let key = ResponseCache.key(route: name, job: job) {
                Self.set(&headers, "x-hearth-cache", "miss")
                if !Self.bypassesCache(request), let answer = cache.lookup(key) {
                    Self.set(&headers, "x-hearth-cache", "hit")
                    let call = GatewayRequest(endpoint: endpoint, requestID: requestID, started: started, client: who.client.name, model: name)
                    return await gatewayReplay(answer, job: job, context: call, headers: headers, gateway: gateway)
                }
                cacheKey = key
            }
            try admit()
        } catch {
            let call = GatewayRequest(endpoint: endpoint, requestID: requestID, started: started, client: caller?.client.name, model: model)
            return await gatewayError(error, context: call, headers: headers, gateway: gateway)
        }
        let context = GatewayRequest(endpoint: endpoint, requestID: requestID, started: started, client: caller?.client.name, model: model)
        // Admitted: from here every path releases the slot exactly once.
        let stream = RouteStream()
        register(number) { stream.cancel(ProviderError(.cancelled, provider: "gateway", message: "The server is shutting down.")) }
        // A client that leaves (queued, mid-answer, non-streaming or not) stops its answer at once.
        let watch = await watchConnection(connection) { stream.cancel(ClientGone()) }
        let timeout = options.requestTimeout
        let deadline = Task {
            try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            stream.cancel(ProviderError(.timeout, provider: "gateway", message: "The request took longer than \(Int(timeout)) seconds."))
        }
        var renderer = ResponseRenderer(job: job, requestID: requestID)
        do {
            let first: RouteStart
            switch route.target {
            case .local:
                first = try await stream.start(local: provider, job: job)
            case .router(let router):
                guard case .chat(let messages) = job.input else { throw APIError.invalid("model", "Cloud routes take chat requests only.") }
                first = try await stream.start(router: router, request: ChatRequest(messages: messages, options: job.options))
            }
            renderer.promptTokens = first.promptTokens ?? 0
            Self.set(&headers, "x-hearth-served-by", first.provider)
        } catch {
            watch.end()
            deadline.cancel()
            stream.cancel(CancellationError())
            release(number)
            return await gatewayError(error, context: context, headers: headers, gateway: gateway)
        }
        let filter = gateway.configuration.contentFilter.flatMap { $0.filterOutput ? $0 : nil }
        let storeKey = cacheKey
        let finish: @Sendable (RouteOutcome) async -> Void = { outcome in
            await self.gatewayRecord(outcome, context: context, gateway: gateway)
            if let cache = gateway.cache, let storeKey, outcome.status == 200, !outcome.filtered, outcome.reason != .cancelled {
                cache.store(storeKey, .init(text: outcome.text, usage: outcome.usage, reason: outcome.reason, servedBy: outcome.servedBy))
            }
        }
        if job.stream {
            let renderer = renderer
            var streamHeaders = Self.sseHeaders(requestID)
            streamHeaders.append(contentsOf: headers)
            return Response(
                status: .ok, headers: streamHeaders,
                body: ResponseBody { writer in
                    await self.gatewayStream(stream, renderer: renderer, filter: filter, writer: &writer, finish: finish)
                    watch.end()
                    deadline.cancel()
                    self.release(number)
                })
        }
        var outcome = await gatewayCollect(stream, filter: filter)
        watch.end()
        deadline.cancel()
        release(number)
        await finish(outcome)
        if let error = outcome.error {
            return Self.errorResponse(error, endpoint: endpoint, requestID: requestID, extra: headers)
        }
        var body = renderer.body(text: outcome.text, tokens: outcome.tokens, usage: outcome.usage, reason: outcome.reason)
        if outcome.filtered { body = Self.markFiltered(body, endpoint: endpoint) }
        body = Self.withProviderInfo(body, outcome)
        Self.set(&headers, "x-hearth-served-by", outcome.servedBy)
        Self.set(&headers, "x-request-id", requestID)
        outcome.text = ""
        return Self.json(200, body, headers: headers)
    }

    // MARK: Pieces

    /// An error response with the gateway's extra headers (rate limits, cache, provider).
    static func errorResponse(_ error: APIError, endpoint: Endpoint, requestID: String, extra: HTTPFields) -> Response {
        var response = errorResponse(error, endpoint: endpoint, requestID: requestID)
        for field in extra where response.headers[field.name] == nil { response.headers.append(field) }
        return response
    }

    static func set(_ fields: inout HTTPFields, _ name: String, _ value: String) {
        if let field = HTTPField.Name(name) { fields[field] = value }
    }

    static func bypassesCache(_ request: Request) -> Bool {
        guard let value = request.headers[.cacheControl]?.lowercased() else { return false }
        return value.contains("no-cache") || value.contains("no-store")
    }

    /// Every text of the request the filter reads: messages (system included) or the prompt.
    static func inputText(_ job: GenerationJob) -> String {
        switch job.input {
        case .chat(let messages): return messages.map(\.content).joined(separator: "\n")
        case .text(let text): return text
        }
    }

    /// Reads the body and authenticates the request (key or token, and signature when required).
    func gatewayAuthenticate(_ request: Request, _ gateway: Gateway) async throws -> (Caller, Data) {
        let body = try await readBody(request)
        let headers = request.headers
        let caller = try gateway.authenticator.authenticate(
            method: request.method.rawValue, path: request.head.path ?? request.uri.path,
            header: { name in HTTPField.Name(name).flatMap { headers[$0] } }, body: body)
        return (caller, body)
    }

    /// An error answer before any byte of the reply: recorded (when the client is known), logged.
    func gatewayError(_ error: Error, context: GatewayRequest, headers: HTTPFields, gateway: Gateway) async -> Response {
        let apiError = Self.gatewayAPIError(error)
        let outcome = RouteOutcome(failure: apiError, after: RouteOutcome())
        await gatewayRecord(outcome, context: context, gateway: gateway)
        return Self.errorResponse(apiError, endpoint: context.endpoint, requestID: context.requestID, extra: headers)
    }

    /// Writes usage (one transaction), counts tokens against the daily quota, logs one line.
    func gatewayRecord(_ outcome: RouteOutcome, context: GatewayRequest, gateway: Gateway) async {
        var tally = GenerationTally()
        if outcome.status == 200 { finished(outcome.usage, tally: &tally, started: context.started) }
        metrics.countRequest(endpoint: context.endpoint.rawValue, status: outcome.status)
        var metadata: Logger.Metadata = [
            "id": "\(context.requestID)", "path": "\(context.endpoint.rawValue)", "status": "\(outcome.status)",
            "client": "\(context.client ?? "-")", "model": "\(context.model.prefix(100))",
            "prompt_tokens": "\(outcome.usage.promptTokens)", "cached_tokens": "\(outcome.usage.cachedPromptTokens ?? 0)",
            "completion_tokens": "\(outcome.usage.completionTokens)", "ms": "\(Self.milliseconds(since: context.started))",
        ]
        if !outcome.servedBy.isEmpty { metadata["served_by"] = "\(outcome.servedBy)" }
        if !outcome.switches.isEmpty { metadata["failover"] = "\(outcome.switches.map { "\($0.from)->\($0.to)" }.joined(separator: ","))" }
        if outcome.cacheHit { metadata["cache"] = "hit" }
        if outcome.filtered { metadata["filtered"] = "output" }
        if let code = outcome.code { metadata["code"] = "\(code)" }
        guard let client = context.client else {
            logger.info("request", metadata: metadata)
            return
        }
        let now = gateway.clock.now()
        let usage = outcome.usage
        let entry = UsageLedger.Entry(
            requestID: context.requestID, day: RateLimiter.day(now), client: client, model: String(context.model.prefix(256)),
            servedBy: outcome.servedBy, status: outcome.status, promptTokens: usage.promptTokens,
            cachedTokens: usage.cachedPromptTokens ?? 0, completionTokens: usage.completionTokens, cacheHit: outcome.cacheHit)
        do { try await gateway.ledger.record(entry, at: now) } catch {
            logger.error("usage not recorded", metadata: ["id": "\(context.requestID)", "error": "\(UsageLedger.describe(error))"])
        }
        gateway.limiter.consume(client, tokens: usage.promptTokens + usage.completionTokens)
        logger.info("request", metadata: metadata)
    }

    /// A cached answer, whole or replayed as a stream; recorded like any answer.
    func gatewayReplay(
        _ answer: ResponseCache.Answer, job: GenerationJob, context: GatewayRequest, headers: HTTPFields, gateway: Gateway
    ) async -> Response {
        var outcome = RouteOutcome()
        outcome.usage = answer.usage
        outcome.reason = answer.reason
        outcome.servedBy = answer.servedBy
        outcome.cacheHit = true
        var headers = headers
        Self.set(&headers, "x-hearth-served-by", answer.servedBy)
        await gatewayRecord(outcome, context: context, gateway: gateway)
        var renderer = ResponseRenderer(job: job, requestID: context.requestID)
        renderer.promptTokens = answer.usage.promptTokens
        guard job.stream else {
            outcome.text = answer.text
            Self.set(&headers, "x-request-id", context.requestID)
            return Self.json(200, Self.withProviderInfo(renderer.body(text: answer.text, tokens: [], usage: answer.usage, reason: answer.reason), outcome), headers: headers)
        }
        var streamHeaders = Self.sseHeaders(context.requestID)
        streamHeaders.append(contentsOf: headers)
        let renderer2 = renderer
        return Response(
            status: .ok, headers: streamHeaders,
            body: ResponseBody { writer in
                var frames = renderer2.streamStart()
                frames.append(Self.providerFrame(renderer2, servedBy: answer.servedBy, switched: nil, cached: true))
                // Replayed in pieces of a few characters, as a stream would bring it.
                var rest = Substring(answer.text)
                while !rest.isEmpty {
                    frames += Self.textFrames(renderer2, String(rest.prefix(16)))
                    rest = rest.dropFirst(16)
                }
                frames += renderer2.streamEnd(usage: answer.usage, reason: answer.reason)
                try await Self.writeFrames(frames, &writer)
                try await writer.finish(nil)
            })
    }

    /// An error as the gateway answers it: a cloud provider's failure is the upstream's (502 for a
    /// refused key, a server error or a broken connection, 429 with its `Retry-After`, 504 for a
    /// timeout), never the gateway's own 401 or 500; everything else as the plain server answers it.
    static func gatewayAPIError(_ error: Error) -> APIError {
        guard let failure = error as? ProviderError, failure.provider != "local", failure.provider != "gateway" else {
            return apiError(error)
        }
        let message = "The upstream provider '\(failure.provider)' failed: \(failure.message)"
        switch failure.code {
        case .unauthorized:
            return APIError(status: 502, message: message, type: "upstream_error", code: "upstream_unauthorized")
        case .rateLimited(let retryAfter):
            return APIError(
                status: 429, message: message, type: "rate_limit_error", code: "upstream_rate_limited",
                retryAfter: retryAfter.map { max(1, Int($0.rounded(.up))) } ?? 1)
        case .server, .network, .decoding, .modelUnavailable:
            return APIError(status: 502, message: message, type: "upstream_error", code: "upstream_error")
        case .timeout:
            return APIError(status: 504, message: message, type: "timeout_error", code: "upstream_timeout")
        case .invalidRequest, .contextLengthExceeded, .cancelled:
            return apiError(error)
        }
    }

    /// Writes SSE frames in one network write; a failed write means the client left (``ClientGone``).
    static func writeFrames(_ frames: [Data], _ writer: inout any ResponseBodyWriter) async throws {
        guard !frames.isEmpty else { return }
        var buffer = ByteBuffer()
        for frame in frames { buffer.writeBytes(frame) }
        do { try await writer.write(buffer) } catch { throw ClientGone() }
    }

    /// Frames carrying reply text without per-token detail.
    static func textFrames(_ renderer: ResponseRenderer, _ text: String) -> [Data] {
        guard !text.isEmpty else { return [] }
        switch renderer.job.endpoint {
        case .chatCompletions: return [renderer.chatChunk(delta: ["content": .string(text)], logprobs: nil, finish: nil)]
        case .completions: return [renderer.completionChunk(text: text, logprobs: nil, finish: nil)]
        case .messages:
            return [
                ResponseRenderer.frame(
                    ["type": "content_block_delta", "index": 0, "delta": ["type": "text_delta", "text": .string(text)]],
                    event: "content_block_delta")
            ]
        }
    }

    /// A stream event saying which provider serves (and, after a failover, which one failed and why):
    /// an empty chunk with a `hearth` field (OpenAI formats), or a `hearth_provider` event (Anthropic).
    static func providerFrame(
        _ renderer: ResponseRenderer, servedBy: String, switched: (from: String, reason: String)?, cached: Bool = false
    ) -> Data {
        var info: [(String, JSONValue)] = [("served_by", .string(servedBy))]
        if let switched {
            info.append(("switched_from", .string(switched.from)))
            info.append(("reason", .string(switched.reason)))
        }
        if cached { info.append(("cache", "hit")) }
        let job = renderer.job
        switch job.endpoint {
        case .messages:
            return ResponseRenderer.frame(.object([("type", "hearth_provider")] + info), event: "hearth_provider")
        case .chatCompletions, .completions:
            let choice: JSONValue =
                job.endpoint == .chatCompletions
                ? ["index": 0, "delta": [:], "logprobs": nil, "finish_reason": nil]
                : ["text": "", "index": 0, "logprobs": nil, "finish_reason": nil]
            return ResponseRenderer.frame(
                .object([
                    ("id", .string(renderer.id)),
                    ("object", job.endpoint == .chatCompletions ? "chat.completion.chunk" : "text_completion"),
                    ("created", .int(renderer.created)), ("model", .string(job.model)), ("system_fingerprint", "hearth"),
                    ("choices", [choice]), ("hearth", .object(info)),
                ]))
        }
    }

    /// `hearth: {served_by, switched: [...], cache}` added to a whole answer.
    static func withProviderInfo(_ body: JSONValue, _ outcome: RouteOutcome) -> JSONValue {
        guard case .object(var pairs) = body else { return body }
        var info: [(String, JSONValue)] = [("served_by", .string(outcome.servedBy))]
        if !outcome.switches.isEmpty {
            info.append(
                ("switched", .array(outcome.switches.map { ["from": .string($0.from), "to": .string($0.to), "reason": .string($0.reason)] })))
        }
        if outcome.cacheHit { info.append(("cache", "hit")) }
        pairs.append(("hearth", .object(info)))
        return .object(pairs)
    }

    /// A whole answer cut by the output filter: `finish_reason: "content_filter"` (Anthropic: `stop_reason: "refusal"`).
    static func markFiltered(_ body: JSONValue, endpoint: Endpoint) -> JSONValue {
        guard case .object(var pairs) = body else { return body }
        for index in pairs.indices {
            if endpoint == .messages, pairs[index].0 == "stop_reason" { pairs[index].1 = "refusal" }
            if pairs[index].0 == "choices", case .array(var choices) = pairs[index].1, case .object(var choice)? = choices.first {
                for field in choice.indices where choice[field].0 == "finish_reason" { choice[field].1 = "content_filter" }
                choices[0] = .object(choice)
                pairs[index].1 = .array(choices)
            }
        }
        return .object(pairs)
    }

    /// The end frames of a stream cut by the output filter.
    static func filteredEnd(_ renderer: ResponseRenderer, usage: Usage) -> [Data] {
        var frames = renderer.streamEnd(usage: usage, reason: .stop)
        guard let first = frames.first, let text = String(data: first, encoding: .utf8) else { return frames }
        let replaced =
            renderer.job.endpoint == .messages
            ? text.replacingOccurrences(of: "\"stop_reason\":\"end_turn\"", with: "\"stop_reason\":\"refusal\"")
            : text.replacingOccurrences(of: "\"finish_reason\":\"stop\"", with: "\"finish_reason\":\"content_filter\"")
        if renderer.job.endpoint == .messages, frames.count > 1, let delta = String(data: frames[1], encoding: .utf8) {
            frames[1] = Data(delta.replacingOccurrences(of: "\"stop_reason\":\"end_turn\"", with: "\"stop_reason\":\"refusal\"").utf8)
        } else {
            frames[0] = Data(replaced.utf8)
        }
        return frames
    }

    /// Collects a whole answer, applying the output filter to the complete text.
    func gatewayCollect(_ stream: RouteStream, filter: ContentFilter?) async -> RouteOutcome {
        var outcome = RouteOutcome()
        var finished = false
        do {
            for try await event in stream.events {
                switch event {
                case .servedBy(let id): outcome.servedBy = id
                case .switched(let from, let to, let reason): outcome.switches.append((from, to, reason))
                case .promptTokens(let count): outcome.usage.promptTokens = count
                case .text(let text, let token):
                    outcome.text += text
                    if let token { outcome.tokens.append(token) }
                    outcome.usage.completionTokens += 1
                case .finished(let usage, let reason):
                    outcome.usage = usage
                    outcome.reason = reason
                    finished = true
                }
            }
            if !finished { throw ProviderError(.cancelled, provider: "gateway", message: "The generation was stopped.") }
        } catch {
            return RouteOutcome(failure: Self.gatewayAPIError(error), after: outcome)
        }
        if let filter, let cut = filter.firstMatch(in: outcome.text) {
            outcome.text = String(outcome.text.prefix(cut))
            outcome.tokens = []
            outcome.filtered = true
        }
        return outcome
    }

    /// Writes a route's answer as SSE; the output filter checks the text before each piece is sent.
    func gatewayStream(
        _ stream: RouteStream, renderer: ResponseRenderer, filter: ContentFilter?, writer: inout any ResponseBodyWriter,
        finish: @Sendable (RouteOutcome) async -> Void
    ) async {
        var outcome = RouteOutcome()
        var announced = false
        var textOffset = 0
        var recorded = false
        let send = Self.writeFrames
        do {
            try await send(renderer.streamStart(), &writer)
            do {
                reading: for try await event in stream.events {
                    switch event {
                    case .servedBy(let id):
                        outcome.servedBy = id
                        if !announced {
                            announced = true
                            try await send([Self.providerFrame(renderer, servedBy: id, switched: nil)], &writer)
                        }
                    case .switched(let from, let to, let reason):
                        outcome.switches.append((from, to, reason))
                        outcome.servedBy = to
                        try await send([Self.providerFrame(renderer, servedBy: to, switched: (from, reason))], &writer)
                    case .promptTokens(let count):
                        outcome.usage.promptTokens = count
                    case .text(let text, let token):
                        outcome.usage.completionTokens += 1
                        if let filter, let cut = filter.firstMatch(in: outcome.text + text) {
                            let keep = String(text.prefix(max(0, cut - outcome.text.count)))
                            try await send(Self.textFrames(renderer, keep), &writer)
                            outcome.text += keep
                            outcome.filtered = true
                            stream.cancel(CancellationError())
                            await finish(outcome)
                            recorded = true
                            try await send(Self.filteredEnd(renderer, usage: outcome.usage), &writer)
                            break reading
                        }
                        if let token, renderer.job.logprobs != nil {
                            try await send(renderer.streamToken(token, textOffset: textOffset), &writer)
                        } else {
                            try await send(Self.textFrames(renderer, text), &writer)
                        }
                        outcome.text += text
                        textOffset += text.count
                    case .finished(let usage, let reason):
                        outcome.usage = usage
                        outcome.reason = reason
                        // Recorded before the last frames: a reply the client saw complete is in the ledger.
                        await finish(outcome)
                        recorded = true
                        try await send(renderer.streamEnd(usage: usage, reason: reason), &writer)
                    }
                }
                if !recorded { throw ProviderError(.cancelled, provider: "gateway", message: "The generation was stopped.") }
            } catch is ClientGone {
                throw ClientGone()
            } catch {
                let apiError = Self.gatewayAPIError(error)
                await finish(RouteOutcome(failure: apiError, after: outcome))
                try await send([renderer.streamError(apiError)], &writer)
                try? await writer.finish(nil)
                return
            }
            do { try await writer.finish(nil) } catch { throw ClientGone() }
        } catch {
            // The client disconnected: stop the answer now.
            stream.cancel(CancellationError())
            if !recorded {
                await finish(RouteOutcome(failure: Self.gatewayAPIError(ClientGone()), after: outcome))
            }
        }
    }
}
