import Foundation
import HearthConstraints
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Thrown when writing to the client fails: it has gone away.
struct ClientGone: Error {}

/// How a generation ended, for the usage ledger, the cache, the metrics and the log line.
struct RouteOutcome: Sendable {
    var status = 200
    var code: String?
    /// The answer's text, per-token detail, tool calls and end (one choice's reading of them;
    /// with several choices, each is in ``choices``).
    var answer = ChoiceOutcome()
    var text: String {
        get { answer.text }
        set { answer.text = newValue }
    }
    var tokens: [LocalProvider.LocalToken] { answer.tokens }
    /// The tool calls of the answer, reassembled from their events.
    var toolCalls: ToolCallCollector {
        get { answer.toolCalls }
        set { answer.toolCalls = newValue }
    }
    var reason: FinishReason {
        get { answer.reason }
        set { answer.reason = newValue }
    }
    /// The local model answers (it reports the prompt's length first): its tokens arrive as
    /// text events, a call's included; a cloud provider's call fragments are counted apart.
    var local = false
    var usage = Usage(promptTokens: 0, completionTokens: 0)
    /// The provider reported usage (a cloud stream cut short may not have).
    var usageReported = false
    var servedBy = ""
    var switches: [(from: String, to: String, reason: String)] = []
    /// The output filter cut the answer.
    var filtered = false
    var cacheHit = false
    /// The time to the first token, when there was one.
    var firstToken: Duration?
    /// The local model's time from admission to the start of the prompt (its turn among the
    /// slots, tokenizing, compiling a schema); nil for cloud providers.
    var queued: Duration?
    /// The error that ended it (status is then not 200).
    var error: APIError?
    /// When the provider took it, the prompt was ready (local), the first token came and the
    /// answer finished: the stages of its trace (``HearthServer/traceGeneration(_:call:)``).
    var servedAt: ContinuousClock.Instant?
    var promptAt: ContinuousClock.Instant?
    var firstTokenAt: ContinuousClock.Instant?
    var finishedAt: ContinuousClock.Instant?
    /// Each choice's answer when the request asked for several (`n` > 1; the fields above then
    /// hold the whole answer's usage and end, and no text).
    var choices: [ChoiceOutcome] = []

    init() {}

    init(failure: APIError, after partial: RouteOutcome) {
        self = partial
        status = failure.status
        code = failure.code
        error = failure
    }
}

/// One choice's answer of a request for several.
struct ChoiceOutcome: Sendable {
    var text = ""
    var tokens: [LocalProvider.LocalToken] = []
    var toolCalls = ToolCallCollector()
    var reason = FinishReason.stop
    var finished = false
    /// The reasoning parts, complete (``RouteEvent/reasoningEnded(_:)``).
    var reasoning: [ReasoningPart] = []

    /// Takes one of the choice's events (text, a call's step, its reasoning, its end).
    mutating func add(_ event: RouteEvent) {
        switch event {
        case .reasoningEnded(let part): reasoning.append(part)
        case .text(let piece, let token):
            text += piece
            // Log-probabilities describe the text: a call's tokens (empty text) are left out.
            if let token, !(piece.isEmpty && toolCalls.hasOpenCall) { tokens.append(token) }
        case .toolCall(let step): toolCalls.add(step)
        case .finished(_, let reason):
            self.reason = reason
            finished = true
        default: break
        }
    }
}

/// Who asked for what, carried through a generation.
struct GenerationCall: Sendable {
    let endpoint: Endpoint
    let requestID: String
    let started: ContinuousClock.Instant
    /// The client's name (nil: refused before it was known).
    var client: String?
    /// The model name the client asked for.
    var model: String
    /// Tokens held against the client's daily quota until the answer is settled.
    var reservation: RateLimiter.Reservation?
    /// The request's `traceparent` header (its spans join the caller's trace).
    var traceParent: String?
    /// When the local model asked for the request's fair-queue turn and got it (its trace).
    let stageMarks = StageMarks()
}

