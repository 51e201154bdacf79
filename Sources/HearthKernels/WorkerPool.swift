import Foundation

/// A persistent pool of worker threads that run one data-parallel job at a time.
///
/// The calling thread takes part as worker 0, so a pool of `threadCount` uses
/// `threadCount - 1` background threads, created once. Jobs are plain closures that
/// receive the worker index; `parallelFor` splits an index range evenly.
///
/// `@unchecked Sendable`: the job closure and bookkeeping are only touched while holding
/// `condition`'s lock, and a job's closure outlives no `run` call (run waits for all
/// workers before returning), which is what makes storing a non-escaping closure safe.
public final class WorkerPool: @unchecked Sendable {
    /// Number of threads that execute a job, including the caller.
    public let threadCount: Int

    private let condition = NSCondition()
    private var generation: UInt64 = 0
    private var pending = 0
    private var job: ((Int) -> Void)?
    private var stopping = false

    /// Creates a pool. `threads` is clamped to at least 1.
    public init(threads: Int) {
        threadCount = max(1, threads)
        for worker in 1..<threadCount {
            let thread = Thread { [self] in self.workerLoop(index: worker) }
            thread.name = "hearth-worker-\(worker)"
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    deinit {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    /// A default thread count: the number of active processors.
    public static var defaultThreadCount: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Runs `body(worker)` once on every worker (0..<threadCount) and returns when all finished.
    public func run(_ body: (Int) -> Void) {
        if threadCount == 1 {
            body(0)
            return
        }
        withoutActuallyEscaping(body) { escapable in
            condition.lock()
            job = escapable
            pending = threadCount - 1
            generation &+= 1
            condition.broadcast()
            condition.unlock()

            escapable(0)

            condition.lock()
            while pending > 0 { condition.wait() }
            job = nil
            condition.unlock()
        }
    }

    /// Splits `0..<count` into one contiguous range per worker and runs `body` on each
    /// non-empty range. `granularity` rounds range boundaries to multiples of it.
    public func parallelFor(_ count: Int, granularity: Int = 1, _ body: (Range<Int>) -> Void) {
        parallelChunks(count, granularity: granularity) { range, _ in body(range) }
    }

    /// Like `parallelFor`, but also passes the worker index, for per-worker scratch memory.
    public func parallelChunks(_ count: Int, granularity: Int = 1, _ body: (Range<Int>, Int) -> Void) {
        guard count > 0 else { return }
        let units = (count + granularity - 1) / granularity
        let workers = min(threadCount, units)
        if workers <= 1 {
            body(0..<count, 0)
            return
        }
        run { worker in
            guard worker < workers else { return }
            let start = min(count, (units * worker / workers) * granularity)
            let end = min(count, (units * (worker + 1) / workers) * granularity)
            if start < end { body(start..<end, worker) }
        }
    }

    private func workerLoop(index: Int) {
        var seen: UInt64 = 0
        while true {
            condition.lock()
            while generation == seen && !stopping { condition.wait() }
            if stopping {
                condition.unlock()
                return
            }
            seen = generation
            var body = job
            condition.unlock()

            body?(index)
            // Release the closure before reporting completion: `run` verifies that its
            // non-escaping job did not outlive the call.
            body = nil

            condition.lock()
            pending -= 1
            if pending == 0 { condition.broadcast() }
            condition.unlock()
        }
    }
}
