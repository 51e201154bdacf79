/// The two SentencePiece model types over normalized text: each turns the bytes into
/// (byte range, id) pieces exactly as libsentencepiece's model does (sentencepiece 0.2.3, the
/// version `scripts/requirements-reference.txt` pins); ``SentencePieceModel`` then applies byte
/// fallback and joins runs of unknown pieces.
struct SentencePieceVocabulary: Sendable {
    /// libsentencepiece's `pieces_`: NORMAL, USER_DEFINED and UNUSED pieces for unigram, every
    /// piece for BPE.
    let pieces: ByteTrie
    /// CONTROL, UNKNOWN and BYTE pieces for unigram (`reserved_id_map_`, looked up first); empty for BPE.
    let reserved: ByteTrie
    let scores: [Float]
    let kinds: [SentencePieceModel.PieceKind]
    /// The UNKNOWN piece, or -1 (a byte-fallback model may have none).
    let unknownID: Int32

    /// libsentencepiece's `PieceToId`: a reserved piece, else a piece, else the unknown id.
    @inline(__always)
    func id(of bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        reserved.lookup(bytes) ?? pieces.lookup(bytes) ?? unknownID
    }

    /// Whether `id` is a CONTROL, UNKNOWN or BYTE piece (`IsReservedId`).
    @inline(__always)
    func isReserved(_ id: Int32) -> Bool {
        let kind = kinds[Int(id)]
        return kind != .normal && kind != .userDefined && kind != .unused
    }
}

/// Which libsentencepiece's arithmetic the unigram model follows. The releases differ in
/// near-ties of the Viterbi search, so the same model can give different ids.
enum SentencePieceCompatibility: Sendable {
    /// sentencepiece 0.2.3 (the PyPI package Hearth's fixtures pin): scores summed in Float,
    /// sums re-based past ±100,000, a user-defined piece of n bytes scoring 0.1·(n − 1).
    case current
    /// sentencepiece 0.1.x (Debian's libsentencepiece 0.1.97): sums in Double stored as Float,
    /// a user-defined piece scoring n·max(score) − 0.1.
    case legacy
}

/// A piece of the encoded text: normalized bytes `start..<end` and its id.
struct EncodedPiece {
    var start: Int32
    var end: Int32
    var id: Int32
}

/// Unigram: the segmentation with the highest total score (libsentencepiece's
/// `Model::EncodeOptimized`, a Viterbi pass over the prefixes the trie finds at each character).
struct UnigramEncoder: Sendable {
    let vocabulary: SentencePieceVocabulary
    /// The lowest score of a NORMAL piece (an unknown character scores 10 below it).
    let minScore: Float
    /// The highest score of a NORMAL piece, at least `FLT_MIN` (`.legacy` only).
    let maxScore: Float
    var compatibility = SentencePieceCompatibility.current

    init(vocabulary: SentencePieceVocabulary) {
        self.vocabulary = vocabulary
        var low = Float.greatestFiniteMagnitude, high = Float.leastNormalMagnitude
        for (kind, score) in zip(vocabulary.kinds, vocabulary.scores) where kind == .normal {
            low = min(low, score)
            high = max(high, score)
        }
        minScore = low
        maxScore = high
    }

    private struct Best {
        var id: Int32 = -1
        var score: Float = 0
        var start: Int32 = -1
    }