extension HearthServer {
    /// `POST /v1/chat/completions`, `/v1/completions`, `/v1/messages` and `/v1/responses`, one
    /// pipeline for every route: the middleware has authenticated the caller, counted the
    /// request and read the body; here the body is parsed for its API, the model routed, the
    /// input filtered, the cache consulted, the client's tokens reserved and the request
    /// admitted to its route's pool; then the answer is streamed or collected through the
    /// output filter, recording metrics, usage and the cache on the way.
    func generate(_ endpoint: Endpoint, _ request: Request, _ context: ServerRequestContext) async -> Response {
        let client = (context.caller ?? GatewayAuthenticator.anonymous).client
        var call = GenerationCall(
            endpoint: endpoint, requestID: context.requestID, started: context.started, client: client.name, model: "")
        call.traceParent = context.note?.traceParent
        var headers = context.quotaHeaders
        let prepared: PreparedGeneration
        do {
            switch try await prepare(endpoint, request, context, client: client, call: &call, headers: &headers) {
            case .answered(let response): return response
            case .ready(let ready): prepared = ready
            }
        } catch {
            return await refuse(error, call: call, headers: headers)
        }
        let job = prepared.job
        // Admitted: from here the lease gives the place back exactly once, whether the body
        // of a streamed answer runs or not.
        let stream = RouteStream()
        let lease: SlotLease
        do {
            try options.faults.check(.admit)
            lease = try admit(prepared.route, client: client) {
                stream.cancel(ProviderError(.cancelled, provider: "gateway", message: "The server is shutting down."))
            }
        } catch {
            return await refuse(error, call: call, headers: headers)
        }
        // A client that leaves (queued, mid-answer, non-streaming or not) stops its answer at once.
        let watch = await watchConnection(context.channel) { stream.cancel(ClientGone()) }
        let timeout = options.requestTimeout
        let deadline = Task {
            try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            stream.cancel(ProviderError(.timeout, provider: "gateway", message: "The request took longer than \(Int(timeout)) seconds."))
        }
        let cleanup: @Sendable () -> Void = {
            watch.end()
            deadline.cancel()
            lease.end()
        }
        var renderer = ResponseRenderer(job: job, requestID: call.requestID, reportsProvider: configured)
        do {
            // A local request waits its turn in the fair queue (between clients) before the
            // model's own queue; it still counts as admitted and waiting.
            // `n` choices take `n` slots (in waves of at most the model's parallel sequences).
            let admission = localAdmission(client: client.name).map { [marks = call.stageMarks] in marks.timing($0) }
            try options.faults.check(.render)
            let first = try await stream.start(prepared.route, job: job, admission: admission)
            renderer.promptTokens = first.promptTokens ?? 0
            Self.set(&headers, "x-hearth-served-by", first.provider)
        } catch {
            stream.cancel(CancellationError())
            cleanup()
            return await refuseStart(error, job: job, renderer: renderer, call: call, headers: headers)
        }
        return await answer(
            stream, job: job, renderer: renderer, call: call, headers: headers, cacheKey: prepared.cacheKey, channel: context.channel,
            cleanup: cleanup)
    }

    /// A request parsed, checked and with its tokens reserved, ready to be admitted.
    struct PreparedGeneration {
        var job: GenerationJob
        let route: Gateway.ModelRoute
        /// The response cache's key when the answer may be stored.
        var cacheKey: String?
    }

    /// What ``prepare(_:_:_:client:call:headers:)`` found: a request to run, or an answer already
    /// made (from the response cache).
    enum Preparation {
        case ready(PreparedGeneration)
        case answered(Response)
    }

    /// The stages before admission: the body parsed for its API and the model routed
    /// (``parseJob(_:_:client:call:)``), the input filtered, the response cache consulted, the
    /// client's tokens reserved.
    func prepare(
        _ endpoint: Endpoint, _ request: Request, _ context: ServerRequestContext, client: GatewayConfiguration.Client,
        call: inout GenerationCall, headers: inout HTTPFields
    ) async throws -> Preparation {
        var (job, route) = try await parseJob(endpoint, context, client: client, call: &call)
        try options.faults.check(.parse)
        if let filter = gateway.configuration.contentFilter, await filter.screens(Self.inputText(job)) {
            throw APIError(
                status: 400, message: "The request was refused by the content filter.", type: "invalid_request_error",
                code: "content_filtered", param: endpoint == .completions ? "prompt" : endpoint == .responses ? "input" : "messages")
        }
        if endpoint == .responses, let mcp = job.mcp {
            // The tool loop runs here, with the operator's MCP servers (MCPResponses.swift); never cached.
            return .answered(try await respondWithMCP(job, mcp, route: route, client: client, call: call, context: context, headers: headers))
        }
        var cacheKey: String?
        if let cache = gateway.cache, let key = ResponseCache.key(route: call.model, client: cache.shared ? nil : client.name, job: job) {
            Self.set(&headers, "x-hearth-cache", "miss")
            if !Self.bypassesCache(request), let answer = cache.lookup(key) {
                Self.set(&headers, "x-hearth-cache", "hit")
                return .answered(await replay(answer, job: job, call: call, headers: headers))
            }
            cacheKey = key
        }
        // Reserve the tokens this answer may use before any work: a client's quota holds
        // however many of its requests are in flight. Without max_tokens the reply is
        // capped at what the quota has left.
        // The prompt is counted by the local tokenizer on local routes (only for clients with
        // a quota: it costs a tokenization), estimated from its bytes on cloud routes.
        var prompt = Self.promptEstimate(job)
        if client.tokensPerDay != nil, case .local(let provider) = route.target {
            prompt = try await provider.promptTokenCount(job.input)
        }
        // Several choices share the prompt and each may write the whole reply.
        let reply = (job.options.maxTokens ?? client.maxTokens).map { $0 * job.choices }
        let (reservation, cap) = try gateway.limiter.reserve(client, prompt: prompt, reply: reply)
        call.reservation = reservation
        if job.options.maxTokens == nil, let cap { job.options.maxTokens = max(1, cap / job.choices) }
        return .ready(PreparedGeneration(job: job, route: route, cacheKey: cacheKey))
    }

