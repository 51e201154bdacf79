/// Byte strings to ids by open addressing over one contiguous copy of the vocabulary's bytes:
/// the lookup SentencePiece-style merging does for every candidate pair. A slice of the text
/// is looked up as it lies (no `String` is built, hashed or compared), and strings compare
/// byte for byte, as libsentencepiece and llama.cpp compare them (a `[String: Int32]` compares
/// by canonical equivalence, so NFC and NFD spellings of one piece would collide).
struct PieceTable: Sendable {
    /// Ids by slot, -1 for an empty slot; the capacity is a power of two at least twice the count.
    private let slots: [Int32]
    /// The bytes of id `i` are `storage[offsets[i]..<offsets[i + 1]]`.
    private let offsets: [Int32]
    private let storage: [UInt8]
    /// The longest piece in bytes: longer slices are not looked up.
    let longest: Int

    /// Builds the table; when two ids have the same bytes, the lower id is kept (the first
    /// one, as `tokenizer.ggml.tokens` lists them).
    init(pieces: [String]) {
        var storage: [UInt8] = []
        var offsets: [Int32] = [0]
        offsets.reserveCapacity(pieces.count + 1)
        for piece in pieces {
            storage.append(contentsOf: piece.utf8)
            offsets.append(Int32(clamping: storage.count))
        }
        var capacity = 16
        while capacity < 2 * pieces.count { capacity <<= 1 }
        var slots = [Int32](repeating: -1, count: capacity)
        var longest = 0
        storage.withUnsafeBufferPointer { bytes in
            for id in pieces.indices {
                let start = Int(offsets[id]), count = Int(offsets[id + 1]) - start
                longest = max(longest, count)
                let key = UnsafeBufferPointer(rebasing: bytes[start..<(start + count)])
                var slot = Int(truncatingIfNeeded: Self.hash(key)) & (capacity - 1)
                while slots[slot] >= 0 {
                    let other = Int(slots[slot])
                    let otherStart = Int(offsets[other])
                    if Int(offsets[other + 1]) - otherStart == count
                        && key.elementsEqual(bytes[otherStart..<(otherStart + count)])
                    {
                        break
                    }
                    slot = (slot + 1) & (capacity - 1)
                }
                if slots[slot] < 0 { slots[slot] = Int32(id) }
            }
        }
        self.slots = slots
        self.offsets = offsets
        self.storage = storage
        self.longest = longest
    }

    /// FNV-1a (64-bit) over the bytes.
    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            h = (h ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return h ^ (h >> 29)
    }

    /// The id whose bytes equal `key`, if any.
    @inline(__always)
    func id(of key: UnsafeBufferPointer<UInt8>) -> Int32? {
        guard key.count <= longest else { return nil }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: Self.hash(key)) & mask
        return storage.withUnsafeBufferPointer { bytes in
            while true {
                let id = slots[slot]
                if id < 0 { return nil }
                let start = Int(offsets[Int(id)])
                if Int(offsets[Int(id) + 1]) - start == key.count,
                    memcmpEqual(key.baseAddress, bytes.baseAddress.map { $0 + start }, key.count)
                {
                    return id
                }
                slot = (slot + 1) & mask
            }
        }
    }

    /// The id of a piece given as a string.
    func id(of piece: String) -> Int32? {
        var piece = piece
        return piece.withUTF8 { id(of: $0) }
    }
}

@inline(__always)
private func memcmpEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
    guard count > 0 else { return true }
    guard let a, let b else { return false }
    for i in 0..<count where a[i] != b[i] { return false }
    return true
}
