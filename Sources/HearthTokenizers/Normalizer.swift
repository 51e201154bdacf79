import Foundation

/// A compiled `normalizer`: rewrites the text between added tokens before pre-tokenization.
struct Normalizer: Sendable {
    private enum Step: Sendable {
        case nfc, nfd, nfkc, nfkd, lowercase
        case prepend([Unicode.Scalar])
        case replaceLiteral([Unicode.Scalar], with: [Unicode.Scalar])
        case replaceRegex(RegexMatcher, with: [Unicode.Scalar])
        case strip(left: Bool, right: Bool)
    }

    private let steps: [Step]

    init(_ definition: NormalizerDefinition, path: String?) throws {
        var steps: [Step] = []
        func add(_ d: NormalizerDefinition, key: String) throws {
            switch d {
            case .nfc: steps.append(.nfc)
            case .nfd: steps.append(.nfd)
            case .nfkc: steps.append(.nfkc)
            case .nfkd: steps.append(.nfkd)
            case .lowercase: steps.append(.lowercase)
            case .prepend(let text): steps.append(.prepend(Array(text.unicodeScalars)))
            case .replace(.string(let pattern), let content):
                // tokenizers matches nothing with an empty pattern.
                if !pattern.isEmpty {
                    steps.append(.replaceLiteral(Array(pattern.unicodeScalars), with: Array(content.unicodeScalars)))
                }
            case .replace(.regex(let source), let content):
                steps.append(
                    .replaceRegex(try RegexMatcher(source, path: path, key: key), with: Array(content.unicodeScalars)))
            case .strip(let left, let right): steps.append(.strip(left: left, right: right))
            case .sequence(let list):
                for (i, item) in list.enumerated() { try add(item, key: "\(key).normalizers[\(i)]") }
            }
        }
        try add(definition, key: "normalizer")
        self.steps = steps
    }

    func normalize(_ input: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var s = input
        for step in steps {
            switch step {
            case .nfc: s = Self.scalars(Self.string(s).precomposedStringWithCanonicalMapping)
            case .nfd: s = Self.scalars(Self.string(s).decomposedStringWithCanonicalMapping)
            case .nfkc: s = Self.scalars(Self.string(s).precomposedStringWithCompatibilityMapping)
            case .nfkd: s = Self.scalars(Self.string(s).decomposedStringWithCompatibilityMapping)
            case .lowercase:
                // Full Unicode lowercase mapping per scalar, like Rust's `str::to_lowercase`.
                var out: [Unicode.Scalar] = []
                out.reserveCapacity(s.count)
                for scalar in s { out.append(contentsOf: scalar.properties.lowercaseMapping.unicodeScalars) }
                s = out
            case .prepend(let prefix):
                if !s.isEmpty { s = prefix + s }
            case .replaceLiteral(let pattern, let content):
                s = replace(s, ranges: literalMatches(of: pattern, in: s[...]), with: content)
            case .replaceRegex(let regex, let content):
                s = replace(s, ranges: regex.matches(in: s[...]), with: content)
            case .strip(let left, let right):
                var lo = 0, hi = s.count
                if left { while lo < hi && s[lo].properties.isWhitespace { lo += 1 } }
                if right { while hi > lo && s[hi - 1].properties.isWhitespace { hi -= 1 } }
                s = Array(s[lo..<hi])
            }
        }
        return s
    }

    private func replace(_ s: [Unicode.Scalar], ranges: [Range<Int>], with content: [Unicode.Scalar]) -> [Unicode.Scalar] {
        guard !ranges.isEmpty else { return s }
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(s.count)
        var last = 0
        for r in ranges {
            out.append(contentsOf: s[last..<r.lowerBound])
            out.append(contentsOf: content)
            last = r.upperBound
        }
        out.append(contentsOf: s[last...])
        return out
    }

    static func string(_ scalars: [Unicode.Scalar]) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars)
        return String(view)
    }

    static func scalars(_ string: String) -> [Unicode.Scalar] { Array(string.unicodeScalars) }
}

/// Non-overlapping occurrences of a literal, left to right (what a regex of the escaped literal finds).
func literalMatches(of pattern: [Unicode.Scalar], in s: ArraySlice<Unicode.Scalar>) -> [Range<Int>] {
    guard !pattern.isEmpty, s.count >= pattern.count else { return [] }
    var out: [Range<Int>] = []
    var i = s.startIndex
    let first = pattern[0]
    while i + pattern.count <= s.endIndex {
        if s[i] == first && s[i..<(i + pattern.count)].elementsEqual(pattern) {
            out.append(i..<(i + pattern.count))
            i += pattern.count
        } else {
            i += 1
        }
    }
    return out
}

/// A regex Hearth has no hand-written scanner for, run by Swift's `Regex` on Unicode scalars.
struct RegexMatcher: @unchecked Sendable {
    // @unchecked: `Regex` is an immutable value once built; matching does not mutate it.
    private let regex: Regex<AnyRegexOutput>
    let source: String

    init(_ source: String, path: String?, key: String) throws {
        self.source = source
        do {
            regex = try Regex(source).matchingSemantics(.unicodeScalar)
        } catch {
            throw TokenizerError(
                .unsupported, "regex \(source.debugDescription) is not supported: \(error)", path: path, key: key,
                remedy: "Hearth runs the GPT-2, cl100k/Llama 3, Qwen 2 and o200k patterns natively and others with Swift Regex")
        }
    }

    /// Matches as scalar offsets into `s`'s indices, left to right, non-overlapping.
    func matches(in s: ArraySlice<Unicode.Scalar>) -> [Range<Int>] {
        let text = Normalizer.string(Array(s))
        var out: [Range<Int>] = []
        var index = text.unicodeScalars.startIndex
        var offset = s.startIndex
        func advance(to target: String.Index) -> Int {
            while index < target {
                text.unicodeScalars.formIndex(after: &index)
                offset += 1
            }
            return offset
        }
        for match in text.matches(of: regex) {
            let lower = advance(to: match.range.lowerBound)
            let upper = advance(to: match.range.upperBound)
            if upper > lower { out.append(lower..<upper) }
        }
        return out
    }
}
