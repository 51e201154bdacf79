import Crypto
import Foundation
import HearthFakeServers
import HearthLocal
import HearthServer
import Logging

/// A gateway clock the test moves by hand (a minute or a day passes at once).
final class ManualClock: @unchecked Sendable {
    // `@unchecked Sendable`: `now` is only touched under `lock`.
    private let lock = NSLock()
    private var now: Date

    init(_ start: Date = Date()) { now = start }

    func advance(_ seconds: Double) { lock.withLock { now = now.addingTimeInterval(seconds) } }
    var date: Date { lock.withLock { now } }
    var clock: GatewayClock { GatewayClock { self.date } }
    var unix: Int { Int(date.timeIntervalSince1970) }
}

/// Every log line the server writes (message and metadata), to grep for secrets.
final class LogCapture: @unchecked Sendable {
    // `@unchecked Sendable`: `lines` is only touched under `lock`.
    private let lock = NSLock()
    private var lines: [String] = []

    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var text: String { lock.withLock { lines.joined(separator: "\n") } }

    var logger: Logger {
        var logger = Logger(label: "gateway.test") { label in CapturingHandler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    struct CapturingHandler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.append("\(event.level) \(event.message) \(merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))")
        }
    }
}

/// The hex SHA-256 of a text (how a key is written in `key_sha256`).
func sha256Hex(_ text: String) -> String {
    SHA256.hash(data: Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
}

/// `x-timestamp` and `x-signature` as the seed app computes them.
func signature(secret: String, method: String, path: String, timestamp: Int, body: String) -> [(String, String)] {
    let canonical = "\(method)\n\(path)\n\(timestamp)\n\(sha256Hex(body))"
    let mac = HMAC<SHA256>.authenticationCode(for: Array(canonical.utf8), using: SymmetricKey(data: Array(secret.utf8)))
    return [("x-timestamp", String(timestamp)), ("x-signature", mac.map { String(format: "%02x", $0) }.joined())]
}

/// A fake OpenAI upstream: the answer streams in pieces; a prompt containing `#drop` gets two
/// pieces and then a dropped connection, `#500` a server error, `#429` a rate limit, `#echo` a
/// 401 whose message quotes the key it was sent.
func fakeOpenAI(answer: [String] = ["The secret ", "word is ", "pineapple", " and more."]) async throws -> TestHTTPServer {
    try await TestHTTPServer.start { request, _, out in
        if request.body.contains("#500") {
            try await out.respond(500, "Internal Server Error", headers: [("Content-Type", "application/json")], body: #"{"error":{"message":"boom","type":"server_error"}}"#)
            return .close
        }
        if request.body.contains("#echo") {
            // A 401 that echoes the key it was sent, as some servers do.
            let sent = request.headers["authorization"].first ?? ""
            try await out.respond(
                401, "Unauthorized", headers: [("Content-Type", "application/json")],
                body: #"{"error":{"message":"Incorrect API key provided: \#(sent)","type":"invalid_request_error"}}"#)
            return .close
        }
        if request.body.contains("#429") {
            try await out.respond(
                429, "Too Many Requests", headers: [("Content-Type", "application/json"), ("Retry-After", "30")],
                body: #"{"error":{"message":"slow down","type":"rate_limit_error"}}"#)
            return .close
        }
        try await out.head(200, headers: [("Content-Type", "text/event-stream")])
        let pieces = request.body.contains("#drop") ? Array(answer.prefix(2)) : answer
        for piece in pieces {
            let data = try JSONSerialization.data(withJSONObject: ["choices": [["index": 0, "delta": ["content": piece]]]])
            try await out.chunk("data: \(String(decoding: data, as: UTF8.self))\n\n")
            try await Task.sleep(for: .milliseconds(10))
        }
        if request.body.contains("#drop") { return .close }  // no end marker: the stream broke
        try await out.chunk(#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"# + "\n\n")
        try await out.chunk(#"data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15}}"# + "\n\n")
        try await out.chunk("data: [DONE]\n\n")
        try await out.end()
        return .close
    }
}
