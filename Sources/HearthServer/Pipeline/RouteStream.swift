import Foundation
import HearthLocal
import HearthProviders

/// One event of a gateway route's answer, whichever provider gives it.
indirect enum RouteEvent: Sendable {
    /// The provider (its id) whose text follows.
    case servedBy(String)
    /// The route failed over from one provider to the next, which continues the answer.
    case switched(from: String, to: String, reason: String)
    /// The prompt's length in tokens (local model only).
    case promptTokens(Int)
    /// Text of the answer; `token` carries per-token detail when the local model produced it
    /// (a token of a tool call being written has empty text: the call arrives as ``toolCall(_:)``).
    case text(String, token: LocalProvider.LocalToken?)
    /// A step of a tool call: its start (index, id, name), a piece of its arguments, its end.
    case toolCall(ToolCallEvent)
    /// A piece of the reply's reasoning (a reasoning model's, local or cloud), never in a
    /// ``text(_:token:)``.
    case reasoning(String)
    /// The reasoning part is complete: its whole text and what its provider needs back (a
    /// signature, encrypted content; a redacted part arrives only as this).
    case reasoningEnded(ReasoningPart)
    /// The answer is complete.
    case finished(Usage, FinishReason)
    /// The output filter cut the answer here (what it let through came before); nothing follows.
    case filtered
    /// An event of one of several choices (`n` > 1): its text, tool-call steps and its own
    /// `finished`. The answer's `finished` (the prompt counted once, the choices' tokens summed)
    /// follows the last choice's.
    case choice(Int, RouteEvent)
}

/// How a route's answer began: the provider whose text comes first, and the prompt's length
/// when known (the local model reports it before any text).
struct RouteStart: Sendable {
    var provider: String
    var promptTokens: Int?
}

/// A route's answer as one stream the server owns (stoppable from outside: client gone,
/// deadline, drain). `start` returns once the answer has begun — the local model admitted the
/// prompt, or a router's first text arrived — so a failure before that is an HTTP error status.
typealias RouteStream = ForwardedStream<RouteEvent, RouteStart>

extension ForwardedStream where Event == RouteEvent, Start == RouteStart {
    /// Starts the route's provider on `job`: the local model with the server's full feature set
    /// (handed to the model when `admission` lets it: the server's fair queue), or a router
    /// (cloud first, fallbacks after) on the job's conversation.
    func start(_ route: Gateway.ModelRoute, job: GenerationJob, admission: LocalProvider.Admission? = nil) async throws -> RouteStart {
        switch route.target {
        case .local(let provider):
            return try await start(local: provider, job: job, admission: admission)
        case .router(let router):
            guard case .chat(let messages) = job.input else { throw APIError.invalid("model", "Cloud routes take chat requests only.") }
            var request = ChatRequest(messages: messages, options: job.options)
            request.optionsChecked = true  // checked once, as the request was parsed
            return try await start(router: router, request: request)
        }
    }

    /// Starts the local model on `job` (raw text, log-probabilities and several choices
    /// included): one choice's events as they come; with several (`n` > 1) each choice's as
    /// ``RouteEvent/choice(_:_:)``, then the answer's `finished` with the prompt counted once.
    func start(local provider: LocalProvider, job: GenerationJob, admission: LocalProvider.Admission?) async throws -> RouteStart {
        // Options were checked once, as the request was parsed.
        let upstream = provider.generate(
            job.input, options: job.options, checked: true, choices: job.choices, topLogprobs: job.logprobs,
            admission: admission)
        let id = provider.id
        let several = job.choices > 1
        return try await run {
            // The answer's usage: the prompt as the first choice (which processed it) counts it,
            // the completion tokens of every choice.
            var first: (usage: Usage, reason: FinishReason)?
            var completion = 0
            var reasoning = (0..<job.choices).map { _ in LocalReasoningCollector() }
            func yield(_ choice: Int, _ event: RouteEvent) {
                self.continuation.yield(several ? .choice(choice, event) : event)
            }
            func signed(_ text: String) -> RouteEvent {
                .reasoningEnded(ReasoningSignature.signed(ReasoningPart(text: text, provider: id)))
            }
            for try await item in upstream where reasoning.indices.contains(item.choice) {
                switch item.event {
                case .promptTokens(let count):
                    self.continuation.yield(.servedBy(id))
                    self.continuation.yield(.promptTokens(count))
                    self.started(RouteStart(provider: id, promptTokens: count))
                case .contextTruncated:
                    break  // the server never allows truncation: a prompt too long is refused
                case .token(let token):
                    let (piece, ended) = reasoning[item.choice].take(token)
                    if let piece { yield(item.choice, .reasoning(piece)) }
                    if let ended { yield(item.choice, signed(ended)) }
                    yield(item.choice, .text(token.text, token: token))
                case .toolCall(let step):
                    yield(item.choice, .toolCall(step))
                case .finished(let usage, let reason):
                    if let ended = reasoning[item.choice].finish() { yield(item.choice, signed(ended)) }
                    yield(item.choice, .finished(usage, reason))
                    completion += usage.completionTokens
                    if item.choice == 0 { first = (usage, reason) }
                }
            }
            guard several, var answer = first else { return }
            answer.usage.completionTokens = completion
            self.continuation.yield(.finished(answer.usage, answer.reason))
        }
    }

