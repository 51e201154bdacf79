import Foundation
import HearthProviders
import Testing

@testable import HearthServer

/// The content filter on its own: the list format, whole-word and pattern matching, failing
/// closed past the time limit, and the output screen on streamed text (a match split across
/// pieces never leaks, not even its first part) and on tool calls.
@Suite struct ContentFilterTests {
    static func filter(_ lines: [String], window: Int = 64) throws -> ContentFilter {
        var filter = try ContentFilter(lines: lines, filterOutput: true)
        filter.window = window
        return filter
    }

    @Test func wordsMatchWholeAndCaseInsensitively() throws {
        let filter = try Self.filter(["gun", "bad word", "c++", "# a comment: never an entry", "", "   "])
        #expect(filter.count == 3)
        #expect(filter.blocks("a gun here") && filter.blocks("GUN!") && filter.blocks("gun"))
        #expect(!filter.blocks("it has begun") && !filter.blocks("guns") && !filter.blocks("gunk"))
        #expect(filter.blocks("a Bad Word.") && !filter.blocks("a bad wordsmith") && !filter.blocks("bad  word"))
        // An entry ending in punctuation has no word boundary there; its characters are literal.
        #expect(filter.blocks("I like c++.") && filter.blocks("c++11") && !filter.blocks("c+"))
        #expect(!filter.blocks("# a comment: never an entry"))
    }

    @Test func patternsMatchAnywhere() throws {
        let filter = try Self.filter(["re:\\bsk-[a-z0-9]{8,}", "re:pine\\s*apple"])
        #expect(filter.blocks("key: sk-abcdef123456") && !filter.blocks("sk-short"))
        #expect(filter.blocks("PINEAPPLE") && filter.blocks("pine  apple") && filter.blocks("pineapples"))
    }

    /// The offset is in characters (what the output screen cuts at), the earliest entry's.
    @Test func firstMatchIsTheEarliestInCharacters() throws {
        let filter = try Self.filter(["apple", "pear"])
        #expect(filter.firstMatch(in: "👍🏽 é pear and apple") == 4)
        #expect(filter.firstMatch(in: "apple and pear") == 0)
        #expect(filter.firstMatch(in: "nothing here") == nil)
    }

    /// A check past its time limit counts as a match at the start: the filter fails closed.
    @Test func aCheckPastItsTimeLimitFailsClosed() throws {
        var filter = try Self.filter(["apple"])
        filter.timeLimit = -1  // the deadline has passed before the check starts
        #expect(filter.firstMatch(in: "nothing to see") == 0)
    }

    /// A bad list is refused naming the line, never quoting it.
    @Test func badListsAreRefusedWithoutQuotingThem() throws {
        do {
            _ = try ContentFilter(lines: ["fine", "re:(unclosed-secret-pattern"], filterOutput: false)
            Issue.record("an invalid pattern was accepted")
        } catch let error as ContentFilter.LoadError {
            #expect(error.message.contains("line 2") && !error.message.contains("unclosed-secret-pattern"))
        }
        #expect(throws: ContentFilter.LoadError.self) { try ContentFilter(lines: ["# only a comment", ""], filterOutput: false) }
        let missing = FileManager.default.temporaryDirectory.appendingPathComponent("no-such-list-\(UUID().uuidString).txt").path
        #expect(throws: ContentFilter.LoadError.self) { try ContentFilter(file: missing, filterOutput: false) }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("list-\(UUID().uuidString).txt")
        try "# words\npineapple\nre:sk-[0-9]+\n".write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let loaded = try ContentFilter(file: file.path, filterOutput: true)
        #expect(loaded.count == 2 && loaded.filterOutput && loaded.blocks("sk-42"))
    }

    /// Runs pieces through an output screen; the text that went out and whether it was cut.
    static func screen(_ pieces: [String], _ filter: ContentFilter) -> (text: String, filtered: Bool, events: [RouteEvent]) {
        var screen = OutputScreen(filter: filter)
        var events: [RouteEvent] = []
        for piece in pieces {
            events += screen.pass(.text(piece, token: nil))
            if case .filtered? = events.last { break }
        }
        if case .filtered? = events.last {} else { events += screen.pass(.finished(Usage(promptTokens: 1, completionTokens: 1), .stop)) }
        var text = ""
        var filtered = false
        for event in events {
            switch event {
            case .text(let piece, _): text += piece
            case .filtered: filtered = true
            default: break
            }
        }
        return (text, filtered, events)
    }

