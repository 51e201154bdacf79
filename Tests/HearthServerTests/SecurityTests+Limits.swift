import Foundation
import GRDB
import HearthServer
import HearthTestSupport
import Testing

extension SecurityTests {
    /// A pattern that backtracks catastrophically: `(a+)+$` on a run of `a`s that does not end
    /// the text tries every split of the run (2^n for n `a`s).
    static let catastrophic = "re:(a+)+$"

    /// The time limit of a filter check really stops ICU's matcher on Linux Foundation (finding 7):
    /// a run that would backtrack for hours comes back within the limit, as a match at the start
    /// (fail closed), and the same filter still answers ordinary text correctly afterwards.
    @Test func theRegexTimeLimitStopsCatastrophicBacktracking() throws {
        var filter = try ContentFilter(lines: ["pineapple", Self.catastrophic], filterOutput: false)
        filter.timeLimit = 0.1
        let hostile = String(repeating: "a", count: 64) + "!"
        let started = ContinuousClock.now
        let match = filter.firstMatch(in: hostile)
        let elapsed = ContinuousClock.now - started
        #expect(match == 0, "a check past its time limit counts as a match at the start")
        #expect(elapsed < .seconds(2), "the check took \(elapsed) with a 0.1 s limit")
        #expect(filter.firstMatch(in: "Hello there, friend.") == nil)
        #expect(filter.firstMatch(in: "I like pineapple.") == 7)
        #expect(filter.firstMatch(in: "aaaa") == 0)  // the pattern matches a run that ends the text
    }

    /// Through the server: a request whose text makes a configured pattern backtrack is refused
    /// as filtered (400 `content_filtered`) within the limit, and the server goes on serving.
    @Test func aBacktrackingRequestIsRefusedAndTheServerStaysHealthy() async throws {
        let (harness, upstream, directory) = try await Self.gateway(
            "[\(Self.client("a"))]", blocked: "pineapple\n\(Self.catastrophic)\n")
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let hostile = String(repeating: "a", count: 64) + "!"
            let started = ContinuousClock.now
            let refused = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("local", hostile, maxTokens: 2), headers: Self.auth("a"))
            let elapsed = ContinuousClock.now - started
            #expect(refused.status == 400, "\(refused.body)")
            #expect((refused.json["error"] as? [String: Any])?["code"] as? String == "content_filtered", "\(refused.body)")
            #expect(elapsed < .seconds(3), "the refusal took \(elapsed) (limit 0.25 s per check)")
            #expect(try await harness.send(.GET, "/health").status == 200)
            let next = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("local", "Hello there", maxTokens: 2), headers: Self.auth("a"))
            #expect(next.status == 200, "\(next.body)")
            try await harness.stop()
        }
    }

    /// `usage_retention_days` prunes rows of `requests` older than the retention (checked at the
    /// first recorded request of each UTC day), and keeps the per-day totals in `usage`.
    @Test func usageRowsOlderThanTheRetentionArePruned() async throws {
        // Noon UTC, so that a day and a half later is a new UTC day.
        let noon = Date(timeIntervalSince1970: 1_799_971_200 + 43_200)
        let clock = ManualClock(noon)
        let (harness, upstream, directory) = try await Self.gateway(
            "[\(Self.client("a", #", "admin": true"#))]", extra: #""usage_retention_days": 2,"#, clock: clock)
        try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let database = try DatabaseQueue(path: directory.appendingPathComponent("usage.sqlite").path)
            func ask() async throws {
                let reply = try await harness.send("/v1/chat/completions", json: GatewayTests.chat("local", "Hi", maxTokens: 2), headers: Self.auth("a"))
                #expect(reply.status == 200, "\(reply.body)")
            }
            func rows() async throws -> [Double] {
                try await database.read { try Double.fetchAll($0, sql: "SELECT at FROM requests ORDER BY at") }
            }
            try await ask()  // day 0, noon
            clock.advance(86_400)
            try await ask()  // day 1, noon: day 0's row is 1 day old and stays
            #expect(try await rows() == [noon.timeIntervalSince1970, noon.timeIntervalSince1970 + 86_400])
            clock.advance(86_400 * 1.5 + 3_600)
            try await ask()  // day 3, 01:00: day 0's row is 3 days old (pruned), day 1's 1.5 days (kept)
            #expect(
                try await rows() == [noon.timeIntervalSince1970 + 86_400, noon.timeIntervalSince1970 + 86_400 * 2.5 + 3_600],
                "rows of requests older than 2 days must be pruned")
            // The totals keep every day.
            let requests: Int? = try await database.read { try Int.fetchOne($0, sql: "SELECT SUM(requests) FROM usage") }
            #expect(requests == 3)
            let days: Int? = try await database.read { try Int.fetchOne($0, sql: "SELECT COUNT(DISTINCT day) FROM usage") }
            #expect(days == 3)
            try await harness.stop()
        }
    }
}
