/// A set of token ids: dense bits for big sets, a sorted list for small ones.
enum TokenSet: Sendable {
    case dense([UInt64])
    case sparse([Int32])

    init(bits: [UInt64], count: Int, vocabulary: Int) {
        if count * 64 < vocabulary {  // a list is smaller than the bits
            var list: [Int32] = []
            list.reserveCapacity(count)
            for (w, word) in bits.enumerated() where word != 0 {
                var v = word
                while v != 0 {
                    list.append(Int32(w * 64 + v.trailingZeroBitCount))
                    v &= v - 1
                }
            }
            self = .sparse(list)
        } else {
            self = .dense(bits)
        }
    }

    /// Adds the set's tokens to `mask`.
    func add(to mask: inout [UInt64]) {
        switch self {
        case .dense(let bits):
            mask.withUnsafeMutableBufferPointer { m in
                bits.withUnsafeBufferPointer { b in
                    for i in 0..<min(m.count, b.count) { m[i] |= b[i] }
                }
            }
        case .sparse(let list):
            mask.withUnsafeMutableBufferPointer { m in
                for id in list { m[Int(id) >> 6] |= 1 << UInt64(id & 63) }
            }
        }
    }
}

/// Tokens grouped by the bytes left after the fragment they start in ends: checked against the
/// actual enclosing context at run time.
struct SuffixTrie: Sendable {
    let trie: ByteTrie

    init(_ entries: [(suffix: [UInt8], id: Int32)]) {
        trie = ByteTrie(entries.map { (bytes: $0.suffix, id: $0.id) })
    }

    var isEmpty: Bool { trie.byte.isEmpty }

    /// The ids (for figures).
    var ids: [Int32] { trie.ids }

    /// Adds to `mask` every token whose suffix the parser accepts from `start`.
    func add(from start: Int32, pool: ParserPool, to mask: inout [UInt64]) {
        var states: [Int32] = []
        mask.withUnsafeMutableBufferPointer { m in
            trie.addAccepted(in: 0..<trie.byte.count, below: 0, from: start, pool: pool, to: m, states: &states)
        }
    }
}

/// What a position allows, whatever encloses it: the tokens accepted inside its fragment, and
/// where tokens leave the fragment with bytes to spare — the trie nodes at which the fragment
/// can end. The tokens below such a node depend on the enclosing context: at run time their
/// remaining bytes are walked from the state after the fragment (small subtrees are kept as a
/// trie of those remaining bytes, grouped; big ones are walked in the vocabulary trie itself).
struct PositionMasks: Sendable {
    var accepted: TokenSet
    var suffixes: SuffixTrie
    /// Vocabulary trie nodes whose subtrees are walked at run time.
    var exitRoots: [Int32]
    /// Tokens in `accepted` (for figures).
    var acceptedCount: Int

    /// Subtrees of at most this many nodes below an exit go into `suffixes`.
    static let smallSubtree = 48

    /// Roughly the bytes the masks hold.
    var byteSize: Int {
        let accepted: Int
        switch self.accepted {
        case .dense(let bits): accepted = bits.count * 8
        case .sparse(let list): accepted = list.count * 4
        }
        return 64 + accepted + suffixes.trie.byte.count * 13 + suffixes.trie.ids.count * 4 + exitRoots.count * 4
    }

    /// Walks the vocabulary trie from `position` with `bottom` as the enclosing context.
    /// - Throws: `ConstraintError` `.tooComplex` (at `location`) when the parser has more than
    ///   `maxStates` states.
    static func compute(
        position: Int32, pool: ParserPool, vocabulary v: TokenVocabulary, maxStates: Int = CompileBudget.standard.maxParserStates,
        where location: @autoclosure () -> String = ""
    ) throws -> PositionMasks {
        let start = pool.closure([pool.node(position, ParserPool.bottom)])
        var bits = [UInt64](repeating: 0, count: (v.count + 63) / 64)
        var acceptedCount = 0
        var exits: [Int32] = []
        var states = [Int32](repeating: start, count: 64)
        let nodes = v.byte.count
        v.byte.withUnsafeBufferPointer { byte in
            v.depth.withUnsafeBufferPointer { depth in
                v.next.withUnsafeBufferPointer { next in
                    v.tokenStart.withUnsafeBufferPointer { tokenStart in
                        v.ids.withUnsafeBufferPointer { ids in
                            bits.withUnsafeMutableBufferPointer { bits in
                                var i = 0
                                while i < nodes {
                                    if i & 4095 == 0 && pool.stateCount > maxStates { break }
                                    let d = Int(depth[i])
                                    if states.count <= d { states.append(0) }
                                    let parent = d == 1 ? start : states[d - 1]
                                    let s = pool.step(parent, byte[i])
                                    if s == ParserPool.dead {
                                        i = Int(next[i])
                                        continue
                                    }
                                    states[d] = s
                                    // The fragment can end here: tokens going deeper depend on what follows it.
                                    if pool.exited[Int(s)] && Int(next[i]) > i + 1 { exits.append(Int32(i)) }
                                    for t in Int(tokenStart[i])..<Int(tokenStart[i + 1]) {
                                        let id = ids[t]
                                        bits[Int(id) >> 6] |= 1 << UInt64(id & 63)
                                        acceptedCount += 1
                                    }
                                    i += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        guard pool.stateCount <= maxStates else {
            throw ConstraintError(
                .tooComplex, "computing the token masks took more than \(maxStates) parser states (the compile budget)",
                at: location())
        }
        var entries: [(suffix: [UInt8], id: Int32)] = []
        var roots: [Int32] = []
        for e in exits {
            let node = Int(e)
            let end = Int(v.next[node])
            if end - node - 1 <= smallSubtree {
                let cut = Int(v.depth[node])
                for t in Int(v.tokenStart[node + 1])..<Int(v.tokenStart[end]) {
                    let id = v.ids[t]
                    entries.append((Array(v.tokenBytes[Int(id)][cut...]), id))
                }
            } else {
                roots.append(e)
            }
        }
        return PositionMasks(
            accepted: TokenSet(bits: bits, count: acceptedCount, vocabulary: v.count),
            suffixes: SuffixTrie(entries), exitRoots: roots, acceptedCount: acceptedCount)
    }

    /// Adds the context-dependent tokens, given the state after the position's fragment ends.
    func addLeaving(from after: Int32, pool: ParserPool, vocabulary v: TokenVocabulary, to mask: inout [UInt64]) {
        if !suffixes.isEmpty { suffixes.add(from: after, pool: pool, to: &mask) }
        guard !exitRoots.isEmpty else { return }
        var states: [Int32] = []
        mask.withUnsafeMutableBufferPointer { m in
            for root in exitRoots {
                let r = Int(root)
                v.trie.addAccepted(
                    in: (r + 1)..<Int(v.next[r]), below: Int(v.depth[r]), from: after, pool: pool, to: m, states: &states)
            }
        }
    }
}
