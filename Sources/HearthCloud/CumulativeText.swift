/// Turns "the whole answer so far" texts into deltas (Bailian's dialog `RespondingContent.text`,
/// DashScope generation without `incremental_output`).
///
/// Each new text normally extends the last; the delta is what it adds, cut at the byte where
/// the shown text ends (a whole-character boundary, since the shown text is valid UTF-8). A
/// server that decodes its tokens as it goes may end a text with U+FFFD where a multi-byte
/// character is still incomplete and send the real character in the next text: trailing
/// U+FFFDs are held back until a later text replaces them (or the answer ends with them). A
/// text that does not extend what was shown (a revision) adds nothing; later texts that extend
/// the shown text again continue from there.
struct CumulativeText: Sendable {
    /// Everything passed on so far (including any skipped continuation prefix).
    private(set) var shown: String
    /// A prefix the consumer already has (``HearthProviders/ChatRequest/continuation``): not
    /// repeated when the answer starts with it.
    private var skip: String?

    /// Starts with nothing shown; `continuation`, when the answer starts with it, is not repeated.
    init(continuation: String? = nil) {
        shown = ""
        skip = continuation.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The delta that `text` adds; `final` when it is the whole answer.
    mutating func delta(for text: String, final: Bool) -> String {
        var stable = Substring(text)
        if !final {
            while stable.unicodeScalars.last == "\u{FFFD}" { stable = stable.dropLast() }
        }
        if let prefix = skip {
            if stable.utf8.starts(with: prefix.utf8) {
                shown = prefix
                skip = nil
            } else if prefix.utf8.starts(with: stable.utf8) && !final {
                return ""  // still inside the part the consumer has
            } else {
                skip = nil  // the answer took another way: show it all
            }
        }
        guard stable.utf8.count > shown.utf8.count, stable.utf8.starts(with: shown.utf8) else { return "" }
        let start = stable.utf8.index(stable.utf8.startIndex, offsetBy: shown.utf8.count)
        shown = String(stable)
        return String(stable[start...])
    }
}
