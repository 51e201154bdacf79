import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// Sends frames to one WebSocket client, as a server does (unmasked).
public struct FrameResponder: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>

    /// One text frame.
    public func text(_ text: String) async throws {
        try await outbound.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
    }

    /// A text message split into a first fragment and a continuation frame at `byteOffset`
    /// (which may fall inside a UTF-8 character).
    public func fragmentedText(_ text: String, at byteOffset: Int) async throws {
        let bytes = Array(text.utf8)
        let cut = min(max(0, byteOffset), bytes.count)
        // One batch, so no other message's frame can come between the two fragments.
        try await outbound.write(contentsOf: [
            WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(bytes: bytes[..<cut])),
            WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: bytes[cut...])),
        ])
    }

    /// One binary frame (audio, for the dialog fake).
    public func binary(_ bytes: [UInt8]) async throws {
        try await outbound.write(WebSocketFrame(fin: true, opcode: .binary, data: ByteBuffer(bytes: bytes)))
    }

    /// A close frame with `code`.
    public func close(code: UInt16 = 1000) async throws {
        var data = ByteBuffer()
        data.writeInteger(code)
        try await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
    }

    /// A pong answering a ping.
    func pong(_ data: ByteBuffer) async throws {
        try await outbound.write(WebSocketFrame(fin: true, opcode: .pong, data: data))
    }
}

/// A message from the client: a whole text or binary message, or its close frame (with the code).
public enum ClientMessage: Sendable, Equatable {
    case text(String)
    case binary(Int)
    case close(UInt16?)
}

/// The client side of one accepted WebSocket connection, for a server script: its handshake
/// head, the messages it sends (pings are answered here) and a responder.
///
/// `@unchecked Sendable`: the inbound iterator is only touched by ``receive()``, which a script
/// calls from one task at a time (as documented); everything else is immutable.
public final class WebSocketPeer: @unchecked Sendable {
    /// The handshake request (URI and headers).
    public let head: HTTPRequestHead
    /// Writes frames to the client.
    public let responder: FrameResponder
    private var iterator: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator

    init(head: HTTPRequestHead, responder: FrameResponder, iterator: NIOAsyncChannelInboundStream<WebSocketFrame>.AsyncIterator) {
        self.head = head
        self.responder = responder
        self.iterator = iterator
    }

    /// The next message; `nil` when the connection ended. Pings are answered with pongs.
    /// Call it from one task at a time.
    public func receive() async throws -> ClientMessage? {
        while true {
            guard let frame = try await iterator.next() else { return nil }
            switch frame.opcode {
            case .text: return .text(String(buffer: frame.unmaskedData))
            case .binary: return .binary(frame.unmaskedData.readableBytes)
            case .connectionClose:
                var data = frame.unmaskedData
                return .close(data.readInteger(as: UInt16.self))
            case .ping: try await responder.pong(frame.unmaskedData)
            default: continue
            }
        }
    }

    /// Reads and drops messages until the client closes (at most `limit`), as a silent server does.
    public func waitForClose(limit: Duration = .seconds(10)) async {
        let deadline = ContinuousClock.now + limit
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                while let message = try? await self.receive() {
                    if case .close = message { return }
                }
            }
            group.addTask { try? await Task.sleep(until: deadline) }
            await group.next()
            group.cancelAll()
        }
    }
}

/// A fake WebSocket server on 127.0.0.1. `accept` decides on the handshake from the request
/// head (returning `nil` to accept, or an HTTP status and body to refuse); a session script
/// then talks to each accepted client through a ``WebSocketPeer``.
public final class TestWebSocketServer: Sendable {
    /// Answers the first text message of a connection (one request, one reply: Spark).
    public typealias Script = @Sendable (_ uri: String, _ message: String, FrameResponder) async throws -> AfterResponse
    /// Talks to a connection for as long as it likes (a duplex protocol: Bailian's dialog).
    public typealias Session = @Sendable (WebSocketPeer) async throws -> Void
    /// Decides on a handshake: `nil` accepts it, a status and body refuse it.
    public typealias Acceptor = @Sendable (HTTPRequestHead) -> (status: Int, body: String)?

