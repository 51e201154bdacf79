/// Element types a weight tensor can be stored in, with their storage traits.
///
/// This is the trait table of STYLE.md: block size and bytes per block are data, so
/// kernels, loaders and size checks ask the type instead of switching on names.
/// The quantized block types have GGUF's block semantics: 32 weights per block with an
/// f16 scale (`q4_0`: w = d·(q−8); `q4_1`: w = d·q + m; `q8_0`: w = d·q). `q5_0`, `q5_1`
/// and the K-quants (`q2_K`…`q6_K`, 256-weight super-blocks) are ggml's layouts as read
/// from GGUF files; their scalar dequantizers are in GGMLBlocks.swift (docs/GGUF.md).
/// `q8_a` is Hearth's own 8-bit affine block (w = d·q + m, q ∈ 0…255, f16 d and m), the
/// home of MLX's 8-bit affine weights (docs/MLX.md); it has no ggml type.
public enum DType: String, Sendable, CaseIterable, Codable {
    case f32
    case f16
    case bf16
    case q4_0
    case q4_1
    case q8_0
    case q5_0
    case q5_1
    case q2_K
    case q3_K
    case q4_K
    case q5_K
    case q6_K
    case q8_a

    /// Number of elements stored together in one block (1 for plain floats).
    public var blockSize: Int {
        switch self {
        case .f32, .f16, .bf16: return 1
        case .q4_0, .q4_1, .q8_0, .q5_0, .q5_1, .q8_a: return 32
        case .q2_K, .q3_K, .q4_K, .q5_K, .q6_K: return 256
        }
    }

    /// Bytes one block occupies.
    public var bytesPerBlock: Int {
        switch self {
        case .f32: return 4
        case .f16, .bf16: return 2
        case .q4_0: return 18  // f16 d + 16 bytes of nibbles
        case .q4_1: return 20  // f16 d, f16 m + 16 bytes of nibbles
        case .q8_0: return 34  // f16 d + 32 int8
        case .q5_0: return 22  // f16 d, 4 bytes of high bits, 16 bytes of nibbles
        case .q5_1: return 24  // f16 d, f16 m, 4 bytes of high bits, 16 bytes of nibbles
        case .q2_K: return 84  // 16 scale/min bytes, 64 bytes of 2-bit quants, f16 d, f16 dmin
        case .q3_K: return 110  // 32 bytes high-bit mask, 64 bytes of 2-bit quants, 12 scale bytes, f16 d
        case .q4_K: return 144  // f16 d, f16 dmin, 12 scale/min bytes, 128 bytes of nibbles
        case .q5_K: return 176  // f16 d, f16 dmin, 12 scale/min bytes, 32 bytes high bits, 128 bytes of nibbles
        case .q6_K: return 210  // 128 bytes low nibbles, 64 bytes high 2 bits, 16 int8 scales, f16 d
        case .q8_a: return 36  // f16 d, f16 m + 32 uint8
        }
    }

    /// Whether this is a block-quantized type.
    public var isQuantized: Bool { blockSize > 1 }

    /// Whether Hearth quantizes to this type itself (`hearth quantize`, MLX): `q4_0`, `q4_1`,
    /// `q8_0` and `q8_a`. The other block types come from GGUF files.
    package var supportsInterleaved16: Bool { self == .q4_0 || self == .q4_1 || self == .q8_0 || self == .q8_a }

    /// Whether the integer kernels read this type in the `interleaved16` layout: Hearth's own
    /// types and the GGUF types a load repacks losslessly (`q5_0`, `q5_1`, `q4_K`, `q5_K`,
    /// `q6_K`). `q2_K` and `q3_K` stay in `rows` layout.
    package var hasKernelLayout: Bool { supportsInterleaved16 || [.q5_0, .q5_1, .q4_K, .q5_K, .q6_K].contains(self) }

    /// Whether blocks carry a minimum m next to the scale (w = d·q + m): `q4_1`, `q8_a`.
    /// Their interleaved tiles hold the 16 minimums after the 16 scales.
    package var hasMinimum: Bool { self == .q4_1 || self == .q8_a }

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

/// How a matrix's blocks are ordered in memory.
package enum WeightLayout: String, Sendable, Codable {
    /// Row-major: all blocks of row 0, then row 1… (safetensors, GGUF).
    case rows
    /// Hearth's kernel layout for block types: rows in groups of 16; for each group and
    /// each block (32 columns; 256 for the K-quants), the 16 scales (then 16 minimums for q4_1)
    /// and the 16 rows' quants interleaved four bytes per row, so one 64-byte vector holds four
    /// weights of each of the 16 rows — the operand shape of `vpdpbusd`. Rows are padded to 16
    /// with zeros. See docs/KERNELS.md and ``KTile``.
    case interleaved16
}

extension DType {
    /// Bytes of one (16-row group × block) tile in the `interleaved16` layout: 16 blocks'
    /// bytes, except for q4_K and q5_K, whose tiles keep the packed 6-bit scales and mins
    /// unpacked to a byte each (``KTile``).
    package var interleavedTileBytes: Int {
        switch self {
        case .q4_K: return KTile.kNibbles + 2048
        case .q5_K: return KTile.k5High + 512
        default: return 16 * bytesPerBlock
        }
    }

    /// Bytes of a `rows × cols` matrix in `layout`, or nil if the shape does not fit the type.
    /// `.interleaved16` exists only for the types with a kernel layout (`hasKernelLayout`);
    /// for every other type it returns nil.
    package func matrixBytes(rows: Int, cols: Int, layout: WeightLayout) -> Int? {
        guard rows >= 0, cols >= 0, cols % blockSize == 0 else { return nil }
        switch layout {
        case .rows:
            let (n, overflow) = rows.multipliedReportingOverflow(by: cols)
            return overflow ? nil : byteCount(elements: n)
        case .interleaved16:
            guard hasKernelLayout else { return nil }
            let groups = (rows + 15) / 16
            let (tiles, o1) = groups.multipliedReportingOverflow(by: cols / blockSize)
            let (bytes, o2) = tiles.multipliedReportingOverflow(by: interleavedTileBytes)
            return o1 || o2 ? nil : bytes
        }
    }
}

extension DType {
    /// The type's id in ggml / GGUF tensor infos (`enum ggml_type`); nil for Hearth's own `q8_a`.
    package var ggmlTypeID: UInt32? {
        switch self {
        case .f32: return 0
        case .f16: return 1
        case .q4_0: return 2
        case .q4_1: return 3
        case .q5_0: return 6
        case .q5_1: return 7
        case .q8_0: return 8
        case .q2_K: return 10
        case .q3_K: return 11
        case .q4_K: return 12
        case .q5_K: return 13
        case .q6_K: return 14
        case .bf16: return 30
        case .q8_a: return nil
        }
    }

    /// The type for a ggml type id, or nil when Hearth has no such type.
    package init?(ggmlTypeID id: UInt32) {
        guard let type = DType.allCases.first(where: { $0.ggmlTypeID == id }) else { return nil }
        self = type
    }
}
