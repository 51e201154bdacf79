import AsyncHTTPClient
import Foundation

/// One server-sent event: its `event:` name (if any) and its `data:` lines joined with "\n".
struct ServerSentEvent: Sendable, Equatable {
    var name: String?
    var data: String
}

/// An incremental parser for `text/event-stream` (the WHATWG "server-sent events" format).
///
/// Network chunks can split anything: a line, a `\r\n` pair, a multi-byte UTF-8 character. The
/// parser keeps bytes until a line is complete and decodes only whole lines, so none of that
/// matters. Lines end with `\n`, `\r\n` or `\r`; `:` lines are comments; a blank line dispatches
/// the event. At the end of the stream a pending event whose lines were complete is dispatched
/// too (some servers omit the last blank line).
struct ServerSentEventParser: Sendable {
    private var line: [UInt8] = []
    private var dataLines: [String] = []
    private var name: String?
    private var lastWasCR = false
    private var atStart = true
    /// Largest line kept, so a server that never sends a newline cannot exhaust memory.
    let maxLineBytes: Int

    init(maxLineBytes: Int = 8 << 20) {
        self.maxLineBytes = maxLineBytes
    }

    /// Feeds bytes; returns the events they completed. Throws if a line exceeds ``maxLineBytes``.
    mutating func feed(_ bytes: some Sequence<UInt8>) throws(LineTooLong) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\n"):
                if lastWasCR {
                    lastWasCR = false  // second half of "\r\n": the line was already ended
                    continue
                }
                endLine(into: &events)
            case UInt8(ascii: "\r"):
                lastWasCR = true
                endLine(into: &events)
            default:
                lastWasCR = false
                line.append(byte)
                if line.count > maxLineBytes { throw LineTooLong(limit: maxLineBytes) }
            }
        }
        return events
    }

    /// Ends the stream: returns the last event if its lines were complete.
    mutating func finish() -> [ServerSentEvent] {
        defer {
            dataLines = []
            name = nil
            line = []
        }
        guard !dataLines.isEmpty else { return [] }
        return [ServerSentEvent(name: name, data: dataLines.joined(separator: "\n"))]
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) {
        var text = String(decoding: line, as: UTF8.self)
        line.removeAll(keepingCapacity: true)
        if atStart {
            atStart = false
            if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        }
        if text.isEmpty {
            if !dataLines.isEmpty {
                events.append(ServerSentEvent(name: name, data: dataLines.joined(separator: "\n")))
            }
            dataLines = []
            name = nil
            return
        }
        if text.hasPrefix(":") { return }
        let field: Substring
        var value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            value = text[text.index(after: colon)...]
            if value.hasPrefix(" ") { value = value.dropFirst() }
        } else {
            field = text[...]
            value = ""
        }
        switch field {
        case "data": dataLines.append(String(value))
        case "event": name = String(value)
        default: break  // id, retry and unknown fields do not matter here
        }
    }

    /// A line longer than the parser's limit.
    struct LineTooLong: Error, CustomStringConvertible {
        let limit: Int
        var description: String { "an event-stream line is longer than \(limit) bytes" }
    }
}

extension ServerSentEventParser {
    /// Reads a streamed body event by event: touches `watchdog` for every network chunk, passes
    /// each event to `handle` until `isDone`, then drains the rest unread so the connection can
    /// be reused. A last event without its blank line is passed on too.
    static func read(
        _ body: HTTPClientResponse.Body, watchdog: IdleWatchdog, isDone: () -> Bool,
        _ handle: (ServerSentEvent) throws -> Void
    ) async throws {
        var parser = ServerSentEventParser()
        for try await buffer in body {
            watchdog.touch()
            if isDone() { continue }
            for event in try parser.feed(buffer.readableBytesView) where !isDone() { try handle(event) }
        }
        for event in parser.finish() where !isDone() { try handle(event) }
    }
}

extension JSONDecoder {
    /// A decoder for the providers' wire formats: `snake_case` keys onto camel-case properties.
    static var snakeCase: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
