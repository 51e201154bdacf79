/// Element types a weight tensor can be stored in, with their storage traits.
///
/// This is the trait table of STYLE.md: block size and bytes per block are data, so
/// kernels, loaders and size checks ask the type instead of switching on names.
public enum DType: String, Sendable, CaseIterable, Codable {
    case f32
    case f16
    case bf16

    /// Number of elements stored together in one block (1 for plain floats).
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16: return 1
        }
    }

    /// Bytes one block occupies.
    public var bytesPerBlock: Int {
        switch self {
        case .f32: return 4
        case .f16, .bf16: return 2
        }
    }

    /// Storage cost in bits per weight.
    public var bitsPerWeight: Double { Double(bytesPerBlock * 8) / Double(blockSize) }

    /// Bytes needed for `count` elements, or nil when `count` is not a whole number of blocks
    /// or the size overflows.
    public func byteCount(elements count: Int) -> Int? {
        guard count >= 0, count % blockSize == 0 else { return nil }
        let (bytes, overflow) = (count / blockSize).multipliedReportingOverflow(by: bytesPerBlock)
        return overflow ? nil : bytes
    }
}
