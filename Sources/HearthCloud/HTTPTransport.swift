import AsyncHTTPClient
import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1
import Synchronization

/// Process-wide HTTP clients, one per connect timeout, created on first use and never shut
/// down (they live as long as the process, like `HTTPClient.shared`), so providers can be
/// created and dropped freely without owning a client's lifecycle. Redirects are not followed
/// and failed connection attempts are not retried by the pool (see ``RetryPolicy``).
enum SharedHTTPClients {
    private static let clients = Mutex<[Duration: HTTPClient]>([:])

    static func client(connectTimeout: Duration) -> HTTPClient {
        clients.withLock { clients in
            if let client = clients[connectTimeout] { return client }
            var configuration = HTTPClient.Configuration()
            let (seconds, attoseconds) = connectTimeout.components
            let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            configuration.timeout = .init(connect: .nanoseconds(max(1, nanoseconds)), read: nil)
            configuration.redirectConfiguration = .disallow
            // Fail a request as soon as its connection attempt fails (refused, unreachable):
            // the provider's RetryPolicy decides about retries, and the router can fall back
            // at once instead of waiting out the connect timeout.
            configuration.connectionPool.retryConnectionEstablishment = false
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[connectTimeout] = client
            return client
        }
    }
}

/// One streaming POST: sends JSON, checks the status, and hands the body over chunk by chunk.
struct HTTPStreamingPost: Sendable {
    let client: HTTPClient
    let failures: HTTPFailureMapper
    /// Largest error body read (the rest is dropped).
    static let maxErrorBody = 64 * 1024

    /// POSTs `body` to `url` and returns the response after a 2xx head; a non-2xx status throws
    /// the mapped ``ProviderError`` (after reading at most 64 KiB of its body).
    func send(
        url: String, headers: HTTPHeaders, body: Data, watchdog: IdleWatchdog
    ) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers = headers
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, deadline: .distantFuture)
        watchdog.touch()
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            var collected = ByteBuffer()
            for try await chunk in response.body {
                watchdog.touch()
                var chunk = chunk
                let room = Self.maxErrorBody - collected.readableBytes
                if room > 0, let slice = chunk.readSlice(length: min(room, chunk.readableBytes)) {
                    collected.writeImmutableBuffer(slice)
                }
                if collected.readableBytes >= Self.maxErrorBody { break }
            }
            let text = String(buffer: collected)
            throw failures.error(
                status: status, retryAfter: parseRetryAfter(response.headers.first(name: "retry-after")), body: text)
        }
        return response
    }
}

extension HTTPHeaders {
    /// Headers for a JSON request that wants an event stream back.
    static func jsonEventStream(_ extra: [(String, String)]) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "application/json")
        headers.add(name: "accept", value: "text/event-stream")
        headers.add(name: "user-agent", value: "Hearth")
        for (name, value) in extra { headers.replaceOrAdd(name: name, value: value) }
        return headers
    }
}

/// Joins a base URL and a path with exactly one slash.
func joinURL(_ base: String, _ path: String) -> String {
    var base = base
    while base.hasSuffix("/") { base.removeLast() }
    return base + (path.hasPrefix("/") ? path : "/" + path)
}
