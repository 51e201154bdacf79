import HearthKernelsCommon
#if arch(x86_64)
import HearthKernelsAVX2
import HearthKernelsAVX512
import HearthKernelsAVX512VNNI
#endif

/// Every operation whose machine code depends on the kernel level, as one table per level
/// (llama.cpp's per-type CPU traits are the model: the choice is data, made once).
///
/// ``current`` is the table of ``KernelLevel/current``, built once, and every dispatched operation
/// (attention over an f16 cache, f16 loads, float dots, the sigmoid activations, the ggml
/// dequantizers and row dots, activation quantization, the quantized matmul, GEMM) reads its
/// kernel from a table instead of testing the level itself. Each public operation takes an
/// optional `level:` that picks another level's table (``at(_:)``), so one test process checks
/// every level in ``KernelLevel/supported``. The entry is one indirect call per operation; the
/// operations are coarse (a range of rows, of positions, of row groups), so no hot loop pays
/// for it.
package struct KernelTable: Sendable {
    /// The level whose kernels these are.
    package let level: KernelLevel

    /// s[j] = scale · (q · key j) over an f16 cache for j in `first...last`
    /// (q, keys, stride, first, last, headDim, scale, s).
    private(set) var attentionScoresF16:
        @Sendable (UnsafePointer<Float>, UnsafeRawPointer, Int, Int, Int, Int, Float, UnsafeMutablePointer<Float>) -> Void
    /// out = Σ_j s[j] · value j over an f16 cache (s, values, stride, first, last, headDim, out).
    private(set) var attentionValuesF16:
        @Sendable (UnsafePointer<Float>, UnsafeRawPointer, Int, Int, Int, Int, UnsafeMutablePointer<Float>) -> Void
    /// s[j] over a quantized (q8_0/q4_0) cache from an 8-bit query (qQuants, qScales, keys, stride, first, last,
    /// headDim, scale, kind, s); see ``attentionScores(_:keys:stride:positions:headDim:scale:type:into:level:)``.
    private(set) var attentionScoresKV:
        @Sendable (
            UnsafePointer<Int8>, UnsafePointer<Float>, UnsafeRawPointer, Int, Int, Int, Int, Float, Int32,
            UnsafeMutablePointer<Float>
        ) -> Void
    /// out = Σ_j s[j] · value j over a quantized cache (s, values, stride, first, last, headDim, kind, out).
    private(set) var attentionValuesKV:
        @Sendable (UnsafePointer<Float>, UnsafeRawPointer, Int, Int, Int, Int, Int32, UnsafeMutablePointer<Float>) -> Void
    /// One quantized KV record to Float (src, count, kind, out).
    private(set) var dequantizeKV: @Sendable (UnsafeRawPointer, Int, Int32, UnsafeMutablePointer<Float>) -> Void
    /// Floats to one quantized KV record (x, count, kind, dst).
    private(set) var quantizeKV: @Sendable (UnsafePointer<Float>, Int, Int32, UnsafeMutableRawPointer) -> Void
    /// Fused attention of one query tile over key/value tiles (q, out, logSumExp, shape, scratch,
    /// scoresKeys, keyScores, load): ``fusedAttentionBody``.
    private(set) var fusedAttention:
        @Sendable (
            UnsafePointer<Float>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>?, FusedAttentionShape,
            UnsafeMutablePointer<Float>, Bool, (Int, Int, UnsafeMutablePointer<Float>, Int) -> Void,
            (Int, Int, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>) -> Void
        ) -> Void
    /// `count` f16 values to Float (src, count, out).
    private(set) var halfToFloats: @Sendable (UnsafeRawPointer, Int, UnsafeMutablePointer<Float>) -> Void
    /// Σ a[i]·b[i] over `n` floats.
    private(set) var dotFloats: @Sendable (UnsafePointer<Float>, UnsafePointer<Float>, Int) -> Float
    /// x = x·σ(x) (SiLU, `silu` true) or the tanh-GELU x·σ(1.5958(x + 0.0447x³)), in place.
    private(set) var sigmoidActivation: @Sendable (UnsafeMutablePointer<Float>, Int, Bool) -> Void
    /// The largest of n floats and Σ w·e^(x − largest) (``logSumExp(_:_:level:)``).
    private(set) var maxAndSumExp: @Sendable (UnsafePointer<Float>, Int, UnsafePointer<Float>?) -> (max: Float, sum: Float)
    /// Each run of 16 floats' largest value and Σ e^(x − it) (``runStatistics(_:_:maxima:sums:level:)``).
    private(set) var runStatistics16:
        @Sendable (UnsafePointer<Float>, Int, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>?) -> Void
    /// `blocks` ggml blocks of a ``GGMLKind`` to Float (src, kind, blocks, out).
    private(set) var dequantizeGGML: @Sendable (UnsafeRawPointer, Int32, Int, UnsafeMutablePointer<Float>) -> Void
    /// y[r] = W[r]·x for a range of rows of a row-layout ggml matrix (w, kind, x, rows, y, scratch of `cols` floats).
    private(set) var dotRowsGGML:
        @Sendable (WeightMatrix, Int32, UnsafePointer<Float>, Range<Int>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
            -> Void
    /// Rows of x to 16-bit blocks (x, rowStart, rowEnd, cols, quants, scales, sums).
    private(set) var quantizeActivations16:
        @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Int16>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
            -> Void
    /// Rows of x to 8-bit blocks (x, rowStart, rowEnd, cols, quants, scales, sums).
    private(set) var quantizeActivations8:
        @Sendable (UnsafePointer<Float>, Int, Int, Int, UnsafeMutablePointer<Int8>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Float>)
            -> Void
    /// One row to 8-bit super-blocks of 256 (x, cols, quants, scales, sums, halfSums; ``quantizeSuperBlockRow``).
    private(set) var quantizeSuperBlocks8:
        @Sendable (
            UnsafePointer<Float>, Int, UnsafeMutablePointer<Int8>, UnsafeMutablePointer<Float>, UnsafeMutablePointer<Int16>,
            UnsafeMutablePointer<Int16>
        ) -> Void
    /// The integer matmul over interleaved16 tiles (w, act, batch, groups, y, ldy).
    private(set) var quantizedMatMul:
        @Sendable (WeightMatrix, QuantizedActivations, Int, Range<Int>, UnsafeMutablePointer<Float>, Int) -> Void
    /// y += the f32 products of an 8-bit quantization's outlier picks (w, picks, batch, groups, y,
    /// ldy, scratch, scratch floats; ``addOutlierProducts(_:act:batch:groups:y:ldy:scratch:scratchFloats:level:)``).
    private(set) var addOutlierProducts:
        @Sendable (
            WeightMatrix, OutlierPicks, Int, Range<Int>, UnsafeMutablePointer<Float>, Int, UnsafeMutablePointer<Float>, Int
        ) -> Void
    /// C = alpha·A·op(B) + beta·C (m, n, k, a, lda, b, ldb, transposeB, c, ldc, alpha, beta).
    private(set) var sgemm:
        @Sendable (Int, Int, Int, UnsafePointer<Float>, Int, UnsafePointer<Float>, Int, Bool, UnsafeMutablePointer<Float>, Int, Float, Float)
            -> Void
    /// y[b·ldy + r] = f16 row r · row b of x for a range of rows and `batch` rows of x, each row
    /// converted once into a scratch row of `cols` floats (w, rowBytes, cols, x, batch, rows, y,
    /// ldy, scratch). Each product sums in the same order whatever `batch`, so a row of a batch
    /// equals the one-row product bit for bit. Below AVX-512: the level's ``halfToFloats`` then
    /// its ``dotFloats`` per row of x.
    private(set) var dotRowsF16:
        @Sendable (
            UnsafeRawPointer, Int, Int, UnsafePointer<Float>, Int, Range<Int>, UnsafeMutablePointer<Float>, Int,
            UnsafeMutablePointer<Float>
        ) -> Void
    /// The quantized kernel family's name (for `bench` and `inspect`).
    package let quantizedKernelName: String
    /// Whether this level multiplies 8-bit activations with K-quant weights (q4_K, q5_K, q6_K)
    /// in 256-column super-blocks (the `amx` level: one activation scale per super-block, the
    /// sub-block scales applied in integers; docs/KERNELS.md).
    package let superBlockKQuants: Bool

    /// Whether ``quantizedMatMul`` can read `w`'s 8-bit activations in super-blocks
    /// (``QuantizedActivations/superBlocks``): at levels with ``superBlockKQuants``, for the
    /// interleaved K-quant tiles. The matmul asks for them only with outlier picks.
    package func readsSuperBlocks(_ w: WeightMatrix) -> Bool {
        guard superBlockKQuants, w.layout == .interleaved16, w.cols % 256 == 0, let kind = w.dtype.tileKind else {
            return false
        }
        return kind >= TileKind.q4_K
    }

    /// The table of ``KernelLevel/current``, chosen once.
    package static let current = lookup(.current)

    /// The tables of the levels this CPU runs, lowest first (index: position in ``KernelLevel/supported``).
    private static let tables: [KernelTable] = KernelLevel.supported.map(KernelTable.init(level:))

    /// The table of `level` if this CPU runs it; otherwise of the best level below it that it
    /// runs (a level the CPU cannot run is never chosen, so no illegal instruction).
    @inline(__always)
    package static func at(_ level: KernelLevel) -> KernelTable {
        level == KernelLevel.current ? current : lookup(level)
    }

    private static func lookup(_ level: KernelLevel) -> KernelTable {
        tables.last { $0.level <= level } ?? tables[0]
    }

    // The per-level choices, written once. A level with nothing of its own for an operation takes
    // the level below's kernel.
    private init(level: KernelLevel) {
        self.level = level
        #if arch(x86_64)
        let avx2 = level >= .avx2, avx512 = level >= .avx512, vnni = level >= .avx512vnni, amx = level >= .amx
        #else
        let avx2 = false, avx512 = false, vnni = false, amx = false
        #endif

        attentionScoresF16 = { q, keys, stride, first, last, headDim, scale, s in
            HearthKernelsCommon.attentionScoresF16(q, keys: keys, stride: stride, positions: first...last, headDim: headDim, scale: scale, into: s)
        }
        attentionValuesF16 = { s, values, stride, first, last, headDim, out in
            HearthKernelsCommon.attentionValuesF16(s, values: values, stride: stride, positions: first...last, headDim: headDim, into: out)
        }
        attentionScoresKV = { qQuants, qScales, keys, stride, first, last, headDim, scale, kind, s in
            HearthKernelsCommon.attentionScoresKV(
                qQuants, qScales, keys: keys, stride: stride, positions: first...last, headDim: headDim, scale: scale,
                kind: kind, into: s)
        }
        attentionValuesKV = { s, values, stride, first, last, headDim, kind, out in
            HearthKernelsCommon.attentionValuesKV(
                s, values: values, stride: stride, positions: first...last, headDim: headDim, kind: kind, into: out)
        }
        dequantizeKV = { src, count, kind, out in dequantizeKVRecord(src, count: count, kind: kind, into: out) }
        quantizeKV = { x, count, kind, dst in quantizeKVRecord(x, count: count, kind: kind, into: dst) }
        fusedAttention = { q, out, logSumExp, shape, scratch, scoresKeys, keyScores, load in
            fusedAttentionBody(
                q, out: out, logSumExp: logSumExp, shape: shape, scratch: scratch, scoresKeys: scoresKeys,
                keyScores: keyScores, load: load, fused: false)
        }
        halfToFloats = { src, count, out in
            let h = src.assumingMemoryBound(to: UInt16.self)
            for i in 0..<count { out[i] = halfToFloat(h[i]) }
        }
        dotFloats = { a, b, n in HearthKernelsCommon.dotFloats(a, b, n) }
        sigmoidActivation = { x, n, silu in HearthKernelsCommon.sigmoidActivation(x, n, silu: silu) }
        maxAndSumExp = { x, n, weights in HearthKernelsCommon.maxAndSumExp(x, n, weights: weights) }
        runStatistics16 = { x, n, maxima, sums in HearthKernelsCommon.runStatistics16(x, n, maxima: maxima, sums: sums) }
        dequantizeGGML = { src, kind, blocks, out in GGMLKind.dequantize(src, kind: kind, blocks: blocks, into: out) }
        dotRowsGGML = { w, kind, x, rows, y, scratch in
            dotRowsDequantizing(
                w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rows: rows, y: y, scratch: scratch)
        }
        quantizeActivations16 = { x, start, end, cols, quants, scales, sums in
            quantizeActivationRows16(x, rows: start..<end, cols: cols, quants: quants, scales: scales, sums: sums)
        }
        quantizeSuperBlocks8 = { x, cols, quants, scales, sums, halfSums in
            quantizeSuperBlockRow(x, cols: cols, quants: quants, scales: scales, sums: sums, halfSums: halfSums)
        }
        quantizeActivations8 = { x, start, end, cols, quants, scales, sums in
            quantizeActivationRows(x, rows: start..<end, cols: cols, quants: quants, scales: scales, sums: sums)
        }
        quantizedMatMul = { w, act, batch, groups, y, ldy in
            quantizedMatMulPortable(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
        }
        addOutlierProducts = { w, picks, batch, groups, y, ldy, _, _ in
            addOutlierProductsPortable(w, picks: picks, batch: batch, groups: groups, y: y, ldy: ldy)
        }
        sgemm = { m, n, k, a, lda, b, ldb, transposeB, c, ldc, alpha, beta in
            withUnsafeTemporaryAllocation(of: Float.self, capacity: gemmPanelFloats) { panel in
                sgemmBody(
                    m: m, n: n, k: k, a: a, lda: lda, b: b, ldb: ldb, transposeB: transposeB, c: c, ldc: ldc, alpha: alpha,
                    beta: beta, panel: panel.baseAddress.unsafelyUnwrapped, fused: false)
            }
        }
        quantizedKernelName = amx ? "amx" : vnni ? "avx512-vnni" : avx2 ? "avx2" : "portable"
        superBlockKQuants = amx

        #if arch(x86_64)
        if avx2 {
            attentionScoresF16 = hearthAttentionScoresF16AVX2
            attentionValuesF16 = hearthAttentionValuesF16AVX2
            attentionScoresKV = hearthAttentionScoresKVAVX2
            attentionValuesKV = hearthAttentionValuesKVAVX2
            dequantizeKV = hearthDequantizeKVAVX2
            quantizeKV = hearthQuantizeKVAVX2
            fusedAttention = hearthFusedAttentionAVX2
            dotFloats = hearthDotFloatsAVX2
            sigmoidActivation = hearthSigmoidActivationAVX2
            maxAndSumExp = hearthMaxAndSumExpAVX2
            runStatistics16 = hearthRunStatistics16AVX2
            dequantizeGGML = hearthDequantizeGGMLAVX2
            dotRowsGGML = { w, kind, x, rows, y, scratch in
                if kind <= GGMLKind.q6_K {
                    hearthDotRowsGGMLFusedAVX2(
                        w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
                        rowEnd: rows.upperBound, y: y)
                } else {
                    hearthDotRowsGGMLAVX2(
                        w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
                        rowEnd: rows.upperBound, y: y, scratch: scratch)
                }
            }
            quantizeActivations16 = hearthQuantizeActivations16AVX2
            quantizeActivations8 = hearthQuantizeActivationsAVX2
            quantizedMatMul = { w, act, batch, groups, y, ldy in
                guard let kind = w.dtype.tileKind else {
                    return quantizedMatMulPortable(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
                }
                if act.bits == 16 {
                    // `vpmaddwd` over int16 weights and activations.
                    hearthQuantizedMatMul16AVX2(
                        w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.wide, act.scales, act.sums,
                        w.cols, batch, groups.lowerBound, groups.upperBound, y, ldy)
                } else {
                    // `vpmaddubsw` + `vpmaddwd` over bytes.
                    let run = kind >= TileKind.q4_K ? hearthQuantizedMatMulKAVX2 : hearthQuantizedMatMulAVX2
                    run(
                        w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.quants, act.scales, act.sums,
                        w.cols, batch, groups.lowerBound, groups.upperBound, y, ldy)
                }
            }
            sgemm = hearthSgemmAVX2
        }
        #endif
        let toFloats = halfToFloats, dot = dotFloats
        dotRowsF16 = { w, rowBytes, cols, x, batch, rows, y, ldy, row in
            for r in rows {
                toFloats(w + r * rowBytes, cols, row)
                for b in 0..<batch { y[b * ldy + r] = dot(row, x + b * cols, cols) }
            }
        }
        #if arch(x86_64)
        if avx512 {
            attentionScoresF16 = hearthAttentionScoresF16AVX512
            attentionValuesF16 = hearthAttentionValuesF16AVX512
            fusedAttention = hearthFusedAttentionAVX512
            halfToFloats = hearthHalfToFloatAVX512
            dotRowsF16 = { w, rowBytes, cols, x, batch, rows, y, ldy, scratch in
                hearthDotRowsF16AVX512(w, rowBytes: rowBytes, cols: cols, x: x, batch: batch, rows: rows, y: y, ldy: ldy, row: scratch)
            }
            // Heads up to 512 wide (16 blocks: one vector of scales); wider ones keep the AVX2 kernel.
            let valuesBelow = attentionValuesKV
            attentionValuesKV = { s, values, stride, first, last, headDim, kind, out in
                guard headDim <= 512 else { return valuesBelow(s, values, stride, first, last, headDim, kind, out) }
                hearthAttentionValuesKVAVX512(
                    s, values: values, stride: stride, first: first, last: last, headDim: headDim, kind: kind, into: out)
            }
            dequantizeKV = hearthDequantizeKVAVX512
            // In-register kernels for q5_0/q4_K/q6_K; the other ggml types keep the AVX2 level's.
            let dequantizeBelow = dequantizeGGML, dotRowsBelow = dotRowsGGML
            dequantizeGGML = { src, kind, blocks, out in
                guard kind <= GGMLKind.q6_K else { return dequantizeBelow(src, kind, blocks, out) }
                hearthDequantizeGGMLAVX512(src, kind: kind, blocks: blocks, into: out)
            }
            dotRowsGGML = { w, kind, x, rows, y, scratch in
                guard kind <= GGMLKind.q6_K else { return dotRowsBelow(w, kind, x, rows, y, scratch) }
                hearthDotRowsGGMLAVX512(
                    w.data, kind: kind, rowBytes: w.rowBytes, blocks: w.blocksPerRow, x: x, rowStart: rows.lowerBound,
                    rowEnd: rows.upperBound, y: y)
            }
            quantizeActivations16 = hearthQuantizeActivations16AVX512
            quantizeActivations8 = hearthQuantizeActivationsAVX512
            quantizeSuperBlocks8 = hearthQuantizeSuperBlockRowAVX512
            sgemm = hearthSgemmAVX512
        }
        if vnni {
            let scoresBelow = attentionScoresKV
            attentionScoresKV = { qQuants, qScales, keys, stride, first, last, headDim, scale, kind, s in
                guard headDim <= 512 else {
                    return scoresBelow(qQuants, qScales, keys, stride, first, last, headDim, scale, kind, s)
                }
                hearthAttentionScoresKVAVX512VNNI(
                    qQuants, qScales, keys: keys, stride: stride, first: first, last: last, headDim: headDim, scale: scale,
                    kind: kind, into: s)
            }
            quantizedMatMul = { w, act, batch, groups, y, ldy in
                guard let kind = w.dtype.tileKind else {
                    return quantizedMatMulPortable(w, act: act, batch: batch, groups: groups, y: y, ldy: ldy)
                }
                if act.bits == 16 {
                    // `vpdpwssd` over int16 weights and activations.
                    hearthQuantizedMatMul16AVX512VNNI(
                        w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.wide, act.scales, act.sums,
                        w.cols, batch, groups.lowerBound, groups.upperBound, y, ldy)
                } else if kind <= TileKind.q8_a {
                    // `vpdpbusd`, each 32-column tile decoded in registers.
                    hearthQuantizedMatMulAVX512VNNI(
                        tiles: w.data, tileBytes: w.dtype.interleavedTileBytes, blocks: w.blocksPerRow, rows: w.rows,
                        kind: kind, quants: act.quants, scales: act.scales, sums: act.sums, cols: w.cols, batch: batch,
                        groupStart: groups.lowerBound, groupEnd: groups.upperBound, y: y, ldy: ldy)
                } else {
                    // `vpdpbusd`, each unit decoded in registers once for eight tokens of a batch.
                    hearthQuantizedMatMul8AVX512VNNI(
                        w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.quants, act.scales,
                        act.scaledSums, act.scaledHalfSums, act.panels, w.cols, batch, groups.lowerBound, groups.upperBound, y,
                        ldy)
                }
            }
            if amx {
                // 8-bit prompts (16 tokens and more) on AMX tiles; the K-quants whatever the batch,
                // their activations in super-blocks (the matmul asked for them: readsSuperBlocks);
                // the rest as the VNNI level.
                let vnniMatMul = quantizedMatMul
                quantizedMatMul = { w, act, batch, groups, y, ldy in
                    if act.bits == 8, act.superBlocks, let kind = w.dtype.tileKind, kind >= TileKind.q4_K {
                        if batch < 16 {
                            // A few tokens: in registers (decoding the weights for the tiles would
                            // cost more than the products), the same integer sums and float steps.
                            hearthSuperBlockMatMulAVX512VNNI(
                                w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.superQuants,
                                act.superScales, act.superSums, act.superHalfSums, w.cols, batch, groups.lowerBound,
                                groups.upperBound, y, ldy)
                            return
                        }
                        hearthSuperBlockMatMulAMX(
                            w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.superQuants,
                            act.superScales, act.superSums, w.cols, batch, groups.lowerBound, groups.upperBound, y, ldy)
                        return
                    }
                    guard act.bits == 8, batch >= 16, let kind = w.dtype.tileKind else {
                        return vnniMatMul(w, act, batch, groups, y, ldy)
                    }
                    hearthQuantizedMatMulAMX(
                        w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, act.quants, act.scales,
                        act.scaledSums, act.sums, w.cols, batch, groups.lowerBound, groups.upperBound, y, ldy)
                }
            }
            addOutlierProducts = { w, picks, batch, groups, y, ldy, scratch, scratchFloats in
                guard let kind = w.dtype.tileKind, w.layout == .interleaved16, scratchFloats >= 16 * (picks.slots + 1) else {
                    return addOutlierProductsPortable(w, picks: picks, batch: batch, groups: groups, y: y, ldy: ldy)
                }
                // The picked columns' weight vectors decoded in registers once per 16 rows.
                hearthAddOutlierProductsAVX512VNNI(
                    w.data, w.dtype.interleavedTileBytes, w.blocksPerRow, w.rows, kind, picks.slotColumns, picks.slots,
                    picks.columnSlots, picks.columns, picks.values, picks.count, batch, groups.lowerBound, groups.upperBound, y,
                    ldy, scratch, scratchFloats)
            }
        }
        #endif
    }
}
