import Foundation
import HearthProviders
import NIOCore
import NIOHTTP1
import NIOSSL
import NIOWebSocket

/// One Spark request over one WebSocket connection.
struct SparkSession: Sendable {
    let provider: String
    let endpoint: WebSocketEndpoint
    let apiKey: String
    let apiSecret: String
    let body: Data
    let maxTokens: Int?
    let tls: NIOSSLContext?
    let connectTimeout: Duration
    let redactor: Redactor
    let now: @Sendable () -> Date

    /// Signs the URL (fresh date per attempt), connects, sends the request, streams the answer.
    func run(sink: EventSink, watchdog: IdleWatchdog) async throws {
        if endpoint.tls && tls == nil {
            throw ProviderError(
                .network, provider: provider, message: "TLS is not available on this system, so wss:// cannot be used.")
        }
        var target = endpoint
        target.target = endpoint.path + "?"
            + SparkSigner.signedQuery(endpoint: endpoint, apiKey: apiKey, apiSecret: apiSecret, date: now())
        switch try await WebSocketConnector.connect(target, connectTimeout: connectTimeout, tls: tls) {
        case .rejected(let channel):
            watchdog.touch()
            throw try await rejection(channel, watchdog: watchdog)
        case .upgraded(let channel):
            watchdog.touch()
            try await converse(channel, sink: sink, watchdog: watchdog)
        }
    }

    /// Sends the request frame and reads answer frames until `header.status == 2`.
    private func converse(
        _ channel: NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, sink: EventSink, watchdog: IdleWatchdog
    ) async throws {
        try await channel.executeThenClose { inbound, outbound in
            try await outbound.write(
                WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: ByteBuffer(bytes: body)))
            var completionTokens = 0
            var promptTokens = 0
            var sawUsage = false
            for try await frame in inbound {
                watchdog.touch()
                switch frame.opcode {
                case .text, .binary:
                    let data = Data(frame.unmaskedData.readableBytesView)
                    let decoded = try decodeReplyPiece(
                        SparkWire.Frame.self, from: data, decoder: SparkWire.decoder, what: "A Spark frame",
                        provider: provider, redactor: redactor)
                    guard decoded.header.code == 0 else {
                        throw SparkWire.error(
                            code: decoded.header.code, message: decoded.header.message, sid: decoded.header.sid,
                            provider: provider, redactor: redactor)
                    }
                    for piece in decoded.payload?.choices?.text ?? [] { sink.text(piece.content ?? "") }
                    if let counts = decoded.payload?.usage?.text {
                        sawUsage = true
                        promptTokens = counts.promptTokens ?? promptTokens
                        completionTokens = counts.completionTokens ?? completionTokens
                    }
                    if decoded.header.status == 2 || decoded.payload?.choices?.status == 2 {
                        if sawUsage {
                            sink.yield(.usage(sink.usage(prompt: promptTokens, completion: completionTokens, cached: nil)))
                        }
                        let hitLimit = maxTokens.map { sawUsage && completionTokens >= $0 } ?? false
                        sink.yield(.finished(hitLimit ? .length : .stop))
                        sink.finish()
                        try? await outbound.write(
                            WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: ByteBuffer()))
                        return
                    }
                case .ping:
                    try await outbound.write(
                        WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData))
                case .connectionClose:
                    var data = frame.unmaskedData
                    let code = data.readInteger(as: UInt16.self).map { " (close code \($0))" } ?? ""
                    throw ProviderError(
                        .network, provider: provider,
                        message: "Spark closed the connection before the answer was complete\(code).")
                default:
                    continue
                }
            }
            throw ProviderError(
                .network, provider: provider, message: "The connection closed before the answer was complete.")
        }
    }

    /// Reads the HTTP response of a refused handshake and maps it.
    private func rejection(
        _ channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, watchdog: IdleWatchdog
    ) async throws -> ProviderError {
        let (status, text, _) = try await WebSocketConnector.refusal(channel, watchdog: watchdog)
        if status == 401 || status == 403 {
            let said = HTTPFailureMapper.details(status: status, body: redactor(text)).message.map { " Spark said: \($0)" }
            return ProviderError(
                .unauthorized, provider: provider,
                message: redactor(
                    "Spark refused the signed URL (HTTP \(status)). Check SPARK_API_KEY and SPARK_API_SECRET, and "
                        + "that this machine's clock is right (the signed date must be within 5 minutes)."
                        + (said ?? "")),
                underlying: HTTPFailureMapper.details(status: status, body: redactor(text)))
        }
        let mapper = HTTPFailureMapper(provider: provider, redactor: redactor, credentialHint: SparkProvider.credentialHint)
        return mapper.error(status: status, retryAfter: nil, body: text)
    }
}
