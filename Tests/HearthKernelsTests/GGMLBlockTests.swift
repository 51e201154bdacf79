import Foundation
import Testing

@testable import HearthKernels

/// `Tests/Fixtures/gguf/types.json` (scripts/make_gguf_fixtures.py): gguf-py's dequantized
/// values for every tensor of `types.gguf`, with each tensor's absolute byte offset.
struct GGUFTypesReference: Decodable {
    struct Tensor: Decodable {
        let ggml_type: UInt32
        let type_name: String
        let dims: [Int]
        let shape: [Int]
        let offset: Int
        let values: [Double]
    }

    let generator: String
    let alignment: Int
    let tensors: [String: Tensor]

    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/gguf")

    static func load() throws -> GGUFTypesReference {
        try JSONDecoder().decode(Self.self, from: Data(contentsOf: directory.appendingPathComponent("types.json")))
    }

    static func fileBytes() throws -> [UInt8] {
        Array(try Data(contentsOf: directory.appendingPathComponent("types.gguf")))
    }
}

/// The scalar reference dequantizers against gguf-py, and the DType trait table.
@Suite struct GGMLBlockTests {
    /// Fixture tensor name for each type (gguf-py's type names, lowercased).
    static let fixtureTypes: [DType] = [
        .f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K,
    ]

