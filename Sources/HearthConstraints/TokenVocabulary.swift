import Synchronization

/// A model's vocabulary as the constraint engine sees it: each token's output bytes, arranged
/// as a trie, and the end-of-sequence ids. Built once per model and shared by every compiled
/// constraint (with a cache of the token masks of grammar fragments that recur across schemas,
/// such as the body of a JSON string).
public final class TokenVocabulary: Sendable {
    /// How many token ids the model has (the length of a mask).
    public let count: Int
    /// Tokens that end generation; allowed only where the grammar is complete.
    public let endOfSequence: [Int32]

    // The trie in preorder: node i has `byte[i]` at `depth[i]` (1 for the root's children); its
    // subtree is nodes i..<next[i]; tokens ending at node i are ids[tokenStart[i]..<tokenStart[i+1]],
    // and the subtree's tokens are ids[tokenStart[i]..<tokenStart[next[i]]].
    let byte: [UInt8]
    let depth: [Int32]
    let next: [Int32]
    let tokenStart: [Int32]
    let ids: [Int32]
    /// Each token's bytes (empty for tokens that are never allowed: special tokens, empty ones).
    let tokenBytes: [[UInt8]]

    let cache = Mutex<[[UInt64]: PositionMasks]>([:])

    /// `tokens[id]` is the bytes token `id` produces when detokenized (nil for special and
    /// control tokens, which a constraint never allows); `endOfSequence` are the ids that end
    /// generation.
    public init(tokens: [[UInt8]?], endOfSequence: [Int32]) {
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
        entries.sort { a, b in a.bytes.lexicographicallyPrecedes(b.bytes) || (a.bytes == b.bytes && a.id < b.id) }
        tokenBytes = stored

        var byte: [UInt8] = [], depth: [Int32] = [], next: [Int32] = [], start: [Int32] = []
        var ids: [Int32] = []
        var path: [Int32] = []  // node index at each depth of the current token
        var previous: [UInt8] = []
        for entry in entries {
            var common = 0
            while common < min(previous.count, entry.bytes.count) && previous[common] == entry.bytes[common] { common += 1 }
            // Close the nodes below the shared prefix.
            while path.count > common {
                next[Int(path.removeLast())] = Int32(byte.count)
            }
            for k in common..<entry.bytes.count {
                path.append(Int32(byte.count))
                byte.append(entry.bytes[k])
                depth.append(Int32(k + 1))
                next.append(0)
                start.append(Int32(ids.count))
            }
            ids.append(entry.id)
            previous = entry.bytes
        }
        while let last = path.popLast() { next[Int(last)] = Int32(byte.count) }
        start.append(Int32(ids.count))
        self.byte = byte
        self.depth = depth
        self.next = next
        self.tokenStart = start
        self.ids = ids
    }

    /// Trie nodes (for figures and tests).
    public var trieNodes: Int { byte.count }
}
