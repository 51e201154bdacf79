import Foundation
import HearthServer
import HearthTestSupport
import Testing

/// The order in which answers came back.
private final class Arrivals: @unchecked Sendable {
    // `@unchecked Sendable`: `names` is only touched under `lock`.
    private let lock = NSLock()
    private var list: [String] = []

    func append(_ name: String) { lock.withLock { list.append(name) } }
    var names: [String] { lock.withLock { list } }
}

extension SecurityTests {
    /// One client's queued requests do not starve another's (finding 6). With the only slot
    /// busy, client A queues three requests and then client B one: when the slot frees, B's
    /// request goes first, then A's in their order (the engine's queue served them in arrival
    /// order, so B waited behind all of A's). Requests the server holds back count as waiting.
    @Test func aClientsQueuedRequestsDoNotStarveAnother() async throws {
        let order = try await Self.answerOrder([("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")])
        #expect(order.first == "b1", "answers came back in the order \(order)")
        #expect(order.filter { $0.hasPrefix("a") } == ["a1", "a2", "a3"], "\(order)")
    }

    /// Two clients that both queue take turns: B (not served yet) first, then A, B, A — not
    /// all of A's before B's.
    @Test func clientsThatBothQueueTakeTurns() async throws {
        let order = try await Self.answerOrder([("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")])
        #expect(order == ["b1", "a1", "b2", "a2"], "answers came back in the order \(order)")
    }

    /// With the only slot held by a long answer of client `a`, queues `requests` (client, name)
    /// in this order, checking each is counted as waiting, then frees the slot and returns the
    /// names in the order their answers came back (one slot: the order of their turns).
    static func answerOrder(_ requests: [(client: String, name: String)]) async throws -> [String] {
        let (harness, upstream, directory) = try await Self.gateway(
            "[\(Self.client("a")), \(Self.client("b"))]", parallel: 1, context: 32768)
        return try await withCleanup({ try? await harness.stop(); await upstream.stop(); try? FileManager.default.removeItem(at: directory) }) {
            let admin = Self.auth("a")
            // A's long answer holds the only slot until its connection is closed: 32,000 tokens,
            // seconds even with optimized kernels (4,000 took about 0.2 s, less than queueing the
            // requests below).
            let holder = try RawConnection(port: harness.port)
            try holder.post(
                "/v1/chat/completions",
                json: [
                    "model": "local", "messages": [Self.user], "max_tokens": 32000, "temperature": 1, "seed": 3, "min_p": 0, "top_k": 0,
                    "ignore_eos": true,
                ],
                headers: Self.auth("a"))
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_running", is: 1, headers: admin) == 1)

            let arrivals = Arrivals()
            // Long enough (200 tokens, sampled without cut-offs) that an answer's order is its turn's
            // order: at 24 tokens two answers in a row ended within a few milliseconds, and the test's
            // tasks once saw them swapped (a1, a3, a2).
            let short = String(
                decoding: try JSONSerialization.data(withJSONObject: [
                    "model": "local", "messages": [Self.user], "max_tokens": 200, "temperature": 1, "seed": 5, "min_p": 0, "top_k": 0,
                ] as [String: Any]), as: UTF8.self)
            var queued: [Task<Int, Error>] = []
            for (index, (client, name)) in requests.enumerated() {
                queued.append(
                    Task {
                        let reply = try await harness.send(.POST, "/v1/chat/completions", body: short, headers: Self.auth(client))
                        arrivals.append(name)
                        return reply.status
                    })
                // Queued in this order, each one waiting (held by the server or the engine: the metric counts both).
                let waiting = Double(index + 1)
                #expect(try await ServerTests.waitFor(harness, "hearth_requests_waiting", is: waiting, headers: admin) == waiting)
            }
            holder.close()
            for task in queued { #expect(try await task.value == 200) }
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_waiting", is: 0, headers: admin) == 0)
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, headers: admin) == 0)
            try await harness.stop()
            return arrivals.names
        }
    }
}
