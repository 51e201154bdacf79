import Foundation
import HearthLocal
import HearthProviders

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
