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
    public func firstMatch(in text: String) -> Int? { scan(text, from: 0, final: true).definite }

    /// Where blocked entries start in `text`, found from character `from` on: the characters
    /// before it are context only (word boundaries and look-behinds see them; no match starts
    /// there). Unless `final`, the text may go on, so a match that reaches its end — a word
    /// boundary at the end of what has arrived — is only `provisional`: more text may undo it;
    /// but not once it is longer than ``window`` characters (the longest a match is screened for), so a
    /// pattern that keeps matching as the text grows (`re:a+`) cannot hold the stream back
    /// without bound.
    /// `definite` is the earliest match that more text cannot undo (a timeout counts as one,
    /// at `from`: fail closed).
    func scan(_ text: String, from: Int, final: Bool) -> (definite: Int?, provisional: Int?) {
        let first = text.index(text.startIndex, offsetBy: min(max(0, from), text.count))
        let range = NSRange(first..., in: text)
        let end = (text as NSString).length
        let deadline = Date().addingTimeInterval(timeLimit)
        var definite: Int?, provisional: Int?
        for pattern in patterns {
            var found: NSRange?
            var timedOut = false
            pattern.expression.enumerateMatches(in: text, options: [.reportProgress, .withTransparentBounds], range: range) {
                match, _, stop in
                if let match {
                    found = match.range
                    stop.pointee = true
                } else if Date() > deadline {
                    timedOut = true
                    stop.pointee = true
                }
            }
            if timedOut || Date() > deadline { return (from, nil) }
            guard let found, let start = Range(found, in: text)?.lowerBound else { continue }
            let offset = text.distance(from: text.startIndex, to: start)
            if !final && NSMaxRange(found) == end && found.length <= window {
                if provisional.map({ offset < $0 }) ?? true { provisional = offset }
            } else if definite.map({ offset < $0 }) ?? true {
                definite = offset
            }
        }
        return (definite, provisional)
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
/// window of what went out (linear in the reply, never a rescan of all of it), deciding as a
/// check of the whole text would: one more character of what went out is kept as context (a
/// word boundary at the start of the rescanned tail sees it), and a match that reaches the end
/// of what has arrived is only provisional (the next piece may continue the word): the text
/// from its start is held until more text, or the end of the text, settles it. On a match the
/// text before it goes out, then ``RouteEvent/filtered``.
///
/// A tool call is held whole: the held text goes out when it starts (checked as ending there),
/// its events are kept until it finishes, and then its name and arguments are checked together
/// — a call goes out complete or, on a match, not at all (the client never gets half a call's JSON).
struct OutputScreen {
    let filter: ContentFilter
    private var held = ""
    /// The last `window + 1` characters that went out (the first of them context only).
    private var sentTail = ""
    /// The events of calls begun and not yet finished, and their name and arguments so far.
    private var heldCalls: [RouteEvent] = []
    private var callText: [Int: String] = [:]
    /// A reasoning part's events not yet forwarded, and its text so far: a part is checked
    /// whole at its end (its deltas wait for it), and goes out complete or, on a match, not at all.
    private var heldReasoning: [RouteEvent] = []
    private var reasoningText = ""

    init(filter: ContentFilter) { self.filter = filter }

    mutating func pass(_ event: RouteEvent) -> [RouteEvent] {
        switch event {
        case .text(let text, _):
            held += text
            let found = scan(final: false)
            if let cut = found.definite {
                // An earlier provisional match would move the cut: wait for the text that settles it.
                if let open = found.provisional, open < cut { return [] }
                return cutAt(cut)
            }
            var sendable = held.count - filter.window
            if let open = found.provisional { sendable = min(sendable, open - sentTail.count) }
            guard sendable > 0 else { return [] }
            let out = String(held.prefix(sendable))
            held = String(held.dropFirst(sendable))
            sent(out)
            return [.text(out, token: nil)]
        case .toolCall(let step):
            var out: [RouteEvent] = []
            if !held.isEmpty {  // the text ends here: settle what was provisional
                if let cut = scan(final: true).definite { return cutAt(cut) }
                out.append(.text(held, token: nil))
                sent(held)
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
        case .reasoning(let text):
            heldReasoning.append(event)
            reasoningText += text
            return []
        case .reasoningEnded(let part):
            heldReasoning.append(event)
            return releaseReasoning(also: part.text)
        case .finished:
            let reasoning = releaseReasoning(also: "")
            if reasoning.last.map({ if case .filtered = $0 { true } else { false } }) == true { return reasoning }
            if !held.isEmpty, let cut = scan(final: true).definite { return reasoning + cutAt(cut) }
            let out = held
            held = ""
            let calls = heldCalls
            heldCalls = []
            return reasoning + (out.isEmpty ? [] : [.text(out, token: nil)]) + calls + [event]
        default:
            return [event]
        }
    }

    /// The held reasoning part, checked whole (its streamed text, or `whole` when it came only
    /// as its end): the events, or ``RouteEvent/filtered`` on a match.
    private mutating func releaseReasoning(also whole: String) -> [RouteEvent] {
        defer {
            heldReasoning = []
            reasoningText = ""
        }
        guard !heldReasoning.isEmpty else { return [] }
        if filter.blocks(reasoningText) || filter.blocks(whole) { return [.filtered] }
        return heldReasoning
    }

    /// The held text checked with what went out before it; offsets count from the start of `sentTail`.
    private func scan(final: Bool) -> (definite: Int?, provisional: Int?) {
        filter.scan(sentTail + held, from: sentTail.count > filter.window ? 1 : 0, final: final)
    }

    /// The held text before offset `cut` (of `sentTail + held`) goes out, then the filter's end.
    private mutating func cutAt(_ cut: Int) -> [RouteEvent] {
        let keep = String(held.prefix(max(0, cut - sentTail.count)))
        held = ""
        return (keep.isEmpty ? [] : [.text(keep, token: nil)]) + [.filtered]
    }

    /// Records `text` as gone out.
    private mutating func sent(_ text: String) {
        sentTail = String((sentTail + text).suffix(filter.window + 1))
    }
}
