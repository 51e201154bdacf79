import Foundation
import HearthKernels

/// KV-cache snapshots: save what the cache holds for the current conversation and put it
/// back later, so a long conversation resumes without re-processing its prompt.
///
/// Layout (all integers little-endian):
///
/// | bytes | field |
/// |---|---|
/// | 8 | magic `HRTHKV01` |
/// | 4 | format version (``snapshotFormatVersion``) |
/// | 8 | model identity: FNV-1a 64 of architecture, decoder options, weight types and sizes |
/// | 4 × 5 | layers, width (kvHeads × headDim), kv type (0 f16, 1 f32, 2 q8_0, 3 q4_0), vocab, context capacity |
/// | 4 | token count `n` |
/// | 4 | (version ≥ 2) `first`: the first position the sliding-window layers' rows start at (0: all held) |
/// | 4 × n | the cached token ids |
/// | per layer | `m` key rows then `m` value rows, `width` elements of the kv type each, as the cache holds them (q8_0/q4_0: one record per head, ``KVCache``); `m` = `n` − `first` for a sliding-window layer, else `n` |
/// | 8 | checksum: ``snapshotChecksum(_:)`` of every byte before it |
///
/// A snapshot restores into a generator of the same model and KV type whose context holds
/// its tokens (the capacity may differ: only the filled rows are stored). A window-sized cache
/// (``KVCache/Window``) stores its sliding-window layers' rows from its window start on, and a
/// restore keeps as many of them as its own window buffer holds; a generator with full-length
/// sliding-window layers (`windowedCache: false`) refuses a snapshot whose `first` is not 0.
/// Version 1 (no `first`, every layer `n` rows) is still read. Version 3: a q8_0/q4_0 cache's
/// rows hold keys and values after ``HeadRotation`` (``Decoder/kvRotation``); an f16 or f32
/// snapshot of version 1 or 2 is still read, a quantized one is refused (its rows are not rotated).
extension Generator {
    /// The snapshot format this build writes and reads.
    package static let snapshotFormatVersion: UInt32 = 3

    static let snapshotMagic = Array("HRTHKV01".utf8)

    /// The KV types by their code in a snapshot's header.
    static let snapshotKVTypes: [UInt32: DType] = [0: .f16, 1: .f32, 2: .q8_0, 3: .q4_0]

    /// A KV type's code in a snapshot's header.
    static func snapshotKVTypeCode(_ type: DType) -> UInt32 {
        snapshotKVTypes.first { $0.value == type }?.key ?? 0
    }

