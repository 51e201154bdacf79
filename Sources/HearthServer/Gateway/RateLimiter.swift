import Foundation
import HTTPTypes

/// Per-client requests per minute (a sliding 60-second window) and tokens per UTC day.
///
/// ``admit(_:)`` runs before any work: it refuses with 429 when the client already made its
/// requests this minute or used its tokens today. Tokens are added by ``consume(_:tokens:)``
/// when a reply is done, so a reply in flight may take a client past its daily quota once;
/// the next request is refused. The day's count starts from the usage ledger at start-up,
/// so a restart does not reset quotas.
final class RateLimiter: @unchecked Sendable {
    // `@unchecked Sendable`: the dictionaries are only touched under `lock`.
    private let clock: GatewayClock
    private let lock = NSLock()
    private var recent: [String: [Date]] = [:]
    private var tokens: [String: (day: String, used: Int)] = [:]

    init(clock: GatewayClock) { self.clock = clock }

    /// The figures a response reports in `x-ratelimit-*` headers.
    struct Quota: Sendable {
        var requestLimit: Int?
        var requestsRemaining: Int?
        var tokenLimit: Int?
        var tokensRemaining: Int?

        var headers: HTTPFields {
            var fields = HTTPFields()
            func set(_ name: String, _ value: Int?) {
                if let value, let field = HTTPField.Name(name) { fields[field] = String(value) }
            }
            set("x-ratelimit-limit-requests", requestLimit)
            set("x-ratelimit-remaining-requests", requestsRemaining)
            set("x-ratelimit-limit-tokens", tokenLimit)
            set("x-ratelimit-remaining-tokens", tokensRemaining)
            return fields
        }
    }

    /// A refusal: the 429 and the headers that go with it.
    struct Refusal: Error {
        var error: APIError
        var quota: Quota
    }

    /// The UTC day of `date`, `YYYY-MM-DD` (the usage ledger's day too).
    static func day(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1)
    }

    /// Sets the tokens a client has used today (from the ledger, at start-up).
    func seed(client: String, day: String, used: Int) {
        lock.withLock { tokens[client] = (day, used) }
    }

    /// Counts a request against the client's limits, or refuses it.
    /// - Throws: ``Refusal`` with a 429 `rate_limit_exceeded` / `token_quota_exceeded` and `Retry-After`.
    func admit(_ client: GatewayConfiguration.Client) throws -> Quota {
        let now = clock.now()
        let today = Self.day(now)
        return try lock.withLock {
            var quota = Quota(requestLimit: client.requestsPerMinute, tokenLimit: client.tokensPerDay)
            var used = tokens[client.name].flatMap { $0.day == today ? $0.used : nil } ?? 0
            if tokens[client.name]?.day != today {
                tokens[client.name] = (today, 0)
                used = 0
            }
            if let limit = client.tokensPerDay {
                quota.tokensRemaining = max(0, limit - used)
                if used >= limit {
                    quota.requestsRemaining = client.requestsPerMinute.map { max(0, $0 - window(client.name, now).count) }
                    let midnight = (now.timeIntervalSince1970 / 86400).rounded(.down) * 86400 + 86400
                    var error = APIError(
                        status: 429,
                        message: "Client '\(client.name)' has used its \(limit) tokens for today (UTC); the quota resets at midnight UTC.",
                        type: "rate_limit_error", code: "token_quota_exceeded")
                    error.retryAfter = max(1, Int((midnight - now.timeIntervalSince1970).rounded(.up)))
                    throw Refusal(error: error, quota: quota)
                }
            }
            if let limit = client.requestsPerMinute {
                let times = window(client.name, now)
                if times.count >= limit {
                    quota.requestsRemaining = 0
                    let oldest = times.first ?? now
                    var error = APIError(
                        status: 429, message: "Client '\(client.name)' may make \(limit) requests per minute; slow down.",
                        type: "rate_limit_error", code: "rate_limit_exceeded")
                    error.retryAfter = max(1, Int((oldest.addingTimeInterval(60).timeIntervalSince(now)).rounded(.up)))
                    throw Refusal(error: error, quota: quota)
                }
                recent[client.name] = times + [now]
                quota.requestsRemaining = limit - times.count - 1
            }
            return quota
        }
    }

    /// Requests of the last 60 seconds (pruned). Call under `lock`.
    private func window(_ name: String, _ now: Date) -> [Date] {
        let times = (recent[name] ?? []).filter { now.timeIntervalSince($0) < 60 }
        recent[name] = times
        return times
    }

    /// Adds a finished reply's tokens to the client's count for today.
    func consume(_ client: String, tokens count: Int) {
        let today = Self.day(clock.now())
        lock.withLock {
            let used = tokens[client].flatMap { $0.day == today ? $0.used : nil } ?? 0
            tokens[client] = (today, used + count)
        }
    }
}
