/// Rearranging MLX affine-quantized matrices into Hearth's kernel layout.
///
/// MLX's affine quantization (`mlx.core.quantize`, mode `affine`) stores a `(rows, cols)`
/// matrix as `rows × cols·bits/32` little-endian UInt32 words — element j of a row sits in
/// word `j·bits/32`, at bit `(j mod 32/bits)·bits`, lowest bits first — plus one scale s and
/// one bias b per group of `groupSize` consecutive elements of a row: w = s·q + b, q ∈ 0…2^bits−1.
///
/// For 4 bits that is exactly the q4_1 rule (w = d·q + m, q ∈ 0…15): a group of 32, 64 or 128
/// splits into q4_1 blocks of 32 that share the group's scale and bias, so the nibbles move
/// into `interleaved16` tiles without requantizing. For 8 bits it is `q8_a`'s rule
/// (w = d·q + m, q ∈ 0…255) and the bytes move the same way (docs/MLX.md).
package enum MLXRepack {
    /// Writes an MLX 4-bit affine matrix as q4_1 `interleaved16` tiles.
    ///
    /// - Parameters:
    ///   - packed: `rows × cols/8` UInt32 words (little-endian), MLX's packing.
    ///   - scales: `rows × cols/groupSize` f16 bit patterns, row-major.
    ///   - biases: same shape as `scales`.
    ///   - groupSize: a positive multiple of 32 dividing `cols`.
    ///   - out: `DType.q4_1.matrixBytes(rows:cols:layout: .interleaved16)` zeroed bytes; the
    ///     padding rows of the last 16-row group stay zero.
    ///   - threads: 16-row groups are split over this many threads.
    /// The caller has validated every size; nothing here reads file data unchecked.
    package static func repack4Bit(
        packed: UnsafeRawPointer, scales: UnsafePointer<UInt16>, biases: UnsafePointer<UInt16>,
        rows: Int, cols: Int, groupSize: Int, into out: UnsafeMutableRawPointer, threads: Int
    ) {
        forEachBlock(
            dtype: .q4_1, packed: packed, scales: scales, biases: biases, rows: rows, cols: cols, groupSize: groupSize,
            into: out, threads: threads
        ) { packed, row, b, quants in
            let words = packed + row * (cols / 2)
            // Elements 0…15 and 16…31 of the block, one nibble each, element i at bits 4i.
            let lo = UInt64(littleEndian: words.loadUnaligned(fromByteOffset: 16 * b, as: UInt64.self))
            let hi = UInt64(littleEndian: words.loadUnaligned(fromByteOffset: 16 * b + 8, as: UInt64.self))
            // q4_1 block byte i = element i (low nibble) | element i + 16 (high nibble).
            let first = spreadNibbles(UInt32(truncatingIfNeeded: lo)) | spreadNibbles(UInt32(truncatingIfNeeded: hi)) << 4
            let second = spreadNibbles(UInt32(truncatingIfNeeded: lo >> 32)) | spreadNibbles(UInt32(truncatingIfNeeded: hi >> 32)) << 4
            // Block bytes 4k…4k+3 go to chunk k (docs/KERNELS.md).
            quants.storeBytes(of: UInt32(truncatingIfNeeded: first).littleEndian, as: UInt32.self)
            quants.storeBytes(of: UInt32(truncatingIfNeeded: first >> 32).littleEndian, toByteOffset: 64, as: UInt32.self)
            quants.storeBytes(of: UInt32(truncatingIfNeeded: second).littleEndian, toByteOffset: 128, as: UInt32.self)
            quants.storeBytes(of: UInt32(truncatingIfNeeded: second >> 32).littleEndian, toByteOffset: 192, as: UInt32.self)
        }
    }

    /// Writes an MLX 8-bit affine matrix as q8_a `interleaved16` tiles. `packed` holds
    /// `rows × cols/4` little-endian UInt32 words, element j of a row in byte j of the row
    /// (lowest bits first); the other parameters are as for `repack4Bit`, with `out` sized by
    /// `DType.q8_a.matrixBytes(rows:cols:layout: .interleaved16)`.
    package static func repack8Bit(
        packed: UnsafeRawPointer, scales: UnsafePointer<UInt16>, biases: UnsafePointer<UInt16>,
        rows: Int, cols: Int, groupSize: Int, into out: UnsafeMutableRawPointer, threads: Int
    ) {
        forEachBlock(
            dtype: .q8_a, packed: packed, scales: scales, biases: biases, rows: rows, cols: cols, groupSize: groupSize,
            into: out, threads: threads
        ) { packed, row, b, quants in
            let bytes = packed + row * cols
            // Block bytes 4k…4k+3 (elements 4k…4k+3) go to chunk k.
            for k in 0..<8 {
                quants.storeBytes(
                    of: bytes.loadUnaligned(fromByteOffset: 32 * b + 4 * k, as: UInt32.self), toByteOffset: 64 * k,
                    as: UInt32.self)
            }
        }
    }

    /// The walk both repacks share: for every row and 32-column block, writes the row's group
    /// scale and bias into the tile (d at 2r, m at 32 + 2r) and lets `writeQuants` store the
    /// block's quants from `(packed, row, block)` at the row's first chunk slot (tile + 64 + 4r).
    /// 16-row groups are split over `threads` workers.
    @inline(__always)
    private static func forEachBlock(
        dtype: DType, packed: UnsafeRawPointer, scales: UnsafePointer<UInt16>, biases: UnsafePointer<UInt16>,
        rows: Int, cols: Int, groupSize: Int, into out: UnsafeMutableRawPointer, threads: Int,
        writeQuants: @escaping @Sendable (UnsafeRawPointer, Int, Int, UnsafeMutableRawPointer) -> Void
    ) {
        let source = SendableSource(packed: packed, scales: scales, biases: biases)
        let output = UncheckedPointer(out)
        let blocks = cols / 32
        let groupsPerRow = cols / groupSize
        let blocksPerGroup = groupSize / 32
        let tileBytes = dtype.interleavedTileBytes
        let rowGroups = (rows + 15) / 16
        let workers = max(1, min(threads, rowGroups))
        DispatchQueueShim.concurrentPerform(iterations: workers) { worker in
            for g in (rowGroups * worker / workers)..<(rowGroups * (worker + 1) / workers) {
                for r in 0..<min(16, rows - g * 16) {
                    let row = g * 16 + r
                    let s = source.scales + row * groupsPerRow, m = source.biases + row * groupsPerRow
                    for b in 0..<blocks {
                        let tile = output.pointer + (g * blocks + b) * tileBytes
                        tile.storeBytes(of: s[b / blocksPerGroup], toByteOffset: 2 * r, as: UInt16.self)
                        tile.storeBytes(of: m[b / blocksPerGroup], toByteOffset: 32 + 2 * r, as: UInt16.self)
                        writeQuants(source.packed, row, b, tile + 64 + 4 * r)
                    }
                }
            }
        }
    }

    /// The 8 nibbles of `x` as the low halves of 8 bytes: nibble i (bits 4i…4i+3) → byte i.
    @inline(__always)
    static func spreadNibbles(_ x: UInt32) -> UInt64 {
        var t = UInt64(x)
        t = (t | t << 16) & 0x0000_FFFF_0000_FFFF
        t = (t | t << 8) & 0x00FF_00FF_00FF_00FF
        t = (t | t << 4) & 0x0F0F_0F0F_0F0F_0F0F
        return t
    }

    /// Element `j` of row `row` of an MLX-packed matrix with `bits` bits per element (2, 4 or 8) —
    /// the scalar definition of MLX's packing, for tests and references.
    package static func element(_ packed: UnsafeRawPointer, row: Int, cols: Int, bits: Int, column j: Int) -> Int {
        let perWord = 32 / bits
        let word = UInt32(littleEndian: packed.loadUnaligned(fromByteOffset: 4 * (row * (cols / perWord) + j / perWord), as: UInt32.self))
        return Int((word >> UInt32((j % perWord) * bits)) & UInt32((1 << bits) - 1))
    }
}

/// Read-only source pointers handed to the repack workers.
/// `@unchecked Sendable`: the workers only read them, and the caller keeps them alive.
private struct SendableSource: @unchecked Sendable {
    let packed: UnsafeRawPointer
    let scales: UnsafePointer<UInt16>
    let biases: UnsafePointer<UInt16>
}