    /// Splits `text` at seeded random places into pieces of 1…`longest` characters.
    static func pieces(_ text: String, seed: UInt64, longest: Int) -> [String] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        var out: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let length = min(rest.count, 1 + Int(state >> 33) % longest)
            out.append(String(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return out
    }

    /// However a reply is split, exactly the text before the blocked word goes out, then the
    /// cut: never a first part of the word, even when it arrived pieces earlier.
    @Test func aMatchSplitAcrossPiecesNeverLeaks() throws {
        let before = "The quick brown fox jumps over the lazy dog, and then the "
        let reply = before + "PineApple rolls far away, out of sight."
        for window in [9, 12, 64] {
            let filter = try Self.filter(["pineapple"], window: window)
            for seed in 0..<200 as Range<UInt64> {
                let pieces = Self.pieces(reply, seed: seed, longest: 1 + Int(seed % 11))
                let (text, filtered, _) = Self.screen(pieces, filter)
                #expect(filtered && text == before, "window \(window), pieces \(pieces): sent \(text.debugDescription)")
            }
        }
        // The whole reply in one piece is cut at the same place.
        let (text, filtered, _) = Self.screen([reply], try Self.filter(["pineapple"]))
        #expect(filtered && text == before)
    }

    /// The screen decides as the whole text does: the end of a piece is not a word boundary
    /// (the next piece may continue the word), nor is the start of the tail it rescans (it
    /// keeps one character of what went out before it as context).
    @Test func streamedMatchesAgreeWithTheWholeText() throws {
        let filter = try Self.filter(["pineapple"], window: 9)
        // A piece ends after "pineapple"; the next starts with the "s" of "pineapples".
        #expect(!filter.blocks("I like pineapples a lot"))
        var (text, filtered, _) = Self.screen(["I like pineapple", "s a lot"], filter)
        #expect(!filtered && text == "I like pineapples a lot")
        // ...and when the reply does end there, it is a match after all.
        (text, filtered, _) = Self.screen(["I like pineapple"], filter)
        #expect(filtered && text == "I like ")
        (text, filtered, _) = Self.screen(["I like pineapple", " a lot"], filter)
        #expect(filtered && text == "I like ")
        // "Xpineapple" went out (no match: no boundary before it); the rescanned tail is the
        // last 9 characters sent, "pineapple", whose start is not a boundary in the text.
        #expect(!filter.blocks("Xpineapple 123456789"))
        (text, filtered, _) = Self.screen(["Xpineapple 12345678", "9"], filter)
        #expect(!filtered && text == "Xpineapple 123456789")
        // Every split of replies that pass whole, and of one that does not, agrees with the whole text.
        let replies = ["pineapples and Xpineapple, not pineapplepie", "we sell pineapple juice", "Pineapple!"]
        for reply in replies {
            let chars = Array(reply)
            for first in 1..<chars.count {
                for second in first..<chars.count {
                    let pieces = [String(chars[..<first]), String(chars[first..<second]), String(chars[second...])]
                        .filter { !$0.isEmpty }
                    let (sent, cut, _) = Self.screen(pieces, filter)
                    if let at = filter.firstMatch(in: reply) {
                        #expect(cut && sent == String(chars[..<at]), "\(pieces)")
                    } else {
                        #expect(!cut && sent == reply, "\(pieces)")
                    }
                }
            }
        }
    }

    /// A match that keeps growing at the end of the stream (`re:a+` over a run of a's) is
    /// provisional only until it is longer than the window: the reply is cut while it streams, not held
    /// back to its end (what is held stays bounded).
    @Test func aGrowingMatchIsCutOnceLongerThanTheWindow() throws {
        let filter = try Self.filter(["re:a+"], window: 9)
        var screen = OutputScreen(filter: filter)
        var sent = ""
        var cutAfter: Int?
        for i in 0..<200 {
            let piece = i == 0 ? "x " : "a"
            for event in screen.pass(.text(piece, token: nil)) {
                if case .text(let text, _) = event { sent += text }
                if case .filtered = event { cutAfter = i }
            }
            if cutAfter != nil { break }
        }
        #expect(sent == "x ")
        #expect((cutAfter ?? 999) <= 10, "cut after \(String(describing: cutAfter)) pieces")
    }

    /// A clean reply goes out whole, in order, however it is split; the held window goes out
    /// at the end.
    @Test func aCleanReplyGoesOutWhole() throws {
        let reply = String(repeating: "Nothing to block in this sentence at all. ", count: 6)
        let filter = try Self.filter(["pineapple"], window: 16)
        for seed in 0..<50 as Range<UInt64> {
            let (text, filtered, events) = Self.screen(Self.pieces(reply, seed: seed, longest: 9), filter)
            #expect(!filtered && text == reply)
            guard case .finished? = events.last else {
                Issue.record("the answer did not end with finished")
                continue
            }
        }
        // Text is held back until more than a window of it has arrived.
        var screen = OutputScreen(filter: filter)
        #expect(screen.pass(.text("sixteen chars ok", token: nil)).isEmpty)
        let out = screen.pass(.text("!", token: nil))
        guard case .text(let first, _)? = out.first else {
            Issue.record("nothing went out past the window: \(out)")
            return
        }
        #expect(first == "s")
    }

    /// A tool call is held whole and checked with its name and arguments: a clean call goes out
    /// complete when it finishes, a call with a blocked word never goes out at all.
    @Test func toolCallsAreHeldWholeAndChecked() throws {
        let filter = try Self.filter(["pineapple"], window: 8)
        func run(_ arguments: [String]) -> [RouteEvent] {
            var screen = OutputScreen(filter: filter)
            var events = screen.pass(.text("Calling ", token: nil))
            events += screen.pass(.toolCall(.started(index: 0, id: "c1", name: "order")))
            for fragment in arguments { events += screen.pass(.toolCall(.arguments(index: 0, fragment: fragment))) }
            events += screen.pass(.toolCall(.finished(index: 0)))
            return events
        }
        let clean = run([#"{"fruit":"#, #""banana"}"#])
        let calls = clean.compactMap { event -> ToolCallEvent? in if case .toolCall(let step) = event { step } else { nil } }
        #expect(calls.count == 4, "\(clean)")
        guard case .text("Calling ", _)? = clean.first else {
            Issue.record("the held text did not go out before the call: \(clean)")
            return
        }
        let blocked = run([#"{"fruit":"pine"#, #"apple"}"#])
        #expect(blocked.contains { if case .toolCall = $0 { true } else { false } } == false, "\(blocked)")
        guard case .filtered? = blocked.last else {
            Issue.record("a call with a blocked word was not cut: \(blocked)")
            return
        }
    }
}

/// The output filter screens reasoning too (issue 57: the gateway passes cloud reasoning): a part
/// is held until it ends and goes out whole, or not at all when it matches.
@Suite struct ReasoningScreenTests {
    @Test func reasoningIsScreenedWholeAtItsEnd() throws {
        let filter = try ContentFilter(lines: ["pineapple"], filterOutput: true)
        var screen = OutputScreen(filter: filter)
        #expect(screen.pass(.reasoning("I think about pine")).isEmpty)
        #expect(screen.pass(.reasoning("apple now.")).isEmpty)
        let blocked = screen.pass(.reasoningEnded(ReasoningPart(text: "I think about pineapple now.", signature: "s")))
        #expect(blocked.count == 1 && { if case .filtered = blocked[0] { true } else { false } }())

        var clean = OutputScreen(filter: filter)
        #expect(clean.pass(.reasoning("Nothing to block.")).isEmpty)
        let out = clean.pass(.reasoningEnded(ReasoningPart(text: "Nothing to block.")))
        #expect(out.count == 2)
        if case .reasoning(let text)? = out.first { #expect(text == "Nothing to block.") } else { Issue.record("\(out)") }

        // A redacted part (only its end) with a blocked text, and a part cut by the end of the reply.
        var redacted = OutputScreen(filter: filter)
        let r = redacted.pass(.reasoningEnded(ReasoningPart(text: "pineapple", redactedData: "x")))
        #expect(r.count == 1 && { if case .filtered = r[0] { true } else { false } }())
        var unfinished = OutputScreen(filter: filter)
        _ = unfinished.pass(.reasoning("a pineapple"))
        let end = unfinished.pass(.finished(Usage(promptTokens: 1, completionTokens: 1), .stop))
        #expect(end.count == 1 && { if case .filtered = end[0] { true } else { false } }())
    }
}
