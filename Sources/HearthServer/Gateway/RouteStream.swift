import Foundation
import HearthLocal
import HearthProviders

/// One event of a gateway route's answer, whichever provider gives it.
enum RouteEvent: Sendable {
    /// The provider (its id) whose text follows.
    case servedBy(String)
    /// The route failed over from one provider to the next, which continues the answer.
    case switched(from: String, to: String, reason: String)
    /// The prompt's length in tokens (local model only).
    case promptTokens(Int)
    /// Text of the answer; `token` carries per-token detail when the local model produced it.
    case text(String, token: LocalProvider.LocalToken?)
    /// The answer is complete.
    case finished(Usage, FinishReason)
}

/// A route's answer as one stream the server owns, so it can be stopped from outside the task
/// writing the response (client gone, deadline, drain). `start` returns once the answer has
/// begun (the local model admitted the prompt; a router's first text arrived) — a failure
/// before that is still an HTTP error status.
final class RouteStream: @unchecked Sendable {
    // `@unchecked Sendable`: `task`, `waiter` and `startResult` are only touched under `lock`.
    let events: AsyncThrowingStream<RouteEvent, Error>
    private let continuation: AsyncThrowingStream<RouteEvent, Error>.Continuation
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private var waiter: CheckedContinuation<Started, Error>?
    private var startResult: Result<Started, Error>?

    /// The first provider that accepted the request, and the prompt's length when known.
    struct Started: Sendable {
        var provider: String
        var promptTokens: Int?
    }

    init() {
        (events, continuation) = AsyncThrowingStream.makeStream()
    }

    /// Starts the local model on `job` (raw text and log-probabilities included).
    func start(local provider: LocalProvider, job: GenerationJob) async throws -> Started {
        let upstream = provider.generate(job.input, options: job.options, topLogprobs: job.logprobs ?? 0)
        let id = provider.id
        return try await run {
            for try await event in upstream {
                switch event {
                case .promptTokens(let count):
                    self.continuation.yield(.servedBy(id))
                    self.continuation.yield(.promptTokens(count))
                    self.resolve(.success(Started(provider: id, promptTokens: count)))
                case .token(let token):
                    self.continuation.yield(.text(token.text, token: token))
                case .finished(let usage, let reason):
                    self.continuation.yield(.finished(usage, reason))
                }
            }
        }
    }

    /// Starts a router (cloud first, fallbacks after) on a chat request.
    func start(router: FallbackRouter, request: ChatRequest) async throws -> Started {
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
                    // Started once text flows: a failure before it is still an HTTP error status.
                    self.resolve(.success(Started(provider: current)))
                    self.continuation.yield(.text(text, token: nil))
                case .usage(let value):
                    usage = value
                case .finished(let reason):
                    self.resolve(.success(Started(provider: current)))
                    self.continuation.yield(.finished(usage ?? Usage(promptTokens: 0, completionTokens: 0), reason))
                case .contextTruncated, .dialogState:
                    break
                }
            }
        }
    }

    private func run(_ body: @escaping @Sendable () async throws -> Void) async throws -> Started {
        let continuation = self.continuation
        let task = Task {
            do {
                try await body()
                self.resolve(.failure(ProviderError(.cancelled, provider: "gateway", message: "the answer ended before it began")))
                continuation.finish()
            } catch {
                self.resolve(.failure(error))
                continuation.finish(throwing: error)
            }
        }
        lock.withLock { self.task = task }
        return try await withCheckedThrowingContinuation { waiter in
            let ready: Result<Started, Error>? = lock.withLock {
                if let startResult { return startResult }
                self.waiter = waiter
                return nil
            }
            if let ready { waiter.resume(with: ready) }
        }
    }

    private func resolve(_ result: Result<Started, Error>) {
        let waiter: CheckedContinuation<Started, Error>? = lock.withLock {
            guard startResult == nil else { return nil }
            startResult = result
            defer { self.waiter = nil }
            return self.waiter
        }
        waiter?.resume(with: result)
    }

    /// Stops the answer and ends ``events`` with `error`.
    func cancel(_ error: Error) {
        continuation.finish(throwing: error)
        resolve(.failure(error))
        let task = lock.withLock { self.task }
        task?.cancel()
    }
}
