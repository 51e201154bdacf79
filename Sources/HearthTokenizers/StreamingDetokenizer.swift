/// Turns a stream of token ids into text without ever emitting broken UTF-8: bytes of a
/// character split over several byte-fallback tokens are held back until it is whole.
package struct StreamingDetokenizer {
    private let tokenizer: any Tokenizer
    private let skipSpecialTokens: Bool
    private var pending: [UInt8] = []
    private var stripLeadingSpace: Bool

    /// - Parameters:
    ///   - skipSpecialTokens: leave control tokens (`<|end|>`, `<s>`) out of the text.
    ///   - stripLeadingSpace: drop one space at the very start (SentencePiece's dummy prefix),
    ///     as when a reply starts right after a chat template's assistant marker.
    package init(tokenizer: any Tokenizer, skipSpecialTokens: Bool = true, stripLeadingSpace: Bool = false) {
        self.tokenizer = tokenizer
        self.skipSpecialTokens = skipSpecialTokens
        self.stripLeadingSpace = stripLeadingSpace
    }

    /// Adds one token and returns the text that became complete (possibly empty).
    package mutating func push(_ id: Int32) -> String {
        if skipSpecialTokens && tokenizer.isSpecial(id) { return "" }
        guard var bytes = tokenizer.bytes(of: id) else { return "" }
        if stripLeadingSpace && !bytes.isEmpty {
            if bytes.first == 0x20 { bytes.removeFirst() }
            stripLeadingSpace = false
        }
        pending += bytes
        return drainComplete(final: false)
    }

    /// Returns whatever is left, with an incomplete trailing sequence as U+FFFD.
    package mutating func flush() -> String {
        drainComplete(final: true)
    }

    /// Emits the longest prefix of `pending` made of complete sequences; invalid bytes become U+FFFD.
    private mutating func drainComplete(final: Bool) -> String {
        var out = String.UnicodeScalarView()
        var i = 0
        let b = pending
        while i < b.count {
            let lead = b[i]
            let length: Int
            switch lead {
            case 0x00...0x7f: length = 1
            case 0xc2...0xdf: length = 2
            case 0xe0...0xef: length = 3
            case 0xf0...0xf4: length = 4
            default: length = 0
            }
            if length == 0 {
                out.append("\u{FFFD}")
                i += 1
                continue
            }
            if i + length > b.count {
                // Possibly incomplete: keep it if every byte so far is a valid continuation.
                let tailValid = b[(i + 1)...].allSatisfy { $0 & 0xc0 == 0x80 }
                if tailValid && !final { break }
                out.append("\u{FFFD}")
                i += 1
                continue
            }
            if let scalar = decodeScalar(b, at: i, length: length) {
                out.append(scalar)
                i += length
            } else {
                out.append("\u{FFFD}")
                i += 1
            }
        }
        pending.removeFirst(i)
        return String(out)
    }

    private func decodeScalar(_ b: [UInt8], at i: Int, length: Int) -> Unicode.Scalar? {
        var value = UInt32(b[i]) & (length == 1 ? 0x7f : length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07)
        for k in 1..<max(1, length) {
            let c = b[i + k]
            guard c & 0xc0 == 0x80 else { return nil }
            value = value << 6 | UInt32(c & 0x3f)
        }
        // Reject overlong encodings and surrogates.
        let minimum: UInt32 = length == 1 ? 0 : length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
        guard value >= minimum else { return nil }
        return Unicode.Scalar(value)
    }
}
