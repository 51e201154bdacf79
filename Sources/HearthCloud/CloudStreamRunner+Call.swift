import HearthProviders

extension CloudStreamRunner {
    /// Runs a request whose reply is one value rather than a stream (embeddings): the same
    /// idle timeout, retries (network errors, 5xx, 429 as ``RetryPolicy`` says — a whole
    /// reply can always be asked for again) and classification into ``ProviderError`` as
    /// ``stream(_:)``. `attempt` touches the watchdog whenever bytes arrive.
    func call<T: Sendable>(_ attempt: @escaping @Sendable (IdleWatchdog) async throws -> T) async throws -> T {
        var number = 0
        do {
            while true {
                do {
                    return try await withIdleTimeout(timeouts.idle) { watchdog in try await attempt(watchdog) }
                } catch {
                    let failure = classify(error)
                    if Task.isCancelled { throw failure }
                    guard let wait = retry.delay(afterAttempt: number, for: failure, unit: Double.random(in: 0..<1))
                    else { throw failure }
                    try await Task.sleep(for: wait)
                    number += 1
                }
            }
        } catch {
            throw classify(error)
        }
    }
}
