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

    /// Starts the local model on `job` (raw text and log-probabilities included).
    func start(local provider: LocalProvider, job: GenerationJob, admission: LocalProvider.Admission?) async throws -> RouteStart {
        if job.choices > 1 { return try await start(choicesOf: provider, job: job, admission: admission) }
        // Options were checked once, as the request was parsed.
        let upstream = provider.generate(
            job.input, options: job.options, checked: true, topLogprobs: job.logprobs, admission: admission)
        let id = provider.id
        return try await run {
            var reasoning = LocalReasoning(provider: id)
            for try await event in upstream {
                switch event {
                case .promptTokens(let count):
                    self.continuation.yield(.servedBy(id))
                    self.continuation.yield(.promptTokens(count))
                    self.started(RouteStart(provider: id, promptTokens: count))
                case .token(let token):
                    for event in reasoning.events(token) { self.continuation.yield(event) }
                    self.continuation.yield(.text(token.text, token: token))
                case .toolCall(let step):
                    self.continuation.yield(.toolCall(step))
                case .finished(let usage, let reason):
                    for event in reasoning.finish() { self.continuation.yield(event) }
                    self.continuation.yield(.finished(usage, reason))
                }
            }
        }
    }

    /// Starts the local model on a job of several choices: each choice's events as
    /// ``RouteEvent/choice(_:_:)``, then the answer's `finished` with the prompt counted once.
    func start(choicesOf provider: LocalProvider, job: GenerationJob, admission: LocalProvider.Admission?) async throws -> RouteStart {
        let upstream = provider.generate(
            job.input, options: job.options, checked: true, choices: job.choices, topLogprobs: job.logprobs,
            admission: admission)
        let id = provider.id
        return try await run {
            // The answer's usage: the prompt as the first choice (which processed it) counts it,
            // the completion tokens of every choice.
            var first: (usage: Usage, reason: FinishReason)?
            var completion = 0
            var reasoning = (0..<job.choices).map { _ in LocalReasoning(provider: id) }
            for try await item in upstream {
                switch item.event {
                case .promptTokens(let count):
                    self.continuation.yield(.servedBy(id))
                    self.continuation.yield(.promptTokens(count))
                    self.started(RouteStart(provider: id, promptTokens: count))
                case .token(let token):
                    if reasoning.indices.contains(item.choice) {
                        for event in reasoning[item.choice].events(token) { self.continuation.yield(.choice(item.choice, event)) }
                    }
                    self.continuation.yield(.choice(item.choice, .text(token.text, token: token)))
                case .toolCall(let step):
                    self.continuation.yield(.choice(item.choice, .toolCall(step)))
                case .finished(let usage, let reason):
                    if reasoning.indices.contains(item.choice) {
                        for event in reasoning[item.choice].finish() { self.continuation.yield(.choice(item.choice, event)) }
                    }
                    self.continuation.yield(.choice(item.choice, .finished(usage, reason)))
                    completion += usage.completionTokens
                    if item.choice == 0 { first = (usage, reason) }
                }
            }
            guard var answer = first else { return }
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

/// A local reply's reasoning as route events: its pieces, then one end with the whole part
/// (when the block closes, or at the reply's end if it did not).
struct LocalReasoning {
    let provider: String
    private var text = ""
    private var open = false

    init(provider: String) { self.provider = provider }

    /// The reasoning events of one token (before its text).
    mutating func events(_ token: LocalProvider.LocalToken) -> [RouteEvent] {
        var events: [RouteEvent] = []
        if !token.reasoning.isEmpty {
            text += token.reasoning
            open = true
            events.append(.reasoning(token.reasoning))
        }
        if token.endsReasoning {
            open = false
            events.append(.reasoningEnded(ReasoningSignature.signed(ReasoningPart(text: text, provider: provider))))
        }
        return events
    }

    /// The end of a block the reply did not close (cut by its length).
    mutating func finish() -> [RouteEvent] {
        guard open else { return [] }
        open = false
        return [.reasoningEnded(ReasoningSignature.signed(ReasoningPart(text: text, provider: provider)))]
    }
}
