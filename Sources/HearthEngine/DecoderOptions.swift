/// Everything the shared forward pass needs to know about an architecture. A model family
/// maps its configuration to these options; new math is a new option here, never a new pass.
public struct DecoderOptions: Sendable, Equatable {
    /// How hidden states are normalised.
    public enum Norm: Sendable, Equatable {
        /// x / rms(x) · w
        case rms(eps: Float)
        /// (x − mean) / std · w + b
        case layer(eps: Float)
    }

    /// The gated or plain MLP activation.
    public enum Activation: String, Sendable, Equatable {
        /// silu(gate) · up
        case siluGated
        /// gelu_tanh(gate) · up
        case geluTanhGated
    }

    /// Rotary position embedding settings.
    public struct RoPE: Sendable, Equatable {
        /// Frequency base θ.
        public var theta: Float
        /// Leading dimensions of each head that rotate (the rest pass through).
        public var rotaryDims: Int
        /// Context-extension scheme.
        public var scaling: Scaling

        public init(theta: Float, rotaryDims: Int, scaling: Scaling = .none) {
            self.theta = theta
            self.rotaryDims = rotaryDims
            self.scaling = scaling
        }
    }

    /// RoPE context-extension schemes.
    public enum Scaling: Sendable, Equatable {
        case none
        /// Positions divided by `factor`.
        case linear(factor: Float)
        /// Phi-3's LongRoPE: per-frequency divisors, `short` while the sequence fits
        /// `originalContext` and `long` beyond; cos/sin scaled by `attentionFactor`.
        case longRoPE(short: [Float], long: [Float], originalContext: Int, attentionFactor: Float)
    }

    public var hiddenSize: Int
    public var layerCount: Int
    public var headCount: Int
    public var kvHeadCount: Int
    public var headDim: Int
    public var ffnSize: Int
    public var vocabSize: Int
    public var norm: Norm
    public var activation: Activation
    public var rope: RoPE
    /// The output projection reuses the token embedding matrix.
    public var tiedEmbeddings: Bool
    /// The longest context the model was trained for.
    public var maxContext: Int
    /// Keys more than this many positions back are masked (nil: full attention).
    public var slidingWindow: Int?

    /// Query heads per key/value head.
    public var groupSize: Int { headCount / kvHeadCount }
    /// Width of the fused q/k/v projection output.
    public var qkvWidth: Int { (headCount + 2 * kvHeadCount) * headDim }

    public init(
        hiddenSize: Int, layerCount: Int, headCount: Int, kvHeadCount: Int, headDim: Int, ffnSize: Int,
        vocabSize: Int, norm: Norm, activation: Activation, rope: RoPE, tiedEmbeddings: Bool, maxContext: Int,
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
        self.activation = activation
        self.rope = rope
        self.tiedEmbeddings = tiedEmbeddings
        self.maxContext = maxContext
        self.slidingWindow = slidingWindow
    }
}
