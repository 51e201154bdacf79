import Synchronization

/// A model's vocabulary as the constraint engine sees it: each token's output bytes, arranged
/// as a trie, and the end-of-sequence ids. Built once per model and shared by every compiled
/// constraint (with a cache of the token masks of grammar fragments that recur across schemas,
/// such as the body of a JSON string).
package final class TokenVocabulary: Sendable {
    /// How many token ids the model has (the length of a mask).
    package let count: Int
    /// Tokens that end generation; allowed only where the grammar is complete.
    package let endOfSequence: [Int32]

    // The trie in preorder: node i has `byte[i]` at `depth[i]` (1 for the root's children); its
    // subtree is nodes i..<next[i]; tokens ending at node i are ids[tokenStart[i]..<tokenStart[i+1]],
    // and the subtree's tokens are ids[tokenStart[i]..<tokenStart[next[i]]].
    let trie: ByteTrie
    var byte: [UInt8] { trie.byte }
    var depth: [Int32] { trie.depth }
    var next: [Int32] { trie.next }
    var tokenStart: [Int32] { trie.tokenStart }
    var ids: [Int32] { trie.ids }
    /// Each token's bytes (empty for tokens that are never allowed: special tokens, empty ones).
    let tokenBytes: [[UInt8]]

    /// Masks of grammar fragments by structural key (see `FragmentKeys`), shared by every
    /// constraint compiled for this vocabulary; bounded to `maskCacheBytes` bytes, emptied when
    /// full (what recurs is cached again on next use).
    private let cache = Mutex<(masks: [FragmentKey: PositionMasks], bytes: Int)>(([:], 0))
    /// The default bound on the shared mask cache, in bytes.
    package static let cacheBytes = 256 << 20
    /// The most bytes of masks this vocabulary's shared cache holds.
    package let maskCacheBytes: Int

    /// The cached masks of a fragment.
    func cachedMasks(_ key: FragmentKey) -> PositionMasks? { cache.withLock { $0.masks[key] } }

    /// Caches the masks of a fragment, within ``cacheBytes``.
    func cacheMasks(_ masks: PositionMasks, for key: FragmentKey) {
        let size = masks.byteSize
        guard size <= maskCacheBytes / 4 else { return }
        cache.withLock { cache in
            guard cache.masks[key] == nil else { return }
            if cache.bytes + size > maskCacheBytes {
                cache.masks.removeAll()
                cache.bytes = 0
            }
            cache.masks[key] = masks
            cache.bytes += size
        }
    }

    /// Bytes held by the shared mask cache (for figures and tests).
    package var cachedMaskBytes: Int { cache.withLock { $0.bytes } }

    /// `tokens[id]` is the bytes token `id` produces when detokenized (nil for special and
    /// control tokens, which a constraint never allows); `endOfSequence` are the ids that end
    /// generation; `maskCacheBytes` bounds the masks cached for reuse across constraints.
    package init(tokens: [[UInt8]?], endOfSequence: [Int32], maskCacheBytes: Int = TokenVocabulary.cacheBytes) {
        self.maskCacheBytes = max(0, maskCacheBytes)
        count = tokens.count
        self.endOfSequence = endOfSequence.filter { $0 >= 0 && Int($0) < tokens.count }
        var entries: [(bytes: [UInt8], id: Int32)] = []
        entries.reserveCapacity(tokens.count)
        var stored = [[UInt8]](repeating: [], count: tokens.count)
        let eos = Set(self.endOfSequence)
        for (id, bytes) in tokens.enumerated() {
            guard let bytes, !bytes.isEmpty, !eos.contains(Int32(id)) else { continue }
            entries.append((bytes, Int32(id)))
            stored[id] = bytes
        }
        tokenBytes = stored
        trie = ByteTrie(entries)
        longestToken = Int(trie.depth.max() ?? 0)
    }

    /// Trie nodes (for figures and tests).
    package var trieNodes: Int { byte.count }

    /// The longest token, in bytes: how far a step's mask can look into the grammar.
    let longestToken: Int
}

/// Byte strings with ids as a trie in preorder (flat arrays, no pointers): node i has `byte[i]`
/// at `depth[i]` (1 for the root's children), its subtree is nodes i..<next[i], and the ids of
/// the strings ending at node i are ids[tokenStart[i]..<tokenStart[i+1]] (so a subtree's are
/// ids[tokenStart[i]..<tokenStart[next[i]]]). Strings sharing bytes share a node.
struct ByteTrie: Sendable {
    var byte: [UInt8] = []
    var depth: [Int32] = []
    var next: [Int32] = []
    var tokenStart: [Int32] = []
    var ids: [Int32] = []

    init(_ unsorted: [(bytes: [UInt8], id: Int32)]) {
        let entries = unsorted.sorted { a, b in
            a.bytes.lexicographicallyPrecedes(b.bytes) || (a.bytes == b.bytes && a.id < b.id)
        }
        var path: [Int32] = []  // node index at each depth of the current string
        var previous: [UInt8] = []
        for entry in entries {
            var common = 0
            while common < min(previous.count, entry.bytes.count) && previous[common] == entry.bytes[common] { common += 1 }
            // Close the nodes below the shared prefix.
            while path.count > common { next[Int(path.removeLast())] = Int32(byte.count) }
            for k in common..<entry.bytes.count {
                path.append(Int32(byte.count))
                byte.append(entry.bytes[k])
                depth.append(Int32(k + 1))
                next.append(0)
                tokenStart.append(Int32(ids.count))
            }
            ids.append(entry.id)
            previous = entry.bytes
        }
        while let last = path.popLast() { next[Int(last)] = Int32(byte.count) }
        tokenStart.append(Int32(ids.count))
    }
}

extension ByteTrie {
    /// Adds to `mask` the ids of the strings ending in nodes `range` — a node's subtree, or the
    /// whole trie — whose bytes below depth `base` the parser accepts from state `start`
    /// (subtrees the parser rejects are skipped whole). `states` is scratch space.
    func addAccepted(
        in range: Range<Int>, below base: Int, from start: Int32, pool: ParserPool,
        to mask: UnsafeMutableBufferPointer<UInt64>, states: inout [Int32]
    ) {
        var i = range.lowerBound
        while i < range.upperBound {
            let d = Int(depth[i]) - base
            while states.count <= d { states.append(0) }
            let s = pool.step(d == 1 ? start : states[d - 1], byte[i])
            if s == ParserPool.dead {
                i = Int(next[i])
                continue
            }
            states[d] = s
            for t in Int(tokenStart[i])..<Int(tokenStart[i + 1]) {
                let id = ids[t]
                mask[Int(id) >> 6] |= 1 << UInt64(id & 63)
            }
            i += 1
        }
    }
}
