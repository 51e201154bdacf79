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
public final class VocabularyTokenizer: Tokenizer {
    /// GGUF's token types.
    public enum TokenType: Int32, Sendable {
        case normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6
    }

    public let tokens: [String]
    public let scores: [Float]
    public let types: [TokenType]
    public let vocabularySize: Int
    public let bosID: Int32?
    public let addsBOS: Bool
    private let addsEOS: Bool
    private let eosID: Int32?
    public let eosIDs: Set<Int32>
    public let chatTemplate: ChatTemplate?
    /// Prepend `▁` to the text (SentencePiece's dummy prefix).
    public let addSpacePrefix: Bool
    public var kind: String { "sentencepiece (from vocabulary)" }

    private let ids: [String: Int32]
    private let byteIDs: [Int32?]
    private let unknownID: Int32?
    private let tokenBytes: [[UInt8]?]
    private let specials: [(bytes: [UInt8], id: Int32, control: Bool)]

    /// Builds the tokenizer. Arrays must have equal, non-zero length.
    public init(
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

        var ids: [String: Int32] = [:]
        ids.reserveCapacity(tokens.count)
        var byteIDs = [Int32?](repeating: nil, count: 256)
        var tokenBytes: [[UInt8]?] = []
        tokenBytes.reserveCapacity(tokens.count)
        var specials: [(bytes: [UInt8], id: Int32, control: Bool)] = []
        for (i, token) in tokens.enumerated() {
            let id = Int32(i)
            if ids[token] == nil { ids[token] = id }
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
                tokenBytes.append(Array(token.replacingOccurrences(of: "\u{2581}", with: " ").utf8))
            }
        }
        // Longest first, so the leftmost-longest special wins.
        specials.sort { $0.bytes.count > $1.bytes.count }
        self.ids = ids
        self.byteIDs = byteIDs
        self.tokenBytes = tokenBytes
        self.specials = specials
        var stop = Set(extraStopTokens)
        if let eos { stop.insert(eos) }
        eosIDs = stop
    }

    public func bytes(of id: Int32) -> [UInt8]? {
        guard id >= 0, Int(id) < tokenBytes.count else { return nil }
        return tokenBytes[Int(id)]
    }

    public func token(_ id: Int32) -> String? { id >= 0 && Int(id) < tokens.count ? tokens[Int(id)] : nil }

    public func isSpecial(_ id: Int32) -> Bool {
        guard id >= 0, Int(id) < types.count else { return false }
        return types[Int(id)] == .control || types[Int(id)] == .unused
    }

    public func id(of token: String) -> Int32? { ids[token] }

    public func encode(_ text: String, addSpecialTokens: Bool) throws -> [Int32] {
        try encode(text, addSpecialTokens: addSpecialTokens, parseSpecial: !addSpecialTokens)
    }

    /// Encodes with explicit control over matching control tokens written in the text.
    public func encode(_ text: String, addSpecialTokens: Bool, parseSpecial: Bool) throws -> [Int32] {
        var out: [Int32] = []
        if addSpecialTokens && addsBOS, let bosID { out.append(bosID) }
        let bytes = Array(text.utf8)
        var start = 0, i = 0
        var atStart = true
        func flush(_ end: Int) {
            if start < end {
                encodeRun(String(decoding: bytes[start..<end], as: UTF8.self), prefix: atStart, into: &out)
                atStart = false
            }
        }
        while i < bytes.count {
            var matched: (bytes: [UInt8], id: Int32, control: Bool)?
            for s in specials where (parseSpecial || !s.control) && i + s.bytes.count <= bytes.count {
                if bytes[i] == s.bytes[0] && s.bytes.elementsEqual(bytes[i..<(i + s.bytes.count)]) {
                    matched = s
                    break
                }
            }
            if let matched {
                flush(i)
                out.append(matched.id)
                atStart = false
                i += matched.bytes.count
                start = i
            } else {
                i += 1
            }
        }
        flush(bytes.count)
        if addSpecialTokens && addsEOS, let eosID { out.append(eosID) }
        return out
    }

    /// SentencePiece BPE over one run of text without special tokens.
    private func encodeRun(_ text: String, prefix: Bool, into out: inout [Int32]) {
        var normalized = text.replacingOccurrences(of: " ", with: "\u{2581}")
        if prefix && addSpacePrefix { normalized = "\u{2581}" + normalized }
        // Symbols: one per character, as a doubly linked list over the text's characters.
        var pieces = normalized.unicodeScalars.reduce(into: [String]()) { $0.append(String($1)) }
        if pieces.isEmpty { return }
        var prev = Array(-1..<(pieces.count - 1))
        var next = Array(1...pieces.count)
        next[pieces.count - 1] = -1
        var alive = [Bool](repeating: true, count: pieces.count)

        var heap = BinaryHeap<Bigram> { $0.precedes($1) }
        func consider(_ left: Int, _ right: Int) {
            guard left >= 0, right >= 0 else { return }
            let merged = pieces[left] + pieces[right]
            if let id = ids[merged], types[Int(id)] == .normal || types[Int(id)] == .userDefined || types[Int(id)] == .unused {
                heap.push(Bigram(score: scores[Int(id)], left: left, right: right, length: merged.utf8.count))
            }
        }
        for i in 0..<(pieces.count - 1) { consider(i, i + 1) }
        while let best = heap.pop() {
            let l = best.left, r = best.right
            // Skip stale bigrams (a side was merged away or changed length).
            guard alive[l], alive[r], next[l] == r, pieces[l].utf8.count + pieces[r].utf8.count == best.length else { continue }
            pieces[l] += pieces[r]
            alive[r] = false
            next[l] = next[r]
            if next[r] >= 0 { prev[next[r]] = l }
            consider(prev[l], l)
            consider(l, next[l])
        }
        var index = 0
        while index >= 0 {
            let piece = pieces[index]
            if let id = ids[piece] {
                out.append(id)
            } else {
                for byte in piece.utf8 {
                    if let id = byteIDs[Int(byte)] {
                        out.append(id)
                    } else if let unknownID {
                        out.append(unknownID)
                    }
                }
            }
            index = next[index]
        }
    }
}

/// A candidate merge: higher score first, then the leftmost.
struct Bigram {
    let score: Float
    let left: Int
    let right: Int
    let length: Int

    func precedes(_ other: Bigram) -> Bool {
        score != other.score ? score > other.score : left < other.left
    }
}
