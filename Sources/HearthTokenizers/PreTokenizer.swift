/// A piece of text on its way to the model: a slice of scalars, and whether it begins at the very
/// start of the input (`Metaspace`'s `prepend_scheme: first` looks at that).
struct Piece {
    var scalars: ArraySlice<Unicode.Scalar>
    var atStart: Bool
}

/// What a `Split`-like step searches for.
enum SplitMatcher: Sendable {
    case literal([Unicode.Scalar])
    case known(KnownSplitPattern)
    case regex(RegexMatcher)
    /// Every scalar passing the test is a one-scalar match (tokenizers' `Fn(char) -> bool` pattern).
    case scalar(@Sendable (Unicode.Scalar) -> Bool)
    /// `\w+|[^\w\s]+` (the `Whitespace` pre-tokenizer).
    case wordsAndSymbols

    /// The matches in `s` (absolute indices), left to right.
    func matches(in s: ArraySlice<Unicode.Scalar>) -> [Range<Int>] {
        switch self {
        case .literal(let pattern): return literalMatches(of: pattern, in: s)
        case .known(let pattern): return pattern.matches(in: s)
        case .regex(let regex): return regex.matches(in: s)
        case .scalar(let test): return s.indices.filter { test(s[$0]) }.map { $0..<($0 + 1) }
        case .wordsAndSymbols:
            var out: [Range<Int>] = []
            var i = s.startIndex
            while i < s.endIndex {
                let word = isWordScalar(s[i])
                if !word && s[i].properties.isWhitespace {
                    i += 1
                    continue
                }
                var j = i + 1
                while j < s.endIndex && isWordScalar(s[j]) == word && (word || !s[j].properties.isWhitespace) { j += 1 }
                out.append(i..<j)
                i = j
            }
            return out
        }
    }
}

/// Rust regex's Unicode `\w`: alphabetic, marks, decimal digits, connector punctuation, joiners.
func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
    let p = scalar.properties
    if p.isAlphabetic || p.isJoinControl { return true }
    switch p.generalCategory {
    case .nonspacingMark, .spacingMark, .enclosingMark, .decimalNumber, .connectorPunctuation: return true
    default: return false
    }
}

/// A compiled `pre_tokenizer`: splits each piece into the words the model sees.
struct PreTokenizer: Sendable {
    private enum Step: Sendable {
        case split(SplitMatcher, SplitBehavior, invert: Bool)
        case byteLevel(addPrefixSpace: Bool, useRegex: Bool)
        case metaspace(replacement: Unicode.Scalar, prependScheme: PrependScheme, split: Bool)
    }

    private let steps: [Step]
    /// Whether pieces leave in GPT-2's byte-level alphabet.
    let isByteLevel: Bool
    /// The known split pattern in use, for descriptions.
    let patternName: String?

    init(_ definition: PreTokenizerDefinition?, path: String?) throws {
        var steps: [Step] = []
        var pattern: String?
        func add(_ d: PreTokenizerDefinition, key: String) throws {
            switch d {
            case .split(.string(let literal), let behavior, let invert):
                steps.append(.split(.literal(Array(literal.unicodeScalars)), behavior, invert: invert))
            case .split(.regex(let source), let behavior, let invert):
                if let known = KnownSplitPattern(regex: source) {
                    pattern = pattern ?? known.name
                    steps.append(.split(.known(known), behavior, invert: invert))
                } else {
                    steps.append(.split(.regex(try RegexMatcher(source, path: path, key: key + ".pattern")), behavior, invert: invert))
                }
            case .byteLevel(let addPrefixSpace, let useRegex):
                if useRegex { pattern = pattern ?? KnownSplitPattern.gpt2.name }
                steps.append(.byteLevel(addPrefixSpace: addPrefixSpace, useRegex: useRegex))
            case .metaspace(let replacement, let scheme, let split):
                steps.append(.metaspace(replacement: replacement, prependScheme: scheme, split: split))
            case .digits(let individual):
                steps.append(
                    .split(.scalar({ ScalarClass.of($0).contains(.number) }), individual ? .isolated : .contiguous, invert: false))
            case .whitespace:
                steps.append(.split(.wordsAndSymbols, .removed, invert: true))
            case .whitespaceSplit:
                steps.append(.split(.scalar({ $0.properties.isWhitespace }), .removed, invert: false))
            case .punctuation(let behavior):
                steps.append(.split(.scalar(isPunctuation), behavior, invert: false))
            case .sequence(let list):
                for (i, item) in list.enumerated() { try add(item, key: "\(key).pretokenizers[\(i)]") }
            }
        }
        if let definition { try add(definition, key: "pre_tokenizer") }
        self.steps = steps
        isByteLevel = steps.contains {
            if case .byteLevel = $0 { return true }
            return false
        }
        patternName = pattern
    }

