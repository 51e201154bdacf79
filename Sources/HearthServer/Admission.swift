import Foundation
import HearthProviders

/// A generation request's place in its pool (the local model's slots and queue, or the cloud
/// routes' own pool). Released exactly once: by ``end()`` when the answer is done, or when the
/// lease is dropped — so a response whose body never runs (the client reset the connection
/// before the head was written) still gives its place back.
final class SlotLease: @unchecked Sendable {
    // `@unchecked Sendable`: `released` is only touched under `lock`.
    private weak var server: HearthServer?
    let number: Int
    let cloud: Bool
    let client: String
    private let lock = NSLock()
    private var released = false

    fileprivate init(server: HearthServer, number: Int, cloud: Bool, client: String) {
        self.server = server
        self.number = number
        self.cloud = cloud
        self.client = client
    }

    /// Gives the place back (later calls do nothing).
    func end() {
        let first: Bool = lock.withLock {
            defer { released = true }
            return !released
        }
        if first { server?.release(self) }
    }

    deinit { end() }
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

    fileprivate func release(_ lease: SlotLease) {
        lock.withLock {
            if lease.cloud { admitted.cloud -= 1 } else { admitted.local -= 1 }
            let left = admittedByClient[lease.client, default: 1] - 1
            admittedByClient[lease.client] = left > 0 ? left : nil
            cancellers[lease.number] = nil
            metrics.admitted.set(to: Double(admitted.local + admitted.cloud))
        }
    }
}
