import Foundation
import HearthLocal
import HearthProviders
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Thrown when writing to the client fails: it has gone away.
struct ClientGone: Error {}

/// Counts and timings of one generation, for its log line and metrics.
struct GenerationTally: Sendable {
    var promptTokens = 0
    var completionTokens = 0
    var cachedTokens = 0
    var firstToken: Duration?
}

extension HearthServer {
    /// `POST /v1/chat/completions`, `/v1/completions` and `/v1/messages`; `connection` is the
    /// request's channel, watched so that a client that goes away stops its generation.
    func generation(_ endpoint: Endpoint, _ request: Request, connection: any Channel) async -> Response {
        let started = ContinuousClock.now
        let (number, requestID) = newRequestID()
        let job: GenerationJob
        do {
            guard authorized(request) else { throw APIError.unauthorized() }
            let body = try RequestParser.json(try await readBody(request))
            let parser = RequestParser(alias: options.alias, maxTokensLimit: max(1, lock.withLock { context }))
            switch endpoint {
            case .chatCompletions: job = try parser.chat(body)
            case .completions: job = try parser.completion(body)
            case .messages: job = try parser.messages(body)
            }
            try admit()
        } catch {
            return finishEarly(endpoint, requestID: requestID, error: error, started: started)
        }
        // Admitted: from here every path releases the slot exactly once.
        let pump = EventPump()
        register(number) { pump.cancel(ProviderError(.cancelled, provider: "local", message: "The server is shutting down.")) }
        // The client may leave at any time — while queued for a slot, while a non-streaming
        // answer is generated (nothing is written until the end), between stream frames: its
        // sequence stops within one decode step and the slot is freed.
        let watch = await watchConnection(connection) { pump.cancel(ClientGone()) }
        let timeout = options.requestTimeout
        let deadline = Task {
            try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            pump.cancel(ProviderError(.timeout, provider: "local", message: "The request took longer than \(Int(timeout)) seconds."))
        }
        var renderer = ResponseRenderer(job: job, requestID: requestID)
        do {
            let upstream = provider.generate(job.input, options: job.options, topLogprobs: job.logprobs ?? 0)
            renderer.promptTokens = try await pump.start(upstream)
        } catch {
            watch.end()
            deadline.cancel()
            pump.cancel(CancellationError())
            release(number)
            return finishEarly(endpoint, requestID: requestID, error: error, started: started)
        }
        if job.stream {
            let renderer = renderer
            let response = Response(
                status: .ok,
                headers: Self.sseHeaders(requestID),
                body: ResponseBody { writer in
                    let (status, tally) = await self.streamEvents(pump, renderer: renderer, writer: &writer, started: started)
                    watch.end()
                    deadline.cancel()
                    self.release(number)
                    self.logGeneration(endpoint, requestID: requestID, status: status, tally: tally, started: started)
                })
            return response
        }
        let result = await collectEvents(pump, started: started)
        watch.end()
        deadline.cancel()
        release(number)
        switch result {
        case .success(let (text, tokens, usage, reason, tally)):
            logGeneration(endpoint, requestID: requestID, status: 200, tally: tally, started: started)
            var response = Self.json(200, renderer.body(text: text, tokens: tokens, usage: usage, reason: reason))
            if let name = HTTPField.Name("x-request-id") { response.headers[name] = requestID }
            return response
        case .failure(let error):
            return finishEarly(endpoint, requestID: requestID, error: error, started: started)
        }
    }

    static func sseHeaders(_ requestID: String) -> HTTPFields {
        var headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-cache"]
        if let name = HTTPField.Name("x-request-id") { headers[name] = requestID }
        if let name = HTTPField.Name("x-accel-buffering") { headers[name] = "no" }
        return headers
    }

    static func apiError(_ error: Error) -> APIError {
        if let error = error as? APIError { return error }
        if error is ClientGone { return APIError(status: 499, message: "The client closed the connection.", type: "cancelled", code: "client_closed") }
        if let error = error as? ProviderError { return .from(error) }
        if error is CancellationError { return .from(ProviderError(.cancelled, provider: "local", message: "cancelled")) }
        return APIError(status: 500, message: "Internal error.", type: "server_error", code: "internal_error")
    }

    /// An error answer before any response byte was written: logs and counts it.
    func finishEarly(_ endpoint: Endpoint, requestID: String, error: Error, started: ContinuousClock.Instant) -> Response {
        let apiError = Self.apiError(error)
        logGeneration(endpoint, requestID: requestID, status: apiError.status, tally: GenerationTally(), started: started, code: apiError.code)
        return Self.errorResponse(apiError, endpoint: endpoint, requestID: requestID)
    }

