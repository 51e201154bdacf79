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
    public init(type: DType) throws {
        guard type.isQuantized else {
            throw EngineError(.invalidOption, "\(type.rawValue) is not a quantized type; use q4_0, q4_1 or q8_0")
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
    /// Every matrix with its role and tensor name, in forward-pass order.
    public func namedMatrices(options: DecoderOptions) -> [(role: TensorRole, matrix: WeightMatrix)] {
        var list: [(TensorRole, WeightMatrix)] = [(.tokenEmbedding, tokenEmbedding)]
        for (l, layer) in layers.enumerated() {
            switch layer.qkv {
            case .fused(let w): list.append((.attnQKV(l), w))
            case .separate(let ws): list += zip([TensorRole.attnQ(l), .attnK(l), .attnV(l)], ws).map { ($0, $1) }
            }
            list.append((.attnOutput(l), layer.attnOutput))
            switch layer.gateUp {
            case .fused(let w): list.append((.ffnGateUp(l), w))
            case .separate(let ws): list += zip([TensorRole.ffnGate(l), .ffnUp(l)], ws).map { ($0, $1) }
            }
            list.append((.ffnDown(l), layer.down))
        }
        if !options.tiedEmbeddings { list.append((.output, output)) }
        return list
    }

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
        let matrices = namedMatrices(options: options)
        let total = Double(matrices.reduce(0) { $0 + $1.matrix.rows * $1.matrix.cols })
        var done = 0.0
        var result = self
        func convert(_ role: TensorRole, _ w: WeightMatrix) -> WeightMatrix {
            defer { done += Double(w.rows * w.cols) }
            guard w.layout == .rows else { return w }
            let dtype = Self.type(for: role, plan: plan, tied: options.tiedEmbeddings)
            let bytes = dtype.matrixBytes(rows: w.rows, cols: w.cols, layout: .interleaved16) ?? 0
            let buffer = OwnedBuffer(count: bytes)
            let start = done, share = Double(w.rows * w.cols)
            Quantizer.quantizeMatrix(w, to: dtype, into: buffer.pointer, threads: threads) { fraction in
                progress?((start + fraction * share) / total)
            }
            return WeightMatrix(
                rows: w.rows, cols: w.cols, dtype: dtype, layout: .interleaved16, data: buffer.pointer, owner: buffer)
        }
        result.tokenEmbedding = convert(.tokenEmbedding, tokenEmbedding)
        for l in layers.indices {
            switch layers[l].qkv {
            case .fused(let w): result.layers[l].qkv = .fused(convert(.attnQKV(l), w))
            case .separate(let ws): result.layers[l].qkv = .separate(ws.map { convert(.attnQ(l), $0) })
            }
            result.layers[l].attnOutput = convert(.attnOutput(l), layers[l].attnOutput)
            switch layers[l].gateUp {
            case .fused(let w): result.layers[l].gateUp = .fused(convert(.ffnGateUp(l), w))
            case .separate(let ws): result.layers[l].gateUp = .separate(ws.map { convert(.ffnGate(l), $0) })
            }
            result.layers[l].down = convert(.ffnDown(l), layers[l].down)
        }
        result.output = options.tiedEmbeddings ? result.tokenEmbedding : convert(.output, output)
        return result
    }
}
