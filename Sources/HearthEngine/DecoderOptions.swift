/// Everything the shared forward pass needs to know about an architecture. A model family
/// maps its configuration to these options; new math is a new option here, never a new pass.
package struct DecoderOptions: Sendable, Equatable {
    /// How hidden states are normalised.
    package enum Norm: Sendable, Equatable {
        /// x / rms(x) · w
        case rms(eps: Float)
        /// (x − mean) / std · w + b
        case layer(eps: Float)
    }

    /// The activation inside the MLP.
    package enum Activation: String, Sendable, Equatable {
        /// x · sigmoid(x)
        case silu
        /// GELU, tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
        case geluTanh
        /// GELU with the exact erf.
        case gelu
    }

    /// The MLP's shape.
    package enum MLP: Sendable, Equatable {
        /// down(act(gate(x)) · up(x)) — SwiGLU/GeGLU.
        case gated(Activation)
        /// down(act(up(x))) — the classic two-layer MLP (Phi-2's fc1/fc2).
        case plain(Activation)

        var activation: Activation {
            switch self {
            case .gated(let a), .plain(let a): return a
            }
        }
    }

    /// How RoPE pairs dimensions.
    package enum RoPEStyle: String, Sendable, Equatable {
        /// Element i pairs with i + rotaryDims/2 (GPT-NeoX, transformers' rotate_half).
        case neox
        /// Element 2i pairs with 2i + 1 (GPT-J; llama.cpp's "normal" mode for permuted GGUF Llama weights).
        case interleaved
    }

    /// Rotary position embedding settings.
    package struct RoPE: Sendable, Equatable {
        /// Frequency base θ.
        package var theta: Float
        /// Leading dimensions of each head that rotate (the rest pass through).
        package var rotaryDims: Int
        /// Context-extension scheme.
        package var scaling: Scaling
        /// Pairing of dimensions.
        package var style: RoPEStyle

        package init(theta: Float, rotaryDims: Int, scaling: Scaling = .none, style: RoPEStyle = .neox) {
            self.theta = theta
            self.rotaryDims = rotaryDims
            self.scaling = scaling
            self.style = style
        }
    }

    /// RoPE context-extension schemes.
    package enum Scaling: Sendable, Equatable {
        case none
        /// Positions divided by `factor`.
        case linear(factor: Float)
        /// Phi-3's LongRoPE: per-frequency divisors, `short` while the sequence fits
        /// `originalContext` and `long` beyond; cos/sin scaled by `attentionFactor`.
        case longRoPE(short: [Float], long: [Float], originalContext: Int, attentionFactor: Float)
        /// Llama 3's frequency remapping: low frequencies divided by `factor`, high ones kept,
        /// a smooth blend between.
        case llama3(factor: Float, lowFrequencyFactor: Float, highFrequencyFactor: Float, originalContext: Int)
        /// One fixed divisor per rotating pair: inv_freq[i] = 1 / (factors[i] · θ^(2i/rotaryDims)).
        /// Llama 3 GGUF files store their remapped frequencies this way (`rope_freqs`,
        /// rotaryDims/2 values), for every position.
        case frequencyFactors([Float])
    }

    package var hiddenSize: Int
    package var layerCount: Int
    package var headCount: Int
    package var kvHeadCount: Int
    package var headDim: Int
    package var ffnSize: Int
    package var vocabSize: Int
    package var norm: Norm
    package var mlp: MLP
    /// RoPE of full-attention layers.
    package var rope: RoPE
    /// The output projection reuses the token embedding matrix.
    package var tiedEmbeddings: Bool
    /// The longest context the model was trained for.
    package var maxContext: Int
    /// Keys more than this many positions back are masked in sliding layers (nil: none).
    package var slidingWindow: Int?
    /// Which layers use the sliding window (empty: every layer, when `slidingWindow` is set).
    package var slidingLayers: [Bool] = []
    /// RoPE of sliding layers, when it differs from `rope` (Gemma 3's local base).
    package var slidingRoPE: RoPE?
    /// Attention and MLP both read the same normalised input and add to the residual
    /// together (Phi-2): x += attn(norm(x)) + mlp(norm(x)).
    package var parallelResidual = false
    /// Per-head RMSNorm of queries and keys before RoPE (Gemma 3, Qwen 3).
    package var qkNorm = false
    /// Norms applied to the attention and MLP outputs before the residual add (Gemma 2/3).
    package var sandwichNorms = false
    /// Multiplier applied to token embeddings (Gemma: √hidden).
    package var embeddingScale: Float?
    /// Attention logit scale; nil means 1/√headDim.
    package var attentionScale: Float?
    /// Head size of the full-attention (non-sliding) layers when it differs from `headDim`, which
    /// is then the sliding layers' (Gemma 4: 512 beside 256).
    package var fullAttentionHeadDim: Int?
    /// Per layer, the layer whose keys and values it attends to (Gemma 4's KV sharing: the last
    /// layers reuse those of the last earlier layer of their kind and have no key/value
    /// projections). Layers that own their keys come first. Empty: every layer its own.
    package var kvSourceLayers: [Int] = []
    /// Values are RMS-normalised per head, without a weight, before they are cached (Gemma 4).
    package var valueNorm = false
    /// Per-layer MLP widths where they differ from `ffnSize` (Gemma 4 doubles those of its
    /// KV-sharing layers). Empty: every layer `ffnSize`.
    package var layerFFNSizes: [Int] = []
    /// Width per layer of the per-layer inputs (Gemma 4's per-layer embeddings,
    /// ``PerLayerInputWeights``); nil: none.
    package var perLayerInputSize: Int?
    /// Each layer's output is multiplied by a stored scalar (Gemma 4's `layer_scalar`).
    package var layerScalars = false
    /// Logits are soft-capped: cap · tanh(logits / cap) (Gemma 4's `final_logit_softcapping`).
    package var finalLogitSoftcap: Float?

    /// Query heads per key/value head.
    package var groupSize: Int { headCount / kvHeadCount }
    /// Width of the q/k/v projection outputs side by side.
    package var qkvWidth: Int { (headCount + 2 * kvHeadCount) * headDim }
    /// Width of the MLP's input projection(s) side by side.
    package var ffnInWidth: Int {
        if case .gated = mlp { return 2 * ffnSize }
        return ffnSize
    }

    /// The head size of layer `l` (`fullAttentionHeadDim` for full-attention layers, when set).
    package func headDim(forLayer l: Int) -> Int { isSliding(l) ? headDim : (fullAttentionHeadDim ?? headDim) }
    /// The largest head size of any layer.
    package var maxHeadDim: Int { max(headDim, fullAttentionHeadDim ?? headDim) }
    /// The layer whose keys and values layer `l` attends to (itself unless `kvSourceLayers` says otherwise).
    package func kvSource(_ l: Int) -> Int { l < kvSourceLayers.count ? kvSourceLayers[l] : l }
    /// Whether layer `l` computes and caches its own keys and values.
    package func ownsKV(_ l: Int) -> Bool { kvSource(l) == l }
    /// Layers holding a KV cache: the leading layers that own their keys and values.
    package var cacheLayerCount: Int { (0..<layerCount).first { !ownsKV($0) } ?? layerCount }
    /// Width of layer `l`'s q | k | v projection outputs (q alone for a layer reusing another's keys).
    package func qkvWidth(forLayer l: Int) -> Int {
        (headCount + (ownsKV(l) ? 2 * kvHeadCount : 0)) * headDim(forLayer: l)
    }
    /// The MLP width of layer `l`.
    package func ffnSize(forLayer l: Int) -> Int { l < layerFFNSizes.count ? layerFFNSizes[l] : ffnSize }
    /// Width of layer `l`'s MLP input projection(s) side by side.
    package func ffnInWidth(forLayer l: Int) -> Int {
        if case .gated = mlp { return 2 * ffnSize(forLayer: l) }
        return ffnSize(forLayer: l)
    }
    /// Whether any layer's shape differs from the uniform `headDim`, `ffnSize` and own keys.
    package var hasLayerShapes: Bool {
        maxHeadDim != headDim || !layerFFNSizes.isEmpty || cacheLayerCount != layerCount
    }

    /// Whether layer `l` uses the sliding window.
    package func isSliding(_ l: Int) -> Bool {
        guard slidingWindow != nil else { return false }
        return slidingLayers.isEmpty || (l < slidingLayers.count && slidingLayers[l])
    }

    /// The RoPE settings of layer `l`.
    package func rope(forLayer l: Int) -> RoPE {
        isSliding(l) ? (slidingRoPE ?? rope) : rope
    }

    package init(
        hiddenSize: Int, layerCount: Int, headCount: Int, kvHeadCount: Int, headDim: Int, ffnSize: Int,
        vocabSize: Int, norm: Norm, mlp: MLP, rope: RoPE, tiedEmbeddings: Bool, maxContext: Int,
        slidingWindow: Int? = nil
    ) {
        self.hiddenSize = hiddenSize
        self.layerCount = layerCount
        self.headCount = headCount
        self.kvHeadCount = kvHeadCount
        self.headDim = headDim
        self.ffnSize = ffnSize
        self.vocabSize = vocabSize
        self.norm = norm
        self.mlp = mlp
        self.rope = rope
        self.tiedEmbeddings = tiedEmbeddings
        self.maxContext = maxContext
        self.slidingWindow = slidingWindow
    }
}

