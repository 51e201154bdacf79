import HearthKernels

/// Gemma 4's per-layer embeddings (PLE): besides the residual stream, every layer receives a
/// small input of its own for each token (`perLayerInputSize` wide, 256 in E2B/E4B), made of
/// two parts added and scaled by 1/√2:
///
/// - the token's own row of a second embedding table (`layers × width` per token, scaled by
///   √width), and
/// - a projection of the scaled token embedding (hidden → layers × width, scaled by
///   1/√hidden), RMS-normalised per layer with `projectionNorm`.
///
/// Inside layer `l`, after the MLP's residual add: `x += norm(P_l · (act(G_l · x) ⊙ input_l))`
/// with the layer's gate `G_l` (hidden → width) and projection `P_l` (width → hidden)
/// (``LayerWeights/perLayerGate``, ``LayerWeights/perLayerProjection``).
package struct PerLayerInputWeights: Sendable {
    /// (vocab, layers × width): each token's per-layer rows side by side.
    package var embedding: WeightMatrix
    /// (layers × width, hidden).
    package var modelProjection: WeightMatrix
    /// (width): the per-layer norm of the projection.
    package var projectionNorm: [Float]

    package init(embedding: WeightMatrix, modelProjection: WeightMatrix, projectionNorm: [Float]) {
        self.embedding = embedding
        self.modelProjection = modelProjection
        self.projectionNorm = projectionNorm
    }

    /// Combines, for one token, the normalised context projection `projection` (layers × width,
    /// already normed per layer) with the token's own rows `own` (unscaled), in place into
    /// `projection`: (projection + own · √width) / √2, as transformers computes it.
    static func combine(
        _ projection: UnsafeMutablePointer<Float>, own: UnsafePointer<Float>, count: Int, width: Int
    ) {
        let ownScale = Float(Double(width).squareRoot())
        let half = Float(0.5.squareRoot())
        for i in 0..<count { projection[i] = (projection[i] + own[i] * ownScale) * half }
    }
}
