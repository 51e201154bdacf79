import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// Ollama's native API on `hearth serve` (docs/SERVER.md, "Ollama API"): apps that speak only
/// Ollama (`/api/chat`, `/api/generate`, `/api/tags` …) use Hearth unchanged.
///
/// This is a translation layer, not a second pipeline: an Ollama request is rewritten as the
/// equivalent OpenAI request and run through ``HearthServer/generate(_:_:_:)`` (or the
/// embeddings handler), so the gateway's keys, limits, quotas, usage, cache, content filter,
/// fair queue and metrics apply as they do to every route; the answer's server-sent events are
/// read back and written in Ollama's shapes (NDJSON when streaming, one object when not), with
/// Ollama's `done_reason`, token counts and durations in nanoseconds. Errors are Ollama's
/// `{"error": "…"}` with the status Ollama uses.
///
/// Fields: every field Ollama defines is honoured, accepted as a hint, or refused by name
/// (``OllamaFields``); fields Ollama does not define are ignored, as Ollama's own server
/// ignores them (Go's JSON decoding), and so are unknown keys of `options` (Ollama logs them).
enum OllamaAPI {
    /// The Ollama version `/api/version` reports: the API level these routes follow.
    static let version = "0.12.0"

    /// What a generation route is asked for.
    enum Kind: Sendable { case chat, generate }
}

/// An error in Ollama's shape: `{"error": message}` with an HTTP status.
struct OllamaError: Error, Sendable {
    var status: Int
    var message: String

    init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A 400 naming a field.
    static func invalid(_ message: String) -> OllamaError { OllamaError(400, message) }

    /// The response that carries it.
    var response: Response { HearthServer.ollamaError(status, message) }
}

/// Ollama's request fields: which are honoured (mapped onto the OpenAI request), which are
/// hints (accepted, checked for shape, without effect on a CPU server), and which are refused
/// when set. The docs' audit table lists the same names.
enum OllamaFields {
    /// `/api/chat` top-level fields.
    static let chat: Set<String> = [
        "model", "messages", "tools", "format", "options", "stream", "keep_alive", "think", "logprobs", "top_logprobs",
    ]
    /// `/api/generate` top-level fields.
    static let generate: Set<String> = [
        "model", "prompt", "suffix", "system", "template", "context", "stream", "raw", "format", "images", "options",
        "keep_alive", "think", "logprobs", "top_logprobs",
    ]
    /// `options` keys mapped onto sampling and length.
    static let honouredOptions: Set<String> = [
        "temperature", "top_k", "top_p", "min_p", "seed", "num_predict", "stop", "repeat_penalty", "presence_penalty",
        "frequency_penalty",
        "tool_choice",  // Hearth's extension: Ollama has none
    ]
    /// `options` keys about the runtime (memory, threads, GPU layers, context size, batch):
    /// accepted as hints — the server's own flags (`--ctx`, `--threads`, `--batch`) decide.
    static let hintOptions: Set<String> = [
        "num_ctx", "num_batch", "num_gpu", "main_gpu", "low_vram", "f16_kv", "logits_all", "vocab_only", "use_mmap", "use_mlock",
        "embedding_only", "num_thread", "numa", "num_keep", "repeat_last_n", "penalize_newline",
    ]
    /// `options` keys for samplers Hearth does not have: refused when set to anything but
    /// their neutral value (`typical_p` 1, `tfs_z` 1, `mirostat` 0).
    static let refusedOptions: [String: Double] = ["typical_p": 1, "tfs_z": 1, "mirostat": 0, "mirostat_tau": 5, "mirostat_eta": 0.1]
    /// Every `options` key with a disposition (others are ignored, as Ollama ignores them): the
    /// audit table's `/api/chat options` list.
    static let options: Set<String> = honouredOptions.union(hintOptions).union(refusedOptions.keys)
}

extension HearthServer {
    /// Registers Ollama's routes on the server's router (after the shared middleware).
    func ollamaRoutes(_ router: some RouterMethods<ServerRequestContext>) {
        router.post("/api/chat") { request, context in await self.ollamaGenerate(.chat, request, context) }
        router.post("/api/generate") { request, context in await self.ollamaGenerate(.generate, request, context) }
        router.post("/api/embed") { request, context in await self.ollamaEmbed(request, context, legacy: false) }
        router.post("/api/embeddings") { request, context in await self.ollamaEmbed(request, context, legacy: true) }
        router.get("/api/tags") { _, context in self.ollamaTags(context) }
        router.post("/api/show") { _, context in await self.ollamaShow(context) }
        router.get("/api/ps") { _, context in self.ollamaPS(context) }
        router.post("/api/pull") { _, context in await self.ollamaPull(context) }
        router.delete("/api/delete") { _, context in await self.ollamaDelete(context) }
        router.get("/api/version") { _, _ in Self.json(200, ["version": .string(OllamaAPI.version)]) }
        router.head("/api/version") { _, _ in Response(status: .ok) }
    }