    /// The body parsed for its endpoint's API, the model routed for `client`, the tools
    /// counted and (local routes) their schemas compiled; what only local routes serve is
    /// refused on cloud routes.
    func parseJob(
        _ endpoint: Endpoint, _ context: ServerRequestContext, client: GatewayConfiguration.Client, call: inout GenerationCall
    ) async throws -> (GenerationJob, Gateway.ModelRoute) {
        let json = try RequestParser.json(context.body)
        let name = try RequestParser.requiredModel(try Fields(json))
        call.model = name
        let route = try gateway.route(name, for: client)
        let limit = route.isLocal ? max(1, lock.withLock { self.context }) : 1 << 20
        let parser = RequestParser(alias: name, maxTokensLimit: min(limit, client.maxTokens ?? limit), body: context.body)
        var job: GenerationJob
        switch endpoint {
        case .chatCompletions: job = try parser.chat(json)
        case .completions: job = try parser.completion(json)
        case .messages: job = try parser.messages(json)
        case .responses: job = try parser.responses(json)
        }
        job.options.reasoning = job.hints.reasoning.options  // issue 57: reasoning_effort, reasoning, thinking
        if job.options.tools.count > RequestLimits.maxTools {
            throw APIError.invalid(
                "tools", "'tools' has \(job.options.tools.count) tools; at most \(RequestLimits.maxTools) are allowed per request.")
        }
        // Each tool's schema is compiled on the compile threads, within the compile budget.
        if route.isLocal, !job.options.tools.isEmpty, let error = try await ConstraintCompiler.run({ [job] in RequestParser.toolSchemaError(job) }) {
            throw error
        }
        if !route.isLocal { try Self.refuseLocalOnlyFields(job, model: name) }
        return (job, route)
    }

    /// What only a local route can serve, refused on a cloud route with the field named.
    static func refuseLocalOnlyFields(_ job: GenerationJob, model name: String) throws {
        if case .text = job.input {
            throw APIError.invalid("model", "'\(name)' is a cloud route; /v1/completions is served by local routes only.")
        }
        if job.logprobs != nil {
            throw APIError.invalid("logprobs", "'\(name)' is a cloud route; log-probabilities are served by local routes only.")
        }
        if job.choices > 1 {
            throw APIError.invalid("n", "'\(name)' is a cloud route; several choices (n > 1) are served by local routes only.")
        }
        if job.options.ignoreEOS == true {
            throw APIError.invalid("ignore_eos", "'\(name)' is a cloud route; ignore_eos is served by local routes only.")
        }
        if job.endpoint == .chatCompletions && job.options.continueFinalMessage == true {
            throw APIError.invalid(
                "continue_final_message", "'\(name)' is a cloud route; continue_final_message is served by local routes only.")
        }
        if job.options.chatTemplateKwargs != nil {
            throw APIError.invalid(
                "chat_template_kwargs", "'\(name)' is a cloud route; chat_template_kwargs is served by local routes only.")
        }
    }

    /// An answer that failed to start, in the API's error shape (a streamed Responses request
    /// gets `response.failed` in its stream). A schema or grammar that cannot be enforced is
    /// refused here, before any text, naming the field that carried it.
    func refuseStart(
        _ error: Error, job: GenerationJob, renderer: ResponseRenderer, call: GenerationCall, headers: HTTPFields
    ) async -> Response {
        var apiError = Self.gatewayAPIError(error)
        if let constraint = (error as? ProviderError)?.underlying as? ConstraintError {
            apiError = await Self.constraintRefusal(constraint, job: job)
        } else if apiError.concernsResponseFormat, let param = job.formatParam {
            apiError.param = param  // a format this model cannot take, named where the request put it
        }
        guard job.stream, call.endpoint == .responses else { return await refuse(apiError, call: call, headers: headers) }
        // The Responses API reports a failure to start as `response.failed` in the stream.
        await record(RouteOutcome(failure: apiError, after: RouteOutcome()), call: call)
        var renderer = renderer
        var frames = renderer.streamStart().prefix(2).map { $0 }
        frames.append(renderer.streamError(apiError, text: ""))
        var streamHeaders = Self.sseHeaders(call.requestID)
        streamHeaders.append(contentsOf: headers)
        var buffer = ByteBuffer()
        for frame in frames { buffer.writeBytes(frame) }
        return Response(status: .ok, headers: streamHeaders, body: .init(byteBuffer: buffer))
    }

