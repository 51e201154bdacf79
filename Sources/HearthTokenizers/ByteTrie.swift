/// A trie over byte strings with an `Int32` value per key: the prefix searches SentencePiece's
/// encoders make (every vocabulary piece that starts at a text position, the longest
/// user-defined piece there) and exact lookups of a slice of the text.
///
/// Edges live in one open-addressing hash table keyed by (node, byte), so building it is one
/// probe per key byte and there is one allocation per array, whatever the vocabulary size.
struct ByteTrie: Sendable {
    /// Per slot: `node << 8 | byte` + 1 of the edge stored there, 0 for an empty slot.
    private var edgeKeys: [UInt64]
    /// Per slot: the node the edge leads to.
    private var edgeTargets: [Int32]
    /// Per node: the value of the key ending there, or -1. Node 0 is the root.
    private var values: [Int32] = [-1]
    private var mask: Int

    /// The root, where every walk starts.
    static let root: Int32 = 0

    /// An empty trie with room for keys of `totalBytes` bytes in all.
    init(totalBytes: Int) {
        var capacity = 16
        while capacity < 2 * (totalBytes + 1) { capacity <<= 1 }
        edgeKeys = [UInt64](repeating: 0, count: capacity)
        edgeTargets = [Int32](repeating: 0, count: capacity)
        values.reserveCapacity(totalBytes + 1)
        mask = capacity - 1
    }

    /// Whether no key was inserted.
    var isEmpty: Bool { values.count == 1 && values[0] < 0 }

    @inline(__always)
    private static func slot(_ key: UInt64, _ mask: Int) -> Int {
        var h = key &* 0x9E37_79B9_7F4A_7C15
        h ^= h >> 29
        return Int(truncatingIfNeeded: h) & mask
    }

    /// Adds `key` with `value`; returns the value already stored for `key`, if there was one
    /// (which is then kept).
    @discardableResult
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>, value: Int32) -> Int32? {
        var node: Int32 = Self.root
        for byte in key {
            let edge = (UInt64(node) << 8 | UInt64(byte)) + 1
            var slot = Self.slot(edge, mask)
            while true {
                let stored = edgeKeys[slot]
                if stored == edge {
                    node = edgeTargets[slot]
                    break
                }
                if stored == 0 {
                    if 2 * values.count >= edgeKeys.count {
                        grow()
                        return insert(key, value: value)
                    }
                    edgeKeys[slot] = edge
                    let fresh = Int32(values.count)
                    edgeTargets[slot] = fresh
                    values.append(-1)
                    node = fresh
                    break
                }
                slot = (slot + 1) & mask
            }
        }
        if values[Int(node)] >= 0 { return values[Int(node)] }
        values[Int(node)] = value
        return nil
    }

    private mutating func grow() {
        let oldKeys = edgeKeys, oldTargets = edgeTargets
        let capacity = oldKeys.count * 2
        edgeKeys = [UInt64](repeating: 0, count: capacity)
        edgeTargets = [Int32](repeating: 0, count: capacity)
        mask = capacity - 1
        for i in oldKeys.indices where oldKeys[i] != 0 {
            var slot = Self.slot(oldKeys[i], mask)
            while edgeKeys[slot] != 0 { slot = (slot + 1) & mask }
            edgeKeys[slot] = oldKeys[i]
            edgeTargets[slot] = oldTargets[i]
        }
    }

    /// The node reached from `node` over `byte`, or -1.
    @inline(__always)
    func child(_ node: Int32, _ byte: UInt8) -> Int32 {
        let edge = (UInt64(node) << 8 | UInt64(byte)) + 1
        var slot = Self.slot(edge, mask)
        while true {
            let stored = edgeKeys[slot]
            if stored == edge { return edgeTargets[slot] }
            if stored == 0 { return -1 }
            slot = (slot + 1) & mask
        }
    }

    /// The value of the key that ends at `node`, or -1.
    @inline(__always)
    func value(_ node: Int32) -> Int32 { values[Int(node)] }

    /// The value stored for exactly `key`.
    func lookup(_ key: UnsafeBufferPointer<UInt8>) -> Int32? {
        var node = Self.root
        for byte in key {
            node = child(node, byte)
            if node < 0 { return nil }
        }
        let found = values[Int(node)]
        return found >= 0 ? found : nil
    }

    /// The length of the longest key that is a prefix of `text[start...]`, or 0.
    func longestPrefix(of text: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var node = Self.root
        var longest = 0
        var i = start
        while i < text.count {
            node = child(node, text[i])
            if node < 0 { break }
            i += 1
            if values[Int(node)] >= 0 { longest = i - start }
        }
        return longest
    }
}
