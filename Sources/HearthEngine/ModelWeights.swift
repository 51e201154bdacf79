import HearthFormats
import HearthKernels

/// The weights of one transformer layer, resolved from tensor roles and shape-checked.
public struct LayerWeights: Sendable {
    /// Query/key/value projections, fused or separate.
    public enum Projections: Sendable {
        case fused(WeightMatrix)
        case separate([WeightMatrix])
    }

    public var attnNorm: [Float]
    public var qkv: Projections
    public var attnOutput: WeightMatrix
    public var ffnNorm: [Float]
    /// Gate then up, fused or separate.
    public var gateUp: Projections
    public var down: WeightMatrix
}

/// All weights of a decoder, pointing into the mapped checkpoint (norm vectors are copied
/// to Float at load; they are tiny).
public struct ModelWeights: Sendable {
    public var tokenEmbedding: WeightMatrix
    public var output: WeightMatrix
    public var outputNorm: [Float]
    public var layers: [LayerWeights]

    /// Resolves every role for `options` from `store`, checking each shape against the
    /// configuration.
    public init(options o: DecoderOptions, store: TensorStore, name: (TensorRole) -> String) throws {
        func matrix(_ role: TensorRole, rows: Int, cols: Int) throws -> WeightMatrix {
            guard let t = try store.tensor(named: name(role)) else {
                throw FormatError(
                    .missingTensor, "checkpoint has no tensor for \(role)", key: name(role),
                    remedy: "The checkpoint is incomplete or not of the architecture config.json names")
            }
            return try Self.matrix(t, rows: rows, cols: cols)
        }
        func optionalMatrix(_ role: TensorRole, rows: Int, cols: Int) throws -> WeightMatrix? {
            guard let t = try store.tensor(named: name(role)) else { return nil }
            return try Self.matrix(t, rows: rows, cols: cols)
        }
        func vector(_ role: TensorRole, count: Int) throws -> [Float] {
            let m = try matrix(role, rows: 1, cols: count)
            var v = [Float](repeating: 0, count: count)
            v.withUnsafeMutableBufferPointer { m.dequantizeRow(0, into: $0.baseAddress!) }
            return v
        }

        let d = o.hiddenSize
        tokenEmbedding = try matrix(.tokenEmbedding, rows: o.vocabSize, cols: d)
        if o.tiedEmbeddings {
            output = try optionalMatrix(.output, rows: o.vocabSize, cols: d) ?? tokenEmbedding
        } else {
            output = try matrix(.output, rows: o.vocabSize, cols: d)
        }
        outputNorm = try vector(.outputNorm, count: d)
        var layers: [LayerWeights] = []
        for l in 0..<o.layerCount {
            let qkv: LayerWeights.Projections
            if let fused = try optionalMatrix(.attnQKV(l), rows: o.qkvWidth, cols: d) {
                qkv = .fused(fused)
            } else {
                qkv = .separate([
                    try matrix(.attnQ(l), rows: o.headCount * o.headDim, cols: d),
                    try matrix(.attnK(l), rows: o.kvHeadCount * o.headDim, cols: d),
                    try matrix(.attnV(l), rows: o.kvHeadCount * o.headDim, cols: d),
                ])
            }
            let gateUp: LayerWeights.Projections
            if let fused = try optionalMatrix(.ffnGateUp(l), rows: 2 * o.ffnSize, cols: d) {
                gateUp = .fused(fused)
            } else {
                gateUp = .separate([
                    try matrix(.ffnGate(l), rows: o.ffnSize, cols: d),
                    try matrix(.ffnUp(l), rows: o.ffnSize, cols: d),
                ])
            }
            layers.append(
                LayerWeights(
                    attnNorm: try vector(.attnNorm(l), count: d), qkv: qkv,
                    attnOutput: try matrix(.attnOutput(l), rows: d, cols: o.headCount * o.headDim),
                    ffnNorm: try vector(.ffnNorm(l), count: d), gateUp: gateUp,
                    down: try matrix(.ffnDown(l), rows: d, cols: o.ffnSize)))
        }
        self.layers = layers
    }

    /// Checks a tensor's shape (a vector may be given as `rows: 1`) and wraps it.
    static func matrix(_ t: TensorData, rows: Int, cols: Int) throws -> WeightMatrix {
        let ok = t.shape == [rows, cols] || (rows == 1 && t.shape == [cols])
        guard ok else {
            let expected = rows == 1 ? "[\(cols)]" : "[\(rows), \(cols)]"
            throw FormatError(
                .shapeMismatch, "tensor has shape \(t.shape) but config.json implies \(expected)", path: t.path,
                key: t.name, remedy: "config.json does not describe these weights")
        }
        guard let base = t.bytes.baseAddress,
            t.dtype.matrixBytes(rows: rows, cols: cols, layout: t.layout) == t.bytes.count
        else {
            throw FormatError(.sizeMismatch, "tensor byte size does not match its shape", path: t.path, key: t.name)
        }
        return WeightMatrix(rows: rows, cols: cols, dtype: t.dtype, layout: t.layout, data: base, owner: t.owner)
    }
}
