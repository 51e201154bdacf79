import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// Where a WebSocket connects: host, port, the request target (path and query) and TLS.
struct WebSocketEndpoint: Sendable {
    var host: String
    var port: Int
    var target: String
    var tls: Bool

    /// Parses `ws://` and `wss://` URLs; `nil` for anything else.
    init?(_ url: String) {
        let secure: Bool
        let rest: Substring
        if url.lowercased().hasPrefix("wss://") {
            secure = true
            rest = url.dropFirst(6)
        } else if url.lowercased().hasPrefix("ws://") {
            secure = false
            rest = url.dropFirst(5)
        } else {
            return nil
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let target = rest.dropFirst(authority.count)
        var host = Substring(authority)
        var port = secure ? 443 : 80
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            guard let parsed = Int(authority[authority.index(after: colon)...]), (1...65535).contains(parsed) else {
                return nil
            }
            port = parsed
            host = authority[..<colon]
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { return nil }
        self.host = String(host)
        self.port = port
        self.target = target.isEmpty ? "/" : (target.hasPrefix("?") ? "/" + target : String(target))
        self.tls = secure
    }

    /// The path without the query, as it appears in the HTTP request line.
    var path: String { String(target.prefix { $0 != "?" }) }

    /// The `Host` header: the host, with the port when it is not the scheme's default.
    var hostHeader: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return port == (tls ? 443 : 80) ? bracketed : "\(bracketed):\(port)"
    }
}

/// The outcome of a WebSocket handshake.
enum WebSocketHandshake: Sendable {
    /// The server switched protocols: frames flow.
    case upgraded(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>)
    /// The server answered with an ordinary HTTP response (an auth failure, usually).
    case rejected(NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>)
}

/// A minimal WebSocket client over SwiftNIO: connect (with TLS for `wss`), upgrade, and keep
/// the HTTP response when the upgrade is refused so its status and body can be reported.
enum WebSocketConnector {
    /// Connects to `endpoint` and asks to upgrade; `headers` go on the upgrade request
    /// (`Authorization` for DashScope; Spark signs the URL instead).
    static func connect(
        _ endpoint: WebSocketEndpoint, connectTimeout: Duration, tls: NIOSSLContext?, headers extra: [(String, String)] = [],
        maxFrameSize: Int = 1 << 20
    ) async throws -> WebSocketHandshake {
        let (seconds, attoseconds) = connectTimeout.components
        let timeout = TimeAmount.nanoseconds(max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        let isIPAddress = (try? SocketAddress(ipAddress: endpoint.host, port: 0)) != nil
        let negotiation: EventLoopFuture<WebSocketHandshake> = try await ClientBootstrap(
            group: MultiThreadedEventLoopGroup.singleton
        )
        .connectTimeout(timeout)
        .connect(host: endpoint.host, port: endpoint.port) { channel in
            channel.eventLoop.makeCompletedFuture {
                if endpoint.tls, let tls {
                    let handler = try NIOSSLClientHandler(
                        context: tls, serverHostname: isIPAddress ? nil : endpoint.host)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
                var headers = HTTPHeaders()
                headers.add(name: "Host", value: endpoint.hostHeader)
                headers.add(name: "User-Agent", value: "Hearth")
                for (name, value) in extra { headers.replaceOrAdd(name: name, value: value) }
                let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: endpoint.target, headers: headers)
                let upgrader = NIOTypedWebSocketClientUpgrader<WebSocketHandshake>(
                    maxFrameSize: maxFrameSize,
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 4096,
                                    maxAccumulatedFrameSize: maxFrameSize))
                            return .upgraded(
                                try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel))
                        }
                    })
                let configuration = NIOTypedHTTPClientUpgradeConfiguration<WebSocketHandshake>(
                    upgradeRequestHead: head, upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            .rejected(
                                try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                                    wrappingChannelSynchronously: channel))
                        }
                    })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        return try await negotiation.get()
    }

    /// Reads the HTTP response of a refused upgrade: its status, body (at most 64 KiB) and
    /// `Retry-After` in seconds.
    static func refusal(
        _ channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, watchdog: IdleWatchdog
    ) async throws -> (status: Int, body: String, retryAfter: Double?) {
        var status = 0
        var retryAfter: Double?
        var body = ByteBuffer()
        try await channel.executeThenClose { inbound, _ in
            for try await part in inbound {
                watchdog.touch()
                switch part {
                case .head(let head):
                    status = Int(head.status.code)
                    retryAfter = parseRetryAfter(head.headers.first(name: "retry-after"))
                case .body(var chunk):
                    if body.readableBytes < 64 * 1024 { body.writeBuffer(&chunk) }
                case .end: return
                }
            }
        }
        return (status, String(buffer: body), retryAfter)
    }
}