    /// A schema, pattern or grammar the local model could not enforce, named by what carried
    /// it: one tool's schema (the tools' call format names the tool at fault, or the tool's
    /// schema does not compile alone), the request's response format, or the tools' call format.
    static func constraintRefusal(_ constraint: ConstraintError, job: GenerationJob) async -> APIError {
        if let index = constraint.schemaIndex, job.toolSchemaParams.indices.contains(index) {
            return .from(constraint, .toolSchema(param: job.toolSchemaParams[index]))
        }
        if !job.options.tools.isEmpty, let toolError = try? await ConstraintCompiler.run({ RequestParser.toolSchemaError(job) }) {
            return toolError
        }
        if let param = job.formatParam { return .from(constraint, .responseFormat(param: param)) }
        return .from(constraint, job.options.tools.isEmpty ? .responseFormat(param: "response_format") : .toolCalls)
    }

    /// The started answer, streamed or collected through the output filter; `settle` records
    /// it once and stores it in the response cache under `cacheKey`; `cleanup` ends the
    /// request's watches and lease.
    func answer(
        _ stream: RouteStream, job: GenerationJob, renderer: ResponseRenderer, call: GenerationCall, headers: HTTPFields,
        cacheKey: String?, channel: any Channel, cleanup: @escaping @Sendable () -> Void
    ) async -> Response {
        var headers = headers
        let filter = gateway.configuration.contentFilter.flatMap { $0.filterOutput ? $0 : nil }
        let settle: @Sendable (RouteOutcome) async -> Void = { [call] outcome in
            await self.record(outcome, call: call)
            if let cache = self.gateway.cache, let cacheKey, outcome.status == 200, !outcome.filtered, outcome.reason != .cancelled {
                cache.store(
                    cacheKey,
                    .init(
                        text: outcome.text, toolCalls: outcome.toolCalls.calls, usage: outcome.usage, reason: outcome.reason,
                        servedBy: outcome.servedBy, reasoning: outcome.answer.reasoning))
            }
        }
        if job.stream {
            var streamHeaders = Self.sseHeaders(call.requestID)
            streamHeaders.append(contentsOf: headers)
            let writeTimeout = options.writeTimeout
            let started = call.started
            return Response(
                status: .ok, headers: streamHeaders,
                body: ResponseBody { [renderer] writer in
                    // A client that stops reading: after writeTimeout the connection is closed,
                    // the answer stopped and its place given back.
                    let watchdog = WriteWatchdog(timeout: writeTimeout) {
                        channel.close(mode: .all, promise: nil)
                        stream.cancel(ClientGone())
                    }
                    await self.writeStream(
                        stream, renderer: renderer, filter: filter, started: started, writer: &writer, watchdog: watchdog, settle: settle)
                    watchdog.stop()
                    cleanup()
                })
        }
        var outcome = await drive(stream, filter: filter, started: call.started, emit: { _ in }, settle: settle)
        cleanup()
        if let error = outcome.error {
            return Self.errorResponse(error, endpoint: call.endpoint, requestID: call.requestID, extra: headers)
        }
        let body = renderer.body(outcome)
        Self.set(&headers, "x-hearth-served-by", outcome.servedBy)
        Self.set(&headers, "x-request-id", call.requestID)
        outcome.text = ""
        return Self.json(200, body, headers: headers)
    }

    // MARK: One reading of an answer

