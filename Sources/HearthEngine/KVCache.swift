/// The attention key/value cache, sized once for the context: per layer, `capacity`
/// positions × `kvHeads × headDim` keys and values.
///
/// Not Sendable: owned by one `Decoder`, which is used by one thread at a time.
public final class KVCache {
    /// Positions the cache can hold.
    public let capacity: Int
    /// Floats per position per layer (kvHeads × headDim).
    public let width: Int
    public let layerCount: Int
    /// Positions currently filled (valid entries are 0..<count).
    public internal(set) var count = 0
    private let keys: UnsafeMutablePointer<Float>
    private let values: UnsafeMutablePointer<Float>

    /// Allocates the whole cache.
    public init(layers: Int, capacity: Int, width: Int) {
        self.capacity = capacity
        self.width = width
        layerCount = layers
        let total = layers * capacity * width
        keys = .allocate(capacity: total)
        values = .allocate(capacity: total)
        keys.initialize(repeating: 0, count: total)
        values.initialize(repeating: 0, count: total)
    }

    deinit {
        keys.deallocate()
        values.deallocate()
    }

    /// Bytes the cache occupies.
    public var byteCount: Int { 2 * layerCount * capacity * width * MemoryLayout<Float>.size }

    /// Key vector of `layer` at `position` (`width` floats).
    @inline(__always)
    public func key(_ layer: Int, _ position: Int) -> UnsafeMutablePointer<Float> {
        keys + (layer * capacity + position) * width
    }

    /// Value vector of `layer` at `position` (`width` floats).
    @inline(__always)
    public func value(_ layer: Int, _ position: Int) -> UnsafeMutablePointer<Float> {
        values + (layer * capacity + position) * width
    }

    /// Forgets positions from `position` on (they will be overwritten).
    public func truncate(to position: Int) {
        count = max(0, min(count, position))
    }
}
