/// Unicode classes the pre-tokenizer patterns use, one bit each.
struct ScalarClass: OptionSet, Sendable {
    let rawValue: UInt8

    /// Lu, Lt.
    static let upper = ScalarClass(rawValue: 1 << 0)
    /// Ll.
    static let lower = ScalarClass(rawValue: 1 << 1)
    /// Lm, Lo (letters without case).
    static let caseless = ScalarClass(rawValue: 1 << 2)
    /// Mn, Mc, Me.
    static let mark = ScalarClass(rawValue: 1 << 3)
    /// Nd, Nl, No.
    static let number = ScalarClass(rawValue: 1 << 4)
    /// The White_Space property (what Oniguruma's and Rust's `\s` match).
    static let space = ScalarClass(rawValue: 1 << 5)
    /// `\r` or `\n`.
    static let newline = ScalarClass(rawValue: 1 << 6)

    static let letter: ScalarClass = [.upper, .lower, .caseless]

    private static let ascii: [ScalarClass] = (0..<128).map { classify(Unicode.Scalar(UInt8($0))) }

    /// The class of one scalar (a table lookup for ASCII).
    static func of(_ scalar: Unicode.Scalar) -> ScalarClass {
        scalar.value < 128 ? ascii[Int(scalar.value)] : classify(scalar)
    }

    private static func classify(_ scalar: Unicode.Scalar) -> ScalarClass {
        var result: ScalarClass = []
        let properties = scalar.properties
        switch properties.generalCategory {
        case .uppercaseLetter, .titlecaseLetter: result.insert(.upper)
        case .lowercaseLetter: result.insert(.lower)
        case .modifierLetter, .otherLetter: result.insert(.caseless)
        case .nonspacingMark, .spacingMark, .enclosingMark: result.insert(.mark)
        case .decimalNumber, .letterNumber, .otherNumber: result.insert(.number)
        default: break
        }
        if properties.isWhitespace { result.insert(.space) }
        if scalar == "\r" || scalar == "\n" { result.insert(.newline) }
        return result
    }

    /// Classes of every scalar of a piece.
    static func of(_ scalars: ArraySlice<Unicode.Scalar>) -> [ScalarClass] {
        scalars.map { of($0) }
    }
}