    /// Ollama's error body.
    static func ollamaError(_ status: Int, _ message: String, headers: HTTPFields = [:]) -> Response {
        json(status, ["error": .string(message)], headers: headers)
    }

    /// An ``APIError`` (thrown by a shared stage: key, limits, body size) in Ollama's shape,
    /// its field names as Ollama's requests name them.
    static func ollamaErrorResponse(_ error: APIError) -> Response {
        var headers = error.headers
        if let retry = error.retryAfter { headers[.retryAfter] = String(retry) }
        return ollamaError(error.status, OllamaTranslation.ollamaWording(error.message), headers: headers)
    }

    /// `POST /api/chat` and `POST /api/generate`: the request translated to chat (or, with
    /// `raw`, text) completions and run by the shared pipeline, always streamed inside so the
    /// reply is timed; its events written back in Ollama's shape.
    func ollamaGenerate(_ kind: OllamaAPI.Kind, _ request: Request, _ context: ServerRequestContext) async -> Response {
        let translated: OllamaTranslation
        do {
            let body = try Self.ollamaBody(context.body)
            translated = try OllamaTranslation(kind: kind, body: body)
        } catch let error as OllamaError {
            return error.response
        } catch {
            return Self.ollamaError(400, "invalid request body")
        }
        // No messages (or an empty prompt) asks Ollama to load the model, or with keep_alive 0
        // to unload it: Hearth loads on first use, so both are answered at once once the model
        // is known.
        if translated.loadOnly {
            let client = (context.caller ?? GatewayAuthenticator.anonymous).client
            do { _ = try gateway.route(translated.model, for: client) } catch { return Self.ollamaErrorResponse(Self.apiError(error)) }
            var reply = OllamaReply(kind: kind, model: translated.model, started: context.started)
            reply.doneReason = translated.unload ? "unload" : "load"
            return Self.json(200, reply.final(whole: true))
        }
        var inner = context
        inner.body = translated.openAI.serialized()
        let response = await generate(translated.endpoint, request, inner)
        return await ollamaAnswer(
            response, kind: kind, model: translated.model, stream: translated.stream, started: context.started, channel: context.channel)
    }

    /// The body of an Ollama request as JSON (Ollama's own wording for a malformed one).
    static func ollamaBody(_ data: Data) throws -> JSONValue {
        guard !data.isEmpty else { throw OllamaError.invalid("missing request body") }
        do {
            let value = try RequestParser.json(data)
            guard case .object = value else { throw OllamaError.invalid("invalid request body: expected a JSON object") }
            return value
        } catch let error as OllamaError {
            throw error
        } catch {
            throw OllamaError.invalid("invalid request body: not valid JSON")
        }
    }

