import Foundation
import Logging
import MCP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// MCP's stdio transport over a child's pipes: newline-delimited JSON-RPC. A thread blocks in
/// `read(2)` (the SDK's `StdioTransport` polls every 10 ms instead, and needs swift-system's
/// descriptors); end of file finishes the stream.
actor MCPPipeTransport: Transport {
    nonisolated let logger: Logger
    private let process: MCPChildProcess
    private let stream: AsyncThrowingStream<Data, Swift.Error>
    private let continuation: AsyncThrowingStream<Data, Swift.Error>.Continuation
    private var started = false
    /// The longest line read (a larger one is a protocol error, not unbounded memory).
    static let maxLineBytes = 16 << 20

    init(process: MCPChildProcess) {
        self.process = process
        logger = Logger(label: "hearth.mcp.stdio", factory: { _ in SwiftLogNoOpLogHandler() })
        let (stream, continuation) = AsyncThrowingStream<Data, Swift.Error>.makeStream()
        self.stream = stream
        self.continuation = continuation
    }

    func connect() async throws {
        guard !started else { return }
        started = true
        let fd = process.output
        let continuation = self.continuation
        Thread.detachNewThread {
            var pending = Data()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, 65536) }
                if count < 0, errno == EINTR { continue }
                if count <= 0 { break }
                pending.append(contentsOf: buffer[0..<count])
                while let newline = pending.firstIndex(of: 0x0A) {
                    let line = pending[pending.startIndex..<newline]
                    if !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D }) { continuation.yield(Data(line)) }
                    pending = Data(pending[(newline + 1)...])
                }
                if pending.count > Self.maxLineBytes {
                    continuation.yield(Data("(a line longer than \(Self.maxLineBytes) bytes)".utf8))
                    pending = Data()
                }
            }
            close(fd)
            continuation.finish()
        }
    }

    func disconnect() async {
        continuation.finish()
    }

    func send(_ data: Data) async throws {
        var message = data
        message.append(0x0A)
        let fd = process.input
        var offset = 0
        while offset < message.count {
            let written = message.withUnsafeBytes { bytes -> Int in
                guard let base = bytes.baseAddress else { return 0 }
                return write(fd, base + offset, bytes.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw MCPError.connectionClosed
            }
            offset += written
        }
    }

    func receive() -> AsyncThrowingStream<Data, Swift.Error> { stream }
}