/// The pre-tokenizer regexes of well-known tokenizers, recognised by their exact text in
/// tokenizer.json (or by GGUF's `tokenizer.ggml.pre`) and run by hand-written scanners that
/// reproduce the regex engine's leftmost, ordered-alternation, backtracking semantics exactly —
/// faster than a regex engine, and with the same Unicode classes Oniguruma uses.
enum KnownSplitPattern: Sendable, Equatable {
    /// GPT-2: `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`.
    case gpt2
    /// cl100k / Llama 3 (`maxDigits` 3) and Qwen 2 (`maxDigits` 1):
    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`.
    case cl100k(maxDigits: Int)
    /// o200k (GPT-4o, Phi-4-mini): cased words with an optional contraction suffix,
    /// `\p{N}{1,3}`, punctuation runs with trailing `[\r\n/]*`, then the whitespace rules.
    case o200k

    static let gpt2Regex = #"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"#
    static let llama3Regex =
        #"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"#
    /// tiktoken's own spelling of cl100k (possessive quantifiers; the same matches).
    static let cl100kRegex =
        #"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+"#
    static let qwen2Regex =
        #"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"#
    static let o200kRegex =
        #"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"#

    /// The scanner for a regex source, if it is one of the known patterns.
    init?(regex: String) {
        switch regex {
        case Self.gpt2Regex: self = .gpt2
        case Self.llama3Regex, Self.cl100kRegex: self = .cl100k(maxDigits: 3)
        case Self.qwen2Regex: self = .cl100k(maxDigits: 1)
        case Self.o200kRegex: self = .o200k
        default: return nil
        }
    }

    /// A short name for descriptions ("o200k").
    var name: String {
        switch self {
        case .gpt2: return "gpt2"
        case .cl100k(let digits): return digits == 3 ? "cl100k" : "qwen2"
        case .o200k: return "o200k"
        }
    }

    /// The non-overlapping matches, left to right, as `find_iter` reports them.
    func matches(in s: ArraySlice<Unicode.Scalar>) -> [Range<Int>] {
        let c = ScalarClass.of(s)
        let base = s.startIndex
        var out: [Range<Int>] = []
        var i = 0
        while i < c.count {
            let end = match(s, c, base: base, at: i)
            if end > i {
                out.append((base + i)..<(base + end))
                i = end
            } else {
                i += 1
            }
        }
        return out
    }

    // Long: the pre-tokenizer's regular expression written out by hand: one branch per alternative of
    // the pattern (contractions, letters, numbers, punctuation, spaces), in the pattern's order, which
    // decides the match; the branches share the small run helpers at the top.
    /// End of the match starting at `i` (relative to `base`), or `i` when none starts there.
    private func match(_ s: ArraySlice<Unicode.Scalar>, _ c: [ScalarClass], base: Int, at i: Int) -> Int {
        let n = c.count
        func scalar(_ k: Int) -> Unicode.Scalar { s[base + k] }
        func run(_ from: Int, _ test: (ScalarClass) -> Bool) -> Int {
            var k = from
            while k < n && test(c[k]) { k += 1 }
            return k
        }
        let isLetter: (ScalarClass) -> Bool = { !$0.isDisjoint(with: .letter) }
        let isNumber: (ScalarClass) -> Bool = { $0.contains(.number) }
        let isSpace: (ScalarClass) -> Bool = { $0.contains(.space) }
        /// `[^\s\p{L}\p{N}]`
        let isOther: (ScalarClass) -> Bool = { $0.isDisjoint(with: [.space, .upper, .lower, .caseless, .number]) }
        /// `[^\r\n\p{L}\p{N}]`
        let isPrefix: (ScalarClass) -> Bool = { $0.isDisjoint(with: [.newline, .upper, .lower, .caseless, .number]) }

        /// `\s*[\r\n]+`, `\s+(?!\S)`, `\s+` at a whitespace scalar.
        func whitespace(withNewlineRule: Bool) -> Int {
            let end = run(i, isSpace)
            if withNewlineRule {
                var p = end - 1
                while p >= i && !c[p].contains(.newline) { p -= 1 }
                if p >= i { return p + 1 }
            }
            if end == n { return end }
            if end - i >= 2 { return end - 1 }
            return end
        }

        switch self {
        case .gpt2:
            if let end = contraction(s, base: base, at: i, count: n, caseInsensitive: false) { return end }
            let afterSpace = scalar(i) == " " && i + 1 < n
            if afterSpace && isLetter(c[i + 1]) { return run(i + 1, isLetter) }
            if isLetter(c[i]) { return run(i, isLetter) }
            if afterSpace && isNumber(c[i + 1]) { return run(i + 1, isNumber) }
            if isNumber(c[i]) { return run(i, isNumber) }
            if afterSpace && isOther(c[i + 1]) { return run(i + 1, isOther) }
            if isOther(c[i]) { return run(i, isOther) }
            if isSpace(c[i]) { return whitespace(withNewlineRule: false) }
            return i

        case .cl100k(let maxDigits):
            if let end = contraction(s, base: base, at: i, count: n, caseInsensitive: true) { return end }
            if isPrefix(c[i]) && i + 1 < n && isLetter(c[i + 1]) { return run(i + 1, isLetter) }
            if isLetter(c[i]) { return run(i, isLetter) }
            if isNumber(c[i]) { return min(run(i, isNumber), i + maxDigits) }
            if let end = punctuation(trailing: { $0 == "\r" || $0 == "\n" }) { return end }
            if isSpace(c[i]) { return whitespace(withNewlineRule: true) }
            return i

        case .o200k:
            /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
            let isU: (ScalarClass) -> Bool = { !$0.isDisjoint(with: [.upper, .caseless, .mark]) }
            /// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
            let isW: (ScalarClass) -> Bool = { !$0.isDisjoint(with: [.lower, .caseless, .mark]) }
            func suffix(_ end: Int) -> Int {
                contraction(s, base: base, at: end, count: n, caseInsensitive: true) ?? end
            }
            // U*W+: U* is greedy and gives back one scalar at a time until W+ can start.
            func casedLowerWord(from j: Int) -> Int? {
                let u = run(j, isU)
                var q = u
                while !(q < n && isW(c[q])) {
                    if q == j { return nil }
                    q -= 1
                }
                return suffix(q == u ? run(u, isW) : q + 1)
            }
            // U+W*: nothing after U+ can fail, so no backtracking.
            func casedUpperWord(from j: Int) -> Int? {
                guard j < n, isU(c[j]) else { return nil }
                return suffix(run(run(j, isU), isW))
            }
            let hasPrefix = isPrefix(c[i]) && i + 1 < n
            if hasPrefix, let end = casedLowerWord(from: i + 1) { return end }
            if let end = casedLowerWord(from: i) { return end }
            if hasPrefix, let end = casedUpperWord(from: i + 1) { return end }
            if let end = casedUpperWord(from: i) { return end }
            if isNumber(c[i]) { return min(run(i, isNumber), i + 3) }
            if let end = punctuation(trailing: { $0 == "\r" || $0 == "\n" || $0 == "/" }) { return end }
            if isSpace(c[i]) { return whitespace(withNewlineRule: true) }
            return i
        }

        /// ` ?[^\s\p{L}\p{N}]+` followed by any run of `trailing` scalars.
        func punctuation(trailing: (Unicode.Scalar) -> Bool) -> Int? {
            let start: Int
            if scalar(i) == " " && i + 1 < n && isOther(c[i + 1]) {
                start = i + 1
            } else if isOther(c[i]) {
                start = i
            } else {
                return nil
            }
            var end = run(start, isOther)
            while end < n && trailing(scalar(end)) { end += 1 }
            return end
        }
    }

    /// `'s|'t|'re|'ve|'m|'ll|'d` at `i` (optionally case-insensitive, with Unicode simple case
    /// folding as Oniguruma applies it: ſ matches s, K matches k).
    private func contraction(
        _ s: ArraySlice<Unicode.Scalar>, base: Int, at i: Int, count n: Int, caseInsensitive: Bool
    ) -> Int? {
        guard i + 1 < n, s[base + i] == "'" else { return nil }
        func letter(_ k: Int) -> Unicode.Scalar? {
            guard k < n else { return nil }
            let x = s[base + k]
            guard caseInsensitive else { return x }
            switch x.value {
            case 0x41...0x5A: return Unicode.Scalar(x.value + 0x20)
            case 0x17F: return "s"
            case 0x212A: return "k"
            default: return x
            }
        }
        switch letter(i + 1) {
        case "s", "t", "m", "d": return i + 2
        case "r", "v": return letter(i + 2) == "e" ? i + 3 : nil
        case "l": return letter(i + 2) == "l" ? i + 3 : nil
        default: return nil
        }
    }
}

/// The regex sources of the pre-tokenizer patterns Hearth scans natively (a `Split` with one of
/// these exact strings, or a GGUF `tokenizer.ggml.pre` naming one, never reaches a regex engine).
package enum KnownPatternSource {
    /// GPT-2's (also used by tokenizers' `ByteLevel` pre-tokenizer with `use_regex`).
    package static let gpt2 = KnownSplitPattern.gpt2Regex
    /// cl100k as Llama 3's tokenizer.json writes it.
    package static let llama3 = KnownSplitPattern.llama3Regex
    /// Qwen 2's: cl100k with single digits.
    package static let qwen2 = KnownSplitPattern.qwen2Regex
    /// o200k (GPT-4o, Phi-4-mini).
    package static let o200k = KnownSplitPattern.o200kRegex
}
