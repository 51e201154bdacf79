import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// Sends frames to one WebSocket client, as a server does (unmasked).
struct FrameResponder: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<WebSocketFrame>

    func text(_ text: String) async throws {
        try await outbound.write(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text)))
    }

    /// A text message split into a first fragment and a continuation frame.
    func fragmentedText(_ text: String, at byteOffset: Int) async throws {
        let bytes = Array(text.utf8)
        try await outbound.write(
            WebSocketFrame(fin: false, opcode: .text, data: ByteBuffer(bytes: bytes[..<byteOffset])))
        try await outbound.write(
            WebSocketFrame(fin: true, opcode: .continuation, data: ByteBuffer(bytes: bytes[byteOffset...])))
    }

    func close(code: UInt16 = 1000) async throws {
        var data = ByteBuffer()
        data.writeInteger(code)
        try await outbound.write(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))
    }
}

/// A fake WebSocket server on 127.0.0.1. `accept` decides on the handshake from the request
/// head (returning `nil` to accept, or an HTTP status and body to refuse); `script` gets the
/// client's first text message and answers it.
final class TestWebSocketServer: Sendable {
    typealias Script = @Sendable (_ uri: String, _ message: String, FrameResponder) async throws -> AfterResponse
    typealias Acceptor = @Sendable (HTTPRequestHead) -> (status: Int, body: String)?

    enum Upgrade: Sendable {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, String)
        case refused(NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>, ObjectIdentifier, String)
    }

    let port: Int
    private let received = Mutex<[(uri: String, message: String)]>([])
    private let handshakes = Mutex<[String]>([])
    /// Request heads of refused handshakes, by channel, until the refusal is written.
    private let refusedHeads: RefusedHeads
    private let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>
    private let loop = Mutex<Task<Void, Never>?>(nil)

    /// Messages received (the request frames), with the URI they came on.
    var messages: [(uri: String, message: String)] { received.withLock { $0 } }
    /// Handshake URIs, accepted or refused.
    var handshakeURIs: [String] { handshakes.withLock { $0 } }

    private init(channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never>, refusedHeads: RefusedHeads) throws {
        self.channel = channel
        self.refusedHeads = refusedHeads
        guard let port = channel.channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
        self.port = port
    }

    static func start(accept: @escaping Acceptor = { _ in nil }, script: @escaping Script) async throws
        -> TestWebSocketServer
    {
        let stash = RefusedHeads()
        let channel: NIOAsyncChannel<EventLoopFuture<Upgrade>, Never> = try await ServerBootstrap(
            group: MultiThreadedEventLoopGroup.singleton
        )
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        .bind(host: "127.0.0.1", port: 0) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketServerUpgrader<Upgrade>(
                    shouldUpgrade: { channel, head in
                        if accept(head) == nil { return channel.eventLoop.makeSucceededFuture(HTTPHeaders()) }
                        stash.heads.withLock { $0[ObjectIdentifier(channel)] = head }
                        return channel.eventLoop.makeSucceededFuture(nil)
                    },
                    upgradePipelineHandler: { channel, head in
                        channel.eventLoop.makeCompletedFuture {
                            .websocket(
                                try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(wrappingChannelSynchronously: channel),
                                head.uri)
                        }
                    })
                let configuration = NIOTypedHTTPServerUpgradeConfiguration<Upgrade>(
                    upgraders: [upgrader],
                    notUpgradingCompletionHandler: { channel in
                        channel.eventLoop.makeCompletedFuture {
                            .refused(
                                try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(
                                    wrappingChannelSynchronously: channel), ObjectIdentifier(channel), "")
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
                            group.addTask { await server.serve(upgrade, accept: accept, script: script) }
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

    private func serve(_ upgrade: EventLoopFuture<Upgrade>, accept: Acceptor, script: Script) async {
        guard let result = try? await upgrade.get() else { return }
        switch result {
        case .refused(let http, let id, _):
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
        case .websocket(let socket, let uri):
            handshakes.withLock { $0.append(uri) }
            try? await socket.executeThenClose { inbound, outbound in
                var iterator = inbound.makeAsyncIterator()
                var message = ""
                while let frame = try await iterator.next() {
                    if frame.opcode == .text {
                        message = String(buffer: frame.unmaskedData)
                        break
                    }
                }
                received.withLock { $0.append((uri, message)) }
                let after = try await script(uri, message, FrameResponder(outbound: outbound))
                if case .waitForClientClose = after {
                    let deadline = ContinuousClock.now + .seconds(10)
                    while ContinuousClock.now < deadline {
                        guard let frame = try await iterator.next(), frame.opcode != .connectionClose else { break }
                    }
                }
            }
        }
    }

    var url: String { "ws://127.0.0.1:\(port)/v3.5/chat" }

    func stop() async {
        try? await channel.channel.close()
        let task = loop.withLock { $0 }
        await task?.value
    }
}

/// Heads of refused handshakes, shared between the pipeline's closures and the server.
final class RefusedHeads: Sendable {
    let heads = Mutex<[ObjectIdentifier: HTTPRequestHead]>([:])
}
