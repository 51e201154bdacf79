import HearthKernels

/// The attention key/value cache, sized once for the context: per layer, `capacity`
/// positions × `width` (kvHeads × headDim) keys and values, stored as f16 (default) or f32.
///
/// Not Sendable: owned by one `Decoder`, which is used by one thread at a time.
public final class KVCache {
    /// Positions the cache can hold.
    public let capacity: Int
    /// Elements per position per layer (kvHeads × headDim).
    public let width: Int
    public let layerCount: Int
    /// Storage type: `.f16` or `.f32`.
    public let type: DType
    /// Positions currently filled (valid entries are 0..<count).
    public internal(set) var count = 0
    private let keys: UnsafeMutableRawPointer
    private let values: UnsafeMutableRawPointer
    private let elementBytes: Int

    /// Allocates the whole cache. `type` must be `.f16` or `.f32`.
    public init(layers: Int, capacity: Int, width: Int, type: DType = .f16) throws {
        guard type == .f16 || type == .f32 else {
            throw EngineError(.invalidOption, "the KV cache stores f16 or f32, not \(type.rawValue)")
        }
        self.capacity = capacity
        self.width = width
        self.type = type
        layerCount = layers
        elementBytes = type == .f16 ? 2 : 4
        let bytes = layers * capacity * width * elementBytes
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
    public var byteCount: Int { 2 * layerCount * capacity * width * elementBytes }

    /// Bytes from one position to the next.
    public var rowBytes: Int { width * elementBytes }

    /// Key vector of `layer` at `position` (`width` elements of `type`).
    @inline(__always)
    public func key(_ layer: Int, _ position: Int) -> UnsafeMutableRawPointer {
        keys + (layer * capacity + position) * rowBytes
    }

    /// Value vector of `layer` at `position`.
    @inline(__always)
    public func value(_ layer: Int, _ position: Int) -> UnsafeMutableRawPointer {
        values + (layer * capacity + position) * rowBytes
    }

    /// Stores a position's keys and values (Float in, converted to `type`).
    @inline(__always)
    public func store(layer: Int, position: Int, keys k: UnsafePointer<Float>, values v: UnsafePointer<Float>) {
        storeCached(k, type: type, count: width, into: key(layer, position))
        storeCached(v, type: type, count: width, into: value(layer, position))
    }

    /// Forgets positions from `position` on (they will be overwritten).
    public func truncate(to position: Int) {
        count = max(0, min(count, position))
    }
}
