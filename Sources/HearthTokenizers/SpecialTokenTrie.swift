/// The leftmost-longest matcher for a vocabulary's special tokens (user-defined tokens, and
/// control tokens when the caller parses them) written in raw text: a byte trie, walked only
/// from bytes that begin some special token. Gemma 3's vocabulary has 6,414 of them; trying
/// each one at every byte cost ~10 µs per byte of text.
struct SpecialTokenTrie: Sendable {
    /// Child node by `node << 8 | byte`.
    private var children: [Int: Int32] = [:]
    /// Per node, the lowest id of a special ending there (any kind), or -1.
    private var anyID: [Int32] = [-1]
    /// Per node, the lowest id of a non-control special ending there, or -1.
    private var plainID: [Int32] = [-1]
    /// Bytes that begin at least one special.
    private var starts = [Bool](repeating: false, count: 256)

    /// Adds specials in id order (so the lowest id wins among identical strings).
    init(_ specials: [(bytes: [UInt8], id: Int32, control: Bool)]) {
        for special in specials where !special.bytes.isEmpty {
            var node = 0
            for byte in special.bytes {
                let key = node << 8 | Int(byte)
                if let child = children[key] {
                    node = Int(child)
                } else {
                    children[key] = Int32(anyID.count)
                    node = anyID.count
                    anyID.append(-1)
                    plainID.append(-1)
                }
            }
            if anyID[node] < 0 { anyID[node] = special.id }
            if !special.control && plainID[node] < 0 { plainID[node] = special.id }
            starts[Int(special.bytes[0])] = true
        }
    }

    /// The longest special that matches `bytes` at `position` (control tokens only with
    /// `parseSpecial`): its id and length in bytes.
    @inline(__always)
    func match(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int, parseSpecial: Bool) -> (id: Int32, length: Int)? {
        guard starts[Int(bytes[position])] else { return nil }
        var node = 0, i = position
        var best: (id: Int32, length: Int)?
        while i < bytes.count, let child = children[node << 8 | Int(bytes[i])] {
            node = Int(child)
            i += 1
            let id = parseSpecial ? anyID[node] : plainID[node]
            if id >= 0 { best = (id, i - position) }
        }
        return best
    }
}
