import Foundation
import Logging
import MCP

/// What a transport has seen go wrong, readable at once by whoever waits on a request (so a
/// server that writes garbage fails the request now instead of at its timeout).
/// `@unchecked Sendable`: `problem` is guarded by `lock`.
final class TransportHealth: @unchecked Sendable {
    private let lock = NSLock()
    private var _problem: MCPServerError?

    /// The first problem recorded, if any.
    var problem: MCPServerError? { lock.withLock { _problem } }

    /// Records `error` unless a problem is already recorded.
    func record(_ error: MCPServerError) {
        lock.withLock { if _problem == nil { _problem = error } }
    }
}

/// Wraps the SDK's transport: each message that arrives must be JSON (a line of a stdio server,
/// a response body, or the `data:` of a server-sent event — the SDK's HTTP transport hands SSE
/// bodies over unparsed on Linux); anything else is recorded in ``TransportHealth`` as a
/// protocol error, with a short excerpt whose secrets are masked.
actor MCPCheckedTransport: Transport {
    nonisolated let logger: Logger
    private let inner: any Transport
    private let health: TransportHealth
    private let server: String
    private let secrets: [String]
    private let stream: AsyncThrowingStream<Data, Swift.Error>
    private let continuation: AsyncThrowingStream<Data, Swift.Error>.Continuation
    private var pump: Task<Void, Never>?

    init(_ inner: any Transport, health: TransportHealth, server: String, secrets: [String]) {
        self.inner = inner
        self.health = health
        self.server = server
        self.secrets = secrets
        logger = Logger(label: "hearth.mcp.transport", factory: { _ in SwiftLogNoOpLogHandler() })
        let (stream, continuation) = AsyncThrowingStream<Data, Swift.Error>.makeStream()
        self.stream = stream
        self.continuation = continuation
    }

    func connect() async throws {
        try await inner.connect()
        let incoming = await inner.receive()
        let continuation = self.continuation
        let health = self.health, server = self.server, secrets = self.secrets
        pump = Task {
            do {
                for try await data in incoming {
                    for message in Self.messages(in: data) {
                        // An empty body (HTTP 202 to a notification) carries no message.
                        if message.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { continue }
                        if Self.isJSONMessage(message) {
                            continuation.yield(message)
                        } else {
                            var excerpt = String(decoding: message.prefix(120), as: UTF8.self)
                            for secret in secrets where !secret.isEmpty {
                                excerpt = excerpt.replacingOccurrences(of: secret, with: "***")
                            }
                            health.record(
                                MCPServerError(
                                    .protocolError, server: server,
                                    message: "the server wrote something that is not MCP (JSON-RPC): \"\(excerpt)\""))
                        }
                    }
                }
            } catch {
                health.record(MCPServerError(.connectionFailed, server: server, message: "the connection failed: \(error)"))
            }
            continuation.finish()
        }
    }

    func disconnect() async {
        pump?.cancel()
        await inner.disconnect()
        continuation.finish()
    }

    func send(_ data: Data) async throws {
        try await inner.send(data)
    }

    func receive() -> AsyncThrowingStream<Data, Swift.Error> { stream }

    /// Whether `data` is a JSON object or array (a JSON-RPC message or batch).
    static func isJSONMessage(_ data: Data) -> Bool {
        guard let first = data.first(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }),
            first == UInt8(ascii: "{") || first == UInt8(ascii: "[")
        else { return false }
        return (try? JSONSerialization.jsonObject(with: data)) != nil
    }

    /// The JSON messages in one piece of input: the piece itself, or, when it is a
    /// server-sent-events body, the `data:` of each event.
    static func messages(in data: Data) -> [Data] {
        let text = String(decoding: data.prefix(16), as: UTF8.self).drop { $0 == " " || $0 == "\n" || $0 == "\r" }
        guard text.hasPrefix("event:") || text.hasPrefix("data:") || text.hasPrefix("id:") || text.hasPrefix(":") else {
            return [data]
        }
        var messages: [Data] = []
        var current: [String] = []
        // "\r\n" is one Character in Swift: make every line end in "\n" before splitting.
        let body = String(decoding: data, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
        for line in body.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.isEmpty {
                if !current.isEmpty { messages.append(Data(current.joined(separator: "\n").utf8)) }
                current = []
            } else if line.hasPrefix("data:") {
                var value = line.dropFirst(5)
                if value.hasPrefix(" ") { value = value.dropFirst() }
                current.append(String(value))
            }
        }
        if !current.isEmpty { messages.append(Data(current.joined(separator: "\n").utf8)) }
        return messages.filter { !$0.isEmpty }
    }
}