    func encode(_ text: UnsafeBufferPointer<UInt8>, into out: inout [EncodedPiece]) {
        out.removeAll(keepingCapacity: true)
        let size = text.count
        guard size > 0 else { return }
        let unknownScore = minScore - 10  // kUnkPenalty
        let legacy = compatibility == .legacy
        var best = [Best](repeating: Best(), count: size + 1)
        let trie = vocabulary.pieces
        vocabulary.kinds.withUnsafeBufferPointer { kinds in
            vocabulary.scores.withUnsafeBufferPointer { scores in
                var start = 0
                var frontier = 0
                while start < size {
                    var scoreHere = best[start].score
                    // 0.2.3 keeps the sums small: past ±100,000 every reached position from here
                    // on is re-based to this one.
                    if !legacy && abs(scoreHere) > 100_000 {
                        if start <= frontier {
                            for i in start...frontier where i == start || best[i].start != -1 { best[i].score -= scoreHere }
                        }
                        scoreHere = 0
                    }
                    let charLength = min(SentencePieceNormalizer.utf8Length(text[start]), size - start)
                    var hasSingleCharacter = false
                    var node = ByteTrie.root
                    var end = start
                    while end < size {
                        node = trie.child(node, text[end])
                        if node < 0 { break }
                        end += 1
                        let id = trie.value(node)
                        guard id >= 0 else { continue }
                        let kind = kinds[Int(id)]
                        if kind == .unused { continue }
                        frontier = max(frontier, end)
                        let length = end - start
                        let better: Bool
                        let candidate: Float
                        if legacy {
                            // 0.1.x: the score is a double (`length * max_score - 0.1` for a
                            // user-defined piece), so is the sum; the best is kept as a float.
                            let score = kind == .userDefined ? Double(Float(length) * maxScore) - 0.1 : Double(scores[Int(id)])
                            let sum = score + Double(scoreHere)
                            better = best[end].start == -1 || sum > Double(best[end].score)
                            candidate = Float(sum)
                        } else {
                            let score = kind == .userDefined ? Float(0.1 * Double(length - 1)) : scores[Int(id)]
                            candidate = score + scoreHere
                            better = best[end].start == -1 || candidate > best[end].score
                        }
                        if better { best[end] = Best(id: id, score: candidate, start: Int32(start)) }
                        if length == charLength { hasSingleCharacter = true }
                    }
                    if !hasSingleCharacter {
                        frontier = max(frontier, start + charLength)
                        let candidate = unknownScore + scoreHere
                        if best[start + charLength].start == -1 || candidate > best[start + charLength].score {
                            best[start + charLength] = Best(id: vocabulary.unknownID, score: candidate, start: Int32(start))
                        }
                    }
                    start += charLength
                }
            }
        }
        var end = size
        while end > 0 {
            let node = best[end]
            out.append(EncodedPiece(start: node.start, end: Int32(end), id: node.id))
            end = Int(node.start)
        }
        out.reverse()
    }
}

/// BPE: characters (user-defined pieces whole and never merged) merged pair by pair, the pair
/// whose merged piece scores highest first, the leftmost among equals; a merged piece that is
/// UNUSED is split back into the two it was made of (libsentencepiece's `bpe::Model::SampleEncode`
/// without sampling).
struct BPEPieceEncoder: Sendable {
    let vocabulary: SentencePieceVocabulary
    /// User-defined pieces (the normalizer's prefix matcher).
    let userDefined: ByteTrie

    private struct Symbol {
        var previous: Int32
        var next: Int32
        var frozen: Bool
        var start: Int32
        var count: Int32
    }

    private struct Pair {
        var left: Int32
        var right: Int32
        var score: Float
        var size: Int32
    }

