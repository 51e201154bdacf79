import Foundation
import HTTPTypes

/// Per-client requests per minute (a sliding 60-second window) and tokens per UTC day.
///
/// ``admit(_:)`` runs before any work: it refuses with 429 when the client already made its
/// requests this minute or used (or reserved) its tokens today. A generation then reserves
/// what it may use (``reserve(_:prompt:reply:)``: the prompt's estimate plus its `max_tokens`,
/// or, without one, the reply is capped at what the quota has left) and settles the real count
/// when it is done (``settle(_:used:)``), so a quota holds however many requests are in flight.
/// The day's count starts from the usage ledger at start-up, so a restart does not reset quotas.
final class RateLimiter: @unchecked Sendable {
    // `@unchecked Sendable`: the dictionaries are only touched under `lock`.
    private let clock: GatewayClock
    private let lock = NSLock()
    private var recent: [String: [Date]] = [:]
    private var tokens: [String: (day: String, used: Int)] = [:]
    /// Tokens held by answers in flight, per client.
    private var reserved: [String: Int] = [:]

    /// Tokens held for one answer until it is settled.
    struct Reservation: Sendable {
        let client: String
        let tokens: Int
        /// The prompt's estimated length (charged when a provider cut short reports no usage).
        let promptEstimate: Int
        let day: String
    }

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
            used += reserved[client.name] ?? 0
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

    /// Reserves the tokens an answer may use against the client's daily quota: `prompt` (an
    /// estimate) plus `reply` (its `max_tokens`). Without `reply`, the reply is capped at what
    /// the quota has left, returned as the cap. Clients without a quota reserve nothing.
    /// - Throws: ``APIError`` 429 `token_quota_exceeded` when the reservation does not fit.
    func reserve(_ client: GatewayConfiguration.Client, prompt: Int, reply: Int?) throws -> (Reservation, cap: Int?) {
        let today = Self.day(clock.now())
        return try lock.withLock {
            guard let limit = client.tokensPerDay else {
                return (Reservation(client: client.name, tokens: 0, promptEstimate: prompt, day: today), nil)
            }
            let used = (tokens[client.name].flatMap { $0.day == today ? $0.used : nil } ?? 0) + (reserved[client.name] ?? 0)
            let left = limit - used - prompt
            var cap: Int?
            let wanted: Int
            if let reply {
                wanted = reply
            } else {
                cap = max(0, left)
                wanted = max(0, left)
            }
            guard left >= 1, wanted <= left else {
                var error = APIError(
                    status: 429,
                    message: "Client '\(client.name)' has \(max(0, limit - used)) of its \(limit) tokens left today (UTC); this request may use "
                        + "about \(prompt) prompt tokens plus \(reply.map(String.init) ?? "a reply") — lower max_tokens or wait for midnight UTC.",
                    type: "rate_limit_error", code: "token_quota_exceeded")
                let now = clock.now().timeIntervalSince1970
                error.retryAfter = max(1, Int(((now / 86400).rounded(.down) * 86400 + 86400 - now).rounded(.up)))
                throw error
            }
            reserved[client.name, default: 0] += prompt + wanted
            return (Reservation(client: client.name, tokens: prompt + wanted, promptEstimate: prompt, day: today), cap)
        }
    }

    /// Gives a reservation back and charges what the answer really used.
    func settle(_ reservation: Reservation, used count: Int) {
        let today = Self.day(clock.now())
        lock.withLock {
            let left = (reserved[reservation.client] ?? 0) - reservation.tokens
            reserved[reservation.client] = left > 0 ? left : nil
            let used = tokens[reservation.client].flatMap { $0.day == today ? $0.used : nil } ?? 0
            tokens[reservation.client] = (today, used + count)
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