    /// Reads a route's answer through the output filter: records the time to the first token
    /// and between tokens, counts usage, and hands each event to `emit` as it goes out. `settle`
    /// runs exactly once: before the answer's last event is emitted (a reply the client saw
    /// complete is already in the ledger), or when the answer failed or the client left.
    func drive(
        _ stream: RouteStream, filter: ContentFilter?, started: ContinuousClock.Instant, emit: (RouteEvent) async throws -> Void,
        settle: @Sendable (RouteOutcome) async -> Void
    ) async -> RouteOutcome {
        var outcome = RouteOutcome()
        var screen = filter.map { OutputScreen(filter: $0) }
        var choiceScreens: [Int: OutputScreen] = [:]
        var previous: ContinuousClock.Instant?
        var settled = false
        do {
            reading: for try await raw in stream.events {
                if Self.isGenerated(raw, local: outcome.local) {
                    // Timed and counted as the provider gives them, before the filter holds any back.
                    let now = ContinuousClock.now
                    if let previous {
                        metrics.timePerOutputToken.record(Self.seconds(now - previous))
                    } else {
                        outcome.firstToken = now - started
                        outcome.firstTokenAt = now
                        metrics.timeToFirstToken.record(Self.seconds(now - started))
                    }
                    previous = now
                    outcome.usage.completionTokens += 1
                    try options.faults.check(.run)
                }
                let out = Self.screened(raw, filter: filter, screen: &screen, choiceScreens: &choiceScreens)
                for event in out {
                    let last = outcome.take(event, started: started)
                    if case .filtered = event { stream.cancel(CancellationError()) }
                    if last {
                        try options.faults.check(.settle)
                        settled = true
                        await settle(outcome)
                    }
                    try await emit(event)
                    if last { break reading }
                }
            }
            if !settled { throw ProviderError(.cancelled, provider: "gateway", message: "The generation was stopped.") }
        } catch {
            // The client left (its write failed, or the watcher saw it go), the deadline passed,
            // the server drained, or the provider failed.
            stream.cancel(CancellationError())
            if !settled {
                outcome = RouteOutcome(failure: Self.gatewayAPIError(error), after: outcome)
                await settle(outcome)
            } else if error is ClientGone {
                outcome.code = "client_closed"
            }
        }
        return outcome
    }

    /// `raw` through the output filter: each choice screened on its own (one cut ends the
    /// whole answer); without a filter, `raw` itself.
    static func screened(
        _ raw: RouteEvent, filter: ContentFilter?, screen: inout OutputScreen?, choiceScreens: inout [Int: OutputScreen]
    ) -> [RouteEvent] {
        if case .choice(let index, let inner) = raw, let filter {
            var current = choiceScreens[index] ?? OutputScreen(filter: filter)
            let out = current.pass(inner).map { if case .filtered = $0 { $0 } else { RouteEvent.choice(index, $0) } }
            choiceScreens[index] = current
            return out
        }
        if var current = screen {
            let out = current.pass(raw)
            screen = current
            return out
        }
        return [raw]
    }

    /// Writes a route's answer as server-sent events in the API's format.
    func writeStream(
        _ stream: RouteStream, renderer: ResponseRenderer, filter: ContentFilter?, started: ContinuousClock.Instant,
        writer: inout any ResponseBodyWriter, watchdog: WriteWatchdog, settle: @Sendable (RouteOutcome) async -> Void
    ) async {
        var renderer = renderer
        var text = ""
        func send(_ frames: [Data], _ writer: inout any ResponseBodyWriter) async throws {
            guard !frames.isEmpty else { return }
            var buffer = ByteBuffer()
            for frame in frames { buffer.writeBytes(frame) }
            watchdog.begin()
            defer { watchdog.end() }
            do { try await writer.write(buffer) } catch { throw ClientGone() }
        }
        do {
            try await send(renderer.streamStart(), &writer)
        } catch {
            stream.cancel(CancellationError())
            await settle(RouteOutcome(failure: Self.apiError(ClientGone()), after: RouteOutcome()))
            return
        }
        let outcome = await drive(
            stream, filter: filter, started: started,
            emit: { event in
                if case .text(let piece, _) = event { text += piece }
                try await send(renderer.frames(for: event, text: text), &writer)
            }, settle: settle)
        if let error = outcome.error, error.code != "client_closed" {
            try? await send([renderer.streamError(error, text: text)], &writer)
        }
        try? await writer.finish(nil)
    }

    // MARK: Pieces

    /// Whether an event is a generated piece, timed and counted as a token: text (the local
    /// model's tokens, a tool call's included), or a cloud provider's piece of a call's arguments.
    static func isGenerated(_ event: RouteEvent, local: Bool) -> Bool {
        switch event {
        case .text: return true
        case .toolCall(.arguments): return !local
        case .choice(_, let inner): return isGenerated(inner, local: local)
        default: return false
        }
    }

    /// The streaming headers.
    static func sseHeaders(_ requestID: String) -> HTTPFields {
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        set(&headers, "x-request-id", requestID)
        set(&headers, "x-accel-buffering", "no")
        return headers
    }

