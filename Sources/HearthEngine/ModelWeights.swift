import HearthFormats
import HearthKernels

/// The weights of one transformer layer, resolved from tensor roles and shape-checked.
/// Optional parts (biases, q/k norms, sandwich norms) are present when the checkpoint has them.
package struct LayerWeights: Sendable {
    /// Projections that may be stored fused or separately; outputs go side by side.
    package enum Projections: Sendable {
        case fused(WeightMatrix)
        case separate([WeightMatrix])

        var matrices: [WeightMatrix] {
            switch self {
            case .fused(let w): return [w]
            case .separate(let ws): return ws
            }
        }
    }

    package var attnNorm: [Float]
    package var attnNormBias: [Float]?
    /// q | k | v.
    package var qkv: Projections
    package var qkvBias: [Float]?
    package var qNorm: [Float]?
    package var kNorm: [Float]?
    package var attnOutput: WeightMatrix
    package var attnOutputBias: [Float]?
    package var postAttnNorm: [Float]?
    /// Absent in parallel-residual models, whose MLP reads the attention norm's output.
    package var ffnNorm: [Float]?
    package var ffnNormBias: [Float]?
    /// gate | up for a gated MLP, or up alone for a plain one.
    package var ffnIn: Projections
    package var ffnInBias: [Float]?
    package var down: WeightMatrix
    package var downBias: [Float]?
    package var postFFNNorm: [Float]?
    /// Gemma 4: hidden → per-layer width gate of the layer's per-layer input.
    package var perLayerGate: WeightMatrix?
    /// Gemma 4: per-layer width → hidden projection of the gated per-layer input.
    package var perLayerProjection: WeightMatrix?
    /// Gemma 4: the norm of that projection's output.
    package var postPerLayerNorm: [Float]?
    /// Gemma 4: the scalar the layer's output is multiplied by.
    package var layerScalar: Float?
}

