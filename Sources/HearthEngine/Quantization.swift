import HearthFormats
import HearthKernels

/// Which block type each kind of weight gets when a model is quantized.
public struct QuantizationPlan: Sendable, Equatable {
    /// Attention and MLP projections.
    public var projections: DType
    /// The token embedding table.
    public var embedding: DType
    /// The output (vocabulary) projection: kept at 8 bits for 4-bit plans, since it is a
    /// small share of the bytes and the most sensitive matrix.
    public var output: DType

    /// The plan for `--type`/`--quantize` values `q4_0`, `q4_1`, `q8_0`.
    /// The types Hearth quantizes float weights to (`--quantize`, `hearth quantize --type`).
    /// `q8_a` has the same kernel layout but holds MLX 8-bit checkpoints as loaded; it is not
    /// a target.
    public static let types: [DType] = [.q4_0, .q4_1, .q8_0]

    public init(type: DType) throws {
        guard Self.types.contains(type) else {
            throw EngineError(.invalidOption, "\(type.rawValue) is not a type Hearth quantizes to; use q4_0, q4_1 or q8_0")
        }
        projections = type
        embedding = type
        output = .q8_0
    }

    /// The types as HQF records them.
    public var description: [String: String] {
        ["projections": projections.rawValue, "embedding": embedding.rawValue, "output": output.rawValue]
    }
}

extension ModelWeights {
    /// The block type a role gets under `plan` (tied embeddings use the output's type).
    public static func type(for role: TensorRole, plan: QuantizationPlan, tied: Bool) -> DType {
        switch role {
        case .output: return plan.output
        case .tokenEmbedding: return tied ? plan.output : plan.embedding
        default: return plan.projections
        }
    }

    /// Quantizes every float matrix into memory (interleaved16), leaving already-quantized
    /// ones as they are. `progress` receives the overall fraction done.
    public func quantized(
        plan: QuantizationPlan, options: DecoderOptions, threads: Int, progress: (@Sendable (Double) -> Void)? = nil
    ) -> ModelWeights {
        let total = Double(namedMatrices(options: options).reduce(0) { $0 + $1.matrix.rows * $1.matrix.cols })
        var done = 0.0
        func convert(_ w: WeightMatrix, _ dtype: DType) -> WeightMatrix {
            defer { done += Double(w.rows * w.cols) }
            guard w.layout == .rows, w.cols % 32 == 0 else { return w }
            let bytes = dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16) ?? 0
            let buffer = OwnedBuffer(count: bytes)
            let start = done, share = Double(w.rows * w.cols)
            Quantizer.quantizeMatrix(w, to: dtype, into: buffer.pointer, threads: threads) { fraction in
                progress?((start + fraction * share) / total)
            }
            return WeightMatrix(
                rows: w.rows, cols: w.cols, dtype: dtype, layout: .interleaved16, data: buffer.pointer, owner: buffer)
        }
        func convert(_ p: LayerWeights.Projections) -> LayerWeights.Projections {
            switch p {
            case .fused(let w): return .fused(convert(w, plan.projections))
            case .separate(let ws): return .separate(ws.map { convert($0, plan.projections) })
            }
        }
        var result = self
        let tied = options.tiedEmbeddings && output.data == tokenEmbedding.data
        result.tokenEmbedding = convert(tokenEmbedding, tied ? plan.output : plan.embedding)
        for l in layers.indices {
            result.layers[l].qkv = convert(layers[l].qkv)
            result.layers[l].attnOutput = convert(layers[l].attnOutput, plan.projections)
            result.layers[l].ffnIn = convert(layers[l].ffnIn)
            result.layers[l].down = convert(layers[l].down, plan.projections)
        }
        result.output = tied ? result.tokenEmbedding : convert(output, plan.output)
        return result
    }
}

extension ModelWeights {
    /// Rearranges row-layout q4_0/q4_1/q8_0 matrices (GGUF) into the interleaved16 layout
    /// the integer kernels read; lossless. Other matrices are kept as they are.
    public func repackedForKernels(options: DecoderOptions) -> ModelWeights {
        func repack(_ w: WeightMatrix) -> WeightMatrix {
            // The mapped file pages the repack has read are not used again: hand them back as it
            // goes, so they stop counting towards the process's memory (peak RSS ≈ one copy, even
            // while a big matrix is being rearranged).
            guard let file = w.owner as? MappedFile, let base = file.base else {
                return Quantizer.repackInterleaved(w) ?? w
            }
            let start = base.distance(to: w.data)
            return Quantizer.repackInterleaved(w) { offset, count in
                file.dropPages(at: start + offset, count: count)
            } ?? w
        }
        func repack(_ p: LayerWeights.Projections) -> LayerWeights.Projections {
            switch p {
            case .fused(let w): return .fused(repack(w))
            case .separate(let ws): return .separate(ws.map(repack))
            }
        }
        var result = self
        let tied = output.data == tokenEmbedding.data
        result.tokenEmbedding = repack(tokenEmbedding)
        result.output = tied ? result.tokenEmbedding : repack(output)
        for l in layers.indices {
            result.layers[l].qkv = repack(layers[l].qkv)
            result.layers[l].attnOutput = repack(layers[l].attnOutput)
            result.layers[l].ffnIn = repack(layers[l].ffnIn)
            result.layers[l].down = repack(layers[l].down)
        }
        return result
    }
}
