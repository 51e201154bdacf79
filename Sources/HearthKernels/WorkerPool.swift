import Foundation
import Synchronization

/// A persistent pool of worker threads that run one data-parallel job at a time.
///
/// The calling thread takes part as worker 0, so a pool of `threadCount` uses
/// `threadCount - 1` background threads, created once. A job is published by bumping an
/// atomic generation counter; workers spin on it (a decode step dispatches a job every
/// few tens of microseconds, far below a futex wake-up's cost) and fall back to sleeping
/// on a condition after `spinLimit` idle polls, so an idle pool costs no CPU.
///
/// `@unchecked Sendable`: `job` is written only by the dispatching thread before the
/// generation is released and read by workers after they acquire it; `run` waits for all
/// workers to finish (and drop the closure) before returning, which is also what makes
/// storing a non-escaping closure safe.
package final class WorkerPool: @unchecked Sendable {
    /// Number of threads that execute a job, including the caller.
    package let threadCount: Int

    private let generation = Atomic<UInt64>(0)
    private let remaining = Atomic<Int>(0)
    private let sleepers = Atomic<Int>(0)
    private let stopping = Atomic<Bool>(false)
    /// The next chunk `parallelChunks` hands out (reset before each job is published).
    private let nextChunk = Atomic<Int>(0)
    private let condition = NSCondition()
    private var job: ((Int) -> Void)?

    /// Idle polls before a worker goes to sleep (about a millisecond).
    private static let spinLimit = 20_000

    /// Creates a pool. `threads` is clamped to at least 1.
    package init(threads: Int) {
        threadCount = max(1, threads)
        for worker in 1..<threadCount {
            let thread = Thread { [self] in self.workerLoop(index: worker) }
            thread.name = "hearth-worker-\(worker)"
            // 8 MiB, as a main thread has: only touched pages are backed, and unoptimised (debug)
            // builds of the kernels, with every tile kind inlined, keep frames of over 1 MiB.
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    deinit {
        stopping.store(true, ordering: .sequentiallyConsistent)
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// A default thread count: the number of active processors.
    package static var defaultThreadCount: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// Runs `body(worker)` once on every worker (0..<threadCount) and returns when all finished.
    package func run(_ body: (Int) -> Void) {
        if threadCount == 1 {
            body(0)
            return
        }
        withoutActuallyEscaping(body) { escapable in
            job = escapable
            remaining.store(threadCount - 1, ordering: .relaxed)
            generation.add(1, ordering: .sequentiallyConsistent)
            if sleepers.load(ordering: .sequentiallyConsistent) > 0 {
                condition.lock()
                condition.broadcast()
                condition.unlock()
            }
            escapable(0)
            while remaining.load(ordering: .acquiring) > 0 { Self.pause() }
            job = nil
        }
    }

    /// Splits `0..<count` into contiguous ranges and runs `body` on each, spread over the
    /// workers. `granularity` rounds range boundaries to multiples of it.
    package func parallelFor(_ count: Int, granularity: Int = 1, _ body: (Range<Int>) -> Void) {
        parallelChunks(count, granularity: granularity) { range, _ in body(range) }
    }

    /// Like `parallelFor`, but also passes the worker index, for per-worker scratch memory.
    ///
    /// The range is cut into about `chunksPerWorker` chunks per worker, claimed from an
    /// atomic counter: a worker the OS slows down (another process on a shared core) takes
    /// fewer chunks instead of holding every other worker at the barrier. A worker runs
    /// the chunks it claims one after another, so per-worker scratch stays private.
    package func parallelChunks(_ count: Int, granularity: Int = 1, _ body: (Range<Int>, Int) -> Void) {
        guard count > 0 else { return }
        let units = (count + granularity - 1) / granularity
        let workers = min(threadCount, units)
        if workers <= 1 {
            body(0..<count, 0)
            return
        }
        let chunkUnits = max(1, units / (workers * Self.chunksPerWorker))
        let chunks = (units + chunkUnits - 1) / chunkUnits
        nextChunk.store(0, ordering: .relaxed)
        run { worker in
            while true {
                let c = nextChunk.add(1, ordering: .relaxed).oldValue
                guard c < chunks else { return }
                let start = min(count, c * chunkUnits * granularity)
                let end = min(count, (c + 1) * chunkUnits * granularity)
                if start < end { body(start..<end, worker) }
            }
        }
    }

    /// Chunks per worker `parallelChunks` aims for.
    static let chunksPerWorker = 4

    /// A spin-wait step. (`_mm_pause` is not callable from Swift on Linux: clang's header
    /// declares it without an inline body, so the loop spins on the atomic load alone.)
    @inline(__always)
    private static func pause() {}

    private func workerLoop(index: Int) {
        var seen: UInt64 = 0
        while true {
            var spins = 0
            while generation.load(ordering: .acquiring) == seen {
                if stopping.load(ordering: .relaxed) { return }
                spins += 1
                if spins < Self.spinLimit {
                    Self.pause()
                    continue
                }
                // Sleep. The dispatcher bumps `generation` before reading `sleepers`, and we
                // count ourselves before re-reading `generation`, so no wake-up is lost.
                condition.lock()
                sleepers.add(1, ordering: .sequentiallyConsistent)
                while generation.load(ordering: .sequentiallyConsistent) == seen
                    && !stopping.load(ordering: .sequentiallyConsistent)
                {
                    condition.wait()
                }
                sleepers.subtract(1, ordering: .sequentiallyConsistent)
                condition.unlock()
                spins = 0
            }
            if stopping.load(ordering: .relaxed) { return }
            seen = generation.load(ordering: .acquiring)
            var body = job
            body?(index)
            // Release the closure before reporting completion: `run` verifies that its
            // non-escaping job did not outlive the call.
            body = nil
            remaining.subtract(1, ordering: .releasing)
        }
    }
}
