import HearthFormats
import HearthKernels

/// Which block type each kind of weight gets when a model is quantized.
package struct QuantizationPlan: Sendable, Equatable {
    /// Attention and MLP projections.
    package var projections: DType
    /// The token embedding table.
    package var embedding: DType
    /// The output (vocabulary) projection: kept at 8 bits for 4-bit plans, since it is a
    /// small share of the bytes and the most sensitive matrix.
    package var output: DType

    /// The plan for `--type`/`--quantize` values `q4_0`, `q4_1`, `q8_0`.
    /// The types Hearth quantizes float weights to (`--quantize`, `hearth quantize --type`).
    /// `q8_a` has the same kernel layout but holds MLX 8-bit checkpoints as loaded; it is not
    /// a target.
    package static let types: [DType] = [.q4_0, .q4_1, .q8_0]

    package init(type: DType) throws {
        guard Self.types.contains(type) else {
            throw EngineError(.invalidOption, "\(type.rawValue) is not a type Hearth quantizes to; use q4_0, q4_1 or q8_0")
        }
        projections = type
        embedding = type
        output = .q8_0
    }

    /// The types as HQF records them.
    package var description: [String: String] {
        ["projections": projections.rawValue, "embedding": embedding.rawValue, "output": output.rawValue]
    }
}

extension ModelWeights {
    /// The block type a role gets under `plan` (tied embeddings use the output's type).
    package static func type(for role: TensorRole, plan: QuantizationPlan, tied: Bool) -> DType {
        switch role {
        case .output: return plan.output
        case .tokenEmbedding: return tied ? plan.output : plan.embedding
        case .perLayerTokenEmbedding: return plan.embedding
        default: return plan.projections
        }
    }

    /// Quantizes every float matrix into memory (interleaved16) — Gemma 4's per-layer matrices
    /// included —, leaving already-quantized ones as they are. `progress` receives the overall fraction done.
    package func quantized(
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
            result.layers[l].perLayerGate = layers[l].perLayerGate.map { convert($0, plan.projections) }
            result.layers[l].perLayerProjection = layers[l].perLayerProjection.map { convert($0, plan.projections) }
        }
        if let ple = perLayerInputs {
            // Gemma 4's per-layer embedding table is read a row per token, like the token embedding.
            result.perLayerInputs?.embedding = convert(ple.embedding, plan.embedding)
            result.perLayerInputs?.modelProjection = convert(ple.modelProjection, plan.projections)
        }
        result.output = tied ? result.tokenEmbedding : convert(output, plan.output)
        return result
    }
}

extension ModelWeights {
    /// The weights with every distinct matrix replaced by `transform(matrix)`: the token
    /// embedding, the output (only when it is not the embedding itself), each layer's
    /// projections (Gemma 4: with its per-layer gate and projection), then Gemma 4's per-layer
    /// embedding table and model projection, in that order.
    func mapMatrices(_ transform: (WeightMatrix) throws -> WeightMatrix) rethrows -> ModelWeights {
        func map(_ p: LayerWeights.Projections) throws -> LayerWeights.Projections {
            switch p {
            case .fused(let w): return .fused(try transform(w))
            case .separate(let ws): return .separate(try ws.map(transform))
            }
        }
        var result = self
        let tied = output.data == tokenEmbedding.data
        result.tokenEmbedding = try transform(tokenEmbedding)
        result.output = tied ? result.tokenEmbedding : try transform(output)
        for l in layers.indices {
            result.layers[l].qkv = try map(layers[l].qkv)
            result.layers[l].attnOutput = try transform(layers[l].attnOutput)
            result.layers[l].ffnIn = try map(layers[l].ffnIn)
            result.layers[l].down = try transform(layers[l].down)
            result.layers[l].perLayerGate = try layers[l].perLayerGate.map(transform)
            result.layers[l].perLayerProjection = try layers[l].perLayerProjection.map(transform)
        }
        if let ple = perLayerInputs {
            result.perLayerInputs?.embedding = try transform(ple.embedding)
            result.perLayerInputs?.modelProjection = try transform(ple.modelProjection)
        }
        return result
    }

    /// Rearranges row-layout q4_0/q4_1/q8_0, q5_0/q5_1 and K-quant matrices (GGUF) into the
    /// interleaved16 layout the integer kernels read; lossless. Other matrices are kept as they are.
    package func repackedForKernels(options: DecoderOptions) -> ModelWeights {
        mapMatrices(Self.repackInMemory)
    }