    func encode(_ text: UnsafeBufferPointer<UInt8>, into out: inout [EncodedPiece]) {
        out.removeAll(keepingCapacity: true)
        guard !text.isEmpty else { return }
        var symbols: [Symbol] = []
        symbols.reserveCapacity(text.count)
        var position = 0
        while position < text.count {
            let matched = userDefined.isEmpty ? 0 : userDefined.longestPrefix(of: text, from: position)
            let length = matched > 0 ? matched : min(text.count - position, SentencePieceNormalizer.utf8Length(text[position]))
            let index = Int32(symbols.count)
            symbols.append(Symbol(
                previous: index - 1, next: position + length < text.count ? index + 1 : -1, frozen: matched > 0,
                start: Int32(position), count: Int32(length)))
            position += length
        }

        // Highest score first; among equal scores the leftmost. Scores compare by their bits, as
        // libsentencepiece's comparator does (so −0 ranks below +0).
        var agenda = BinaryHeap<Pair> { a, b in Self.precedes(a, b) }
        // Merged UNUSED pieces (by bytes) → the two pieces they were last made of (ranges of `text`).
        var splits: [[UInt8]: (Range<Int>, Range<Int>)] = [:]
        func consider(_ left: Int32, _ right: Int32) {
            guard left >= 0, right >= 0 else { return }
            let l = symbols[Int(left)], r = symbols[Int(right)]
            guard !l.frozen, !r.frozen else { return }
            let range = Int(l.start)..<Int(l.start + l.count + r.count)
            guard let id = vocabulary.pieces.lookup(UnsafeBufferPointer(rebasing: text[range])),
                id != vocabulary.unknownID, !vocabulary.isReserved(id)
            else { return }
            agenda.push(Pair(left: left, right: right, score: vocabulary.scores[Int(id)], size: l.count + r.count))
            if vocabulary.kinds[Int(id)] == .unused {
                splits[Array(text[range])] = (
                    Int(l.start)..<Int(l.start + l.count), Int(r.start)..<Int(r.start + r.count)
                )
            }
        }
        for i in 1..<Int32(symbols.count) { consider(i - 1, i) }
        while let top = agenda.pop() {
            let l = symbols[Int(top.left)], r = symbols[Int(top.right)]
            guard l.count > 0, r.count > 0, l.count + r.count == top.size else { continue }
            symbols[Int(top.left)].count += r.count
            symbols[Int(top.left)].next = r.next
            if r.next >= 0 { symbols[Int(r.next)].previous = top.left }
            symbols[Int(top.right)].count = 0
            consider(symbols[Int(top.left)].previous, top.left)
            consider(top.left, symbols[Int(top.left)].next)
        }

        // An UNUSED piece is split back into what it was merged from (at most 100 levels deep);
        // a piece that is not in the vocabulary, or is reserved, is unknown.
        func emit(_ range: Range<Int>, depth: Int) {
            let id = vocabulary.pieces.lookup(UnsafeBufferPointer(rebasing: text[range])) ?? vocabulary.unknownID
            var result = id
            if depth <= 100 {
                if id == vocabulary.unknownID || vocabulary.isReserved(id) {
                    result = vocabulary.unknownID
                } else if vocabulary.kinds[Int(id)] == .unused {
                    guard let (left, right) = splits[Array(text[range])] else {
                        out.append(EncodedPiece(start: Int32(range.lowerBound), end: Int32(range.upperBound), id: vocabulary.unknownID))
                        return
                    }
                    emit(left, depth: depth + 1)
                    emit(right, depth: depth + 1)
                    return
                }
            }
            out.append(EncodedPiece(start: Int32(range.lowerBound), end: Int32(range.upperBound), id: result))
        }
        var index: Int32 = 0
        while index != -1 {
            let s = symbols[Int(index)]
            emit(Int(s.start)..<Int(s.start + s.count), depth: 0)
            index = s.next
        }
    }

    /// libsentencepiece's `SymbolPairComparator`, inverted for a min-first heap: the higher
    /// score first (compared as the floats' bit patterns), then the lower left index.
    private static func precedes(_ a: Pair, _ b: Pair) -> Bool {
        let i1 = Int32(bitPattern: a.score.bitPattern), i2 = Int32(bitPattern: b.score.bitPattern)
        let less: Bool  // a's score below b's
        if i1 < 0 && i2 < 0 {
            less = i1 > i2
        } else if (i1 ^ i2) < 0 {
            less = i1 < 0
        } else {
            less = i1 < i2
        }
        let greater = i1 != i2 && !less
        return greater || (i1 == i2 && a.left < b.left)
    }
}