    static func bypassesCache(_ request: Request) -> Bool {
        guard let value = request.headers[.cacheControl]?.lowercased() else { return false }
        return value.contains("no-cache") || value.contains("no-store")
    }

    /// Every text of the request the filter reads: messages (system included, tool calls'
    /// arguments and tool results too) and tool descriptions, or the prompt.
    static func inputText(_ job: GenerationJob) -> String {
        switch job.input {
        case .chat(let messages):
            let calls = messages.flatMap(\.toolCalls).map { "\($0.name) \($0.arguments)" }
            let tools = job.options.tools.map { "\($0.name) \($0.description ?? "") \($0.parameters)" }
            return (messages.map(\.content) + calls + tools).joined(separator: "\n")
        case .text(let text): return text
        }
    }

    /// A cloud prompt's length in tokens as reserved before the upstream counts it: one token
    /// per four bytes, rounded up, plus four per message for the roles and separators (settled
    /// against the upstream's count when the answer is done).
    static func promptEstimate(_ job: GenerationJob) -> Int {
        let messages: Int
        if case .chat(let list) = job.input { messages = list.count } else { messages = 0 }
        return (inputText(job).utf8.count + 3) / 4 + 4 * messages
    }

    /// A request refused before any byte of its answer: recorded (when the client is known), logged.
    func refuse(_ error: Error, call: GenerationCall, headers: HTTPFields) async -> Response {
        let apiError = Self.gatewayAPIError(error)
        await record(RouteOutcome(failure: apiError, after: RouteOutcome()), call: call)
        return Self.errorResponse(apiError, endpoint: call.endpoint, requestID: call.requestID, extra: headers)
    }

    /// Settles one generation: metrics, the client's tokens against its quota (the reservation
    /// given back and the real count charged — the prompt estimate when a provider cut short
    /// reported none), a usage row (one transaction, when there is a ledger) and one log line.
    func record(_ outcome: RouteOutcome, call: GenerationCall) async {
        defer { traceGeneration(outcome, call: call) }  // the settle stage ends with this function
        var usage = outcome.usage
        // An answer that began but whose provider never reported usage (a cloud stream cut short).
        if !outcome.usageReported, usage.promptTokens == 0, usage.completionTokens > 0, let reservation = call.reservation {
            usage.promptTokens = reservation.promptEstimate
        }
        if outcome.status == 200 {
            metrics.promptTokens.increment(by: Int64(usage.promptTokens))
            metrics.cachedPromptTokens.increment(by: Int64(usage.cachedPromptTokens ?? 0))
            metrics.generatedTokens.increment(by: Int64(usage.completionTokens))
            metrics.draftedTokens.increment(by: Int64(usage.draftedTokens ?? 0))
            metrics.acceptedDraftTokens.increment(by: Int64(usage.acceptedDraftTokens ?? 0))
            if let shaped = usage.budgetShapedTokens, shaped > 0 {
                metrics.budgetShapedTokens.increment(by: Int64(shaped))
                metrics.budgetShapedAnswers.increment()
            }
            metrics.requestDuration.record(Self.seconds(ContinuousClock.now - call.started))
        }
        metrics.countRequest(endpoint: call.endpoint.rawValue, status: outcome.status)
        metrics.recordServed(
            model: UsageLedger.safeName(call.model), provider: outcome.servedBy.isEmpty ? "none" : UsageLedger.safeName(outcome.servedBy),
            route: call.endpoint.rawValue, finishReason: outcome.status == 200 ? outcome.reason.rawValue : "error",
            promptTokens: outcome.status == 200 ? usage.promptTokens : 0, generatedTokens: usage.completionTokens,
            timeToFirstToken: outcome.firstToken.map(Self.seconds))
        if let queued = outcome.queued { metrics.recordQueueTime(model: UsageLedger.safeName(call.model), seconds: Self.seconds(queued)) }
        for change in outcome.switches { metrics.countFailover(from: change.from, to: change.to, reason: change.reason) }
        if outcome.cacheHit { metrics.countResponseCacheHit(model: UsageLedger.safeName(call.model)) }
        var metadata: Logger.Metadata = [
            "id": "\(call.requestID)", "path": "\(call.endpoint.rawValue)", "status": "\(outcome.status)",
            "client": "\(call.client ?? "-")", "model": "\(UsageLedger.safeName(call.model))",
            "prompt_tokens": "\(usage.promptTokens)", "cached_tokens": "\(usage.cachedPromptTokens ?? 0)",
            "completion_tokens": "\(usage.completionTokens)", "ms": "\(Self.milliseconds(since: call.started))",
        ]
        if let first = outcome.firstToken { metadata["ttft_ms"] = "\(Int(Self.seconds(first) * 1000))" }
        if !outcome.servedBy.isEmpty { metadata["served_by"] = "\(outcome.servedBy)" }
        if !outcome.switches.isEmpty { metadata["failover"] = "\(outcome.switches.map { "\($0.from)->\($0.to)" }.joined(separator: ","))" }
        if outcome.cacheHit { metadata["cache"] = "hit" }
        if outcome.filtered { metadata["filtered"] = "output" }
        if let code = outcome.code { metadata["code"] = "\(code)" }
        if let detail = outcome.error?.logDetail { metadata["upstream_error"] = "\(detail)" }
        logger.info("request", metadata: metadata)
        let charged = usage.promptTokens + usage.completionTokens
        if let reservation = call.reservation {
            gateway.limiter.settle(reservation, used: charged)
        } else if let client = call.client, charged > 0 {
            gateway.limiter.consume(client, tokens: charged)
        }
        guard let client = call.client, let ledger = gateway.ledger else { return }
        let now = gateway.clock.now()
        let entry = UsageLedger.Entry(
            requestID: call.requestID, day: RateLimiter.day(now), client: client,
            model: gateway.routes[call.model] == nil ? "-" : call.model, servedBy: outcome.servedBy, status: outcome.status,
            promptTokens: usage.promptTokens, cachedTokens: usage.cachedPromptTokens ?? 0, completionTokens: usage.completionTokens,
            cacheHit: outcome.cacheHit)
        // A refusal (a 4xx before any work) is held and written in a batch, not a transaction each.
        let refusal = (400..<500).contains(outcome.status) && outcome.status != 499 && usage.promptTokens + usage.completionTokens == 0
        do {
            if refusal { try await ledger.recordRefusal(entry, at: now) } else { try await ledger.record(entry, at: now) }
        } catch {
            logger.error("usage not recorded", metadata: ["id": "\(call.requestID)", "error": "\(UsageLedger.describe(error))"])
        }
    }