    /// ``repackedForKernels(options:)`` through `cache`: the matrices of `source` (a single
    /// GGUF file's mapping) come from the cache file when it checks out against `source`;
    /// otherwise they are rearranged in memory and the cache file is (re)written. Matrices
    /// of other files (split GGUF sets) are always rearranged in memory.
    package func repackedForKernels(
        options: DecoderOptions, source: MappedFile?, cache: RepackCache
    ) -> (weights: ModelWeights, outcome: RepackCache.Outcome) {
        var candidates: [WeightMatrix] = []
        var seen = Set<UnsafeRawPointer>()
        if let source {
            _ = mapMatrices { w in
                if w.owner === source, Quantizer.canRepackInterleaved(w), seen.insert(w.data).inserted { candidates.append(w) }
                return w
            }
        }
        guard let source, let base = source.base, !candidates.isEmpty else {
            return (mapMatrices(Self.repackInMemory), .notNeeded)
        }
        guard cache.directory != nil else { return (mapMatrices(Self.repackInMemory), .disabled) }
        let bytes = candidates.reduce(0) { $0 + ($1.dtype.matrixBytes(rows: $1.rows, cols: $1.cols, layout: .interleaved16) ?? 0) }
        guard bytes >= cache.minimumBytes else { return (mapMatrices(Self.repackInMemory), .notNeeded) }
        let requests = candidates.map {
            RepackRequest(sourceOffset: base.distance(to: $0.data), dtype: $0.dtype, rows: $0.rows, cols: $0.cols)
        }
        guard let fingerprint = RepackCache.fingerprint(of: source) else {
            let reason = "cannot read \(source.path) again to fingerprint it"
            RepackCache.logger.debug("repack cache not used: \(reason)")
            return (mapMatrices(Self.repackInMemory), .unwritable(reason: reason))
        }
        let missReason: String
        switch cache.lookup(source: source, fingerprint: fingerprint, requests: requests) {
        case .success(let (file, offsets)):
            var cached: [UnsafeRawPointer: WeightMatrix] = [:]
            for (w, offset) in zip(candidates, offsets) {
                guard let data = file.base.map({ $0 + offset }) else { continue }
                cached[w.data] = WeightMatrix(
                    rows: w.rows, cols: w.cols, dtype: w.dtype, layout: .interleaved16, data: data, owner: file)
            }
            let weights = mapMatrices { cached[$0.data] ?? Self.repackInMemory($0) }
            RepackCache.logger.debug("repack cache hit: \(file.path)")
            return (weights, .hit(path: file.path))
        case .failure(let miss):
            missReason = miss.reason
        }
        var repacked: [UnsafeRawPointer: WeightMatrix] = [:]
        let weights = mapMatrices { w in
            let r = Self.repackInMemory(w)
            if w.owner === source { repacked[w.data] = r }
            return r
        }
        let matrices = candidates.compactMap { repacked[$0.data] }
        guard matrices.count == candidates.count, matrices.allSatisfy({ $0.layout == .interleaved16 }) else {
            return (weights, .unwritable(reason: "a matrix could not be rearranged"))
        }
        do {
            let url = try cache.store(source: source, fingerprint: fingerprint, requests: requests, matrices: matrices)
            RepackCache.logger.debug("repack cache being written: \(url.path) (\(missReason))")
            return (weights, .written(path: url.path, reason: missReason))
        } catch {
            RepackCache.logger.debug("repack cache not written, weights rearranged in memory: \(error)")
            return (weights, .unwritable(reason: "\(error)"))
        }
    }

    /// Rearranges one matrix into memory (or returns it as it is when it has no kernel
    /// layout to go to). The mapped file pages the repack has read are not used again: they
    /// are handed back as it goes, so they stop counting towards the process's memory (peak
    /// RSS ≈ one copy, even while a big matrix is being rearranged).
    static func repackInMemory(_ w: WeightMatrix) -> WeightMatrix {
        guard let file = w.owner as? MappedFile, let base = file.base else {
            return Quantizer.repackInterleaved(w) ?? w
        }
        let start = base.distance(to: w.data)
        return Quantizer.repackInterleaved(w) { offset, count in
            file.dropPages(at: start + offset, count: count)
        } ?? w
    }
}
