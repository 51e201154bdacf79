import Foundation

/// A list of blocked words and patterns, applied to requests before anything is forwarded and,
/// optionally, to the reply as it streams.
///
/// The file has one entry per line: a word or phrase, matched case-insensitively as a whole
/// word (`gun` does not match `begun`); or `re:` followed by an ICU regular expression, matched
/// case-insensitively anywhere. Blank lines and lines starting with `#` are ignored.
public struct ContentFilter: Sendable {
    /// Why the file could not be used (the message names the line; it never quotes the file's text).
    public struct LoadError: Error, Sendable {
        /// What is wrong.
        public var message: String
    }

    /// Whether replies are checked too (their stream then ends with `finish_reason: "content_filter"`).
    public let filterOutput: Bool
    /// Characters of a streamed reply held back before they are sent, so a match never leaks
    /// its first part; also the span a match may have in a reply (the tail scanned per piece).
    public var window = 64
    /// Seconds one check may take before it stops and counts as a match (fail closed).
    public var timeLimit = 0.25
    /// Number of entries.
    public var count: Int { patterns.count }
    private let patterns: [Pattern]

    /// One compiled entry. `NSRegularExpression` is immutable and documented as thread-safe.
    private struct Pattern: @unchecked Sendable {
        let expression: NSRegularExpression
    }

    /// Reads the list at `file`.
    /// - Throws: ``LoadError`` when the file cannot be read, is empty, or a `re:` line is not a valid pattern.
    public init(file: String, filterOutput: Bool) throws {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw LoadError(message: "cannot read \(file) (it must be a UTF-8 text file, one word or re:PATTERN per line).")
        }
        try self.init(lines: text.components(separatedBy: .newlines), filterOutput: filterOutput)
    }

    /// Compiles entries given as lines of the file format.
    /// - Throws: ``LoadError`` naming the first invalid line.
    public init(lines: [String], filterOutput: Bool) throws {
        var patterns: [Pattern] = []
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let source: String
            if line.hasPrefix("re:") {
                source = String(line.dropFirst(3))
            } else {
                let escaped = NSRegularExpression.escapedPattern(for: line)
                let wordStart = line.first.map { $0.isLetter || $0.isNumber } ?? false
                let wordEnd = line.last.map { $0.isLetter || $0.isNumber } ?? false
                source = (wordStart ? "\\b" : "") + escaped + (wordEnd ? "\\b" : "")
            }
            do {
                patterns.append(Pattern(expression: try NSRegularExpression(pattern: source, options: [.caseInsensitive])))
            } catch {
                throw LoadError(message: "line \(index + 1) is not a valid regular expression.")
            }
        }
        guard !patterns.isEmpty else { throw LoadError(message: "has no entries (one word or re:PATTERN per line).") }
        self.patterns = patterns
        self.filterOutput = filterOutput
    }

    /// The offset (in `Character`s) where the first blocked entry starts in `text`, or nil.
    /// A check that runs past ``timeLimit`` (a pattern that backtracks on hostile text) stops
    /// and reports a match at the start: the filter fails closed.
    public func firstMatch(in text: String) -> Int? {
        let range = NSRange(text.startIndex..., in: text)
        let deadline = Date().addingTimeInterval(timeLimit)
        var earliest: Int?
        for pattern in patterns {
            var found: NSRange?
            var timedOut = false
            pattern.expression.enumerateMatches(in: text, options: [.reportProgress], range: range) { match, _, stop in
                if let match {
                    found = match.range
                    stop.pointee = true
                } else if Date() > deadline {
                    timedOut = true
                    stop.pointee = true
                }
            }
            if timedOut || Date() > deadline { return 0 }
            guard let found, let start = Range(found, in: text)?.lowerBound else { continue }
            let offset = text.distance(from: text.startIndex, to: start)
            if earliest.map({ offset < $0 }) ?? true { earliest = offset }
        }
        return earliest
    }

    /// Whether `text` contains a blocked entry, checked on a thread of its own rather than the
    /// server's cooperative pool (a request may carry megabytes of text).
    func screens(_ text: String) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async { continuation.resume(returning: self.blocks(text)) }
        }
    }

    /// Whether `text` contains a blocked entry.
    public func blocks(_ text: String) -> Bool { firstMatch(in: text) != nil }
}

/// The output filter as a transform on a route's events: text is held back ``ContentFilter/window``
/// characters before it goes out, and each piece is checked against the held text plus the last
/// window of what went out (linear in the reply, never a rescan of all of it). On a match the
/// text before it goes out, then ``RouteEvent/filtered``.
///
/// A tool call is held whole: the held text goes out when it starts, its events are kept until
/// it finishes, and then its name and arguments are checked together — a call goes out
/// complete or, on a match, not at all (the client never gets half a call's JSON).
struct OutputScreen {
    let filter: ContentFilter
    private var held = ""
    private var sentTail = ""
    /// The events of calls begun and not yet finished, and their name and arguments so far.
    private var heldCalls: [RouteEvent] = []
    private var callText: [Int: String] = [:]

    init(filter: ContentFilter) { self.filter = filter }

    mutating func pass(_ event: RouteEvent) -> [RouteEvent] {
        switch event {
        case .text(let text, _):
            held += text
            let scanned = sentTail + held
            if let cut = filter.firstMatch(in: scanned) {
                let keep = String(held.prefix(max(0, cut - sentTail.count)))
                held = ""
                return (keep.isEmpty ? [] : [.text(keep, token: nil)]) + [.filtered]
            }
            guard held.count > filter.window else { return [] }
            let out = String(held.dropLast(filter.window))
            held = String(held.suffix(filter.window))
            sentTail = String((sentTail + out).suffix(filter.window))
            return [.text(out, token: nil)]
        case .toolCall(let step):
            var out: [RouteEvent] = []
            if !held.isEmpty {  // already checked as it arrived
                out.append(.text(held, token: nil))
                sentTail = String((sentTail + held).suffix(filter.window))
                held = ""
            }
            heldCalls.append(event)
            switch step {
            case .started(let index, _, let name): callText[index] = name + " "
            case .arguments(let index, let fragment): callText[index, default: ""] += fragment
            case .finished(let index):
                if filter.blocks(callText[index] ?? "") { return out + [.filtered] }
                callText[index] = nil
                if callText.isEmpty {
                    out += heldCalls
                    heldCalls = []
                }
            }
            return out
        case .finished:
            let out = held
            held = ""
            let calls = heldCalls
            heldCalls = []
            return (out.isEmpty ? [] : [.text(out, token: nil)]) + calls + [event]
        default:
            return [event]
        }
    }
}
