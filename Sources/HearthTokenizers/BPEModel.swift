import Synchronization

/// The BPE merge engine: a word's characters become vocabulary ids, then adjacent pairs merge,
/// lowest merge rank first (leftmost on ties), until no pair has a merge — the procedure of
/// tokenizers' `Word::merge_all`, on ids, with a pair → (rank, merged id) table and a heap.
///
/// Words are short and repeat, so results are cached per word (up to `cacheCapacity` words).
struct BPEModel: Sendable {
    let definition: BPEModelDefinition
    private let unknownID: Int32?
    /// `<0xNN>` ids for byte fallback (-1 when missing).
    private let byteFallbackIDs: [Int32]
    /// Ids of one-scalar tokens below U+0180 (ASCII, Latin-1 and the byte-level alphabet), -1 when absent.
    private let smallScalarIDs: [Int32]
    private let prefix: [UInt8]
    private let suffix: [UInt8]
    private let cache = WordCache()

    static let cacheCapacity = 10_000
    /// Longer words are not cached (tokenizers' MAX_LENGTH).
    static let maxCachedLength = 256

    init(_ definition: BPEModelDefinition, path: String?) throws {
        self.definition = definition
        let vocabulary = definition.vocabulary
        if let unk = definition.unknownToken {
            guard let id = vocabulary.id(unk) else {
                throw TokenizerError(
                    .invalidModel, "unk_token '\(unk)' is not in the vocabulary", path: path, key: "model.unk_token")
            }
            unknownID = id
        } else {
            unknownID = nil
        }
        let hex = Array("0123456789ABCDEF".utf8)
        byteFallbackIDs = (0..<256).map { byte in
            vocabulary.id(Array("<0x".utf8) + [hex[byte >> 4], hex[byte & 15], UInt8(ascii: ">")]) ?? -1
        }
        prefix = Array((definition.continuingSubwordPrefix ?? "").utf8)
        suffix = Array((definition.endOfWordSuffix ?? "").utf8)
        smallScalarIDs = (0..<0x180).map { value in
            guard let scalar = Unicode.Scalar(UInt32(value)) else { return -1 }
            return vocabulary.id(String(scalar)) ?? -1
        }
    }

    /// Appends the ids of one word.
    func tokenize(_ word: ArraySlice<Unicode.Scalar>, into out: inout [Int32]) {
        guard !word.isEmpty else { return }
        if definition.ignoreMerges || (definition.wholeNewlineRuns && word.allSatisfy { $0 == "\n" }) {
            var bytes: [UInt8] = []
            for scalar in word { bytes.append(contentsOf: scalar.utf8) }
            if let id = definition.vocabulary.id(bytes) {
                out.append(id)
                return
            }
        }
        let cacheable = word.count < Self.maxCachedLength
        if cacheable, let hit = cache.lookup(word) {
            out.append(contentsOf: hit)
            return
        }
        var ids = symbols(of: word)
        mergeAll(&ids)
        if cacheable { cache.store(word, ids, capacity: Self.cacheCapacity) }
        out.append(contentsOf: ids)
    }