    /// A cached answer, whole or replayed as a stream; recorded like any answer. Its tool calls
    /// get fresh ids (a call id names one call of one conversation).
    func replay(_ answer: ResponseCache.Answer, job: GenerationJob, call: GenerationCall, headers: HTTPFields) async -> Response {
        let calls = answer.toolCalls.map { ToolCall(id: ToolCall.newID(), name: $0.name, arguments: $0.arguments) }
        var outcome = RouteOutcome()
        for (index, call) in calls.enumerated() {
            for step in Self.events(of: call, index: index) { outcome.toolCalls.add(step) }
        }
        outcome.usage = answer.usage
        outcome.usageReported = true
        outcome.reason = answer.reason
        outcome.servedBy = answer.servedBy
        outcome.cacheHit = true
        outcome.text = answer.text
        outcome.answer.reasoning = answer.reasoning
        var headers = headers
        Self.set(&headers, "x-hearth-served-by", answer.servedBy)
        await record(outcome, call: call)
        var renderer = ResponseRenderer(job: job, requestID: call.requestID, reportsProvider: true)
        renderer.promptTokens = answer.usage.promptTokens
        guard job.stream else {
            Self.set(&headers, "x-request-id", call.requestID)
            return Self.json(200, renderer.body(outcome), headers: headers)
        }
        var streamHeaders = Self.sseHeaders(call.requestID)
        streamHeaders.append(contentsOf: headers)
        return Response(
            status: .ok, headers: streamHeaders,
            body: ResponseBody { [renderer] writer in
                var renderer = renderer
                var frames = renderer.streamStart()
                frames += renderer.frames(for: .servedBy(answer.servedBy), text: "", cached: true)
                for part in answer.reasoning {
                    frames += renderer.frames(for: .reasoning(part.text), text: "")
                    frames += renderer.frames(for: .reasoningEnded(part), text: "")
                }
                // Replayed in pieces of a few characters, as a stream would bring it.
                var rest = Substring(answer.text)
                var text = ""
                while !rest.isEmpty {
                    let piece = String(rest.prefix(16))
                    text += piece
                    frames += renderer.frames(for: .text(piece, token: nil), text: text)
                    rest = rest.dropFirst(16)
                }
                for (index, call) in calls.enumerated() {
                    for step in Self.events(of: call, index: index) { frames += renderer.frames(for: .toolCall(step), text: text) }
                }
                frames += renderer.frames(for: .finished(answer.usage, answer.reason), text: text)
                var buffer = ByteBuffer()
                for frame in frames { buffer.writeBytes(frame) }
                try await writer.write(buffer)
                try await writer.finish(nil)
            })
    }