/// All weights of a decoder, pointing into the mapped checkpoint (vectors — norms and
/// biases — are copied to Float at load; they are tiny).
package struct ModelWeights: Sendable {
    package var tokenEmbedding: WeightMatrix
    package var output: WeightMatrix
    package var outputBias: [Float]?
    package var outputNorm: [Float]
    package var outputNormBias: [Float]?
    package var layers: [LayerWeights]
    /// Gemma 4's per-layer embeddings (nil: the model has none).
    package var perLayerInputs: PerLayerInputWeights?

    // Long: one lookup and shape check per tensor role, in the order of a layer; each is a few lines
    // and they share the lookup helpers defined at the top.
    /// Resolves every role for `options` from `store`, checking each shape against the
    /// configuration. `name` maps a role to its tensor name (nil: the format has no such
    /// tensor). `normOffset` is added to every norm weight at load (Gemma stores w − 1).
    package init(
        options o: DecoderOptions, store: TensorStore, normOffset: Float = 0, name: (TensorRole) -> String?
    ) throws {
        func lookup(_ role: TensorRole) throws -> TensorData? {
            guard let tensorName = name(role) else { return nil }
            return try store.tensor(named: tensorName)
        }
        func matrix(_ role: TensorRole, rows: Int, cols: Int) throws -> WeightMatrix {
            guard let t = try lookup(role) else {
                throw FormatError(
                    .missingTensor, "checkpoint has no tensor for \(role)", key: name(role) ?? "\(role)",
                    remedy: "The checkpoint is incomplete or not of the architecture its config names")
            }
            return try Self.matrix(t, rows: rows, cols: cols)
        }
        func optionalMatrix(_ role: TensorRole, rows: Int, cols: Int) throws -> WeightMatrix? {
            guard let t = try lookup(role) else { return nil }
            return try Self.matrix(t, rows: rows, cols: cols)
        }
        func optionalVector(_ role: TensorRole, count: Int) throws -> [Float]? {
            guard let t = try lookup(role) else { return nil }
            let m = try Self.matrix(t, rows: 1, cols: count)
            var v = [Float](repeating: 0, count: count)
            v.withUnsafeMutableBufferPointer { buffer in
                if let base = buffer.baseAddress { m.dequantizeRow(0, into: base) }
            }
            if role.isNormWeight && normOffset != 0 { v = v.map { $0 + normOffset } }
            return v
        }
        func vector(_ role: TensorRole, count: Int) throws -> [Float] {
            guard let v = try optionalVector(role, count: count) else {
                throw FormatError(
                    .missingTensor, "checkpoint has no tensor for \(role)", key: name(role) ?? "\(role)",
                    remedy: "The checkpoint is incomplete or not of the architecture its config names")
            }
            return v
        }
        /// Separate bias vectors concatenated in output order, or nil when none exist.
        func concatenated(_ roles: [(TensorRole, Int)]) throws -> [Float]? {
            let parts = try roles.map { try optionalVector($0.0, count: $0.1) }
            if parts.allSatisfy({ $0 == nil }) { return nil }
            return zip(parts, roles).flatMap { $0 ?? [Float](repeating: 0, count: $1.1) }
        }

        let d = o.hiddenSize
        tokenEmbedding = try matrix(.tokenEmbedding, rows: o.vocabSize, cols: d)
        if o.tiedEmbeddings {
            output = try optionalMatrix(.output, rows: o.vocabSize, cols: d) ?? tokenEmbedding
        } else {
            output = try matrix(.output, rows: o.vocabSize, cols: d)
        }
        outputBias = try optionalVector(.outputBias, count: o.vocabSize)
        outputNorm = try vector(.outputNorm, count: d)
        outputNormBias = try optionalVector(.outputNormBias, count: d)
        var layers: [LayerWeights] = []
        for l in 0..<o.layerCount {
            let hd = o.headDim(forLayer: l), ffn = o.ffnSize(forLayer: l), qkvWidth = o.qkvWidth(forLayer: l)
            let qDim = o.headCount * hd, kvDim = o.kvHeadCount * hd
            let qkv: LayerWeights.Projections
            let qkvBias: [Float]?
            if !o.ownsKV(l) {
                // A layer reusing another's keys and values projects queries only.
                qkv = .separate([try matrix(.attnQ(l), rows: qDim, cols: d)])
                qkvBias = try optionalVector(.attnQBias(l), count: qDim)
            } else if let fused = try optionalMatrix(.attnQKV(l), rows: qkvWidth, cols: d) {
                qkv = .fused(fused)
                qkvBias = try optionalVector(.attnQKVBias(l), count: qkvWidth)
            } else if let fusedBias = try optionalVector(.attnQKVBias(l), count: qkvWidth) {
                // HQF stores separate projections with their biases already concatenated.
                qkv = .separate([
                    try matrix(.attnQ(l), rows: qDim, cols: d), try matrix(.attnK(l), rows: kvDim, cols: d),
                    try matrix(.attnV(l), rows: kvDim, cols: d),
                ])
                qkvBias = fusedBias
            } else {
                qkv = .separate([
                    try matrix(.attnQ(l), rows: qDim, cols: d), try matrix(.attnK(l), rows: kvDim, cols: d),
                    try matrix(.attnV(l), rows: kvDim, cols: d),
                ])
                qkvBias = try concatenated([(.attnQBias(l), qDim), (.attnKBias(l), kvDim), (.attnVBias(l), kvDim)])
            }
            let ffnIn: LayerWeights.Projections
            switch o.mlp {
            case .gated:
                if let fused = try optionalMatrix(.ffnGateUp(l), rows: 2 * ffn, cols: d) {
                    ffnIn = .fused(fused)
                } else {
                    ffnIn = .separate([
                        try matrix(.ffnGate(l), rows: ffn, cols: d), try matrix(.ffnUp(l), rows: ffn, cols: d),
                    ])
                }
            case .plain:
                ffnIn = .fused(try matrix(.ffnUp(l), rows: ffn, cols: d))
            }
            let perLayer = o.perLayerInputSize
            layers.append(
                LayerWeights(
                    attnNorm: try vector(.attnNorm(l), count: d),
                    attnNormBias: try optionalVector(.attnNormBias(l), count: d),
                    qkv: qkv, qkvBias: qkvBias,
                    qNorm: o.qkNorm ? try vector(.attnQNorm(l), count: hd) : nil,
                    kNorm: o.qkNorm && o.ownsKV(l) ? try vector(.attnKNorm(l), count: hd) : nil,
                    attnOutput: try matrix(.attnOutput(l), rows: d, cols: qDim),
                    attnOutputBias: try optionalVector(.attnOutputBias(l), count: d),
                    postAttnNorm: o.sandwichNorms ? try vector(.postAttnNorm(l), count: d) : nil,
                    ffnNorm: o.parallelResidual ? nil : try vector(.ffnNorm(l), count: d),
                    ffnNormBias: o.parallelResidual ? nil : try optionalVector(.ffnNormBias(l), count: d),
                    ffnIn: ffnIn,
                    ffnInBias: try optionalVector(.ffnUpBias(l), count: o.ffnInWidth(forLayer: l)),
                    down: try matrix(.ffnDown(l), rows: d, cols: ffn),
                    downBias: try optionalVector(.ffnDownBias(l), count: d),
                    postFFNNorm: o.sandwichNorms ? try vector(.postFFNNorm(l), count: d) : nil,
                    perLayerGate: try perLayer.map { try matrix(.perLayerInputGate(l), rows: $0, cols: d) },
                    perLayerProjection: try perLayer.map { try matrix(.perLayerProjection(l), rows: d, cols: $0) },
                    postPerLayerNorm: perLayer == nil ? nil : try vector(.postPerLayerInputNorm(l), count: d),
                    layerScalar: o.layerScalars ? try vector(.layerScalar(l), count: 1)[0] : nil))
        }
        self.layers = layers
        if let width = o.perLayerInputSize {
            let all = o.layerCount * width
            perLayerInputs = PerLayerInputWeights(
                embedding: try matrix(.perLayerTokenEmbedding, rows: o.vocabSize, cols: all),
                modelProjection: try matrix(.perLayerModelProjection, rows: all, cols: d),
                projectionNorm: try vector(.perLayerProjectionNorm, count: width))
        }
    }

    /// Checks a tensor's shape (a vector may be given as `rows: 1`) and wraps it.
    static func matrix(_ t: TensorData, rows: Int, cols: Int) throws -> WeightMatrix {
        let ok = t.shape == [rows, cols] || (rows == 1 && t.shape == [cols])
        guard ok else {
            let expected = rows == 1 ? "[\(cols)]" : "[\(rows), \(cols)]"
            throw FormatError(
                .shapeMismatch, "tensor has shape \(t.shape) but the model configuration implies \(expected)",
                path: t.path, key: t.name, remedy: "The configuration does not describe these weights")
        }
        guard let base = t.bytes.baseAddress,
            t.dtype.matrixBytes(rows: rows, cols: cols, layout: t.layout) == t.bytes.count
        else {
            throw FormatError(.sizeMismatch, "tensor byte size does not match its shape", path: t.path, key: t.name)
        }
        return WeightMatrix(rows: rows, cols: cols, dtype: t.dtype, layout: t.layout, data: base, owner: t.owner)
    }

    /// Every matrix with its role, in forward-pass order (the tied output is not repeated).
    package func namedMatrices(options o: DecoderOptions) -> [(role: TensorRole, matrix: WeightMatrix)] {
        var list: [(TensorRole, WeightMatrix)] = [(.tokenEmbedding, tokenEmbedding)]
        for (l, layer) in layers.enumerated() {
            switch layer.qkv {
            case .fused(let w): list.append((.attnQKV(l), w))
            case .separate(let ws): list += zip([TensorRole.attnQ(l), .attnK(l), .attnV(l)], ws).map { ($0, $1) }
            }
            list.append((.attnOutput(l), layer.attnOutput))
            switch (layer.ffnIn, o.mlp) {
            case (.fused(let w), .gated): list.append((.ffnGateUp(l), w))
            case (.fused(let w), .plain): list.append((.ffnUp(l), w))
            case (.separate(let ws), _): list += zip([TensorRole.ffnGate(l), .ffnUp(l)], ws).map { ($0, $1) }
            }
            list.append((.ffnDown(l), layer.down))
            if let gate = layer.perLayerGate { list.append((.perLayerInputGate(l), gate)) }
            if let back = layer.perLayerProjection { list.append((.perLayerProjection(l), back)) }
        }
        if let ple = perLayerInputs {
            list += [(.perLayerTokenEmbedding, ple.embedding), (.perLayerModelProjection, ple.modelProjection)]
        }
        if !o.tiedEmbeddings || output.data != tokenEmbedding.data { list.append((.output, output)) }
        return list
    }

    /// Every vector (norm weights with any load-time offset applied, and biases) with its
    /// role. Separate q/k/v biases appear concatenated as the fused `attnQKVBias`.
    package func namedVectors() -> [(role: TensorRole, vector: [Float])] {
        var list: [(TensorRole, [Float]?)] = [(.outputNorm, outputNorm), (.outputNormBias, outputNormBias), (.outputBias, outputBias)]
        for (l, layer) in layers.enumerated() {
            list += [
                (.attnNorm(l), layer.attnNorm), (.attnNormBias(l), layer.attnNormBias), (.attnQKVBias(l), layer.qkvBias),
                (.attnQNorm(l), layer.qNorm), (.attnKNorm(l), layer.kNorm), (.attnOutputBias(l), layer.attnOutputBias),
                (.postAttnNorm(l), layer.postAttnNorm), (.ffnNorm(l), layer.ffnNorm), (.ffnNormBias(l), layer.ffnNormBias),
                (.ffnUpBias(l), layer.ffnInBias), (.ffnDownBias(l), layer.downBias), (.postFFNNorm(l), layer.postFFNNorm),
                (.postPerLayerInputNorm(l), layer.postPerLayerNorm), (.layerScalar(l), layer.layerScalar.map { [$0] }),
            ]
        }
        list.append((.perLayerProjectionNorm, perLayerInputs?.projectionNorm))
        return list.compactMap { role, vector in vector.map { (role, $0) } }
    }
}
