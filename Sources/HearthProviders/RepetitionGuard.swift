/// Ends a streamed reply that repeats itself, the way a person would stop reading it.
///
/// Small models, base models above all, fall into loops: the same line again and again, or
/// the same sentence within one line. Feed the reply's text as it streams; the guard
/// releases the text that is safe to show and says when to stop:
/// - a line (one with a letter or digit) that would stand a third time is held back while it
///   comes and dropped when it completes — the reply ends before it;
/// - a span of at least `minimumSpan` characters that ends the text three times in a row
///   ends the reply (the third copy is already shown; it is removed from ``text``);
/// - so does a run of 96 characters on one line without a letter or digit (`: : : …`).
public struct RepetitionGuard: Sendable {
    /// How often a line may stand (2: a third copy ends the reply).
    public let maximumLineRepeats: Int
    /// The shortest span whose threefold repetition within a line ends the reply.
    public let minimumSpan: Int
    /// The longest span looked for.
    public let maximumSpan: Int
    /// A run of this many characters on one line without a letter or digit ends the reply.
    public let punctuationRun = 96
    /// The reply as released so far (after ``feed(_:)`` said stop: without the repeated part).
    public private(set) var text = ""
    /// Whether the guard has ended the reply.
    public private(set) var stopped = false

    private var lineCounts: [String: Int] = [:]
    /// The current (unfinished) line and how much of it was released.
    private var line = ""
    private var releasedInLine = 0

    /// Creates a guard.
    public init(maximumLineRepeats: Int = 2, minimumSpan: Int = 12, maximumSpan: Int = 240) {
        self.maximumLineRepeats = maximumLineRepeats
        self.minimumSpan = minimumSpan
        self.maximumSpan = maximumSpan
    }

    /// Takes the next piece of the reply; returns the text to show now (possibly empty).
    /// Once ``stopped`` is true, returns "" for everything.
    public mutating func feed(_ delta: String) -> String {
        guard !stopped else { return "" }
        var released = ""
        for character in delta {
            if character == "\n" {
                let key = Self.key(line)
                if !key.isEmpty, lineCounts[key, default: 0] >= maximumLineRepeats {
                    stopped = true
                    return released
                }
                if !key.isEmpty { lineCounts[key, default: 0] += 1 }
                released += line.dropFirst(releasedInLine) + "\n"
                text += line.dropFirst(releasedInLine) + "\n"
                line = ""
                releasedInLine = 0
            } else {
                line.append(character)
            }
        }
        // Hold the line back while it may still become a line already seen too often.
        let key = Self.key(line)
        let mayRepeat = !key.isEmpty && lineCounts.contains { $0.value >= maximumLineRepeats && $0.key.hasPrefix(key) }
        if !mayRepeat {
            let fresh = String(line.dropFirst(releasedInLine))
            released += fresh
            text += fresh
            releasedInLine = line.count
        }
        if let span = repeatedSpanAtEnd() {
            stopped = true
            text.removeLast(span)
        } else if text.count >= punctuationRun, !text.suffix(punctuationRun).contains(where: { $0.isLetter || $0.isNumber || $0.isNewline }) {
            // A long run of punctuation and spaces on one line (`: : : : …`) is a loop too.
            stopped = true
        }
        return released
    }

    /// The text still held back when the reply ends by itself (a last line without newline),
    /// unless that line would stand a third time: then it is dropped and ``stopped`` is set.
    public mutating func finish() -> String {
        guard !stopped else { return "" }
        let key = Self.key(line)
        if !key.isEmpty, lineCounts[key, default: 0] >= maximumLineRepeats {
            stopped = true
            return ""
        }
        let rest = String(line.dropFirst(releasedInLine))
        text += rest
        line = ""
        releasedInLine = 0
        return rest
    }

    /// The length of a span (≥ `minimumSpan` characters, with a letter or digit) that ends
    /// the released text three times in a row, if any.
    private func repeatedSpanAtEnd() -> Int? {
        let tail = Array(text.suffix(3 * maximumSpan))
        guard tail.count >= 3 * minimumSpan else { return nil }
        for length in minimumSpan...min(maximumSpan, tail.count / 3) {
            let n = tail.count
            var same = true
            for i in 0..<length where tail[n - 1 - i] != tail[n - 1 - i - length] || tail[n - 1 - i] != tail[n - 1 - i - 2 * length] {
                same = false
                break
            }
            if same, tail[(n - length)...].contains(where: { $0.isLetter || $0.isNumber }) { return length }
        }
        return nil
    }

    /// A line as compared: trimmed; empty when it has no letter or digit (rules, fences, blank lines).
    private static func key(_ line: String) -> String {
        guard line.contains(where: { $0.isLetter || $0.isNumber }) else { return "" }
        return String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
    }
}
