import Foundation
import Testing

@testable import HearthServer

/// The gateway's rate limiter on its own, with a clock moved by hand: the sliding minute, the
/// UTC day, per-client counts, and reservations held while an answer is in flight.
@Suite struct RateLimiterTests {
    /// 2026-03-10 12:00:00 UTC: midnight UTC is 43 200 seconds away.
    static let noon = Date(timeIntervalSince1970: 1_773_144_000)

    static func refusal(_ body: () throws -> Void) -> RateLimiter.Refusal? {
        do {
            try body()
            return nil
        } catch let refusal as RateLimiter.Refusal {
            return refusal
        } catch {
            Issue.record("not a Refusal: \(error)")
            return nil
        }
    }

    static func apiError(_ body: () throws -> Void) -> APIError? {
        do {
            try body()
            return nil
        } catch let error as APIError {
            return error
        } catch {
            Issue.record("not an APIError: \(error)")
            return nil
        }
    }

    @Test func requestsPerMinuteSlideWithTheWindow() throws {
        let clock = ManualClock(Self.noon)
        let limiter = RateLimiter(clock: clock.clock)
        let client = GatewayConfiguration.Client(name: "a", keyDigest: [], requestsPerMinute: 3)
        var remaining: [Int?] = []
        for _ in 0..<3 {
            remaining.append(try limiter.admit(client).requestsRemaining)
            clock.advance(10)
        }
        #expect(remaining == [2, 1, 0])
        // At +30 s the oldest request (at +0) leaves the window at +60: retry in 30 s.
        let refused = try #require(Self.refusal { _ = try limiter.admit(client) })
        #expect(refused.error.status == 429 && refused.error.code == "rate_limit_exceeded")
        #expect(refused.error.retryAfter == 30)
        #expect(refused.quota.requestsRemaining == 0 && refused.quota.requestLimit == 3)
        // A refusal takes no slot: at +60 exactly one (the first) has left the window.
        clock.advance(30)
        #expect(try limiter.admit(client).requestsRemaining == 0)
        #expect(Self.refusal { _ = try limiter.admit(client) } != nil)
        // At +70 the second has left as well.
        clock.advance(10)
        #expect(try limiter.admit(client).requestsRemaining == 0)
    }

    @Test func clientsAreCountedSeparately() throws {
        let limiter = RateLimiter(clock: ManualClock(Self.noon).clock)
        let a = GatewayConfiguration.Client(name: "a", keyDigest: [], requestsPerMinute: 1)
        let b = GatewayConfiguration.Client(name: "b", keyDigest: [], requestsPerMinute: 1)
        _ = try limiter.admit(a)
        #expect(Self.refusal { _ = try limiter.admit(a) } != nil)
        #expect(try limiter.admit(b).requestsRemaining == 0)
        // A client without limits is never refused and reports none.
        let free = GatewayConfiguration.Client(name: "free", keyDigest: [])
        for _ in 0..<100 {
            let quota = try limiter.admit(free)
            #expect(quota.requestLimit == nil && quota.requestsRemaining == nil && quota.tokensRemaining == nil)
        }
        #expect(try limiter.admit(free).headers.isEmpty)
    }

    /// Reservations hold tokens while an answer is in flight; settling gives back what it did
    /// not use; the day's count refuses at the limit until midnight UTC.
    @Test func tokenReservationsHoldAndSettle() throws {
        let clock = ManualClock(Self.noon)
        let limiter = RateLimiter(clock: clock.clock)
        let client = GatewayConfiguration.Client(name: "a", keyDigest: [], tokensPerDay: 100)
        #expect(try limiter.admit(client).tokensRemaining == 100)
        let (first, cap) = try limiter.reserve(client, prompt: 10, reply: 50)
        #expect(cap == nil && first.tokens == 60 && first.promptEstimate == 10)
        // 60 held: 10 + 40 does not fit in the 40 left.
        let refused = try #require(Self.apiError { _ = try limiter.reserve(client, prompt: 10, reply: 40) })
        #expect(refused.status == 429 && refused.code == "token_quota_exceeded")
        #expect(refused.retryAfter == 43_200)
        #expect(try limiter.admit(client).tokensRemaining == 40)
        // The answer used 20 of its 60: 80 left, and 10 + 40 fits now.
        limiter.settle(first, used: 20)
        #expect(try limiter.admit(client).tokensRemaining == 80)
        let (second, _) = try limiter.reserve(client, prompt: 10, reply: 40)
        #expect(second.tokens == 50)
        limiter.settle(second, used: 80)
        // 100 used: admission itself refuses, with the seconds to midnight UTC.
        clock.advance(3600)
        let spent = try #require(Self.refusal { _ = try limiter.admit(client) })
        #expect(spent.error.code == "token_quota_exceeded" && spent.error.retryAfter == 39_600)
        #expect(spent.quota.tokensRemaining == 0 && spent.quota.tokenLimit == 100)
        #expect(spent.quota.headers.contains { $0.name.rawName == "x-ratelimit-remaining-tokens" && $0.value == "0" })
        // The next UTC day starts from zero.
        clock.advance(39_600)
        #expect(try limiter.admit(client).tokensRemaining == 100)
    }

    /// Without `max_tokens` the reply is capped at what the quota has left after the prompt.
    @Test func aReplyWithoutMaxTokensIsCappedAtWhatIsLeft() throws {
        let limiter = RateLimiter(clock: ManualClock(Self.noon).clock)
        let client = GatewayConfiguration.Client(name: "a", keyDigest: [], tokensPerDay: 100)
        limiter.consume("a", tokens: 30)
        let (reservation, cap) = try limiter.reserve(client, prompt: 20, reply: nil)
        #expect(cap == 50 && reservation.tokens == 70)
        // Nothing is left for a second one, even a one-token reply.
        #expect(Self.apiError { _ = try limiter.reserve(client, prompt: 0, reply: nil) }?.code == "token_quota_exceeded")
        // A client without a quota reserves nothing and gets no cap.
        let free = GatewayConfiguration.Client(name: "free", keyDigest: [])
        let (none, noCap) = try limiter.reserve(free, prompt: 1000, reply: nil)
        #expect(none.tokens == 0 && noCap == nil)
    }

    /// The day's count starts from the usage ledger's (a restart does not reset a quota); a
    /// count from another day does not count today.
    @Test func seededCountsAreForTheirDayOnly() throws {
        let limiter = RateLimiter(clock: ManualClock(Self.noon).clock)
        let client = GatewayConfiguration.Client(name: "a", keyDigest: [], tokensPerDay: 100)
        limiter.seed(client: "a", day: RateLimiter.day(Self.noon), used: 75)
        #expect(try limiter.admit(client).tokensRemaining == 25)
        limiter.seed(client: "a", day: "2026-03-09", used: 100)
        #expect(try limiter.admit(client).tokensRemaining == 100)
        #expect(RateLimiter.day(Self.noon) == "2026-03-10")
        #expect(RateLimiter.day(Date(timeIntervalSince1970: 1_773_187_199)) == "2026-03-10")
        #expect(RateLimiter.day(Date(timeIntervalSince1970: 1_773_187_200)) == "2026-03-11")
    }
}
