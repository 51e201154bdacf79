import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A request the fake server received.
public struct RecordedRequest: Sendable {
    public var method: String
    public var uri: String
    public var headers: HTTPHeaders
    public var body: String

    /// The body as a JSON object.
    public var json: [String: any Sendable]? {
        (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: any Sendable]
    }
}

/// Writes raw bytes on one connection, so tests control exactly what crosses the socket and
/// where the network chunks break.
public struct RawResponder: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    /// Writes and flushes bytes as one TCP send.
    public func send(_ bytes: [UInt8]) async throws {
        try await outbound.write(ByteBuffer(bytes: bytes))
    }

    public func send(_ text: String) async throws { try await send(Array(text.utf8)) }

    /// A response head. With `chunked`, the body must be sent with ``chunk(_:)`` and ``end()``.
    public func head(_ status: Int, _ reason: String = "OK", headers: [(String, String)] = [], chunked: Bool = true)
        async throws
    {
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if chunked { text += "Transfer-Encoding: chunked\r\n" }
        text += "Connection: close\r\n\r\n"
        try await send(text)
    }

    /// One HTTP chunk carrying `bytes`.
    public func chunk(_ bytes: [UInt8]) async throws {
        try await send(Array("\(String(bytes.count, radix: 16))\r\n".utf8) + bytes + Array("\r\n".utf8))
    }

    public func chunk(_ text: String) async throws { try await chunk(Array(text.utf8)) }

    /// The last chunk.
    public func end() async throws { try await send("0\r\n\r\n") }

    /// A whole response with a `Content-Length` body.
    public func respond(_ status: Int, _ reason: String, headers: [(String, String)] = [], body: String) async throws {
        try await head(status, reason, headers: headers + [("Content-Length", "\(body.utf8.count)")], chunked: false)
        try await send(body)
    }

    /// Sends `text` as server-sent-event chunks, one network write per piece, with a pause
    /// between them so the client reads them separately.
    public func stream(_ pieces: [[UInt8]], pause: Duration = .milliseconds(15)) async throws {
        for piece in pieces {
            try await chunk(piece)
            try await Task.sleep(for: pause)
        }
    }
}

/// What the server does with a connection once the handler returns.
public enum AfterResponse: Sendable {
    /// Close the connection (after a complete response, or abruptly mid-response).
    case close
    /// Keep it open until the client closes it (at most 10 s), as a silent server does.
    case waitForClientClose
}

/// A fake HTTP server on 127.0.0.1 with an ephemeral port, driven by a script per request.
/// It closes every connection after one response (`Connection: close`).
public final class TestHTTPServer: Sendable {
    public typealias Handler = @Sendable (RecordedRequest, Int, RawResponder) async throws -> AfterResponse

    public let port: Int
    private let recorded = Mutex<[RecordedRequest]>([])
    private let ended = Mutex<[Int: ContinuousClock.Instant]>([:])
    private let channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>, Never>
    private let loop = Mutex<Task<Void, Never>?>(nil)

    /// Requests received so far, in order.
    public var requests: [RecordedRequest] { recorded.withLock { $0 } }

    /// When the connection of request `index` ended (the client closed it, or a write failed).
    public func endTime(of index: Int) -> ContinuousClock.Instant? { ended.withLock { $0[index] } }

    private init(channel: NIOAsyncChannel<NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>, Never>) throws {
        self.channel = channel
        guard let port = channel.channel.localAddress?.port else { throw ChannelError.inappropriateOperationForState }
        self.port = port
    }

    public var baseURL: String { "http://127.0.0.1:\(port)/v1" }

    /// Starts a server; `handler` gets each request, its index and a responder.
    public static func start(host: String = "127.0.0.1", port: Int = 0, _ handler: @escaping Handler) async throws -> TestHTTPServer {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .bind(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPRequestDecoder()))
                    return try NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let server = try TestHTTPServer(channel: channel)
        let task = Task {
            do {
                try await withThrowingDiscardingTaskGroup { group in
                    try await channel.executeThenClose { inbound in
                        for try await connection in inbound {
                            group.addTask { await server.serve(connection, handler) }
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

    private func serve(_ connection: NIOAsyncChannel<HTTPServerRequestPart, ByteBuffer>, _ handler: Handler) async {
        var index = -1
        try? await connection.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            reading: while let part = try await iterator.next() {
                switch part {
                case .head(let value): head = value
                case .body(var chunk): body.writeBuffer(&chunk)
                case .end: break reading
                }
            }
            guard let head else { return }
            let request = RecordedRequest(
                method: head.method.rawValue, uri: head.uri, headers: head.headers, body: String(buffer: body))
            index = recorded.withLock {
                $0.append(request)
                return $0.count - 1
            }
            let after: AfterResponse
            do {
                after = try await handler(request, index, RawResponder(outbound: outbound))
            } catch {
                markEnded(index)  // a write failed: the client went away
                return
            }
            if case .waitForClientClose = after {
                let deadline = ContinuousClock.now + .seconds(10)
                while ContinuousClock.now < deadline {
                    guard (try? await iterator.next()) != nil else { break }
                }
            }
        }
        if index >= 0 { markEnded(index) }
    }

    private func markEnded(_ index: Int) {
        let now = ContinuousClock.now
        ended.withLock { if $0[index] == nil { $0[index] = now } }
    }

    /// Stops listening and waits for open connections to finish (each is bounded).
    public func stop() async {
        try? await channel.channel.close()
        let task = loop.withLock { $0 }
        await task?.value
    }
}

/// A port on 127.0.0.1 with nothing listening (bound, then closed).
public func closedPort() async throws -> Int {
    let server = try await TestHTTPServer.start { _, _, _ in .close }
    let port = server.port
    await server.stop()
    return port
}

/// Splits `text` into pieces at the given byte offsets (which may fall inside a UTF-8 character).
public func split(_ text: String, at offsets: [Int]) -> [[UInt8]] {
    let bytes = Array(text.utf8)
    var pieces: [[UInt8]] = []
    var start = 0
    for offset in offsets.sorted() where offset > start && offset < bytes.count {
        pieces.append(Array(bytes[start..<offset]))
        start = offset
    }
    pieces.append(Array(bytes[start...]))
    return pieces
}

/// Splits `text` into pieces of `size` bytes.
public func split(_ text: String, every size: Int) -> [[UInt8]] {
    let bytes = Array(text.utf8)
    return stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
}