    /// The initial symbols: one id per scalar (with prefix/suffix), byte fallback or unknown for
    /// scalars missing from the vocabulary — `BPE::merge_word` in tokenizers.
    private func symbols(of word: ArraySlice<Unicode.Scalar>) -> [Int32] {
        var ids: [Int32] = []
        ids.reserveCapacity(word.count)
        var pendingUnknown = false
        let plain = prefix.isEmpty && suffix.isEmpty
        var key: [UInt8] = []
        for (k, scalar) in zip(word.indices, word) {
            var id: Int32 = -1
            if plain && scalar.value < 0x180 {
                id = smallScalarIDs[Int(scalar.value)]
            } else {
                key.removeAll(keepingCapacity: true)
                if k != word.startIndex { key.append(contentsOf: prefix) }
                key.append(contentsOf: scalar.utf8)
                if k == word.endIndex - 1 { key.append(contentsOf: suffix) }
                id = definition.vocabulary.id(key) ?? -1
            }
            if id >= 0 {
                if pendingUnknown, let unknownID {
                    ids.append(unknownID)
                    pendingUnknown = false
                }
                ids.append(id)
                continue
            }
            if definition.byteFallback {
                // tokenizers falls back on the bytes of the symbol as looked up (prefix and suffix included).
                if plain && scalar.value < 0x180 {
                    key.removeAll(keepingCapacity: true)
                    key.append(contentsOf: scalar.utf8)
                }
                let bytes = key.map { byteFallbackIDs[Int($0)] }
                if !bytes.contains(-1) {
                    ids.append(contentsOf: bytes)
                    continue
                }
            }
            if let unknownID {
                if pendingUnknown && !definition.fuseUnknown { ids.append(unknownID) }
                pendingUnknown = true
            }
            // Without an unknown token the character is dropped, as in tokenizers.
        }
        if pendingUnknown, let unknownID { ids.append(unknownID) }
        return ids
    }

    /// Merges pairs in rank order (leftmost first among equal ranks) until none applies.
    private func mergeAll(_ ids: inout [Int32]) {
        let n = ids.count
        guard n > 1 else { return }
        let merges = definition.merges
        var next = [Int32](0..<Int32(n))
        var prev = [Int32](-1..<Int32(n - 1))
        for k in 0..<n { next[k] = k + 1 < n ? Int32(k + 1) : -1 }
        var alive = [Bool](repeating: true, count: n)
        // Min-heap of `rank << 32 | position`: lowest rank, then leftmost position.
        var heap = BinaryHeap<UInt64>(by: <)  // packed `rank << 32 | position` keys
        func key(_ a: Int32, _ b: Int32) -> UInt64 { UInt64(UInt32(bitPattern: a)) << 32 | UInt64(UInt32(bitPattern: b)) }
        for k in 0..<(n - 1) {
            if let m = merges[key(ids[k], ids[k + 1])] { heap.push(m & 0xFFFF_FFFF_0000_0000 | UInt64(k)) }
        }
        while let top = heap.pop() {
            let position = Int(top & 0xFFFF_FFFF)
            let rank = top >> 32
            guard alive[position], next[position] >= 0 else { continue }
            let right = Int(next[position])
            // Skip stale entries: the pair at this position changed since it was queued.
            guard let m = merges[key(ids[position], ids[right])], m >> 32 == rank else { continue }
            ids[position] = Int32(truncatingIfNeeded: m & 0xFFFF_FFFF)
            alive[right] = false
            next[position] = next[right]
            if next[right] >= 0 { prev[Int(next[right])] = Int32(position) }
            if prev[position] >= 0 {
                let left = Int(prev[position])
                if let m = merges[key(ids[left], ids[position])] { heap.push(m & 0xFFFF_FFFF_0000_0000 | UInt64(left)) }
            }
            if next[position] >= 0 {
                if let m = merges[key(ids[position], ids[Int(next[position])])] {
                    heap.push(m & 0xFFFF_FFFF_0000_0000 | UInt64(position))
                }
            }
        }
        var out: [Int32] = []
        out.reserveCapacity(n)
        var k = 0
        while k >= 0 {
            out.append(ids[k])
            k = Int(next[k])
        }
        ids = out
    }
}

/// Word → ids, shared by all threads using one tokenizer.
final class WordCache: Sendable {
    private let words = Mutex<[[Unicode.Scalar]: [Int32]]>([:])

    func lookup(_ word: ArraySlice<Unicode.Scalar>) -> [Int32]? {
        words.withLock { $0[Array(word)] }
    }

    func store(_ word: ArraySlice<Unicode.Scalar>, _ ids: [Int32], capacity: Int) {
        words.withLock { cache in
            if cache.count < capacity { cache[Array(word)] = ids }
        }
    }
}
