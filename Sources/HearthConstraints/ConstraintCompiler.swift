import Dispatch

/// Where constraint compiles run: on threads of their own, not on Swift's cooperative pool, so
/// a compile (up to ``CompileBudget/timeLimit``) never holds a thread that request handlers,
/// health checks and token streams need. At most ``width`` compiles run at once; the rest wait
/// their turn in order.
package enum ConstraintCompiler {
    /// Compiles run at once.
    package static let width = 2

    private static let queue = DispatchQueue(label: "hearth.constraints", attributes: .concurrent)
    private static let slots = DispatchSemaphore(value: width)

    /// Runs `work` on a compile thread and returns its result.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                slots.wait()
                defer { slots.signal() }
                continuation.resume(with: Result { try work() })
            }
        }
    }
}