    func logGeneration(
        _ endpoint: Endpoint, requestID: String, status: Int, tally: GenerationTally, started: ContinuousClock.Instant,
        code: String? = nil
    ) {
        metrics.countRequest(endpoint: endpoint.rawValue, status: status)
        var metadata: Logger.Metadata = [
            "id": "\(requestID)", "path": "\(endpoint.rawValue)", "status": "\(status)",
            "prompt_tokens": "\(tally.promptTokens)", "cached_tokens": "\(tally.cachedTokens)",
            "completion_tokens": "\(tally.completionTokens)", "ms": "\(Self.milliseconds(since: started))",
        ]
        if let first = tally.firstToken { metadata["ttft_ms"] = "\(Int(Self.seconds(first) * 1000))" }
        if let code { metadata["code"] = "\(code)" }
        logger.info("request", metadata: metadata)
    }

    func record(token now: ContinuousClock.Instant, previous: inout ContinuousClock.Instant?, tally: inout GenerationTally, started: ContinuousClock.Instant) {
        if let last = previous {
            metrics.timePerOutputToken.record(Self.seconds(now - last))
        } else {
            tally.firstToken = now - started
            metrics.timeToFirstToken.record(Self.seconds(now - started))
        }
        previous = now
    }

    func finished(_ usage: Usage, tally: inout GenerationTally, started: ContinuousClock.Instant) {
        tally.promptTokens = usage.promptTokens
        tally.completionTokens = usage.completionTokens
        tally.cachedTokens = usage.cachedPromptTokens ?? 0
        metrics.promptTokens.increment(by: Int64(usage.promptTokens))
        metrics.cachedPromptTokens.increment(by: Int64(usage.cachedPromptTokens ?? 0))
        metrics.generatedTokens.increment(by: Int64(usage.completionTokens))
        metrics.requestDuration.record(Self.seconds(ContinuousClock.now - started))
    }

    /// Writes the SSE stream; a failed write means the client left, which cancels the generation.
    func streamEvents(
        _ pump: EventPump, renderer: ResponseRenderer, writer: inout any ResponseBodyWriter, started: ContinuousClock.Instant
    ) async -> (Int, GenerationTally) {
        var tally = GenerationTally()
        tally.promptTokens = renderer.promptTokens
        var previous: ContinuousClock.Instant?
        var textOffset = 0
        var ended = false
        func send(_ frames: [Data], _ writer: inout any ResponseBodyWriter) async throws {
            guard !frames.isEmpty else { return }
            var buffer = ByteBuffer()
            for frame in frames { buffer.writeBytes(frame) }
            do { try await writer.write(buffer) } catch { throw ClientGone() }
        }
        do {
            try await send(renderer.streamStart(), &writer)
            do {
                for try await event in pump.events {
                    switch event {
                    case .promptTokens: break
                    case .token(let token):
                        tally.completionTokens += 1
                        record(token: .now, previous: &previous, tally: &tally, started: started)
                        try await send(renderer.streamToken(token, textOffset: textOffset), &writer)
                        textOffset += token.text.count
                    case .finished(let usage, let reason):
                        finished(usage, tally: &tally, started: started)
                        ended = true
                        try await send(renderer.streamEnd(usage: usage, reason: reason), &writer)
                    }
                }
                if !ended { throw ProviderError(.cancelled, provider: "local", message: "The generation was stopped.") }
            } catch is ClientGone {
                throw ClientGone()
            } catch {
                let apiError = Self.apiError(error)
                try await send([renderer.streamError(apiError)], &writer)
                try? await writer.finish(nil)
                return (apiError.status, tally)
            }
            do { try await writer.finish(nil) } catch { throw ClientGone() }
            return (200, tally)
        } catch {
            // The client disconnected: stop its sequence now (within one decode step). 499
            // means the generation was cut short; a reply that was complete counts as 200.
            pump.cancel(CancellationError())
            return (ended ? 200 : 499, tally)
        }
    }

    /// Collects a whole generation for a non-streaming answer.
    func collectEvents(_ pump: EventPump, started: ContinuousClock.Instant) async
        -> Result<(String, [LocalProvider.LocalToken], Usage, FinishReason, GenerationTally), Error>
    {
        var tally = GenerationTally()
        var previous: ContinuousClock.Instant?
        var text = ""
        var tokens: [LocalProvider.LocalToken] = []
        var ending: (Usage, FinishReason)?
        do {
            for try await event in pump.events {
                switch event {
                case .promptTokens(let count): tally.promptTokens = count
                case .token(let token):
                    record(token: .now, previous: &previous, tally: &tally, started: started)
                    text += token.text
                    tokens.append(token)
                case .finished(let usage, let reason):
                    finished(usage, tally: &tally, started: started)
                    ending = (usage, reason)
                }
            }
        } catch {
            return .failure(error)
        }
        guard let (usage, reason) = ending else {
            return .failure(ProviderError(.cancelled, provider: "local", message: "the generation ended without a result"))
        }
        return .success((text, tokens, usage, reason, tally))
    }
}
