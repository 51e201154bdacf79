import Foundation
import HearthTestSupport
import Testing

@testable import HearthServer

extension SecurityTests {
    /// A streamed answer whose body never runs (the client reset the connection after the
    /// request was admitted, before the response head was written: Hummingbird drops the
    /// response unrun) still gives its place back: the lease is released when it is dropped.
    /// The raw-socket test above cannot hit that window reliably (it lasts microseconds, and a
    /// reset seen earlier is handled by the connection watcher), so this drops a lease directly.
    @Test func aLeaseDroppedUnendedGivesItsPlaceBack() async throws {
        let harness = try await ServerHarness(context: 512, parallel: 1, options: ServerOptions(port: 0, maxQueue: 0, alias: "tiny"))
        try await withCleanup({ try? await harness.stop() }) {
            let server = harness.server
            let client = GatewayAuthenticator.anonymous.client
            let route = try server.gateway.route("tiny", for: client)
            for _ in 0..<3 {
                // Admitted and dropped without `end()`, as a response whose body never ran is.
                let number = try server.admit(route, client: client) {}.number
                #expect(number >= 0)
            }
            #expect(try await ServerTests.waitFor(harness, "hearth_requests_admitted", is: 0, within: 5) == 0)
            let next = try await harness.send("/v1/chat/completions", json: ["model": "tiny", "messages": [Self.user], "max_tokens": 2])
            #expect(next.status == 200)
            try await harness.stop()
        }
    }
}
