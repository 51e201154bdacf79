import HearthKernels

/// The attention key/value cache, sized once for the context: per layer and per sequence
/// slot, `capacity` positions × `width` (kvHeads × headDim) keys and values, stored as f16
/// (default) or f32. Every slot is allocated up front, so the memory a decoder needs for
/// `sequences` concurrent conversations is known when it is created.
///
/// Not Sendable: owned by one `Decoder`, which is used by one thread at a time.
public final class KVCache {
    /// Positions the cache can hold.
    public let capacity: Int
    /// Elements per position per layer (kvHeads × headDim).
    public let width: Int
    public let layerCount: Int
    /// Sequence slots: independent conversations sharing the model, each with `capacity` positions.
    public let sequences: Int
    /// Storage type: `.f16`, `.f32`, `.q8_0` or `.q4_0`.
    public let type: DType
    /// Elements per head (width = kvHeads × headDim).
    public let headDim: Int
    /// Bytes of one head of one position.
    public let headBytes: Int
    /// Positions currently filled per slot (valid entries of slot `s` are 0..<counts[s]).
    public internal(set) var counts: [Int]
    /// Positions filled in slot 0 (the only slot of a single-sequence decoder).
    public internal(set) var count: Int {
        get { counts[0] }
        set { counts[0] = newValue }
    }
    private let keys: UnsafeMutableRawPointer
    private let values: UnsafeMutableRawPointer

    /// Allocates the whole cache. `type` must be `.f16`, `.f32`, `.q8_0` or `.q4_0`; `headDim`
    /// (default: `width`, one head) must divide `width`, and for the quantized types be a
    /// multiple of 32.
    /// - Throws: `EngineError` `.invalidOption` for another type, or a head the type cannot block.
    public init(
        layers: Int, capacity: Int, width: Int, sequences: Int = 1, type: DType = .f16, headDim: Int? = nil
    ) throws {
        guard type.isKVCacheType else {
            throw EngineError(.invalidOption, "the KV cache stores f16, f32, q8_0 or q4_0, not \(type.rawValue)")
        }
        let headDim = headDim ?? width
        guard headDim > 0, width % headDim == 0, let headBytes = type.kvHeadBytes(headDim: headDim) else {
            throw EngineError(
                .invalidOption,
                "a \(type.rawValue) KV cache needs heads of a multiple of 32 elements; this model's heads have \(headDim) (use --kv-type f16)")
        }
        self.headDim = headDim
        self.headBytes = headBytes
        guard sequences >= 1, sequences <= 1024 else {
            throw EngineError(.invalidOption, "sequence slots must be between 1 and 1024, got \(sequences)")
        }
        self.sequences = sequences
        counts = Array(repeating: 0, count: sequences)
        self.capacity = capacity
        self.width = width
        self.type = type
        layerCount = layers
        let bytes = layers * sequences * capacity * (width / headDim) * headBytes
        keys = .allocate(byteCount: max(bytes, 1), alignment: 64)
        values = .allocate(byteCount: max(bytes, 1), alignment: 64)
        keys.initializeMemory(as: UInt8.self, repeating: 0, count: max(bytes, 1))
        values.initializeMemory(as: UInt8.self, repeating: 0, count: max(bytes, 1))
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Bytes the cache occupies.
    public var byteCount: Int { 2 * layerCount * sequences * capacity * rowBytes }

    /// Bytes from one position to the next.
    public var rowBytes: Int { (width / headDim) * headBytes }

    /// Bytes one position's keys and values take over all layers (what a token adds to the cache).
    public var bytesPerToken: Int { 2 * layerCount * rowBytes }

    /// Byte offset of head `kvHead` within a position's row (a quantized head is one record).
    @inline(__always)
    public func headOffset(_ kvHead: Int) -> Int { kvHead * headBytes }

    /// Key vector of `layer` at `position` of slot `sequence` (`width` elements of `type`);
    /// a slot's positions are contiguous.
    @inline(__always)
    public func key(_ layer: Int, _ position: Int, sequence: Int = 0) -> UnsafeMutableRawPointer {
        keys + ((layer * sequences + sequence) * capacity + position) * rowBytes
    }

    /// Value vector of `layer` at `position` of slot `sequence`.
    @inline(__always)
    public func value(_ layer: Int, _ position: Int, sequence: Int = 0) -> UnsafeMutableRawPointer {
        values + ((layer * sequences + sequence) * capacity + position) * rowBytes
    }

    /// Stores a position's keys and values (Float in, converted to `type`; quantized head by head).
    @inline(__always)
    public func store(
        layer: Int, position: Int, sequence: Int = 0, keys k: UnsafePointer<Float>, values v: UnsafePointer<Float>
    ) {
        let keyRow = key(layer, position, sequence: sequence), valueRow = value(layer, position, sequence: sequence)
        if !type.isQuantized {
            storeCached(k, type: type, count: width, into: keyRow)
            storeCached(v, type: type, count: width, into: valueRow)
            return
        }
        for h in 0..<(width / headDim) {
            storeCached(k + h * headDim, type: type, count: headDim, into: keyRow + headOffset(h))
            storeCached(v + h * headDim, type: type, count: headDim, into: valueRow + headOffset(h))
        }
    }

    /// Forgets positions of slot `sequence` from `position` on (they will be overwritten).
    public func truncate(to position: Int, sequence: Int = 0) {
        counts[sequence] = max(0, min(counts[sequence], position))
    }

    /// Copies the first `count` positions of slot `source` into slot `target` (a shared
    /// prefix: keys and values of a position depend only on the tokens up to it), leaving
    /// `target` holding exactly those positions.
    public func copyPrefix(from source: Int, to target: Int, count n: Int) {
        let n = max(0, min(n, counts[source], capacity))
        if source != target {
            for layer in 0..<layerCount {
                key(layer, 0, sequence: target).copyMemory(from: key(layer, 0, sequence: source), byteCount: n * rowBytes)
                value(layer, 0, sequence: target).copyMemory(from: value(layer, 0, sequence: source), byteCount: n * rowBytes)
            }
        }
        counts[target] = n
    }
}
