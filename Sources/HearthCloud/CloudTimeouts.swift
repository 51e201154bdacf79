import HearthProviders

/// How long a cloud provider waits.
public struct CloudTimeouts: Sendable, Equatable {
    /// Longest time to open the TCP (and TLS) connection.
    public var connect: Duration
    /// Longest silence from the server, from sending the request to the first byte and then
    /// between any two pieces of the reply. Reasoning models can think for a while before the
    /// first token; raise this for them.
    public var idle: Duration

    /// Creates timeouts (defaults: connect 10 s, idle 60 s).
    public init(connect: Duration = .seconds(10), idle: Duration = .seconds(60)) {
        self.connect = connect
        self.idle = idle
    }
}

/// When a cloud provider retries a failed request. Retries happen **only before the first
/// byte of the reply reached the consumer**, so a retried request never repeats text.
public struct RetryPolicy: Sendable, Equatable {
    /// Total attempts, the first included (1 = never retry).
    public var maxAttempts: Int
    /// Backoff before the second attempt; it doubles for each further attempt.
    public var baseDelay: Duration
    /// Cap on the exponential backoff.
    public var maxDelay: Duration
    /// A 429's `Retry-After` longer than this is not waited for: the error is thrown at once
    /// (a ``FallbackRouter`` then moves on to the next provider).
    public var maxRetryAfter: Duration

    /// Creates a policy (defaults: 3 attempts, 0.5 s doubling up to 8 s, Retry-After up to 20 s).
    public init(
        maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(8),
        maxRetryAfter: Duration = .seconds(20)
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
    }

    /// Never retry.
    public static let none = RetryPolicy(maxAttempts: 1)
}

extension RetryPolicy {
    /// The wait before attempt `attempt + 1` after `error` ended attempt `attempt` (0-based),
    /// or `nil` when the error is not worth retrying. `unit` is a random number in 0..<1.
    ///
    /// Retried: network errors, 5xx and 429 (not timeouts: a silent server is better left to
    /// the router's fallback than waited for again). A 429 waits for its `Retry-After` (plus up to
    /// 10 % jitter); everything else waits `min(maxDelay, baseDelay·2^attempt)`, jittered
    /// into its upper half ("equal jitter"), so clients that failed together do not retry together.
    func delay(afterAttempt attempt: Int, for error: ProviderError, unit: Double) -> Duration? {
        guard attempt + 1 < maxAttempts else { return nil }
        switch error.code {
        case .rateLimited(let retryAfter):
            if (error.underlying as? HTTPErrorDetails)?.isQuotaExhausted == true { return nil }
            if let retryAfter {
                let wait = Duration.seconds(retryAfter)
                guard wait <= maxRetryAfter else { return nil }
                return wait + wait * (0.1 * unit)
            }
        case .network:
            break
        case .server(let status) where status >= 500:
            break
        default:
            return nil
        }
        let exponential = baseDelay * Double(1 << min(attempt, 20))
        let capped = min(exponential, maxDelay)
        return capped * (0.5 + 0.5 * unit)
    }
}
