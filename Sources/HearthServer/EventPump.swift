import Foundation
import HearthLocal
import HearthProviders

/// Forwards a provider's event stream into one the server owns, so a request can be stopped
/// from outside the task writing its response (client gone, deadline, drain): ``cancel(_:)``
/// cancels the upstream consumer (which stops the sequence within one decode step) and ends
/// the forwarded stream with an error.
final class EventPump: @unchecked Sendable {
    // `@unchecked Sendable`: `task` and `promptWaiter` are only touched under `lock`.
    let events: AsyncThrowingStream<LocalProvider.LocalEvent, Error>
    private let continuation: AsyncThrowingStream<LocalProvider.LocalEvent, Error>.Continuation
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private var promptWaiter: CheckedContinuation<Int, Error>?
    private var promptResult: Result<Int, Error>?

    init() {
        (events, continuation) = AsyncThrowingStream.makeStream()
    }

    /// Starts consuming `upstream`; returns the prompt's token count once the provider has
    /// tokenized and admitted it, or throws the provider's error (context too long, …).
    func start(_ upstream: AsyncThrowingStream<LocalProvider.LocalEvent, Error>) async throws -> Int {
        let continuation = self.continuation
        let task = Task {
            do {
                for try await event in upstream {
                    if case .promptTokens(let count) = event { self.resolvePrompt(.success(count)) }
                    continuation.yield(event)
                }
                self.resolvePrompt(.failure(ProviderError(.cancelled, provider: "local", message: "the generation ended early")))
                continuation.finish()
            } catch {
                self.resolvePrompt(.failure(error))
                continuation.finish(throwing: error)
            }
        }
        lock.withLock { self.task = task }
        return try await withCheckedThrowingContinuation { waiter in
            let ready: Result<Int, Error>? = lock.withLock {
                if let promptResult { return promptResult }
                promptWaiter = waiter
                return nil
            }
            if let ready { waiter.resume(with: ready) }
        }
    }

    private func resolvePrompt(_ result: Result<Int, Error>) {
        let waiter: CheckedContinuation<Int, Error>? = lock.withLock {
            guard promptResult == nil else { return nil }
            promptResult = result
            defer { promptWaiter = nil }
            return promptWaiter
        }
        waiter?.resume(with: result)
    }

    /// Stops the generation and ends ``events`` with `error`.
    func cancel(_ error: Error) {
        // Finish first: the upstream task, once cancelled, finishes the stream normally, and
        // the first finish wins, so the consumer must see the error before that can happen.
        continuation.finish(throwing: error)
        resolvePrompt(.failure(error))
        let task = lock.withLock { self.task }
        task?.cancel()
    }
}
