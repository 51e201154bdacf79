import Synchronization

/// Thrown by ``withIdleTimeout(_:_:)`` when the server stayed silent too long.
struct IdleTimeoutError: Error {
    /// The timeout that expired.
    let timeout: Duration
}

/// Records activity for ``withIdleTimeout(_:_:)``.
final class IdleWatchdog: Sendable {
    private let lastActivity: Mutex<ContinuousClock.Instant>

    init() {
        lastActivity = Mutex(ContinuousClock.now)
    }

    /// Marks that the server just sent something.
    func touch() {
        let now = ContinuousClock.now
        lastActivity.withLock { $0 = now }
    }

    var last: ContinuousClock.Instant { lastActivity.withLock { $0 } }
}

/// Runs `body`, cancelling it and throwing ``IdleTimeoutError`` if `timeout` passes without a
/// call to ``IdleWatchdog/touch()``. Cancelling `body` cancels the HTTP request or closes the
/// WebSocket it is awaiting.
func withIdleTimeout<T: Sendable>(
    _ timeout: Duration, _ body: @escaping @Sendable (IdleWatchdog) async throws -> T
) async throws -> T {
    let watchdog = IdleWatchdog()
    return try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body(watchdog) }
        group.addTask {
            while true {
                let deadline = watchdog.last + timeout
                if ContinuousClock.now >= deadline { throw IdleTimeoutError(timeout: timeout) }
                try await Task.sleep(until: deadline, clock: .continuous)
            }
        }
        defer { group.cancelAll() }
        while let result = try await group.next() {
            if let value = result { return value }
        }
        throw CancellationError()
    }
}