    enum Upgrade: Sendable {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, HTTPRequestHead)
        case refused(NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, ObjectIdentifier)
    }

    /// The port it listens on.
    public let port: Int
    private let received = Mutex<[(uri: String, message: String)]>([])
    private let handshakes = Mutex<[String]>([])
    /// Request heads of refused handshakes, by channel, until the refusal is written.
    private let refusedHeads: RefusedHeads
    private let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>
    private let loop = Mutex<Task<Void, Never>?>(nil)

    /// First messages received by a ``Script`` server, with the URI they came on.
    public var messages: [(uri: String, message: String)] { received.withLock { $0 } }
    /// Handshake URIs, accepted or refused.
    public var handshakeURIs: [String] { handshakes.withLock { $0 } }

    private init(channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>, refusedHeads: RefusedHeads) throws {
        self.channel = channel
        self.refusedHeads = refusedHeads
        guard let port = channel.channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
        self.port = port
    }

    /// Starts a server whose script answers each connection's first text message.
    public static func start(accept: @escaping Acceptor = { _ in nil }, script: @escaping Script) async throws
        -> TestWebSocketServer
    {
        let box = ServerBox()
        let server = try await start(accept: accept) { peer in
            var message = ""
            while let next = try await peer.receive() {
                if case .text(let text) = next {
                    message = text
                    break
                }
            }
            box.server?.received.withLock { $0.append((peer.head.uri, message)) }
            if case .waitForClientClose = try await script(peer.head.uri, message, peer.responder) {
                await peer.waitForClose()
            }
        }
        box.server = server
        return server
    }

    /// Starts a server that hands every accepted connection to `session`; the connection is
    /// closed when `session` returns.
    public static func start(
        host: String = "127.0.0.1", port: Int = 0, accept: @escaping Acceptor = { _ in nil },
        session: @escaping Session
    ) async throws -> TestWebSocketServer {
        let stash = RefusedHeads()
        let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never> = try await ServerBootstrap(
            group: MultiThreadedEventLoopGroup.singleton
        )
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
        .bind(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                    maxFrameSize: 1 << 22,
                    shouldUpgrade: { channel, head in
                        if accept(head) == nil { return channel.eventLoop.makeSucceededFuture(HTTPHeaders()) }
                        stash.heads.withLock { $0[ObjectIdentifier(channel)] = head }
                        return channel.eventLoop.makeSucceededFuture(nil)
                    },
                    upgradePipelineHandler: { channel, head in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 4096,
                                    maxAccumulatedFrameSize: 1 << 22))
                            return .websocket(
                                try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel),
                                head)
                        }
                    })
                let configuration = NIOTypedHTTPServerUpgradeConfiguration<Upgrade>(
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            .refused(
                                try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                                    wrappingChannelSynchronously: channel), ObjectIdentifier(channel))
                        }
                    })
                return try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(
                    configuration: .init(upgradeConfiguration: configuration))
            }
        }
        let server = try TestWebSocketServer(channel: channel, refusedHeads: stash)
        let task = Task {
            do {
                try await withThrowingDiscardingTaskGroup { group in
                    try await channel.executeThenClose { inbound in
                        for try await upgrade in inbound {
                            group.addTask { await server.serve(upgrade, accept: accept, session: session) }
                        }
                    }
                }
            } catch {
                // The listening socket closed: the server is stopping.
            }
        }
        server.loop.withLock { $0 = task }
        return server
    }

    private func serve(_ upgrade: EventLoopFuture<Upgrade>, accept: Acceptor, session: Session) async {
        guard let result = try? await upgrade.get() else { return }
        switch result {
        case .refused(let http, let id):
            try? await http.executeThenClose { inbound, outbound in
                for try await part in inbound {
                    if case .end = part { break }
                }
                // The upgrade handler consumed the request head; shouldUpgrade stashed it.
                guard let head = refusedHeads.heads.withLock({ $0.removeValue(forKey: id) }) else { return }
                handshakes.withLock { $0.append(head.uri) }
                let (status, body) = accept(head) ?? (400, "{}")
                var headers = HTTPHeaders()
                headers.add(name: "Content-Type", value: "application/json")
                headers.add(name: "Content-Length", value: "\(body.utf8.count)")
                headers.add(name: "Connection", value: "close")
                try await outbound.write(
                    .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: headers)))
                try await outbound.write(.body(.byteBuffer(ByteBuffer(string: body))))
                try await outbound.write(.end(nil))
            }
        case .websocket(let socket, let head):
            handshakes.withLock { $0.append(head.uri) }
            try? await socket.executeThenClose { inbound, outbound in
                let peer = WebSocketPeer(
                    head: head, responder: FrameResponder(outbound: outbound), iterator: inbound.makeAsyncIterator())
                try await session(peer)
            }
        }
    }

    /// `ws://127.0.0.1:<port>/v3.5/chat`, Spark's path.
    public var url: String { "ws://127.0.0.1:\(port)/v3.5/chat" }

    /// Stops listening and waits for open connections to finish (each is bounded by its script).
    public func stop() async {
        try? await channel.channel.close()
        let task = loop.withLock { $0 }
        await task?.value
    }
}

/// Heads of refused handshakes, shared between the pipeline's closures and the server.
final class RefusedHeads: Sendable {
    let heads = Mutex<[ObjectIdentifier: HTTPRequestHead]>([:])
}

/// The server, for a script closure created before the server exists.
private final class ServerBox: Sendable {
    private let value = Mutex<TestWebSocketServer?>(nil)
    var server: TestWebSocketServer? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