    /// Reads the shared pipeline's answer (an SSE stream, or an error before it began) and
    /// answers in Ollama's shape: NDJSON lines as the events arrive, or one object at the end.
    func ollamaAnswer(
        _ response: Response, kind: OllamaAPI.Kind, model: String, stream: Bool, started: ContinuousClock.Instant, channel: any Channel
    ) async -> Response {
        var headers = HTTPFields()
        for name in ["x-request-id", "x-hearth-served-by", "x-hearth-cache"] {
            if let field = HTTPField.Name(name), let value = response.headers[field] { headers[field] = value }
        }
        for field in response.headers where field.name.rawName.hasPrefix("x-ratelimit") || field.name == .retryAfter {
            headers.append(field)
        }
        let isStream = response.headers[.contentType]?.hasPrefix("text/event-stream") == true
        guard response.status == .ok, isStream else {
            let data = await Self.collect(response.body)
            let message = OllamaTranslation.errorMessage(data) ?? "the request failed (status \(response.status.code))"
            let status = response.status == .ok ? 500 : Int(response.status.code)
            return Self.ollamaError(status, message, headers: headers)
        }
        let body = response.body
        guard stream else {
            let data = await Self.collect(body)
            var reply = OllamaReply(kind: kind, model: model, started: started)
            var reader = SSEReader()
            for event in reader.feed(ByteBuffer(bytes: data)) + reader.finish() { _ = reply.take(event) }
            if let error = reply.error {
                return Self.ollamaError(error.status, error.message, headers: headers)
            }
            headers[.contentType] = "application/json; charset=utf-8"
            return Self.json(200, reply.final(whole: true), headers: headers)
        }
        headers[.contentType] = "application/x-ndjson"
        headers[.cacheControl] = "no-cache"
        let writeTimeout = options.writeTimeout
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                // The shared pipeline writes into the translation without waiting, so its own
                // watchdog never sees a client that stops reading: this one does, on the writes to
                // the client, and closes the connection (which stops the answer).
                let watchdog = WriteWatchdog(timeout: writeTimeout) { channel.close(mode: .all, promise: nil) }
                defer { watchdog.stop() }
                let (buffers, sink) = AsyncStream<ByteBuffer>.makeStream()
                let producer = Task {
                    try? await body.write(ForwardingBodyWriter(sink: sink))
                    sink.finish()
                }
                var reply = OllamaReply(kind: kind, model: model, started: started)
                var reader = SSEReader()
                do {
                    for await buffer in buffers {
                        var out = ByteBuffer()
                        for event in reader.feed(buffer) {
                            for line in reply.take(event) { Self.appendLine(line, to: &out) }
                        }
                        if out.readableBytes > 0 {
                            watchdog.begin()
                            defer { watchdog.end() }
                            try await writer.write(out)
                        }
                    }
                    var out = ByteBuffer()
                    for event in reader.finish() {
                        for line in reply.take(event) { Self.appendLine(line, to: &out) }
                    }
                    if !reply.ended { Self.appendLine(reply.error.map { ["error": .string($0.message)] } ?? reply.final(whole: false), to: &out) }
                    if out.readableBytes > 0 { try await writer.write(out) }
                    try await writer.finish(nil)
                } catch {
                    // The client went away: the shared pipeline's connection watcher stops the answer;
                    // the producer is told too.
                    producer.cancel()
                }
                await producer.value
            })
    }

    static func appendLine(_ value: JSONValue, to buffer: inout ByteBuffer) {
        buffer.writeBytes(value.serialized())
        buffer.writeString("\n")
    }

    /// The bytes of a response body (an error's, or a whole answer's stream).
    static func collect(_ body: ResponseBody) async -> Data {
        let (buffers, sink) = AsyncStream<ByteBuffer>.makeStream()
        let producer = Task {
            try? await body.write(ForwardingBodyWriter(sink: sink))
            sink.finish()
        }
        var data = Data()
        for await buffer in buffers { data.append(contentsOf: buffer.readableBytesView) }
        await producer.value
        return data
    }
}

/// Hands each buffer a response body writes to an `AsyncStream` (the Ollama routes read the
/// shared pipeline's answer as it is written).
struct ForwardingBodyWriter: ResponseBodyWriter {
    let sink: AsyncStream<ByteBuffer>.Continuation

    mutating func write(_ buffer: ByteBuffer) async throws {
        if case .terminated = sink.yield(buffer) { throw CancellationError() }
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws { sink.finish() }
}

/// Splits a server-sent event stream into its `data:` payloads, parsed as JSON (`[DONE]` is
/// ``JSONValue/null``).
struct SSEReader {
    private var pending: [UInt8] = []

    mutating func feed(_ buffer: ByteBuffer) -> [JSONValue] {
        pending.append(contentsOf: buffer.readableBytesView)
        var events: [JSONValue] = []
        while let end = Self.frameEnd(pending) {
            let frame = Array(pending[..<end.start])
            pending.removeFirst(end.next)
            if let event = Self.parse(frame) { events.append(event) }
        }
        return events
    }

    mutating func finish() -> [JSONValue] {
        defer { pending = [] }
        return Self.parse(pending).map { [$0] } ?? []
    }

    private static func frameEnd(_ bytes: [UInt8]) -> (start: Int, next: Int)? {
        var index = 0
        while index + 1 < bytes.count {
            if bytes[index] == 10, bytes[index + 1] == 10 { return (index, index + 2) }
            index += 1
        }
        return nil
    }

    private static func parse(_ frame: [UInt8]) -> JSONValue? {
        let text = String(decoding: frame, as: UTF8.self)
        var data = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) where line.hasPrefix("data:") {
            var payload = line.dropFirst(5)
            if payload.first == " " { payload = payload.dropFirst() }
            data += payload
        }
        guard !data.isEmpty else { return nil }
        if data == "[DONE]" { return .null }
        return try? RequestParser.json(Data(data.utf8))
    }
}
