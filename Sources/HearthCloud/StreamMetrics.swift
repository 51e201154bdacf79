import HearthProviders

/// Client-side timing of one reply: time to first text and decode speed.
struct StreamMetrics: Sendable {
    let start = ContinuousClock.now
    private(set) var firstText: ContinuousClock.Instant?
    private(set) var lastText: ContinuousClock.Instant?

    /// Notes that a text delta arrived now.
    mutating func textArrived() {
        let now = ContinuousClock.now
        if firstText == nil { firstText = now }
        lastText = now
    }

    /// Usage with the server's counts and the client's timings. Tokens per second counts the
    /// tokens after the first over the time after the first (the first token's wait is prefill).
    func usage(prompt: Int, completion: Int, cached: Int?) -> Usage {
        var ttft: Double?
        var speed: Double?
        if let firstText {
            ttft = Self.seconds(firstText - start)
            if let lastText, completion > 1 {
                let decode = Self.seconds(lastText - firstText)
                if decode > 0 { speed = Double(completion - 1) / decode }
            }
        }
        return Usage(
            promptTokens: prompt, completionTokens: completion, cachedPromptTokens: cached,
            timeToFirstToken: ttft, tokensPerSecond: speed)
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