    /// A whole call as the events that stream it (its arguments in pieces of a few characters).
    static func events(of call: ToolCall, index: Int) -> [ToolCallEvent] {
        var steps: [ToolCallEvent] = [.started(index: index, id: call.id, name: call.name)]
        var rest = Substring(call.arguments)
        while !rest.isEmpty {
            steps.append(.arguments(index: index, fragment: String(rest.prefix(16))))
            rest = rest.dropFirst(16)
        }
        steps.append(.finished(index: index))
        return steps
    }

    /// An error as the server answers it: a cloud provider's failure is the upstream's (502 for
    /// a refused key, a server error or a broken connection, 429 with its `Retry-After`, 504 for
    /// a timeout), never the server's own 401 or 500, and its text stays in the log (the client
    /// gets a fixed message naming the provider; an upstream's 400 keeps its text, which
    /// describes the client's own request); everything else as ``apiError(_:)`` maps it.
    static func gatewayAPIError(_ error: Error) -> APIError {
        guard let failure = error as? ProviderError, failure.provider != "local", failure.provider != "gateway" else {
            return apiError(error)
        }
        let provider = "The upstream provider '\(failure.provider)'"
        var answer: APIError
        switch failure.code {
        case .unauthorized:
            answer = APIError(
                status: 502, message: "\(provider) refused the server's key.", type: "upstream_error", code: "upstream_unauthorized")
        case .rateLimited(let retryAfter):
            answer = APIError(
                status: 429, message: "\(provider) is rate limiting the server; retry later.", type: "rate_limit_error",
                code: "upstream_rate_limited", retryAfter: retryAfter.map { max(1, Int($0.rounded(.up))) } ?? 1)
        case .server, .network, .decoding, .modelUnavailable:
            answer = APIError(
                status: 502, message: "\(provider) failed (a server error, a broken connection or an unreadable reply).",
                type: "upstream_error", code: "upstream_error")
        case .timeout:
            answer = APIError(status: 504, message: "\(provider) did not answer in time.", type: "timeout_error", code: "upstream_timeout")
        case .invalidRequest, .contextLengthExceeded, .cancelled, .unsupported:
            return apiError(error)
        }
        // The upstream's own words go to the log only (HearthCloud has redacted keys from them).
        answer.logDetail = String(failure.message.prefix(500))
        return answer
    }
}

/// Closes a streamed answer's connection when one write waits longer than the timeout for a
/// client that does not read (NIO's writer waits for the socket; Hummingbird's idle timer does
/// not run while a response is being written).
final class WriteWatchdog: @unchecked Sendable {
    // `@unchecked Sendable`: `since` is only touched under `lock`; `task` is set once in `init`.
    private let lock = NSLock()
    private var since: ContinuousClock.Instant?
    private var task: Task<Void, Never>?

    init(timeout: Double, onStall: @escaping @Sendable () -> Void) {
        let limit = Duration.milliseconds(Int64(timeout * 1000))
        let tick = Duration.milliseconds(Int64(min(1, max(0.01, timeout / 4)) * 1000))
        task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self else { return }
                let stalled = self.lock.withLock { self.since.map { ContinuousClock.now - $0 > limit } ?? false }
                if stalled {
                    onStall()
                    return
                }
            }
        }
    }

    /// A write starts.
    func begin() { lock.withLock { since = .now } }
    /// The write finished.
    func end() { lock.withLock { since = nil } }
    /// The answer is done.
    func stop() { task?.cancel() }
}

extension RouteOutcome {
    /// Takes one event on its way to the client (after the output filter); true when it ends
    /// the answer (its end, or the filter's cut).
    mutating func take(_ event: RouteEvent, started: ContinuousClock.Instant) -> Bool {
        switch event {
        case .servedBy(let id):
            servedBy = id
            if servedAt == nil { servedAt = .now }
        case .switched(let from, let to, let reason):
            switches.append((from, to, reason))
            servedBy = to
        case .promptTokens(let count):
            usage.promptTokens = count
            local = true
            if queued == nil { queued = ContinuousClock.now - started }
            if promptAt == nil { promptAt = .now }
        case .text, .toolCall, .reasoning, .reasoningEnded:
            answer.add(event)
        case .finished(let usage, _):
            finishedAt = .now
            if usage.promptTokens > 0 || usage.completionTokens > 0 {
                self.usage = usage
                usageReported = true
            }
            answer.add(event)
            return true
        case .filtered:
            filtered = true
            return true
        case .choice(let index, let inner):
            if choices.count <= index { choices += Array(repeating: ChoiceOutcome(), count: index + 1 - choices.count) }
            choices[index].add(inner)
        }
        return false
    }
}
