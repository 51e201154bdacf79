import Foundation

/// A SentencePiece-style tokenizer built from a vocabulary with scores (GGUF's `llama`
/// tokenizer model: `tokenizer.ggml.tokens`, `scores`, `token_type`), written in Swift.
///
/// Encoding follows the SentencePiece BPE procedure llama.cpp uses: spaces become `▁`
/// (with an optional leading one), the text splits into characters, and the adjacent pair
/// whose concatenation is the highest-scoring vocabulary entry merges first, until no pair
/// merges. Pieces missing from the vocabulary fall back to `<0xNN>` byte tokens.
/// User-defined tokens are always matched as whole tokens; control tokens only when
/// `parseSpecial` is set (chat templates).
package final class VocabularyTokenizer: Tokenizer {
    /// GGUF's token types.
    package enum TokenType: Int32, Sendable {
        case normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6
    }

    package let tokens: [String]
    package let scores: [Float]
    package let types: [TokenType]
    package let vocabularySize: Int
    package let bosID: Int32?
    package let addsBOS: Bool
    private let addsEOS: Bool
    private let eosID: Int32?
    package let eosIDs: Set<Int32>
    package let chatTemplate: ChatTemplate?
    /// Prepend `▁` to the text (SentencePiece's dummy prefix).
    package let addSpacePrefix: Bool
    package var kind: String { "sentencepiece (from vocabulary)" }

    /// Piece bytes → the first id with those bytes.
    private let table: PieceTable
    /// Per id, whether a merge may produce it.
    private let mergeableIDs: [Bool]
    private let byteIDs: [Int32?]
    private let unknownID: Int32?
    private let tokenBytes: [[UInt8]?]
    private let specials: SpecialTokenTrie
    /// Mergeable pieces with a `▁` after their first byte (Gemma 3 has one, `>▁</`), or nil
    /// when there are so many that long runs are not cut (``chunkEnd(_:from:)``).
    private let innerSpacePieces: [InnerSpacePiece]?

    /// Builds the tokenizer. Arrays must have equal, non-zero length.
    /// The token's UTF-8 with every U+2581 (▁) made a space, as
    /// `token.replacingOccurrences(of: "\u{2581}", with: " ")` gives it. Byte by byte where
    /// that is the same — every ▁ with only ASCII, another ▁ or the token's ends beside it,
    /// so no combining or prepended mark can join it — which is almost every token and much
    /// faster on a 262k vocabulary; through Foundation otherwise.
    static func spacedBytes(_ token: String) -> [UInt8] {
        func foundation() -> [UInt8] { Array(token.replacingOccurrences(of: "\u{2581}", with: " ").utf8) }
        let bytes = Array(token.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        // Whether the last character written was ASCII or a ▁ (or nothing yet), and whether it was a ▁.
        var previousPlain = true, previousSpace = false
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b < 0x80 {
                out.append(b)
                previousPlain = true
                previousSpace = false
                i += 1
            } else if i + 2 < bytes.count && b == 0xE2 && bytes[i + 1] == 0x96 && bytes[i + 2] == 0x81 {
                guard previousPlain else { return foundation() }
                out.append(0x20)
                previousPlain = true
                previousSpace = true
                i += 3
            } else {
                if previousSpace { return foundation() }
                out.append(b)
                previousPlain = false
                i += 1
            }
        }
        return out
    }

    package init(
        tokens: [String], scores: [Float]?, types: [Int32]?, bos: Int32?, eos: Int32?, unknown: Int32?,
        addBOS: Bool, addEOS: Bool, addSpacePrefix: Bool, extraStopTokens: [Int32] = [], chatTemplate: ChatTemplate?
    ) throws {
        guard !tokens.isEmpty else { throw TokenizerError(.invalidModel, "the vocabulary is empty") }
        let scores = scores ?? [Float](repeating: 0, count: tokens.count)
        let rawTypes = types ?? [Int32](repeating: 1, count: tokens.count)
        guard scores.count == tokens.count, rawTypes.count == tokens.count else {
            throw TokenizerError(
                .invalidModel, "vocabulary arrays disagree: \(tokens.count) tokens, \(scores.count) scores, \(rawTypes.count) types")
        }
        for id in [bos, eos, unknown].compactMap({ $0 }) where id < 0 || Int(id) >= tokens.count {
            throw TokenizerError(.invalidModel, "special token id \(id) is outside the vocabulary (\(tokens.count))")
        }
        self.tokens = tokens
        self.scores = scores
        self.types = rawTypes.map { TokenType(rawValue: $0) ?? .normal }
        vocabularySize = tokens.count
        bosID = bos
        eosID = eos
        addsBOS = addBOS
        addsEOS = addEOS
        self.addSpacePrefix = addSpacePrefix
        self.chatTemplate = chatTemplate
        unknownID = unknown

        var byteIDs = [Int32?](repeating: nil, count: 256)
        var tokenBytes: [[UInt8]?] = []
        tokenBytes.reserveCapacity(tokens.count)
        var specials: [(bytes: [UInt8], id: Int32, control: Bool)] = []
        for (i, token) in tokens.enumerated() {
            let id = Int32(i)
            switch self.types[i] {
            case .byte:
                let byte = token.count == 6 && token.hasPrefix("<0x") ? UInt8(token.dropFirst(3).dropLast(), radix: 16) : nil
                if let byte { byteIDs[Int(byte)] = id }
                tokenBytes.append(byte.map { [$0] } ?? [])
            case .control, .unused:
                tokenBytes.append(nil)
                if self.types[i] == .control && !token.isEmpty { specials.append((Array(token.utf8), id, true)) }
            case .unknown:
                tokenBytes.append(Array(" \u{2047} ".utf8))
            case .userDefined:
                tokenBytes.append(Array(token.utf8))
                if !token.isEmpty { specials.append((Array(token.utf8), id, false)) }
            case .normal:
                tokenBytes.append(Self.spacedBytes(token))
            }
        }
        table = PieceTable(pieces: tokens)
        mergeableIDs = self.types.map { $0 == .normal || $0 == .userDefined || $0 == .unused }
        self.byteIDs = byteIDs
        self.tokenBytes = tokenBytes
        self.specials = SpecialTokenTrie(specials)
        var inner: [InnerSpacePiece] = []
        for (i, token) in tokens.enumerated() where mergeableIDs[i] {
            let bytes = Array(token.utf8)
            let offsets = bytes.indices.dropFirst().filter {
                $0 + 3 <= bytes.count && bytes[$0] == 0xE2 && bytes[$0 + 1] == 0x96 && bytes[$0 + 2] == 0x81
            }
            if !offsets.isEmpty { inner.append(InnerSpacePiece(bytes: bytes, offsets: offsets)) }
        }
        innerSpacePieces = inner.count <= 64 ? inner : nil
        var stop = Set(extraStopTokens)
        if let eos { stop.insert(eos) }
        eosIDs = stop
    }

    package func bytes(of id: Int32) -> [UInt8]? {
        guard id >= 0, Int(id) < tokenBytes.count else { return nil }
        return tokenBytes[Int(id)]
    }

    package func token(_ id: Int32) -> String? { id >= 0 && Int(id) < tokens.count ? tokens[Int(id)] : nil }

    package func isSpecial(_ id: Int32) -> Bool {
        guard id >= 0, Int(id) < types.count else { return false }
        return types[Int(id)] == .control || types[Int(id)] == .unused
    }

    package func id(of token: String) -> Int32? { table.id(of: token) }

    package func encode(_ text: String, addSpecialTokens: Bool) throws -> [Int32] {
        try encode(text, addSpecialTokens: addSpecialTokens, parseSpecial: !addSpecialTokens)
    }

    /// Encodes with explicit control over matching control tokens written in the text.
    package func encode(_ text: String, addSpecialTokens: Bool, parseSpecial: Bool) throws -> [Int32] {
        encode(text, addSpecialTokens: addSpecialTokens, parseSpecial: parseSpecial, limit: Int.max) ?? []
    }

    /// Stops as soon as more than `limit` ids are certain. Exact, because the text is encoded
    /// one run at a time and runs do not interact: a run ends where a special token written in
    /// the text begins, the special is one id of its own, and merging never crosses it. So
    /// the ids of the runs encoded so far are the first ids of the whole answer.
    package func encode(_ text: String, addSpecialTokens: Bool, limit: Int) throws -> [Int32]? {
        encode(text, addSpecialTokens: addSpecialTokens, parseSpecial: !addSpecialTokens, limit: limit)
    }

    private func encode(_ text: String, addSpecialTokens: Bool, parseSpecial: Bool, limit: Int) -> [Int32]? {
        var out: [Int32] = []
        if addSpecialTokens && addsBOS, let bosID { out.append(bosID) }
        var text = text
        let finished: Bool = text.withUTF8 { bytes in
            var start = 0, i = 0
            var atStart = true
            var normalized: [UInt8] = []
            var merger = Merger()
            /// Encodes the run before `end`, a chunk at a time; false once past the limit.
            func flush(_ end: Int) -> Bool {
                guard start < end else { return true }
                normalize(UnsafeBufferPointer(rebasing: bytes[start..<end]), prefix: atStart, into: &normalized)
                atStart = false
                return normalized.withUnsafeBufferPointer { run in
                    var from = 0
                    while from < run.count {
                        let to = chunkEnd(run, from: from)
                        merger.encode(UnsafeBufferPointer(rebasing: run[from..<to]), tokenizer: self, into: &out)
                        if out.count > limit { return false }
                        from = to
                    }
                    return true
                }
            }
            while i < bytes.count {
                if let special = specials.match(bytes, at: i, parseSpecial: parseSpecial) {
                    guard flush(i) else { return false }
                    out.append(special.id)
                    atStart = false
                    i += special.length
                    start = i
                    if out.count > limit { return false }
                } else {
                    i += 1
                }
            }
            return flush(bytes.count)
        }
        if addSpecialTokens && addsEOS, let eosID { out.append(eosID) }
        return finished && out.count <= limit ? out : nil
    }

    /// Where the chunk of a normalized run that begins at `from` may end: the first `▁` at
    /// least ``chunkBytes`` on that no merge can cross, else the end of the run. Cutting there
    /// changes nothing: every symbol is a single character or a mergeable piece, so a symbol
    /// that spanned the cut would be an occurrence of a piece with a `▁` after its first byte
    /// (``innerSpacePieces``) with that `▁` at the cut; where none occurs in the text, the cut
    /// is a boundary of every symbol at every step, no candidate pair spans it, and each side
    /// sees the same merges in the same order (score, then leftmost) as it would alone.
    private func chunkEnd(_ run: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        guard let pieces = innerSpacePieces else { return run.count }
        var p = from + Self.chunkBytes
        while p + 3 <= run.count {
            if run[p] == 0xE2 && run[p + 1] == 0x96 && run[p + 2] == 0x81
                && !pieces.contains(where: { $0.occurs(in: run, withSpaceAt: p) })
            {
                return p
            }
            p += 1
        }
        return run.count
    }

    /// Chunks of a long run are about this long (bytes); the limited encoding checks its count
    /// after each one.
    static let chunkBytes = 2048

    /// SentencePiece's whitespace escaping: every space becomes `▁` (E2 96 81), with one more
    /// in front when the run begins the text and the vocabulary asks for a dummy prefix.
    private func normalize(_ run: UnsafeBufferPointer<UInt8>, prefix: Bool, into normalized: inout [UInt8]) {
        normalized.removeAll(keepingCapacity: true)
        normalized.reserveCapacity(run.count + 3)
        if prefix && addSpacePrefix { normalized += [0xE2, 0x96, 0x81] }
        for byte in run {
            if byte == 0x20 { normalized += [0xE2, 0x96, 0x81] } else { normalized.append(byte) }
        }
    }

    /// Whether a piece may be the result of a merge (llama.cpp's rule: normal, user-defined
    /// and unused pieces).
    fileprivate func mergeable(_ id: Int32) -> Bool { mergeableIDs[Int(id)] }

    fileprivate func score(_ id: Int32) -> Float { scores[Int(id)] }

    fileprivate func pieceID(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32? { table.id(of: bytes) }

    /// A piece that is not in the vocabulary as `<0xNN>` byte tokens (or the unknown token).
    fileprivate func appendBytes(of piece: UnsafeBufferPointer<UInt8>, into out: inout [Int32]) {
        for byte in piece {
            if let id = byteIDs[Int(byte)] {
                out.append(id)
            } else if let unknownID {
                out.append(unknownID)
            }
        }
    }
}

/// SentencePiece BPE over one run of normalized text without special tokens (llama.cpp's
/// `llm_tokenizer_spm`): the text starts as one symbol per character; the adjacent pair whose
/// concatenation is the highest-scoring mergeable piece merges first (the leftmost among equal
/// scores), until no pair merges. Symbols are byte ranges of the run, linked both ways; the
/// candidate pairs wait in a heap and a popped pair whose sides changed since it was pushed is
/// skipped. Buffers are kept between runs.
private struct Merger {
    /// Per symbol: its first byte in the run, its length in bytes (0 once merged away), and
    /// its neighbours (-1 at the ends).
    var start: [Int32] = [], length: [Int32] = [], prev: [Int32] = [], next: [Int32] = []
    var heap = PairHeap()

    mutating func encode(_ bytes: UnsafeBufferPointer<UInt8>, tokenizer: VocabularyTokenizer, into out: inout [Int32]) {
        start.removeAll(keepingCapacity: true)
        length.removeAll(keepingCapacity: true)
        do {
            // One symbol per UTF-8 character.
            var i = 0
            while i < bytes.count {
                let lead = bytes[i]
                let width = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
                let n = min(width, bytes.count - i)
                start.append(Int32(i))
                length.append(Int32(n))
                i += n
            }
            let count = start.count
            guard count > 0 else { return }
            prev = Array(-1..<Int32(count - 1))
            next = Array(1...Int32(count))
            next[count - 1] = -1

            heap.removeAll()
            func candidate(_ left: Int32, _ right: Int32) -> PairHeap.Pair? {
                guard left >= 0, right >= 0 else { return nil }
                let s = Int(start[Int(left)]), n = Int(length[Int(left)] + length[Int(right)])
                guard let id = tokenizer.pieceID(UnsafeBufferPointer(rebasing: bytes[s..<(s + n)])),
                    tokenizer.mergeable(id)
                else { return nil }
                return PairHeap.Pair(score: tokenizer.score(id), left: left, right: right, length: Int32(n))
            }
            for l in 0..<Int32(count - 1) {
                if let pair = candidate(l, l + 1) { heap.append(pair) }
            }
            heap.heapify()
            while let best = heap.pop() {
                let l = Int(best.left), r = Int(best.right)
                // Skip stale pairs (a side was merged away or grew).
                guard length[l] > 0, length[r] > 0, next[l] == best.right, length[l] + length[r] == best.length else {
                    continue
                }
                length[l] += length[r]
                length[r] = 0
                next[l] = next[r]
                if next[r] >= 0 { prev[Int(next[r])] = Int32(l) }
                if let pair = candidate(prev[l], Int32(l)) { heap.push(pair) }
                if let pair = candidate(Int32(l), next[l]) { heap.push(pair) }
            }
            var index: Int32 = 0
            while index >= 0 {
                let s = Int(start[Int(index)])
                let piece = UnsafeBufferPointer(rebasing: bytes[s..<(s + Int(length[Int(index)]))])
                if let id = tokenizer.pieceID(piece) {
                    out.append(id)
                } else {
                    tokenizer.appendBytes(of: piece, into: &out)
                }
                index = next[Int(index)]
            }
        }
    }
}

/// A mergeable piece with a `▁` (E2 96 81) at each of `offsets` (after its first byte).
private struct InnerSpacePiece {
    let bytes: [UInt8]
    let offsets: [Int]

    /// Whether the piece occurs in `run` with one of its inner `▁` at byte `position`.
    func occurs(in run: UnsafeBufferPointer<UInt8>, withSpaceAt position: Int) -> Bool {
        offsets.contains { offset in
            let start = position - offset
            return start >= 0 && start + bytes.count <= run.count
                && bytes.indices.allSatisfy { run[start + $0] == bytes[$0] }
        }
    }
}

/// The merge queue: a binary min-heap on one 64-bit key per pair, the score mapped to an
/// order-preserving integer and negated (higher score first) above the left symbol's index
/// (then the leftmost).
private struct PairHeap {
    struct Pair {
        let key: UInt64
        let right: Int32
        let length: Int32
        var left: Int32 { Int32(truncatingIfNeeded: key & 0xFFFF_FFFF) }

        init(score: Float, left: Int32, right: Int32, length: Int32) {
            // IEEE-754 bits ordered as unsigned integers: flip all bits of negatives, the sign of
            // the rest; then invert, so the highest score has the smallest key.
            let bits = (score == 0 ? 0 : score).bitPattern  // -0 and +0 compare equal, as scores
            let ordered = bits & 0x8000_0000 != 0 ? ~bits : bits | 0x8000_0000
            key = UInt64(~ordered) << 32 | UInt64(UInt32(bitPattern: left))
            self.right = right
            self.length = length
        }
    }

    private var items: [Pair] = []

    mutating func removeAll() { items.removeAll(keepingCapacity: true) }

    /// Adds without ordering; call ``heapify()`` before the first `pop`.
    mutating func append(_ pair: Pair) { items.append(pair) }

    mutating func heapify() {
        guard items.count > 1 else { return }
        for i in stride(from: items.count / 2 - 1, through: 0, by: -1) { HeapOrder.siftDown(&items, from: i, by: { $0.key < $1.key }) }
    }

    mutating func push(_ pair: Pair) {
        items.append(pair)
        HeapOrder.siftUp(&items, from: items.count - 1, by: { $0.key < $1.key })
    }

    mutating func pop() -> Pair? {
        HeapOrder.pop(&items, by: { $0.key < $1.key })
    }
}
