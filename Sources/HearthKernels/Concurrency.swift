import Dispatch

/// `DispatchQueue.concurrentPerform` for one-off parallel work outside the token loop
/// (quantizing at load). The token loop uses `WorkerPool`.
enum DispatchQueueShim {
    static func concurrentPerform(iterations: Int, execute work: @Sendable (Int) -> Void) {
        DispatchQueue.concurrentPerform(iterations: iterations, execute: work)
    }
}
