/// A vocabulary keyed by the exact UTF-8 bytes of each token: id → bytes and bytes → id.
///
/// Tokens live in one byte arena and an open-addressing hash table of ids, so a 200k-token
/// vocabulary costs a handful of allocations. Keys are compared byte for byte (a `String`
/// dictionary would treat canonically equivalent tokens such as "é" and "e\u{301}" as one).
struct TokenTable: Sendable {
    private var arena: [UInt8] = []
    /// Per id: start of its bytes in `arena`, or -1 when the id has no token.
    private var starts: [Int32] = []
    private var lengths: [Int32] = []
    /// Open addressing: `id + 1`, 0 for an empty slot.
    private var slots: [Int32] = []
    private var used = 0

    /// Ids must stay below this (a corrupt file must not make us allocate gigabytes).
    static let maxID = 1 << 22

    init(expectedCount: Int = 0) {
        var capacity = 16
        while capacity < expectedCount * 2 { capacity <<= 1 }
        slots = [Int32](repeating: 0, count: capacity)
        arena.reserveCapacity(expectedCount * 6)
    }

    /// One past the largest id with a token.
    var idBound: Int { starts.count }

    /// Number of distinct keys.
    var count: Int { used }

    /// Adds a token. A key already present is re-pointed to `id` (the last one wins, as in a JSON
    /// object read into a map); `id` keeps these bytes for decoding.
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>, id: Int32) throws {
        guard id >= 0, Int(id) < Self.maxID else {
            throw TokenizerError(.invalidModel, "token id \(id) is out of range (0..<\(Self.maxID))")
        }
        if Int(id) >= starts.count {
            let grow = Int(id) + 1 - starts.count
            starts.append(contentsOf: repeatElement(-1, count: grow))
            lengths.append(contentsOf: repeatElement(0, count: grow))
        }
        starts[Int(id)] = Int32(arena.count)
        lengths[Int(id)] = Int32(key.count)
        arena.append(contentsOf: key)
        if (used + 1) * 2 > slots.count { rehash(slots.count * 2) }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(key)) & mask
        while slots[slot] != 0 {
            let other = slots[slot] - 1
            if other == id || equals(other, key) {
                slots[slot] = id + 1
                return
            }
            slot = (slot + 1) & mask
        }
        slots[slot] = id + 1
        used += 1
    }

    mutating func insert(_ key: [UInt8], id: Int32) throws {
        try key.withUnsafeBufferPointer { try insert($0, id: id) }
    }

    /// The id of a token, by its bytes.
    func id(_ key: UnsafeBufferPointer<UInt8>) -> Int32? {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(key)) & mask
        while slots[slot] != 0 {
            let id = slots[slot] - 1
            if equals(id, key) { return id }
            slot = (slot + 1) & mask
        }
        return nil
    }

    func id<C: Collection>(_ key: C) -> Int32? where C.Element == UInt8 {
        if let found = key.withContiguousStorageIfAvailable({ id($0) }) { return found }
        return Array(key).withUnsafeBufferPointer { id($0) }
    }

    func id(_ key: String) -> Int32? {
        var key = key
        return key.withUTF8 { id($0) }
    }

    /// The bytes of token `id`, or nil when no token has that id.
    func bytes(of id: Int32) -> ArraySlice<UInt8>? {
        guard id >= 0, Int(id) < starts.count, starts[Int(id)] >= 0 else { return nil }
        let start = Int(starts[Int(id)])
        return arena[start..<(start + Int(lengths[Int(id)]))]
    }

    private func equals(_ id: Int32, _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        let length = Int(lengths[Int(id)])
        guard length == key.count else { return false }
        let start = Int(starts[Int(id)])
        return arena.withUnsafeBufferPointer { a in
            for k in 0..<length where a[start + k] != key[k] { return false }
            return true
        }
    }

    private mutating func rehash(_ capacity: Int) {
        var fresh = [Int32](repeating: 0, count: capacity)
        let mask = capacity - 1
        for entry in slots where entry != 0 {
            let id = Int(entry - 1)
            let start = Int(starts[id]), length = Int(lengths[id])
            let h = arena.withUnsafeBufferPointer { Self.hash(UnsafeBufferPointer(rebasing: $0[start..<(start + length)])) }
            var slot = Int(truncatingIfNeeded: h) & mask
            while fresh[slot] != 0 { slot = (slot + 1) & mask }
            fresh[slot] = entry
        }
        slots = fresh
    }

    /// FNV-1a over the bytes, then a final avalanche (the low bits index the table).
    static func hash(_ key: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key {
            h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        h ^= h >> 33
        h = h &* 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        return h
    }
}