    /// Identifies the model and its weights' layout: a snapshot made on another model, another
    /// quantization or another architecture revision is refused.
    package var modelIdentity: UInt64 {
        var text = "\(model.architecture)|\(model.options)|\(model.parameterCount)"
        for (type, bytes) in model.weightBytesByType.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            text += "|\(type.rawValue)=\(bytes)"
        }
        return snapshotChecksum(Data(text.utf8))
    }

    /// Tokens the most recent request's slot holds (the prefix its next turn can reuse).
    public var cachedTokenCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return min(slots[lastSequence].tokens.count, decoder.cache.counts[lastSequence])
    }

    /// Serialises the cached tokens and their key/value rows (see the layout above) of the
    /// most recent request's sequence slot, as they stand between two steps.
    public func snapshot() -> Data {
        lock.lock()
        defer { lock.unlock() }
        let cache = decoder.cache
        let slot = lastSequence
        var n = min(slots[slot].tokens.count, cache.counts[slot])
        if !cache.canResume(at: n, sequence: slot) { n = 0 }
        let first = n == 0 ? 0 : cache.windowStarts[slot]
        var data = Data()
        data.reserveCapacity(64 + 4 * n + 2 * cache.layerCount * n * cache.rowBytes)
        data.append(contentsOf: Self.snapshotMagic)
        data.appendLE(Self.snapshotFormatVersion)
        data.appendLE(modelIdentity)
        data.appendLE(UInt32(cache.layerCount))
        data.appendLE(UInt32(cache.width))
        data.appendLE(Self.snapshotKVTypeCode(cache.type))
        data.appendLE(UInt32(model.options.vocabSize))
        data.appendLE(UInt32(cache.capacity))
        data.appendLE(UInt32(n))
        data.appendLE(UInt32(first))
        for token in slots[slot].tokens.prefix(n) { data.appendLE(UInt32(bitPattern: token)) }
        for layer in 0..<cache.layerCount {
            let from = cache.isWindowed(layer: layer) ? first : 0
            let rows = (n - from) * cache.rowBytes
            guard rows > 0 else { continue }
            data.append(cache.key(layer, from, sequence: slot).assumingMemoryBound(to: UInt8.self), count: rows)
            data.append(cache.value(layer, from, sequence: slot).assumingMemoryBound(to: UInt8.self), count: rows)
        }
        data.appendLE(snapshotChecksum(data))
        return data
    }

    // Long: the snapshot format's checks in the order of its bytes (magic, version, checksum, model
    // identity, KV layout and type, tokens against the context): 15 checks, all before the cache is
    // touched, so no partial restore is possible.
    /// Puts a snapshot back into an idle sequence slot (the one sharing the most of its
    /// tokens, else the least recently used), so the next request whose prompt starts with
    /// the snapshot's tokens reuses them.
    ///
    /// Everything is checked before the cache is touched: magic, version, checksum, model
    /// identity, KV layout and type, and that the tokens fit this generator's context.
    /// - Throws: `EngineError` with code `.invalidSnapshot` (the generator is unchanged and usable).
    public func restore(_ data: Data) throws {
        var reader = SnapshotReader(data: data)
        let header = try reader.bytes(Self.snapshotMagic.count)
        guard Array(header) == Self.snapshotMagic else {
            throw Self.refuse("this is not a Hearth KV snapshot (bad magic)")
        }
        let version: UInt32 = try reader.integer()
        guard (1...Self.snapshotFormatVersion).contains(version) else {
            throw Self.refuse("snapshot format version \(version) is not one this build reads (1 to \(Self.snapshotFormatVersion))")
        }
        guard data.count >= reader.offset + 8 + 4 * 6 + 8 else { throw Self.refuse("the snapshot is truncated") }
        let stored = data.suffix(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }.littleEndian
        guard snapshotChecksum(data.prefix(data.count - 8)) == UInt64(stored) else {
            throw Self.refuse("the snapshot's checksum does not match (the file is corrupt)")
        }
        let identity: UInt64 = try reader.integer()
        let layers = Int(try reader.integer() as UInt32)
        let width = Int(try reader.integer() as UInt32)
        let kvType = try reader.integer() as UInt32
        let vocab = Int(try reader.integer() as UInt32)
        _ = try reader.integer() as UInt32  // the saving generator's capacity (informational)
        let n = Int(try reader.integer() as UInt32)
        let first = version >= 2 ? Int(try reader.integer() as UInt32) : 0

        lock.lock()
        defer { lock.unlock() }
        let cache = decoder.cache
        guard identity == modelIdentity, vocab == model.options.vocabSize else {
            throw Self.refuse("the snapshot was made with another model (or another quantization of it)")
        }
        guard layers == cache.layerCount, width == cache.width else {
            throw Self.refuse("the snapshot's KV layout (\(layers) layers × \(width)) is not this model's (\(cache.layerCount) × \(cache.width))")
        }
        guard let type = Self.snapshotKVTypes[kvType], type == cache.type else {
            throw Self.refuse("the snapshot's KV type is not this cache's \(cache.type.rawValue); use the same --kv-type")
        }
        guard version >= 3 || !type.isQuantized else {
            throw Self.refuse("the snapshot's \(type.rawValue) cache predates rotated quantized caches (format \(version)); save it again with this build")
        }
        guard n < cache.capacity else {
            throw Self.refuse("the snapshot holds \(n) tokens but this context holds \(cache.capacity); raise --ctx")
        }
        guard first <= n else { throw Self.refuse("the snapshot's window start is past its tokens") }
        // Rows per layer as stored: a sliding-window layer's from `first` on.
        let storedRows: [Int] = (0..<layers).map { model.options.isSliding($0) ? n - first : n }
        let layerBytes: Int = 2 * storedRows.reduce(0, +) * cache.rowBytes
        guard data.count - reader.offset == 4 * n + layerBytes + 8 else {
            throw Self.refuse("the snapshot's size does not match its header")
        }
        // Where this cache's window layers start: what the snapshot holds, less what its buffer cannot.
        var start = 0
        if first > 0 || (cache.window != nil && n > 0) {
            guard let window = cache.window else {
                throw Self.refuse(
                    "the snapshot holds only the last \(n - first) positions of the sliding-window layers, "
                        + "but this generator keeps them full-length")
            }
            start = max(first, n - window.span)
        }
        let tokenBytes = try reader.bytes(4 * n)
        let tokens = tokenBytes.withUnsafeBytes { raw in
            (0..<n).map { Int32(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
        guard tokens.allSatisfy({ $0 >= 0 && Int($0) < vocab }) else {
            throw Self.refuse("the snapshot holds token ids outside the vocabulary")
        }
        guard let slot = idleSlot(for: tokens) else {
            throw EngineError(.invalidOption, "every sequence slot is busy; restore when a request has finished")
        }
        // Validated: now overwrite the slot.
        cache.windowStarts[slot] = start
        for layer in 0..<layers {
            let storedFrom = n - storedRows[layer]
            let from = cache.isWindowed(layer: layer) ? start : 0
            let skip = (from - storedFrom) * cache.rowBytes, rows = (n - from) * cache.rowBytes
            let keys = try reader.bytes(storedRows[layer] * cache.rowBytes)
            let values = try reader.bytes(storedRows[layer] * cache.rowBytes)
            guard rows > 0 else { continue }
            keys.dropFirst(skip).copyBytes(
                to: UnsafeMutableRawBufferPointer(start: cache.key(layer, from, sequence: slot), count: rows))
            values.dropFirst(skip).copyBytes(
                to: UnsafeMutableRawBufferPointer(start: cache.value(layer, from, sequence: slot), count: rows))
        }
        cache.counts[slot] = n
        slots[slot].tokens = tokens
        touch(slot)
        lastSequence = slot
    }

    private static func refuse(_ message: String) -> EngineError {
        EngineError(
            .invalidSnapshot, message,
            remedy: "Re-process the conversation instead (its text is enough to rebuild the cache)")
    }
}

/// The snapshot checksum: FNV-1a over 64-bit little-endian words (then the tail bytes), which
/// runs at memory speed on the megabytes of a KV cache while still catching any flipped,
/// dropped or swapped byte with overwhelming probability.
package func snapshotChecksum(_ data: Data) -> UInt64 {
    let prime: UInt64 = 0x0000_0100_0000_01B3
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325
    data.withUnsafeBytes { raw in
        let words = raw.count / 8
        for i in 0..<words {
            hash = (hash ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8 * i, as: UInt64.self))) &* prime
        }
        for i in (8 * words)..<raw.count { hash = (hash ^ UInt64(raw[i])) &* prime }
    }
    return hash ^ UInt64(data.count)
}

extension Data {
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}

/// Reads a snapshot front to back, refusing reads past the end.
struct SnapshotReader {
    let data: Data
    private(set) var offset = 0

    init(data: Data) { self.data = data }

    mutating func bytes(_ count: Int) throws -> Data {
        guard count >= 0, data.count - offset >= count else {
            throw EngineError(.invalidSnapshot, "the snapshot is truncated at byte \(offset)")
        }
        let start = data.startIndex + offset
        offset += count
        return data[start..<(start + count)]
    }

    mutating func integer<T: FixedWidthInteger>() throws -> T {
        let raw = try bytes(MemoryLayout<T>.size)
        return T(littleEndian: raw.withUnsafeBytes { $0.loadUnaligned(as: T.self) })
    }
}