    /// Starts a router (cloud first, fallbacks after) on a chat request.
    func start(router: FallbackRouter, request: ChatRequest) async throws -> RouteStart {
        let upstream = router.stream(request)
        return try await run {
            var usage: Usage?
            var current = router.id
            for try await event in upstream {
                switch event {
                case .servedBy(let id):
                    current = id
                    self.continuation.yield(.servedBy(id))
                case .switchedProvider(let from, let to, let reason):
                    self.continuation.yield(.switched(from: from, to: to, reason: "\(reason.code)"))
                case .textDelta(let text):
                    self.started(RouteStart(provider: current))
                    self.continuation.yield(.text(text, token: nil))
                case .toolCall(let step):
                    self.started(RouteStart(provider: current))
                    self.continuation.yield(.toolCall(step))
                case .usage(let value):
                    usage = value
                case .finished(let reason):
                    self.started(RouteStart(provider: current))
                    self.continuation.yield(.finished(usage ?? Usage(promptTokens: 0, completionTokens: 0), reason))
                case .reasoningDelta(let text):
                    self.started(RouteStart(provider: current))
                    self.continuation.yield(.reasoning(text))
                case .reasoningEnded(let part):
                    self.started(RouteStart(provider: current))
                    self.continuation.yield(.reasoningEnded(part))
                case .contextTruncated, .dialogState:
                    break
                }
            }
        }
    }
}

/// Forwards a provider's event stream into one the server owns, so a request can be stopped
/// from outside the task writing its response (client gone, deadline, drain): ``cancel(_:)``
/// cancels the upstream consumer (which stops the sequence within one decode step) and ends
/// the forwarded stream with an error. ``run(_:)`` returns once the upstream has `started`
/// (the plain server: the prompt was admitted; the gateway: the answer began), so a failure
/// before that is still an HTTP error status.
final class ForwardedStream<Event: Sendable, Start: Sendable>: @unchecked Sendable {
    // `@unchecked Sendable`: `task`, `waiter` and `startResult` are only touched under `lock`.
    let events: AsyncThrowingStream<Event, Error>
    /// Where the forwarding task yields.
    let continuation: AsyncThrowingStream<Event, Error>.Continuation
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private var waiter: CheckedContinuation<Start, Error>?
    private var startResult: Result<Start, Error>?

    init() {
        (events, continuation) = AsyncThrowingStream.makeStream()
    }

    /// Runs `body` (which yields into ``continuation`` and calls ``started(_:)`` once) in a task;
    /// returns the value given to ``started(_:)``, or throws the error that ended `body` before it.
    func run(_ body: @escaping @Sendable () async throws -> Void) async throws -> Start {
        let continuation = self.continuation
        let task = Task {
            do {
                try await body()
                self.resolve(.failure(ProviderError(.cancelled, provider: "local", message: "the generation ended early")))
                continuation.finish()
            } catch {
                self.resolve(.failure(error))
                continuation.finish(throwing: error)
            }
        }
        lock.withLock { self.task = task }
        return try await withCheckedThrowingContinuation { waiter in
            let ready: Result<Start, Error>? = lock.withLock {
                if let startResult { return startResult }
                self.waiter = waiter
                return nil
            }
            if let ready { waiter.resume(with: ready) }
        }
    }

    /// Marks the upstream as started (the first call counts).
    func started(_ value: Start) { resolve(.success(value)) }

    private func resolve(_ result: Result<Start, Error>) {
        let waiter: CheckedContinuation<Start, Error>? = lock.withLock {
            guard startResult == nil else { return nil }
            startResult = result
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(with: result)
    }

    /// Stops the generation and ends ``events`` with `error`.
    func cancel(_ error: Error) {
        // Finish first: the upstream task, once cancelled, finishes the stream normally, and
        // the first finish wins, so the consumer must see the error before that can happen.
        continuation.finish(throwing: error)
        resolve(.failure(error))
        let task = lock.withLock { self.task }
        task?.cancel()
    }
}