    @Test func blockTraitsMatchGGML() {
        let expected: [DType: (block: Int, bytes: Int, id: UInt32)] = [
            .f32: (1, 4, 0), .f16: (1, 2, 1), .bf16: (1, 2, 30), .q4_0: (32, 18, 2), .q4_1: (32, 20, 3),
            .q5_0: (32, 22, 6), .q5_1: (32, 24, 7), .q8_0: (32, 34, 8), .q2_K: (256, 84, 10),
            .q3_K: (256, 110, 11), .q4_K: (256, 144, 12), .q5_K: (256, 176, 13), .q6_K: (256, 210, 14),
        ]
        // q8_a is Hearth's own (MLX 8-bit affine); it has no ggml id.
        #expect(DType.q8_a.ggmlTypeID == nil)
        let ggmlTypes = DType.allCases.filter { $0 != .q8_a }
        #expect(expected.count == ggmlTypes.count)
        for dtype in ggmlTypes {
            let e = expected[dtype]
            #expect(dtype.blockSize == e?.block, "\(dtype)")
            #expect(dtype.bytesPerBlock == e?.bytes, "\(dtype)")
            #expect(dtype.ggmlTypeID == e?.id, "\(dtype)")
            #expect(dtype.ggmlTypeID.flatMap(DType.init(ggmlTypeID:)) == dtype)
        }
        for unknown: UInt32 in [4, 5, 9, 15, 16, 24, 31, 99, .max] { #expect(DType(ggmlTypeID: unknown) == nil) }
        #expect(DType.q4_K.byteCount(elements: 512) == 288)
        #expect(DType.q4_K.byteCount(elements: 32) == nil)
    }

    @Test func interleavedLayoutTypes() {
        for dtype in DType.allCases {
            let legacy = [DType.q4_0, .q4_1, .q8_0, .q8_a].contains(dtype)
            #expect(dtype.supportsInterleaved16 == legacy)
            let kernelLayout = legacy || [DType.q5_0, .q5_1, .q4_K, .q5_K, .q6_K].contains(dtype)
            #expect(dtype.hasKernelLayout == kernelLayout, "\(dtype)")
            #expect((dtype.matrixBytes(rows: 16, cols: 256, layout: .interleaved16) != nil) == kernelLayout, "\(dtype)")
            #expect(dtype.matrixBytes(rows: 3, cols: 256, layout: .rows) == dtype.byteCount(elements: 768))
        }
    }

    /// Every type's reference dequantizer gives exactly (bit for bit) the values
    /// `gguf.quants.dequantize` gives for the same bytes.
    @Test(arguments: fixtureTypes)
    func dequantizerEqualsGGUFPy(_ dtype: DType) throws {
        let reference = try GGUFTypesReference.load()
        let bytes = try GGUFTypesReference.fileBytes()
        let tensor = try #require(reference.tensors[dtype.rawValue.lowercased()])
        #expect(tensor.ggml_type == dtype.ggmlTypeID)
        let count = tensor.values.count
        let length = try #require(dtype.byteCount(elements: count))
        try #require(tensor.offset + length <= bytes.count)
        var out = [Float](repeating: .nan, count: count)
        bytes.withUnsafeBytes { raw in
            out.withUnsafeMutableBufferPointer { dequantize(raw.baseAddress! + tensor.offset, dtype: dtype, count: count, into: $0.baseAddress!) }
        }
        var mismatches = 0
        for i in 0..<count where out[i].bitPattern != Float(tensor.values[i]).bitPattern {
            if mismatches < 5 { Issue.record("\(dtype) element \(i): \(out[i]) != gguf-py \(tensor.values[i])") }
            mismatches += 1
        }
        #expect(mismatches == 0, "\(dtype): \(mismatches) of \(count) values differ")
    }

    /// Hearth's q4_0/q4_1/q8_0 quantizer writes the same bytes as gguf-py's for the fixture's
    /// F32 source matrix.
    @Test(arguments: [DType.q4_0, .q4_1, .q8_0])
    func quantizerEqualsGGUFPy(_ dtype: DType) throws {
        let reference = try GGUFTypesReference.load()
        let bytes = try GGUFTypesReference.fileBytes()
        let source = try #require(reference.tensors["f32"])
        let quantized = try #require(reference.tensors[dtype.rawValue])
        let x = source.values.map { Float($0) }
        var block = [UInt8](repeating: 0, count: dtype.bytesPerBlock)
        for b in 0..<(x.count / 32) {
            x.withUnsafeBufferPointer { xs in
                block.withUnsafeMutableBytes { Quantizer.quantizeBlock(xs.baseAddress! + 32 * b, dtype: dtype, into: $0.baseAddress!) }
            }
            let start = quantized.offset + b * dtype.bytesPerBlock
            #expect(block == Array(bytes[start..<(start + dtype.bytesPerBlock)]), "\(dtype) block \(b)")
        }
    }

    /// Every level's dequantizer (AVX-512 in registers for q5_0/q4_K/q6_K; the scalar bodies
    /// compiled for AVX2 and the baseline) equals the scalar reference bit for bit on random
    /// blocks, scales included.
    @Test(arguments: [DType.q5_0, .q4_K, .q6_K])
    func everyLevelsDequantizerEqualsScalarReference(_ dtype: DType) {
        var rng = SystemRandomNumberGenerator()
        let scaleOffsets: [Int] = dtype == .q5_0 ? [0] : dtype == .q4_K ? [0, 2] : [208]
        var block = [UInt8](repeating: 0, count: dtype.bytesPerBlock)
        var fast = [Float](repeating: 0, count: dtype.blockSize), reference = fast
        for _ in 0..<500 {
            for i in block.indices { block[i] = UInt8.random(in: 0...255, using: &rng) }
            for offset in scaleOffsets {  // finite f16 scales of either sign
                let h = floatToHalf(Float.random(in: -2...2, using: &rng))
                block[offset] = UInt8(h & 0xff)
                block[offset + 1] = UInt8(h >> 8)
            }
            block.withUnsafeBytes { raw in
                let p = raw.baseAddress!
                reference.withUnsafeMutableBufferPointer { out in
                    switch dtype {
                    case .q5_0: GGMLBlocks.dequantizeQ5_0(p, into: out.baseAddress!)
                    case .q4_K: GGMLBlocks.dequantizeQ4_K(p, into: out.baseAddress!)
                    default: GGMLBlocks.dequantizeQ6_K(p, into: out.baseAddress!)
                    }
                }
                for level in KernelLevel.supported {
                    fast.withUnsafeMutableBufferPointer { GGMLBlocks.dequantizeBlock(p, dtype: dtype, into: $0.baseAddress!, level: level) }
                    #expect(fast.map(\.bitPattern) == reference.map(\.bitPattern), "\(dtype) at \(level)")
                }
            }
        }
    }

    /// Known answers built by hand, independent of gguf-py: element order and bit positions.
    @Test func handBuiltBlocks() {
        func run(_ dtype: DType, _ bytes: [UInt8]) -> [Float] {
            precondition(bytes.count == dtype.bytesPerBlock)
            var out = [Float](repeating: .nan, count: dtype.blockSize)
            bytes.withUnsafeBytes { raw in out.withUnsafeMutableBufferPointer { dequantizeBlock(raw.baseAddress!, dtype: dtype, into: $0.baseAddress!) } }
            return out
        }
        let one = floatToHalf(1), half = floatToHalf(0.5)
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8)] }

        // q5_0: d = 1; byte 1 = 0x21 → element 1 low nibble 1, element 17 high nibble 2;
        // qh bit 17 set → element 17 = (2 | 16) − 16 = 2; element 1 = 1 − 16 = −15.
        var q5 = le16(one) + [0, 0, 0x02, 0] + [UInt8](repeating: 0, count: 16)
        q5[6 + 1] = 0x21
        let q5out = run(.q5_0, q5)
        #expect(q5out[1] == -15 && q5out[17] == 2 && q5out[0] == -16)

        // q4_K: d = 1, dmin = 0.5; sub-block 5's scale = (byte 9 & 15) | (byte 1 >> 6) << 4 = 3 | 1 << 4 = 19,
        // its min = (byte 9 >> 4) | (byte 5 >> 6) << 4 = 2 | 2 << 4 = 34. Sub-block 5 is the high
        // nibbles of bytes 64…95 of the quants; set byte 64 = 0x70 → element 160 has q = 7.
        var q4k = le16(one) + le16(half) + [UInt8](repeating: 0, count: 140)
        q4k[4 + 1] = 0x40
        q4k[4 + 5] = 0x80
        q4k[4 + 9] = 0x23
        q4k[16 + 64] = 0x70
        let q4kout = run(.q4_K, q4k)
        #expect(q4kout[160] == 19 * 7 - 0.5 * 34)
        #expect(q4kout[161] == -0.5 * 34)

        // q6_K: d = 1, scale of group 9 (elements 144…159) = −2; element 150 = 128 + 22 takes
        // the low nibble of low byte 64 + 22 (set 5) and bits 0–1 of high byte 32 + 22 (set 3):
        // q = (5 | 3 << 4) − 32 = 21 → −42.
        var q6 = [UInt8](repeating: 0, count: 210)
        q6[64 + 22] = 0x05
        q6[128 + 32 + 22] = 0x03
        q6[192 + 9] = UInt8(bitPattern: -2)
        q6[208] = UInt8(one & 0xff)
        q6[209] = UInt8(one >> 8)
        let q6out = run(.q6_K, q6)
        #expect(q6out[150] == -42)
        #expect(q6out[151] == (0 - 32) * -2)
    }

    /// Row-layout K-quant matrices work through WeightMatrix and matmul (dequantize-then-dot).
    /// (The single-token product takes the fused AVX-512 kernels for q5_0/q4_K/q6_K when the
    /// build has them, the dequantize-then-dot path otherwise; both must match gguf-py's values.)
    @Test(arguments: [DType.q4_K, .q5_0, .q6_K, .q5_1, .q2_K, .q3_K, .q5_K])
    func rowLayoutKQuantMatmul(_ dtype: DType) throws {
        let reference = try GGUFTypesReference.load()
        let bytes = try GGUFTypesReference.fileBytes()
        let tensor = try #require(reference.tensors[dtype.rawValue.lowercased()])
        let (rows, cols) = (tensor.shape[0], tensor.shape[1])
        let buffer = OwnedBuffer(count: try #require(dtype.matrixBytes(rows: rows, cols: cols, layout: .rows)))
        bytes.withUnsafeBytes { raw in buffer.pointer.copyMemory(from: raw.baseAddress! + tensor.offset, byteCount: buffer.count) }
        let w = WeightMatrix(rows: rows, cols: cols, dtype: dtype, data: buffer.pointer, owner: buffer)
        let x = (0..<cols).map { Float(($0 % 7) - 3) / 4 }
        var y = [Float](repeating: 0, count: rows)
        let pool = WorkerPool(threads: 2)
        matmul(w, x: x, batch: 1, y: &y, pool: pool, scratch: MatMulScratch(threads: 2, maxCols: cols))
        for r in 0..<rows {
            var expected: Double = 0
            for c in 0..<cols { expected += tensor.values[r * cols + c] * Double(x[c]) }
            #expect(abs(Double(y[r]) - expected) <= 1e-4 * max(1, abs(expected)), "row \(r)")
        }
    }
}
