import Foundation
import HearthLocal
import HearthProviders
import NIOCore

/// A generation request's place in its pool (the local model's slots and queue, or the cloud
/// routes' own pool). Released exactly once: by ``end()`` when the answer is done, or when the
/// lease is dropped — so a response whose body never runs (the client reset the connection
/// before the head was written) still gives its place back.
final class SlotLease: Sendable {
    let number: Int
    let cloud: Bool
    let client: String
    private let release: OnceAction

    fileprivate init(server: HearthServer, number: Int, cloud: Bool, client: String) {
        self.number = number
        self.cloud = cloud
        self.client = client
        release = OnceAction { [weak server] in server?.release(number: number, cloud: cloud, client: client) }
    }

    /// Gives the place back (later calls do nothing).
    func end() { release.run() }
}

extension HearthServer {
    /// Admits a generation request to its route's pool, or explains why not: 503 while loading
    /// or draining or when the pool is full (+ Retry-After), 429 when the client already has its
    /// `max_in_flight` requests running. `cancel` is called if the server drains past its grace.
    func admit(_ route: Gateway.ModelRoute, client: GatewayConfiguration.Client, cancel: @escaping @Sendable () -> Void) throws
        -> SlotLease
    {
        let cloud = !route.isLocal
        let number: Int = try lock.withLock {
            switch phase {
            case .loading where !cloud:
                metrics.rejected.increment()
                throw APIError.unavailable("Loading model", retryAfter: 5)
            case .draining:
                metrics.rejected.increment()
                throw APIError.unavailable("The server is shutting down.", retryAfter: 5)
            case .failed where !cloud:
                throw APIError(status: 503, message: "The model could not be loaded.", type: "unavailable_error", code: "model_unavailable")
            default:
                break
            }
            if cloud {
                guard admitted.cloud < options.maxCloudInFlight else {
                    metrics.rejected.increment()
                    throw APIError(
                        status: 503, message: "The server is at capacity for cloud routes (\(options.maxCloudInFlight) in flight); retry later.",
                        type: "unavailable_error", code: "queue_full", retryAfter: 1)
                }
            } else {
                let parallel = local?.parallelSequences ?? 1
                guard admitted.local < parallel + options.maxQueue else {
                    metrics.rejected.increment()
                    throw APIError(
                        status: 503,
                        message: "The server is at capacity (\(parallel) running, \(options.maxQueue) queued); retry later.",
                        type: "unavailable_error", code: "queue_full", retryAfter: 1)
                }
            }
            if let limit = client.maxInFlight, admittedByClient[client.name, default: 0] >= limit {
                throw APIError(
                    status: 429, message: "Client '\(client.name)' may have \(limit) requests in flight at once; wait for one to finish.",
                    type: "rate_limit_error", code: "too_many_in_flight", retryAfter: 1)
            }
            if cloud { admitted.cloud += 1 } else { admitted.local += 1 }
            admittedByClient[client.name, default: 0] += 1
            metrics.admitted.set(to: Double(admitted.local + admitted.cloud))
            nextLease += 1
            cancellers[nextLease] = cancel
            return nextLease
        }
        return SlotLease(server: self, number: number, cloud: cloud, client: client.name)
    }

    fileprivate func release(number: Int, cloud: Bool, client: String) {
        lock.withLock {
            if cloud { admitted.cloud -= 1 } else { admitted.local -= 1 }
            let left = admittedByClient[client, default: 1] - 1
            admittedByClient[client] = left > 0 ? left : nil
            cancellers[number] = nil
            metrics.admitted.set(to: Double(admitted.local + admitted.cloud))
        }
    }
}

extension HearthServer {
    /// A local request's wait for its fair-queue turn (``FairQueue``) of as many sequence slots
    /// as the model asks for (a wave of `n` choices takes `n`); nil without a local model.
    func localAdmission(client: String) -> LocalProvider.Admission? {
        guard let queue = localQueue else { return nil }
        return { slots in
            let turn = try await queue.turn(for: client, slots: slots)
            return { turn.end() }
        }
    }

    /// Runs local work that is not a generation (embeddings, tokenizing, counting) as a
    /// generation runs: admitted to the route's pool (``admit(_:client:cancel:)``: 503 when full
    /// or draining, 429 past the client's `max_in_flight`), its model work after a fair-queue
    /// turn (`work` gets the admission to pass to the provider), and stopped — between the
    /// provider's steps — when the client goes away, at ``ServerOptions/requestTimeout`` (504)
    /// or when the server drains past its grace (503).
    /// - Throws: ``APIError`` for the refusals and stops above; what `work` throws otherwise.
    func runAdmitted<T: Sendable>(
        _ route: Gateway.ModelRoute, client: GatewayConfiguration.Client, channel: any Channel,
        _ work: @escaping @Sendable (LocalProvider.Admission?) async throws -> T
    ) async throws -> T {
        let stop = AdmittedWork()
        let lease = try admit(route, client: client) { stop.stop(.draining) }
        defer { lease.end() }
        let admission = localAdmission(client: client.name)
        let task = Task { try await work(admission) }
        stop.attach(task)
        let watch = await watchConnection(channel) { stop.stop(.clientGone) }
        let timeout = options.requestTimeout
        let deadline = Task {
            try await Task.sleep(for: .milliseconds(Int64(timeout * 1000)))
            stop.stop(.timeout)
        }
        defer {
            watch.end()
            deadline.cancel()
        }
        do {
            return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        } catch {
            switch stop.reason {
            case .timeout?:
                throw APIError(
                    status: 504, message: "The request took longer than \(Int(timeout)) seconds.", type: "timeout_error", code: "timeout")
            case .draining?: throw APIError.unavailable("The server is shutting down.", retryAfter: 5)
            case .clientGone?: throw ClientGone()
            case nil: throw error
            }
        }
    }
}

/// Why admitted work was stopped from outside, and the task to stop.
final class AdmittedWork: @unchecked Sendable {
    // `@unchecked Sendable`: `why` and `task` are only touched under `lock`.
    enum Reason { case clientGone, timeout, draining }
    private let lock = NSLock()
    private var why: Reason?
    private var task: (any CancellableTask)?

    /// The first reason it was stopped for (nil: it was not).
    var reason: Reason? { lock.withLock { why } }

    /// The work to cancel (at once if it was stopped before it started).
    func attach(_ task: some CancellableTask) {
        let stopped: Bool = lock.withLock {
            self.task = task
            return why != nil
        }
        if stopped { task.cancel() }
    }

    /// Stops the work (the first reason is kept).
    func stop(_ reason: Reason) {
        let task: (any CancellableTask)? = lock.withLock {
            if why == nil { why = reason }
            return self.task
        }
        task?.cancel()
    }
}

/// A task that can be cancelled, whatever it returns.
protocol CancellableTask: Sendable { func cancel() }
extension Task: CancellableTask {}
