/// Finds added tokens in text, the way tokenizers' `AddedVocabulary` does: leftmost-longest
/// matches, then `single_word`, `lstrip` and `rstrip` applied to each match in turn.
struct AddedVocabulary: Sendable {
    struct Entry: Sendable {
        var scalars: [Unicode.Scalar]
        var definition: AddedTokenDefinition
        /// Only matched when the caller asks to parse special tokens (GGUF control tokens).
        var onlyWhenParsingSpecial: Bool
    }

    enum Segment: Equatable {
        case token(Int32)
        case text(Range<Int>)
    }

    private let entries: [Entry]
    /// Entry indices by first scalar, longest first.
    private let byFirst: [Unicode.Scalar: [Int]]

    var isEmpty: Bool { entries.isEmpty }

    init(_ entries: [Entry]) {
        self.entries = entries
        var byFirst: [Unicode.Scalar: [Int]] = [:]
        for (i, e) in entries.enumerated() {
            guard let first = e.scalars.first else { continue }
            byFirst[first, default: []].append(i)
        }
        for key in byFirst.keys {
            byFirst[key]?.sort { entries[$0].scalars.count > entries[$1].scalars.count }
        }
        self.byFirst = byFirst
    }

    /// Splits `s` into added tokens and the text between them (empty text dropped).
    func split(_ s: [Unicode.Scalar], parseSpecial: Bool) -> [Segment] {
        guard !s.isEmpty else { return [] }
        guard !entries.isEmpty else { return [.text(0..<s.count)] }
        var segments: [Segment] = []
        var startOffset = 0
        var i = 0
        while i < s.count {
            // Leftmost-longest: the longest token starting at the first position where any starts.
            var best: Int?
            if let candidates = byFirst[s[i]] {
                for c in candidates {
                    let e = entries[c]
                    if e.onlyWhenParsingSpecial && !parseSpecial { continue }
                    let n = e.scalars.count
                    if i + n <= s.count && s[i..<(i + n)].elementsEqual(e.scalars) {
                        best = c
                        break
                    }
                }
            }
            guard let best else {
                i += 1
                continue
            }
            let entry = entries[best]
            var start = i
            var stop = i + entry.scalars.count
            i = stop
            if entry.definition.singleWord {
                let startSpace = start == 0 || !isWordScalar(s[start - 1])
                let stopSpace = stop == s.count || !isWordScalar(s[stop])
                if !startSpace || !stopSpace { continue }
            }
            if entry.definition.lstrip {
                var newStart = start
                while newStart > 0 && s[newStart - 1].properties.isWhitespace { newStart -= 1 }
                start = max(newStart, startOffset)
            }
            if entry.definition.rstrip {
                while stop < s.count && s[stop].properties.isWhitespace { stop += 1 }
            }
            if startOffset < start { segments.append(.text(startOffset..<start)) }
            segments.append(.token(entry.definition.id))
            startOffset = stop
        }
        if startOffset < s.count { segments.append(.text(startOffset..<s.count)) }
        return segments
    }
}