extension DecoderOptions.Activation {
    /// The name people and tools use (`silu`, `gelu_tanh`, `gelu`).
    package var name: String {
        switch self {
        case .silu: return "silu"
        case .geluTanh: return "gelu_tanh"
        case .gelu: return "gelu"
        }
    }
}

extension DecoderOptions.Norm {
    /// `rmsnorm` or `layernorm`.
    package var name: String {
        switch self {
        case .rms: return "rmsnorm"
        case .layer: return "layernorm"
        }
    }

    /// The epsilon added to the variance.
    package var epsilon: Float {
        switch self {
        case .rms(let eps), .layer(let eps): return eps
        }
    }
}

extension DecoderOptions.MLP {
    /// `gated` (gate · up, SwiGLU/GeGLU) or `plain` (up, then down).
    package var shape: String {
        switch self {
        case .gated: return "gated"
        case .plain: return "plain"
        }
    }

    /// The activation, public for descriptions.
    package var activationName: String { activation.name }
}

extension DecoderOptions.Scaling {
    /// `none`, `linear`, `longrope`, `llama3` or `frequency-factors` (Llama 3 GGUF files
    /// store their remapped frequencies as per-frequency divisors).
    package var name: String {
        switch self {
        case .none: return "none"
        case .linear: return "linear"
        case .longRoPE: return "longrope"
        case .llama3: return "llama3"
        case .frequencyFactors: return "frequency-factors"
        }
    }
}