    /// A pre-tokenizer made of known steps (GGUF vocabularies).
    init(byteLevelWith patterns: [SplitMatcher]) {
        steps = patterns.map { .split($0, .isolated, invert: false) } + [.byteLevel(addPrefixSpace: false, useRegex: false)]
        isByteLevel = true
        patternName = patterns.lazy.compactMap {
            if case .known(let p) = $0 { return p.name }
            return nil
        }.first
    }

    /// Splits one piece of input (text between added tokens) into words.
    func split(_ input: Piece) -> [Piece] {
        var pieces = input.scalars.isEmpty ? [] : [input]
        for step in steps {
            var next: [Piece] = []
            next.reserveCapacity(pieces.count)
            for piece in pieces {
                switch step {
                case .split(let matcher, let behavior, let invert):
                    Self.split(piece, matcher: matcher, behavior: behavior, invert: invert, into: &next)
                case .byteLevel(let addPrefixSpace, let useRegex):
                    var piece = piece
                    if addPrefixSpace && piece.scalars.first != " " {
                        piece.scalars = ([" "] + piece.scalars)[...]
                    }
                    var parts: [Piece] = []
                    if useRegex {
                        Self.split(piece, matcher: .known(.gpt2), behavior: .isolated, invert: false, into: &parts)
                    } else {
                        parts = [piece]
                    }
                    for part in parts {
                        next.append(Piece(scalars: ByteLevelAlphabet.encode(part.scalars)[...], atStart: part.atStart))
                    }
                case .metaspace(let replacement, let scheme, let split):
                    var scalars = piece.scalars.map { $0 == " " ? replacement : $0 }
                    let prepend: Bool
                    switch scheme {
                    case .always: prepend = scalars.first != replacement
                    case .first: prepend = scalars.first != replacement && piece.atStart
                    case .never: prepend = false
                    }
                    if prepend { scalars.insert(replacement, at: 0) }
                    let replaced = Piece(scalars: scalars[...], atStart: piece.atStart)
                    if split {
                        Self.split(replaced, matcher: .literal([replacement]), behavior: .mergedWithNext, invert: false, into: &next)
                    } else {
                        next.append(replaced)
                    }
                }
            }
            pieces = next
        }
        return pieces
    }

    /// tokenizers' `NormalizedString::split`: matches and gaps, grouped by `behavior`, empty pieces dropped.
    private static func split(
        _ piece: Piece, matcher: SplitMatcher, behavior: SplitBehavior, invert: Bool, into out: inout [Piece]
    ) {
        let s = piece.scalars
        guard !s.isEmpty else { return }
        // Cover the whole piece with (range, isMatch), as tokenizers' Pattern::find_matches does.
        var parts: [(Range<Int>, Bool)] = []
        var last = s.startIndex
        for m in matcher.matches(in: s) {
            if last < m.lowerBound { parts.append((last..<m.lowerBound, invert)) }
            parts.append((m, !invert))
            last = m.upperBound
        }
        if last < s.endIndex { parts.append((last..<s.endIndex, invert)) }

        var kept: [Range<Int>] = []
        switch behavior {
        case .isolated:
            kept = parts.map(\.0)
        case .removed:
            kept = parts.filter { !$0.1 }.map(\.0)
        case .contiguous:
            kept = joined(parts) { isMatch, previous in isMatch == previous }
        case .mergedWithPrevious:
            kept = joined(parts) { isMatch, previous in isMatch && !previous }
        case .mergedWithNext:
            kept = joined(parts.reversed()) { isMatch, previous in isMatch && !previous }.reversed()
        }
        for range in kept where !range.isEmpty {
            out.append(Piece(scalars: s[range], atStart: piece.atStart && range.lowerBound == s.startIndex))
        }
    }

    /// The parts' ranges in the order given, each joined to the range kept before it when
    /// `joins(isMatch, previousIsMatch)` (adjacent ranges: the join is their union).
    private static func joined(
        _ parts: some Sequence<(Range<Int>, Bool)>, joins: (_ isMatch: Bool, _ previous: Bool) -> Bool
    ) -> [Range<Int>] {
        var kept: [Range<Int>] = []
        var previous = false
        for (range, isMatch) in parts {
            if joins(isMatch, previous), let other = kept.last {
                kept[kept.count - 1] = min(other.lowerBound, range.lowerBound)..<max(other.upperBound, range.upperBound)
            } else {
                kept.append(range)
            }
            previous = isMatch
        }
        return kept
    }
}

/// tokenizers' `is_punc`: ASCII punctuation or a Unicode punctuation category.
@Sendable func isPunctuation(_ scalar: Unicode.Scalar) -> Bool {
    if scalar.isASCII {
        let v = scalar.value
        return (0x21...0x2F).contains(v) || (0x3A...0x40).contains(v) || (0x5B...0x60).contains(v)
            || (0x7B...0x7E).contains(v)
    }
    switch scalar.properties.generalCategory {
    case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation, .initialPunctuation,
        .finalPunctuation, .otherPunctuation:
        return true
    default:
        return false
    }
}
