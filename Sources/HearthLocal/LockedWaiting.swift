import Foundation

/// An action that runs exactly once: at ``run()``, or when the last reference to it goes — so
/// a lease that is dropped without being ended (a response whose body never ran) still gives
/// its place back. The leases of ``ModelResidency`` and of the server's pools and fair queue
/// each hold one.
///
/// `@unchecked Sendable`: `done` is only touched under `lock`; `action` is set once.
package final class OnceAction: @unchecked Sendable {
    private let action: @Sendable () -> Void
    private let lock = NSLock()
    private var done = false

    /// An action that has not run yet.
    package init(_ action: @escaping @Sendable () -> Void) {
        self.action = action
    }

    /// Runs the action unless it has run (later calls do nothing).
    package func run() {
        let first: Bool = lock.withLock {
            defer { done = true }
            return !done
        }
        if first { action() }
    }

    deinit { run() }
}

/// One task's wait for a value that another task grants under the owner's lock (a fair queue's
/// turn, ``ModelResidency``'s hold). Cancelling the waiting task withdraws it at once, or —
/// when it is cancelled before it was queued — refuses it as it would be queued.
///
/// `@unchecked Sendable`: every field is only touched under the owner's lock.
package final class LockedWait<Value: Sendable>: @unchecked Sendable {
    private var continuation: CheckedContinuation<Value, Error>?
    private var done = false
    private var cancelled = false

    /// A wait not started yet.
    package init() {}

    /// Whether it was granted or cancelled: nothing more may happen to it. Under the owner's lock.
    package var isDone: Bool { done }

    /// Ends the wait with `value`. Under the owner's lock, for a wait that is queued.
    package func grant(_ value: Value) {
        done = true
        let continuation = continuation
        self.continuation = nil
        continuation?.resume(returning: value)
    }

    /// Waits for ``grant(_:)``. Under `lock`, `enqueue` puts this wait where the owner's
    /// `dispatch` finds it, then `dispatch` runs; if the task is cancelled while queued,
    /// `withdraw` takes it out, the task throws, and `dispatch` runs again (a wait that left
    /// may have held others up).
    /// - Throws: `CancellationError` when the task is cancelled before the grant.
    package func wait(
        under lock: NSLock, enqueue: () -> Void, withdraw: @escaping @Sendable () -> Void,
        dispatch: @escaping @Sendable () -> Void
    ) async throws -> Value {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                lock.withLock {
                    if cancelled {
                        done = true
                        continuation.resume(throwing: CancellationError())
                        return
                    }
                    self.continuation = continuation
                    enqueue()
                    dispatch()
                }
            }
        } onCancel: {
            lock.withLock {
                guard !done else { return }
                cancelled = true
                guard let continuation else { return }  // not queued yet: refused when it is
                done = true
                self.continuation = nil
                withdraw()
                continuation.resume(throwing: CancellationError())
                dispatch()
            }
        }
    }
}
