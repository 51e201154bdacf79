import Foundation

/// Runs `operation` until it finishes, `seconds` pass, `failure()` reports a problem (the
/// server exited, or wrote garbage) or the calling task is cancelled — whichever comes first.
///
/// Not a task group: a task group waits for every child, and an SDK request whose server died
/// may never return. The operation is left to finish (or be cancelled by the caller's
/// `onGiveUp`) in the background.
func withDeadline<T: Sendable>(
    seconds: Double, server: String, what: String, failure: @escaping @Sendable () -> MCPServerError?,
    onGiveUp: @escaping @Sendable () async -> Void = {},
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let gate = RaceGate<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, Error>) in
            gate.start(continuation)
            let work = Task {
                do { gate.finish(.success(try await operation())) } catch { gate.finish(.failure(error)) }
            }
            let watch = Task {
                let deadline = Date().addingTimeInterval(seconds)
                while !Task.isCancelled {
                    if let problem = failure() {
                        gate.finish(.failure(problem))
                        break
                    }
                    if Date() >= deadline {
                        gate.finish(
                            .failure(
                                MCPServerError(
                                    .timedOut, server: server,
                                    message: "\(what) did not finish within \(formatSeconds(seconds)) s")))
                        break
                    }
                    try? await Task.sleep(nanoseconds: 20_000_000)
                }
            }
            gate.onFinish {
                watch.cancel()
                if !gate.succeeded {
                    work.cancel()
                    Task { await onGiveUp() }
                }
            }
        }
    } onCancel: {
        gate.finish(.failure(MCPServerError(.cancelled, server: server, message: "\(what) was cancelled")))
    }
}

private func formatSeconds(_ seconds: Double) -> String { String(format: "%g", seconds) }

/// The first result of a race, delivered once. `@unchecked Sendable`: guarded by `lock`.
final class RaceGate<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Error>?
    private var early: Result<T, Error>?
    private var done = false
    private var handlers: [@Sendable () -> Void] = []
    private var _succeeded = false

    /// Whether the delivered result was a success.
    var succeeded: Bool { lock.withLock { _succeeded } }

    func start(_ continuation: CheckedContinuation<T, Error>) {
        let pending: Result<T, Error>? = lock.withLock {
            if let early { return early }
            self.continuation = continuation
            return nil
        }
        if let pending { continuation.resume(with: pending) }
    }

    /// Delivers `result` if nothing was delivered yet.
    func finish(_ result: Result<T, Error>) {
        let (target, run): (CheckedContinuation<T, Error>?, [@Sendable () -> Void]) = lock.withLock {
            guard !done else { return (nil, []) }
            done = true
            if case .success = result { _succeeded = true }
            guard let continuation else {
                early = result
                return (nil, handlers)
            }
            self.continuation = nil
            return (continuation, handlers)
        }
        target?.resume(with: result)
        for handler in run { handler() }
    }

    /// Runs `handler` once a result is delivered (at once when it already was).
    func onFinish(_ handler: @escaping @Sendable () -> Void) {
        let now = lock.withLock { () -> Bool in
            if done { return true }
            handlers.append(handler)
            return false
        }
        if now { handler() }
    }
}
